"""The `tfliquid` command: a thin layer over the Python API, one grammar for every command (docs/cli.md).

    tfliquid VERB [KIND] OPERANDS... [--options]

The verb comes first; a kind follows when the verb applies to several (`convert pcr|l3|liquid`, `profile liquid`,
`simulate cache`);
operands are in data-flow order (source, then destination). Options have one spelling across commands (`--seed`,
`--workers`, `--verify`, `--overwrite`, `--quiet` for no progress, `--verbose` for TensorFlow's own log, and
Beam's with `--runner beam`). Exit status: 0 done, 1 failed (or some images were rejected, listed in the report),
2 usage error (an operand refused before working included), 130 interrupted, 141 stdout closed early.

Each command calls the Python functions its parser's `api` default names, every option's dest being the name of a
parameter of one of them (`_call`), except the options its `not_parameters` default lists, which the command
handles itself; docs/cli.md's table names the same functions (tests/test_cli.py checks both).

    tfliquid convert pcr SRC DST [--images-per-record N] [--seed S] [--quality Q] [--workers N] [--verify] ...
    tfliquid convert l3 SRC DST [--profile {default,paper}] [--workers N] [--verify] [--overwrite] ...
    tfliquid convert liquid SRC DST --formats l3,raw --ratio 3:7 [--size-only] [--seed S] [--verify] ...
    tfliquid profile liquid SRC --formats png,raw [--read-bandwidth B] [--exhaustive] [--plot F] [--write DST]
    tfliquid inspect PATH
    tfliquid simulate cache [--items N] [--capacity F] [--epochs E] [--seed S] [--policies minio,lru,opt]
                            [--workers N] [--prefetch-bandwidth B] [--batch-size N] [--read-threads T]
    tfliquid serve dispatcher --port P --work-dir D [--no-fault-tolerance] [--worker-addresses HOST:PORT,...]
    tfliquid serve worker --dispatcher HOST:P --port Q [--worker-address HOST]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import sys
import typing

from tfliquid._common import stderr
from tfliquid._common.errors import ArgumentError, OperandError, PathError, TfliquidError
from tfliquid._common.words import counted
from tfliquid._version import __version__

EXIT_FAILED = 1
# As argparse exits on a malformed command line; also an option value or operand the API refuses before working.
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a command killed by writing to a closed pipe exits with in a shell
USAGE_ERRORS = (ArgumentError, PathError, OperandError)


def _common_options(progress: bool, conversion: bool = False) -> argparse.ArgumentParser:
    """The options every command takes; --quiet for long jobs, --fail-fast for conversions."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--verbose", action="store_true", help="show TensorFlow's own log on stderr (and Beam's, with --runner beam)"
    )
    if progress:
        options.add_argument("--quiet", action="store_true", help="no progress on stderr")
    if conversion:
        options.add_argument(
            "--fail-fast",
            action="store_true",
            help="stop at the first image that cannot be converted (default: leave it out, list it with the reason "
            "in the report, and exit with status 1)",
        )
        options.add_argument(
            "--runner",
            choices=["local", "beam"],
            default="local",
            help="where the images are converted: 'local' (this process, every core) or 'beam' (an Apache Beam "
            "pipeline writing the same bytes; pip install 'tfliquid[beam]') (default: local)",
        )
        _workers_argument(options)
        options.add_argument(
            "--verify",
            action="store_true",
            help="read everything written back and check that each image decodes to its source's pixels (an image "
            "stored with a declared loss: to the pixels stored); convert pcr also decodes every scan group with the "
            "dataset's decoder against TensorFlow's. An image that fails is rejected with the reason",
        )
        options.add_argument(
            "--overwrite",
            action="store_true",
            help="convert again over what an earlier run left at DST: another conversion there is replaced "
            "(convert pcr, convert liquid), the files already converted are converted again (convert l3)",
        )
        options.add_argument(
            "--beam-options",
            metavar="'--FLAG=VALUE ...'",
            help="Beam's pipeline options, e.g. '--runner=FlinkRunner --flink_master=HOST:8081' (default: the "
            "DirectRunner with one worker process per core)",
        )
    return options


