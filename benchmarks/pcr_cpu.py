"""PCR when the CPU is the bottleneck: what each scan group costs to decode, at full size and at a model's size.

    python -m benchmarks.pcr_cpu [--images-per-class 40] [--width 500] [--height 375] [--target 224]
                                 [--threads 1,2] [--rounds 5] [--profile]

The images: crops of the shipped photos, --width x --height (ImageNet's typical 500 x 375) at quality 90, as
baseline JPEG files, TFRecords of them, and a PCR dataset (the "fast" scan script). Every file is in the page
cache and nothing throttles the reads: the CPU is the bottleneck. Peers, at each thread count (tf.data: a private
thread pool of that size, maps and PCR's parallel reads of that parallelism; DALI: num_threads), one pass each per
round, taking turns:
  - TFRecordDataset + tf.io.decode_jpeg of the baseline JPEGs (with a target: + tf.image.resize);
  - NVIDIA DALI's CPU pipeline on the same JPEG files (with a target: + fn.resize), when `nvidia.dali` imports;
  - PCRDataset at scan groups 1, 2, 4 and full (with a target: decode_size=(target, target): libjpeg's DCT scale,
    then a resize, batch_size=64: a batch decoded by one op; without: tfliquid.jpeg.sized.decode_jpeg,
    tf.io.decode_jpeg's pixels).
Ratios are taken within a round; the median and range over rounds are reported.

--profile instead splits a PCR element's CPU time on one thread, per scan group: reading the record and splitting
its prefixes (PCRDataset(decode=False)); decoding the prefixes in memory at full size with tf.io.decode_jpeg
(TensorFlow's bundled libjpeg-turbo) and with this package's decoder (its spectral-selection entropy decoder and
the system's libjpeg-turbo), at 1/8 scale (next to no inverse transform, colour conversion or upsampling: what is
left is mostly entropy decoding) and at the target size (the scaled decode and the resize); the same for the
baseline JPEGs; and tf.data's cost per element (an identity map).

Targets (issue 45), on medians:
  - full fidelity, no target: PCR >= 1.0 x TFRecordDataset + decode_jpeg, and >= 0.85 x DALI;
  - with a 224 x 224 target: scan group 1 >= 3 x and scan group 2 >= 2 x PCR's full-fidelity rate (issue 45);
    scan group 1 >= 6 x and scan group 2 >= 3 x (issue 54: the DC-only path, a batch per op).
"""

from __future__ import annotations

import argparse
import os
import time

import tensorflow as tf

import tfliquid
from tfliquid.jpeg.sized import decode_jpeg_at_size, decode_jpeg_scaled
from tfliquid.samples import photos as sample_photos

from benchmarks import common, dali_peer

GROUPS = (1, 2, 4, None)  # None: full fidelity
# PCRDataset's own batches (batch_size=, one decode op each) when it decodes at a size: small enough that a pass of
# 400 images holds a batch for each thread several times over (at 256 it is two batches, 256 and 144, and at two
# threads the second core idles through most of it); the other peers batch 256.
PCR_BATCH = 64
FEATURES = {"image/encoded": tf.io.FixedLenFeature([], tf.string)}


def with_threads(dataset: tf.data.Dataset, threads: int) -> tf.data.Dataset:
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return dataset.with_options(options)


def resized(image, target):
    return tf.cast(tf.round(tf.clip_by_value(tf.image.resize(image, [target, target]), 0, 255)), tf.uint8)


def tfrecord_pipeline(path: str, threads: int, target: int | None) -> tf.data.Dataset:
    def decode(record):
        image = tf.io.decode_jpeg(tf.io.parse_single_example(record, FEATURES)["image/encoded"], channels=3)
        return image if target is None else resized(image, target)

    records = tf.data.TFRecordDataset(path, buffer_size=1 << 20)
    return with_threads(records.map(decode, num_parallel_calls=threads), threads)


