#include "jpeg/scaled_decode.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "jpeg/dc_decode.h"
#include "jpeg/scan_split.h"
#include "jpeg/spectral_decode.h"
#include "jpeg/strict_libjpeg.h"

// The coefficient and input controllers of a buffered-image decode (their structs are libjpeg's internals, the
// same since libjpeg 6b).
#include <jerror.h>
#include <jpegint.h>

namespace tfliquid::jpeg {

int SupportedEighths(const uint8_t* data, size_t size) {
  int num_components = 0;
  uint8_t luminance = 0;  // the first component's id
  uint64_t coded = 0;     // the luminance's zig-zag coefficients that a first scan coded, a bit each
  bool sequential = false, malformed = false;
  const std::string error = WalkSegments(data, size, [&](const Segment& segment) {
    if (segment.code == kEoi) return false;
    const size_t length = segment.length;
    const uint8_t* fields = data + segment.offset + 4;
    if (IsSof(segment.code)) {
      num_components = length >= 8 ? fields[5] : 0;
      malformed = num_components < 1 || num_components > 4 || length < 8 + 3u * num_components;
      if (malformed) return false;
      luminance = fields[6];
      // A sequential JPEG codes every coefficient in its scans.
      sequential = !IsProgressiveSof(segment.code);
      return !sequential;
    }
    if (segment.code == kSos) {  // components, then Ss, Se, Ah/Al
      const int in_scan = length >= 3 ? fields[0] : 0;
      malformed = num_components == 0 || length < 6u + 2u * in_scan;
      if (malformed) return false;
      const uint8_t first = fields[1 + 2 * in_scan], last = fields[2 + 2 * in_scan];
      const bool refinement = (fields[3 + 2 * in_scan] >> 4) != 0;
      for (int k = 0; k < in_scan && !refinement; ++k) {
        if (fields[1 + 2 * k] != luminance) continue;
        for (int z = first; z <= std::min<int>(last, 63); ++z) coded |= uint64_t{1} << z;
      }
    }
    return true;
  });
  if (sequential) return 8;
  if (malformed || !error.empty() || num_components == 0) return 0;
  // The luminance's (the first component's, in JFIF): the eye sees detail in it, and colour is coded coarser in
  // any case (subsampled, and given its coefficients later in a progressive script).
  int supported = 0;
  while (supported < 8) {  // grows while the (supported + 1)^2 corner is coded
    bool corner_coded = true;
    for (int z = 0; z < 64; ++z) {
      const int row = kZigzagToNatural[z] / 8, column = kZigzagToNatural[z] % 8;
      if (row <= supported && column <= supported && !(coded >> z & 1)) corner_coded = false;
    }
    if (!corner_coded) break;
    ++supported;
  }
  supported = std::max(supported, 1);  // no DC yet: decoded as libjpeg decodes it (grey), at the smallest scale
  return supported;
}

int64_t ScaledSize(int64_t size, int eighths) { return (size * eighths + 7) / 8; }

struct ScaledDecoder::State {
  ~State() { jpeg_destroy_decompress(&src); }

