"""The test oracle of the GPU kernel's launch plan (ops/l3/l3_launch_plan.cc): the same layout, written from
docs/formats/l3.md and the kernel's task columns in NumPy, so that tests/test_l3_gpu.py can compare the C++ table
with an independent one on every batch it decodes.

One CUDA block decodes one channel of one patch of one image (a task). The plan holds every image's payload back to
back and one int64 row per task: where the patch stream starts and ends in those payloads, where the patch lies in
the image, and how its rows are packed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tfliquid.l3 import codec as l3

# Columns of a task row; the enum L3TaskField in ops/l3/l3_task_fields.h, in the same order.
TASK_FIELDS = ("start", "end", "file_bias", "image", "channel", "y0", "x0", "height", "width", "segment", "zigzag")
_COLUMN = {name: i for i, name in enumerate(TASK_FIELDS)}
MAX_THREADS = 256  # a block handles wider patches by looping over columns


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    shape: tuple[int, int, int, int]  # decoded batch: B, H, W, C
    payload: np.ndarray  # uint8: the patch data of every image, in batch order
    tasks: np.ndarray  # int64 [tasks, len(TASK_FIELDS)], one row per CUDA block
    subtract_green: np.ndarray  # uint8 [B]: 1 where the add-green kernel must undo the colour transform
    max_width: int  # widest patch row and most segments in a row over all tasks: size the shared memory
    max_segments: int

    @property
    def threads(self) -> int:
        """Threads per block: one per column of the widest patch, in whole warps, at most MAX_THREADS."""
        return min(MAX_THREADS, -(-self.max_width // 32) * 32)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of l3_decode_patches (the layout at the top of the kernel)."""
        return 4 * (self.max_segments + self.threads + 1) + 2 * self.max_segments + 2 * self.max_width


def _image_tasks(
    image: int, params: l3.Params, height: int, width: int, offsets: np.ndarray, base: int, file_bias: int
) -> np.ndarray:
    """The task rows of one image: channel-major, patches row-major, as its offsets table lists them."""
    n = params.patch
    y0, x0 = np.meshgrid(np.arange(0, height, n), np.arange(0, width, n), indexing="ij")
    y0, x0 = np.tile(y0.ravel(), params.channels), np.tile(x0.ravel(), params.channels)
    patches_per_channel = len(y0) // params.channels
    tasks = np.empty((len(y0), len(TASK_FIELDS)), np.int64)
    column = {name: tasks[:, i] for name, i in _COLUMN.items()}
    column["start"][:] = base + offsets[:-1]
    column["end"][:] = base + offsets[1:]
    column["file_bias"][:] = file_bias
    column["image"][:] = image
    column["channel"][:] = np.repeat(np.arange(params.channels), patches_per_channel)
    column["y0"][:], column["x0"][:] = y0, x0
    column["height"][:] = np.minimum(n, height - y0)
    column["width"][:] = np.minimum(n, width - x0)
    column["segment"][:] = params.segment or column["width"]  # 0 in the header: one segment per patch row
    column["zigzag"][:] = params.zigzag
    return tasks


def plan_batch(encoded: list[bytes]) -> BatchPlan:
    """Validates every header and offsets table (the checks of docs/formats/l3.md) and builds the launch plan.

    Raises ValueError naming the image index: corrupt header or offsets, or a height, width or channel count that
    differs from image 0's. The patch streams themselves are checked by the kernel.
    """
    if not encoded:
        raise ValueError("empty batch")
    payloads, tasks, subtract_green = [], [], []
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
        payloads.append(np.frombuffer(data, np.uint8, offset=payload_start))
        tasks.append(_image_tasks(i, params, height, width, offsets, base, payload_start - base))
        subtract_green.append(params.subtract_green)
        base += len(data) - payload_start
    table = np.concatenate(tasks)
    widths, segments = table[:, _COLUMN["width"]], table[:, _COLUMN["segment"]]
    return BatchPlan(
        shape=(len(encoded), *shape),
        payload=np.concatenate(payloads),
        tasks=table,
        subtract_green=np.array(subtract_green, np.uint8),
        max_width=int(widths.max()),
        max_segments=int((-(-widths // segments)).max()),
    )
