#include "pam.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace l3_check {

bool ReadPam(const std::string& path, std::vector<Image>* images, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot be read";
    return false;
  }
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  size_t at = 0;
  while (at < data.size()) {
    const size_t end = data.find("ENDHDR\n", at);
    if (data.compare(at, 3, "P7\n") != 0 || end == std::string::npos) {
      *error = path + ": byte " + std::to_string(at) + ": not a PAM header";
      return false;
    }
    Image image;
    int max_value = 0;
    std::istringstream header(data.substr(at + 3, end - at - 3));
    for (std::string key; header >> key;) {
      if (key == "WIDTH") header >> image.width;
      if (key == "HEIGHT") header >> image.height;
      if (key == "DEPTH") header >> image.channels;
      if (key == "MAXVAL") header >> max_value;
    }
    const size_t bytes = static_cast<size_t>(image.height) * image.width * image.channels;
    at = end + 7;
    if (max_value != 255 || bytes == 0 || data.size() - at < bytes) {
      *error = path + ": image " + std::to_string(images->size()) + ": not 8-bit, empty or cut short";
      return false;
    }
    image.pixels.assign(data.begin() + at, data.begin() + at + bytes);
    at += bytes;
    images->push_back(std::move(image));
  }
  return true;
}

}  // namespace l3_check
