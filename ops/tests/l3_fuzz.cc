// Fuzz target of the L3 decoder (ops/l3/l3_codec.h, docs/formats/l3.md): the pure C++ codec, no TensorFlow.
//
// Every input goes through ParseHeader, then through Decode when the header parses. Besides "no crash, no
// leak, no sanitizer report", an image that decodes must survive a lossless round trip: Encode with the
// header's params, ParseHeader and Decode again give the same pixels. A decoder that computes wrong pixels on
// odd inputs without reading out of bounds, or leaves pixels unwritten, fails it.
//
// Two builds of this one file:
//  - g++ (what ops/tests/l3_fuzz.sh SECONDS and tests/test_l3_fuzz.py do), under ASan/UBSan, with the main()
//    below: a blind, time-bounded mutation loop over seed L3 files (tests/l3_fuzz_seeds.py writes them).
//      l3_fuzz [--seconds S] [--seed N] [--crash-dir DIR] SEED.l3...   the loop (default 10 s, seed: the clock)
//      l3_fuzz --replay FILE...                                         each file once, e.g. a saved crash
//    A finding prints its reason and the sanitizer's report, saves the input as DIR/crash-HASH and fails.
//  - clang, when present, with libFuzzer's coverage-guided engine in place of main() (not required); the codec
//    is every ops/l3/*.cc but l3_kernels.cc, as l3_fuzz.sh builds it:
//      clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -DTFLIQUID_LIBFUZZER -Iops
//              ops/l3/l3_codec.cc ops/l3/l3_decoder.cc ops/common/crc32c.cc ops/tests/l3_fuzz.cc -o l3_fuzz
//      ./l3_fuzz -max_total_time=600 SEED_DIR      (SEED_DIR: python tests/l3_fuzz_seeds.py SEED_DIR)
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "l3/l3_codec.h"

namespace {

using tfliquid::l3::Decode;
using tfliquid::l3::Encode;
using tfliquid::l3::Header;
using tfliquid::l3::kHeaderSize;
using tfliquid::l3::Params;
using tfliquid::l3::ParseHeader;

// The format allows 1 GiB images; allocating and poisoning that much per input would spend the time on memory,
// not on decoder paths. Bigger headers are still parsed.
constexpr uint64_t kMaxDecodedBytes = 1ull << 24;

enum class Outcome { kHeaderRejected, kTooLarge, kDecodeRejected, kDecoded };

[[noreturn]] void Finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "l3_fuzz FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Errors read "offset N: ..." (l3_codec.h) with N inside the data.
void CheckError(const std::string& error, size_t size) {
  uint64_t offset;
  int consumed = 0;
  if (std::sscanf(error.c_str(), "offset %" SCNu64 ": %n", &offset, &consumed) != 1 || consumed == 0 || offset > size)
    Finding("malformed error", error + " (input of " + std::to_string(size) + " bytes)");
}

std::string Describe(const Header& h) {
  const Params& p = h.params;
  return std::to_string(h.width) + "x" + std::to_string(h.height) + "x" + std::to_string(p.channels) + " patch " +
         std::to_string(p.patch) + " segment " + std::to_string(p.segment) + " subtract_green " +
         std::to_string(p.subtract_green) + " zigzag " + std::to_string(p.zigzag);
}

Outcome FuzzOne(const uint8_t* data, size_t size) {
  Header header;
  std::string error;
  if (!ParseHeader(data, size, &header, &error)) {
    CheckError(error, size);
    return Outcome::kHeaderRejected;
  }
  const uint64_t bytes = static_cast<uint64_t>(header.width) * header.height * header.params.channels;
  if (bytes > kMaxDecodedBytes) return Outcome::kTooLarge;
  // The two decodes start from different fillers, so a pixel Decode leaves unwritten breaks the round trip.
  std::vector<uint8_t> pixels(bytes, 0xA5);
  if (!Decode(data, size, header, pixels.data(), &error)) {
    CheckError(error, size);
    return Outcome::kDecodeRejected;
  }
  std::string encoded;
  if (!Encode(pixels.data(), header.height, header.width, header.params, &encoded, &error))
    Finding("Encode rejects a header that ParseHeader accepted", Describe(header) + ": " + error);
  const auto* reencoded = reinterpret_cast<const uint8_t*>(encoded.data());
  Header again;
  if (!ParseHeader(reencoded, encoded.size(), &again, &error))
    Finding("ParseHeader rejects Encode's output", Describe(header) + ": " + error);
  if (Describe(again) != Describe(header))
    Finding("the re-encoded header differs", Describe(header) + " became " + Describe(again));
  std::vector<uint8_t> round_trip(bytes, 0x5A);
  if (!Decode(reencoded, encoded.size(), again, round_trip.data(), &error))
    Finding("Decode rejects Encode's output", Describe(header) + ": " + error);
  for (uint64_t i = 0; i < bytes; ++i) {
    if (round_trip[i] != pixels[i])
      Finding("the round trip changes pixels", Describe(header) + ": first at byte " + std::to_string(i) + ", " +
                                                   std::to_string(pixels[i]) + " became " +
                                                   std::to_string(round_trip[i]));
  }
  return Outcome::kDecoded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzOne(data, size);
  return 0;
}

#ifndef TFLIQUID_LIBFUZZER

// Declared weak so that a build without sanitizers links too; ASan and UBSan call it before exiting on an error.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

uint32_t LoadLe32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(s[at + i]);
  return v;
}

