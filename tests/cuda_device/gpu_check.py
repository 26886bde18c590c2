"""The L3 GPU decoder checked and measured on this machine's GPU, without TensorFlow.

    python3 tests/cuda_device/gpu_check.py [--out build/gpu-check] [--quick]

Builds l3_gpu_check (driver_build.py: the op library's own device side, a C++ compiler and the CUDA headers), makes the
images (the edge cases of cases.py; crops of 512x512 and full-HD frames of the photos in photos/), and runs:
bit-exactness of the GPU (one launch per batch, and images alone, at the op's block size and at one warp) and of
the CPU decoder on every core against the source pixels, in both profiles; damaged files in launches beside intact
ones; the speed of the kernel alone, of the op's whole sequence per batch (from pinned and from pageable staging)
and of the CPU decoder; and nvJPEG and OpenCV on the same pictures (baselines.py). Prints a table and writes
OUT/gpu_check.json; exits 1 when a check fails.

Needs Python 3 with NumPy, and OpenCV or Pillow for the photos; torch/torchvision and OpenCV for the baselines.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import baselines
import cases
import driver_build as build
import numpy as np
import pictures

PROFILES = ("default", "paper")


@dataclasses.dataclass(frozen=True)
class Plan:
    crops: tuple[int, int, int]  # count, height, width
    frames: tuple[int, int, int]
    verify_threads: tuple[int, ...]  # block sizes of the checks; 0: the op's
    time_threads: int
    singles: int
    edge_corruptions: int
    photo_corruptions: int
    repeat: int
    timeout_s: int


FULL = Plan((256, 512, 512), (32, 1080, 1920), (0, 32), 0, 8, 40, 200, 20, 600)
# Small images, a few damaged files, one timing run, 3 threads a block: checks the check itself where the CPU
# stands in for the GPU (tests/test_l3_gpu_check.py), which runs one OS thread per CUDA thread.
QUICK = Plan((4, 48, 64), (2, 96, 160), (3,), 3, 1, 3, 6, 1, 300)


def write_pam(path: Path, images) -> Path:
    """A Netpbm PAM stream: the images back to back, each [H, W, C] or [H, W]."""
    with open(path, "wb") as f:
        for image in images:
            image = image if image.ndim == 3 else image[..., None]
            height, width, channels = image.shape
            f.write(f"P7\nWIDTH {width}\nHEIGHT {height}\nDEPTH {channels}\nMAXVAL 255\nENDHDR\n".encode())
            f.write(np.ascontiguousarray(image).tobytes())
    return path


def toolkit_nvrtc(include: Path) -> Path | None:
    """The toolkit's NVRTC beside its headers (the GPU machines have no NVRTC on the loader's path)."""
    for lib in ("lib64", "lib", "targets/x86_64-linux/lib"):
        found = sorted((include.parent / lib).glob("libnvrtc.so.*[0-9]"))
        if found:
            return found[0]
    return None


class Driver:
    """Runs l3_gpu_check; collects its JSON lines and every way a run can fail (crash, hang, error)."""

    def __init__(self, path: Path, env: dict, timeout_s: int):
        self.path, self.env, self.timeout_s = path, env, timeout_s
        self.problems: list[str] = []

    def __call__(self, *args) -> list[dict]:
        command = [str(self.path), "--kernel-dir", str(build.OPS / "l3"), *map(str, args)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=self.timeout_s)
        except subprocess.TimeoutExpired as e:
            self.problems.append(f"{' '.join(command[3:])}: still running after {self.timeout_s} s (a hang?)")
            return [json.loads(line) for line in (e.stdout or b"").decode().splitlines() if line.startswith("{")]
        rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        if result.returncode not in (0, 1):
            self.problems.append(f"{' '.join(command[3:])}: exit status {result.returncode}: {result.stderr[-2000:]}")
        return rows


def make_images(folder: Path, plan: Plan, problems: list[str]) -> tuple[list[Path], dict[str, tuple[Path, np.ndarray]]]:
    """The edge cases, one PAM file each, and the photo batches: name -> (PAM file, pixels); none, and a problem
    said, where the photos cannot be decoded."""
    folder.mkdir(parents=True, exist_ok=True)
    edges = [write_pam(folder / f"edge-{name}.pam", [image]) for name, image in cases.edge_images().items()]
    photos = {}
    try:
        for name, (count, height, width), seed in (("crops", plan.crops, 1), ("frames", plan.frames, 2)):
            pixels = pictures.crops(count, height, width, seed)
            photos[name] = (write_pam(folder / f"{name}.pam", pixels), pixels)
    except ImportError as e:
        problems.append(f"no photo batches: {e}")
    return edges, photos


def run_checks(driver: Driver, plan: Plan, edges: list[Path], photos: dict) -> tuple[list[dict], list[dict]]:
    verified, timed = [], []
    photo_files = [path for path, _ in photos.values()]
    for profile in PROFILES:
        for threads in plan.verify_threads:
            verified += driver(
                "verify", "--threads", threads, "--singles", 1, "--corruptions", plan.edge_corruptions, profile, *edges
            )
        if photo_files:
            verified += driver(
                "verify", "--threads", plan.verify_threads[0], "--singles", plan.singles,
                "--corruptions", plan.photo_corruptions, profile, *photo_files,
            )  # fmt: skip
            timed += driver("time", "--threads", plan.time_threads, "--repeat", plan.repeat, profile, *photo_files)
    return verified, timed


def _speed(row: dict, images: int, pixel_bytes: int) -> str:
    if "skipped" in row:
        return f"{row['decoder']:<28} skipped: {row['skipped']}"
    ms = row["ms"]
    return (
        f"{row['decoder']:<28} {ms:10.3f} {images / ms * 1000:12.1f} {pixel_bytes / ms / 1e6:8.2f} "
        f"{row['encoded_bytes'] / 1e6:10.2f}"
    )


def report(device: dict, verified: list[dict], timed: list[dict], baseline_rows: dict, problems: list[str]) -> str:
    lines = [f"L3 GPU check on {device.get('name', '(no device)')}, {device.get('date')}", "", "Bit-exactness"]
    lines.append(f"{'batch':<18} {'profile':<8} {'shape':<18} {'threads':>7} {'damaged':>8}   "
                 f"{'v1: reported, like CPU':>22}   {'v2: reported, like CPU':>22}  result")  # fmt: skip
    for row in verified:
        lines.append(
            f"{row['batch']:<18} {row['profile']:<8} {row['shape']:<18} {row['threads']:>7} {row['corruptions']:>8}   "
            f"{row['v1_reported']:>13} {row['v1_decoded_like_cpu']:>8}   {row['v2_reported']:>13} "
            f"{row['v2_decoded_like_cpu']:>8}  {'pass' if row['passed'] else 'FAIL'}"
        )
        lines += [f"    {failure}" for failure in row["failures"]]
    lines += ["", "Speed: median ms per batch; images/s; GB/s of decoded pixels; MB compressed"]
    for batch in dict.fromkeys(row["batch"] for row in timed):
        rows = [row for row in timed if row["batch"] == batch]
        first = rows[0]
        lines.append(f"{batch} {first['shape']} ({first['blocks']} blocks of {first['threads']} threads, "
                     f"{first['shared_bytes']} B shared, {first['registers']} registers, "
                     f"{first['blocks_per_multiprocessor']} blocks per multiprocessor)")  # fmt: skip
        for row in rows:
            lines.append(f"  L3 {row['profile']:<8} " + _speed(row, first["images"], first["pixel_bytes"]))
        for row in baseline_rows.get(batch, []):
            lines.append(f"  {row.get('format', ''):<11} " + _speed(row, first["images"], first["pixel_bytes"]))
    lines += [f"PROBLEM: {problem}" for problem in problems]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/gpu-check", help="build, images, gpu_check.json")
    parser.add_argument("--quick", action="store_true", help="small images: checks the check itself")
    parser.add_argument("--cuda-include", help="the CUDA headers to build against (default: the toolkit's)")
    parser.add_argument("--driver", help="an l3_gpu_check already built (driver_build.py) instead of building one")
    parser.add_argument("--driver-library", help="load this file in libcuda's place (the CPU stand-in)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    include = Path(args.cuda_include) if args.cuda_include else build.cuda_include()
    if include is None:
        sys.exit("gpu_check: no CUDA headers (cuda.h): set CUDA_HOME or put nvcc on the PATH")
    env = dict(os.environ)
    if args.driver_library:
        env["TFLIQUID_CUDA_DRIVER_LIBRARY"] = str(Path(args.driver_library).resolve())
    if not env.get("TFLIQUID_NVRTC_LIBRARY") and toolkit_nvrtc(include):
        env["TFLIQUID_NVRTC_LIBRARY"] = str(toolkit_nvrtc(include))
    if args.driver:
        executable = Path(args.driver)
    else:
        print(f"building {out / 'l3_gpu_check'} against {include}", flush=True)
        executable = build.build_driver(out / "l3_gpu_check", include)
    driver = Driver(executable, env, plan.timeout_s)
    edges, photos = make_images(out / "images", plan, driver.problems)
    devices = driver("device")
    device = {**(devices[0] if devices else {}), "date": datetime.datetime.now().astimezone().isoformat("T", "seconds")}
    verified, timed = run_checks(driver, plan, edges, photos) if devices else ([], [])
    baseline_rows = {name: baselines.measure(pixels, plan.repeat) for name, (_, pixels) in photos.items()}
    passed = bool(devices) and not driver.problems and all(row["passed"] for row in verified)
    print(report(device, verified, timed, baseline_rows, driver.problems))
    results = {"device": device, "passed": passed, "verify": verified, "time": timed, "baselines": baseline_rows,
               "problems": driver.problems, "plan": dataclasses.asdict(plan)}  # fmt: skip
    (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
    print(f"{'all checks passed' if passed else 'CHECKS FAILED'}; results: {out / 'gpu_check.json'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
