#include "jpeg/transcode.h"

#include "jpeg/progressive_writer.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h uses FILE without including stdio.h

#include <jerror.h>
#include <jpeglib.h>

namespace tfliquid::jpeg {
namespace {

// About 350 megapixels of 4:2:0 coefficients (3 bytes per pixel).
constexpr long kMaxMemoryBytes = 1L << 30;

// libjpeg's default error_exit prints and calls exit(): jump back to Prepare() with the message instead.
struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg only sees a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings and traces. Recoverable corruption is not an error (as for jpegtran) and a library must not print.
void IgnoreMessage(j_common_ptr, int) {}

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
};

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

// The libjpeg half: reads the coefficients and sets up the output parameters exactly as jpegtran does.
// libjpeg longjmps back into the setjmp below on errors, so all state lives in *s (~Session cleans it up)
// and this function holds no object whose destructor the jump would skip.
bool Prepare(Session* s, const uint8_t* data, size_t size, bool keep_markers) {
  if (setjmp(s->err.jump)) return false;
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
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&s->src);
  jpeg_copy_critical_parameters(&s->src, &s->dst);
  jpeg_simple_progression(&s->dst);
  CollectRows(s, coefficients);
  return true;
}

}  // namespace

bool TranscodeToProgressive(const uint8_t* data, size_t size, bool keep_markers, std::string* out, std::string* error) {
  Session s{};
  s.src.err = s.dst.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = ErrorExit;
  s.err.pub.emit_message = IgnoreMessage;
  if (!Prepare(&s, data, size, keep_markers)) {
    *error = s.err.message;
    return false;
  }
  // libjpeg would write the same bytes (jpeg_write_coefficients), running every scan twice.
  return WriteProgressive(s.src, s.rows, s.dst, out, error);
}

}  // namespace tfliquid::jpeg
