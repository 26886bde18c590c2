// Standalone test of ops/jpeg (no TensorFlow, no test framework); ops/tests/build_and_run.sh builds and runs it.
//
// Usage: jpeg_test FUZZ_ITERATIONS JPEG...  (custom scan scripts are compared with the system's jpegtran)
// For every JPEG X, the files X.none and X.all must hold `jpegtran -progressive -optimize -copy none` and
// `-copy all` of X: TranscodeToProgressive must reproduce them byte for byte.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <jpeglib.h>

#include "jpeg/scaled_decode.h"
#include "jpeg/scan_split.h"
#include "jpeg/spectral_decode.h"
#include "jpeg/strict_libjpeg.h"
#include "jpeg/transcode.h"

namespace {

using tfliquid::jpeg::CheckCoefficients;
using tfliquid::jpeg::ExcessScanOffset;
using tfliquid::jpeg::FastScriptText;
using tfliquid::jpeg::IsJpeg;
using tfliquid::jpeg::IsProgressive;
using tfliquid::jpeg::kDqt;
using tfliquid::jpeg::kMaxScans;
using tfliquid::jpeg::kSos;
using tfliquid::jpeg::ParseScanScript;
using tfliquid::jpeg::PlanSpectralScans;
using tfliquid::jpeg::ScaledDecoder;
using tfliquid::jpeg::ScanEnds;
using tfliquid::jpeg::ScanScript;
using tfliquid::jpeg::ScanSplitResult;
using tfliquid::jpeg::Segment;
using tfliquid::jpeg::SpectralPlan;
using tfliquid::jpeg::SupportedEighths;
using tfliquid::jpeg::TranscodeToProgressive;
using tfliquid::jpeg::WalkSegments;

std::atomic<int> failures{0};

ScanScript Script(const std::string& text) {
  ScanScript script;
  std::string error;
  if (!ParseScanScript(text, &script, &error)) {
    std::fprintf(stderr, "bad script in the test: %s\n", error.c_str());
    std::exit(2);
  }
  return script;
}

const ScanScript kStandard = Script("standard");
const ScanScript kFast = Script("fast");
// A script with refinement scans in another order than the standard one, for images of 3 components.
constexpr char kRefiningColour[] =
    "# DC first, then luminance in two bands, chroma, then the last bit of the luminance\n"
    "0,1,2: 0-0, 0, 1; 0: 1-9, 0, 1; 2: 1-63, 0, 0; 1: 1-63, 0, 0; 0: 10-63, 0, 1;\n"
    "0,1,2: 0-0, 1, 0; 0: 1-63, 1, 0;";

#define CHECK(condition, context)                                                                                    \
  do {                                                                                                               \
    if (!(condition)) {                                                                                              \
      std::fprintf(stderr, "FAILED %s:%d: %s [%s]\n", __FILE__, __LINE__, #condition, std::string(context).c_str()); \
      ++failures;                                                                                                    \
    }                                                                                                                \
  } while (0)

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

ScanSplitResult Split(const std::string& jpeg) { return ScanEnds(Bytes(jpeg), jpeg.size()); }

// Colour components, read by libjpeg itself (its default error handler exits, which is fine in a test).
int Components(const std::string& jpeg) {
  jpeg_decompress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, Bytes(jpeg), jpeg.size());
  jpeg_read_header(&info, TRUE);
  const int components = info.num_components;
  jpeg_destroy_decompress(&info);
  return components;
}

void TestTranscode(const std::string& path) {
  const std::string input = ReadFile(path);
  CHECK(Split(input).ok, path + ": " + Split(input).error);
  for (const bool keep_markers : {false, true}) {
    const std::string expected_path = path + (keep_markers ? ".all" : ".none");
    std::string out, error;
    CHECK(TranscodeToProgressive(Bytes(input), input.size(), keep_markers, kStandard, &out, &error),
          path + ": " + error);
    CHECK(out == ReadFile(expected_path), expected_path + " differs from the transcode");
    const ScanSplitResult split = Split(out);
    CHECK(split.ok, expected_path + ": " + split.error);
    // libjpeg's standard script: 6 scans for one component, 10 for three.
    const size_t scans = Components(input) == 1 ? 6 : 10;
    CHECK(split.scan_ends.size() == scans, expected_path + ": " + std::to_string(split.scan_ends.size()));
    CHECK(!split.scan_ends.empty() && split.scan_ends.back() + 2 == out.size(), expected_path);
    CHECK(IsJpeg(Bytes(out), out.size()) && IsProgressive(Bytes(out), out.size()), expected_path);
  }
}

// `jpegtran -scans SCRIPT -optimize -copy none` of `input`, run as a program: the oracle of custom scripts.
std::string Jpegtran(const std::string& script, const std::string& input_path, const std::string& work) {
  const std::string script_path = work + "/script.txt";
  std::FILE* file = std::fopen(script_path.c_str(), "w");
  std::fputs(script.c_str(), file);
  std::fclose(file);
  const std::string command = "jpegtran -scans " + script_path + " -optimize -copy none " + input_path;
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  CHECK(pclose(pipe) == 0, command);
  return out;
}

// The fast script and a refining one, on baseline and progressive inputs (which they re-script), byte for byte
// what jpegtran writes with the same script.
void TestScripts(const std::string& path, const std::string& work) {
  const std::string input = ReadFile(path);
  const int components = Components(input);
  std::vector<std::string> scripts = {FastScriptText(components)};
  if (components == 3) scripts.push_back(kRefiningColour);
  for (const std::string& text : scripts) {
    if (text.empty()) continue;
    std::string out, error;
    CHECK(TranscodeToProgressive(Bytes(input), input.size(), false, Script(text), &out, &error), path + ": " + error);
    CHECK(out == Jpegtran(text, path, work), path + ": differs from jpegtran -scans with script " + text);
    std::string fast;
    CHECK(TranscodeToProgressive(Bytes(input), input.size(), false, kFast, &fast, &error), path + ": " + error);
    CHECK(text != FastScriptText(components) || fast == out, path + ": \"fast\" is not its script");
  }
  std::string out, error;
  if (components == 1) {  // a colour script does not fit a grey image
    CHECK(!TranscodeToProgressive(Bytes(input), input.size(), false, Script(kRefiningColour), &out, &error), path);
    CHECK(error == "the scan script is for images of 3 components; this one has 1", error);
  }
}

void TestScriptErrors() {
  const std::pair<const char*, const char*> cases[] = {
      {"0: 1-63, 0, 0; 0: 0-0, 0, 0;", "scan script: scan 1: AC coefficients of component 0 before its DC"},
      {"0: 0-0, 0, 1; 0: 1-63, 0, 0;", "scan script: coefficient 0 of component 0 is not sent to its last bit"},
      {"0: 0-0, 0, 0;", "scan script: coefficient 1 of component 0 is never sent"},
      {"0: 0-63, 0, 0;", "scan script: scan 1 covers coefficients 0-63"},
      {"0,1: 0-0, 0, 0; 0,1: 1-63, 0, 0;", "scan script: scan 2: a scan of AC coefficients has one component"},
      {"0: 0-5, 0, 0;", "scan script: scan 1: the DC coefficient (0) and AC coefficients in one scan"},
      {"1,0: 0-0, 0, 0;", "scan script: scan 1: components must be listed in increasing order"},
      {"0: 0-0, 0;", "scan script: scan 1: expected \"Ss-Se, Ah, Al\" after ':'"},
      {"zero: 0-0, 0, 0;", "scan script: unexpected 'z' at byte 0"},
      {"0: 0-0, 0, 0; 0: 1-63, 1, 0;", "scan script: scan 2: coefficient 1 of component 0: its first scan"},
  };
  for (const auto& [text, expected] : cases) {
    ScanScript script;
    std::string error;
    CHECK(!ParseScanScript(text, &script, &error), text);
    CHECK(error.rfind(expected, 0) == 0, std::string(text) + " -> " + error);
  }
}

void TestErrors() {
  std::string out = "untouched", error;
  CHECK(!TranscodeToProgressive(nullptr, 0, false, kStandard, &out, &error) && !error.empty(), error);
  const std::string png = "\x89PNG\r\n\x1a\n";
  CHECK(!TranscodeToProgressive(Bytes(png), png.size(), true, kStandard, &out, &error), "png");
  CHECK(error.find("Not a JPEG file") != std::string::npos, error);
  CHECK(out == "untouched", "the output is only written on success");
  const ScanSplitResult split = ScanEnds(nullptr, 0);
  CHECK(!split.ok && split.error == "offset 0: no SOI marker, not a JPEG", split.error);
  CHECK(!IsJpeg(nullptr, 0) && !IsProgressive(nullptr, 0), "empty input");
}

// The scan limit is read from the markers alone (before any scan is decoded), at the offset ScanEnds names.
void TestScanLimit() {
  const std::string scan = std::string("\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00", 10) + "\x12";
  auto jpeg = [&](size_t scans) {
    std::string data = "\xff\xd8";
    for (size_t k = 0; k < scans; ++k) data += scan;
    return data + "\xff\xd9";
  };
  const std::string most = jpeg(kMaxScans), too_many = jpeg(kMaxScans + 6);
  CHECK(ExcessScanOffset(Bytes(most), most.size()) == 0, "64 scans are allowed");
  const size_t excess = ExcessScanOffset(Bytes(too_many), too_many.size());
  CHECK(excess == 2 + kMaxScans * scan.size(), std::to_string(excess));
  const ScanSplitResult split = ScanEnds(Bytes(too_many), too_many.size());
  CHECK(split.error == "offset " + std::to_string(excess) + ": more than 64 scans", split.error);
}

// libjpeg's own decode of `jpeg` to RGB at scale eighths / 8, read strictly, with its fast integer transform and
// block smoothing as chosen: the oracle of ScaledDecoder's spectral-selection path. False on an error.
bool LibjpegDecode(const std::string& jpeg, int eighths, bool smoothing, std::vector<uint8_t>* pixels) {
  tfliquid::jpeg::ErrorManager err{};
  jpeg_decompress_struct info{};
  info.err = tfliquid::jpeg::StrictErrors(&err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, Bytes(jpeg), jpeg.size());
  jpeg_read_header(&info, TRUE);
  err.reading_scans = true;
  info.out_color_space = JCS_RGB;
  info.dct_method = JDCT_IFAST;
  info.scale_num = eighths;
  info.scale_denom = 8;
  info.do_block_smoothing = smoothing ? TRUE : FALSE;
  jpeg_start_decompress(&info);
  pixels->resize(static_cast<size_t>(info.output_width) * info.output_height * 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels->data() + static_cast<size_t>(info.output_scanline) * info.output_width * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

// ScaledDecoder's pixels of `jpeg`: at full size as tf.io.decode_jpeg decodes (target_side 0), or at a side's
// scale; *eighths gets the scale it chose. False on an error.
bool ScaledDecode(const std::string& jpeg, int64_t target_side, std::vector<uint8_t>* pixels, int* eighths) {
  ScaledDecoder decoder;
  std::string error;
  const bool full_size = target_side == 0;
  const int64_t side = full_size ? std::numeric_limits<int64_t>::max() : target_side;
  if (!decoder.Start(Bytes(jpeg), jpeg.size(), side, side, &error, !full_size)) return false;
  *eighths = decoder.eighths();
  pixels->resize(static_cast<size_t>(decoder.height() * decoder.width() * 3));
  return decoder.Decode(pixels->data(), &error);
}

// The fast script's transcodes are decoded by the spectral-selection entropy decoder; every JPEG, whichever
// decoder reads its scans, gets the pixels libjpeg gives, at every scale.
void TestSpectralSelection(const std::string& path) {
  const std::string input = ReadFile(path), standard = ReadFile(path + ".none");
  std::string fast, error;
  CHECK(TranscodeToProgressive(Bytes(input), input.size(), false, kFast, &fast, &error), path + ": " + error);
  SpectralPlan plan;
  CHECK(PlanSpectralScans(Bytes(fast), fast.size(), &plan), path + ": the fast script is not planned");
  CHECK(IsProgressive(Bytes(input), input.size()) || !PlanSpectralScans(Bytes(input), input.size(), &plan),
        path + ": a baseline JPEG is planned");
  CHECK(!PlanSpectralScans(Bytes(standard), standard.size(), &plan), path + ": the standard script is planned");
  const ScanSplitResult split = Split(fast);  // a prefix: its scans do not code every coefficient
  const std::string prefix = fast.substr(0, split.scan_ends.at(1)) + "\xff\xd9";
  CHECK(PlanSpectralScans(Bytes(prefix), prefix.size(), &plan) && !plan.complete, path + ": a prefix");
  // A Huffman table with more codes of a length than the length has: refused, as libjpeg refuses it.
  std::string bad_table = fast;
  const size_t dht = bad_table.find("\xff\xc4");
  CHECK(dht != std::string::npos, path);
  int codes = 0;  // the first table's codes, all made 1 bit long
  for (size_t length = 1; length <= 16; ++length)
    codes += static_cast<uint8_t>(std::exchange(bad_table[dht + 4 + length], 0));
  bad_table[dht + 5] = static_cast<char>(codes);
  std::vector<uint8_t> pixels;
  int eighths = 8;
  CHECK(!ScaledDecode(bad_table, 0, &pixels, &eighths) && !LibjpegDecode(bad_table, 8, true, &pixels), path);
  for (const std::string& jpeg : {input, standard, fast, prefix}) {
    for (const int64_t side : {0, 8, 64, 100000}) {
      std::vector<uint8_t> ours, expected;
      int eighths = 0;
      CHECK(ScaledDecode(jpeg, side, &ours, &eighths), path);
      CHECK(LibjpegDecode(jpeg, eighths, side == 0, &expected), path);
      CHECK(ours == expected, path + ": pixels differ from libjpeg's at " + std::to_string(eighths) + "/8");
    }
  }
}

// A flat 320 x 256 colour page with a dark line, baseline, 4:4:4, at quality 90: its luminance's DC codes in about a
// bit a block.
std::string FlatPage() {
  jpeg_compress_struct info{};
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = 320;
  info.image_height = 256;
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  for (int c = 0; c < 3; ++c) info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
  jpeg_start_compress(&info, TRUE);
  std::vector<uint8_t> row(320 * 3);
  while (info.next_scanline < info.image_height) {
    std::fill(row.begin(), row.end(), info.next_scanline / 4 == 25 ? 0 : 250);
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&info, rows, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::string jpeg(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return jpeg;
}

// Progressive prefixes whose scans have not reached every component (one DC scan per component, as mozjpeg writes
// them): the blocks of the others need no bit of the data, and their quantisation tables may come later, just
// before their first scan. Both decode as libjpeg decodes them, at full size and at a scale.
void TestComponentsNotScannedYet() {
  const std::string page = FlatPage();
  std::string progressive, error;
  const ScanScript one_dc_scan_each = Script(
      "0: 0-0, 0, 0; 1: 0-0, 0, 0; 2: 0-0, 0, 0; 0: 1-63, 0, 0; "
      "1: 1-63, 0, 0; 2: 1-63, 0, 0;");
  CHECK(TranscodeToProgressive(Bytes(page), page.size(), false, one_dc_scan_each, &progressive, &error), error);
  // The same file with the chroma's quantisation table defined just before the chroma's first scan.
  std::vector<std::pair<size_t, size_t>> segments;  // offset, end
  size_t chroma_table = 0, scans = 0, chroma_scan = 0;
  WalkSegments(Bytes(progressive), progressive.size(), [&](const Segment& segment) {
    if (segment.code == kDqt && (progressive[segment.offset + 4] & 15) == 1) chroma_table = segments.size();
    if (segment.code == kSos && ++scans == 2) chroma_scan = segments.size();
    segments.emplace_back(segment.offset, segment.end);
    return true;
  });
  CHECK(chroma_table > 0 && chroma_scan > chroma_table, "the transcode's segments");
  const auto piece = [&](size_t k) {
    return progressive.substr(segments[k].first, segments[k].second - segments[k].first);
  };
  std::string late_table = "\xff\xd8";
  for (size_t k = 0; k < segments.size(); ++k) {
    if (k == chroma_scan) late_table += piece(chroma_table);
    if (k != chroma_table) late_table += piece(k);
  }
  for (const std::string& jpeg : {progressive, late_table}) {
    const ScanSplitResult split = Split(jpeg);
    CHECK(split.ok && split.scan_ends.size() == 6, split.error);
    for (size_t group = 1; group <= 2 && group <= split.scan_ends.size(); ++group) {
      const std::string prefix = jpeg.substr(0, split.scan_ends[group - 1]) + "\xff\xd9";
      for (const int64_t side : {0, 8, 64}) {
        std::vector<uint8_t> ours, expected;
        int eighths = 0;
        CHECK(ScaledDecode(prefix, side, &ours, &eighths), "group " + std::to_string(group));
        CHECK(LibjpegDecode(prefix, eighths, side == 0, &expected), "group " + std::to_string(group));
        CHECK(ours == expected, "group " + std::to_string(group) + ": pixels differ from libjpeg's");
      }
    }
  }
}

// Data that libjpeg would recover from by filling blocks with grey is an error naming the byte offset, and a
// frame header claiming more blocks than the data can code is refused before anything is allocated.
void TestCorruption(const std::string& path) {
  for (const std::string& jpeg : {ReadFile(path), ReadFile(path + ".none")}) {
    std::string error;
    CHECK(CheckCoefficients(Bytes(jpeg), jpeg.size(), &error), path + ": " + error);
    const std::string truncated = jpeg.substr(0, jpeg.size() * 7 / 10);
    std::string out;
    CHECK(!CheckCoefficients(Bytes(truncated), truncated.size(), &error), path + " truncated");
    CHECK(error.find("(at byte ") != std::string::npos, path + ": " + error);
    CHECK(!TranscodeToProgressive(Bytes(truncated), truncated.size(), false, kStandard, &out, &error),
          path + " truncated");
  }
  // The same file, its frame header (SOF) claiming 15000 x 15000 pixels.
  std::string bomb = ReadFile(path);
  for (size_t at = 2; at + 9 < bomb.size();) {  // segment by segment: an EXIF thumbnail has an SOF of its own
    const auto marker = static_cast<uint8_t>(bomb[at + 1]);
    if (marker == 0xC0 || marker == 0xC1 || marker == 0xC2) {
      bomb.replace(at + 5, 4, "\x3a\x98\x3a\x98");
      break;
    }
    at += 2 + (static_cast<uint8_t>(bomb[at + 2]) << 8 | static_cast<uint8_t>(bomb[at + 3]));
  }
  std::string out, error;
  CHECK(!TranscodeToProgressive(Bytes(bomb), bomb.size(), false, kStandard, &out, &error), path + " bomb");
  CHECK(error.find("claims 15000x15000 pixels") != std::string::npos, path + ": " + error);
}

// Transcodes every file from several threads at once: libjpeg state is per call, so results must not differ.
void TestThreads(const std::vector<std::string>& paths) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&paths] {
      for (const std::string& path : paths) {
        const std::string input = ReadFile(path);
        std::string out, error;
        CHECK(TranscodeToProgressive(Bytes(input), input.size(), false, kStandard, &out, &error), error);
        CHECK(out == ReadFile(path + ".none"), path + " (threaded)");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Mutates real JPEGs (byte flips, marker bytes, truncation, insertion, deletion) and checks that neither
// function crashes (ASan/UBSan in build_and_run.sh) and that their results are consistent.
void Fuzz(const std::vector<std::string>& seeds, int iterations) {
  std::mt19937 rng(20240601);
  const uint8_t interesting[] = {0x00, 0x01, 0xC4, 0xD0, 0xD7, 0xD8, 0xD9, 0xDA, 0xDD, 0xFF};
  auto below = [&rng](size_t n) { return n == 0 ? 0 : rng() % n; };
  for (int i = 0; i < iterations; ++i) {
    std::string m = seeds[below(seeds.size())];
    for (int edits = 1 + below(4); edits > 0; --edits) {
      const size_t at = below(m.size());
      switch (below(5)) {
        case 0:
          if (!m.empty()) m[at] ^= static_cast<char>(1 << below(8));
          break;
        case 1:
          if (!m.empty()) m[at] = interesting[below(sizeof(interesting))];
          break;
        case 2: m.resize(below(m.size() + 1)); break;
        case 3: m.insert(at, 1 + below(3), interesting[below(sizeof(interesting))]); break;
        default: m.erase(at, below(64)); break;
      }
    }
    // An exactly sized heap copy, so that ASan reports any read past the end.
    const std::vector<uint8_t> data(m.begin(), m.end());
    const std::string context = "fuzz iteration " + std::to_string(i);
    const ScanSplitResult split = ScanEnds(data.data(), data.size());
    if (split.ok) {
      CHECK(!split.scan_ends.empty() && split.scan_ends.size() <= kMaxScans, context);
      for (size_t k = 0; k < split.scan_ends.size(); ++k) {
        CHECK(split.scan_ends[k] <= data.size() && (k == 0 || split.scan_ends[k - 1] < split.scan_ends[k]), context);
      }
    } else {
      CHECK(split.scan_ends.empty() && split.error.rfind("offset ", 0) == 0, context + ": " + split.error);
    }
    CHECK(IsJpeg(data.data(), data.size()) || !split.ok, context);
    IsProgressive(data.data(), data.size());
    std::string out, error;
    const bool whole = CheckCoefficients(data.data(), data.size(), &error);
    if (TranscodeToProgressive(data.data(), data.size(), i % 2 == 0, i % 3 == 0 ? kStandard : kFast, &out, &error)) {
      CHECK(whole, context + ": transcoded, but CheckCoefficients refused it");
      // Whatever libjpeg accepts, it writes as a well-formed progressive JPEG that the splitter accepts.
      CHECK(Split(out).ok && IsProgressive(Bytes(out), out.size()), context + ": " + Split(out).error);
    } else {
      CHECK(!error.empty(), context);
    }
    // The scaled decoder, every third mutant (a decode under the sanitizers costs as much as the checks above): a
    // scale in 1..8 (0: unparsable), and an image of the size it announced, or an error.
    if (i % 3 != 0) continue;
    const int supported = SupportedEighths(data.data(), data.size());
    CHECK(supported >= 0 && supported <= 8, context);
    ScaledDecoder decoder;
    if (decoder.Start(data.data(), data.size(), 1 + below(64), 1 + below(64), &error)) {
      CHECK(decoder.eighths() >= 1 && decoder.eighths() <= 8, context);
      std::vector<uint8_t> pixels(static_cast<size_t>(decoder.height() * decoder.width() * 3));
      CHECK(decoder.Decode(pixels.data(), &error) || !error.empty(), context);
    } else {
      CHECK(!error.empty(), context);
    }
    // At full size, the spectral-selection decoder (on the mutants of fast-script seeds whose headers survive)
    // decodes what libjpeg decodes, into the same pixels, and fails where libjpeg fails.
    const std::string mutant(m);
    std::vector<uint8_t> ours, expected;
    int eighths = 8;
    const bool decoded = ScaledDecode(mutant, 0, &ours, &eighths);
    CHECK(decoded == LibjpegDecode(mutant, eighths, true, &expected), context + ": one decoder failed, not the other");
    CHECK(!decoded || ours == expected, context + ": pixels differ from libjpeg's");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FUZZ_ITERATIONS JPEG...\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> paths(argv + 2, argv + argc);
  const std::string work = paths[0].substr(0, paths[0].rfind('/'));  // a scratch folder: the fixtures' own
  std::vector<std::string> seeds;
  for (const std::string& path : paths) {
    TestTranscode(path);
    TestCorruption(path);
    TestScripts(path, work);
    TestSpectralSelection(path);
    seeds.push_back(ReadFile(path));
    seeds.push_back(ReadFile(path + ".none"));
    std::string fast, error;
    if (TranscodeToProgressive(Bytes(seeds[seeds.size() - 2]), seeds[seeds.size() - 2].size(), false, kFast, &fast,
                               &error)) {
      seeds.push_back(fast);
    }
  }
  TestErrors();
  TestScanLimit();
  TestComponentsNotScannedYet();
  TestScriptErrors();
  TestThreads(paths);
  Fuzz(seeds, std::atoi(argv[1]));
  if (failures > 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures.load());
    return 1;
  }
  std::printf("jpeg_test: %zu files, %s fuzz iterations: all checks passed\n", paths.size(), argv[1]);
  return 0;
}
