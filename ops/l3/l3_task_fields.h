// Columns of the GPU decoder's task table: one int64 row per CUDA block, one block per (image, channel, patch).
// Shared by the kernels (l3_decode.cu, which NVRTC compiles with this file as its one header) and the host that
// writes the table (l3_launch_plan.cc). Plain C: NVRTC has no host headers.
#ifndef TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_
#define TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_

enum L3TaskField {
  L3_TASK_START,      // first byte of the patch stream in the concatenated payloads
  L3_TASK_END,        // one past its last byte (the next patch's start)
  L3_TASK_FILE_BIAS,  // added to a payload position gives the byte offset in the image's own L3 file
  L3_TASK_IMAGE,
  L3_TASK_CHANNEL,
  L3_TASK_Y0,
  L3_TASK_X0,
  L3_TASK_HEIGHT,   // patch height h, cut at the bottom edge
  L3_TASK_WIDTH,    // patch width w, cut at the right edge
  L3_TASK_SEGMENT,  // pixels per segment, resolved: the header's 0 (a whole patch row) is stored as w
  L3_TASK_ZIGZAG,   // 1: zigzag mapping, 4-bit segment headers; 0: base mapping, 12-bit headers
  L3_TASK_FIELDS
};

#endif  // TFLIQUID_OPS_L3_L3_TASK_FIELDS_H_
