#include "jpeg/scan_split.h"

#include <cstdio>
#include <cstring>

namespace tfliquid::jpeg {
namespace {

bool IsRst(uint8_t code) { return code >= 0xD0 && code <= 0xD7; }

// Markers without a length field, other than EOI: RSTn belong inside entropy-coded data, SOI at the start,
// and TEM (01) is never written by an encoder.
bool IsStandalone(uint8_t code) { return code == 0x01 || code == 0xD8 || IsRst(code); }

std::string Hex(uint8_t byte) {
  char text[3];
  std::snprintf(text, sizeof(text), "%02x", byte);
  return text;
}

std::string At(size_t offset, const std::string& what) { return "offset " + std::to_string(offset) + ": " + what; }

// Yields the segments in file order, EOI included: _walk in tfliquid/jpeg/scans.py, step for step.
// The walk stops after EOI, or after a scan whose entropy-coded data runs to the end of the data.
class Walker {
 public:
  Walker(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // Fills *segment and returns true; returns false at the end of the walk or on an error (error() is set).
  bool Next(Segment* segment);
  const std::string& error() const { return error_; }

 private:
  bool Fail(size_t offset, const std::string& what) {
    error_ = At(offset, what);
    done_ = true;
    return false;
  }
  bool EntropyEnd(size_t pos, size_t* end);

  const uint8_t* const data_;
  const size_t size_;
  size_t pos_ = 0;  // invariant: pos_ <= size_, so size_ - pos_ never wraps
  bool done_ = false;
  std::string error_;
};

bool Walker::Next(Segment* segment) {
  if (done_) return false;
  const size_t n = size_;
  if (pos_ == 0) {
    if (n < 2 || data_[0] != 0xFF || data_[1] != 0xD8) return Fail(0, "no SOI marker, not a JPEG");
    pos_ = 2;
  }
  size_t pos = pos_;
  if (pos == n) return Fail(pos, "data ends before EOI");
  if (data_[pos] != 0xFF) return Fail(pos, "expected a marker, found byte 0x" + Hex(data_[pos]));
  while (pos + 1 < n && data_[pos + 1] == 0xFF) ++pos;  // fill bytes
  if (pos + 1 == n) return Fail(pos, "marker runs past end of data");
  const size_t offset = pos;
  const uint8_t code = data_[pos + 1];
  pos += 2;
  if (code == kEoi) {
    *segment = {offset, code, 0, pos};
    done_ = true;
    return true;
  }
  if (code == 0x00 || IsStandalone(code)) return Fail(offset, "0xff" + Hex(code) + " is not a segment marker");
  if (n - pos < 2) return Fail(pos, "segment length runs past end of data");
  const size_t length = size_t{data_[pos]} << 8 | data_[pos + 1];  // counts its own two bytes
  if (length < 2) return Fail(pos, "segment length " + std::to_string(length) + " is less than 2");
  if (n - pos < length) {
    return Fail(pos, "segment of length " + std::to_string(length) + " runs past end of data");
  }
  pos += length;
  if (code == kSos && !EntropyEnd(pos, &pos)) return false;
  *segment = {offset, code, length, pos};
  pos_ = pos;
  done_ = code == kSos && pos == n;  // the scan's entropy-coded data ran to the end: EOI is missing
  return true;
}

// In entropy-coded data an FF is followed by 00 (a stuffed FF) or D0-D7 (a restart marker); any other byte
// makes it a marker, which ends the data. As libjpeg does, a run of fill bytes FF FF ... is looked through
// and the marker starts at the last FF of the run.
bool Walker::EntropyEnd(size_t pos, size_t* end) {
  const size_t n = size_;
  while (true) {
    const void* ff = std::memchr(data_ + pos, 0xFF, n - pos);
    if (ff == nullptr) {
      *end = n;
      return true;
    }
    pos = static_cast<const uint8_t*>(ff) - data_;
    size_t last = pos;
    while (last + 1 < n && data_[last + 1] == 0xFF) ++last;
    if (last + 1 == n) return Fail(pos, "marker runs past end of data");
    const uint8_t code = data_[last + 1];
    if (code != 0x00 && !IsRst(code)) {
      *end = last;
      return true;
    }
    pos = last + 2;
  }
}

}  // namespace

std::string WalkSegments(const uint8_t* data, size_t size, const std::function<bool(const Segment&)>& visit) {
  Walker walker(data, size);
  Segment segment;
  while (walker.Next(&segment)) {
    if (!visit(segment)) return "";
  }
  return walker.error();
}

ScanSplitResult ScanEnds(const uint8_t* data, size_t size) {
  ScanSplitResult result;
  Walker walker(data, size);
  Segment segment;
  while (walker.Next(&segment)) {
    if (segment.code == kSos) {
      if (result.scan_ends.size() == kMaxScans) {
        result.scan_ends.clear();
        result.error = At(segment.offset, "more than " + std::to_string(kMaxScans) + " scans");
        return result;
      }
      result.scan_ends.push_back(segment.end);
    } else if (segment.code == kEoi && result.scan_ends.empty()) {
      result.error = At(segment.offset, "no scan before EOI");
      return result;
    }
  }
  if (!walker.error().empty()) {
    result.scan_ends.clear();
    result.error = walker.error();
    return result;
  }
  result.ok = true;
  return result;
}

size_t ExcessScanOffset(const uint8_t* data, size_t size, size_t limit) {
  size_t scans = 0, excess = 0;
  WalkSegments(data, size, [&](const Segment& segment) {
    if (segment.code == kSos && ++scans > limit) excess = segment.offset;
    return excess == 0;
  });
  return excess;
}

bool IsJpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

size_t FrameHeaderOffset(const uint8_t* data, size_t size) {
  size_t offset = 0;
  WalkSegments(data, size, [&](const Segment& segment) {
    if (IsSof(segment.code)) offset = segment.offset;
    return offset == 0 && segment.code != kSos;
  });
  return offset;
}

bool IsProgressive(const uint8_t* data, size_t size) {
  Walker walker(data, size);
  Segment segment;
  while (walker.Next(&segment)) {
    if (IsSof(segment.code)) return IsProgressiveSof(segment.code);
    if (segment.code == kSos || segment.code == kEoi) return false;
  }
  return false;
}

}  // namespace tfliquid::jpeg
