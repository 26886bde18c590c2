// The GPU check's output: one JSON object per line, read by gpu_check.py and the tests.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_JSON_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_JSON_H_

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace l3_check {

inline std::string Quoted(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

class JsonLine {
 public:
  JsonLine& Add(const char* key, const std::string& value) { return Raw(key, Quoted(value)); }
  JsonLine& Add(const char* key, const char* value) { return Raw(key, Quoted(value)); }
  JsonLine& Add(const char* key, bool value) { return Raw(key, value ? "true" : "false"); }
  template <typename Integer, typename = std::enable_if_t<std::is_integral_v<Integer>>>
  JsonLine& Add(const char* key, Integer value) {
    return Raw(key, std::to_string(value));
  }
  JsonLine& Add(const char* key, double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.6g", value);
    return Raw(key, text);
  }
  JsonLine& Add(const char* key, const std::vector<std::string>& values) {
    std::string list = "[";
    for (const std::string& value : values) list += (list.size() > 1 ? ", " : "") + Quoted(value);
    return Raw(key, list + "]");
  }
  JsonLine& Add(const char* key, const std::vector<double>& values) {
    std::string list = "[";
    for (const double value : values) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.6g", value);
      list += (list.size() > 1 ? ", " : "") + std::string(text);
    }
    return Raw(key, list + "]");
  }
  // Writes the line to stdout at once, so that a crash later loses nothing printed.
  void Print() const {
    std::printf("{%s}\n", fields_.c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& Raw(const char* key, const std::string& json) {
    fields_ += (fields_.empty() ? "" : ", ") + Quoted(key) + ": " + json;
    return *this;
  }
  std::string fields_;
};

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_JSON_H_
