"""L3 images decoded on a CUDA GPU (the format: docs/formats/l3.md; the reference codec: tfliquid.formats.l3).

    >>> import tfliquid.l3
    >>> images = tfliquid.l3.decode_batch_gpu([l3_bytes_0, l3_bytes_1])  # tf.uint8 [2, H, W, C] on the GPU

`decode_batch_gpu` runs the paper's decoder: one CUDA block per channel of each patch, one thread per column, the
rows of a patch in sequence. The host only parses headers and lays out the launch; pixels never leave the GPU and
reach TensorFlow through DLPack. It needs CuPy and a CUDA device (`pip install tfliquid[gpu]`); importing this
package does not. The kernel source, kernels/l3_decode.cu, also runs on the CPU in the tests (tests/cuda_host).
"""

from tfliquid.l3.gpu import decode_batch_gpu

__all__ = ["decode_batch_gpu"]
