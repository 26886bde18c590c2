"""Reading the same images as TFRecords and as PCR at scan groups 1, 2, 5 and full, unthrottled and throttled.

    python -m benchmarks.pcr_read [--images-per-class 100] [--size 320] [--bandwidth BYTES_PER_S] [--epochs 3]

Peers in one run, as ratios (the machine is shared and noisy, absolute numbers drift):
  - TFRecordDataset + tf.io.decode_jpeg on the original (baseline) JPEGs: what users have today;
  - TFRecordDataset + tf.io.decode_jpeg on the same progressive JPEGs that the PCR dataset holds: the peer
    that isolates the record format, since progressive JPEGs cost more to decode than baseline ones;
  - tfliquid.PCRDataset(scan_group=g), g = 1, 2, 5, full.
Throttled runs put every reader on the same tfliquid read budget (TFRecords through
tfliquid.io.draw_read_bandwidth). By default the budget is 0.7 x the slowest unthrottled byte rate, so that
every reader is bound by I/O: the regime of the PCR paper's Theorem 4.1. Readers are measured in turns, best of
--epochs rounds (throttled: two rounds of two epochs back to back, the steady state where the next epoch's first
reads overlap this epoch's last decodes). Now and then a throttled epoch drops to about half its rate: tf.data's
autotuner starves an AUTOTUNE decode map while the reads are throttled. PCRDataset decodes with one call per core
for that reason; the TFRecord peers are written as users write them, with AUTOTUNE, and best-of keeps that noise
out of the ratios. Targets (issue 2):
  1. throttled speedup of group g over full >= 0.9 x the bytes ratio;
  2. full-fidelity PCR >= 0.95 x TFRecordDataset + decode_jpeg on the same images;
  3. the PCR reader alone (no decode, one thread) >= 1 GiB/s.
"""

from __future__ import annotations

import argparse
import os

import tensorflow as tf

import tfliquid
from tfliquid.samples import photos as sample_photos

from benchmarks import common

GROUPS = (1, 2, 5, None)
FEATURES = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}


def tfrecord_pipeline(path: str, throttled: bool) -> tf.data.Dataset:
    records = tf.data.TFRecordDataset(path, buffer_size=1 << 20)
    if throttled:
        # Drawn per 32 records (about TFRecordDataset's 1 MiB read buffer), as PCR draws per 1 MiB chunk: one
        # sleep per small record would let a late thread wake-up cost more than the transfer. The prefetch keeps
        # reading while records decode, as PCRDataset's interleave does.
        records = (
            records.batch(32)
            .map(lambda rs: tfliquid.io.draw_read_bandwidth(tf.reduce_sum(tf.strings.length(rs)), rs))
            .prefetch(2)
            .unbatch()
        )

    def parse(record):
        example = tf.io.parse_single_example(record, FEATURES)
        image = example["image/encoded"]
        return tf.io.decode_jpeg(image, channels=3)

    return records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def pcr_pipeline(path: str, scan_group) -> tf.data.Dataset:
    return tfliquid.PCRDataset(path, scan_group=scan_group, seed=0)


def drain_seconds(ds: tf.data.Dataset, epochs: int) -> float:
    """Best time of one pass through an iterator, as Keras consumes datasets. Batched, so that the Python loop
    costs less than the readers being measured (Dataset.reduce is no substitute: it runs the pipeline on the
    two inter-op threads, where a throttled read that sleeps starves the decoders)."""
    batches = ds.batch(256)

    def drain():
        for _ in batches:
            pass

    return common.timed(drain, epochs)


def round_robin(pipelines: dict, images: int, rounds: int) -> dict:
    """Images/s of each pipeline, best of `rounds`, measured in turns: the machine's speed drifts over a run
    (shared hosts), and taking turns exposes every peer to the same drift."""
    best = {name: 0.0 for name in pipelines}
    for _ in range(rounds):
        for name, make in pipelines.items():
            best[name] = max(best[name], images / drain_seconds(make(), 1))
    return best


def write_progressive_tfrecords(pcr: str, path: str) -> None:
    """TFRecords of the exact JPEG bytes the PCR dataset holds at full fidelity."""
    if os.path.exists(path):
        return
    with tf.io.TFRecordWriter(path + ".tmp") as writer:
        for x in tfliquid.PCRDataset(pcr, decode=False, shuffle=False).as_numpy_iterator():
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[x["image"]])),
                "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[x["label"]])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    os.replace(path + ".tmp", path)