  ErrorManager err{};
  jpeg_decompress_struct src{};
  // Start's arguments, for a second start when the fast entropy decoder meets damaged data.
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t target_height = 0, target_width = 0;
  bool no_finer_than_coded = true;
  int eighths = 8;
  // The window decoded, in full-size pixels, and its region at the scale: rows [top, bottom), columns [left,
  // right) of libjpeg's output (the whole output without a crop).
  bool cropped = false, window_outside = false;
  CropWindow crop;
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  // Set when the scans are spectral selection only: DecodeSpectralScans reads them into libjpeg's coefficient
  // arrays (block_rows), and libjpeg does the rest.
  bool spectral = false;
  SpectralPlan plan;
  std::vector<BlockRows> block_rows;
  std::vector<uint8_t> row;  // a row of libjpeg's output, when it is not written where it goes (CMYK, a crop)
};

ScaledDecoder::ScaledDecoder() : state_(std::make_unique<State>()) {}
ScaledDecoder::~ScaledDecoder() = default;

int64_t ScaledDecoder::height() const { return state_->bottom - state_->top; }
int64_t ScaledDecoder::width() const { return state_->right - state_->left; }
int ScaledDecoder::eighths() const { return state_->eighths; }
bool ScaledDecoder::window_outside() const { return state_->window_outside; }

namespace {

static_assert(sizeof(JCOEF) == sizeof(int16_t));

std::string Message(const ErrorManager& err, const jpeg_decompress_struct& src, size_t size) {
  const size_t offset = src.src == nullptr ? 0 : size - src.src->bytes_in_buffer;
  return std::string(err.message) + " (at byte " + std::to_string(offset) + ")";
}

// The libjpeg parts of Start and Decode. libjpeg longjmps back into their setjmp on errors, so they create no
// object whose destructor the jump would skip: messages are made by the callers.
enum class Outcome { kDone, kLibjpegError, kImpossibleHeader, kWindowOutside };

Outcome StartWithLibjpeg(ScaledDecoder::State* s) {
  if (setjmp(s->err.jump)) return Outcome::kLibjpegError;
  jpeg_create_decompress(&s->src);
  s->src.mem->max_memory_to_use = kMaxMemoryBytes;
  jpeg_mem_src(&s->src, s->data, s->size);
  jpeg_read_header(&s->src, TRUE);
  if (!FitsInData(s->src, s->data, s->size)) return Outcome::kImpossibleHeader;
  const CropWindow& crop = s->crop;
  if (s->cropped && (crop.y < 0 || crop.x < 0 || crop.height < 1 || crop.width < 1 ||
                     crop.y + crop.height > s->src.image_height || crop.x + crop.width > s->src.image_width)) {
    return Outcome::kWindowOutside;
  }
  const int64_t height = s->cropped ? crop.height : s->src.image_height;
  const int64_t width = s->cropped ? crop.width : s->src.image_width;
  // 1/8, 1/4, 1/2 and 1: the scales libjpeg-turbo transforms with SIMD code (the others, in plain C, cost more
  // than the full size).
  int eighths = 1;
  while (eighths < 8 &&
         (ScaledSize(height, eighths) < s->target_height || ScaledSize(width, eighths) < s->target_width)) {
    eighths *= 2;
  }
  int supported = s->no_finer_than_coded ? SupportedEighths(s->data, s->size) : 8;
  while (supported & (supported - 1)) supported &= supported - 1;  // down to a power of two
  s->eighths = supported > 0 ? std::min(eighths, supported) : eighths;
  s->src.scale_num = s->eighths;
  s->src.scale_denom = 8;
  // libjpeg converts no CMYK to RGB: ReadRows does, as TensorFlow does.
  const bool cmyk = s->src.jpeg_color_space == JCS_CMYK || s->src.jpeg_color_space == JCS_YCCK;
  s->src.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  s->src.dct_method = JDCT_IFAST;  // tf.io.decode_jpeg's default: at 8/8 the same pixels
  // libjpeg smooths the blocks of a progressive prefix whose AC coefficients are missing by estimating them from
  // the neighbours' DC values (T.81 K.8), at every scale: most of a low scan group's decoding time. A decode at a
  // size is for the model's input (resized, often smaller than a block's 8 pixels): it goes without. A decode at
  // the full size keeps it, as tf.io.decode_jpeg does.
  s->src.do_block_smoothing = s->no_finer_than_coded ? FALSE : TRUE;
  jpeg_calc_output_dimensions(&s->src);
  s->top = 0, s->bottom = s->src.output_height, s->left = 0, s->right = s->src.output_width;
  if (s->cropped) {  // the window's region at the scale: the output pixels it covers, in part or whole
    s->top = crop.y * s->eighths / 8;
    s->left = crop.x * s->eighths / 8;
    s->bottom = std::min<int64_t>(s->bottom, ScaledSize(crop.y + crop.height, s->eighths));
    s->right = std::min<int64_t>(s->right, ScaledSize(crop.x + crop.width, s->eighths));
  }
  return Outcome::kDone;
}

// tf.io.decode_jpeg's RGB of libjpeg's CMYK (tensorflow/core/lib/jpeg/jpeg_mem.cc): Adobe's inverted CMYK when
// the file has an Adobe marker (Photoshop writes it so), plain CMYK otherwise.
void CmykToRgb(const uint8_t* cmyk, size_t width, bool adobe, uint8_t* rgb) {
  for (size_t i = 0; i < width; ++i, cmyk += 4, rgb += 3) {
    const int k = cmyk[3];
    for (int c = 0; c < 3; ++c)
      rgb[c] = static_cast<uint8_t>(adobe ? k * cmyk[c] / 255 : (255 - k) * (255 - cmyk[c]) / 255);
  }
}

// Reads the rows [top, bottom) and columns [left, right) of libjpeg's output into `pixels` as RGB. With a crop,
// libjpeg is given the columns from an iMCU before the region to one after it (jpeg_crop_scanline widens them to
// iMCU boundaries), and skips the rows above it but an iMCU row: the chroma upsampling of the region's edges then
// reads the neighbours a whole decode reads, and its pixels are the whole decode's. Where libjpeg smooths a
// progressive prefix's blocks (a decode at the full size), it reads every row and column, as for the whole image:
// the smoothing of a block reads its neighbours' coefficients, which a cropped decode leaves out at the crop's
// edges.
void ReadRows(ScaledDecoder::State* s, uint8_t* pixels) {
  const bool cmyk = s->src.out_color_space == JCS_CMYK;
  const bool smoothed = s->src.do_block_smoothing && s->src.progressive_mode;
  JDIMENSION first = static_cast<JDIMENSION>(s->left);  // the region's first column in libjpeg's output rows
  if (s->cropped && !smoothed) {
    const int64_t across = int64_t{s->src.max_h_samp_factor} * s->eighths;  // an iMCU's columns at the scale
    const int64_t down = int64_t{s->src.max_v_samp_factor} * s->eighths;
    JDIMENSION offset = static_cast<JDIMENSION>(std::max<int64_t>(0, s->left - across));
    JDIMENSION columns = static_cast<JDIMENSION>(std::min<int64_t>(s->src.output_width, s->right + across) - offset);
    if (offset > 0 || columns < s->src.output_width) jpeg_crop_scanline(&s->src, &offset, &columns);
    first = static_cast<JDIMENSION>(s->left) - offset;
    const int64_t skipped = std::max<int64_t>(0, s->top - down);
    if (skipped > 0) jpeg_skip_scanlines(&s->src, static_cast<JDIMENSION>(skipped));
  }
  const size_t width = static_cast<size_t>(s->right - s->left);
  const bool in_place = !cmyk && !s->cropped;
  if (!in_place) s->row.resize(static_cast<size_t>(s->src.output_width) * (cmyk ? 4 : 3));
  while (s->src.output_scanline < s->bottom) {
    const int64_t y = s->src.output_scanline;
    uint8_t* line = pixels + static_cast<size_t>(std::max<int64_t>(0, y - s->top)) * width * 3;
    JSAMPROW row = in_place ? line : s->row.data();
    jpeg_read_scanlines(&s->src, &row, 1);
    if (y < s->top || in_place) continue;
    if (cmyk) {
      CmykToRgb(row + size_t{first} * 4, width, s->src.saw_Adobe_marker, line);
    } else {
      std::memcpy(line, row + size_t{first} * 3, width * 3);
    }
  }
}

// The MCU rows a crop's output reads: those down to its region's last row, and the one below, whose first rows the
// chroma upsampling of that row reads (libjpeg's context rows); -1 (every row) without a crop.
int64_t McuRowsRead(const ScaledDecoder::State* s) {
  if (!s->cropped) return -1;
  const int64_t down = int64_t{s->src.max_v_samp_factor} * s->eighths;  // an iMCU's rows at the scale
  return (s->bottom + down - 1) / down + 1;
}

// libjpeg in buffered-image mode (libjpeg.txt, "Buffered-image mode") allocates the coefficient arrays of the
// whole image and reads no scan until asked: block_rows gets their rows, for DecodeSpectralScans to fill.
Outcome StartBufferedWithLibjpeg(ScaledDecoder::State* s) {
  if (setjmp(s->err.jump)) return Outcome::kLibjpegError;
  s->err.reading_scans = true;
  s->src.buffered_image = TRUE;
  // Either every coefficient will be there, and libjpeg would not smooth, or smoothing is off: its bookkeeping
  // of what has been read, which decides it, stays at the first scan.
  s->src.do_block_smoothing = FALSE;
  jpeg_start_decompress(&s->src);
  jvirt_barray_ptr* arrays = s->src.coef->coef_arrays;
  s->block_rows.resize(s->plan.components.size());
  for (size_t c = 0; c < s->plan.components.size(); ++c) {
    const int64_t rows = s->plan.mcu_rows * s->plan.components[c].v;
    s->block_rows[c].resize(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row) {  // the arrays are in memory: each row's blocks are contiguous
      JBLOCKARRAY block_row = (*s->src.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&s->src), arrays[c],
                                                                static_cast<JDIMENSION>(row), 1, TRUE);
      s->block_rows[c][static_cast<size_t>(row)] = reinterpret_cast<int16_t*>(block_row[0]);
    }
  }
  return Outcome::kDone;
}

// After DecodeSpectralScans: libjpeg is told that the input is read to its end, and outputs from the arrays.
Outcome OutputBufferedWithLibjpeg(ScaledDecoder::State* s, uint8_t* pixels) {
  if (setjmp(s->err.jump)) return Outcome::kLibjpegError;
  // libjpeg copies a component's quantisation table when the component's first scan starts (jdinput.c,
  // latch_quant_tables), and it has started only the first scan: the tables of the components of the plan's
  // other scans are copied here. The plan has no DQT after the first scan, so they are the tables libjpeg would
  // have copied. A component that no scan reaches keeps none (its table may come after the data, or never): the
  // inverse transform skips it, as libjpeg's does (jddctmgr.c), and its blocks stay zero.
  std::array<bool, MAX_COMPONENTS> scanned{};
  for (const SpectralPlan::Step& step : s->plan.steps) {
    if (step.segment.code != kSos) continue;
    for (int k = 0; k < step.scan.count; ++k) scanned[static_cast<size_t>(step.scan.index[k])] = true;
  }
  for (int c = 0; c < s->src.num_components; ++c) {
    jpeg_component_info* component = &s->src.comp_info[c];
    if (component->quant_table != nullptr || !scanned[static_cast<size_t>(c)]) continue;
    const int number = component->quant_tbl_no;
    if (number < 0 || number >= NUM_QUANT_TBLS || s->src.quant_tbl_ptrs[number] == nullptr) {
      ERREXIT1(&s->src, JERR_NO_QUANT_TABLE, number);
    }
    auto* table = static_cast<JQUANT_TBL*>(
        (*s->src.mem->alloc_small)(reinterpret_cast<j_common_ptr>(&s->src), JPOOL_IMAGE, sizeof(JQUANT_TBL)));
    std::memcpy(table, s->src.quant_tbl_ptrs[number], sizeof(JQUANT_TBL));
    component->quant_table = table;
  }
  s->src.inputctl->eoi_reached = TRUE;
  s->src.input_iMCU_row = s->src.total_iMCU_rows;  // so the output never waits for input
  jpeg_start_output(&s->src, s->src.input_scan_number);
  ReadRows(s, pixels);
  jpeg_finish_output(&s->src);
  return Outcome::kDone;
}

Outcome DecodeWithLibjpeg(ScaledDecoder::State* s, uint8_t* pixels) {
  if (setjmp(s->err.jump)) return Outcome::kLibjpegError;
  s->err.reading_scans = true;
  jpeg_start_decompress(&s->src);
  ReadRows(s, pixels);
  // The rows below a crop are not decoded: what a finish would check there is no part of the output.
  if (s->src.output_scanline < s->src.output_height) {
    jpeg_abort_decompress(&s->src);
  } else {
    jpeg_finish_decompress(&s->src);
  }
  return Outcome::kDone;
}

}  // namespace

