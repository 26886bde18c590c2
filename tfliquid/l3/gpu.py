"""Whether `decode_l3_batch` can run on a GPU here, and why not; and the CUDA program its GPU kernel compiles.

The GPU kernel of `decode_l3_batch` is plain C++ in the op library: it opens the CUDA driver (`libcuda.so.1`) and
NVRTC (`libnvrtc.so.12`, installed by `pip install tfliquid[gpu]` or `tensorflow[and-cuda]`) with dlopen at first
use, compiles ops/l3/l3_decode.cu with NVRTC for the device, and launches it on TensorFlow's own stream. Nothing of
this is needed to build tfliquid or to load its ops (docs/architecture.md, "The L3 GPU kernel").
"""

from __future__ import annotations

import dataclasses

from tfliquid._lib import load_ops

DECODE_BATCH_OP = "Liquid>DecodeL3Batch"


@dataclasses.dataclass(frozen=True)
class GpuAvailability:
    """`available` is true when `decode_l3_batch` placed on a GPU runs its GPU kernel; `reason` says why not."""

    available: bool
    reason: str

    def __bool__(self) -> bool:
        return self.available


def registers_gpu_kernel(op_name: str = DECODE_BATCH_OP) -> bool:
    """Whether this process's TensorFlow holds a GPU kernel for the op (tfliquid's op library registers one)."""
    load_ops()
    from tensorflow.python.framework import kernels

    return any(kernel.device_type == "GPU" for kernel in kernels.get_registered_kernels_for_op(op_name).kernel)


def gpu_available() -> GpuAvailability:
    """Whether `decode_l3_batch` (and the `DecodeL3` Keras layer) can decode on a GPU in this process, and if not,
    every reason why: no GPU kernel registered, no GPU visible to TensorFlow, the CUDA driver or NVRTC missing."""
    import tensorflow as tf

    reasons = []
    if not registers_gpu_kernel():
        reasons.append(f"tfliquid's op library registers no GPU kernel for {DECODE_BATCH_OP}")
    if not tf.config.list_physical_devices("GPU"):
        reasons.append("TensorFlow sees no GPU")
    libraries = load_ops().liquid_l3_gpu_support().numpy().decode()
    if libraries:
        reasons.append(libraries)
    return GpuAvailability(not reasons, "; ".join(reasons))


def compile_gpu_kernels(arch: str = "compute_75") -> str:
    """The PTX of the GPU decoder's kernels for a virtual architecture, compiled by NVRTC through the same C++
    code the GPU kernel runs at first use. Checks an NVRTC installation on a machine without a GPU."""
    return load_ops().liquid_compile_l3_kernels(arch=arch).numpy().decode()
