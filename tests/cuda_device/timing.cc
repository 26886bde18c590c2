#include "timing.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "cpu_decoder.h"
#include "l3/l3_gpu_staging.h"

namespace l3_check {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Milliseconds of each of `repeat` runs of `run`, by the wall clock.
bool WallTimes(int repeat, const std::function<bool()>& run, std::vector<double>* ms) {
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (!run()) return false;
    ms->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return true;
}

// The kernel alone, again and again over the launch the last decode staged on the device.
bool KernelTimes(Device& device, const l3::LaunchPlan& plan, int threads, int repeat, std::vector<double>* ms,
                 std::string* error) {
  const cuda::Driver& driver = device.driver();
  CUevent start, end;
  if (!cuda::Check(driver, driver.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate", error) ||
      !cuda::Check(driver, driver.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate", error)) {
    return false;
  }
  const l3::StagingLayout layout = l3::LayoutOf(plan);
  for (int r = 0; r < repeat; ++r) {
    float elapsed = 0;
    if (!cuda::Check(driver, driver.cuEventRecord(start, device.stream()), "cuEventRecord", error) ||
        !l3::LaunchDecodeKernel(driver, device.kernels(), device.stream(), plan, layout, threads, device.staged(),
                                device.pixels(), error) ||
        !cuda::Check(driver, driver.cuEventRecord(end, device.stream()), "cuEventRecord", error) ||
        !cuda::Check(driver, driver.cuEventSynchronize(end), "cuEventSynchronize", error) ||
        !cuda::Check(driver, driver.cuEventElapsedTime(&elapsed, start, end), "cuEventElapsedTime", error)) {
      return false;
    }
    ms->push_back(elapsed);
  }
  return true;
}

}  // namespace

bool Time(Device& device, const Batch& batch, const TimingOptions& options, std::string* error) {
  const std::vector<std::string_view> images = batch.views();
  Outcome outcome;
  // One decode: staged on the device for the kernel's runs, and a warm-up (the pinned buffer, the module).
  const auto decode = [&](Staging staging) {
    const bool ran = device.Decode(images, options.threads, staging, &outcome, error);
    const bool clean = ran && outcome.batch_error.empty() &&
                       std::count(outcome.corrupt_offsets.begin(), outcome.corrupt_offsets.end(), l3::kNoError) ==
                           static_cast<long>(images.size());
    if (ran && !clean) *error = batch.name + ": does not decode: " + outcome.batch_error;
    return clean;
  };
  if (!decode(Staging::kPinned)) return false;
  const l3::LaunchPlan plan = outcome.plan;
  const int threads = options.threads ? options.threads : plan.threads();
  const size_t shared = plan.shared_bytes(threads);
  const cuda::Driver& driver = device.driver();
  int registers = 0, blocks_per_multiprocessor = 0;
  if (!cuda::Check(driver,
                   driver.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, device.kernels().decode_patches),
                   "cuFuncGetAttribute", error) ||
      !cuda::Check(driver,
                   driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor,
                                                                      device.kernels().decode_patches, threads, shared),
                   "cuOccupancyMaxActiveBlocksPerMultiprocessor", error)) {
    return false;
  }

  std::vector<double> kernel, pinned, pageable, cpu;
  std::vector<uint8_t> cpu_pixels;
  std::vector<std::string> cpu_errors;
  if (!KernelTimes(device, plan, threads, options.repeat, &kernel, error) ||
      !WallTimes(
          options.repeat, [&] { return decode(Staging::kPinned); }, &pinned) ||
      !WallTimes(
          options.repeat, [&] { return decode(Staging::kPageable); }, &pageable) ||
      !WallTimes(
          options.repeat,
          [&] {
            DecodeBatchOnCpu(images, batch.image_bytes(), options.cpu_threads, &cpu_pixels, &cpu_errors);
            return true;
          },
          &cpu)) {
    return false;
  }
  const std::string cpu_name = "cpu-" + std::to_string(options.cpu_threads) + "-threads";
  const std::pair<const char*, const std::vector<double>*> rows[] = {
      {"gpu-kernel", &kernel}, {"gpu-op-pinned", &pinned}, {"gpu-op-pageable", &pageable}, {cpu_name.c_str(), &cpu}};
  for (const auto& [decoder, ms] : rows) {
    batch.Line("time")
        .Add("decoder", decoder)
        .Add("ms", Median(*ms))
        .Add("ms_runs", *ms)
        .Add("blocks", plan.num_tasks())
        .Add("threads", threads)
        .Add("shared_bytes", shared)
        .Add("registers", registers)
        .Add("blocks_per_multiprocessor", blocks_per_multiprocessor)
        .Print();
  }
  return true;
}

}  // namespace l3_check
