"""L3 lossless images: decode in parallel per patch and per pixel row (the format: docs/formats/l3.md).

    >>> encoded = tfliquid.l3.encode_l3(image)            # uint8 [H, W, C] -> L3 bytes (C++ op)
    >>> image = tfliquid.l3.decode_l3(encoded)            # on the CPU, in graphs and Dataset.map
    >>> batch = tfliquid.l3.decode_batch_gpu([a, b])      # tf.uint8 [2, H, W, C] on a CUDA GPU (CuPy)
    >>> tfliquid.l3.convert("photos/", "photos-l3/")      # a folder tree of images -> .l3 files

Modules: `codec` (the reference encoder and decoder, the oracle; NumPy only), `ops` (the C++ ops), `conversion`
(the conversion job), `plan` and `gpu` (the CUDA decoder's host half and launcher; kernels/l3_decode.cu).

`decode_batch_gpu` runs the paper's decoder: one CUDA block per channel of each patch, one thread per column, the
rows of a patch in sequence. The host only parses headers and lays out the launch; pixels never leave the GPU and
reach TensorFlow through DLPack. It needs CuPy and a CUDA device (`pip install tfliquid[gpu]`); importing this
package does not. The kernel source also runs on the CPU in the tests (tests/cuda_host).
"""

from tfliquid.l3.codec import L3Error
from tfliquid.l3.conversion import convert
from tfliquid.l3.gpu import decode_batch_gpu
from tfliquid.l3.ops import decode_l3, encode_l3

__all__ = ["L3Error", "convert", "decode_batch_gpu", "decode_l3", "encode_l3"]
