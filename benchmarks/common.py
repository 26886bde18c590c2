"""What the benchmarks share: the sample-photo dataset, timing, and a verdict line per target."""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tfliquid._common.timing import PassTiming, timed_pass, turn_order  # noqa: E402
from tfliquid.samples import photos as sample_photos  # noqa: E402


def add_photo_arguments(parser, images_per_class: int = 100, size: int = 320) -> None:
    """The options that choose the benchmark's photo folder: --workdir, --images-per-class, --size."""
    parser.add_argument("--workdir", default="bench_data", help="where datasets are made (kept between runs)")
    parser.add_argument("--images-per-class", type=int, default=images_per_class, help="10 classes")
    parser.add_argument("--size", type=int, default=size, help="side of the JPEG crops in pixels")


def photo_folder_of(args) -> str:
    """The photo folder the options of add_photo_arguments choose."""
    return photo_folder(args.workdir, args.images_per_class, args.size)


def photo_folder(workdir: str, images_per_class: int, size: int) -> str:
    """An image folder of JPEG crops of the shipped photos (made once per workdir and size)."""
    folder = os.path.join(workdir, f"photos-{images_per_class}x{size}")
    if not os.path.exists(folder):
        sample_photos.write_image_folder(folder + ".tmp", images_per_class, size=size, seed=0)
        os.replace(folder + ".tmp", folder)
    return folder


def page_cached(directory: str, run):
    """`run`, after reading every file under `directory` once, untimed. Benchmarks that emulate storage with
    tfliquid's read budget mean the budget to be the only limit; a machine that reclaims idle page cache (this one
    runs DAMON's proactive pageout, which had evicted 60-75% of most Liquid datasets between two of their passes)
    would otherwise also time its disk, and the CPU its reads cost."""

    def warmed_run():
        for root, _, files in os.walk(directory):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    while f.read(8 << 20):
                        pass
        return run()

    return warmed_run


def timed(fn, repeat: int = 1) -> float:
    """Best wall time of `repeat` calls (best, not mean: the machines are shared and noise only adds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def pass_of(dataset, batch_size: int | None = 256):
    """A function that runs one timed pass over `dataset` batched as Keras consumes it (None: it yields batches
    already), its iterator's teardown timed apart (tfliquid._common.timing), and returns its PassTiming. The
    pipeline is traced here, once."""
    batches = dataset if batch_size is None else dataset.batch(batch_size)
    timed_pass(batches.take(1))
    return lambda: timed_pass(batches)


def round_robin(passes: dict, rounds: int) -> dict[str, list[float]]:
    """Rate (elements/s) of each peer in every round, the peers taking turns, in the order reversed every other
    round: the machine's speed drifts over a run (shared hosts), and taking turns exposes every peer to the same
    drift; in one fixed order each peer would always follow the same neighbour. `passes` maps a peer's name to a
    function that runs one pass and returns its PassTiming. The worst iterator teardown is printed: tf.data's
    cost per epoch, kept out of the rates."""
    rates = {name: [] for name in passes}
    order = list(passes)
    worst = 0.0
    for round_ in range(rounds):
        for name in turn_order(order, round_):
            timing: PassTiming = passes[name]()
            rates[name].append(timing.rate)
            worst = max(worst, timing.teardown_seconds)
    print(f"(worst iterator teardown in these {rounds} rounds: {worst * 1e3:.0f} ms, not counted in the rates)")
    return rates


def ratios(numerators: list[float], denominators: list[float], scale: float = 1.0) -> list[float]:
    """Per-round ratios of two peers measured in the same rounds (in turns), divided by `scale`."""
    return [a / b / scale for a, b in zip(numerators, denominators, strict=True)]


def median_and_range(values: list[float], style: str = "{:.3f}") -> str:
    return f"{style.format(statistics.median(values))} [{style.format(min(values))}-{style.format(max(values))}]"


def verdict(name: str, measured, target: float, higher_is_better: bool = True) -> bool:
    """One PASS/MISS line. `measured` is a number, or per-round values judged by their median."""
    values = measured if isinstance(measured, list) else [measured]
    value = statistics.median(values)
    ok = value >= target if higher_is_better else value <= target
    sign = ">=" if higher_is_better else "<="
    shown = median_and_range(values) if len(values) > 1 else f"{value:.3f}"
    print(f"  [{'PASS' if ok else 'MISS'}] {name}: {shown} (target {sign} {target})")
    return ok