void StoreLe(std::string* s, size_t at, uint64_t value, int bytes) {
  for (int i = 0; i < bytes && at + i < s->size(); ++i) (*s)[at + i] = static_cast<char>(value >> (8 * i));
}

// Entries of the offsets table that the header fields announce, valid or not (0 without a full header).
uint64_t OffsetCount(const std::string& s) {
  if (s.size() < kHeaderSize) return 0;
  const uint64_t width = LoadLe32(s, 12), height = LoadLe32(s, 16);
  const uint64_t patch = static_cast<uint8_t>(s[20]) | static_cast<uint8_t>(s[21]) << 8;
  if (patch == 0 || width > tfliquid::l3::kMaxSide || height > tfliquid::l3::kMaxSide) return 0;
  return static_cast<uint8_t>(s[9]) * ((width + patch - 1) / patch) * ((height + patch - 1) / patch) + 1;
}

// Where the payload starts if the header's geometry were right, within the data.
size_t PayloadStart(const std::string& s) {
  return static_cast<size_t>(std::min<uint64_t>(s.size(), kHeaderSize + 4 * OffsetCount(s)));
}

class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<std::string>* seeds) : rng_(seed), seeds_(seeds) {}

  // A seed, or a mutant that decoded earlier, with one or more (on average two) mutations stacked.
  std::string Next() {
    std::string s = pool_.empty() || Below(2) ? (*seeds_)[Below(seeds_->size())] : pool_[Below(pool_.size())];
    do Mutate(&s);
    while (Below(2));
    if (Below(2)) FitOffsetsToPayload(&s);
    return s;
  }

  // Mutants that still decode are valid files with odd contents: mutating them further goes deeper than
  // mutating the seeds again.
  void Decoded(const std::string& mutant) {
    if (pool_.size() < kPoolSize)
      pool_.push_back(mutant);
    else
      pool_[Below(kPoolSize)] = mutant;
  }

  // Small images with params that the profiles never choose (1-pixel patches, segments of 1 to 255 pixels,
  // every flag combination), encoded by the codec itself.
  std::vector<std::string> SyntheticSeeds(int count) {
    std::vector<std::string> out;
    while (static_cast<int>(out.size()) < count) {
      Params params;
      params.channels = Pick({1, 3, 4});
      params.subtract_green = params.channels >= 3 && Below(2);
      params.zigzag = Below(2);
      params.segment = Below(2) ? Pick({0, 1, 2, 3, 7, 8, 9, 16, 255}) : static_cast<int>(Below(256));
      params.patch = Below(2) ? Pick({1, 2, 3, 8, 31, 32, 33, 64, 128, 4096}) : static_cast<int>(1 + Below(4096));
      const uint32_t height = 1 + Below(48), width = 1 + Below(48);
      std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * params.channels);
      const int kind = Below(3);  // noise, a gradient with a little noise, constant
      for (uint32_t y = 0; y < height; ++y)
        for (uint32_t x = 0; x < width; ++x)
          for (int c = 0; c < params.channels; ++c)
            pixels[(static_cast<size_t>(y) * width + x) * params.channels + c] = kind == 0 ? rng_()
                                                                                 : kind == 1
                                                                                     ? 3 * x + y + 40 * c + Below(4)
                                                                                     : 200;
      std::string encoded, error;
      if (!Encode(pixels.data(), height, width, params, &encoded, &error)) Finding("Encode fails", error);
      out.push_back(std::move(encoded));
    }
    return out;
  }

 private:
  static constexpr size_t kPoolSize = 256;

  uint64_t Below(uint64_t n) { return n ? rng_() % n : 0; }
  int Pick(std::initializer_list<int> values) { return values.begin()[Below(values.size())]; }

  // A quarter of the time inside the header and offsets table, which random positions would rarely hit.
  size_t Position(const std::string& s) { return Below(4) ? Below(s.size()) : Below(PayloadStart(s)); }

  uint8_t Value() { return Below(2) ? Pick({0x00, 0xFF, 0x80, 0x7F, 0x01, 0x08, 0x09, 0x0F, 0xF0}) : rng_(); }

  void Mutate(std::string* s) {
    switch (Below(8)) {
      case 0:
        if (!s->empty()) (*s)[Position(*s)] ^= static_cast<char>(1 << Below(8));
        break;
      case 1:
        if (!s->empty()) (*s)[Position(*s)] = static_cast<char>(Value());
        break;
      case 2:  // mostly a few bytes off the end, where the last patch's rows end
        s->resize(Below(2) ? s->size() - std::min<size_t>(s->size(), 1 + Below(8)) : Below(s->size() + 1));
        break;
      case 3: {
        const size_t n = 1 + Below(64);
        for (size_t i = 0; i < n; ++i) s->push_back(static_cast<char>(Value()));
        break;
      }
      case 4: {  // the head of this input, the tail of a seed
        const std::string& other = (*seeds_)[Below(seeds_->size())];
        *s = s->substr(0, Below(s->size() + 1)) + other.substr(Below(other.size() + 1));
        break;
      }
      case 5: EditHeaderField(s); break;
      case 6: EditOffset(s); break;
      default: Relayout(s);
    }
  }

  // version, channels, flags, segment, width, height, patch or reserved, to a boundary or a nearby value.
  void EditHeaderField(std::string* s) {
    if (s->size() < kHeaderSize) return;
    struct Field {
      size_t at;
      int bytes;
      std::vector<uint64_t> boundaries;
    };
    static const Field kFields[] = {
        {8, 1, {0, 1, 2, 255}},
        {9, 1, {0, 1, 2, 3, 4, 5, 255}},
        {10, 1, {0, 1, 2, 3, 4, 0x80, 255}},
        {11, 1, {0, 1, 2, 7, 8, 9, 255}},
        {12, 4, {0, 1, 2, 31, 32, 33, 127, 128, 129, 1 << 24, (1 << 24) + 1, 0xFFFFFFFF}},
        {16, 4, {0, 1, 2, 31, 32, 33, 127, 128, 129, 1 << 24, (1 << 24) + 1, 0xFFFFFFFF}},
        {20, 2, {0, 1, 2, 3, 31, 32, 33, 64, 128, 4095, 4096, 4097, 0xFFFF}},
        {22, 2, {0, 1, 0x100}},
    };
    const Field& field = kFields[Below(std::size(kFields))];
    uint64_t value = 0;
    for (int i = field.bytes - 1; i >= 0; --i) value = value << 8 | static_cast<uint8_t>((*s)[field.at + i]);
    switch (Below(3)) {
      case 0: value = field.boundaries[Below(field.boundaries.size())]; break;
      case 1: value += Below(2) ? 1 + Below(4) : -(1 + Below(4)); break;
      default: value = rng_();
    }
    StoreLe(s, field.at, value, field.bytes);
  }

  // ParseHeader checks the last offset against the payload's length before anything else, so without this
  // every truncation, extension and splice would end there: the entries past the payload's end become its end.
  void FitOffsetsToPayload(std::string* s) {
    const uint64_t count = OffsetCount(*s);
    if (count == 0 || kHeaderSize + 4 * count > s->size()) return;
    const uint64_t payload = s->size() - (kHeaderSize + 4 * count);
    for (uint64_t i = 0; i < count; ++i) {
      const size_t at = kHeaderSize + 4 * i;
      if (i + 1 == count || LoadLe32(*s, at) > payload) StoreLe(s, at, payload, 4);
    }
  }

  // One entry of the offsets table: to a neighbour, a step away, 0, the end, or past it.
  void EditOffset(std::string* s) {
    const size_t start = PayloadStart(*s);
    if (start < kHeaderSize + 4) return;
    const size_t entries = (start - kHeaderSize) / 4, i = Below(entries), at = kHeaderSize + 4 * i;
    const uint64_t old = LoadLe32(*s, at), payload = s->size() - start;
    uint64_t value;
    switch (Below(5)) {
      case 0:
        value = LoadLe32(*s, kHeaderSize + 4 * (Below(2) ? (i ? i - 1 : 0) : std::min(i + 1, entries - 1)));
        break;
      case 1: value = old + (Below(2) ? 1 + Below(8) : -(1 + Below(8))); break;
      case 2: value = Pick({0, 1}) + (Below(2) ? 0 : payload); break;
      case 3: value = 0xFFFFFFFF - Below(2); break;
      default: value = Below(payload + 1);
    }
    StoreLe(s, at, value, 4);
  }

  // A new geometry (channels, flags, segment, size or patch size) with an offsets table rebuilt to match, so
  // that ParseHeader accepts it and Decode reads the old payload under the wrong geometry.
  void Relayout(std::string* s) {
    if (s->size() < kHeaderSize) return;
    const size_t old_start = PayloadStart(*s);
    std::vector<uint32_t> old_offsets;
    for (size_t at = kHeaderSize; at + 4 <= old_start; at += 4) old_offsets.push_back(LoadLe32(*s, at));
    const std::string payload = s->substr(old_start);
    std::string header = s->substr(0, kHeaderSize);
    switch (Below(6)) {
      case 0: header[9] = static_cast<char>(Pick({1, 3, 4})); break;
      case 1: header[10] = static_cast<char>(Below(4)); break;
      case 2: header[11] = static_cast<char>(Below(2) ? Pick({0, 1, 8}) : Below(256)); break;
      case 3: StoreLe(&header, 12, Below(2) ? LoadLe32(header, 12) + Below(9) - 4 : 1 + Below(300), 4); break;
      case 4: StoreLe(&header, 16, Below(2) ? LoadLe32(header, 16) + Below(9) - 4 : 1 + Below(300), 4); break;
      default: StoreLe(&header, 20, Below(2) ? Pick({1, 2, 3, 8, 16, 32, 33, 64, 128, 4096}) : 1 + Below(4096), 2);
    }
    const uint64_t count = OffsetCount(header);
    if (count == 0 || count > (1 << 16)) return;  // no full header, or a table of megabytes
    std::vector<uint64_t> offsets(count);
    const int layout = Below(3);
    for (uint64_t i = 1; i + 1 < count; ++i) {
      if (layout == 0 && i < old_offsets.size())  // the old entries where there are
        offsets[i] = std::min<uint64_t>(old_offsets[i], payload.size());
      else if (layout == 1)  // even
        offsets[i] = payload.size() * i / (count - 1);
      else  // random split points
        offsets[i] = Below(payload.size() + 1);
    }
    offsets[count - 1] = payload.size();
    std::sort(offsets.begin(), offsets.end());
    header.resize(kHeaderSize + 4 * count);
    for (uint64_t i = 0; i < count; ++i) StoreLe(&header, kHeaderSize + 4 * i, offsets[i], 4);
    *s = header + payload;
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>* seeds_;
  std::vector<std::string> pool_;
};

