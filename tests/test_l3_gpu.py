"""The GPU kernel of decode_l3_batch, on a machine without a GPU: its CUDA source run on the CPU through
tests/cuda_host/shim.h from the op's C++ launch plan, bit-exact against the reference codec and the original
pixels; that plan against its Python oracle; its corruption reports; NVRTC (through the op library's own code)
and nvcc compiling the same source; and the op library loading, with its GPU kernel registered, where CUDA is
missing."""

import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos

from l3_plan_oracle import TASK_FIELDS, plan_batch

ROOT = Path(__file__).resolve().parent.parent
SHIM_DIR = ROOT / "tests" / "cuda_host"
KERNEL = ROOT / "ops" / "l3" / "l3_decode.cu"
# The host half of the op's GPU kernel: the launch plan and the header parser it validates with.
PLAN_SOURCES = [ROOT / "ops" / "l3" / name for name in ("l3_launch_plan.cc", "l3_codec.cc", "l3_decoder.cc")]
# Fewer threads than columns, and not a power of two: every thread loops over columns and the prefix sum has
# partial owners. (One OS thread per CUDA thread also keeps the CPU run fast; test_planned_block_size uses the
# block size of the real launch.)
THREADS = 3
CORRUPT_EXIT = 2


def _build(output: Path, *flags: str) -> Path:
    command = [
        "g++",
        "-std=c++20",
        "-pthread",
        "-Wall",
        "-Wextra",
        "-Werror",
        *flags,
        f"-I{SHIM_DIR}",
        f"-I{KERNEL.parent}",
        f"-I{ROOT / 'ops'}",
        str(SHIM_DIR / "decode_driver.cc"),
        *map(str, PLAN_SOURCES),
        "-o",
        str(output),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return output


@pytest.fixture(scope="session")
def driver(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("cuda_host") / "decode_driver", "-O1")


def _run_driver(driver: Path, encoded: list[bytes], threads: int = THREADS):
    """(exit status, stderr, decoded [B, H, W, C] or None); checks the C++ plan's task table against the Python
    oracle's."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for i, data in enumerate(encoded):
            inputs.append(Path(tmp, f"{i}.l3"))
            inputs[-1].write_bytes(data)
        pixels, table = Path(tmp, "pixels"), Path(tmp, "table")
        result = subprocess.run(
            [str(driver), str(threads), str(pixels), str(table), *map(str, inputs)], capture_output=True, text=True
        )
        if result.returncode != 0:
            return result.returncode, result.stderr, None
        plan = plan_batch(encoded)
        np.testing.assert_array_equal(np.fromfile(table, np.int64).reshape(-1, len(TASK_FIELDS)), plan.tasks)
        return 0, result.stderr, np.fromfile(pixels, np.uint8).reshape(plan.shape)


def _decode(driver: Path, encoded: list[bytes], threads: int = THREADS) -> np.ndarray:
    status, stderr, decoded = _run_driver(driver, encoded, threads)
    assert status == 0, stderr
    return decoded


def _assert_lossless(driver: Path, image: np.ndarray, profile: str, threads: int = THREADS):
    image = image if image.ndim == 3 else image[..., None]
    data = l3.encode(image, profile)
    decoded = _decode(driver, [data], threads)[0]
    np.testing.assert_array_equal(decoded, l3.decode(data))
    np.testing.assert_array_equal(decoded, image)


def _images():
    rng = np.random.default_rng(0)
    gradient = np.add.outer(np.arange(70), np.arange(90)).astype(np.uint8)
    return {
        "noise": rng.integers(0, 256, (130, 129, 3), dtype=np.uint8),
        "noise_rgba": rng.integers(0, 256, (40, 70, 4), dtype=np.uint8),
        "constant": np.full((33, 65, 3), 77, np.uint8),
        "black": np.zeros((64, 64, 4), np.uint8),
        "gradients": np.stack([gradient, gradient[::-1], gradient[:, ::-1]], -1),
        "checkerboard": ((np.indices((65, 67)).sum(axis=0) % 2) * 255).astype(np.uint8),
        "1x1": np.array([[[1, 2, 3]]], np.uint8),
        "1xN": rng.integers(0, 256, (1, 200, 3), dtype=np.uint8),
        "Nx1": rng.integers(0, 256, (200, 1, 1), dtype=np.uint8),
        "N+1": rng.integers(0, 256, (129, 130, 3), dtype=np.uint8),  # 128 + 1 and 4 * 32 + 1
        "32+1": rng.integers(0, 256, (33, 33, 1), dtype=np.uint8),
        "odd": (np.add.outer(np.arange(77) ** 2, np.arange(51) * 7) % 251).astype(np.uint8)[..., None]
        + rng.integers(0, 3, (77, 51, 3), dtype=np.uint8),
    }


@pytest.mark.parametrize("profile", l3.PROFILES)
@pytest.mark.parametrize("name", list(_images()))
def test_decodes_like_the_reference(driver, name, profile):
    _assert_lossless(driver, _images()[name], profile)


@pytest.mark.parametrize(
    "name, profile, expected_threads",
    [("32+1", "default", 64), ("32+1", "paper", 32), ("N+1", "default", 128), ("N+1", "paper", 32)],
)
def test_planned_block_size(driver, name, profile, expected_threads):
    """The block size of the GPU launch: one thread per column of the widest patch, in whole warps."""
    image = _images()[name][..., :1]
    assert plan_batch([l3.encode(image, profile)]).threads == expected_threads
    _assert_lossless(driver, image, profile, threads=0)


def _segment_widths(image: np.ndarray, params: l3.Params) -> set[int]:
    """The bit widths of every segment the encoder writes for a single-patch grey image."""
    widths = set()
    for y in range(1, image.shape[0]):
        signed = (image[y] - l3.predict(image[y - 1])).view(np.int8).astype(np.int16)
        for x0 in range(0, image.shape[1], params.segment or image.shape[1]):
            seg = signed[x0 : x0 + (params.segment or image.shape[1])]
            coded = (seg << 1) ^ (seg >> 7) if params.zigzag else seg - seg.min()
            widths.add(int(coded.max()).bit_length())
    return widths


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_every_residual_bit_width(driver, profile):
    """Rows built from residuals whose every 8-pixel segment holds both extremes of a width, 0 to 8 bits."""
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, 256, 32, dtype=np.uint8)]
    for width in list(range(9)) * 3:
        zigzag = rng.integers(0, 1 << width, 32) if width else np.zeros(32, np.int64)
        if width:
            zigzag[0::8], zigzag[1::8] = (1 << width) - 1, (1 << width) - 2  # the most negative and positive
        residual = ((zigzag >> 1) ^ -(zigzag & 1)).astype(np.uint8)
        rows.append(residual + l3.predict(rows[-1]))
    image = np.array(rows, np.uint8)
    assert _segment_widths(image, l3.profile_params(profile, *image.shape, 1)) == set(range(9))
    _assert_lossless(driver, image, profile)


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    """Four of the shipped photos at 300x200. (Read through photo_path: load_photos decodes all ten and imports
    scikit-learn, 15 s on this machine.)"""
    return [
        np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB").resize((300, 200)))
        for package, name in sample_photos.PHOTOS[:4]
    ]


@pytest.mark.slow
def test_batch_of_photos_with_mixed_profiles(driver, photos):
    """Four real photos in one launch, alternately default (subtract-green) and paper profile."""
    encoded = [l3.encode(photo, l3.PROFILES[i % 2]) for i, photo in enumerate(photos)]
    decoded = _decode(driver, encoded)
    for i, photo in enumerate(photos):
        np.testing.assert_array_equal(decoded[i], l3.decode(encoded[i]), err_msg=f"image {i}")
        np.testing.assert_array_equal(decoded[i], photo, err_msg=f"image {i}")


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_photo_grey_and_rgba(driver, photos, profile):
    photo = photos[1][::2, ::2]
    _assert_lossless(driver, photo.mean(axis=2).astype(np.uint8), profile)
    _assert_lossless(driver, np.dstack([photo, photo[..., 1] ^ 0x5A]), profile)


def _encode_paper_with_patch(image: np.ndarray, patch: int) -> bytes:
    """A grey image in the paper profile's coding with patch size `patch`, laid out as l3.encode does. The profile
    picks 64 and 128 only above 1080x720 and 1920x1080 pixels; the kernel sees the same streams here."""
    params = dataclasses.replace(l3.profile_params("paper", *image.shape, 1), patch=patch)
    height, width = image.shape
    streams = [
        l3.encode_patch(image[y : y + patch, x : x + patch], params)
        for y in range(0, height, patch)
        for x in range(0, width, patch)
    ]
    offsets = np.cumsum([0] + [len(stream) for stream in streams]).astype("<u4")
    header = l3.HEADER.pack(l3.MAGIC, l3.VERSION, 1, 0, params.segment, width, height, patch, 0)
    return header + offsets.tobytes() + b"".join(streams)


@pytest.mark.parametrize("patch", [64, 128])
def test_paper_coding_with_larger_patches(driver, patch):
    """N + 1 for the paper profile's larger patch sizes: one full patch, cut patches on the right and bottom."""
    rng = np.random.default_rng(2)
    shape = (patch + 1, patch + 2)
    image = (np.add.outer(np.arange(shape[0]), 3 * np.arange(shape[1])) % 256).astype(np.uint8)
    image ^= rng.integers(0, 4, shape, dtype=np.uint8)
    data = _encode_paper_with_patch(image, patch)
    assert l3.parse_header(data)[0].patch == patch
    decoded = _decode(driver, [data])[0, ..., 0]
    np.testing.assert_array_equal(decoded, l3.decode(data)[..., 0])
    np.testing.assert_array_equal(decoded, image)


def _corrupt_cases():
    """(name, corrupted L3 bytes): each breaks one rule the kernel checks while decoding."""
    rng = np.random.default_rng(3)
    noise = l3.encode(rng.integers(0, 256, (40, 40), dtype=np.uint8), "default")  # one 40x40 patch
    constant = l3.encode(np.full((40, 40), 9, np.uint8), "default")  # rows of 5 zero-width segments: 3 bytes
    paper = l3.encode(rng.integers(0, 256, (40, 40), dtype=np.uint8), "paper")  # four patches of at most 32
    payload = 24 + 4 * 2

    def patched(data, at, value):
        return data[:at] + bytes([value]) + data[at + 1 :]

    def offset(data, index, value):
        at = 24 + 4 * index
        return data[:at] + int(value).to_bytes(4, "little") + data[at + 4 :]

    paper_offsets = np.frombuffer(paper, "<u4", 5, 24)
    return {
        "segment width 15": patched(noise, payload + 40, 0xF0 | noise[payload + 40] & 0x0F),
        "rows overrun the patch": patched(constant, payload + 40 + 37 * 3, 0x80),
        "row 0 cut": offset(paper, 1, 10),
        "bytes left over": offset(paper, 1, paper_offsets[1] + 1),
    }


@pytest.mark.parametrize("name", list(_corrupt_cases()))
def test_corrupt_stream_sets_the_error_flag(driver, name):
    """The kernel flags the same byte offset the reference decoder rejects, for the right image of the batch."""
    corrupt = _corrupt_cases()[name]
    with pytest.raises(l3.L3Error) as reference:
        l3.decode(corrupt)
    expected_offset = int(re.match(r"offset (\d+):", str(reference.value)).group(1))
    good = l3.encode(np.full((40, 40), 1, np.uint8), "default")
    status, stderr, _ = _run_driver(driver, [good, corrupt])
    assert status == CORRUPT_EXIT, stderr
    assert f"image 1: corrupt L3 patch data at byte offset {expected_offset}" in stderr


@pytest.mark.slow
def test_under_sanitizers(tmp_path):
    """ASan + UBSan (no read outside the payload, no undefined behaviour) and TSan: a __syncthreads() missing
    between two phases that share memory is a data race between the block's threads."""
    sanitizers = {"asan": ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], "tsan": ["-fsanitize=thread"]}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        builds = {name: pool.submit(_build, tmp_path / name, "-O1", "-g", *flags) for name, flags in sanitizers.items()}
        sanitized_drivers = [build.result() for build in builds.values()]
    images = _images()
    for driver in sanitized_drivers:
        for name, profile, threads in [
            ("noise_rgba", "default", THREADS),
            ("noise_rgba", "default", 32),
            ("32+1", "paper", 32),
        ]:
            _assert_lossless(driver, images[name], profile, threads)
        for corrupt in _corrupt_cases().values():
            status, stderr, _ = _run_driver(driver, [corrupt])
            assert status == CORRUPT_EXIT, stderr


