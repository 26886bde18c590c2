// The CUDA driver API on the CPU: a library loaded in libcuda.so.1's place (TFLIQUID_CUDA_DRIVER_LIBRARY), so that
// the GPU decoder's device side (ops/l3/l3_gpu_launch.cc) and the GPU check (tests/cuda_device) run unchanged on a
// machine without a GPU, the kernel of ops/l3/l3_decode.cu executed by shim.h. Only the entry points they call.
//
// Like a GPU, and unlike plain function calls: a stream runs its work when it is synchronized, not when the work
// is queued, so host code that reads a result before waiting sees stale bytes; a copy from pageable memory takes
// the bytes when queued and a copy into it waits for the stream, as the real driver does, while copies from and
// into page-locked memory (cuMemHostAlloc) happen in stream order; kernel arguments are copied at launch; device
// memory is filled with 0xCD when allocated, as GPU memory starts undefined; and dynamic shared memory above
// 48 KiB needs the function's opt-in. One device (compute capability 7.5, one multiprocessor), one context.
// cuModuleLoadData takes PTX that declares the kernel built in here and hands that kernel out.
#include "shim.h"  // first: the kernel uses what it defines in CUDA's place

#include "l3_decode.cu"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cuda_api.h"  // cuda.h, as the driver that loads this library was built with

constexpr int kDefaultSharedBytes = 48 * 1024;
constexpr int kOptInSharedBytes = 64 * 1024;  // a compute capability 7.5 GPU's
alignas(16) unsigned char l3_shared[kOptInSharedBytes];

struct CUctx_st {};
struct CUstream_st {
  std::vector<std::function<void()>> queued;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  CUstream_st* stream = nullptr;
};
struct CUfunc_st {
  const char* name;
  // Copies the arguments now and returns the launch to run in stream order.
  std::function<std::function<void()>(unsigned blocks, unsigned threads, size_t shared, void** args)> bind;
  int max_dynamic_shared = kDefaultSharedBytes;
};
struct CUmod_st {};

namespace {

template <typename... Params, size_t... I>
std::function<void()> BindArguments(void (*kernel)(Params...), unsigned blocks, unsigned threads, size_t shared,
                                    void** args, std::index_sequence<I...>) {
  std::tuple<Params...> values{*static_cast<Params*>(args[I])...};
  return [=] {
    shim::dynamic_shared = std::span<unsigned char>(l3_shared, shared);
    std::apply([&](auto... arguments) { shim::launch(kernel, blocks, threads, shared, arguments...); }, values);
  };
}

template <typename... Params>
CUfunc_st Function(const char* name, void (*kernel)(Params...)) {
  return {name, [kernel](unsigned blocks, unsigned threads, size_t shared, void** args) {
            return BindArguments(kernel, blocks, threads, shared, args, std::index_sequence_for<Params...>());
          }};
}

CUfunc_st decode_patches = Function("l3_decode_patches", l3_decode_patches);
CUctx_st context;
CUmod_st module;
CUstream_st default_stream;
// Streams and events belong to the context, which lives as long as the process, as the driver's do.
std::vector<std::unique_ptr<CUstream_st>> streams;
std::vector<std::unique_ptr<CUevent_st>> events;
thread_local std::vector<CUcontext> current_contexts;

std::mutex memory_mutex;
// Base address -> size; never destroyed, as memory the process has not freed stays allocated to its end.
auto& device_memory = *new std::map<uintptr_t, size_t>();
auto& pinned_memory = *new std::map<uintptr_t, size_t>();

bool IsPinned(const void* pointer) {
  std::lock_guard<std::mutex> lock(memory_mutex);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  auto it = pinned_memory.upper_bound(address);
  return it != pinned_memory.begin() && address < std::prev(it)->first + std::prev(it)->second;
}

CUstream_st* StreamOf(CUstream stream) { return stream != nullptr ? stream : &default_stream; }

void RunQueued(CUstream_st* stream) {
  const std::vector<std::function<void()>> work = std::move(stream->queued);
  stream->queued.clear();
  for (const std::function<void()>& step : work) step();
}

void* Allocate(size_t bytes, std::map<uintptr_t, size_t>* registry) {
  void* memory = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(256));
  std::memset(memory, 0xCD, bytes);
  std::lock_guard<std::mutex> lock(memory_mutex);
  registry->emplace(reinterpret_cast<uintptr_t>(memory), bytes);
  return memory;
}