def _workers_argument(p) -> None:
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="threads converting images at once, with the local runner; the same bytes are written whatever their "
        "number (default: one per CPU; with --runner beam, Beam's --direct_num_workers=N instead)",
    )


def _source_options() -> argparse.ArgumentParser:
    """How to read a source of images: an image folder, or TFRecords of tf.train.Example (the API's
    tfliquid.io.sources.SourceOptions, one option each)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--format",
        dest="source_format",
        choices=["auto", "folder", "tfrecord"],
        default="auto",
        help="what SRC is: an image folder with one subfolder per class, or TFRecord files (default: auto, a folder "
        "of subfolders is an image folder)",
    )
    options.add_argument("--image-key", default="image/encoded", help="TFRecord feature with the image bytes")
    options.add_argument("--label-key", default="image/class/label", help="TFRecord int64 feature with the label")
    options.add_argument("--key-feature", default="image/filename", help="TFRecord feature used as the image key")
    options.add_argument(
        "--compression",
        type=_compression,
        default=None,
        metavar="{auto,none,gzip,zlib}",
        help="TFRecord compression (default: auto, from the file extension)",
    )
    return options


def _compression(name: str) -> str | None:
    """The API's compression= of a --compression name."""
    names = {"auto": None, "none": "", "gzip": "GZIP", "zlib": "ZLIB"}
    if name not in names:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(names)}, got {name!r}")
    return names[name]


def resolve(name: str):
    """The function of a dotted name of the API, e.g. "tfliquid.pcr.convert"."""
    module, attribute = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), attribute)


def parameter_names(function) -> set[str]:
    """The keywords `function` takes: its parameters, and the keys of the TypedDict its **options unpack."""
    names = set(inspect.signature(function).parameters)
    for hint in typing.get_type_hints(function, include_extras=True).values():
        if typing.get_origin(hint) is typing.Unpack:  # **options: Unpack[SomeOptions]
            names |= set(typing.get_type_hints(typing.get_args(hint)[0]))
    return names


def _call(function, args, **given):
    """function(**given, and each option parsed into `args` whose name is one of the function's parameters, or of
    the TypedDict its **options unpack): every option's dest is its parameter's name (--images-per-record is
    images_per_record=), so no command lists the API's keywords again. --quiet and --fail-fast become progress=
    and on_error= where the function takes them, --verbose becomes beam_log=."""
    names = parameter_names(function)
    parsed = vars(args)
    if "quiet" in parsed:
        parsed = {**parsed, "progress": not args.quiet}
    if "verbose" in parsed:
        parsed = {**parsed, "beam_log": args.verbose}
    if "fail_fast" in parsed:
        parsed = {**parsed, "on_error": "raise" if args.fail_fast else "reject"}
    return function(**given, **{name: value for name, value in parsed.items() if name in names and name not in given})


