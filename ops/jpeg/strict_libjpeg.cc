#include "jpeg/strict_libjpeg.h"

#include <jerror.h>

#include <bitset>

#include "jpeg/scan_split.h"

namespace tfliquid::jpeg {
namespace {

void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings that mean the coefficients read are not the image's: libjpeg would fill the missing or unreadable
// blocks with grey and go on (as jpegtran does), and a dataset would silently hold another image. Bytes before a
// marker are harmless between header segments, but after entropy-coded data they are data the Huffman decoder
// did not use: it lost step in damaged data, and the blocks it decoded are not the image's.
bool LosesData(int message_code, bool reading_scans) {
  switch (message_code) {
    case JWRN_EXTRANEOUS_DATA: return reading_scans;
    case JWRN_ARITH_BAD_CODE:
    case JWRN_BOGUS_PROGRESSION:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_JPEG_EOF:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_TOO_MUCH_DATA: return true;
    default:  // unknown JFIF or Adobe versions, a damaged ICC profile, bytes between segments: the pixels are whole
      return false;
  }
}

// Warnings that lose data are errors; other warnings and traces are dropped (a library must not print).
void EmitMessage(j_common_ptr cinfo, int msg_level) {
  const bool reading_scans = reinterpret_cast<ErrorManager*>(cinfo->err)->reading_scans;
  if (msg_level < 0 && LosesData(cinfo->err->msg_code, reading_scans)) ErrorExit(cinfo);
}

}  // namespace

jpeg_error_mgr* StrictErrors(ErrorManager* err) {
  jpeg_error_mgr* pub = jpeg_std_error(&err->pub);
  pub->error_exit = ErrorExit;
  pub->emit_message = EmitMessage;
  return pub;
}

uint64_t Blocks(const jpeg_decompress_struct& src) {
  uint64_t blocks = 0;
  for (int ci = 0; ci < src.num_components; ++ci) {
    blocks += static_cast<uint64_t>(src.comp_info[ci].width_in_blocks) * src.comp_info[ci].height_in_blocks;
  }
  return blocks;
}

namespace {

// The components (by their index in the frame) that a scan with Ss = 0 in the data codes: a sequential scan, or
// a progressive DC scan.
std::bitset<MAX_COMPONENTS> DcCoded(const jpeg_decompress_struct& src, const uint8_t* data, size_t size) {
  std::bitset<MAX_COMPONENTS> coded;
  WalkSegments(data, size, [&](const Segment& segment) {
    if (segment.code != kSos) return segment.code != kEoi;
    const uint8_t* fields = data + segment.offset + 4;  // Ns, then (id, tables) per component, then Ss, Se, Ah/Al
    const size_t in_scan = segment.length >= 3 ? fields[0] : 0;
    if (segment.length < 6 + 2 * in_scan || fields[1 + 2 * in_scan] != 0) return true;
    for (size_t k = 0; k < in_scan; ++k) {
      for (int ci = 0; ci < src.num_components && ci < MAX_COMPONENTS; ++ci) {
        if (src.comp_info[ci].component_id == fields[1 + 2 * k]) coded.set(static_cast<size_t>(ci));
      }
    }
    return true;
  });
  return coded;
}

}  // namespace

bool FitsInData(const jpeg_decompress_struct& src, const uint8_t* data, size_t size) {
  const uint64_t bits = 8 * static_cast<uint64_t>(size);
  if (src.arith_code || Blocks(src) <= bits) return true;  // the marker walk below only where it can matter
  std::bitset<MAX_COMPONENTS> coded = DcCoded(src, data, size);
  if (coded.none()) coded.set();
  uint64_t blocks = 0;
  for (int ci = 0; ci < src.num_components && ci < MAX_COMPONENTS; ++ci) {
    if (!coded[static_cast<size_t>(ci)]) continue;
    blocks += static_cast<uint64_t>(src.comp_info[ci].width_in_blocks) * src.comp_info[ci].height_in_blocks;
  }
  return blocks <= bits;
}

}  // namespace tfliquid::jpeg