CUresult Free(uintptr_t address, std::map<uintptr_t, size_t>* registry) {
  std::lock_guard<std::mutex> lock(memory_mutex);
  if (registry->erase(address) == 0) return CUDA_ERROR_INVALID_VALUE;
  ::operator delete(reinterpret_cast<void*>(address), std::align_val_t(256));
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult error, const char** name) {
  static const std::map<CUresult, const char*> names = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
      {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
  };
  const auto found = names.find(error);
  if (found == names.end()) return CUDA_ERROR_INVALID_VALUE;
  *name = found->second;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** description) {
  *description = error == CUDA_SUCCESS ? "no error" : "reported by the CPU shim of the CUDA driver";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::snprintf(name, length, "CPU (tests/cuda_host shim of the CUDA driver)");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 7; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 5; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 1; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kOptInSharedBytes; return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* primary, CUdevice) {
  *primary = &context;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream, CUcontext* stream_context) {
  *stream_context = &context;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext pushed) {
  current_contexts.push_back(pushed);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* popped) {
  if (current_contexts.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *popped = current_contexts.back();
  current_contexts.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (current_contexts.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* loaded, const void* image) {
  const std::string ptx = static_cast<const char*>(image);
  if (ptx.find(".entry l3_decode_patches(") == std::string::npos) return CUDA_ERROR_INVALID_IMAGE;
  *loaded = &module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule, const char* name) {
  if (std::strcmp(name, decode_patches.name) != 0) return CUDA_ERROR_NOT_FOUND;
  *function = &decode_patches;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 0; return CUDA_SUCCESS;  // no registers to count on the CPU
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->max_dynamic_shared; return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value > kOptInSharedBytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  function->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int, size_t) {
  *blocks = 1;  // the shim runs one block at a time
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  *pointer = reinterpret_cast<CUdeviceptr>(Allocate(bytes, &device_memory));
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr pointer) { return Free(pointer, &device_memory); }

CUresult cuMemHostAlloc(void** pointer, size_t bytes, unsigned int) {
  *pointer = Allocate(bytes, &pinned_memory);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* pointer) { return Free(reinterpret_cast<uintptr_t>(pointer), &pinned_memory); }

CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, size_t bytes, CUstream stream) {
  StreamOf(stream)->queued.push_back([=] { std::memset(reinterpret_cast<void*>(destination), value, bytes); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr destination, const void* source, size_t bytes, CUstream stream) {
  auto* to = reinterpret_cast<unsigned char*>(destination);
  if (IsPinned(source)) {
    StreamOf(stream)->queued.push_back([=] { std::memcpy(to, source, bytes); });
  } else {
    auto* from = static_cast<const unsigned char*>(source);
    StreamOf(stream)->queued.push_back(
        [to, taken = std::vector<unsigned char>(from, from + bytes)] { std::memcpy(to, taken.data(), taken.size()); });
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void* destination, CUdeviceptr source, size_t bytes, CUstream stream) {
  auto* from = reinterpret_cast<const unsigned char*>(source);
  if (IsPinned(destination)) {
    StreamOf(stream)->queued.push_back([=] { std::memcpy(destination, from, bytes); });
  } else {
    RunQueued(StreamOf(stream));
    std::memcpy(destination, from, bytes);
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                        unsigned block_y, unsigned block_z, unsigned shared, CUstream stream, void** args, void**) {
  if (grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1 || block_x == 0 || block_x > 1024 ||
      static_cast<int>(shared) > function->max_dynamic_shared) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  StreamOf(stream)->queued.push_back(function->bind(grid_x, block_x, shared, args));
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = streams.emplace_back(std::make_unique<CUstream_st>()).get();
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  RunQueued(StreamOf(stream));
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = events.emplace_back(std::make_unique<CUevent_st>()).get();
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  event->stream = StreamOf(stream);
  event->stream->queued.push_back([event] { event->at = std::chrono::steady_clock::now(); });
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  if (event->stream != nullptr) RunQueued(event->stream);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  *milliseconds = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return CUDA_SUCCESS;
}
