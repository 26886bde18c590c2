#include "jpeg/transcode.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h uses FILE without including stdio.h
#include <cstdlib>
#include <cstring>

#include <jerror.h>
#include <jpeglib.h>

namespace tfliquid::jpeg {
namespace {

// About 350 megapixels of 4:2:0 coefficients (3 bytes per pixel).
constexpr long kMaxMemoryBytes = 1L << 30;

// libjpeg's default error_exit prints and calls exit(): jump back to Run() with the message instead.
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

// The output grows in a realloc'ed buffer that Session owns. Not jpeg_mem_dest: once it has grown its buffer,
// the live buffer is only reachable from its private state (the caller's pointer is updated only at
// jpeg_finish_compress), so every error after that point would leak it.
struct Destination {
  jpeg_destination_mgr pub;  // first member: libjpeg only sees a jpeg_destination_mgr*
  JOCTET* buffer;
  size_t capacity;
  size_t initial_capacity;
};

void Grow(j_compress_ptr cinfo, size_t capacity) {
  auto* dest = reinterpret_cast<Destination*>(cinfo->dest);
  const size_t used = dest->capacity - dest->pub.free_in_buffer;
  auto* bigger = static_cast<JOCTET*>(std::realloc(dest->buffer, capacity));
  if (bigger == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
  dest->buffer = bigger;
  dest->capacity = capacity;
  dest->pub.next_output_byte = bigger + used;
  dest->pub.free_in_buffer = capacity - used;
}

void InitDestination(j_compress_ptr cinfo) {
  Grow(cinfo, reinterpret_cast<Destination*>(cinfo->dest)->initial_capacity);
}

boolean EmptyOutputBuffer(j_compress_ptr cinfo) {  // called when the buffer is full
  Grow(cinfo, 2 * reinterpret_cast<Destination*>(cinfo->dest)->capacity);
  return TRUE;
}

void TermDestination(j_compress_ptr) {}  // the data stays in the buffer

// Zero-initialised (Session s{}): jpeg_destroy_* are no-ops on structs that jpeg_create_* never reached.
struct Session {
  ~Session() {
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
    std::free(dest.buffer);
  }

  ErrorManager err;
  jpeg_decompress_struct src;
  jpeg_compress_struct dst;
  Destination dest;
};

bool HasPrefix(const jpeg_saved_marker_ptr marker, const char* prefix, size_t length) {
  return marker->data_length >= length && std::memcmp(marker->data, prefix, length) == 0;
}

// transupp.c's jcopy_markers_execute: libjpeg has already written a JFIF APP0 or an Adobe APP14 if the
// colour space needs one, so copying the source's would duplicate it.
void CopyMarkers(j_decompress_ptr src, j_compress_ptr dst) {
  for (jpeg_saved_marker_ptr marker = src->marker_list; marker != nullptr; marker = marker->next) {
    if (dst->write_JFIF_header && marker->marker == JPEG_APP0 && HasPrefix(marker, "JFIF", 5)) continue;
    if (dst->write_Adobe_marker && marker->marker == JPEG_APP0 + 14 && HasPrefix(marker, "Adobe", 5)) continue;
    jpeg_write_marker(dst, marker->marker, marker->data, marker->data_length);
  }
}

// Everything that can fail. libjpeg longjmps back into the setjmp below on errors, so all state lives in *s
// (~Session cleans it up) and this function holds no object whose destructor the jump would skip.
bool Run(Session* s, const uint8_t* data, size_t size, bool keep_markers) {
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
  // No optimize_coding = TRUE needed: libjpeg always computes optimal Huffman tables for progressive output.
  jpeg_simple_progression(&s->dst);
  s->dst.dest = &s->dest.pub;
  jpeg_write_coefficients(&s->dst, coefficients);
  if (keep_markers) CopyMarkers(&s->src, &s->dst);
  jpeg_finish_compress(&s->dst);
  return true;
}

}  // namespace

bool TranscodeToProgressive(const uint8_t* data, size_t size, bool keep_markers, std::string* out,
                            std::string* error) {
  Session s{};
  s.src.err = s.dst.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = ErrorExit;
  s.err.pub.emit_message = IgnoreMessage;
  s.dest.pub.init_destination = InitDestination;
  s.dest.pub.empty_output_buffer = EmptyOutputBuffer;
  s.dest.pub.term_destination = TermDestination;
  // Progressive with optimised tables is usually a little smaller than the baseline input.
  s.dest.initial_capacity = size + 4096;

  if (!Run(&s, data, size, keep_markers)) {
    *error = s.err.message;
    return false;
  }
  out->assign(reinterpret_cast<const char*>(s.dest.buffer), s.dest.capacity - s.dest.pub.free_in_buffer);
  return true;
}

}  // namespace tfliquid::jpeg
