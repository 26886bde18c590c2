"""The test oracle of the GPU kernel's launch plan (ops/l3/l3_launch_plan.cc): the same layout, written from
docs/formats/l3.md and the kernel's task columns in NumPy, so that tests/test_l3_gpu.py can compare the C++ table
with an independent one on every batch it decodes.

One CUDA block decodes one patch of one image, all its channels (a task). The plan holds every image's payload back
to back and one int64 row per task: where each channel's patch stream starts and ends in those payloads, where the
patch lies in the image, and how its rows are packed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tfliquid.l3 import codec as l3

MAX_CHANNELS = 4
# Columns of a task row; the enum L3TaskField in ops/l3/l3_task_fields.h, in the same order. start0..3 and end0..3:
# channel c's stream (0 for channels the image lacks).
TASK_FIELDS = (
    *(f"start{c}" for c in range(MAX_CHANNELS)),
    *(f"end{c}" for c in range(MAX_CHANNELS)),
    "file_bias",
    "image",
    "y0",
    "x0",
    "height",
    "width",
    "segment",
    "zigzag",
    "subtract_green",
)
_COLUMN = {name: i for i, name in enumerate(TASK_FIELDS)}
MAX_THREADS = 512  # a block handles longer patch rows (all channels) by looping over them


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    shape: tuple[int, int, int, int]  # decoded batch: B, H, W, C
    payload: np.ndarray  # uint8: the patch data of every image (without its checksum), in batch order
    tasks: np.ndarray  # int64 [tasks, len(TASK_FIELDS)], one row per CUDA block
    max_width: int  # widest patch row and most segments in a row over all tasks: size the shared memory
    max_segments: int

    @property
    def threads(self) -> int:
        """Threads per block: one per byte of the widest patch row (all channels), in whole warps, at most
        MAX_THREADS."""
        return min(MAX_THREADS, -(-self.shape[3] * self.max_width // 32) * 32)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of l3_decode_patches (the layout at the top of the kernel)."""
        return 4 * (self.threads + MAX_CHANNELS) + 2 * self.shape[3] * (self.max_segments + self.max_width)


def _image_tasks(
    image: int, params: l3.Params, height: int, width: int, offsets: np.ndarray, base: int, file_bias: int
) -> np.ndarray:
    """The task rows of one image, patches row-major; its offsets table lists channel 0's patches, then channel
    1's, ..."""
    n = params.patch
    y0, x0 = (grid.ravel() for grid in np.meshgrid(np.arange(0, height, n), np.arange(0, width, n), indexing="ij"))
    patches = len(y0)
    tasks = np.zeros((patches, len(TASK_FIELDS)), np.int64)
    column = {name: tasks[:, i] for name, i in _COLUMN.items()}
    for c in range(params.channels):
        column[f"start{c}"][:] = base + offsets[c * patches : (c + 1) * patches]
        column[f"end{c}"][:] = base + offsets[c * patches + 1 : (c + 1) * patches + 1]
    column["file_bias"][:] = file_bias
    column["image"][:] = image
    column["y0"][:], column["x0"][:] = y0, x0
    column["height"][:] = np.minimum(n, height - y0)
    column["width"][:] = np.minimum(n, width - x0)
    column["segment"][:] = params.segment or column["width"]  # 0 in the header: one segment per patch row
    column["zigzag"][:] = params.zigzag
    column["subtract_green"][:] = params.subtract_green
    return tasks


def plan_batch(encoded: list[bytes]) -> BatchPlan:
    """Validates every header and offsets table (the checks of docs/formats/l3.md) and builds the launch plan.

    Raises ValueError naming the image index: corrupt header or offsets, or a height, width or channel count that
    differs from image 0's. The patch streams themselves are checked by the kernel.
    """
    if not encoded:
        raise ValueError("empty batch")
    payloads, tasks = [], []
    shape = None
    base = 0
    for i, data in enumerate(encoded):
        try:
            params, height, width, offsets, payload_start = l3.parse_header(data)
        except l3.L3Error as e:
            raise ValueError(f"image {i}: {e}") from None
        if shape is None:
            shape = (height, width, params.channels)
        elif (height, width, params.channels) != shape:
            raise ValueError(
                f"image {i} is {height}x{width}x{params.channels} (HxWxC), image 0 is "
                f"{shape[0]}x{shape[1]}x{shape[2]}: a batch needs one shape"
            )
        payloads.append(np.frombuffer(data, np.uint8, int(offsets[-1]), payload_start))  # not the checksum
        tasks.append(_image_tasks(i, params, height, width, offsets, base, payload_start - base))
        base += int(offsets[-1])
    table = np.concatenate(tasks)
    widths, segments = table[:, _COLUMN["width"]], table[:, _COLUMN["segment"]]
    return BatchPlan(
        shape=(len(encoded), *shape),
        payload=np.concatenate(payloads),
        tasks=table,
        max_width=int(widths.max()),
        max_segments=int((-(-widths // segments)).max()),
    )
