"""The analysis report: the measured rates, the stall split, what AUTOTUNE chose per op, the what-if table and the
recommendation with the code that applies it; as text, JSON, and a plot of the rate against the cache's size."""

from __future__ import annotations

import dataclasses
import json

from tfliquid._common.plots import pyplot, save_png
from tfliquid.analysis.whatif import Change, Measurements, predict
from tfliquid.liquid.profiling import STEPS

STAGES = ("ingestion", "prep", "fetch", "rate")
SMALL_STALL = 0.1  # on an accelerator, stalls adding to less than this share of the epoch leave the model the limit
NO_CHANGE = "no change predicted to help"


@dataclasses.dataclass
class Report:
    measured: Measurements
    change: Change | None  # the recommendation; None: no change is predicted to help
    prediction: dict[str, float] | None  # its stage rates and rate
    best: float  # the best rate any change is predicted to reach
    memory_budget_bytes: float
    subset_items: int  # the phases read
    seconds: float  # the analysis took
    quick: bool = False

    @property
    def stalls(self) -> tuple[float, float]:
        """(fetch stall, prep stall), shares of the job's epoch time."""
        return self.measured.stall_fractions()

    @property
    def bottleneck(self) -> str:
        """What limits the job as it is, "fetch", "prep" or "ingestion" (the model), from the stall split. On the
        CPU, where prep and the train steps share the cores, the largest share of the epoch: the fetch stall,
        prep's, or the train steps' own (the rest). On an accelerator, the larger stall, unless the stalls add to
        less than SMALL_STALL of the epoch."""
        fetch, prep = self.stalls
        if not self.measured.model_on_cpu and fetch + prep < SMALL_STALL:
            return "ingestion"
        shares = {"fetch": fetch, "prep": prep} | (
            {"ingestion": 1 - fetch - prep} if self.measured.model_on_cpu else {}
        )
        return max(shares, key=shares.get)

    @property
    def as_it_is(self) -> dict[str, float]:
        """The prediction for the job as it is."""
        return predict(self.measured, Change.as_it_is(self.measured))

    @property
    def predicted_speedup(self) -> float | None:
        """The recommendation's predicted rate over the prediction for the job as it is (errors they share cancel)."""
        return None if self.change is None else self.prediction["rate"] / self.as_it_is["rate"]

    def describe(self, change: Change) -> str:
        """What the change changes in the pipeline measured."""
        m, k, w, group = self.measured, change.prep_parallelism, change.liquid_ratio, change.scan_group
        threads = "prep AUTOTUNE" if k is None else f"prep on {k} thread{'s' if k > 1 else ''}"
        parts = [
            "L3 instead of PNG" if change.l3 else "",
            "" if w is None else f"Liquid png:raw {w}:{STEPS - w}",
            f"scan group {group}" if group not in (None, m.pipeline.scan_group) else "",
            f"MinIO cache {change.cache_fraction:.0%}" if change.cache_fraction else "",
            threads if k != m.pipeline.prep_parallelism else "",
        ]
        return ", ".join(part for part in parts if part) or "as it is"

    def code(self) -> str:
        """Python that applies the recommendation ("" where no change helps): run where `pipeline` names the
        InputPipeline analyzed, it makes `dataset`, the tf.data.Dataset to train on (conversions included)."""
        if self.change is None:
            return ""
        m, change = self.measured, self.change
        batch, k, pipeline = m.pipeline.batch_size, change.prep_parallelism, m.pipeline
        lines = ["# pipeline: the tfliquid.analysis.InputPipeline analyzed (tfliquid analyze: what dataset() returns)"]
        imports = ["import tfliquid"] if change.cache_fraction or change.l3 or change.liquid_ratio is not None else []
        cache = "None"
        if change.cache_fraction:
            capacity, cache = m.cache_capacity(change), "cache"
            lines.append(f"cache = tfliquid.MinIOCache({capacity})  # {change.cache_fraction:.0%} of the dataset")
        if change.liquid_ratio is not None:  # LiquidDataset decodes each format itself: preprocess is left
            imports = ["import os", "import tensorflow as tf", *imports]
            ratio, threads = f"{change.liquid_ratio}:{STEPS - change.liquid_ratio}", k or "tf.data.AUTOTUNE"
            lines += [
                "source = os.path.commonpath(pipeline.files)  # a folder per class: Liquid's labels, in sorted order",
                f"converted = source + '-liquid-{ratio.replace(':', '-')}'",
                f"tfliquid.liquid.convert(source, converted, formats=('png', 'raw'), ratio={ratio!r})  # once",
                f"raw = tfliquid.LiquidDataset(converted, batch_size={batch}, cache={cache})  # decoded",
                f"dataset = raw.map(pipeline.preprocess, num_parallel_calls={threads}).batch({batch})"
                ".prefetch(tf.data.AUTOTUNE)",
            ]
            return "\n".join(imports + lines)
        if change.l3:  # the same files, in L3 under a folder beside theirs
            imports = ["import os", *imports]
            threads = "" if k is None else f", prep_parallelism={k}"
            lines += [
                "source = os.path.commonpath(pipeline.files)",
                "converted = source + '-l3'",
                "tfliquid.l3.convert(source, converted)  # once: the same tree, in .l3 files",
                "files = [os.path.join(converted, os.path.splitext(os.path.relpath(f, source))[0] + '.l3') "
                "for f in pipeline.files]",
                f"pipeline = tfliquid.analysis.file_pipeline(files, pipeline.labels, pipeline.preprocess, {batch}"
                f"{threads}).replace(decode=tfliquid.l3.decode_l3)",
            ]
        else:
            replaced = {"scan_group": change.group(m)} if change.group(m) != pipeline.scan_group else {}
            replaced |= {"prep_parallelism": k} if k != pipeline.prep_parallelism else {}
            if replaced:
                autotune = "  # None: AUTOTUNE" if "prep_parallelism" in replaced and k is None else ""
                arguments = ", ".join(f"{name}={value!r}" for name, value in replaced.items())
                lines.append(f"pipeline = pipeline.replace({arguments}){autotune}")
        lines.append("dataset = pipeline.dataset(" + ("cache=cache" if change.cache_fraction else "") + ")")
        return "\n".join(imports + lines)

    def whatif_rows(self) -> list[tuple[str, dict[str, float]]]:
        """The changes one at a time (and the recommendation), each with its prediction."""
        m, budget, base = self.measured, self.memory_budget_bytes, Change.as_it_is(self.measured)
        changes = [base, *(dataclasses.replace(base, cache_fraction=f) for f in (0.25, 0.5, 0.75, 1.0))]
        changes = [change for change in changes if m.cache_capacity(change) <= budget]
        changes += [
            dataclasses.replace(base, scan_group=g)
            for g in m.variants.ratios
            if isinstance(g, int) and g != m.pipeline.scan_group
        ]
        changes += [Change(prep_parallelism=k) for k in [None, *range(1, m.cores + 1)]]
        if "l3" in m.variants.ratios:  # and the Liquid ratio predicted best, nothing else changed
            liquid = (dataclasses.replace(base, liquid_ratio=w) for w in range(STEPS))
            changes += [dataclasses.replace(base, l3=True), max(liquid, key=lambda change: predict(m, change)["rate"])]
        recommended = [] if self.change is None else [self.change]
        return [(self.describe(change), predict(m, change)) for change in dict.fromkeys([*changes, *recommended])]

    def to_dict(self) -> dict:
        """The report's fields as measured and decided (the pipeline left out), the stall split, the what-if table
        and the code."""
        fetch_stall, prep_stall = self.stalls
        measured = dataclasses.replace(self.measured, pipeline=None)
        return dataclasses.asdict(dataclasses.replace(self, measured=measured)) | {
            "stalls": {"fetch": fetch_stall, "prep": prep_stall, "bottleneck": self.bottleneck},
            "whatif": [{"change": name, **prediction} for name, prediction in self.whatif_rows()],
            "recommendation": {
                "description": NO_CHANGE if self.change is None else self.describe(self.change),
                "speedup": None if self.change is None else self.prediction["rate"] / self.measured.jobs.training,
                "predicted_speedup": self.predicted_speedup,
                "code": self.code(),
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def __str__(self) -> str:
        m, (fetch_stall, prep_stall), rows = self.measured, self.stalls, self.whatif_rows()
        storage = m.fetch.bytes_per_second / m.bytes_per_item(m.pipeline.scan_group)
        served = ", ".join(f"{'AUTOTUNE' if k is None else k}: {r:.0f}" for k, r in m.jobs.served.items())
        lines = [
            f"data-stall analysis of {self.subset_items} items, {self.seconds:.0f} s"
            + (" (quick: its predictions scatter more)" if self.quick else ""),
            f"  ingestion G {m.ingestion.rate:9.0f} items/s   (train steps on one batch in memory"
            + (", on the CPU)" if m.model_on_cpu else ")"),
            f"  prep P      {m.prep.rate:9.0f} items/s   (the prep stage alone, on the subset in memory)",
            f"  fetch F     {storage:9.0f} items/s   ({m.fetch.bytes_per_second / 1e6:.2f} MB/s from storage)",
            f"  cache C     {m.cache.rate:9.0f} items/s   (MinIO cache hits)",
            f"  training    {m.jobs.training:9.0f} items/s   (without fetch, by prep threads: {served})",
            f"  stalls: fetch {fetch_stall:.0%}, prep {prep_stall:.0%} of epoch time; bottleneck: {self.bottleneck}"
            + (" (the model)" if self.bottleneck == "ingestion" else ""),
        ]
        if m.model_on_cpu:  # prep's share is no wait for data there, and reads high beside a model-bound job
            lines.append(
                f"    on the CPU prep and the train steps share the cores: prep's {prep_stall:.0%} is the time its "
                f"work takes from the steps (theirs alone: {1 - fetch_stall - prep_stall:.0%})"
            )
        width = max([30, *(len(row.name) for row in m.ops.rows)])
        lines += ["", f"  {'tf.data ops (output first)':{width + 3}s}elements  CPU share  us/element  AUTOTUNE chose"]
        lines += [
            f"    {row.name:{width}s} {row.elements:9d}  {row.cpu_share:8.0%}  {row.microseconds_per_element:10.1f}  "
            + ("" if row.parallelism is None else f"{row.parallelism:g}")
            for row in m.ops.rows
        ]
        width, header = max([36, *(len(name) for name, _ in rows)]), (*STAGES[:3], "predicted")
        lines += ["", f"  {'what if (items/s)':{width + 2}s} " + "  ".join(f"{s:>9s}" for s in header)]
        lines += [f"    {name:{width}s} " + "  ".join(f"{p[s]:9.0f}" for s in STAGES) for name, p in rows]
        if self.change is None:
            lines += [
                "",
                f"recommendation: {NO_CHANGE}: the best any change reaches is predicted {self.best:.0f} items/s, the "
                f"job as it is measured {m.jobs.training:.0f} and predicted {self.as_it_is['rate']:.0f}",
            ]
            return "\n".join(lines)
        lines += [
            "",
            f"recommendation: {self.describe(self.change)}: predicted {self.prediction['rate']:.0f} items/s, "
            f"{self.prediction['rate'] / m.jobs.training:.2f}x the measured rate, {self.predicted_speedup:.2f}x the "
            f"prediction as it is (the best any change reaches: {self.best:.0f})",
        ]
        return "\n".join(lines + ["    " + line for line in self.code().splitlines()])

    def plot(self, path: str) -> None:
        """The predicted rate against the MinIO cache's fraction of the dataset, with the bound the reads put on it
        and P and G as lines (DS-Analyzer, Figure 11), as a PNG at `path`. Needs matplotlib (pip install
        'tfliquid[plot]')."""
        plt = pyplot()
        m, fractions, base = self.measured, [i / 100 for i in range(101)], Change.as_it_is(self.measured)
        predictions = [predict(m, dataclasses.replace(base, cache_fraction=f)) for f in fractions]
        rate = [p["rate"] for p in predictions]
        figure, axes = plt.subplots(figsize=(6, 4))
        fetch = [p["fetch"] for p in predictions]
        top = 1.1 * max(max(rate), m.prep.rate, min(m.ingestion.rate, 3 * max(rate)))
        reads = "fetch: storage's reads and the cache's hits" + (", above the plot" if min(fetch) > top else "")
        axes.plot(fractions, fetch, label=reads, color="tab:blue", linestyle=":")
        axes.plot(fractions, rate, label="predicted training rate", color="black", linewidth=2)
        axes.axhline(m.prep.rate, label=f"prep P ({m.prep.rate:.0f})", color="tab:orange", linestyle="--")
        ingestion = f"ingestion G ({m.ingestion.rate:.0f})"
        if m.ingestion.rate <= top:
            axes.axhline(m.ingestion.rate, label=ingestion, color="tab:green", linestyle="--")
        else:  # far above the rest: drawn, it would flatten every other line
            axes.plot([], [], " ", label=f"{ingestion}, above the plot")
        axes.set(xlabel="MinIO cache, fraction of the dataset", ylabel="items / s")
        axes.set_ylim(0, top)
        axes.legend()
        save_png(figure, path)