bool ScaledDecoder::Start(const uint8_t* data, size_t size, int64_t target_height, int64_t target_width,
                          std::string* error, bool no_finer_than_coded, const CropWindow* crop) {
  State* s = state_.get();
  s->cropped = crop != nullptr;
  if (crop != nullptr) s->crop = *crop;
  s->data = data;
  s->size = size;
  s->target_height = target_height;
  s->target_width = target_width;
  s->no_finer_than_coded = no_finer_than_coded;
  s->src.err = StrictErrors(&s->err);
  switch (StartWithLibjpeg(s)) {
    case Outcome::kDone:
      // Where coefficients are missing, libjpeg's smoothing needs its own bookkeeping of the scans read.
      s->spectral = PlanSpectralScans(data, size, &s->plan) && (s->plan.complete || !s->src.do_block_smoothing);
      return true;
    case Outcome::kLibjpegError: *error = Message(s->err, s->src, size); return false;
    case Outcome::kImpossibleHeader:
      *error = "the frame header claims " + std::to_string(s->src.image_width) + "x" +
               std::to_string(s->src.image_height) + " pixels, more than " + std::to_string(size) +
               " bytes can code (at byte " + std::to_string(FrameHeaderOffset(data, size)) + ")";
      return false;
    case Outcome::kWindowOutside:
      s->window_outside = true;
      *error = "the crop window (y " + std::to_string(s->crop.y) + ", x " + std::to_string(s->crop.x) + ", height " +
               std::to_string(s->crop.height) + ", width " + std::to_string(s->crop.width) + ") is not inside the " +
               std::to_string(s->src.image_height) + "x" + std::to_string(s->src.image_width) + " image";
      return false;
  }
  return false;
}