def _report_exit(report) -> int:
    """Prints a conversion report; status 1 when some images were rejected (they are listed in it, and in the file
    it names)."""
    print(report)
    if report.failures:
        where = f"in {report.rejected_list}" if report.rejected_list else "above"
        print(
            f"tfliquid: error: {counted(len(report.failures), 'image')} could not be converted (listed {where})",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return 0


def _add_converter(kinds, kind: str, add_arguments, *, reads_sources: bool, **parser_texts):
    """`convert KIND SRC DST`: the API's tfliquid.KIND.convert with the options of _common_options (and of
    _source_options where it reads image folders or TFRecords) and the ones `add_arguments` adds."""
    parents = [_common_options(progress=True, conversion=True)] + ([_source_options()] if reads_sources else [])
    p = kinds.add_parser(kind, parents=parents, **parser_texts)
    add_arguments(p)

    def run(args):
        report = _call(resolve(f"tfliquid.{kind}.convert"), args)
        if getattr(args, "size_only", False):  # convert liquid --size-only: the prediction, nothing written
            print(f"{args.dst}: {report.prediction}")
            return 0
        return _report_exit(report)

    p.set_defaults(run=run, api=(f"tfliquid.{kind}.convert",))


def _pcr_arguments(p):
    p.add_argument("src", help="image folder, or TFRecord file / glob / directory")
    p.add_argument("dst", help="dataset directory to create or resume")
    p.add_argument("--images-per-record", type=int, default=1024, help="images per record file (default 1024)")
    p.add_argument("--seed", type=int, default=0, help="seed of the image-to-record shuffle (default 0)")
    p.add_argument(
        "--quality",
        type=int,
        default=90,
        help="JPEG quality for non-JPEG inputs, which are re-encoded lossily (default 90)",
    )
    p.add_argument(
        "--keep-metadata", dest="keep_markers", action="store_true", help="keep APPn/COM segments (EXIF, ICC) of JPEGs"
    )
    p.add_argument(
        "--scan-script",
        default="fast",
        metavar="fast|standard|FILE",
        help="the progressive scans, hence the scan groups: 'fast' (spectral selection only: full fidelity decodes "
        "about as fast as baseline JPEG), 'standard' (jpegtran -progressive: more quality per byte at low groups) or "
        "a file in jpegtran's -scans syntax (default: fast)",
    )
    p.add_argument(
        "--rescript-progressive",
        action="store_true",
        help="give progressive inputs the scan script too (losslessly) instead of keeping their own scans; one whose "
        "scans leave coefficients out (its decoders smooth over them) is rejected, as its pixels would change",
    )


def _l3_arguments(p):
    p.add_argument("src", help="image folder (searched recursively) or a single image")
    p.add_argument("dst", help="destination folder (for a single image: a folder or a .l3 file)")
    p.add_argument(
        "--profile",
        choices=["default", "paper"],
        default="default",
        help="encoder settings: 'default' (smaller) or 'paper' (as published) (default: default)",
    )
    _reduce_16bit_argument(p)


def _reduce_16bit_argument(p):
    p.add_argument(
        "--reduce-16bit",
        action="store_true",
        help="store 16-bit images by their high byte (lossy) instead of refusing them",
    )


def _liquid_arguments(p):
    p.add_argument("src", help="image folder, or TFRecord file / glob / directory")
    p.add_argument("dst", help="dataset directory to create or resume")
    p.add_argument("--formats", default="png,raw", help="formats to mix, of raw, png, jpeg, l3 (default png,raw)")
    p.add_argument("--ratio", help="one integer weight per format, e.g. 3:7 (tfliquid profile liquid finds one)")
    p.add_argument("--channels", type=int, choices=[1, 3], default=3, help="channels stored and decoded (default 3)")
    p.add_argument("--images-per-record", type=int, default=16, help="images per record file (default 16)")
    p.add_argument("--seed", type=int, default=0, help="seed of the format assignment and records (default 0)")
    p.add_argument("--png-compression", type=int, default=6, help="zlib level of png items, 0-9 (default 6)")
    p.add_argument(
        "--l3-profile",
        choices=["default", "paper"],
        default="default",
        help="encoder settings of l3 items, as convert l3's --profile (default: default)",
    )
    p.add_argument(
        "--jpeg-quality", type=int, default=90, help="for jpeg items of non-JPEG sources (lossy) (default 90)"
    )
    _reduce_16bit_argument(p)
    p.add_argument("--size-only", action="store_true", help="predict the dataset's size and write nothing")


def _add_profile_liquid(kinds):
    p = kinds.add_parser(
        "liquid",
        parents=[_common_options(progress=True), _source_options()],
        help="find the ratio of two formats that reads the most images per second",
        description="On a seeded sample of SRC, measure each format's bytes per image and decode rate and the "
        "storage bandwidth, then run the Liquid paper's binary search over the 11 ratios 0:10 ... 10:0, measuring "
        "every ratio it probes through the real pipeline. Prints the table and the chosen ratio.",
    )
    p.add_argument("src", help="image folder, or TFRecord file / glob / directory")
    p.add_argument("--formats", default="png,raw", help="two formats: the compact one and raw (default png,raw)")
    p.add_argument("--sample", type=int, default=256, help="images sampled from SRC (default 256)")
    p.add_argument(
        "--read-bandwidth",
        type=float,
        help="storage bandwidth in bytes/s, applied by tfliquid's read throttle (default: measure the storage of "
        "--workdir with its page cache dropped)",
    )
    p.add_argument("--exhaustive", action="store_true", help="measure all 11 ratios, not only the probed ones")
    p.add_argument("--batch-size", type=int, default=64, help="of the measured pipeline (default 64)")
    p.add_argument(
        "--images-per-record", type=int, default=16, help="of the sample datasets, as DST will be (default 16)"
    )
    p.add_argument("--epochs", type=int, default=3, help="timed passes per measurement, median taken (default 3)")
    p.add_argument(
        "--pass-images",
        type=int,
        default=1024,
        help="images per timed pass: the sample read over and over, for the steady rate (default 1024; "
        "measured storage reads the sample once per pass)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the sample, and of the --write dataset (default 0)")
    p.add_argument("--workdir", help="where the sample datasets are written (default: a temporary directory)")
    _workers_argument(p)
    p.add_argument("--plot", metavar="FILE.png", help="save throughput against ratio as a PNG (needs matplotlib)")
    p.add_argument("--write", metavar="DST", help="then convert all of SRC to DST at the chosen ratio")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="with --write: let the conversion replace what DST holds (a conversion of the same choice is resumed)",
    )

    def run(args):
        from tfliquid import liquid
        from tfliquid._common.errors import ConversionError
        from tfliquid._common.plots import check_plot_path
        from tfliquid.liquid.profiling import profile
        from tfliquid.records.job import check_destination

        # Checked before the profile, which takes minutes: what could only fail after it.
        if args.plot:
            check_plot_path("--plot", args.plot)
        if args.write:
            try:
                check_destination(args.src, args.write)
            except ConversionError as e:
                raise ArgumentError(f"--write: {e}") from None
            if os.path.isdir(args.write) and os.listdir(args.write) and not args.overwrite:
                raise ArgumentError(
                    f"--write {args.write} is not empty; give --overwrite to let the conversion replace what it holds "
                    "(one of the same ratio and settings is resumed), or a new directory"
                )
        result = _call(profile, args)
        print(result)
        if args.plot:
            result.plot(args.plot)
            print(f"plot: {args.plot}")
        if args.write:
            converted = _call(liquid.convert, args, dst=args.write, formats=result.formats, ratio=result.ratio)
            return _report_exit(converted)
        return 0

    # --plot FILE is the result's plot(FILE); --write DST converts SRC at the chosen ratio, with --overwrite.
    p.set_defaults(
        run=run, api=("tfliquid.liquid.profiling.profile", "tfliquid.liquid.convert"), not_parameters=("plot", "write")
    )


