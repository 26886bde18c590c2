"""The GPU kernel of decode_l3_batch, on a machine without a GPU. Its device side (ops/l3/l3_gpu_launch.cc and what
it uses), driven by the standalone GPU check's driver (tests/cuda_device) over the CPU stand-in for the CUDA driver
(tests/cuda_host/cuda_driver.cc, which runs the CUDA source through shim.h): bit-exact against the reference codec
and the original pixels, its task table against the Python oracle, its corruption reports; the whole GPU check run
the same way; NVRTC (through the op library's own code) and nvcc compiling the same source, nvcc building the check;
and the op library loading, with its GPU kernel registered, where CUDA is missing."""

import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from cuda_device import driver_build as build
from cuda_device.cases import edge_images
from PIL import Image

import tfliquid
from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos

from l3_plan_oracle import TASK_FIELDS, plan_batch

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "ops" / "l3" / "l3_decode.cu"
# CUDA's headers as TensorFlow's wheel ships them: the op library is built against these.
CUDA_HEADERS = Path(tf.sysconfig.get_include()) / "third_party" / "gpus" / "cuda" / "include"
NVRTC = Path(tf.sysconfig.get_lib()).parent / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"
# Fewer threads than a patch row has bytes, and not a power of two: every thread loops over items and the prefix
# sum has partial owners. (One OS thread per CUDA thread also keeps the CPU run fast; the planned_block_size cases
# use the block size of the real launch.)
THREADS = 3


@dataclasses.dataclass(frozen=True)
class Binaries:
    driver: Path
    cpu_driver_library: Path

    def env(self) -> dict:
        return {
            **os.environ,
            "TFLIQUID_CUDA_DRIVER_LIBRARY": str(self.cpu_driver_library),
            "TFLIQUID_NVRTC_LIBRARY": str(NVRTC),
            # NVRTC opens its builtins library from its own folder; under ASan, whose dlopen stands in for NVRTC's,
            # only the search path finds it.
            "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(NVRTC.parent), os.environ.get("LD_LIBRARY_PATH")])),
        }


def _build(folder: Path, *flags: str) -> Binaries:
    folder.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        library = pool.submit(build.build_cpu_driver_library, folder / "libcuda_cpu.so", CUDA_HEADERS, flags)
        driver = build.build_driver(folder / "l3_gpu_check", CUDA_HEADERS, flags)
        return Binaries(driver, library.result())


@pytest.fixture(scope="module")
def binaries(tmp_path_factory) -> Binaries:
    return _build(tmp_path_factory.mktemp("cuda_host"), "-O1")


@dataclasses.dataclass(frozen=True)
class Job:
    encoded: tuple[bytes, ...]
    threads: int = THREADS


@dataclasses.dataclass(frozen=True)
class Decoded:
    threads: int
    batch_error: str
    image_errors: list[str]
    pixels: np.ndarray | None  # [B, H, W, C], None when the batch was rejected before the launch


def _decode_jobs(binaries: Binaries, jobs: dict[str, Job], folder: Path) -> dict[str, Decoded]:
    """Runs every job through the op's sequence in one process (NVRTC compiles once); checks the C++ plan's task
    table against the Python oracle's on every batch that reaches the launch."""
    lines = []
    for name, job in jobs.items():
        files = []
        for i, data in enumerate(job.encoded):
            files.append(folder / f"{name}.{i}.l3")
            files[-1].write_bytes(data)
        lines.append(" ".join([name, str(job.threads), *map(str, files)]))
    (folder / "jobs").write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [str(binaries.driver), "--kernel-dir", str(KERNEL.parent), "decode", str(folder / "jobs"), str(folder)],
        capture_output=True,
        text=True,
        env=binaries.env(),
    )
    assert result.returncode == 0, result.stderr
    decoded = {}
    for row in map(json.loads, result.stdout.splitlines()):
        name, pixels = row["job"], None
        if not row["batch_error"]:
            plan = plan_batch(list(jobs[name].encoded))
            tasks = np.fromfile(folder / f"{name}.tasks", np.int64).reshape(-1, len(TASK_FIELDS))
            np.testing.assert_array_equal(tasks, plan.tasks, err_msg=name)
            pixels = np.fromfile(folder / f"{name}.pixels", np.uint8).reshape(plan.shape)
        decoded[name] = Decoded(row["threads"], row["batch_error"], row["image_errors"], pixels)
    assert decoded.keys() == jobs.keys()
    return decoded


