#include "jpeg/transcode.h"

#include "jpeg/progressive_writer.h"
#include "jpeg/scan_script.h"
#include "jpeg/scan_split.h"
#include "jpeg/strict_libjpeg.h"

#include <string>

namespace tfliquid::jpeg {
namespace {

// Zero-initialised (Session s{}): jpeg_destroy_* are no-ops on structs that jpeg_create_* never reached.
struct Session {
  ~Session() {
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
  }

  ErrorManager err;
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;         // never compresses: holds the output parameters that libjpeg would use
  JBLOCKROW* rows[MAX_COMPONENTS];  // in src's memory pool
  size_t size;                      // of the input
};

// How far libjpeg had read into the input: where an error was found.
size_t Offset(const Session& s) { return s.src.src == nullptr ? 0 : s.size - s.src.src->bytes_in_buffer; }

// Collects the block rows of every component. Every virtual array is wholly in memory (libjpeg-turbo has no
// backing store: jpeg_read_coefficients fails instead), so the row pointers stay valid.
void CollectRows(Session* s, jvirt_barray_ptr* coefficients) {
  j_common_ptr common = reinterpret_cast<j_common_ptr>(&s->src);
  for (int ci = 0; ci < s->src.num_components; ++ci) {
    const JDIMENSION height = s->src.comp_info[ci].height_in_blocks;
    s->rows[ci] = static_cast<JBLOCKROW*>(
        (*s->src.mem->alloc_small)(common, JPOOL_IMAGE, sizeof(JBLOCKROW) * (height == 0 ? 1 : height)));
    for (JDIMENSION row = 0; row < height; ++row) {
      s->rows[ci][row] = (*s->src.mem->access_virt_barray)(common, coefficients[ci], row, 1, FALSE)[0];
    }
  }
}

enum class Outcome { kRead, kLibjpegError, kImpossibleHeader, kTooLarge, kScriptMismatch, kIncompleteProgression };

// What a transcode holds per 8x8 block: libjpeg's coefficients, and the writer's copy of them in zigzag order with
// a mask of the nonzero ones (progressive_writer.cc). The memory cap is for both together.
constexpr uint64_t kTranscodeBytesPerBlock = 2 * sizeof(JBLOCK) + sizeof(uint64_t);

// Whether a progressive source's scans sent every coefficient of every component to its last bit. Decoders
// smooth the blocks of a source that leaves some out (libjpeg's block smoothing, T.81 K.8); a rescripted copy
// sends them, as zeros, so it would decode to other pixels.
bool SentEveryCoefficient(const jpeg_decompress_struct& src) {
  if (!src.progressive_mode) return true;
  for (int ci = 0; ci < src.num_components; ++ci) {
    for (int k = 0; k < DCTSIZE2; ++k) {
      if (src.coef_bits[ci][k] != 0) return false;
    }
  }
  return true;
}

// The libjpeg half: reads the coefficients, strictly, and (given a `script`) sets up the output parameters with
// that script, exactly as jpegtran does. libjpeg longjmps back into the setjmp below on errors, so all state lives
// in *s (~Session cleans it up) and this function creates no object whose destructor the jump would skip.
Outcome ReadWithLibjpeg(Session* s, const uint8_t* data, size_t size, bool keep_markers, const ScanScript* script) {
  if (setjmp(s->err.jump)) return Outcome::kLibjpegError;
  jpeg_create_decompress(&s->src);
  jpeg_create_compress(&s->dst);
  // The coefficient arrays are sized from the frame header: a hostile 65535 x 65535 header would ask for tens of
  // GB. Without a backing store, libjpeg fails cleanly ("backing store not supported") past this budget.
  s->src.mem->max_memory_to_use = kMaxMemoryBytes;
  s->dst.mem->max_memory_to_use = kMaxMemoryBytes;
  jpeg_mem_src(&s->src, data, size);
  if (keep_markers) {
    for (int m = 0; m < 16; ++m) jpeg_save_markers(&s->src, JPEG_APP0 + m, 0xFFFF);
    jpeg_save_markers(&s->src, JPEG_COM, 0xFFFF);
  }
  jpeg_read_header(&s->src, TRUE);
  if (!FitsInData(s->src, data, size)) return Outcome::kImpossibleHeader;
  if (script != nullptr && Blocks(s->src) > kMaxMemoryBytes / kTranscodeBytesPerBlock) return Outcome::kTooLarge;
  if (script != nullptr && script->kind == ScanScript::Kind::kCustom &&
      script->num_components != s->src.num_components) {
    return Outcome::kScriptMismatch;
  }
  s->err.reading_scans = true;
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&s->src);
  if (script == nullptr) return Outcome::kRead;
  if (!SentEveryCoefficient(s->src)) return Outcome::kIncompleteProgression;
  jpeg_copy_critical_parameters(&s->src, &s->dst);
  // The source's Adobe marker, not libjpeg's default for the colour space (it adds one to every CMYK JPEG): its
  // presence tells decoders a CMYK JPEG's ink values are inverted, so adding one would change the pixels.
  s->dst.write_Adobe_marker = s->src.saw_Adobe_marker;
  const std::vector<jpeg_scan_info>* scans = script->kind == ScanScript::Kind::kCustom ? &script->scans
                                             : script->kind == ScanScript::Kind::kFast
                                                 ? &FastScript(s->src.num_components)
                                                 : nullptr;
  if (scans == nullptr || scans->empty()) {
    jpeg_simple_progression(&s->dst);  // the standard script, also for component counts the fast one lacks
  } else {
    s->dst.scan_info = scans->data();
    s->dst.num_scans = static_cast<int>(scans->size());
  }
  CollectRows(s, coefficients);
  return Outcome::kRead;
}

bool ReadCoefficients(Session* s, const uint8_t* data, size_t size, bool keep_markers, const ScanScript* script,
                      std::string* error) {
  // Counted from the markers before libjpeg reads any scan: each scan of a progressive JPEG may be a pass over
  // every block for a few bytes, so a file of repeated scans costs time in proportion to their number.
  if (const size_t excess = ExcessScanOffset(data, size, kMaxReadScans); excess != 0) {
    *error = "more than " + std::to_string(kMaxReadScans) + " scans (at byte " + std::to_string(excess) +
             "): no encoder writes so many, and each may cost a pass over the whole image";
    return false;
  }
  s->src.err = s->dst.err = StrictErrors(&s->err);
  s->size = size;
  switch (ReadWithLibjpeg(s, data, size, keep_markers, script)) {
    case Outcome::kRead: return true;
    case Outcome::kLibjpegError:
      *error = std::string(s->err.message) + " (at byte " + std::to_string(Offset(*s)) + ")";
      return false;
    case Outcome::kImpossibleHeader:
      *error = "the frame header claims " + std::to_string(s->src.image_width) + "x" +
               std::to_string(s->src.image_height) + " pixels (" + std::to_string(Blocks(s->src)) +
               " blocks of 8x8), more than " + std::to_string(size) + " bytes can code (at least a bit a block)";
      return false;
    case Outcome::kTooLarge:
      *error = "Insufficient memory: the frame header claims " + std::to_string(s->src.image_width) + "x" +
               std::to_string(s->src.image_height) + " pixels, whose transcode would hold " +
               std::to_string(Blocks(s->src) * kTranscodeBytesPerBlock) + " bytes of coefficients, more than the " +
               std::to_string(kMaxMemoryBytes) + " a transcode may use";
      return false;
    case Outcome::kIncompleteProgression:
      *error =
          "its scans leave coefficients out (or short of their last bit), which decoders smooth over; rescripted, "
          "they would be sent as zeros and the pixels would change: keep its own scans (rescript_progressive off)";
      return false;
    case Outcome::kScriptMismatch:
      *error = "the scan script is for images of " + std::to_string(script->num_components) +
               " components; this one has " + std::to_string(s->src.num_components);
      return false;
  }
  return false;
}

}  // namespace

bool TranscodeToProgressive(const uint8_t* data, size_t size, bool keep_markers, const ScanScript& script,
                            std::string* out, std::string* error) {
  Session s{};
  if (!ReadCoefficients(&s, data, size, keep_markers, &script, error)) return false;
  // libjpeg would write the same bytes (jpeg_write_coefficients), running every scan twice.
  return WriteProgressive(s.src, s.rows, s.dst, out, error);
}

bool CheckCoefficients(const uint8_t* data, size_t size, std::string* error) {
  Session s{};
  return ReadCoefficients(&s, data, size, /*keep_markers=*/false, /*script=*/nullptr, error);
}

}  // namespace tfliquid::jpeg
