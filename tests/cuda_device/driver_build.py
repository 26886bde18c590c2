"""Builds the GPU check's driver (l3_gpu_check) and the CPU stand-in for the CUDA driver it runs on without a GPU
(tests/cuda_host/cuda_driver.cc). Standard library only: the GPU machines have no TensorFlow.

The driver links neither CUDA nor NVRTC (ops/common/cuda_api.cc opens them with dlopen): a C++17 compiler and the
CUDA headers are all it needs. Compile with the same headers the CPU stand-in is compiled with, since cuda.h picks
the versioned names of the entry points (cuEventElapsedTime_v2 in CUDA 13).
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
HERE = ROOT / "tests" / "cuda_device"
CUDA_HOST = ROOT / "tests" / "cuda_host"

# The op library's TF-free device side, the CPU decoder and encoder (the reference), and the driver's own files.
L3_SOURCES = ("l3_codec", "l3_decoder", "l3_launch_plan", "l3_gpu_program", "l3_gpu_staging", "l3_gpu_launch")
OP_SOURCES = [OPS / "common" / f"{name}.cc" for name in ("cuda_api", "crc32c")] + [
    OPS / "l3" / f"{name}.cc" for name in L3_SOURCES
]
DRIVER_NAMES = ("l3_gpu_check", "device", "batch", "pam", "verify", "timing", "corruption", "cpu_decoder")
DRIVER_SOURCES = [HERE / f"{name}.cc" for name in DRIVER_NAMES]
# Those that include the CUDA headers (through ops/common/cuda_api.h): what another CUDA version could break.
CUDA_SOURCES = [
    path
    for path in OP_SOURCES + DRIVER_SOURCES
    if path.stem.startswith(("cuda_api", "l3_gpu")) or path.stem in ("device", "verify", "timing")
]
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
# Put in front of each compile where it is installed: ccache makes unchanged sources free to build again (it caches
# compiles, not links). Paths below the checkout are hashed relative to it, and the working directory not at all, so
# that another clone of the same sources finds them built (as ops/tests/compiler.sh does).
LAUNCHER = ["ccache"] if shutil.which("ccache") else []
CCACHE_ENV = {"CCACHE_BASEDIR": os.environ.get("CCACHE_BASEDIR", str(ROOT)), "CCACHE_NOHASHDIR": "1"}


def cuda_include() -> Path | None:
    """The CUDA toolkit's headers: $CUDA_HOME/include, or beside nvcc, or /usr/local/cuda/include."""
    candidates = []
    if os.environ.get("CUDA_HOME"):
        candidates.append(Path(os.environ["CUDA_HOME"]) / "include")
    if shutil.which("nvcc"):
        candidates.append(Path(shutil.which("nvcc")).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    return next((path for path in candidates if (path / "cuda.h").exists()), None)


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **CCACHE_ENV})
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}\n{result.stdout}{result.stderr}")


def compile_sources(
    folder: Path, include: Path, sources: list[Path], compiler: str = "c++", flags: tuple[str, ...] = ("-O2",)
) -> list[Path]:
    """Compiles `sources` against the CUDA headers in `include` into objects in `folder`, one compiler per source
    and core. `compiler` may be nvcc, which hands the files to its host compiler with the toolkit's headers."""
    warnings = WARNINGS if compiler != "nvcc" else ["-Xcompiler=" + ",".join(WARNINGS)]
    folder.mkdir(parents=True, exist_ok=True)
    compile_flags = [*LAUNCHER, compiler, "-std=c++17", *warnings, *flags, f"-I{OPS}", f"-I{include}"]
    objects = {folder / f"{source.parent.name}_{source.stem}.o": source for source in sources}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(_run, [[*compile_flags, "-c", str(source), "-o", str(obj)] for obj, source in objects.items()]))
    return list(objects)


def build_driver(output: Path, include: Path, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Builds l3_gpu_check against the CUDA headers in `include`."""
    objects = compile_sources(
        output.parent / f"{output.name}.objects", include, OP_SOURCES + DRIVER_SOURCES, flags=flags
    )
    _run(["c++", *flags, *map(str, objects), "-o", str(output), "-ldl", "-lpthread"])
    return output


def build_cpu_driver_library(output: Path, include: Path, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Compiles tests/cuda_host/cuda_driver.cc, the driver API on the CPU, into a library to load in libcuda's
    place (TFLIQUID_CUDA_DRIVER_LIBRARY)."""
    source = CUDA_HOST / "cuda_driver.cc"
    obj = output.with_suffix(".o")
    _run(
        [*LAUNCHER, "c++", "-std=c++20", "-fPIC", "-pthread", *WARNINGS, *flags]
        + [f"-I{CUDA_HOST}", f"-I{OPS / 'l3'}", f"-I{OPS}", f"-I{include}", "-c", str(source), "-o", str(obj)]
    )
    _run(["c++", "-shared", "-pthread", *flags, str(obj), "-o", str(output)])
    return output
