"""Conversion time: an image folder to PCR vs to TFRecords of the same images, in one run.

    python -m benchmarks.convert [--images-per-class 100] [--size 320] [--repeat 2]

Peers (all use every core through tf.data's parallel map; best of --repeat runs):
  - TFRecords the way TensorFlow's ImageNet converter (build_imagenet_data.py) makes them: read each file,
    decode it to validate it and learn its height and width, serialize a tf.train.Example, write;
  - TFRecords of the bytes alone (read, Example, write): the floor of any converter;
  - PCR: `tfliquid.pcr.convert` (lossless progressive transcode in-process, split, records, CRCs);
  - for information, the cost of spawning `jpegtran` once per image, measured on a sample.
Target (issue 2): PCR conversion <= 1.5 x the TensorFlow-converter TFRecord time (the PCR paper's took 1.75x).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

import tensorflow as tf

import tfliquid
from tfliquid.io import sources

from benchmarks import common


def _feature_bytes(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _feature_int(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def write_tfrecords(folder: str, path: str, validate: bool) -> None:
    source = sources.image_folder(folder)
    images = source.read(range(source.num_items))
    if validate:
        images = images.map(
            lambda _, contents, label, key: (contents, label, key, tf.shape(tf.io.decode_jpeg(contents, channels=3))),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    else:
        images = images.map(lambda _, contents, label, key: (contents, label, key, tf.zeros([3], tf.int32)))
    with tf.io.TFRecordWriter(path) as writer:
        for contents, label, key, shape in images.as_numpy_iterator():
            feature = {
                "image/encoded": _feature_bytes(contents),
                "image/class/label": _feature_int(label),
                "image/filename": _feature_bytes(key),
                "image/format": _feature_bytes(b"JPEG"),
            }
            if validate:
                feature.update(
                    {
                        "image/height": _feature_int(shape[0]),
                        "image/width": _feature_int(shape[1]),
                        "image/channels": _feature_int(shape[2]),
                    }
                )
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def jpegtran_seconds_per_image(folder: str, sample: int) -> float:
    files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in sorted(fs)][:sample]
    start = time.perf_counter()
    for f in files:
        subprocess.run(["jpegtran", "-progressive", "-optimize", "-copy", "none", f], check=True, capture_output=True)
    return (time.perf_counter() - start) / len(files)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_photo_arguments(parser)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    folder = common.photo_folder_of(args)
    n = sources.image_folder(folder).num_items
    out = tempfile.mkdtemp(dir=args.workdir)
    try:

        def pcr():
            tfliquid.pcr.convert(
                folder, os.path.join(out, "pcr"), images_per_record=256, overwrite=True, progress=False
            )

        times = {
            "TFRecord, TF ImageNet converter recipe": common.timed(
                lambda: write_tfrecords(folder, os.path.join(out, "validated.tfrecord"), True), args.repeat
            ),
            "TFRecord, bytes only": common.timed(
                lambda: write_tfrecords(folder, os.path.join(out, "bytes.tfrecord"), False), args.repeat
            ),
            "PCR (tfliquid convert pcr)": common.timed(pcr, args.repeat),
        }
    finally:
        shutil.rmtree(out)
    spawn = jpegtran_seconds_per_image(folder, 50)

    print(
        f"{n} JPEG crops ({args.size}x{args.size}) of the shipped photos; {os.cpu_count()} cores; best of {args.repeat}"
    )
    print(f"{'converter':<40}{'seconds':>9}{'images/s':>10}")
    for name, seconds in times.items():
        print(f"{name:<40}{seconds:>9.2f}{n / seconds:>10,.0f}")
    print(
        f"{'jpegtran spawned per image (sample of 50)':<40}{spawn * n:>9.2f}{1 / spawn:>10,.0f}"
        "   (one process, extrapolated)"
    )
    print("\nTargets:")
    reference = times["TFRecord, TF ImageNet converter recipe"]
    common.verdict(
        "PCR / TFRecord conversion time", times["PCR (tfliquid convert pcr)"] / reference, 1.5, higher_is_better=False
    )
    print(f"  (PCR / bytes-only TFRecord: {times['PCR (tfliquid convert pcr)'] / times['TFRecord, bytes only']:.2f})")


if __name__ == "__main__":
    main()
