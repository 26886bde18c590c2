"""ImageNet-style training input, CPU-bound: a random resized crop to the model's size, a random flip, a
normalisation, with the decode of only the crop against decode-then-crop pipelines.

    python -m benchmarks.pcr_crop [--images-per-class 40] [--width 500] [--height 375] [--target 224]
                                  [--threads 1,2] [--rounds 5]

The images: benchmarks.pcr_cpu's (crops of the shipped photos, 500 x 375 at quality 90, as baseline JPEG files,
TFRecords of them and a PCR dataset of the fast script), in the page cache. Every peer yields float32 [224, 224,
3] images of torchvision's random resized crop (scale 0.08-1, aspect 3/4-4/3), flipped with probability 1/2,
normalised by ImageNet's mean and std. Peers, at each thread count (tf.data: a private pool of that size, maps and
parallel reads of that parallelism; DALI: num_threads), one pass each per round, taking turns:
  - TFRecordDataset + tf.io.decode_jpeg + the crop of tf.image ops (tf.image.stateless_sample_distorted_bounding_box,
    tf.slice, tf.image.resize, a flip, the normalisation): decode the whole image, then crop;
  - TFRecordDataset + tf.io.decode_and_crop_jpeg (TensorFlow's own cropped decode, at full scale) and the same
    resize, flip and normalisation;
  - NVIDIA DALI's CPU pipeline on the same JPEG files (fn.decoders.image_random_crop, fn.resize,
    fn.crop_mirror_normalize), when `nvidia.dali` imports;
  - PCRDataset(decode_size=(224, 224), crop="random", dtype=tf.float32, mean, std, batch_size=64) at scan groups
    1, 2, 4 and full: the window alone decoded at the DCT scale it needs, resized, flipped and normalised, a batch
    in one op that writes each image into its place.
Ratios are taken within a round; the median and range over rounds are reported.

Targets (issue 54), on medians: full fidelity >= 1.0 x DALI and >= 2 x TFRecord + decode_jpeg + tf.image crop, at 1
and 2 threads; scan group 1 >= 6 x and scan group 2 >= 3 x full fidelity's rate.
"""

from __future__ import annotations

import argparse
import os
import time

import tensorflow as tf

import tfliquid
from tfliquid.jpeg.crop import IMAGENET_MEAN, IMAGENET_STD

from benchmarks import common, dali_peer, pcr_cpu

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
BASELINE = "TFRecord + decode_jpeg + tf.image crop"


def _normalised(image, target: int, flip):
    image = tf.image.resize(image, [target, target])
    image = tf.cond(flip, lambda: tf.reverse(image, [1]), lambda: image)
    return (image - IMAGENET_MEAN) / IMAGENET_STD


def _window(shape, seed):
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        shape,
        tf.zeros([1, 0, 4]),
        seed,
        area_range=SCALE,
        aspect_ratio_range=RATIO,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    return begin, size


def tfrecord_pipeline(path: str, threads: int, target: int, fused: bool) -> tf.data.Dataset:
    """TFRecords decoded then cropped by tf.image ops, or (fused) by tf.io.decode_and_crop_jpeg."""

    def crop(record, seed):
        contents = tf.io.parse_single_example(record, pcr_cpu.FEATURES)["image/encoded"]
        window_seed, flip_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        begin, size = _window(tf.image.extract_jpeg_shape(contents), window_seed)
        if fused:
            window = tf.stack([begin[0], begin[1], size[0], size[1]])
            image = tf.io.decode_and_crop_jpeg(contents, window, channels=3)
        else:
            image = tf.slice(tf.io.decode_jpeg(contents, channels=3), begin, size)
        return _normalised(image, target, tf.random.stateless_uniform([], flip_seed) < 0.5)

    records = tf.data.TFRecordDataset(path, buffer_size=1 << 20)
    seeds = tf.data.Dataset.random(seed=0).batch(2)
    return pcr_cpu.with_threads(tf.data.Dataset.zip(records, seeds).map(crop, num_parallel_calls=threads), threads)


