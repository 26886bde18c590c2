#include "jpeg/dc_decode.h"

#include <algorithm>
#include <vector>

namespace tfliquid::jpeg {

namespace {

// libjpeg's post-IDCT range limit (jdmaster.c, prepare_range_limit_table), indexed by a descaled value masked to
// 10 bits: the values -128..127 centred to 0..255, those above clamped to 255 and below to 0 within the mask's
// wrap.
struct RangeLimit {
  uint8_t table[1024];
  RangeLimit() {
    for (int index = 0; index < 1024; ++index) {
      table[index] = static_cast<uint8_t>(index < 128   ? index + 128
                                          : index < 512 ? 255
                                          : index < 896 ? 0
                                                        : index - 896);
    }
  }
};

// A DC coefficient's sample at 1/8 (jidctred.c, jpeg_idct_1x1; the 2 x 2 transform of a block without AC
// coefficients gives the same value in its four samples): DESCALE(dequantised, 3), range-limited.
inline uint8_t DcSample(const RangeLimit& limit, int16_t dc, int32_t quantiser) {
  return limit.table[((int64_t{dc} * quantiser + 4) >> 3) & 1023];
}

// YCbCr to RGB with libjpeg's tables (jdcolor.c, build_ycc_rgb_table and ycc_rgb_convert).
struct YccTables {
  int r_cr[256], b_cb[256];
  int32_t g_cr[256], g_cb[256];
  YccTables() {
    constexpr int kScaleBits = 16;
    constexpr int32_t kHalf = int32_t{1} << (kScaleBits - 1);
    auto fix = [](double x) { return static_cast<int32_t>(x * (1 << kScaleBits) + 0.5); };
    for (int i = 0; i < 256; ++i) {
      const int32_t x = i - 128;
      r_cr[i] = (fix(1.40200) * x + kHalf) >> kScaleBits;
      b_cb[i] = (fix(1.77200) * x + kHalf) >> kScaleBits;
      g_cr[i] = -fix(0.71414) * x;
      g_cb[i] = -fix(0.34414) * x + kHalf;
    }
  }
};

uint8_t Clamp(int value) { return static_cast<uint8_t>(std::clamp(value, 0, 255)); }

}  // namespace

bool DcOnlyDecodes(const SpectralPlan& plan) {
  const auto& c = plan.components;
  if (c.size() == 1) return c[0].h == 1 && c[0].v == 1;
  if (c.size() != 3 || c[1].h != 1 || c[1].v != 1 || c[2].h != 1 || c[2].v != 1) return false;
  if (c[0].h == 1 && c[0].v == 1) return true;  // 4:4:4: every component at 1x1
  if (c[0].h != 2 || c[0].v != 2) return false;
  for (const SpectralPlan::Step& step : plan.steps) {  // 4:2:0: the chroma's 2 x 2 transform must see DC alone
    if (step.segment.code != kSos || step.scan.first == 0) continue;
    for (int k = 0; k < step.scan.count; ++k) {
      if (step.scan.index[k] != 0) return false;
    }
  }
  return true;
}

bool DecodeDcOnly(const uint8_t* data, const SpectralPlan& plan, const std::array<int32_t, 3>& dc_quantisers,
                  bool ycbcr, int64_t top, int64_t bottom, int64_t left, int64_t right, uint8_t* pixels) {
  // The DC scans alone, into rows of one DC per block: a buffer kept per thread and never cleared (every block of
  // a component a DC scan reaches is written; a component none reaches is not read).
  SpectralPlan dc_plan = plan;
  dc_plan.steps.clear();
  for (const SpectralPlan::Step& step : plan.steps) {
    if (step.segment.code != kSos || step.scan.first == 0) dc_plan.steps.push_back(step);
  }
  thread_local std::vector<int16_t> kept;
  std::vector<int16_t> own;  // a frame of more than kKeptValues values: its buffer is not kept
  constexpr size_t kKeptValues = size_t{1} << 20;
  std::vector<BlockRows> blocks(plan.components.size());
  std::vector<int64_t> columns(plan.components.size());
  size_t total = 0;
  for (size_t c = 0; c < plan.components.size(); ++c) {
    columns[c] = plan.mcus_per_row * plan.components[c].h;
    total += static_cast<size_t>(plan.mcu_rows * plan.components[c].v * columns[c]);
  }
  std::vector<int16_t>& storage = total <= kKeptValues ? kept : own;
  if (storage.size() < total) storage.resize(total);
  int16_t* next = storage.data();
  for (size_t c = 0; c < plan.components.size(); ++c) {
    const int64_t rows = plan.mcu_rows * plan.components[c].v;
    blocks[c].resize(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row, next += columns[c]) blocks[c][static_cast<size_t>(row)] = next;
  }
  // At 1/8 an MCU row is v_max rows of pixels, and a pixel reads only its own blocks' DCs: the rows down to the
  // region's last are all that is decoded.
  int v_max = 1;
  for (const SpectralPlan::Component& component : plan.components) v_max = std::max(v_max, component.v);
  if (!DecodeSpectralScans(data, dc_plan, blocks, /*block_stride=*/1, /*mcu_rows=*/(bottom + v_max - 1) / v_max)) {
    return false;
  }

  static const RangeLimit limit;
  static const YccTables tables;
  const int shift_y = ycbcr && plan.components[0].v == 2 ? 1 : 0;  // 4:2:0: a chroma sample per 2 x 2 pixels
  const int shift_x = ycbcr && plan.components[0].h == 2 ? 1 : 0;
  // A component no scan reaches has no table: its blocks, never written, are read as zero.
  const int16_t zero_row[1] = {};
  auto block_row = [&](size_t c, int64_t row) -> const int16_t* {
    return dc_quantisers[c] == 0 ? zero_row : blocks[c][static_cast<size_t>(row)];
  };
  auto stride = [&](size_t c) { return dc_quantisers[c] == 0 ? 0 : 1; };
  for (int64_t y = top; y < bottom; ++y) {
    const int16_t* luma = block_row(0, y);
    const int luma_stride = stride(0);
    if (!ycbcr) {
      for (int64_t x = left; x < right; ++x, pixels += 3) {
        pixels[0] = pixels[1] = pixels[2] = DcSample(limit, luma[x * luma_stride], dc_quantisers[0]);
      }
      continue;
    }
    const int16_t *cb_row = block_row(1, y >> shift_y), *cr_row = block_row(2, y >> shift_y);
    const int cb_stride = stride(1), cr_stride = stride(2);
    for (int64_t x = left; x < right; ++x, pixels += 3) {
      const int value = DcSample(limit, luma[x * luma_stride], dc_quantisers[0]);
      const int cb = DcSample(limit, cb_row[(x >> shift_x) * cb_stride], dc_quantisers[1]);
      const int cr = DcSample(limit, cr_row[(x >> shift_x) * cr_stride], dc_quantisers[2]);
      pixels[0] = Clamp(value + tables.r_cr[cr]);
      pixels[1] = Clamp(value + ((tables.g_cb[cb] + tables.g_cr[cr]) >> 16));
      pixels[2] = Clamp(value + tables.b_cb[cb]);
    }
  }
  return true;
}

}  // namespace tfliquid::jpeg
