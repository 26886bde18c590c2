#include "l3/l3_launch_plan.h"

#include <algorithm>

#include "l3/l3_layout.h"
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

bool VerifyChecksums(const std::vector<std::string_view>& images, const BatchHeaders& batch, std::string* error) {
  for (size_t i = 0; i < images.size(); ++i) {
    std::string checksum_error;
    if (!VerifyChecksum(reinterpret_cast<const uint8_t*>(images[i].data()), images[i].size(), batch.headers[i],
                        &checksum_error)) {
      *error = "image " + std::to_string(i) + ": " + checksum_error;
      return false;
    }
  }
  return true;
}

void BuildLaunchPlan(const std::vector<std::string_view>& images, const BatchHeaders& batch, LaunchPlan* plan) {
  plan->images = static_cast<int64_t>(images.size());
  plan->height = batch.height, plan->width = batch.width, plan->channels = batch.channels;
  plan->payloads.clear(), plan->tasks.clear();
  plan->payload_bytes = 0;
  plan->max_width = plan->max_segments = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const Header& header = batch.headers[i];
    const Params& p = header.params;
    const int64_t base = plan->payload_bytes;
    plan->payloads.push_back(images[i].substr(header.payload, header.offsets.back()));  // not the checksum
    plan->payload_bytes += static_cast<int64_t>(plan->payloads.back().size());
    const int64_t file_bias = static_cast<int64_t>(header.payload) - base;
    // The offsets table lists channel 0's patches row-major, then channel 1's, ...
    const std::vector<Patch> grid = PatchGrid(batch.height, batch.width, p.patch);
    for (size_t patch = 0; patch < grid.size(); ++patch) {
      const Patch& g = grid[patch];
      const int64_t segment = p.segment ? p.segment : g.w;  // 0 in the header: one segment per patch row
      int64_t row[L3_TASK_FIELDS] = {};
      for (int c = 0; c < p.channels; ++c) {
        row[L3_TASK_START + c] = base + header.offsets[c * grid.size() + patch];
        row[L3_TASK_END + c] = base + header.offsets[c * grid.size() + patch + 1];
      }
      row[L3_TASK_FILE_BIAS] = file_bias;
      row[L3_TASK_IMAGE] = static_cast<int64_t>(i);
      row[L3_TASK_Y0] = g.y0;
      row[L3_TASK_X0] = g.x0;
      row[L3_TASK_HEIGHT] = g.h;
      row[L3_TASK_WIDTH] = g.w;
      row[L3_TASK_SEGMENT] = segment;
      row[L3_TASK_ZIGZAG] = p.zigzag ? 1 : 0;
      row[L3_TASK_SUBTRACT_GREEN] = p.subtract_green ? 1 : 0;
      plan->tasks.insert(plan->tasks.end(), std::begin(row), std::end(row));
      plan->max_width = std::max(plan->max_width, static_cast<int>(g.w));
      plan->max_segments = std::max(plan->max_segments, static_cast<int>((g.w + segment - 1) / segment));
    }
  }
}

int64_t LaunchPlan::num_tasks() const { return static_cast<int64_t>(tasks.size()) / L3_TASK_FIELDS; }

int LaunchPlan::threads() const {
  return static_cast<int>(std::min<int64_t>(kMaxThreadsPerBlock, (channels * max_width + 31) / 32 * 32));
}

size_t LaunchPlan::shared_bytes(int block_threads) const {
  return 4 * static_cast<size_t>(block_threads + L3_MAX_CHANNELS) +
         2 * static_cast<size_t>(channels) * static_cast<size_t>(max_segments + max_width);
}

}  // namespace tfliquid::l3