namespace {

// The DC quantisers of the components, for DecodeDcOnly: 0 for a component no DC scan reaches. False when a
// component scanned has no table (libjpeg then says so).
bool DcQuantisers(const ScaledDecoder::State* s, std::array<int32_t, 3>* quantisers) {
  std::array<bool, 3> scanned{};
  for (const SpectralPlan::Step& step : s->plan.steps) {
    if (step.segment.code != kSos || step.scan.first != 0) continue;
    for (int k = 0; k < step.scan.count; ++k) scanned[static_cast<size_t>(step.scan.index[k])] = true;
  }
  for (int c = 0; c < s->src.num_components; ++c) {
    const int number = s->src.comp_info[c].quant_tbl_no;
    (*quantisers)[static_cast<size_t>(c)] = 0;
    if (!scanned[static_cast<size_t>(c)]) continue;
    if (number < 0 || number >= NUM_QUANT_TBLS || s->src.quant_tbl_ptrs[number] == nullptr) return false;
    (*quantisers)[static_cast<size_t>(c)] = s->src.quant_tbl_ptrs[number]->quantval[0];
  }
  return true;
}

// At 1/8 from DC alone (dc_decode.h): grey or YCbCr output as RGB, in a frame DcOnlyDecodes takes.
bool DcOnlyApplies(const ScaledDecoder::State* s) {
  const bool grey = s->src.jpeg_color_space == JCS_GRAYSCALE && s->src.num_components == 1;
  const bool ycbcr = s->src.jpeg_color_space == JCS_YCbCr && s->src.num_components == 3;
  return s->spectral && s->eighths == 1 && (grey || ycbcr) && s->src.out_color_space == JCS_RGB &&
         DcOnlyDecodes(s->plan);
}

}  // namespace

