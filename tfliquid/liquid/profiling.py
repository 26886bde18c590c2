"""The offline profiler: which ratio of two formats gives the most images per second on this machine and storage
(the Liquid paper, section 4.1).

On a seeded sample of the source, it writes a Liquid dataset of each format alone and measures each format's
bytes per image (from the records) and its decode rate (LiquidDataset on all cores, records in the page cache,
no throttle, read for a while: the CPU side of a running pipeline, per-element overheads included; images of any
sizes, batched as their shapes), and the storage bandwidth (given, and then applied with tfliquid's read
throttle; or measured by reading record files whose page cache was dropped).
For a ratio a:b of formats F and S (a + b = 10) the images per second are predicted as

    load   = bandwidth / (a/10 * bytes_F + b/10 * bytes_S)           (storage, images/s)
    decode = 1 / (a/10 / decode_F + b/10 / decode_S)                 (CPU, images/s)
    predicted = min(load, decode)

The paper's binary search over the 11 ratios 0:10 ... 10:0 then probes the middle of the range left and keeps
the half towards the compact format when load < decode there, the other half otherwise, down to two neighbours,
and picks the better. Every probed ratio is also measured: its sample dataset is written and read through the
real pipeline (throttled, or with its page cache dropped), so the table shows prediction against measurement.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Unpack

import numpy as np
import tensorflow as tf

from tfliquid import io as tfliquid_io
from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._common.plots import pyplot, save_png
from tfliquid._common.progress import Progress
from tfliquid._common.timing import timed_pass
from tfliquid.io.sources import SourceOptions, check_source_options, open_source
from tfliquid.io.storage import drop_page_cache
from tfliquid.liquid import conversion
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid.dataset import LiquidDataset

STEPS = 10  # ratios a:b with a + b = 10: the paper's 11 candidates
MOST_PROBES = 5  # the binary search over them probes 3 to 5, as the answers fall


@dataclasses.dataclass
class RatioRow:
    """One candidate ratio `weight:STEPS-weight` (first format : second), its prediction and measurement."""

    weight: int
    load_rate: float  # images/s storage delivers at this mix
    decode_rate: float  # images/s the CPU decodes at this mix
    measured: float | None = None  # images/s through the real pipeline, if this ratio was measured

    @property
    def predicted(self) -> float:
        return min(self.load_rate, self.decode_rate)

    @property
    def ratio(self) -> str:
        return f"{self.weight}:{STEPS - self.weight}"


@dataclasses.dataclass
class LiquidProfile:
    """What `profile` measured and chose."""

    formats: list[str]
    bandwidth: float  # bytes/s
    bandwidth_source: str
    bytes_per_image: dict[str, float]
    decode_rate: dict[str, float]
    rows: list[RatioRow]  # all 11, index = weight of the first format
    probed: list[int]  # the weights the search probed, in order
    chosen: int  # weight of the first format in the chosen ratio
    sample: int

    @property
    def ratio(self) -> str:
        """The chosen ratio, e.g. "7:3" (first format : second), as `convert(ratio=...)` takes it."""
        return self.rows[self.chosen].ratio

    def __str__(self) -> str:
        first, second = self.formats
        lines = [
            f"{self.sample} sample images; storage {self.bandwidth / 1e6:,.1f} MB/s ({self.bandwidth_source})",
            *(
                f"  {name}: {self.bytes_per_image[name] / 1e3:,.1f} KB/image, decodes at "
                f"{self.decode_rate[name]:,.0f} images/s on {os.cpu_count()} cores"
                for name in self.formats
            ),
            f"{first + ':' + second:>12}{'load img/s':>12}{'decode img/s':>14}{'predicted':>11}{'measured':>10}",
        ]
        for row in self.rows:
            measured = f"{row.measured:,.0f}" if row.measured is not None else "-"
            mark = "  <- chosen" if row.weight == self.chosen else ("  (probed)" if row.weight in self.probed else "")
            lines.append(
                f"{row.ratio:>12}{row.load_rate:>12,.0f}{row.decode_rate:>14,.0f}{row.predicted:>11,.0f}"
                f"{measured:>10}{mark}"
            )
        best = self.rows[self.chosen]
        lines.append(
            f"chosen ratio {first}:{second} = {best.ratio}: predicted {best.predicted:,.0f} images/s"
            + (f", measured {best.measured:,.0f}" if best.measured is not None else "")
        )
        return "\n".join(lines)

    def plot(self, path: str) -> None:
        """Saves throughput against ratio (predicted load, decode and their minimum; measured points) as a PNG at
        `path`. Needs matplotlib (pip install 'tfliquid[plot]')."""
        plt = pyplot()
        first, second = self.formats
        x = [row.weight * 100 // STEPS for row in self.rows]
        figure, axes = plt.subplots(figsize=(6.4, 4.0))
        axes.plot(x, [r.load_rate for r in self.rows], "--", label="load (storage), predicted")
        axes.plot(x, [r.decode_rate for r in self.rows], "--", label="decode (CPU), predicted")
        axes.plot(x, [r.predicted for r in self.rows], "-", linewidth=2, label="predicted")
        measured = [(xi, r.measured) for xi, r in zip(x, self.rows) if r.measured is not None]
        if measured:
            axes.plot(*zip(*measured), "o", label="measured")
        axes.axvline(self.chosen * 100 // STEPS, color="grey", linewidth=0.8)
        axes.set_xlabel(f"share of {first} (%), the rest {second}")
        axes.set_ylabel("images/s")
        axes.set_title(f"Liquid ratio profile: {first}:{second}, chosen {self.ratio}")
        axes.set_ylim(bottom=0)
        axes.legend(fontsize="small")
        save_png(figure, path)


def predicted_rates(weight: int, bytes_per_image, decode_rate, bandwidth: float) -> tuple[float, float]:
    """(load, decode) images/s at `weight:STEPS-weight` of the two formats."""
    share = (weight / STEPS, 1 - weight / STEPS)
    load = bandwidth / sum(s * b for s, b in zip(share, bytes_per_image))
    decode = 1 / sum(s / d for s, d in zip(share, decode_rate))
    return load, decode


def search_ratio(rates: Callable[[int], tuple[float, float]], first_is_compact: bool) -> tuple[int, list[int]]:
    """The paper's binary search over weights 0..STEPS of the first format -> (chosen weight, weights probed).

    `rates(w)` gives (load, decode) at w. With load rising and decode falling towards the compact format, the
    best ratio is where they cross: a probe whose load is below its decode keeps the compact side (itself
    included), otherwise the other side, until two neighbours remain; the better of them is chosen."""

    def weight(position: int) -> int:  # positions run from the bulky format alone to the compact one alone
        return position if first_is_compact else STEPS - position

    probed, seen = [], {}

    def probe(position: int) -> float:
        w = weight(position)
        if w not in seen:
            probed.append(w)
            seen[w] = rates(w)
        return seen[w]

    low, high = 0, STEPS
    while high - low > 1:
        middle = (low + high) // 2
        load, decode = probe(middle)
        if load < decode:
            low = middle
        else:
            high = middle
    best = max((low, high), key=lambda p: (min(probe(p)), -p))
    return weight(best), probed


def profile(
    src: str,
    formats="png,raw",
    *,
    sample: int = 256,
    read_bandwidth: float | None = None,
    exhaustive: bool = False,
    batch_size: int = 64,
    images_per_record: int = 16,
    epochs: int = 3,
    pass_images: int = 1024,
    seed: int = 0,
    workdir: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    **source_options: Unpack[SourceOptions],
) -> LiquidProfile:
    """Profiles the ratio of two formats on a sample of `src` and returns the table and the choice.

    Args:
      src: an image folder or TFRecords, as `tfliquid.liquid.convert` takes them.
      formats: two formats, the compact one (png, jpeg, l3) and raw, in the order the ratio names them.
      sample: images sampled (seeded) from the source to measure on.
      read_bandwidth: storage bandwidth in bytes/s, applied through tfliquid's read throttle while measuring;
        None measures the storage the sample is written to (`workdir`), with its page cache dropped per file.
      exhaustive: measure all 11 ratios, not only those the search probes.
      batch_size, epochs: of the LiquidDataset measurements (the median of `epochs` timed passes is taken).
      pass_images: images per timed pass: the sample is read over and over in one pass until it has read this
        many (`LiquidDataset(epochs=...)`: one pipeline, its epochs following each other with no restart), so
        that filling and draining the pipeline counts little, as in a running job (short passes underrate the
        CPU-bound mixes).
        Not with measured storage (`read_bandwidth=None`), which reads each sample once per pass, its page cache
        dropped.
      images_per_record: of the sample datasets: as the dataset will be written, since it sets how bursty reads are.
      seed: of the sample and of the datasets written.
      workdir: where the sample datasets are written (default: a temporary directory, removed after).
      workers: threads converting the sample datasets, as `convert` takes it (default None: one per CPU); the
        measured pipelines read as a training job's would, whatever it is.
      **source_options: how to read SRC (`tfliquid.io.sources.SourceOptions`), as in `convert`.
    """
    names = [n.strip() for n in formats.split(",")] if isinstance(formats, str) else list(formats)
    if len(names) != 2 or len(set(names)) != 2 or set(names) - set(liquid_format.FORMATS):
        raise ArgumentError(f"profile needs two distinct formats of {liquid_format.FORMATS}, got {formats!r}")
    sample = check_int("sample", sample, 2)
    check_source_options(source_options)
    epochs = check_int("epochs", epochs, 1)
    pass_images = check_int("pass_images", pass_images, 1)
    workers = None if workers is None else check_int("workers", workers, 1)
    if read_bandwidth is not None:
        read_bandwidth = check_number("read_bandwidth", read_bandwidth, 1, what="a number of bytes/s")
    owned = workdir is None
    workdir = tempfile.mkdtemp(prefix="tfliquid-profile-") if owned else workdir
    try:
        os.makedirs(workdir, exist_ok=True)
        sample_path = _write_sample(src, os.path.join(workdir, "sample.tfrecord"), sample, seed, source_options)
        runner = _Runner(
            sample_path,
            workdir,
            names,
            batch_size,
            epochs,
            pass_images,
            seed,
            read_bandwidth,
            images_per_record,
            workers,
        )
        # The total is the most measurements the search can make; when it makes fewer, the total becomes their
        # count at the end, so the count always reaches it.
        with Progress(2 + (STEPS + 1 if exhaustive else MOST_PROBES), "measurement", progress) as bar:
            alone, decode = {}, []
            for w in (STEPS, 0):  # first alone, second alone
                alone[w] = runner.dataset(w)
                decode.append(runner.decode_rate(alone[w]))
                bar.update(len(decode))
            bytes_per_image = [runner.bytes_per_image(alone[STEPS]), runner.bytes_per_image(alone[0])]
            if read_bandwidth is not None:
                bandwidth, source_of = float(read_bandwidth), "tfliquid read throttle"
            else:  # measured on the bulkier format's records: more bytes, a steadier figure
                bulky = alone[0] if bytes_per_image[1] >= bytes_per_image[0] else alone[STEPS]
                bandwidth, source_of = _storage_bandwidth(bulky), "measured, page cache dropped"
            rows = [RatioRow(w, *predicted_rates(w, bytes_per_image, decode, bandwidth)) for w in range(STEPS + 1)]

            def measure(w: int) -> tuple[float, float]:
                rows[w].measured = runner.throughput(w)
                bar.update(2 + sum(row.measured is not None for row in rows))
                return rows[w].load_rate, rows[w].decode_rate

            first_is_compact = bytes_per_image[0] <= bytes_per_image[1]
            if (decode[0] >= decode[1]) == first_is_compact:  # one format is both smaller and faster: no trade-off
                chosen, probed = (STEPS if first_is_compact else 0), []
                measure(chosen)
            else:
                chosen, probed = search_ratio(measure, first_is_compact)
            if exhaustive:
                for w in range(STEPS + 1):
                    if rows[w].measured is None:
                        measure(w)
            bar.total = 2 + sum(row.measured is not None for row in rows)
            bar.update(bar.total)
    finally:
        if read_bandwidth is not None:
            tfliquid_io.set_read_bandwidth(None)
        if owned:
            shutil.rmtree(workdir, ignore_errors=True)
    return LiquidProfile(
        formats=names,
        bandwidth=bandwidth,
        bandwidth_source=source_of,
        bytes_per_image=dict(zip(names, bytes_per_image)),
        decode_rate=dict(zip(names, decode)),
        rows=rows,
        probed=probed,
        chosen=chosen,
        sample=runner.num_images,
    )


def _write_sample(src: str, path: str, sample: int, seed: int, source_options: dict) -> str:
    """A seeded sample of the source's images, as a TFRecord file of tf.train.Example (what convert reads)."""
    source = open_source(src, os.path.join(os.path.dirname(path), "spool.tmp"), **source_options)
    chosen = np.sort(np.random.default_rng(seed).choice(source.num_items, min(sample, source.num_items), replace=False))
    with tf.io.TFRecordWriter(path) as writer:
        for _, contents, label, key in source.read(chosen).as_numpy_iterator():
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[contents])),
                "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "image/filename": tf.train.Feature(bytes_list=tf.train.BytesList(value=[key])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return path


