// L3 decoder kernels (docs/formats/l3.md): the GPU kernel of Liquid>DecodeL3Batch compiles this file with NVRTC
// at first use (l3_gpu_kernel.cc; setup.py embeds it in the op library), and tests/cuda_host/shim.h compiles it
// unchanged for the CPU. Plain CUDA C++ with no include but the task table's columns (NVRTC has no host headers),
// without warp intrinsics (the shim has no warps), and with shared memory only in the one dynamic buffer below.

#include "l3_task_fields.h"  // the columns of the task table the host writes (l3_launch_plan.cc)

// Dynamic shared memory, laid out at the top of l3_decode_patches: 4 * (max_segments + blockDim.x + 1) +
// 2 * max_segments + 2 * max_width bytes (the host computes the same size).
extern __shared__ unsigned char l3_shared[];

__device__ inline int l3_abs(int v) { return v < 0 ? -v : v; }

// The custom Paeth prediction of column x from the previous row (edges replicate the top pixel; ties a, b, c).
__device__ inline int l3_predict(const unsigned char* previous, int x, int w) {
  const int b = previous[x];
  const int a = x > 0 ? previous[x - 1] : b;
  const int c = x < w - 1 ? previous[x + 1] : b;
  const int p = a + c - b;
  const int pa = l3_abs(p - a), pb = l3_abs(p - b), pc = l3_abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// `count` (1..12) bits, most significant first, starting `bit` bits into `row`. Touches only the bytes that hold
// those bits, so a caller that checked the row's end against the patch end never reads past it.
__device__ inline unsigned l3_read_bits(const unsigned char* row, long long bit, int count) {
  const unsigned char* p = row + (bit >> 3);
  const int used = (int)(bit & 7) + count;  // <= 7 + 12 bits: at most 3 bytes
  const int bytes = (used + 7) >> 3;
  unsigned word = 0;
  for (int i = 0; i < bytes; ++i) word = word << 8 | p[i];
  return (word >> (bytes * 8 - used)) & ((1u << count) - 1u);
}

// Records the smallest corrupt file offset of an image; the host raises on it after the launch.
__device__ inline void l3_report(unsigned long long* errors, int image, long long file_offset) {
  atomicMin(errors + image, (unsigned long long)file_offset);
}

// One block decodes one channel of one patch: one thread per column (strided when w > blockDim.x), row by row.
// Every early return below depends only on values all threads of the block share, so the block leaves together.
extern "C" __global__ void l3_decode_patches(const unsigned char* __restrict__ payload,
                                             const long long* __restrict__ tasks,
                                             unsigned char* __restrict__ out,  // [B, height, width, channels]
                                             int height, int width, int channels,
                                             int max_width, int max_segments,  // over all tasks: sizes shared memory
                                             unsigned long long* __restrict__ errors) {  // [B], ~0 = no error
  const long long* task = tasks + (long long)blockIdx.x * L3_TASK_FIELDS;
  const long long end = task[L3_TASK_END];
  const long long file_bias = task[L3_TASK_FILE_BIAS];
  const int image = (int)task[L3_TASK_IMAGE];
  const int h = (int)task[L3_TASK_HEIGHT], w = (int)task[L3_TASK_WIDTH];
  const int segment = (int)task[L3_TASK_SEGMENT];
  const int header_bits = task[L3_TASK_ZIGZAG] ? 4 : 12;
  const int segments = (w + segment - 1) / segment;
  const int row_header_bits = segments * header_bits;
  const int t = threadIdx.x, threads = blockDim.x;

  // Thread t owns the segment headers [t * chunk, t * chunk + chunk); `owners` threads own at least one.
  const int chunk = (segments + threads - 1) / threads;
  const int owners = (segments + chunk - 1) / chunk;
  const int own_first = t * chunk;
  const int own_last = own_first + chunk < segments ? own_first + chunk : segments;

  int* value_offset = (int*)l3_shared;             // [max_segments] bit offset of a segment's values
  int* scan = value_offset + max_segments;         // [threads] value bits of each thread's segments, scanned
  int* corrupt = scan + threads;                   // [1] a segment width above 8 in this row
  unsigned char* seg_width = (unsigned char*)(corrupt + 1);  // [max_segments]
  unsigned char* seg_base = seg_width + max_segments;        // [max_segments] int8 base (base mapping)
  unsigned char* rows = seg_base + max_segments;             // [2][max_width] previous and current row

  const long long row_stride = (long long)width * channels;
  unsigned char* out_patch = out + ((long long)image * height + task[L3_TASK_Y0]) * row_stride +
                             task[L3_TASK_X0] * channels + task[L3_TASK_CHANNEL];

  long long pos = task[L3_TASK_START];
  if (pos + w > end) {  // row 0 is w raw bytes
    if (t == 0) l3_report(errors, image, pos + file_bias);
    return;
  }
  if (t == 0) *corrupt = 0;
  for (int x = t; x < w; x += threads) {
    const unsigned char v = payload[pos + x];
    rows[x] = v;
    out_patch[(long long)x * channels] = v;
  }
  pos += w;

  for (int y = 1; y < h; ++y) {
    const unsigned char* previous = rows + ((y - 1) & 1) * max_width;
    unsigned char* current = rows + (y & 1) * max_width;
    const unsigned char* row = payload + pos;
    if (pos + (row_header_bits + 7) / 8 > end) {
      if (t == 0) l3_report(errors, image, pos + file_bias);
      return;
    }
    __syncthreads();  // the previous row is complete and nobody reads the segment tables any more

    // Phase 1: each thread reads its own segment headers and sums the bits of their values.
    int own_bits = 0;
    for (int s = own_first; s < own_last; ++s) {
      const unsigned header = l3_read_bits(row, (long long)s * header_bits, header_bits);
      const int bits = (int)(header >> (header_bits - 4));
      if (bits > 8) *corrupt = 1;
      seg_width[s] = (unsigned char)bits;
      seg_base[s] = (unsigned char)(header & 0xFF);
      const int length = s == segments - 1 ? w - s * segment : segment;
      own_bits += length * bits;
    }
    scan[t] = own_bits;
    __syncthreads();
    if (*corrupt) {
      if (t == 0) l3_report(errors, image, pos + file_bias);
      return;
    }

    // Phase 2: inclusive prefix sum of the owners' bit counts (Hillis-Steele), then each owner's segment offsets.
    for (int stride = 1; stride < owners; stride *= 2) {
      const int add = t >= stride && t < owners ? scan[t - stride] : 0;
      __syncthreads();
      scan[t] += add;
      __syncthreads();
    }
    int offset = scan[t] - own_bits;
    for (int s = own_first; s < own_last; ++s) {
      value_offset[s] = offset;
      offset += (s == segments - 1 ? w - s * segment : segment) * seg_width[s];
    }
    __syncthreads();
    const long long row_end = pos + ((long long)row_header_bits + scan[owners - 1] + 7) / 8;  // byte aligned
    if (row_end > end) {
      if (t == 0) l3_report(errors, image, pos + file_bias);
      return;
    }

    // Phase 3: every column's residual, mapped back, plus its prediction.
    for (int x = t; x < w; x += threads) {
      const int s = x / segment;
      const int bits = seg_width[s];
      const long long bit = (long long)row_header_bits + value_offset[s] + (long long)(x - s * segment) * bits;
      const unsigned coded = bits ? l3_read_bits(row, bit, bits) : 0u;
      const unsigned residual = header_bits == 4 ? (coded >> 1) ^ (0u - (coded & 1u))  // zigzag
                                                 : coded + (unsigned)(signed char)seg_base[s];  // base + delta
      const unsigned char v = (unsigned char)(residual + (unsigned)l3_predict(previous, x, w));
      current[x] = v;
      out_patch[y * row_stride + (long long)x * channels] = v;
    }
    pos = row_end;
  }
  if (pos != end && t == 0) l3_report(errors, image, pos + file_bias);  // bytes left over
}

// Undoes subtract-green (R += G, B += G mod 256) for the images whose flag is set; a grid-stride loop over pixels.
extern "C" __global__ void l3_add_green(unsigned char* __restrict__ out, long long pixels_per_image, int images,
                                        int channels, const unsigned char* __restrict__ subtract_green) {
  const long long total = pixels_per_image * images;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    if (!subtract_green[i / pixels_per_image]) continue;
    unsigned char* pixel = out + i * channels;
    pixel[0] = (unsigned char)(pixel[0] + pixel[1]);
    pixel[2] = (unsigned char)(pixel[2] + pixel[1]);
  }
}
