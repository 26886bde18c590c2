// The standalone GPU check of the L3 GPU decoder: needs a CUDA driver, NVRTC and a C++ compiler, not TensorFlow.
// It runs the op library's own device side (ops/l3: l3_launch_plan, l3_gpu_program, l3_gpu_staging,
// l3_gpu_launch; ops/common/cuda_api) as Liquid>DecodeL3Batch's GPU kernel does; tests/cuda_device/gpu_check.py
// builds it, feeds it images and reports. Loaded in libcuda's place, tests/cuda_host/cuda_driver.cc runs it all on
// the CPU.
//
//   l3_gpu_check [--kernel-dir DIR] device
//       the GPU: name, compute capability, multiprocessors, the kernel's shared memory limit
//   l3_gpu_check [--kernel-dir DIR] decode JOBS OUT_DIR
//       each line of JOBS, "NAME THREADS FILE.l3 ...", one batch decoded by the op's sequence (THREADS 0: the op's
//       block size): OUT_DIR/NAME.pixels ([B, H, W, C]) and OUT_DIR/NAME.tasks (the task table, int64), and a
//       JSON line naming the rejected batch or each corrupt image
//   l3_gpu_check [--kernel-dir DIR] verify [--threads N] [--singles K] [--corruptions K] [--seed S] PROFILE FILE.pam
//   ... l3_gpu_check [--kernel-dir DIR] time [--threads N] [--repeat R] PROFILE FILE.pam ...
//       verify.h and timing.h; each PAM file is a batch, encoded with PROFILE ("default" or "paper")
//
// JSON lines on stdout; exit status 0 when every check passed, 1 when one failed, 2 when the check could not run
// (usage, input, CUDA).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "batch.h"
#include "device.h"
#include "json.h"
#include "l3/l3_gpu_staging.h"
#include "timing.h"
#include "verify.h"

namespace l3_check {
namespace {

constexpr int kFailed = 1;
constexpr int kCannotRun = 2;

int CannotRun(const std::string& error) {
  std::fprintf(stderr, "l3_gpu_check: %s\n", error.c_str());
  return kCannotRun;
}

// "--name value" options, then the positional arguments.
struct Arguments {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;

  long long Number(const std::string& name, long long otherwise) const {
    const auto found = options.find(name);
    return found == options.end() ? otherwise : std::atoll(found->second.c_str());
  }
};

Arguments Parse(int argc, char** argv, int first) {
  Arguments arguments;
  for (int i = first; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--", 0) == 0 && i + 1 < argc) {
      arguments.options[argument.substr(2)] = argv[++i];
    } else {
      arguments.positional.push_back(argument);
    }
  }
  return arguments;
}

unsigned Cores() { return std::max(1u, std::thread::hardware_concurrency()); }

int DescribeDevice(const Device& device) {
  JsonLine()
      .Add("check", "device")
      .Add("name", device.name())
      .Add("compute_capability", device.compute_capability())
      .Add("multiprocessors", device.multiprocessors())
      .Add("max_shared_bytes", device.kernels().max_shared_bytes)
      .Add("cpu_cores", Cores())
      .Print();
  return 0;
}

bool ReadFile(const std::string& path, std::string* data) {
  std::ifstream file(path, std::ios::binary);
  data->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return static_cast<bool>(file) || file.eof();
}

void WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

int DecodeJobs(Device& device, const std::string& jobs_path, const std::string& out_dir) {
  std::ifstream jobs(jobs_path);
  if (!jobs) return CannotRun(jobs_path + ": cannot be read");
  for (std::string line; std::getline(jobs, line);) {
    std::istringstream fields(line);
    std::string name, path, error;
    int threads = 0;
    std::vector<std::string> files;
    fields >> name >> threads;
    while (fields >> path) {
      files.emplace_back();
      if (!ReadFile(path, &files.back())) return CannotRun(path + ": cannot be read");
    }
    Outcome outcome;
    std::vector<uint8_t> pixels;
    if (!device.DecodeToHost({files.begin(), files.end()}, threads, &outcome, &pixels, &error)) {
      return CannotRun(error);
    }
    std::vector<std::string> image_errors;
    for (size_t i = 0; i < outcome.corrupt_offsets.size(); ++i) {
      if (outcome.corrupt_offsets[i] != l3::kNoError) {
        image_errors.push_back("image " + std::to_string(i) + ": " +
                               l3::CorruptDataMessage(outcome.corrupt_offsets[i]));
      }
    }
    WriteFile(out_dir + "/" + name + ".pixels", pixels.data(), pixels.size());
    WriteFile(out_dir + "/" + name + ".tasks", outcome.plan.tasks.data(), outcome.plan.tasks.size() * sizeof(int64_t));
    JsonLine()
        .Add("check", "decode")
        .Add("job", name)
        .Add("threads", threads ? threads : outcome.plan.threads())
        .Add("batch_error", outcome.batch_error)
        .Add("image_errors", image_errors)
        .Print();
  }
  return 0;
}

int RunOnBatches(Device& device, const std::string& command, const Arguments& arguments) {
  if (arguments.positional.size() < 2) return CannotRun(command + " needs a profile and PAM files");
  const std::string& profile = arguments.positional[0];
  bool all_passed = true;
  for (size_t f = 1; f < arguments.positional.size(); ++f) {
    Batch batch;
    std::string error;
    if (!LoadBatch(arguments.positional[f], profile, &batch, &error)) return CannotRun(error);
    if (command == "verify") {
      VerifyOptions options;
      options.threads = static_cast<int>(arguments.Number("threads", 0));
      options.singles = static_cast<int>(arguments.Number("singles", options.singles));
      options.corruptions = static_cast<int>(arguments.Number("corruptions", 0));
      options.seed = static_cast<uint64_t>(arguments.Number("seed", 0)) + f;
      options.cpu_threads = Cores();
      bool passed = false;
      if (!Verify(device, batch, options, &passed, &error)) return CannotRun(error);
      all_passed = all_passed && passed;
    } else {
      TimingOptions options;
      options.threads = static_cast<int>(arguments.Number("threads", 0));
      options.repeat = static_cast<int>(arguments.Number("repeat", options.repeat));
      options.cpu_threads = Cores();
      if (!Time(device, batch, options, &error)) return CannotRun(error);
    }
  }
  return all_passed ? 0 : kFailed;
}

int Main(int argc, char** argv) {
  int first = 1;
  std::string kernel_dir = "ops/l3";
  if (argc > 2 && std::string(argv[1]) == "--kernel-dir") kernel_dir = argv[2], first = 3;
  if (first >= argc) return CannotRun("usage: l3_gpu_check [--kernel-dir DIR] device|decode|verify|time ...");
  const std::string command = argv[first];
  const Arguments arguments = Parse(argc, argv, first + 1);
  if (command != "device" && command != "decode" && command != "verify" && command != "time") {
    return CannotRun("unknown command " + command);
  }
  Device device;
  std::string error;
  if (!device.Open(kernel_dir, &error)) return CannotRun(error);
  if (command == "device") return DescribeDevice(device);
  if (command == "decode") {
    if (arguments.positional.size() != 2) return CannotRun("decode needs JOBS and OUT_DIR");
    return DecodeJobs(device, arguments.positional[0], arguments.positional[1]);
  }
  return RunOnBatches(device, command, arguments);
}

}  // namespace
}  // namespace l3_check

int main(int argc, char** argv) { return l3_check::Main(argc, argv); }