def _hwc(image: np.ndarray) -> np.ndarray:
    return image if image.ndim == 3 else image[..., None]


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    """Four of the shipped photos at 300x200. (Read through photo_path: load_photos decodes all ten and imports
    scikit-learn, 15 s on this machine.)"""
    return [
        np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB").resize((300, 200)))
        for package, name in sample_photos.PHOTOS[:4]
    ]


def _residual_widths_image() -> np.ndarray:
    """Rows built from residuals whose every 8-pixel segment holds both extremes of a width, 0 to 8 bits."""
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, 256, 32, dtype=np.uint8)]
    for width in list(range(9)) * 3:
        zigzag = rng.integers(0, 1 << width, 32) if width else np.zeros(32, np.int64)
        if width:
            zigzag[0::8], zigzag[1::8] = (1 << width) - 1, (1 << width) - 2  # the most negative and positive
        residual = ((zigzag >> 1) ^ -(zigzag & 1)).astype(np.uint8)
        rows.append(residual + l3.predict(rows[-1]))
    return np.array(rows, np.uint8)


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
    return l3.with_checksum(header + offsets.tobytes() + b"".join(streams), l3.VERSION)


def _larger_patch_image(patch: int) -> np.ndarray:
    """N + 1 for the paper profile's larger patch sizes: one full patch, cut patches on the right and bottom."""
    rng = np.random.default_rng(2)
    shape = (patch + 1, patch + 2)
    image = (np.add.outer(np.arange(shape[0]), 3 * np.arange(shape[1])) % 256).astype(np.uint8)
    return image ^ rng.integers(0, 4, shape, dtype=np.uint8)


def _corrupt_cases():
    """(name, corrupted L3 bytes): each breaks one rule the kernel checks while decoding. Version 1 files: version
    2's checksum, verified on the host before the launch, would refuse them before the kernel sees them."""
    rng = np.random.default_rng(3)
    noise = l3.encode(rng.integers(0, 256, (40, 40), dtype=np.uint8), "default", version=1)  # one 40x40 patch
    constant = l3.encode(np.full((40, 40), 9, np.uint8), "default", version=1)  # rows of 5 zero-width segments
    paper = l3.encode(rng.integers(0, 256, (40, 40), dtype=np.uint8), "paper", version=1)  # four patches <= 32
    rgb = l3.encode(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8), "default", version=1)  # three streams
    payload = 24 + 4 * 2

    def patched(data, at, value):
        return data[:at] + bytes([value]) + data[at + 1 :]

    def offset(data, index, value):
        at = 24 + 4 * index
        return data[:at] + int(value).to_bytes(4, "little") + data[at + 4 :]

    paper_offsets = np.frombuffer(paper, "<u4", 5, 24)
    third = 24 + 4 * 4 + int(np.frombuffer(rgb, "<u4", 4, 24)[2])  # where the third channel's stream starts
    return {
        "segment-width-15": patched(noise, payload + 40, 0xF0 | noise[payload + 40] & 0x0F),
        "rows-overrun-the-patch": patched(constant, payload + 40 + 37 * 3, 0x80),
        "row-0-cut": offset(paper, 1, 10),
        "bytes-left-over": offset(paper, 1, paper_offsets[1] + 1),
        "third-channel-width-15": patched(rgb, third + 40, 0xF0 | rgb[third + 40] & 0x0F),
    }