def test_plan_covers_every_pixel_once():
    data = l3.encode(_images()["N+1"], "default")
    plan = plan_batch([data, data])
    tasks = {name: plan.tasks[:, i] for i, name in enumerate(TASK_FIELDS)}
    assert plan.shape == (2, 129, 130, 3) and len(plan.tasks) == 2 * 3 * 4
    assert (tasks["height"] * tasks["width"]).sum() == 2 * 129 * 130 * 3
    assert plan.threads == 128 and plan.max_width == 128 and plan.max_segments == 16
    assert list(plan.subtract_green) == [1, 1] and set(tasks["zigzag"]) == {1} and set(tasks["segment"]) == {8}
    # Image 1's patch streams follow image 0's; file_bias maps them back into each file.
    payload_start = l3.parse_header(data)[4]
    assert tasks["start"][12] == len(data) - payload_start
    assert tasks["start"][12] + tasks["file_bias"][12] == payload_start
    assert plan.payload.tobytes() == 2 * data[payload_start:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA compiler")
def test_nvcc_compiles_the_kernels(tmp_path):
    ptx = tmp_path / "l3_decode.ptx"
    result = subprocess.run(
        [
            "nvcc",
            "-ptx",
            "-arch=compute_75",
            "-Werror",
            "all-warnings",
            f"-I{KERNEL.parent}",
            str(KERNEL),
            "-o",
            str(ptx),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    entries = re.findall(r"\.entry (\w+)\(", ptx.read_text())
    assert entries == ["l3_decode_patches", "l3_add_green"]


@pytest.mark.parametrize("arch", ["compute_75", "compute_90"])
def test_nvrtc_compiles_the_kernels_through_the_op_library(arch):
    """The op library's NVRTC path (the embedded source and its header, the compile options) yields both kernels."""
    ptx = tfliquid.l3.compile_gpu_kernels(arch)
    assert re.search(rf"^\.target sm_{arch[-2:]}$", ptx, re.MULTILINE)
    assert re.findall(r"\.entry (\w+)\(", ptx) == ["l3_decode_patches", "l3_add_green"]


def test_nvrtc_reports_what_it_cannot_compile():
    with pytest.raises(tf.errors.InvalidArgumentError, match="NVRTC cannot compile l3_decode.cu for compute_1"):
        tfliquid.l3.compile_gpu_kernels("compute_1")


_WITHOUT_CUDA = """
import json, numpy as np, tensorflow as tf, tfliquid
from tfliquid.l3 import codec
from tfliquid.l3.gpu import registers_gpu_kernel
image = np.arange(2 * 5 * 7 * 3, dtype=np.uint8).reshape(2, 5, 7, 3)
decoded = tfliquid.l3.decode_l3_batch(tf.constant([codec.encode(i) for i in image])).numpy()
availability = tfliquid.l3.gpu_available()
try:
    tfliquid.l3.compile_gpu_kernels()
    compile_error = ""
except tf.errors.FailedPreconditionError as e:
    compile_error = e.message
print(json.dumps({"gpu_kernel": registers_gpu_kernel(), "decoded": bool((decoded == image).all()),
                  "available": bool(availability), "reason": availability.reason, "compile_error": compile_error}))
"""


def test_op_library_loads_and_registers_its_gpu_kernel_where_cuda_cannot_be_found(tmp_path):
    """Neither library is linked: the op library loads, registers the GPU kernel and decodes on the CPU in a
    process where the CUDA driver and NVRTC cannot be found, and says so."""
    missing = tmp_path / "missing"
    env = {
        **os.environ,
        "TFLIQUID_NVRTC_LIBRARY": str(missing / "libnvrtc.so.12"),
        "TFLIQUID_CUDA_DRIVER_LIBRARY": str(missing / "libcuda.so.1"),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    result = subprocess.run([sys.executable, "-c", _WITHOUT_CUDA], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["gpu_kernel"] and report["decoded"] and not report["available"]
    assert "the CUDA driver library cannot be loaded" in report["reason"]
    assert f"NVRTC cannot be loaded (pip install tfliquid[gpu] installs it): {missing}" in report["reason"]
    assert "TensorFlow sees no GPU" in report["reason"]
    assert "} NVRTC cannot be loaded" in report["compile_error"]  # after the op's {{function_node ...}} prefix
