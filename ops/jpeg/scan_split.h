// Scan splitting of (progressive) JPEGs: the C++ twin of tfliquid/jpeg/scans.py (the reference and test
// oracle). Same offsets, same errors, same messages. Contract: docs/formats/pcr.md, "Scan splitting".
//
// No TensorFlow dependency. Safe on hostile input: never throws, aborts or reads outside [data, data + size).
#ifndef TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_
#define TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
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

// The offset of the SOS marker of scan `limit` + 1, read from the markers alone, or 0 when there are no more
// than `limit` scans (or the markers end before: ScanEnds says what is wrong).
size_t ExcessScanOffset(const uint8_t* data, size_t size, size_t limit = kMaxScans);

inline constexpr uint8_t kSos = 0xDA;
inline constexpr uint8_t kDht = 0xC4;
inline constexpr uint8_t kDqt = 0xDB;
inline constexpr uint8_t kDri = 0xDD;
inline constexpr uint8_t kEoi = 0xD9;

// Zig-zag index -> the coefficient's index in row-major order in its 8x8 block (ITU T.81, figure A.6).
inline constexpr std::array<uint8_t, 64> kZigzagToNatural = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

// SOFn: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
inline bool IsSof(uint8_t code) { return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC; }

// The SOFn of a progressive frame: SOF2, SOF6 or SOF10.
inline bool IsProgressiveSof(uint8_t code) { return code == 0xC2 || code == 0xC6 || code == 0xCA; }

// A marker segment: the FF of its marker (after any fill bytes), its code, its length field (which counts itself;
// 0 for EOI), and its end (for SOS, the end of the scan's entropy-coded data). The fields of a segment other than
// EOI are its length - 2 bytes at offset + 4, inside the data.
struct Segment {
  size_t offset;
  uint8_t code;
  size_t length;
  size_t end;
};

// Calls visit with each segment in file order, EOI included, as ScanEnds walks them, until visit returns false
// or the walk ends (after EOI, or after a scan whose entropy-coded data runs to the end of the data). Returns the
// error that ended it ("offset N: what is wrong"), or "".
std::string WalkSegments(const uint8_t* data, size_t size, const std::function<bool(const Segment&)>& visit);

// SOI followed by a marker.
bool IsJpeg(const uint8_t* data, size_t size);

// The offset of the frame header's (SOFn's) marker, or 0 when the markers end before one.
size_t FrameHeaderOffset(const uint8_t* data, size_t size);

// The frame header (SOFn) before the first scan is progressive: SOF2, SOF6 or SOF10. False on malformed data.
bool IsProgressive(const uint8_t* data, size_t size);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_SCAN_SPLIT_H_