bool ScaledDecoder::Decode(uint8_t* pixels, std::string* error) {
  State* s = state_.get();
  std::array<int32_t, 3> quantisers;
  if (DcOnlyApplies(s) && DcQuantisers(s, &quantisers) &&
      DecodeDcOnly(s->data, s->plan, quantisers, s->src.num_components == 3, s->top, s->bottom, s->left, s->right,
                   pixels)) {
    return true;
  }
  // Otherwise (damaged DC scans among them: the decoders below say what is wrong) libjpeg's arrays.
  if (s->spectral) {
    if (StartBufferedWithLibjpeg(s) != Outcome::kDone) {
      *error = Message(s->err, s->src, s->size);
      return false;
    }
    if (DecodeSpectralScans(s->data, s->plan, s->block_rows, 64, McuRowsRead(s))) {
      if (OutputBufferedWithLibjpeg(s, pixels) == Outcome::kDone) return true;
      *error = Message(s->err, s->src, s->size);
      return false;
    }
    // Damaged data: libjpeg reads it from the start, and says what is wrong.
    s->spectral = false;
    jpeg_destroy_decompress(&s->src);
    if (StartWithLibjpeg(s) != Outcome::kDone) {
      *error = Message(s->err, s->src, s->size);
      return false;
    }
  }
  if (DecodeWithLibjpeg(s, pixels) == Outcome::kDone) return true;
  *error = Message(s->err, s->src, s->size);
  return false;
}

