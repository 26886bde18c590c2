// Columns of the GPU decoder's task table: one int64 row per CUDA block, one block per (image, patch), all the
// patch's channels. Shared by the kernel (l3_decode.cu, which NVRTC compiles with this file as its one header)
// and the host that writes the table (l3_launch_plan.cc). Plain C: NVRTC has no host headers.
#ifndef TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_
#define TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_

enum { L3_MAX_CHANNELS = 4 };

enum L3TaskField {
  L3_TASK_START,                                      // L3_MAX_CHANNELS columns: channel c's patch stream starts at
                                                      // column START + c in the concatenated payloads (0: no channel)
  L3_TASK_END = L3_TASK_START + L3_MAX_CHANNELS,      // ... and ends before column END + c (the next stream's start)
  L3_TASK_FILE_BIAS = L3_TASK_END + L3_MAX_CHANNELS,  // added to a payload position: the offset in the image's file
  L3_TASK_IMAGE,
  L3_TASK_Y0,
  L3_TASK_X0,
  L3_TASK_HEIGHT,          // patch height h, cut at the bottom edge
  L3_TASK_WIDTH,           // patch width w, cut at the right edge
  L3_TASK_SEGMENT,         // pixels per segment, resolved: the header's 0 (a whole patch row) is stored as w
  L3_TASK_ZIGZAG,          // 1: zigzag mapping, 4-bit segment headers; 0: base mapping, 12-bit headers
  L3_TASK_SUBTRACT_GREEN,  // 1: R and B are stored minus G, the kernel adds G back as it writes the pixels
  L3_TASK_FIELDS
};

#endif  // TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_