@dataclasses.dataclass
class _Runner:
    """Writes the sample at a ratio and measures it."""

    sample_path: str
    workdir: str
    names: list[str]
    batch_size: int
    epochs: int
    pass_images: int
    seed: int
    read_bandwidth: float | None
    images_per_record: int
    workers: int | None
    num_images: int = dataclasses.field(default=0, init=False)  # of the sample, once a dataset of it is written

    def dataset(self, weight: int) -> str:
        path = os.path.join(self.workdir, f"ratio-{weight}-{STEPS - weight}")
        pairs = [(n, w) for n, w in zip(self.names, (weight, STEPS - weight)) if w > 0]
        report = conversion.convert(
            self.sample_path,
            path,
            formats=[n for n, _ in pairs],
            ratio=[w for _, w in pairs],
            images_per_record=self.images_per_record,
            seed=self.seed,
            workers=self.workers,
            progress=False,
        )
        self.num_images = report.images
        return path

    def bytes_per_image(self, path: str) -> float:
        manifest = liquid_format.read_manifest(path)
        return liquid_format.dataset_bytes(manifest) / manifest.num_images

    def decode_rate(self, path: str) -> float:
        """Images/s of the pipeline with its records in the page cache and no throttle: the CPU side alone."""
        tfliquid_io.set_read_bandwidth(None)
        try:
            return self._images_per_second(path, drop_cache=False)
        finally:
            if self.read_bandwidth is not None:
                tfliquid_io.set_read_bandwidth(self.read_bandwidth)

    def throughput(self, weight: int) -> float:
        """Images/s of the real pipeline at this ratio, from storage (throttled, or page cache dropped)."""
        return self._images_per_second(self.dataset(weight), drop_cache=self.read_bandwidth is None)

    def _images_per_second(self, path: str, drop_cache: bool) -> float:
        manifest = liquid_format.read_manifest(path)
        samples_per_pass = 1 if drop_cache else -(-self.pass_images // manifest.num_images)
        dataset = LiquidDataset(path, batch_size=self.batch_size, seed=self.seed, epochs=samples_per_pass)
        # Each image's shape is batched, not its pixels: images of other sizes cannot be batched, and what a job
        # does with the pixels next (crop, resize) is the same for every format. The shape is known only once
        # the image is read and decoded, so both still run.
        batches = dataset.map(lambda x: tf.shape(x["image"])).batch(self.batch_size)
        records = liquid_format.record_files(path, manifest)
        timed_pass(batches.take(1))  # builds and warms the pipeline's functions
        rates = []
        for _ in range(self.epochs):
            if drop_cache:
                drop_page_cache(records)
            rates.append(timed_pass(batches).rate)
        return statistics.median(rates)


def _storage_bandwidth(path: str) -> float:
    """Bytes/s of reading a sample dataset's record files after dropping their page cache."""
    records = liquid_format.record_files(path, liquid_format.read_manifest(path))
    drop_page_cache(records)
    start, total = time.perf_counter(), 0
    for record in records:
        with open(record, "rb") as f:
            while chunk := f.read(1 << 22):
                total += len(chunk)
    return total / (time.perf_counter() - start)
