"""L3 lossless images: decode in parallel per patch and per pixel row (the format: docs/formats/l3.md).

    >>> encoded = tfliquid.l3.encode_l3(image)            # uint8 [H, W, C] -> L3 bytes (C++ op)
    >>> image = tfliquid.l3.decode_l3(encoded)            # on the CPU, in graphs and Dataset.map
    >>> batch = tfliquid.l3.decode_l3_batch(encoded_batch)  # string [B] -> uint8 [B, H, W, C], CPU or GPU
    >>> tfliquid.l3.gpu_available()                       # can the GPU kernel run here? if not, why
    >>> tfliquid.l3.convert("photos/", "photos-l3/")      # a folder tree of images -> .l3 files

Modules: `codec` (the reference encoder and decoder, the oracle; NumPy only), `ops` (the C++ ops), `conversion`
(the conversion job), `gpu` (the GPU kernel's availability and program).

`decode_l3_batch` on a GPU runs the paper's decoder: one CUDA block per channel of each patch, one thread per
column, the rows of a patch in sequence (ops/l3/l3_decode.cu, compiled by NVRTC at first use). The host parses
the headers with the CPU decoder's code and lays out the launch; the pixels exist only on the GPU. Inside a model,
the Keras layer `tfliquid.keras.layers.DecodeL3` calls it. The kernel source also runs on the CPU in the tests
(tests/cuda_host).
"""

from tfliquid.l3.codec import L3Error
from tfliquid.l3.conversion import convert
from tfliquid.l3.gpu import compile_gpu_kernels, gpu_available
from tfliquid.l3.ops import decode_l3, decode_l3_batch, encode_l3

__all__ = ["L3Error", "compile_gpu_kernels", "convert", "decode_l3", "decode_l3_batch", "encode_l3", "gpu_available"]