def _intact_and_flipped() -> tuple[bytes, bytes]:
    """A version 2 file, and the same with one bit flipped that breaks no rule of the patch data."""
    intact = l3.encode(_larger_patch_image(64), "default")
    flipped = bytearray(intact)
    flipped[len(intact) // 2] ^= 0x10
    return intact, bytes(flipped)


def _ones_like(encoded: bytes) -> np.ndarray:
    """An image of ones of the shape `encoded` declares: the intact image beside a damaged one in a batch."""
    params, height, width, _, _ = l3.parse_header(encoded)
    return np.ones((height, width, params.channels), np.uint8)


def _jobs(photos) -> dict[str, Job]:
    jobs = {}
    for name, image in edge_images().items():
        for profile in l3.PROFILES:
            jobs[f"edge-{name}-{profile}"] = Job((l3.encode(_hwc(image), profile),))
    for name, channels in (("32+1", 1), ("N+1", 1), ("odd", 3)):
        for profile in l3.PROFILES:
            image = _hwc(edge_images()[name])[..., :channels]
            jobs[f"planned-{name}x{channels}-{profile}"] = Job((l3.encode(image, profile),), threads=0)
    for profile in l3.PROFILES:
        jobs[f"widths-{profile}"] = Job((l3.encode(_residual_widths_image()[..., None], profile),))
        photo = photos[1][::2, ::2]
        jobs[f"grey-{profile}"] = Job((l3.encode(photo.mean(axis=2).astype(np.uint8)[..., None], profile),))
        jobs[f"rgba-{profile}"] = Job((l3.encode(np.dstack([photo, photo[..., 1] ^ 0x5A]), profile),))
    jobs["photos-mixed"] = Job(tuple(l3.encode(photo, l3.PROFILES[i % 2]) for i, photo in enumerate(photos)))
    for patch in (64, 128):
        jobs[f"paper-patch-{patch}"] = Job((_encode_paper_with_patch(_larger_patch_image(patch), patch),))
    for name, corrupt in _corrupt_cases().items():
        jobs[f"corrupt-{name}"] = Job((l3.encode(_ones_like(corrupt), "default"), corrupt))
    jobs["checksum"] = Job(_intact_and_flipped())
    jobs["shapes-differ"] = Job(tuple(l3.encode(np.ones((40, width, 1), np.uint8), "default") for width in (40, 41)))
    return jobs


@pytest.fixture(scope="module")
def decoded(binaries, photos, tmp_path_factory) -> dict[str, Decoded]:
    return _decode_jobs(binaries, _jobs(photos), tmp_path_factory.mktemp("jobs"))


def _assert_lossless(result: Decoded, encoded: bytes, image: np.ndarray):
    assert not result.batch_error and not result.image_errors
    np.testing.assert_array_equal(result.pixels[0], l3.decode(encoded))
    np.testing.assert_array_equal(result.pixels[0], _hwc(image))


@pytest.mark.parametrize("profile", l3.PROFILES)
@pytest.mark.parametrize("name", list(edge_images()))
def test_decodes_like_the_reference(decoded, name, profile):
    image = edge_images()[name]
    _assert_lossless(decoded[f"edge-{name}-{profile}"], l3.encode(_hwc(image), profile), image)


@pytest.mark.parametrize(
    "name, channels, profile, expected_threads",
    [
        ("32+1", 1, "default", 64),
        ("32+1", 1, "paper", 32),
        ("N+1", 1, "default", 128),
        ("N+1", 1, "paper", 32),
        ("odd", 3, "default", 160),  # a block decodes all three channels: one thread per byte of a patch row
        ("odd", 3, "paper", 96),
    ],
)
def test_planned_block_size(decoded, name, channels, profile, expected_threads):
    """The block size of the GPU launch: one thread per byte of the widest patch row, in whole warps."""
    image = _hwc(edge_images()[name])[..., :channels]
    encoded = l3.encode(image, profile)
    assert plan_batch([encoded]).threads == expected_threads
    result = decoded[f"planned-{name}x{channels}-{profile}"]
    assert result.threads == expected_threads
    _assert_lossless(result, encoded, image)


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_every_residual_bit_width(decoded, profile):
    image = _residual_widths_image()
    assert _segment_widths(image, l3.profile_params(profile, *image.shape, 1)) == set(range(9))
    _assert_lossless(decoded[f"widths-{profile}"], l3.encode(image[..., None], profile), image)


def test_batch_of_photos_with_mixed_profiles(decoded, photos):
    """Four real photos in one launch, alternately default (subtract-green) and paper profile."""
    result = decoded["photos-mixed"]
    assert not result.image_errors
    for i, photo in enumerate(photos):
        np.testing.assert_array_equal(result.pixels[i], photo, err_msg=f"image {i}")


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_photo_grey_and_rgba(decoded, photos, profile):
    photo = photos[1][::2, ::2]
    grey = photo.mean(axis=2).astype(np.uint8)
    _assert_lossless(decoded[f"grey-{profile}"], l3.encode(grey[..., None], profile), grey)
    rgba = np.dstack([photo, photo[..., 1] ^ 0x5A])
    _assert_lossless(decoded[f"rgba-{profile}"], l3.encode(rgba, profile), rgba)


@pytest.mark.parametrize("patch", [64, 128])
def test_paper_coding_with_larger_patches(decoded, patch):
    image = _larger_patch_image(patch)
    data = _encode_paper_with_patch(image, patch)
    assert l3.parse_header(data)[0].patch == patch
    _assert_lossless(decoded[f"paper-patch-{patch}"], data, image)


@pytest.mark.parametrize("name", list(_corrupt_cases()))
def test_corrupt_stream_sets_the_error_flag(decoded, name):
    """The kernel flags the same byte offset the reference decoder rejects, for the right image of the batch, and
    decodes the other image."""
    with pytest.raises(l3.L3Error) as reference:
        l3.decode(_corrupt_cases()[name])
    expected_offset = int(re.match(r"offset (\d+):", str(reference.value)).group(1))
    result = decoded[f"corrupt-{name}"]
    assert result.image_errors == [f"image 1: offset {expected_offset}: corrupt patch data (found by the GPU decoder)"]
    np.testing.assert_array_equal(result.pixels[0], _ones_like(_corrupt_cases()[name]))


def test_a_version_2_checksum_is_verified_before_the_launch(decoded):
    """A flipped bit that breaks no rule of the patch data is refused on the host, naming the image and the
    checksum's offset, as the reference decoder refuses it."""
    intact, flipped = _intact_and_flipped()
    with pytest.raises(l3.L3Error, match=rf"offset {len(intact) - 4}: checksum mismatch"):
        l3.decode(flipped)
    assert decoded["checksum"].batch_error.startswith(f"image 1: offset {len(intact) - 4}: checksum mismatch")


def test_a_batch_of_two_shapes_is_refused_before_the_launch(decoded):
    assert decoded["shapes-differ"].batch_error == (
        "image 1 is 40x41x1 (HxWxC), image 0 is 40x40x1: a batch needs one shape"
    )


@pytest.mark.slow
def test_under_sanitizers(tmp_path, photos):
    """ASan + UBSan (no read outside the payload or the staging buffers, no undefined behaviour) and TSan: a
    __syncthreads() missing between two phases that share memory is a data race between the block's threads."""
    sanitizers = {"asan": ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"], "tsan": ["-fsanitize=thread"]}
    rgba = edge_images()["noise_rgba"]
    jobs = {
        "rgba-3": Job((l3.encode(rgba, "default"),)),
        "rgba-32": Job((l3.encode(rgba, "default"),), threads=32),
        "grey-32": Job((l3.encode(edge_images()["32+1"], "paper"),), threads=32),
        **{f"corrupt-{name}": Job((corrupt,)) for name, corrupt in _corrupt_cases().items()},
    }
    for name, flags in sanitizers.items():
        binaries = _build(tmp_path / name, "-O0", "-g1", *flags)
        results = _decode_jobs(binaries, jobs, tmp_path / name)
        for job in ("rgba-3", "rgba-32"):
            np.testing.assert_array_equal(results[job].pixels[0], rgba)
        np.testing.assert_array_equal(results["grey-32"].pixels[0], edge_images()["32+1"])
        assert all(results[f"corrupt-{case}"].image_errors for case in _corrupt_cases())


def test_plan_covers_every_pixel_once():
    data = l3.encode(edge_images()["N+1"], "default")
    plan = plan_batch([data, data])
    tasks = {name: plan.tasks[:, i] for i, name in enumerate(TASK_FIELDS)}
    assert plan.shape == (2, 129, 130, 3) and len(plan.tasks) == 2 * 4
    assert (tasks["height"] * tasks["width"]).sum() * 3 == 2 * 129 * 130 * 3
    assert plan.threads == 384 and plan.max_width == 128 and plan.max_segments == 16
    assert set(tasks["subtract_green"]) == {1} and set(tasks["zigzag"]) == {1} and set(tasks["segment"]) == {8}
    assert set(tasks["start3"]) == {0} and set(tasks["end3"]) == {0}  # no fourth channel
    # Image 1's patch streams follow image 0's; file_bias maps them back into each file.
    _, _, _, offsets, payload_start = l3.parse_header(data)
    assert tasks["start0"][4] == offsets[-1] == len(data) - payload_start - 4  # the checksum is no patch data
    assert tasks["start0"][4] + tasks["file_bias"][4] == payload_start
    assert plan.payload.tobytes() == 2 * data[payload_start:-4]


def test_gpu_check_runs_on_the_cpu(binaries, tmp_path):
    """The GPU check, as a GPU machine runs it (gpu_check.py: its images, every check, its report), with the CPU
    stand-in for the CUDA driver: every batch bit-exact on the GPU path and the CPU decoder, every damaged file
    reported or decoded like the CPU decoder (version 1) or reported (version 2), every speed measured."""
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "cuda_device" / "gpu_check.py"),
            "--quick",
            "--out",
            str(tmp_path),
            "--driver",
            str(binaries.driver),
            "--driver-library",
            str(binaries.cpu_driver_library),
        ],
        capture_output=True,
        text=True,
        env=binaries.env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["passed"] and not report["problems"]
    assert report["device"]["name"].startswith("CPU (tests/cuda_host")
    batches = {(row["batch"], row["profile"]) for row in report["verify"]}
    expected = {f"edge-{name}" for name in edge_images()} | {"crops", "frames"}
    assert batches == {(batch, profile) for batch in expected for profile in l3.PROFILES}
    for row in report["verify"]:
        assert row["passed"] and row["failure_count"] == 0, row
        # Version 1: each damaged file reported, or decoded to the CPU decoder's pixels; version 2: all reported.
        assert row["v1_reported"] + row["v1_decoded_like_cpu"] == row["corruptions"] > 0, row
        assert row["v2_reported"] == row["corruptions"] and row["v2_decoded_like_cpu"] == 0, row
    decoders = {(row["batch"], row["profile"], row["decoder"]) for row in report["time"]}
    assert len(decoders) == 2 * 2 * 4 and all(row["ms"] > 0 for row in report["time"])
    assert "Bit-exactness" in result.stdout and "all checks passed" in result.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA compiler")