def _add_inspect(verbs):
    p = verbs.add_parser(
        "inspect",
        parents=[_common_options(progress=False)],
        help="what a tfliquid dataset holds (PCR: size per scan group; Liquid: images and bytes per format)",
        description="Print what the dataset at PATH holds, read from its index or manifest alone: of a PCR dataset "
        "its images, records and classes and the bytes per image at each scan group (the PCR paper's Table 1); of a "
        "Liquid dataset its images, records and bytes per format and the ratio.",
    )
    p.add_argument("path", metavar="PATH", help="the dataset directory (PCR or Liquid)")

    def run(args):
        print(_call(resolve("tfliquid.inspect"), args))

    p.set_defaults(run=run, api=("tfliquid.inspect",))


def _add_simulate_cache(kinds):
    p = kinds.add_parser(
        "cache",
        parents=[_common_options(progress=True)],
        help="hit ratios of cache policies under per-epoch shuffling, on one worker or several",
        description="Simulate an access trace (every epoch reads every item once, in a fresh "
        "random order) through MinIO, LRU (the page cache) and Belady's OPT. With --workers, each worker reads its "
        "slice of a seeded order through a cache of its own (--capacity per worker), and the policies include NoPFS's "
        "placement and the clairvoyant policy (docs/cache.md).",
    )
    p.add_argument(
        "--items",
        dest="num_items",
        metavar="N",
        type=_whole(1),
        default=10_000,
        help="items in the dataset (default 10000)",
    )
    p.add_argument(
        "--capacity",
        type=_cache_size,
        default=0.5,
        help="cache size: a fraction of the dataset if < 1, else a whole number of items (default 0.5)",
    )
    p.add_argument("--epochs", type=_whole(1), default=5, help="epochs (default 5)")
    p.add_argument("--seed", type=_whole(0), default=0, help="seed of the shuffles (default 0)")
    p.add_argument(
        "--policies",
        help="comma-separated (default minio,lru,opt; with --workers: minio,lru,nopfs,clairvoyant,opt)",
    )
    p.add_argument(
        "--workers",
        dest="num_workers",
        metavar="N",
        type=_whole(1),
        help="data-parallel workers, each with its own cache of --capacity: a table of hit ratio, storage reads and "
        "imbalance instead of per-epoch hit ratios",
    )
    p.add_argument(
        "--prefetch-bandwidth",
        type=float,
        default=0.0,
        help="with --workers: background reads per read the clairvoyant policy may spend on prefetching (default 0)",
    )
    p.add_argument(
        "--batch-size",
        type=_whole(1),
        default=32,
        help="with --workers: each worker's reads per training step (default 32)",
    )
    p.add_argument(
        "--read-threads",
        type=_whole(1),
        help="with --workers: the node's read threads, split equally and by Lobster's rule (default 4 per worker)",
    )

    def run(args):
        print(_call(resolve("tfliquid.cache.simulate_policies"), args))

    p.set_defaults(run=run, api=("tfliquid.cache.simulate_policies",))


