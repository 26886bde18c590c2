"""The `tfliquid` command: a thin layer over the Python API.

    tfliquid convert pcr SRC DST [--images-per-record N] [--seed S] [--quality Q] [--verify] ...
    tfliquid convert l3 SRC DST [--profile {default,paper}] [--workers N] [--verify] [--overwrite] ...
    tfliquid inspect PATH
    tfliquid cache simulate [--items N] [--capacity F] [--epochs E] [--seed S] [--policies minio,lru,opt]
"""

from __future__ import annotations

import argparse
import os
import sys


def _add_convert_pcr(commands):
    p = commands.add_parser("pcr", help="image folder or TFRecords -> Progressive Compressed Records",
                            description="Convert an image folder tree (one subfolder per class) or TFRecord files "
                                        "of tf.train.Example into a PCR dataset. JPEGs are made progressive "
                                        "losslessly; other images are re-encoded as JPEG (lossy). Rerunning the "
                                        "same command resumes an interrupted conversion.")
    p.add_argument("src", help="image folder, or TFRecord file / glob / directory")
    p.add_argument("dst", help="dataset directory to create or resume")
    p.add_argument("--images-per-record", type=int, default=1024, help="images per record file (default 1024)")
    p.add_argument("--seed", type=int, default=0, help="seed of the image-to-record shuffle (default 0)")
    p.add_argument("--quality", type=int, default=90,
                   help="JPEG quality for non-JPEG inputs, which are re-encoded lossily (default 90)")
    p.add_argument("--keep-metadata", action="store_true", help="keep APPn/COM segments (EXIF, ICC) of JPEGs")
    p.add_argument("--verify", action="store_true",
                   help="read every record back and check that full fidelity decodes to the source pixels")
    p.add_argument("--format", dest="source_format", choices=["auto", "folder", "tfrecord"], default="auto")
    p.add_argument("--image-key", default="image/encoded", help="TFRecord feature with the image bytes")
    p.add_argument("--label-key", default="image/class/label", help="TFRecord int64 feature with the label")
    p.add_argument("--key-feature", default="image/filename", help="TFRecord feature used as the image key")
    p.add_argument("--compression", choices=["auto", "none", "gzip", "zlib"], default="auto",
                   help="TFRecord compression (default: from the file extension)")
    p.add_argument("--overwrite", action="store_true", help="replace a different conversion found at DST")
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    def run(args):
        from tfliquid.convert import pcr

        compression = {"auto": None, "none": "", "gzip": "GZIP", "zlib": "ZLIB"}[args.compression]
        report = pcr.convert(args.src, args.dst, images_per_record=args.images_per_record, seed=args.seed,
                             quality=args.quality, keep_markers=args.keep_metadata, verify=args.verify,
                             source_format=args.source_format, image_key=args.image_key,
                             label_key=args.label_key, key_feature=args.key_feature, compression=compression,
                             overwrite=args.overwrite, progress=not args.quiet)
        print(report)

    p.set_defaults(run=run)


def _add_convert_l3(commands):
    p = commands.add_parser("l3", help="image folder tree -> the same tree of lossless L3 files",
                            description="Convert every image under SRC (PNG, BMP, GIF, TIFF, PPM/PGM, WebP, JPEG) "
                                        "into an .l3 file at the same relative path under DST, without loss of "
                                        "the decoded pixels. Rerunning skips the files already converted. Exits "
                                        "with status 1 if any image failed; the others are converted.")
    p.add_argument("src", help="image folder (searched recursively) or a single image")
    p.add_argument("dst", help="destination folder (for a single image: a folder or a .l3 file)")
    p.add_argument("--profile", choices=["default", "paper"], default="default",
                   help="encoder settings: 'default' (smaller) or 'paper' (as published) (default: default)")
    p.add_argument("--workers", type=int, default=None, help="images converted at once (default: one per CPU)")
    p.add_argument("--verify", action="store_true",
                   help="decode every written file and check that it holds exactly the source pixels")
    p.add_argument("--overwrite", action="store_true", help="convert again the files already converted")
    p.add_argument("--reduce-16bit", action="store_true",
                   help="store 16-bit images by their high byte (lossy) instead of refusing them")
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    def run(args):
        from tfliquid.convert import l3

        report = l3.convert(args.src, args.dst, profile=args.profile, workers=args.workers, verify=args.verify,
                            overwrite=args.overwrite, progress=not args.quiet, reduce_16bit=args.reduce_16bit)
        print(report)
        if report.failures:
            print(f"tfliquid: error: {len(report.failures)} images could not be converted (listed above)",
                  file=sys.stderr)
            return 1
        return 0

    p.set_defaults(run=run)


def _add_inspect(commands):
    p = commands.add_parser("inspect", help="size per scan group, images, records and classes of a PCR dataset")
    p.add_argument("path")

    def run(args):
        from tfliquid import pcr

        print(pcr.format_inspection(pcr.inspect(args.path)))

    p.set_defaults(run=run)


def _add_cache_simulate(commands):
    p = commands.add_parser("simulate", help="per-epoch hit ratios of cache policies under per-epoch shuffling",
                            description="Simulate an access trace (every epoch reads every item once, in a fresh "
                                        "random order) through MinIO, LRU (the page cache) and Belady's OPT.")
    p.add_argument("--items", type=int, default=10_000, help="items in the dataset (default 10000)")
    p.add_argument("--capacity", type=float, default=0.5,
                   help="cache size: a fraction of the dataset if < 1, else a number of items (default 0.5)")
    p.add_argument("--epochs", type=int, default=5, help="epochs (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffles (default 0)")
    p.add_argument("--policies", default="minio,lru,opt", help="comma-separated (default minio,lru,opt)")

    def run(args):
        from tfliquid.cache.simulation import simulate

        capacity = round(args.capacity * args.items) if args.capacity < 1 else int(args.capacity)
        results = [simulate(policy, args.items, capacity, args.epochs, args.seed)
                   for policy in args.policies.split(",")]
        print(f"{args.items} items, cache of {capacity} ({capacity / args.items:.1%}); hit ratio per epoch")
        print("epoch  " + "".join(f"{r.policy:>8}" for r in results))
        for epoch in range(args.epochs):
            print(f"{epoch:>5}  " + "".join(f"{r.hit_ratios[epoch]:>8.4f}" for r in results))

    p.set_defaults(run=run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfliquid", description="tf.data extensions that remove data stalls")
    commands = parser.add_subparsers(dest="command", required=True)
    convert = commands.add_parser("convert", help="convert a dataset to a tfliquid format")
    formats = convert.add_subparsers(dest="format", required=True)
    _add_convert_pcr(formats)
    _add_convert_l3(formats)
    _add_inspect(commands)
    cache = commands.add_parser("cache", help="MinIO cache tools")
    _add_cache_simulate(cache.add_subparsers(dest="tool", required=True))
    return parser


def main(argv=None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up chatter out of the output
    args = build_parser().parse_args(argv)
    from tfliquid.convert.common import ConversionError
    from tfliquid.formats.pcr import PCRFormatError

    try:
        return args.run(args) or 0  # a command returns 1 when some of its items failed, or nothing
    except (ConversionError, PCRFormatError, FileNotFoundError, ValueError) as e:
        print(f"tfliquid: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