// The input under test and where to save it, for the crash handlers.
const std::string* current_input = nullptr;
std::string crash_prefix;  // DIR/crash- ; empty: do not save

// Runs inside signal and sanitizer death handlers: async-signal-safe calls only.
void SaveCurrentInput() {
  if (current_input == nullptr || crash_prefix.empty()) return;
  const std::string* input = current_input;
  current_input = nullptr;                 // once, should saving itself fail
  uint64_t hash = 1469598103934665603ull;  // FNV-1a: equal inputs land in one file
  for (char c : *input) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  char path[4096];
  if (crash_prefix.size() + 17 > sizeof(path)) return;
  std::memcpy(path, crash_prefix.data(), crash_prefix.size());
  char* p = path + crash_prefix.size();
  for (int shift = 60; shift >= 0; shift -= 4) *p++ = "0123456789abcdef"[(hash >> shift) & 15];
  *p = '\0';
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  for (size_t done = 0; done < input->size();) {
    const ssize_t n = write(fd, input->data() + done, input->size() - done);
    if (n <= 0) break;
    done += n;
  }
  close(fd);
  const char note[] = "l3_fuzz: the failing input is saved as ";
  ssize_t ignored = write(2, note, sizeof(note) - 1);
  ignored = write(2, path, p - path);
  ignored = write(2, "\n", 1);
  (void)ignored;
}

