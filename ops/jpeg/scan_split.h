// Scan splitting of (progressive) JPEGs: the C++ twin of tfliquid/jpeg/scans.py (the reference and test
// oracle). Same offsets, same errors, same messages. Contract: docs/formats/pcr.md, "Scan splitting".
//
// No TensorFlow dependency. Safe on hostile input: never throws, aborts or reads outside [data, data + size).
#ifndef TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_
#define TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tfliquid::jpeg {

// The most scans a JPEG may have (PCR limit: 64 scan groups per record).
inline constexpr size_t kMaxScans = 64;

struct ScanSplitResult {
  bool ok = false;
  // Offset one past each scan's entropy-coded data, in order. Partial 1 is [0, scan_ends[0]), partial k is
  // [scan_ends[k-2], scan_ends[k-1]). Empty when !ok.
  std::vector<uint64_t> scan_ends;
  // When !ok: "offset N: what is wrong", N being the byte offset of the problem.
  std::string error;
};

ScanSplitResult ScanEnds(const uint8_t* data, size_t size);

// SOI followed by a marker.
bool IsJpeg(const uint8_t* data, size_t size);

// The frame header (SOFn) before the first scan is progressive: SOF2, SOF6 or SOF10. False on malformed data.
bool IsProgressive(const uint8_t* data, size_t size);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_