bool ScaledDecoder::DecodeResized(uint8_t* pixels, int64_t out_height, int64_t out_width, std::string* error,
                                  bool mirror) {
  if (out_height == height() && out_width == width()) {
    if (!Decode(pixels, error)) return false;
    if (mirror) MirrorRows(pixels, out_height, out_width);
    return true;
  }
  std::vector<uint8_t> decoded(static_cast<size_t>(height() * width() * 3));
  if (!Decode(decoded.data(), error)) return false;
  ResizeBilinear(decoded.data(), height(), width(), pixels, out_height, out_width, mirror);
  return true;
}

void MirrorRows(uint8_t* pixels, int64_t height, int64_t width) {
  for (int64_t y = 0; y < height; ++y) {
    uint8_t* row = pixels + y * width * 3;
    for (int64_t left = 0, right = width - 1; left < right; ++left, --right) {
      for (int c = 0; c < 3; ++c) std::swap(row[left * 3 + c], row[right * 3 + c]);
    }
  }
}

namespace {

constexpr int kWeightBits = 11;  // the resize's weights are in 1/2^kWeightBits
constexpr int32_t kWeightOne = int32_t{1} << kWeightBits;

// line[i] = upper[i] and lower[i] (rows resized across, in weight units) blended by `weight` of lower, rounded.
// Cloned for AVX2, which multiplies eight int32 at once (x86-64's baseline SSE2 has no 32-bit multiply): half
// the time of an upscale from 1/8. The results are the same integers either way.
__attribute__((target_clones("avx2", "default"))) void BlendRows(const int32_t* upper, const int32_t* lower,
                                                                 int32_t weight, uint8_t* line, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const int32_t value = (kWeightOne - weight) * upper[i] + weight * lower[i];
    line[i] = static_cast<uint8_t>((value + (kWeightOne * kWeightOne / 2)) >> (2 * kWeightBits));
  }
}

}  // namespace

void ResizeBilinear(const uint8_t* in, int64_t in_height, int64_t in_width, uint8_t* out, int64_t out_height,
                    int64_t out_width, bool mirror) {
  // Pixel centres at half-integers, as tf.image.resize places them. Separable: an input row resized across (kept
  // unrounded, in weight units), then two such rows blended down. Exact in int32: a value is at most 255 x
  // kWeightOne^2.
  struct Tap {
    int64_t first, second;
    int32_t weight;  // of the second
  };
  auto taps = [](int64_t in_size, int64_t out_size) {
    std::vector<Tap> result(static_cast<size_t>(out_size));
    for (int64_t o = 0; o < out_size; ++o) {
      const double centre = std::max(0.0, (o + 0.5) * static_cast<double>(in_size) / out_size - 0.5);
      const int64_t first = std::min(static_cast<int64_t>(centre), in_size - 1);
      const int64_t second = std::min(first + 1, in_size - 1);
      result[static_cast<size_t>(o)] = {first, second, static_cast<int32_t>((centre - first) * kWeightOne + 0.5)};
    }
    return result;
  };
  const std::vector<Tap> rows = taps(in_height, out_height);
  std::vector<Tap> columns = taps(in_width, out_width);
  if (mirror) std::reverse(columns.begin(), columns.end());
  const size_t line_values = static_cast<size_t>(out_width) * 3;
  auto across = [&](int64_t row, int32_t* resized) {
    const uint8_t* pixels = in + row * in_width * 3;
    for (size_t x = 0; x < static_cast<size_t>(out_width); ++x) {
      const Tap& column = columns[x];
      for (int c = 0; c < 3; ++c) {
        resized[x * 3 + c] =
            (kWeightOne - column.weight) * pixels[column.first * 3 + c] + column.weight * pixels[column.second * 3 + c];
      }
    }
  };
  // Consecutive output rows mostly blend the same two input rows: each is resized across once.
  std::vector<int32_t> upper(line_values), lower(line_values);
  int64_t upper_row = -1, lower_row = -1;
  for (int64_t y = 0; y < out_height; ++y) {
    const Tap& row = rows[static_cast<size_t>(y)];
    if (row.first != upper_row) {
      if (row.first == lower_row) {
        std::swap(upper, lower);
        std::swap(upper_row, lower_row);
      } else {
        across(row.first, upper.data());
        upper_row = row.first;
      }
    }
    if (row.second != lower_row) {
      across(row.second, lower.data());
      lower_row = row.second;
    }
    BlendRows(upper.data(), lower.data(), row.weight, out + y * static_cast<int64_t>(line_values), line_values);
  }
}

}  // namespace tfliquid::jpeg
