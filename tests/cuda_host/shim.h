// Runs CUDA kernels on the CPU so that tests without a GPU execute the very .cu source the GPU runs.
//
// Blocks run one after another; the threads of a block are real std::threads and __syncthreads() is a C++20
// std::barrier, so a missing barrier shows up as a wrong result (or a report under -fsanitize=thread). Because one
// block runs at a time, dynamic shared memory is a plain global array: the .cu declares it
// `extern __shared__ unsigned char name[];` at file scope (the only shared memory it may use), the driver defines
// it and points shim::dynamic_shared at it; it is poisoned before every block, as GPU shared memory starts
// undefined. Only 1-D grids and blocks.
#pragma once

#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __shared__

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The block's geometry is the same for all its threads: plain globals. threadIdx differs per std::thread, so it
// is thread_local and each thread sets its own copy before entering the kernel (the launching thread's copy is
// never read).
inline dim3 gridDim, blockDim, blockIdx;
inline thread_local dim3 threadIdx;

namespace shim {
inline std::barrier<>* block_barrier = nullptr;
inline std::span<unsigned char> dynamic_shared;

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), unsigned blocks, unsigned threads, size_t shared_bytes, Args... args) {
  if (shared_bytes > dynamic_shared.size()) {
    std::fprintf(stderr, "shim: %zu bytes of shared memory requested, %zu available\n", shared_bytes,
                 dynamic_shared.size());
    std::abort();
  }
  gridDim = {blocks};
  blockDim = {threads};
  for (unsigned b = 0; b < blocks; ++b) {
    blockIdx = {b};
    std::memset(dynamic_shared.data(), 0xCD, dynamic_shared.size());
    std::barrier<> barrier(threads);
    block_barrier = &barrier;
    std::vector<std::thread> block;
    for (unsigned t = 0; t < threads; ++t) {
      block.emplace_back([&, t] {
        threadIdx = {t};
        kernel(args...);
        // A thread that has returned no longer takes part in __syncthreads(), as on Volta and later GPUs.
        block_barrier->arrive_and_drop();
      });
    }
    for (std::thread& thread : block) thread.join();
  }
}
}  // namespace shim

inline void __syncthreads() { shim::block_barrier->arrive_and_wait(); }

inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  std::atomic_ref<unsigned long long> target(*address);
  unsigned long long old = target.load();
  while (value < old && !target.compare_exchange_weak(old, value)) {
  }
  return old;
}