def _whole(least: int):
    """An argparse type: a whole number >= least."""

    def parse(text: str) -> int:
        if not text.lstrip("-").isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {least}, got {text!r}")
        return int(text)

    return parse


def _cache_size(text: str) -> float:
    """An argparse type: a fraction of the dataset in [0, 1), or a whole number of items."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value < 1 or (value >= 1 and math.isfinite(value) and value == int(value))):
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1) or a whole number of items, got {text!r}")
    return value


def _add_analyze(verbs):
    whole = _whole

    def byte_count(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a number of bytes >= 0, got {text!r}")
        return value

    p = verbs.add_parser(
        "analyze",
        parents=[_common_options(progress=True)],
        help="where training stalls on input (fetch or prep), what each change would reach, and what to change",
        description="Run DS-Analyzer's differential phases on a training script's model and input pipeline, "
        "predict the rate of every change tfliquid offers, and recommend the cheapest that removes the dominant "
        "stall (docs/analysis.md).",
    )
    p.add_argument(
        "script",
        help="a Python file defining model(), which returns a compiled Keras model, and dataset(), which returns a "
        "tfliquid.analysis.InputPipeline (pcr_pipeline(...) or file_pipeline(...)), not a tf.data.Dataset; "
        "examples/analyze_pcr.py is one",
    )
    p.add_argument("--steps", type=whole(1), default=20, help="train steps timed for the ingestion rate (default 20)")
    p.add_argument(
        "--subset",
        dest="subset_items",
        metavar="N",
        type=whole(1),
        default=None,
        help="items read per phase (default: 16 batches)",
    )
    p.add_argument(
        "--memory-budget",
        dest="memory_budget_bytes",
        metavar="BYTES",
        type=byte_count,
        default=None,
        help="bytes the recommended cache may take (default: half of this machine's memory)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="measurements made in turns once or twice instead of 5 times, and shorter: less than half the time, the "
        "predictions scatter more",
    )
    p.add_argument("--json", dest="json_path", help="also write the report as JSON to this file")
    p.add_argument(
        "--plot",
        dest="plot_path",
        help="also plot the rate against cache size to this PNG (needs matplotlib: pip install tfliquid[plot])",
    )

    def run(args):
        import types

        from tfliquid._common.checks import check_output_file
        from tfliquid._common.plots import check_plot_path
        from tfliquid.analysis import InputPipeline, analyze

        # Checked before the analysis, which takes minutes: what could only fail after it.
        if args.json_path:
            check_output_file("--json", args.json_path)
        if args.plot_path:
            check_plot_path("--plot", args.plot_path)
        if not os.path.isfile(args.script):
            raise PathError(f"{args.script}: no such file")
        # A module kept in sys.modules (runpy.run_path's is gone once it returns): AutoGraph looks a function's module
        # up there, and without it warns "Please report this to the TensorFlow team" on every lambda of the script.
        module = sys.modules["tfliquid_analyze_script"] = types.ModuleType("tfliquid_analyze_script")
        module.__file__ = os.path.abspath(args.script)
        with open(args.script, "rb") as f:
            exec(compile(f.read(), module.__file__, "exec"), vars(module))
        script = vars(module)
        missing = [name for name in ("model", "dataset") if not callable(script.get(name))]
        if missing:
            raise ArgumentError(
                f"{args.script} must define {' and '.join(f'{name}()' for name in missing)}: model() returns a "
                "compiled Keras model, dataset() a tfliquid.analysis.InputPipeline"
            )
        pipeline = script["dataset"]()
        if not isinstance(pipeline, InputPipeline):
            raise ArgumentError(
                f"{args.script}: dataset() must return a tfliquid.analysis.InputPipeline, e.g. "
                f"tfliquid.analysis.pcr_pipeline(path, preprocess, batch_size), not a {type(pipeline).__name__}: "
                "the analysis rebuilds the reads and the prep apart"
            )
        report = _call(analyze, args, model=script["model"](), pipeline=pipeline)
        print(report)
        if args.json_path:
            with open(args.json_path, "w") as f:
                f.write(report.to_json())
        if args.plot_path:
            report.plot(args.plot_path)
            print(f"plot: {args.plot_path}")

    # SCRIPT's model() and dataset() are model= and pipeline=; --json and --plot write the report's to_json() and
    # plot(FILE).
    p.set_defaults(run=run, api=("tfliquid.analysis.analyze",), not_parameters=("script", "json_path", "plot_path"))


def _add_serve_dispatcher(kinds):
    p = kinds.add_parser(
        "dispatcher",
        parents=[_common_options(progress=False)],
        help="a tf.data service dispatcher with tfliquid's ops, fault-tolerant (until SIGTERM or Ctrl-C)",
        description="Start a tf.data service dispatcher with tfliquid's ops loaded. In fault-tolerant mode (the "
        "default) it journals its state in --work-dir before answering, so that restarted with the same --port and "
        "--work-dir it resumes its jobs. SIGTERM or Ctrl-C stops it cleanly (exit status 0) (docs/scale-out.md).",
    )
    p.add_argument("--port", type=int, required=True, help="port it listens on, for workers and clients")
    p.add_argument(
        "--work-dir",
        help="its journal and registered datasets (created if missing; required unless --no-fault-tolerance)",
    )
    p.add_argument(
        "--no-fault-tolerance",
        dest="fault_tolerant",
        action="store_false",
        help="keep the state in memory only: a restart forgets every job",
    )
    p.add_argument(
        "--worker-addresses",
        metavar="HOST:PORT,...",
        help="every worker, in order, for static sharding (ShardingPolicy.HINT; partitioned caching)",
    )

    def run(args):
        from tfliquid import service

        addresses = args.worker_addresses.split(",") if args.worker_addresses else None
        _call(service.serve_dispatcher, args, worker_addresses=addresses)

    p.set_defaults(run=run, api=("tfliquid.service.serve_dispatcher",))


def _add_serve_worker(kinds):
    p = kinds.add_parser(
        "worker",
        parents=[_common_options(progress=False)],
        help="a tf.data service worker with tfliquid's ops (until SIGTERM or Ctrl-C)",
        description="Start a tf.data service worker with tfliquid's ops loaded before any dataset graph arrives, "
        "registered with the dispatcher at --dispatcher. SIGTERM or Ctrl-C stops it cleanly (exit status 0) "
        "(docs/scale-out.md).",
    )
    p.add_argument("--dispatcher", required=True, metavar="HOST:PORT", help="the dispatcher's address")
    p.add_argument("--port", type=int, required=True, help="port it serves elements on")
    p.add_argument(
        "--worker-address",
        metavar="HOST",
        help="host name clients reach this worker at (default: this machine's name)",
    )

    def run(args):
        from tfliquid import service

        _call(service.serve_worker, args)

    p.set_defaults(run=run, api=("tfliquid.service.serve_worker",))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfliquid",
        description="tf.data extensions that remove data stalls. "
        "Grammar: tfliquid VERB [KIND] OPERANDS [--options] (docs/cli.md).",
    )
    parser.add_argument("--version", action="version", version=f"tfliquid {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    convert = verbs.add_parser("convert", help="convert images to a tfliquid format (pcr, l3, liquid)")
    formats = convert.add_subparsers(dest="kind", required=True, metavar="FORMAT")
    _add_converter(
        formats,
        "pcr",
        _pcr_arguments,
        reads_sources=True,
        help="image folder or TFRecords -> Progressive Compressed Records",
        description="Convert an image folder tree (one subfolder per class) or TFRecord files of "
        "tf.train.Example into a PCR dataset. JPEGs are made progressive losslessly; "
        "other images are re-encoded as JPEG (lossy). Rerunning the same command "
        "resumes an interrupted conversion.",
    )
    _add_converter(
        formats,
        "l3",
        _l3_arguments,
        reads_sources=False,
        help="image folder tree -> the same tree of lossless L3 files",
        description="Convert every image under SRC (PNG, BMP, GIF, TIFF, PPM/PGM, WebP, JPEG) into "
        "an .l3 file at the same relative path under DST, without loss of the decoded "
        "pixels. Rerunning skips the files already converted. Exits with status 1 if "
        "any image failed; the others are converted.",
    )
    _add_converter(
        formats,
        "liquid",
        _liquid_arguments,
        reads_sources=True,
        help="image folder or TFRecords -> a Liquid dataset of mixed formats at an exact ratio",
        description="Convert an image folder tree (one subfolder per class) or TFRecord files into a Liquid "
        "dataset: each image in exactly one of the formats, their counts in the exact ratio, which image gets which "
        "format chosen by the seed (same seed, same bytes). The size is predicted first (--size-only stops there). "
        "Rerunning the same command resumes an interrupted conversion.",
    )
    _add_inspect(verbs)
    _add_analyze(verbs)
    profile = verbs.add_parser("profile", help="profile a tfliquid choice on this machine (liquid: the ratio)")
    _add_profile_liquid(profile.add_subparsers(dest="kind", required=True, metavar="KIND"))
    simulate = verbs.add_parser("simulate", help="simulate a tfliquid component (cache)")
    _add_simulate_cache(simulate.add_subparsers(dest="kind", required=True, metavar="KIND"))
    serve = verbs.add_parser("serve", help="start a tf.data service server with tfliquid's ops (dispatcher, worker)")
    servers = serve.add_subparsers(dest="kind", required=True, metavar="SERVER")
    _add_serve_dispatcher(servers)
    _add_serve_worker(servers)
    return parser


def _import_tensorflow(verbose: bool) -> None:
    if verbose:
        import tensorflow  # noqa: F401

        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # later C++ log lines, e.g. "failed call to cuInit"
    with stderr.held_back():
        import tensorflow  # noqa: F401


# Options whose value is itself a command line: argparse takes a value starting with "--" for the next option.
COMMAND_LINE_OPTIONS = ("--beam-options",)


def _attach_command_line_values(argv: list[str]) -> list[str]:
    """["--beam-options", "--runner=X"] -> ["--beam-options=--runner=X"], as argparse needs it written."""
    attached, rest = [], iter(argv)
    for arg in rest:
        value = next(rest, None) if arg in COMMAND_LINE_OPTIONS else None
        attached.append(arg if value is None else f"{arg}={value}")
    return attached


def main(argv=None) -> int:
    """Runs the command `argv` (default: sys.argv[1:]) and returns its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(_attach_command_line_values(argv))
    try:
        _import_tensorflow(args.verbose)  # every command runs tfliquid code that imports it
        status = _run(args)
        sys.stdout.flush()  # here, where a closed pipe can be told apart, not at the interpreter's exit
        return status
    except KeyboardInterrupt:
        print("\ntfliquid: interrupted (a conversion resumes when rerun)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout left (`tfliquid inspect DATASET | head`): nothing more can be shown. As Python's
        # documentation of SIGPIPE advises, stdout is pointed at /dev/null, so that flushing it at exit raises no
        # second error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(args) -> int:
    """The command's exit status; a deliberate error told in one line on stderr."""
    try:
        return args.run(args) or 0
    except USAGE_ERRORS as e:
        print(f"tfliquid: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (TfliquidError, FileNotFoundError, ValueError) as e:
        print(f"tfliquid: error: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
