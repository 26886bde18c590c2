// Lossless baseline -> progressive JPEG transcoding with libjpeg (docs/formats/pcr.md, "Conversion").
// No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_TRANSCODE_H_
#define TFLIQUID_OPS_JPEG_TRANSCODE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "jpeg/scan_script.h"

namespace tfliquid::jpeg {

// The most scans a JPEG read whole may have. No encoder writes more than a few dozen (a progressive script sends
// each coefficient band of each component, at most once per bit); libjpeg-turbo suggests a limit of this order
// for its own decoders (TJPARAM_SCANLIMIT, djpeg -maxscans) against files of repeated scans.
inline constexpr size_t kMaxReadScans = 500;

// Copies the DCT coefficients of the JPEG in [data, data + size), baseline or progressive, into a progressive JPEG
// with the scans of `script` and optimised Huffman tables: `jpegtran -progressive -optimize -copy none` (the
// standard script) or `jpegtran -scans FILE -optimize -copy none`, byte for byte, or `-copy all` when
// keep_markers (APPn and COM segments are kept; libjpeg writes its own JFIF APP0 and Adobe APP14), except that the
// output has an Adobe APP14 marker exactly when the input has one, with the input's transform (jpegtran adds one
// to a CMYK JPEG without it, which makes decoders read its inks inverted). Decoding the output gives exactly the
// pixels of the input.
//
// Returns true and sets *out, or returns false and sets *error to libjpeg's message and the byte offset. Unlike
// jpegtran, corruption that libjpeg would recover from by filling blocks with grey (truncated or damaged
// entropy-coded data, a broken progression) is an error, and so is a frame header claiming more 8x8 blocks than
// the data can code, and so is a file of more than kMaxReadScans scans (counted from the markers, before any is
// read), and so is a custom script for another number of components. Never exits or prints; thread-safe (no
// shared state).
bool TranscodeToProgressive(const uint8_t* data, size_t size, bool keep_markers, const ScanScript& script,
                            std::string* out, std::string* error);

// Reads every scan's coefficients with the same checks, writing nothing: whether a JPEG (a progressive one, kept
// as it is) is whole. Returns false and sets *error as above.
bool CheckCoefficients(const uint8_t* data, size_t size, std::string* error);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_TRANSCODE_H_