def test_nvcc_compiles_the_kernel(tmp_path):
    ptx = tmp_path / "l3_decode.ptx"
    result = subprocess.run(
        ["nvcc", "-ptx", "-arch=compute_75", "-Werror", "all-warnings", f"-I{KERNEL.parent}", str(KERNEL), "-o", ptx],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert re.findall(r"\.entry (\w+)\(", ptx.read_text()) == ["l3_decode_patches"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA compiler")
def test_nvcc_compiles_the_gpu_check(tmp_path):
    """The check's CUDA path as a GPU machine compiles it: the toolkit's own headers (here CUDA 13's, where
    TensorFlow's are 12.5's; its cuda.h renames entry points), nvcc handing the sources to its host compiler."""
    include = Path(shutil.which("nvcc")).resolve().parent.parent / "include"
    # A toolkit without NVRTC (this machine's) takes nvrtc.h from NVRTC's wheel, searched after the toolkit's own.
    flags = ("-O0", f"-Xcompiler=-idirafter,{NVRTC.parent.parent / 'include'}")
    objects = build.compile_sources(tmp_path, include, build.CUDA_SOURCES, compiler="nvcc", flags=flags)
    assert all(path.stat().st_size > 0 for path in objects) and len(objects) == 8


def test_gpu_check_without_a_gpu_driver_says_so(binaries):
    env = {key: value for key, value in os.environ.items() if not key.startswith("TFLIQUID_")}
    env["TFLIQUID_CUDA_DRIVER_LIBRARY"] = "/nonexistent/libcuda.so.1"
    result = subprocess.run([str(binaries.driver), "device"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert result.returncode == 2 and not result.stdout
    assert "l3_gpu_check: the CUDA driver library cannot be loaded" in result.stderr


@pytest.mark.parametrize("arch", ["compute_75", "compute_90"])
def test_nvrtc_compiles_the_kernel_through_the_op_library(arch):
    """The op library's NVRTC path (the embedded source and its header, the compile options) yields the kernel."""
    ptx = tfliquid.l3.compile_gpu_kernels(arch)
    assert re.search(rf"^\.target sm_{arch[-2:]}$", ptx, re.MULTILINE)
    assert re.findall(r"\.entry (\w+)\(", ptx) == ["l3_decode_patches"]


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