def pcr_pipeline(path: str, group, threads: int, target: int | None) -> tf.data.Dataset:
    """PCRDataset's images; at a target size, in batches each decoded by one op (batch_size=)."""
    size = None if target is None else (target, target)
    batch_size = None if target is None else PCR_BATCH
    dataset = tfliquid.PCRDataset(
        path, scan_group=group, decode_size=size, seed=0, num_parallel_reads=threads, batch_size=batch_size
    )
    images = dataset.map(lambda x: x["image"])
    return with_threads(images, threads)


def group_name(group) -> str:
    return "full" if group is None else str(group)


def peers(args, folder, tfrecord, pcr, threads, target, images) -> dict:
    passes = {"TFRecord + decode_jpeg": common.pass_of(tfrecord_pipeline(tfrecord, threads, target))}
    if dali_peer.available():
        passes["DALI"] = dali_peer.image_folder_epoch(folder, images, threads=threads, size=target)
    for group in GROUPS:
        pipeline = pcr_pipeline(pcr, group, threads, target)
        batch_size = None if target is not None else dali_peer.BATCH  # at a target PCRDataset yields batches
        passes[f"PCR group {group_name(group)}"] = common.pass_of(pipeline, batch_size=batch_size)
    return passes


def compare(args, folder, tfrecord, pcr, images) -> None:
    targets_met = []
    for threads in args.threads:
        for target in (None, args.target):
            print(f"\n{threads} thread(s), {'full size' if target is None else f'{target}x{target}'}: img/s")
            rates = common.round_robin(peers(args, folder, tfrecord, pcr, threads, target, images), args.rounds)
            for name, values in rates.items():
                print(f"  {name:<24}{common.median_and_range(values, '{:,.0f}')}")
            full, tfrecord_rates = rates["PCR group full"], rates["TFRecord + decode_jpeg"]
            for group in GROUPS[:-1]:
                ratios = common.ratios(rates[f"PCR group {group}"], full)
                print(f"  PCR group {group} / full: {common.median_and_range(ratios)}")
            print(f"  PCR full / TFRecord: {common.median_and_range(common.ratios(full, tfrecord_rates))}")
            if "DALI" in rates:
                print(f"  PCR full / DALI: {common.median_and_range(common.ratios(full, rates['DALI']))}")
            print("  targets:")
            if target is None:
                targets_met.append(common.verdict("PCR full / TFRecord", common.ratios(full, tfrecord_rates), 1.0))
                if "DALI" in rates:
                    targets_met.append(common.verdict("PCR full / DALI", common.ratios(full, rates["DALI"]), 0.85))
            else:
                for group, goal in ((1, 6.0), (2, 3.0)):
                    ratios = common.ratios(rates[f"PCR group {group}"], full)
                    targets_met.append(common.verdict(f"PCR group {group} / full at {target}", ratios, goal))
    if not dali_peer.available():
        print("\nDALI: not installed (pip install nvidia-dali-cuda120): its peer is left out")
    print("\nall targets met" if all(targets_met) else "\nsome targets missed")


def microseconds_per_image(dataset: tf.data.Dataset, repeat: int = 3) -> float:
    run = common.pass_of(with_threads(dataset, 1))
    return 1e6 / max(run().rate for _ in range(repeat))


def decode_costs(jpegs: tf.data.Dataset, target: int) -> list[float]:
    """Microseconds per image of decoding `jpegs` (in memory): tf.io.decode_jpeg, this package's decoder at the
    largest scale the scans hold (the full size for a whole JPEG), at 1/8, and at target x target (the scaled
    decode and the resize: what PCRDataset(decode_size=...) does)."""
    decoders = (
        lambda data: tf.io.decode_jpeg(data, channels=3),
        lambda data: decode_jpeg_scaled(data, (65535, 65535)),  # no scale reaches it: the full size
        lambda data: decode_jpeg_scaled(data, (1, 1)),
        lambda data: decode_jpeg_at_size(data, (target, target)),  # the scaled decode and the resize
    )
    return [microseconds_per_image(jpegs.map(decode)) for decode in decoders]


