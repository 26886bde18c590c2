"""Conversion time on Apache Beam's DirectRunner against the local runner, on the same images, in one run.

    python -m benchmarks.beam_convert [--images-per-class 100] [--size 320] [--rounds 3]

For each conversion (PCR, Liquid l3:raw 1:1, L3) the two runners take turns round by round, writing the same
bytes (tests/test_beam_conversion.py checks that):
  - local: `convert(...)`: one tf.data pipeline (PCR, Liquid) or a thread per core (L3) in this process;
  - Beam: `convert(..., runner="beam")`: the DirectRunner with one worker process per core (the default), each of
    which starts Python, imports TensorFlow and loads tfliquid's ops before it converts anything.
The Beam start-up cost is measured apart, as a PCR conversion of one image per class.
No target (issue 17): Beam must be correct and not absurdly slower; on a cluster its workers are the speed-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import tfliquid
from tfliquid.io import sources

from benchmarks import common

CONVERSIONS = {
    "PCR": lambda src, dst, **kw: tfliquid.pcr.convert(src, dst, images_per_record=64, **kw),
    "Liquid l3:raw 1:1": lambda src, dst, **kw: tfliquid.liquid.convert(src, dst, formats="l3,raw", ratio="1:1", **kw),
    "L3": lambda src, dst, **kw: tfliquid.l3.convert(src, dst, **kw),
}


def seconds(convert, src: str, dst: str, runner: str) -> float:
    shutil.rmtree(dst, ignore_errors=True)
    start = time.perf_counter()
    convert(src, dst, progress=False, runner=runner)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_photo_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    folder = common.photo_folder_of(args)
    tiny = common.photo_folder(args.workdir, 1, args.size)
    n = sources.image_folder(folder).num_items
    out = tempfile.mkdtemp(dir=args.workdir)
    times = {(name, runner): [] for name in CONVERSIONS for runner in ("local", "beam")}
    try:
        startup = [seconds(CONVERSIONS["PCR"], tiny, os.path.join(out, "tiny"), "beam") for _ in range(args.rounds)]
        for _ in range(args.rounds):
            for name, convert in CONVERSIONS.items():
                for runner in ("local", "beam"):
                    times[name, runner].append(seconds(convert, folder, os.path.join(out, "dst"), runner))
    finally:
        shutil.rmtree(out)

    print(
        f"{n} JPEG crops ({args.size}x{args.size}) of the shipped photos; {os.cpu_count()} cores; "
        f"{args.rounds} rounds, runners in turns; median [range]"
    )
    print(f"{'conversion':<20}{'local s':>20}{'Beam s':>20}{'Beam / local':>22}")
    for name in CONVERSIONS:
        local, beam = times[name, "local"], times[name, "beam"]
        print(
            f"{name:<20}{common.median_and_range(local, '{:.1f}'):>20}{common.median_and_range(beam, '{:.1f}'):>20}"
            f"{common.median_and_range(common.ratios(beam, local), '{:.2f}'):>22}"
        )
    tiny_count = sources.image_folder(tiny).num_items
    print(f"Beam start-up (PCR of {tiny_count} images): {common.median_and_range(startup, '{:.1f}')} s")


if __name__ == "__main__":
    main()
