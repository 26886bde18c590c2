#include "jpeg/scan_script.h"

#include <algorithm>
#include <cctype>

namespace tfliquid::jpeg {
namespace {

constexpr int kCoefficients = DCTSIZE2;
constexpr int kMaxAhAl = 10;  // jcmaster.c's MAX_AH_AL for 8-bit samples

// The fast scripts (docs/formats/pcr.md, "Scan scripts", where the measurements that chose them are).
// Luminance by spectral bands, chroma whole after the lowest luminance bands; no refinement scans, which cost
// most of a progressive decode.
constexpr char kFastColour[] =
    "0,1,2: 0-0, 0, 0; 0: 1-2, 0, 0; 0: 3-5, 0, 0; 2: 1-63, 0, 0; 1: 1-63, 0, 0; 0: 6-14, 0, 0; 0: 15-63, 0, 0;";
constexpr char kFastGrey[] = "0: 0-0, 0, 0; 0: 1-2, 0, 0; 0: 3-5, 0, 0; 0: 6-14, 0, 0; 0: 15-63, 0, 0;";

// A reader of jpegtran's -scans syntax, token by token as rdswitch.c's read_scan_integer reads it.
class ScriptReader {
 public:
  explicit ScriptReader(const std::string& text) : text_(text) {}

  // The next integer and the character that ends it: ':' or ';', ' ' for any other separator, or '\0' at the
  // end. False if there is no integer next (then terminator() is what stands there, '\0' at the end).
  bool Integer(long* value) {
    SkipSpaceAndComments();
    if (pos_ == text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      terminator_ = pos_ == text_.size() ? '\0' : text_[pos_];
      return false;
    }
    *value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (*value < 1000000) *value = *value * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    SkipSpaceAndComments();
    if (pos_ == text_.size()) {
      terminator_ = '\0';
    } else if (text_[pos_] == ':' || text_[pos_] == ';') {
      terminator_ = text_[pos_++];
    } else {
      // Separators other than ':' and ';' are ignored: "0-63" and "0, 0" read as "0 63" and "0 0".
      if (!std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      terminator_ = ' ';
    }
    return true;
  }

  char terminator() const { return terminator_; }
  size_t position() const { return pos_; }

 private:
  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      if (text_[pos_] == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
  char terminator_ = '\0';
};

// Scans of a script in jpegtran's syntax; false with *error for text jpegtran would refuse.
bool ReadScans(const std::string& text, std::vector<jpeg_scan_info>* scans, std::string* error) {
  ScriptReader reader(text);
  long value;
  while (reader.Integer(&value)) {
    const std::string where = "scan " + std::to_string(scans->size() + 1) + ": ";
    if (scans->size() == kMaxScriptScans) {
      *error = "more than " + std::to_string(kMaxScriptScans) + " scans";
      return false;
    }
    jpeg_scan_info scan{};
    scan.component_index[0] = static_cast<int>(value);
    scan.comps_in_scan = 1;
    while (reader.terminator() == ' ') {
      if (scan.comps_in_scan == MAX_COMPS_IN_SCAN) {
        *error = where + "more than " + std::to_string(MAX_COMPS_IN_SCAN) + " components";
        return false;
      }
      if (!reader.Integer(&value)) {
        *error = where + "expected a component index at byte " + std::to_string(reader.position());
        return false;
      }
      scan.component_index[scan.comps_in_scan++] = static_cast<int>(value);
    }
    if (reader.terminator() == ':') {
      long fields[4];
      for (int f = 0; f < 4; ++f) {
        if (!reader.Integer(&fields[f]) || (f < 3 && reader.terminator() != ' ')) {
          *error = where + "expected \"Ss-Se, Ah, Al\" after ':'";
          return false;
        }
      }
      scan.Ss = static_cast<int>(fields[0]);
      scan.Se = static_cast<int>(fields[1]);
      scan.Ah = static_cast<int>(fields[2]);
      scan.Al = static_cast<int>(fields[3]);
    } else {  // no band: the whole spectrum, as jpegtran reads it
      scan.Ss = 0;
      scan.Se = kCoefficients - 1;
    }
    if (reader.terminator() != ';' && reader.terminator() != '\0') {
      *error = where + "expected ';' at byte " + std::to_string(reader.position());
      return false;
    }
    scans->push_back(scan);
  }
  if (reader.terminator() != '\0') {
    *error = "unexpected '" + std::string(1, reader.terminator()) + "' at byte " + std::to_string(reader.position()) +
             ": a scan starts with a component index";
    return false;
  }
  return true;
}

// The script of `text`, which is valid: for the built-in fast scripts.
std::vector<jpeg_scan_info> BuiltIn(const char* text) {
  std::vector<jpeg_scan_info> scans;
  std::string error;
  ReadScans(text, &scans, &error);
  return scans;
}

}  // namespace

bool ValidateScanScript(const std::vector<jpeg_scan_info>& scans, int num_components, std::string* error) {
  if (scans.empty()) {
    *error = "the script has no scans";
    return false;
  }
  if (scans[0].Ss == 0 && scans[0].Se == kCoefficients - 1) {
    *error = "scan 1 covers coefficients 0-63: the script would make a sequential JPEG, not a progressive one";
    return false;
  }
  std::vector<std::vector<int>> last_bit(num_components, std::vector<int>(kCoefficients, -1));
  for (size_t s = 0; s < scans.size(); ++s) {
    const jpeg_scan_info& scan = scans[s];
    const std::string where = "scan " + std::to_string(s + 1) + ": ";
    auto fail = [&](const std::string& what) {
      *error = where + what;
      return false;
    };
    if (scan.comps_in_scan < 1 || scan.comps_in_scan > MAX_COMPS_IN_SCAN) return fail("1 to 4 components");
    for (int i = 0; i < scan.comps_in_scan; ++i) {
      const int c = scan.component_index[i];
      if (c < 0 || c >= num_components) {
        return fail("component " + std::to_string(c) + ", but the image has " + std::to_string(num_components));
      }
      if (i > 0 && c <= scan.component_index[i - 1]) return fail("components must be listed in increasing order");
    }
    if (scan.Ss < 0 || scan.Se < scan.Ss || scan.Se >= kCoefficients) {
      return fail("band " + std::to_string(scan.Ss) + "-" + std::to_string(scan.Se) + " is not within 0-63");
    }
    if (scan.Ah < 0 || scan.Ah > kMaxAhAl || scan.Al < 0 || scan.Al > kMaxAhAl) return fail("Ah and Al are 0..10");
    if (scan.Ss == 0 && scan.Se != 0) return fail("the DC coefficient (0) and AC coefficients in one scan");
    if (scan.Ss != 0 && scan.comps_in_scan != 1) return fail("a scan of AC coefficients has one component");
    for (int i = 0; i < scan.comps_in_scan; ++i) {
      const int c = scan.component_index[i];
      std::vector<int>& last = last_bit[c];
      if (scan.Ss != 0 && last[0] < 0)
        return fail("AC coefficients of component " + std::to_string(c) + " before its DC");
      for (int k = scan.Ss; k <= scan.Se; ++k) {
        if (last[k] < 0 ? scan.Ah != 0 : scan.Ah != last[k] || scan.Al != scan.Ah - 1) {
          return fail("coefficient " + std::to_string(k) + " of component " + std::to_string(c) +
                      (last[k] < 0 ? ": its first scan must have Ah = 0"
                                   : ": a refinement must have Ah = " + std::to_string(last[k]) +
                                         " (the previous Al) and Al = Ah - 1"));
        }
        last[k] = scan.Al;
      }
    }
  }
  for (int c = 0; c < num_components; ++c) {
    for (int k = 0; k < kCoefficients; ++k) {
      if (last_bit[c][k] != 0) {
        *error = "coefficient " + std::to_string(k) + " of component " + std::to_string(c) + " is " +
                 (last_bit[c][k] < 0 ? "never sent" : "not sent to its last bit (Al = 0)") +
                 ": the transcode would lose data";
        return false;
      }
    }
  }
  return true;
}

bool ParseScanScript(const std::string& text, ScanScript* script, std::string* error) {
  *script = ScanScript();
  if (text == "standard") return true;
  if (text == "fast") {
    script->kind = ScanScript::Kind::kFast;
    return true;
  }
  std::vector<jpeg_scan_info> scans;
  if (!ReadScans(text, &scans, error)) {
    *error = "scan script: " + *error;
    return false;
  }
  int components = 0;
  for (const jpeg_scan_info& scan : scans) {
    for (int i = 0; i < scan.comps_in_scan; ++i) components = std::max(components, scan.component_index[i] + 1);
  }
  if (!ValidateScanScript(scans, components, error)) {
    *error = "scan script: " + *error;
    return false;
  }
  script->kind = ScanScript::Kind::kCustom;
  script->scans = std::move(scans);
  script->num_components = components;
  return true;
}

const char* FastScriptText(int num_components) {
  return num_components == 1 ? kFastGrey : num_components == 3 ? kFastColour : "";
}

const std::vector<jpeg_scan_info>& FastScript(int num_components) {
  static const auto* const grey = new std::vector<jpeg_scan_info>(BuiltIn(kFastGrey));
  static const auto* const colour = new std::vector<jpeg_scan_info>(BuiltIn(kFastColour));
  static const auto* const none = new std::vector<jpeg_scan_info>();
  return num_components == 1 ? *grey : num_components == 3 ? *colour : *none;
}

}  // namespace tfliquid::jpeg
