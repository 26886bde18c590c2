"""Reading the same images as TFRecords and as PCR at every scan group, unthrottled and throttled.

    python -m benchmarks.pcr_read [--images-per-class 100] [--size 320] [--scan-script fast] [--bandwidth BYTES_PER_S]
                                  [--rounds 5]

Peers in one run, as ratios (the machine is shared and noisy, absolute numbers drift):
  - TFRecordDataset + tf.io.decode_jpeg on the original (baseline) JPEGs: what users have today;
  - TFRecordDataset + tf.io.decode_jpeg on the same progressive JPEGs that the PCR dataset holds: the peer
    that isolates the record format, since progressive JPEGs cost more to decode than baseline ones;
  - tfliquid.PCRDataset(scan_group=g) for every scan group g of the dataset (converted with --scan-script);
  - NVIDIA DALI's CPU pipeline on the original JPEG files, when `nvidia.dali` imports (unthrottled only: DALI
    cannot draw on tfliquid's read budget).
Throttled runs put every reader on the same tfliquid read budget (TFRecords through
tfliquid.io.draw_read_bandwidth). By default the budget is 0.7 x the slowest unthrottled byte rate, so that every
reader is bound by I/O: the regime of the PCR paper's Theorem 4.1. Peers take turns, one epoch each per round
(throttled: two epochs back to back, the steady state where the next epoch's first reads overlap this epoch's last
decodes), timed from the iterator's creation to its last element (the stall tf.data iterators now and then take to
tear down, up to 0.3 s, is printed apart: folded into a 0.35 s epoch it halved the rate); ratios are taken within a
round and reported as the median and range over rounds. Now and then a throttled epoch drops to about half its rate:
tf.data's autotuner starves an AUTOTUNE decode map while the reads are throttled. PCRDataset decodes with one call
per core for that reason; the TFRecord peers are written as users write them, with AUTOTUNE, and the median keeps a
lone slow epoch out of the verdicts.
Full-fidelity PCR is checked to decode to the original JPEGs' exact pixels before anything is timed.
Targets (issues 2 and 13), on medians:
  1. throttled speedup of group g over full >= 0.9 x the bytes ratio;
  2. full-fidelity PCR >= 0.95 x TFRecordDataset + decode_jpeg on the same images;
  3. the PCR reader alone (no decode, one thread) >= 1 GiB/s;
  4. full-fidelity PCR, unthrottled, >= 0.8 x TFRecordDataset + decode_jpeg on the original baseline JPEGs.
"""

from __future__ import annotations

import argparse
import os
import statistics

import tensorflow as tf

import tfliquid
from tfliquid.samples import photos as sample_photos

from benchmarks import common, dali_peer

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


