// Progressive scan scripts: which coefficients, of which components, each scan of a progressive JPEG carries
// (docs/formats/pcr.md, "Scan scripts"). A PCR scan group is one scan, so the script is the fidelity ladder.
// No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_SCAN_SCRIPT_H_
#define TFLIQUID_OPS_JPEG_SCAN_SCRIPT_H_

#include <cstdio>  // jpeglib.h uses FILE without including stdio.h
#include <string>
#include <vector>

#include <jpeglib.h>

namespace tfliquid::jpeg {

// At most as many scans as jpegtran reads from a -scans file.
inline constexpr int kMaxScriptScans = 100;

// The script a transcode writes.
struct ScanScript {
  enum class Kind {
    kStandard,  // libjpeg's jpeg_simple_progression, as `jpegtran -progressive` writes
    kFast,      // spectral selection only (no refinement scans), which decodes faster; see FastScript()
    kCustom,    // `scans`, for images of `num_components` components
  };
  Kind kind = Kind::kStandard;
  std::vector<jpeg_scan_info> scans;
  int num_components = 0;
};

// "standard", "fast", or the text of a script in jpegtran's -scans syntax: scans separated by ';', each
// "C[,C...]: Ss-Se, Ah, Al" (component indexes, then the spectral band and the successive-approximation bits;
// without ": ..." a scan is 0-63, 0, 0), '#' comments to the end of a line. A custom script must be valid and
// lossless (ValidateScanScript) for the components it names. Returns false and sets *error otherwise.
bool ParseScanScript(const std::string& text, ScanScript* script, std::string* error);

// libjpeg's rules for a progressive script (jcmaster.c validate_script) for an image of `num_components`
// components, and one more: every bit of every coefficient of every component is transmitted, so that the
// transcode loses nothing (libjpeg lets a script drop AC data). Returns false and sets *error, naming the scan
// (1-based) and what is wrong.
bool ValidateScanScript(const std::vector<jpeg_scan_info>& scans, int num_components, std::string* error);

// The fast script for an image of `num_components` components: for 1 (grey) and 3 (colour), spectral selection
// only; for other counts none (empty: the standard script is used).
const std::vector<jpeg_scan_info>& FastScript(int num_components);
// The same in jpegtran's -scans syntax ("" for none).
const char* FastScriptText(int num_components);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_SCAN_SCRIPT_H_
