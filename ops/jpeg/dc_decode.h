// The DC-only decode (docs/formats/pcr.md, "Decoding a DC-only group"): a JPEG read at scale 1/8 from its DC
// coefficients alone, without libjpeg's whole-image coefficient arrays, to the pixels libjpeg-turbo gives at 1/8
// (djpeg -scale 1/8). No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_DC_DECODE_H_
#define TFLIQUID_OPS_JPEG_DC_DECODE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "jpeg/spectral_decode.h"

namespace tfliquid::jpeg {

// Whether the DC-only decode gives libjpeg-turbo's pixels at 1/8 for the frame of `plan`: one component (grey), or
// three (YCbCr) at 4:4:4, or at 4:2:0 with no AC coefficient of the chroma coded (libjpeg decodes 4:2:0 chroma
// at 1/8 by a 2 x 2 inverse transform, which reads AC coefficients where there are some).
bool DcOnlyDecodes(const SpectralPlan& plan);

// Writes the rows [top, bottom) and columns [left, right) of the image at 1/8 as RGB to `pixels`, from the DC
// scans of `plan` (its AC scans are not read). dc_quantisers[c] is component c's DC quantiser, 0 for a
// component no scan reaches (libjpeg has no table for it, and outputs 128). `ycbcr`: three components converted
// to RGB as libjpeg converts YCbCr; else one, grey. False when the DC scans are damaged (the caller lets libjpeg
// say what is wrong).
bool DecodeDcOnly(const uint8_t* data, const SpectralPlan& plan, const std::array<int32_t, 3>& dc_quantisers,
                  bool ycbcr, int64_t top, int64_t bottom, int64_t left, int64_t right, uint8_t* pixels);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_DC_DECODE_H_
