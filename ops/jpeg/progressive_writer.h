// A progressive JPEG writer for quantized DCT coefficients read by libjpeg: the output half of
// TranscodeToProgressive (transcode.h), byte for byte what libjpeg's jpeg_write_coefficients writes with a
// progressive script and optimised Huffman tables, but faster: libjpeg runs every scan twice
// (statistics, then output); this writer traverses the coefficients once per scan into a buffer of Huffman
// symbols and extra bits, builds the optimal tables from the counts, then writes the buffer.
// No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_PROGRESSIVE_WRITER_H_
#define TFLIQUID_OPS_JPEG_PROGRESSIVE_WRITER_H_

#include <cstdio>  // jpeglib.h uses FILE without including stdio.h
#include <string>

#include <jpeglib.h>

namespace tfliquid::jpeg {

// Writes the progressive JPEG of the coefficients that jpeg_read_coefficients read from `src`:
//  - rows[ci][r] is block row r of component ci (src.comp_info[ci].width_in_blocks blocks, r below its
//    height_in_blocks), from access_virt_barray;
//  - params has been through jpeg_copy_critical_parameters(&src, &params) and a progressive script
//    (jpeg_simple_progression), with restart_interval 0: it supplies the frame, the quantisation tables, the
//    JFIF/Adobe header choice (an Adobe marker carries src.Adobe_transform: write it only when src has one),
//    the Huffman table slots and the scans;
//  - src's saved APPn/COM markers (jpeg_save_markers) are copied after the JFIF/Adobe header as transupp.c's
//    jcopy_markers_execute does.
// Returns true and sets *out, or returns false and sets *error (libjpeg's message for the same failure).
// Calls no libjpeg function (so cannot longjmp), never throws; thread-safe.
bool WriteProgressive(const jpeg_decompress_struct& src, const JBLOCKROW* const rows[],
                      const jpeg_compress_struct& params, std::string* out, std::string* error);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_PROGRESSIVE_WRITER_H_