void OnAbort(int signal) {
  SaveCurrentInput();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

Outcome Run(const std::string& input) {
  current_input = &input;
  // A copy of exactly the input's size, as libFuzzer makes: ASan sees a read one byte past its end, which a
  // string's terminator and spare capacity would hide.
  const std::unique_ptr<uint8_t[]> exact(new uint8_t[input.size()]);
  std::memcpy(exact.get(), input.data(), input.size());
  const Outcome outcome = FuzzOne(exact.get(), input.size());
  current_input = nullptr;
  return outcome;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "l3_fuzz: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int Usage() {
  std::fprintf(stderr,
               "usage: l3_fuzz [--seconds S] [--seed N] [--crash-dir DIR] SEED.l3...\n"
               "       l3_fuzz --replay FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  bool replay = false;
  std::string crash_dir = ".";
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--seconds" && has_value)
      seconds = std::atof(argv[++i]);
    else if (arg == "--seed" && has_value)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--crash-dir" && has_value)
      crash_dir = argv[++i];
    else if (arg == "--replay")
      replay = true;
    else if (arg.rfind("--", 0) == 0)
      return Usage();
    else
      files.push_back(arg);
  }
  if (files.empty()) return Usage();
  std::vector<std::string> inputs;
  for (const std::string& path : files) inputs.push_back(ReadFile(path));

  if (replay) {
    static const char* const kOutcomes[] = {"header rejected", "too large to decode here", "decode rejected",
                                            "decoded and round-tripped"};
    for (size_t i = 0; i < inputs.size(); ++i)
      std::printf("%s: %s\n", files[i].c_str(), kOutcomes[static_cast<int>(Run(inputs[i]))]);
    std::printf("l3_fuzz: replayed %zu files, no crash\n", inputs.size());
    return 0;
  }

  crash_prefix = crash_dir + "/crash-";
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(SaveCurrentInput);
  std::signal(SIGABRT, OnAbort);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Run(inputs[i]) != Outcome::kDecoded) {
      std::fprintf(stderr, "l3_fuzz: seed %s does not decode\n", files[i].c_str());
      return 2;
    }
  }
  Mutator mutator(seed, &inputs);
  for (std::string& synthetic : mutator.SyntheticSeeds(64)) inputs.push_back(std::move(synthetic));

  std::printf("l3_fuzz: seed %" PRIu64 ", %zu seed files, %zu synthetic, %.0f s\n", seed, files.size(),
              inputs.size() - files.size(), seconds);
  std::fflush(stdout);
  uint64_t counts[4] = {0, 0, 0, 0}, iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string mutant = mutator.Next();
    const Outcome outcome = Run(mutant);
    ++counts[static_cast<int>(outcome)];
    ++iterations;
    if (outcome == Outcome::kDecoded) mutator.Decoded(mutant);
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("l3_fuzz: %" PRIu64 " iterations in %.1f s (%.0f/s): %" PRIu64 " header rejected, %" PRIu64
              " too large to decode here, %" PRIu64 " decode rejected, %" PRIu64 " decoded and round-tripped\n",
              iterations, elapsed, iterations / elapsed, counts[0], counts[1], counts[2], counts[3]);
  std::printf("l3_fuzz: no crash\n");
  return 0;
}

#endif  // TFLIQUID_LIBFUZZER
