// libjpeg read strictly, shared by the transcoder and the scaled decoder: errors come back to the caller's setjmp
// with libjpeg's message, warnings that mean lost data are errors, nothing is printed, and a hostile frame header
// cannot make libjpeg allocate more than a budget. No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_STRICT_LIBJPEG_H_
#define TFLIQUID_OPS_JPEG_STRICT_LIBJPEG_H_

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h uses FILE without including stdio.h

#include <jpeglib.h>

namespace tfliquid::jpeg {

// About 350 megapixels of 4:2:0 coefficients (3 bytes per pixel): libjpeg's max_memory_to_use.
inline constexpr long kMaxMemoryBytes = 1L << 30;

// libjpeg's default error_exit prints and calls exit(): StrictErrors' jumps to `jump` with the message instead.
struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg only sees a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool reading_scans;  // past the header: what libjpeg reads now is entropy-coded data and the markers between
};

// Sets up `err` (its `jump` still to be set by the caller's setjmp) and returns what a libjpeg struct's `err` takes.
jpeg_error_mgr* StrictErrors(ErrorManager* err);

// The 8x8 blocks of all components that the frame header claims.
uint64_t Blocks(const jpeg_decompress_struct& src);

// A Huffman-coded JPEG codes the DC coefficient of each 8x8 block of a component with at least one bit in the
// component's first DC scan, so a frame header that claims more blocks than the data has bits is impossible:
// refused before the coefficient arrays (about 2 bytes per pixel) are allocated. Only the components that a DC
// scan in [data, data + size) codes are counted: a progressive prefix (a PCR scan group) may not have reached
// the others yet, and codes no bit of their blocks (data with no DC scan at all, never valid, counts them all).
// Arithmetic coding can use less than a bit per block: there only the memory budget (kMaxMemoryBytes) applies.
bool FitsInData(const jpeg_decompress_struct& src, const uint8_t* data, size_t size);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_STRICT_LIBJPEG_H_
