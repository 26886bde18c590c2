#!/bin/sh
# The L3 GPU decoder checked and measured on this machine's GPU (docs/l3.md, "Check the GPU decoder on a GPU"):
# needs a CUDA driver, the CUDA toolkit (headers and NVRTC), a C++ compiler and Python 3 with NumPy; not
# TensorFlow. Options go to gpu_check.py (--out DIR, --quick).
set -e
cd "$(dirname "$0")/../.."
exec python3 tests/cuda_device/gpu_check.py "$@"