def reader_bytes_per_second(path: str, epochs: int) -> float:
    """The PCR reader alone at full fidelity: one record at a time, a one-thread private pool."""
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    ds = tfliquid.PCRDataset(path, decode=False, shuffle=False, num_parallel_reads=1).with_options(options)
    drain_seconds(ds, 1)  # warms the page cache
    return tfliquid.PCRDataset(path).bytes_per_epoch() * epochs / drain_seconds(ds.repeat(epochs), 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="bench_data")
    parser.add_argument("--images-per-class", type=int, default=100)
    parser.add_argument("--size", type=int, default=320, help="side of the JPEG crops in pixels")
    parser.add_argument(
        "--bandwidth",
        type=float,
        default=None,
        help="throttled runs' bytes/s (default: 0.7 x the slowest unthrottled byte rate)",
    )
    parser.add_argument("--epochs", type=int, default=3, help="best of this many epochs per measurement")
    args = parser.parse_args()

    folder = common.photo_folder(args.workdir, args.images_per_class, args.size)
    tfrecord = os.path.join(args.workdir, f"photos-{args.images_per_class}x{args.size}.tfrecord")
    pcr = os.path.join(args.workdir, f"photos-{args.images_per_class}x{args.size}-pcr")
    if not os.path.exists(tfrecord):
        sample_photos.write_tfrecords(folder, tfrecord + ".tmp")
        os.replace(tfrecord + ".tmp", tfrecord)
    tfliquid.pcr.convert(folder, pcr, images_per_record=128, progress=False)
    progressive_tfrecord = pcr + ".tfrecord"
    write_progressive_tfrecords(pcr, progressive_tfrecord)
    info = tfliquid.pcr.inspect(pcr)
    n = info["images"]
    group_bytes = {g: info["scan_groups"][(g or len(info["scan_groups"])) - 1]["read_bytes"] for g in GROUPS}
    readers = [
        ("TFRecord, original JPEGs", lambda t: tfrecord_pipeline(tfrecord, t), os.path.getsize(tfrecord)),
        (
            "TFRecord, PCR's JPEGs",
            lambda t: tfrecord_pipeline(progressive_tfrecord, t),
            os.path.getsize(progressive_tfrecord),
        ),
    ]
    readers += [(f"PCR group {g or 'full'}", lambda t, g=g: pcr_pipeline(pcr, g), group_bytes[g]) for g in GROUPS]

    print(
        f"{n} JPEG crops ({args.size}x{args.size}) of the shipped photos, decoded to pixels; "
        f"{os.cpu_count()} cores; best of {args.epochs} epochs"
    )
    free = round_robin({name: lambda make=make: make(False) for name, make, _ in readers}, n, args.epochs)
    bandwidth = args.bandwidth or 0.7 * min(free[name] * size / n for name, _, size in readers)
    tfliquid.io.set_read_bandwidth(bandwidth)
    throttled = round_robin({name: lambda make=make: make(True).repeat(2) for name, make, _ in readers}, 2 * n, 2)
    tfliquid.io.set_read_bandwidth(None)
    print(f"{'reader':<26}{'bytes/image':>12}{'img/s':>10}{'img/s @ ' + f'{bandwidth / 1e6:.2g} MB/s':>18}")
    rows = {}
    for name, _, size in readers:
        rows[name] = (free[name], throttled[name], size)
        print(f"{name:<26}{size / n:>12,.0f}{free[name]:>10,.0f}{throttled[name]:>18,.0f}")

    reader = reader_bytes_per_second(pcr, 10)
    print(f"PCR reader alone (full fidelity, no decode, one thread): {reader / 2**30:.2f} GiB/s")

    print("\nTargets:")
    full = rows["PCR group full"]
    for g in (1, 2, 5):
        row = rows[f"PCR group {g}"]
        bytes_ratio = full[2] / row[2]
        common.verdict(
            f"throttled speedup of group {g} / (0.9 x bytes ratio {bytes_ratio:.2f})",
            (row[1] / full[1]) / (0.9 * bytes_ratio),
            1.0,
        )
    same = rows["TFRecord, PCR's JPEGs"]
    common.verdict("full-fidelity PCR / TFRecord of the same JPEGs, unthrottled", full[0] / same[0], 0.95)
    common.verdict("full-fidelity PCR / TFRecord of the same JPEGs, throttled", full[1] / same[1], 0.95)
    common.verdict("PCR reader alone, GiB/s on one thread", reader / 2**30, 1.0)
    original = rows["TFRecord, original JPEGs"]
    print(
        f"\nFor information, against TFRecords of the original baseline JPEGs: full-fidelity PCR runs at "
        f"{full[0] / original[0]:.2f}x unthrottled (progressive JPEGs decode slower: the PCR paper's Table 2 "
        f"shows the same) and {full[1] / original[1]:.2f}x when I/O-bound (it reads "
        f"{full[2] / original[2]:.2f}x the bytes); scan group 2 runs at {rows['PCR group 2'][1] / original[1]:.2f}x "
        "when I/O-bound."
    )


if __name__ == "__main__":
    main()
