#include "verify.h"

#include <algorithm>
#include <cstring>

#include "corruption.h"
#include "cpu_decoder.h"
#include "l3/l3_codec.h"
#include "l3/l3_gpu_staging.h"

namespace l3_check {
namespace {

// Damaged images go into launches of this many images at most.
constexpr size_t kCorruptedBatch = 4;
// Failures listed in the JSON line at most (all are counted).
constexpr size_t kListedFailures = 20;

// What became of the damaged files of one format version.
struct Damage {
  int reported = 0;          // damaged images the GPU (or the host's checks before the launch) reported
  int decoded_like_cpu = 0;  // damaged images that still decode, to the CPU decoder's pixels (version 1)
};

struct Tally {
  std::vector<std::string> failures;
  size_t failure_count = 0;
  Damage damage[3];  // by format version

  void Fail(const std::string& failure) {
    if (failures.size() < kListedFailures) failures.push_back(failure);
    ++failure_count;
  }
};

std::string ImageName(size_t i) { return "image " + std::to_string(i); }

// The op's verdict on a decoded batch against the source: every image reported clean and equal to its source.
void CheckDecoded(const Batch& batch, const std::vector<size_t>& sources, const Outcome& outcome,
                  const std::vector<uint8_t>& pixels, const std::string& how, Tally* tally) {
  if (!outcome.batch_error.empty()) {
    tally->Fail(how + ": " + outcome.batch_error);
    return;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (outcome.corrupt_offsets[i] != l3::kNoError) {
      tally->Fail(how + ": " + ImageName(sources[i]) + ": " + l3::CorruptDataMessage(outcome.corrupt_offsets[i]));
    } else if (!batch.Matches(sources[i], pixels.data() + i * batch.image_bytes())) {
      tally->Fail(how + ": " + ImageName(sources[i]) + ": pixels differ from the source");
    }
  }
}

// One damaged file among `intact` (the first images of the batch, one format version), launched as one batch.
bool CheckCorruption(Device& device, const Batch& batch, const std::vector<std::string>& intact,
                     const Corruption& corruption, int version, int threads, Tally* tally, std::string* error) {
  const size_t count = intact.size();
  std::vector<std::string_view> images(intact.begin(), intact.end());
  images[corruption.victim] = corruption.data;
  const std::string what =
      "version " + std::to_string(version) + ", " + ImageName(corruption.victim) + " " + corruption.what;
  Damage& damage = tally->damage[version];
  std::vector<uint8_t> cpu_pixels, gpu_pixels;
  std::string cpu_error;
  const bool cpu_decodes = DecodeOnCpu(corruption.data, &cpu_pixels, &cpu_error);
  Outcome outcome;
  if (!device.DecodeToHost(images, threads, &outcome, &gpu_pixels, error)) return false;

  if (!outcome.batch_error.empty()) {  // rejected on the host, before the launch, as the op would
    const std::string& rejected = outcome.batch_error;
    const bool names_victim = rejected.rfind(ImageName(corruption.victim) + ":", 0) == 0 ||
                              rejected.rfind(ImageName(corruption.victim) + " is ", 0) == 0;
    if (!names_victim) {
      tally->Fail(what + ": the batch is rejected for another image: " + rejected);
    } else if (cpu_decodes && cpu_pixels.size() == batch.image_bytes() && rejected.find(" is ") == std::string::npos) {
      tally->Fail(what + ": rejected before the launch (" + rejected + ") but the CPU decoder decodes it");
    } else {
      ++damage.reported;
    }
    return true;
  }
  for (size_t i = 0; i < count; ++i) {
    if (i == corruption.victim) continue;
    if (outcome.corrupt_offsets[i] != l3::kNoError || !batch.Matches(i, gpu_pixels.data() + i * batch.image_bytes())) {
      tally->Fail(what + ": " + ImageName(i) + ", intact, is reported or decoded wrongly beside it");
    }
  }
  const uint64_t offset = outcome.corrupt_offsets[corruption.victim];
  if (!cpu_decodes) {
    if (offset == l3::kNoError) {
      tally->Fail(what + ": the CPU decoder rejects it (" + cpu_error + ") but the GPU reports nothing");
    } else {
      ++damage.reported;
    }
  } else if (offset != l3::kNoError) {
    tally->Fail(what + ": the GPU reports " + l3::CorruptDataMessage(offset) + " but the CPU decoder decodes it");
  } else if (std::memcmp(cpu_pixels.data(), gpu_pixels.data() + corruption.victim * batch.image_bytes(),
                         batch.image_bytes()) != 0) {
    tally->Fail(what + ": the GPU decodes it to other pixels than the CPU decoder");
  } else {
    ++damage.decoded_like_cpu;
  }
  return true;
}

// The first `count` images encoded in format `version`, with the batch's profile.
bool EncodeHead(const Batch& batch, size_t count, int version, std::vector<std::string>* encoded, std::string* error) {
  for (size_t i = 0; i < count; ++i) {
    const Image& image = batch.images[i];
    l3::Params params;
    encoded->emplace_back();
    if (!l3::ProfileParams(batch.profile, image.height, image.width, image.channels, &params, error)) return false;
    params.version = version;
    if (!l3::Encode(image.pixels.data(), image.height, image.width, params, &encoded->back(), error)) return false;
  }
  return true;
}

}  // namespace

bool Verify(Device& device, const Batch& batch, const VerifyOptions& options, bool* passed, std::string* error) {
  Tally tally;
  const std::vector<std::string_view> images = batch.views();
  std::vector<size_t> all(images.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  Outcome outcome;
  std::vector<uint8_t> pixels;
  if (!device.DecodeToHost(images, options.threads, &outcome, &pixels, error)) return false;
  CheckDecoded(batch, all, outcome, pixels, "GPU, one launch", &tally);
  const int threads = outcome.plan.threads();
  for (size_t i = 0; i < std::min<size_t>(options.singles, images.size()); ++i) {
    if (!device.DecodeToHost({images[i]}, options.threads, &outcome, &pixels, error)) return false;
    CheckDecoded(batch, {i}, outcome, pixels, "GPU, alone", &tally);
  }
  std::vector<std::string> cpu_errors;
  DecodeBatchOnCpu(images, batch.image_bytes(), options.cpu_threads, &pixels, &cpu_errors);
  for (size_t i = 0; i < images.size(); ++i) {
    if (!cpu_errors[i].empty()) {
      tally.Fail("CPU: " + ImageName(i) + ": " + cpu_errors[i]);
    } else if (!batch.Matches(i, pixels.data() + i * batch.image_bytes())) {
      tally.Fail("CPU: " + ImageName(i) + ": pixels differ from the source");
    }
  }
  // The first images again, as damaged files of each version: version 1's only the kernel's checks can catch,
  // version 2's the checksum the host verifies before the launch.
  const size_t count = std::min(batch.encoded.size(), kCorruptedBatch);
  for (const int version : {1, 2}) {
    std::vector<std::string> intact;
    if (!EncodeHead(batch, count, version, &intact, error)) return false;
    for (const Corruption& corruption : Corruptions(intact, options.corruptions, options.seed)) {
      if (!CheckCorruption(device, batch, intact, corruption, version, options.threads, &tally, error)) return false;
    }
  }
  *passed = tally.failure_count == 0;
  batch.Line("verify")
      .Add("threads", options.threads ? options.threads : threads)
      .Add("singles", std::min<size_t>(options.singles, images.size()))
      .Add("cpu_threads", options.cpu_threads)
      .Add("corruptions", options.corruptions)
      .Add("v1_reported", tally.damage[1].reported)
      .Add("v1_decoded_like_cpu", tally.damage[1].decoded_like_cpu)
      .Add("v2_reported", tally.damage[2].reported)
      .Add("v2_decoded_like_cpu", tally.damage[2].decoded_like_cpu)
      .Add("failure_count", tally.failure_count)
      .Add("failures", tally.failures)
      .Add("passed", *passed)
      .Print();
  return true;
}

}  // namespace l3_check
