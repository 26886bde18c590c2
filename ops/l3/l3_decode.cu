// L3 decoder kernel (docs/formats/l3.md): NVRTC compiles this file at run time for the GPU kernel of
// Liquid>DecodeL3Batch (setup.py embeds it in the op library) and for the standalone GPU check (tests/cuda_device,
// which reads it from here), and tests/cuda_host/shim.h compiles it unchanged for the CPU. Plain CUDA C++ with no
// include but the task table's columns (NVRTC has no host headers), without warp intrinsics (the shim has no
// warps), and with shared memory only in the one dynamic buffer below.

#include "l3_task_fields.h"  // the columns of the task table the host writes (l3_launch_plan.cc)

// Dynamic shared memory, laid out at the top of l3_decode_patches: 4 * (blockDim.x + L3_MAX_CHANNELS) +
// 2 * channels * (max_segments + max_width) bytes (the host computes the same size: LaunchPlan::shared_bytes).
extern __shared__ unsigned char l3_shared[];

// No corrupt position found (positions are payload offsets, far below it).
#define L3_NONE 0x7fffffffffffffffLL

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

// Records the smallest corrupt file offset of an image; the host reports it after the launch. `bad` is the block's
// smallest corrupt payload position or L3_NONE, the same in every thread: all leave together when it is set.
__device__ inline bool l3_failed(long long bad, unsigned long long* errors, int image, long long file_bias) {
  if (bad == L3_NONE) return false;
  if (threadIdx.x == 0) atomicMin(errors + image, (unsigned long long)(bad + file_bias));
  return true;
}

// Pixels in segment s of a row of w pixels cut into `segments` segments of `segment` pixels: the last is short.
__device__ inline int l3_segment_length(int s, int segments, int segment, int w) {
  return s == segments - 1 ? w - s * segment : segment;
}

// Value bits of a row's headers before header j (all channels' headers in order), from the owners' inclusive scan:
// those of the owners before j's, plus those of the headers of j's owner that come before j.
__device__ inline int l3_bits_before(int j, int chunk, const int* scan, const unsigned char* seg_width, int segments,
                                     int segment, int w) {
  const int owner = j / chunk;
  int bits = owner > 0 ? scan[owner - 1] : 0;
  for (int k = owner * chunk; k < j; ++k) bits += l3_segment_length(k % segments, segments, segment, w) * seg_width[k];
  return bits;
}

// Writes one decoded patch row ([channels][max_width] in shared memory) into the interleaved image, adding G back
// to R and B under subtract-green: thread t writes bytes t, t + blockDim.x, ..., so a warp's stores are contiguous.
__device__ inline void l3_write_row(const unsigned char* row, unsigned char* out, int items, int channels,
                                    int max_width, bool subtract_green) {
  for (int i = threadIdx.x; i < items; i += blockDim.x) {
    const int c = i % channels, x = i / channels;
    unsigned char v = row[c * max_width + x];
    if (subtract_green && (c == 0 || c == 2)) v = (unsigned char)(v + row[max_width + x]);
    out[i] = v;
  }
}