def pcr_pipeline(path: str, group, threads: int, target: int) -> tf.data.Dataset:
    """Batches of PCRDataset's, each decoded by one op (batch_size=)."""
    dataset = tfliquid.PCRDataset(
        path,
        scan_group=group,
        decode_size=(target, target),
        crop="random",
        dtype=tf.float32,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        seed=0,
        num_parallel_reads=threads,
        batch_size=pcr_cpu.PCR_BATCH,
    )
    return pcr_cpu.with_threads(dataset.map(lambda x: x["image"]), threads)


def dali_epoch(folder: str, images: int, threads: int, target: int):
    """DALI's CPU pipeline of the same crop, flip and normalisation, in whole batches (dali_peer's timing)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(
        batch_size=pcr_cpu.PCR_BATCH,
        num_threads=threads,
        device_id=None,
        exec_async=False,
        exec_pipelined=False,
        seed=0,
    )
    def pipeline():
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, seed=0, name="reader")
        images = fn.decoders.image_random_crop(
            jpegs, device="cpu", random_area=list(SCALE), random_aspect_ratio=list(RATIO), num_attempts=10
        )
        images = fn.resize(images, resize_x=target, resize_y=target)
        images = fn.crop_mirror_normalize(
            images,
            dtype=types.FLOAT,
            output_layout="HWC",
            mean=list(IMAGENET_MEAN),
            std=list(IMAGENET_STD),
            mirror=fn.random.coin_flip(probability=0.5),
        )
        return images, labels

    return dali_peer.pipeline_epoch(pipeline(), images)


def compare(args, folder, tfrecord, pcr, images) -> bool:
    met = []
    target = args.target
    for threads in args.threads:
        print(f"\n{threads} thread(s), random resized crop to {target}x{target}, flip, normalise: img/s")
        passes = {
            BASELINE: common.pass_of(tfrecord_pipeline(tfrecord, threads, target, False)),
            "TFRecord + decode_and_crop_jpeg": common.pass_of(tfrecord_pipeline(tfrecord, threads, target, True)),
        }
        if dali_peer.available():
            passes["DALI"] = dali_epoch(folder, images, threads, target)
        for group in pcr_cpu.GROUPS:
            pipeline = pcr_pipeline(pcr, group, threads, target)
            passes[f"PCR group {pcr_cpu.group_name(group)}"] = common.pass_of(pipeline, batch_size=None)
        rates = common.round_robin(passes, args.rounds)
        for name, values in rates.items():
            print(f"  {name:<40}{common.median_and_range(values, '{:,.0f}')}")
        full = rates["PCR group full"]
        for name in passes:
            if name != "PCR group full":
                print(f"  {name} / PCR full: {common.median_and_range(common.ratios(rates[name], full))}")
        print("  targets:")
        met.append(common.verdict(f"PCR full / {BASELINE}", common.ratios(full, rates[BASELINE]), 2.0))
        if "DALI" in rates:
            met.append(common.verdict("PCR full / DALI", common.ratios(full, rates["DALI"]), 1.0))
        for group, goal in ((1, 6.0), (2, 3.0)):
            ratios = common.ratios(rates[f"PCR group {group}"], full)
            met.append(common.verdict(f"PCR group {group} / full", ratios, goal))
    if not dali_peer.available():
        print("\nDALI: not installed (pip install nvidia-dali-cuda120): its peer is left out")
    return all(met)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pcr_cpu.add_arguments(parser)
    args = parser.parse_args()
    start = time.perf_counter()
    folder, tfrecord, pcr, images = pcr_cpu.datasets(args)
    print(f"{os.cpu_count()} cores")
    print("\nall targets met" if compare(args, folder, tfrecord, pcr, images) else "\nsome targets missed")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