def profile(pcr: str, folder: str, target: int) -> None:
    print("\nwhere a PCR element's CPU time goes, one thread, microseconds per image (best of 3 passes)")
    columns = ("read+split", "tf decode", "ours max", "ours 1/8", f"ours {target}")
    print(f"{'scan group':<12}" + "".join(f"{name:>12}" for name in columns))
    for group in GROUPS:
        raw = tfliquid.PCRDataset(pcr, scan_group=group, decode=False, shuffle=False, num_parallel_reads=1)
        prefixes = tf.data.Dataset.from_tensor_slices([x["image"] for x in raw.as_numpy_iterator()]).cache()
        list(prefixes)  # filled once, in memory
        costs = [microseconds_per_image(raw), *decode_costs(prefixes, target)]
        print(f"{group_name(group):<12}" + "".join(f"{cost:>12.0f}" for cost in costs))
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(folder) for name in names)
    baseline = tf.data.Dataset.from_tensor_slices([tf.io.read_file(path) for path in files]).cache()
    list(baseline)
    print(f"{'baseline':<12}{'-':>12}" + "".join(f"{cost:>12.0f}" for cost in decode_costs(baseline, target)))
    elements = tf.data.Dataset.range(20_000).map(lambda i: {"image": tf.strings.as_string(i), "label": i})
    overhead = microseconds_per_image(elements.cache().map(lambda x: x), repeat=3) - microseconds_per_image(
        elements.cache(), repeat=3
    )
    print(f"tf.data's cost of one more map per element: {overhead:.1f} us")


def add_arguments(parser) -> None:
    """The options of the CPU-bound PCR benchmarks: the photos, the target, the threads, the rounds."""
    parser.add_argument("--workdir", default="bench_data", help="where datasets are made (kept between runs)")
    parser.add_argument("--images-per-class", type=int, default=40, help="10 classes")
    parser.add_argument("--width", type=int, default=500)
    parser.add_argument("--height", type=int, default=375)
    parser.add_argument("--target", type=int, default=224, help="the model's input side, for the sized runs")
    parser.add_argument("--threads", type=lambda text: [int(t) for t in text.split(",")], default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)


def datasets(args) -> tuple[str, str, str, int]:
    """(the JPEG folder, its TFRecords, its PCR dataset of the fast script, the number of images), made once per
    workdir and size, and read once into the page cache."""
    name = f"photos-{args.images_per_class}x{args.width}x{args.height}"
    folder = os.path.join(args.workdir, name)
    if not os.path.exists(folder):
        sample_photos.write_image_folder(folder + ".tmp", args.images_per_class, args.width, height=args.height)
        os.replace(folder + ".tmp", folder)
    tfrecord, pcr = folder + ".tfrecord", folder + "-pcr"
    if not os.path.exists(tfrecord):
        sample_photos.write_tfrecords(folder, tfrecord + ".tmp")
        os.replace(tfrecord + ".tmp", tfrecord)
    tfliquid.pcr.convert(folder, pcr, images_per_record=64, scan_script="fast", progress=False)
    images = sum(len(files) for _, _, files in os.walk(folder))
    print(
        f"{images} images {args.width}x{args.height} q90; PCR: {len(tfliquid.pcr.inspect(pcr).scan_groups)} "
        f"scan groups; {os.cpu_count()} cores; TensorFlow {tf.__version__}"
    )
    common.page_cached(args.workdir, lambda: None)()
    return folder, tfrecord, pcr, images


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--profile", action="store_true", help="split a PCR element's CPU time instead")
    args = parser.parse_args()
    start = time.perf_counter()
    folder, tfrecord, pcr, images = datasets(args)
    if args.profile:
        profile(pcr, folder, args.target)
    else:
        compare(args, folder, tfrecord, pcr, images)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