// One block decodes one patch of one image, all its channels, row by row. A row's work is cut into items in the
// order of the output: item i is column i / channels of channel i % channels, the byte at i of the patch row in the
// interleaved [H, W, C] image. The row's segment headers, channel after channel, are shared among the threads in
// chunks. Every early return depends only on values all threads of the block share, so the block leaves together.
extern "C" __global__ void l3_decode_patches(const unsigned char* __restrict__ payload,
                                             const long long* __restrict__ tasks,
                                             unsigned char* __restrict__ out,  // [B, height, width, channels]
                                             int height, int width, int channels,
                                             int max_width, int max_segments,  // over all tasks: sizes shared memory
                                             unsigned long long* __restrict__ errors) {  // [B], ~0 = no error
  const long long* task = tasks + (long long)blockIdx.x * L3_TASK_FIELDS;
  const long long file_bias = task[L3_TASK_FILE_BIAS];
  const int image = (int)task[L3_TASK_IMAGE];
  const int h = (int)task[L3_TASK_HEIGHT], w = (int)task[L3_TASK_WIDTH];
  const int segment = (int)task[L3_TASK_SEGMENT];
  const int header_bits = task[L3_TASK_ZIGZAG] ? 4 : 12;
  const bool subtract_green = task[L3_TASK_SUBTRACT_GREEN] != 0;
  const int segments = (w + segment - 1) / segment;
  const int row_header_bits = segments * header_bits;
  const int items = w * channels;
  const int headers = segments * channels;
  const int t = threadIdx.x, threads = blockDim.x;

  // Thread t owns the headers [t * chunk, t * chunk + chunk); `owners` threads own at least one.
  const int chunk = (headers + threads - 1) / threads;
  const int owners = (headers + chunk - 1) / chunk;
  const int own_first = t * chunk;
  const int own_last = own_first + chunk < headers ? own_first + chunk : headers;

  int* scan = (int*)l3_shared;                                             // [threads] value bits of owners, scanned
  int* corrupt = scan + threads;                                           // [L3_MAX_CHANNELS] a width above 8
  unsigned char* seg_width = (unsigned char*)(corrupt + L3_MAX_CHANNELS);  // [channels * max_segments]
  unsigned char* seg_base = seg_width + channels * max_segments;  // [channels * max_segments] int8 (base mapping)
  unsigned char* rows = seg_base + channels * max_segments;       // [2][channels][max_width] previous, current row
  const int row_buffer = channels * max_width;

  const long long row_stride = (long long)width * channels;
  unsigned char* out_patch =
      out + (((long long)image * height + task[L3_TASK_Y0]) * width + task[L3_TASK_X0]) * channels;

  // Where each channel's stream is read, and where it ends: the same in every thread.
  long long pos[L3_MAX_CHANNELS], end[L3_MAX_CHANNELS];
  long long bad = L3_NONE;
  for (int c = 0; c < channels; ++c) {
    pos[c] = task[L3_TASK_START + c];
    end[c] = task[L3_TASK_END + c];
    if (pos[c] + w > end[c] && pos[c] < bad) bad = pos[c];  // row 0 is w raw bytes
  }
  if (l3_failed(bad, errors, image, file_bias)) return;
  for (int c = t; c < L3_MAX_CHANNELS; c += threads) corrupt[c] = 0;
  for (int i = t; i < items; i += threads) {
    const int c = i % channels, x = i / channels;
    rows[c * max_width + x] = payload[pos[c] + x];
  }
  for (int c = 0; c < channels; ++c) pos[c] += w;

  for (int y = 1; y < h; ++y) {
    const unsigned char* previous = rows + ((y - 1) & 1) * row_buffer;
    unsigned char* current = rows + (y & 1) * row_buffer;
    for (int c = 0; c < channels; ++c) {
      if (pos[c] + (row_header_bits + 7) / 8 > end[c] && pos[c] < bad) bad = pos[c];
    }
    if (l3_failed(bad, errors, image, file_bias)) return;
    __syncthreads();  // the previous row is complete and nobody reads the segment tables any more
    l3_write_row(previous, out_patch + (y - 1) * row_stride, items, channels, max_width, subtract_green);

    // Phase 1: each thread reads its own segment headers and sums the bits of their values.
    int own_bits = 0;
    for (int j = own_first; j < own_last; ++j) {
      const int c = j / segments, s = j - c * segments;
      const unsigned header = l3_read_bits(payload + pos[c], (long long)s * header_bits, header_bits);
      const int bits = (int)(header >> (header_bits - 4));
      if (bits > 8) corrupt[c] = 1;
      seg_width[j] = (unsigned char)bits;
      seg_base[j] = (unsigned char)(header & 0xFF);
      own_bits += l3_segment_length(s, segments, segment, w) * bits;
    }
    scan[t] = own_bits;
    __syncthreads();
    for (int c = 0; c < channels; ++c) {
      if (corrupt[c] && pos[c] < bad) bad = pos[c];
    }
    if (l3_failed(bad, errors, image, file_bias)) return;

    // Phase 2: inclusive prefix sum of the owners' bit counts (Hillis-Steele); then where each channel's values
    // start among the row's, and where its row ends (byte aligned).
    for (int stride = 1; stride < owners; stride *= 2) {
      const int add = t >= stride && t < owners ? scan[t - stride] : 0;
      __syncthreads();
      scan[t] += add;
      __syncthreads();
    }
    int first_bits[L3_MAX_CHANNELS + 1];
    for (int c = 0; c <= channels; ++c) {
      first_bits[c] = l3_bits_before(c * segments, chunk, scan, seg_width, segments, segment, w);
    }
    for (int c = 0; c < channels; ++c) {
      const long long row_end = pos[c] + (row_header_bits + first_bits[c + 1] - first_bits[c] + 7) / 8;
      if (row_end > end[c] && pos[c] < bad) bad = pos[c];
    }
    if (l3_failed(bad, errors, image, file_bias)) return;

    // Phase 3: every item's residual, mapped back, plus its prediction.
    for (int i = t; i < items; i += threads) {
      const int c = i % channels, x = i / channels;
      const int s = x / segment, j = c * segments + s;
      const int bits = seg_width[j];
      const int before = l3_bits_before(j, chunk, scan, seg_width, segments, segment, w) - first_bits[c];
      const long long bit = (long long)row_header_bits + before + (long long)(x - s * segment) * bits;
      const unsigned coded = bits ? l3_read_bits(payload + pos[c], bit, bits) : 0u;
      const unsigned residual = header_bits == 4 ? (coded >> 1) ^ (0u - (coded & 1u))  // zigzag
                                                 : coded + (unsigned)(signed char)seg_base[j];  // base + delta
      current[c * max_width + x] =
          (unsigned char)(residual + (unsigned)l3_predict(previous + c * max_width, x, w));
    }
    for (int c = 0; c < channels; ++c) {
      pos[c] += (row_header_bits + first_bits[c + 1] - first_bits[c] + 7) / 8;
    }
  }
  __syncthreads();  // the last row is complete
  l3_write_row(rows + ((h - 1) & 1) * row_buffer, out_patch + (h - 1) * row_stride, items, channels, max_width,
               subtract_green);
  for (int c = 0; c < channels; ++c) {
    if (pos[c] != end[c] && pos[c] < bad) bad = pos[c];  // bytes left over
  }
  l3_failed(bad, errors, image, file_bias);
}
