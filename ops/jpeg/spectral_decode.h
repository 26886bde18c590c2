// Entropy decoding of the progressive JPEGs whose scans are spectral selection only: every coefficient sent in one
// scan, to its last bit (Ah = Al = 0), as PCR's `fast` scripts write them (docs/formats/pcr.md, "Decoding full
// fidelity"). It gives the coefficients libjpeg's progressive decoder gives, in about half its time: libjpeg reads
// any progressive scan through one general path, a call and a reload of its bit buffer per block of each scan,
// while here a scan is one loop over bytes unstuffed up front. libjpeg still does the rest (dequantisation, inverse
// transform, upsampling, colour), from the coefficients this fills in (scaled_decode.cc). No TensorFlow dependency;
// safe on hostile input: it never reads outside the data and fails instead of guessing.
#ifndef TFLIQUID_OPS_JPEG_SPECTRAL_DECODE_H_
#define TFLIQUID_OPS_JPEG_SPECTRAL_DECODE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "jpeg/scan_split.h"

namespace tfliquid::jpeg {

// What the headers of such a JPEG say: its frame and, in file order, its DHT segments and its scans.
struct SpectralPlan {
  struct Component {
    uint8_t id;
    int h, v;  // sampling factors
    int64_t width_in_blocks, height_in_blocks;
  };
  // A scan's header, its components by their index in `components`.
  struct Scan {
    int count;  // components in the scan
    std::array<int, 4> index, dc_table, ac_table;
    int first, last;  // the band: zig-zag indexes
  };
  // A DHT segment, or an SOS segment and its scan.
  struct Step {
    Segment segment;
    Scan scan;  // for an SOS segment
  };
  std::vector<Component> components;  // in the frame's order
  int64_t mcus_per_row = 0, mcu_rows = 0;
  std::vector<Step> steps;
  bool complete = false;  // the scans code every coefficient of every component
};

// True, with *plan, when [data, data + size) is a progressive JPEG with Huffman coding, 8-bit samples and no
// restart interval, whose scans each code a spectral band for the first time and to its last bit (a PCR prefix of
// the fast script): what DecodeSpectralScans decodes. Reads the headers only.
bool PlanSpectralScans(const uint8_t* data, size_t size, SpectralPlan* plan);

// One component's coefficient blocks: rows[r] + 64 * c is block (r, c), its coefficients in natural (row-major)
// order. There are mcu_rows * v rows of mcus_per_row * h blocks (the component's blocks padded to whole MCUs, as
// libjpeg lays them out), all zero on entry.
using BlockRows = std::vector<int16_t*>;

// Decodes the scans of `plan` into blocks[c], component c in the frame's order. False when the entropy-coded data
// is damaged (a code no table has, data that runs out or is left over, a coefficient beyond its band, a missing
// table): the blocks are then partly written, and the caller lets libjpeg read the data, which says what is wrong.
// block_stride: the values from one block's start to the next's in a row, 64; or, for a plan of DC scans alone,
// 1: a row of DCs (dc_decode.cc), which an AC scan refuses. mcu_rows >= 0: only the blocks of the first mcu_rows MCU
// rows are decoded (a crop's, and the row below for the upsampling's context), each scan's entropy-coded data
// read only as far as they go; damage below them is then not seen. < 0: every row.
bool DecodeSpectralScans(const uint8_t* data, const SpectralPlan& plan, const std::vector<BlockRows>& blocks,
                         int64_t block_stride = 64, int64_t mcu_rows = -1);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_SPECTRAL_DECODE_H_