def check_same_pixels(pcr: str, folder: str) -> None:
    """Full-fidelity PCR must decode to the original JPEGs' exact pixels (the transcode is lossless)."""
    for x in tfliquid.PCRDataset(pcr, shuffle=False, with_keys=True).as_numpy_iterator():
        original = tf.io.decode_jpeg(tf.io.read_file(os.path.join(folder, x["key"].decode())), channels=3)
        if not (original.numpy() == x["image"]).all():
            raise SystemExit(f"PCR's pixels differ from {x['key'].decode()}'s: the transcode is not lossless")


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
    common.pass_of(ds)()  # warms the page cache
    run = common.pass_of(ds.repeat(epochs))
    return tfliquid.PCRDataset(path).bytes_per_epoch() * epochs / min(run().seconds for _ in range(3))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_photo_arguments(parser)
    parser.add_argument(
        "--bandwidth",
        type=float,
        default=None,
        help="throttled runs' bytes/s (default: 0.7 x the slowest unthrottled byte rate)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of turns, unthrottled (throttled: 3)")
    parser.add_argument("--scan-script", default="fast", help="of the PCR dataset: standard, fast or a file")
    args = parser.parse_args()

    folder = common.photo_folder_of(args)
    tfrecord = os.path.join(args.workdir, f"photos-{args.images_per_class}x{args.size}.tfrecord")
    script_name = os.path.basename(args.scan_script)
    pcr = os.path.join(args.workdir, f"photos-{args.images_per_class}x{args.size}-pcr-{script_name}")
    if not os.path.exists(tfrecord):
        sample_photos.write_tfrecords(folder, tfrecord + ".tmp")
        os.replace(tfrecord + ".tmp", tfrecord)
    tfliquid.pcr.convert(folder, pcr, images_per_record=128, scan_script=args.scan_script, progress=False)
    progressive_tfrecord = pcr + ".tfrecord"
    write_progressive_tfrecords(pcr, progressive_tfrecord)
    info = tfliquid.pcr.inspect(pcr)
    n = info.images
    groups = [*range(1, len(info.scan_groups)), None]  # None: full fidelity
    group_bytes = {g: info.scan_groups[(g or len(info.scan_groups)) - 1].read_bytes for g in groups}
    readers = [
        ("TFRecord, original JPEGs", lambda t: tfrecord_pipeline(tfrecord, t), os.path.getsize(tfrecord)),
        (
            "TFRecord, PCR's JPEGs",
            lambda t: tfrecord_pipeline(progressive_tfrecord, t),
            os.path.getsize(progressive_tfrecord),
        ),
    ]
    readers += [(f"PCR group {g or 'full'}", lambda t, g=g: pcr_pipeline(pcr, g), group_bytes[g]) for g in groups]

    check_same_pixels(pcr, folder)
    print(
        f"{n} JPEG crops ({args.size}x{args.size}) of the shipped photos, decoded to pixels; "
        f"{os.cpu_count()} cores; {args.rounds} rounds (throttled: 3); PCR scan script: {script_name}"
    )
    free_epochs = {name: common.pass_of(make(False)) for name, make, _ in readers}
    if dali_peer.available():
        free_epochs["DALI, original JPEGs"] = dali_peer.image_folder_epoch(folder, n)
    else:
        print("(NVIDIA DALI does not import here: its peer is left out)")
    free = common.round_robin(free_epochs, args.rounds)
    bandwidth = args.bandwidth or 0.7 * min(statistics.median(free[name]) * size / n for name, _, size in readers)
    tfliquid.io.set_read_bandwidth(bandwidth)
    throttled = common.round_robin({name: common.pass_of(make(True).repeat(2)) for name, make, _ in readers}, 3)
    tfliquid.io.set_read_bandwidth(None)

    print(f"{'reader':<26}{'bytes/image':>12}{'img/s':>22}{'img/s @ ' + f'{bandwidth / 1e6:.2g} MB/s':>24}")
    sizes = {name: size for name, _, size in readers}
    for name in free:
        size = f"{sizes[name] / n:,.0f}" if name in sizes else "-"
        at_budget = common.median_and_range(throttled[name], "{:,.0f}") if name in throttled else "-"
        print(f"{name:<26}{size:>12}{common.median_and_range(free[name], '{:,.0f}'):>22}{at_budget:>24}")

    reader = reader_bytes_per_second(pcr, 10)
    print(f"PCR reader alone (full fidelity, no decode, one thread): {reader / 2**30:.2f} GiB/s")

    print("\nTargets (median of per-round ratios [range]):")
    full = "PCR group full"
    for g in groups[:-1]:
        bytes_ratio = sizes[full] / sizes[f"PCR group {g}"]
        common.verdict(
            f"throttled speedup of group {g} / (0.9 x bytes ratio {bytes_ratio:.2f})",
            common.ratios(throttled[f"PCR group {g}"], throttled[full], 0.9 * bytes_ratio),
            1.0,
        )
    same, original = "TFRecord, PCR's JPEGs", "TFRecord, original JPEGs"
    common.verdict(
        "full-fidelity PCR / TFRecord of the same JPEGs, unthrottled", common.ratios(free[full], free[same]), 0.95
    )
    common.verdict(
        "full-fidelity PCR / TFRecord of the same JPEGs, throttled",
        common.ratios(throttled[full], throttled[same]),
        0.95,
    )
    common.verdict("PCR reader alone, GiB/s on one thread", reader / 2**30, 1.0)
    common.verdict(
        "full-fidelity PCR / TFRecord of the original baseline JPEGs, unthrottled",
        common.ratios(free[full], free[original]),
        0.8,
    )
    print("\nFor information (median [range]):")
    print(
        f"  full-fidelity PCR, I/O-bound, / TFRecords of the original JPEGs: "
        f"{common.median_and_range(common.ratios(throttled[full], throttled[original]))} "
        f"(it reads {sizes[full] / sizes[original]:.2f}x the bytes)"
    )
    print(
        f"  scan group 2, I/O-bound, / TFRecords of the original JPEGs: "
        f"{common.median_and_range(common.ratios(throttled['PCR group 2'], throttled[original]))}"
    )
    if "DALI, original JPEGs" in free:
        for name in (original, full, "PCR group 2"):
            print(
                f"  {name}, unthrottled, / DALI on the original JPEG files: "
                f"{common.median_and_range(common.ratios(free[name], free['DALI, original JPEGs']))}"
            )


if __name__ == "__main__":
    main()
