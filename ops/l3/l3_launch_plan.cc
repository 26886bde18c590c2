#include "l3/l3_launch_plan.h"

#include <algorithm>

#include "l3/l3_task_fields.h"

namespace tfliquid::l3 {
namespace {

std::string ShapeText(uint32_t height, uint32_t width, int channels) {
  return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels);
}

}  // namespace

bool ParseBatchHeaders(const std::vector<std::string_view>& images, BatchHeaders* batch, std::string* error) {
  if (images.empty()) {
    *error = "batch is empty: no image gives it a shape";
    return false;
  }
  batch->headers.resize(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    Header& header = batch->headers[i];
    std::string parse_error;
    if (!ParseHeader(reinterpret_cast<const uint8_t*>(images[i].data()), images[i].size(), &header, &parse_error)) {
      *error = "image " + std::to_string(i) + ": " + parse_error;
      return false;
    }
    if (i == 0) {
      batch->height = header.height, batch->width = header.width, batch->channels = header.params.channels;
    } else if (header.height != batch->height || header.width != batch->width ||
               header.params.channels != batch->channels) {
      *error = "image " + std::to_string(i) + " is " + ShapeText(header.height, header.width, header.params.channels) +
               " (HxWxC), image 0 is " + ShapeText(batch->height, batch->width, batch->channels) +
               ": a batch needs one shape";
      return false;
    }
  }
  return true;
}

void BuildLaunchPlan(const std::vector<std::string_view>& images, const BatchHeaders& batch, LaunchPlan* plan) {
  plan->images = static_cast<int64_t>(images.size());
  plan->height = batch.height, plan->width = batch.width, plan->channels = batch.channels;
  plan->payload.clear(), plan->tasks.clear(), plan->subtract_green.clear();
  plan->max_width = plan->max_segments = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const Header& header = batch.headers[i];
    const Params& p = header.params;
    const auto base = static_cast<int64_t>(plan->payload.size());
    plan->payload.insert(plan->payload.end(), images[i].begin() + static_cast<std::ptrdiff_t>(header.payload),
                         images[i].end());
    plan->subtract_green.push_back(p.subtract_green ? 1 : 0);
    const int64_t file_bias = static_cast<int64_t>(header.payload) - base;
    size_t patch = 0;  // index into the offsets table: channel-major, then patches row-major
    for (int c = 0; c < p.channels; ++c) {
      for (int64_t y0 = 0; y0 < batch.height; y0 += p.patch) {
        for (int64_t x0 = 0; x0 < batch.width; x0 += p.patch, ++patch) {
          const int64_t h = std::min<int64_t>(p.patch, batch.height - y0);
          const int64_t w = std::min<int64_t>(p.patch, batch.width - x0);
          const int64_t segment = p.segment ? p.segment : w;  // 0 in the header: one segment per patch row
          int64_t row[L3_TASK_FIELDS];
          row[L3_TASK_START] = base + header.offsets[patch];
          row[L3_TASK_END] = base + header.offsets[patch + 1];
          row[L3_TASK_FILE_BIAS] = file_bias;
          row[L3_TASK_IMAGE] = static_cast<int64_t>(i);
          row[L3_TASK_CHANNEL] = c;
          row[L3_TASK_Y0] = y0;
          row[L3_TASK_X0] = x0;
          row[L3_TASK_HEIGHT] = h;
          row[L3_TASK_WIDTH] = w;
          row[L3_TASK_SEGMENT] = segment;
          row[L3_TASK_ZIGZAG] = p.zigzag ? 1 : 0;
          plan->tasks.insert(plan->tasks.end(), std::begin(row), std::end(row));
          plan->max_width = std::max(plan->max_width, static_cast<int>(w));
          plan->max_segments = std::max(plan->max_segments, static_cast<int>((w + segment - 1) / segment));
        }
      }
    }
  }
}

int64_t LaunchPlan::num_tasks() const { return static_cast<int64_t>(tasks.size()) / L3_TASK_FIELDS; }

int LaunchPlan::threads() const { return std::min(kMaxThreadsPerBlock, (max_width + 31) / 32 * 32); }

size_t LaunchPlan::shared_bytes(int block_threads) const {
  return 4 * static_cast<size_t>(max_segments + block_threads + 1) + 2 * static_cast<size_t>(max_segments) +
         2 * static_cast<size_t>(max_width);
}

bool LaunchPlan::any_subtract_green() const {
  return std::find(subtract_green.begin(), subtract_green.end(), 1) != subtract_green.end();
}

}  // namespace tfliquid::l3
