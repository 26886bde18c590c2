"""The analysis report: the measured rates, the stall split, what AUTOTUNE chose per op, the what-if table and the
recommendation with the code that applies it; as text, JSON, and a plot of the rate against the cache's size."""

from __future__ import annotations

import dataclasses
import json

from tfliquid._common.plots import pyplot, save_png
from tfliquid.analysis.whatif import Change, Measurements, predict
from tfliquid.liquid.profiling import STEPS

STAGES = ("ingestion", "prep", "fetch", "rate")


@dataclasses.dataclass
class Report:
    measured: Measurements
    change: Change  # the recommendation
    prediction: dict[str, float]  # its stage rates and rate
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
        """What limits the job as it is: "fetch", "prep" or "ingestion" (the model)."""
        return min(("fetch", "prep", "ingestion"), key=predict(self.measured, Change()).get)

    @property
    def predicted_speedup(self) -> float:
        """The recommendation's predicted rate over the prediction for the job as it is (errors they share cancel)."""
        return self.prediction["rate"] / predict(self.measured, Change())["rate"]

    def describe(self, change: Change) -> str:
        k, w, group = change.prep_parallelism, change.liquid_ratio, change.scan_group
        parts = [
            "L3 instead of PNG" if change.l3 else "",
            "" if w is None else f"Liquid png:raw {w}:{STEPS - w}",
            f"scan group {group}" if group not in (None, self.measured.pipeline.scan_group) else "",
            f"MinIO cache {change.cache_fraction:.0%}" if change.cache_fraction else "",
            "" if k is None else f"prep on {k} thread{'s' if k > 1 else ''}",
        ]
        return ", ".join(part for part in parts if part) or "as it is"

    def code(self) -> str:
        """Python that applies the recommendation (the read stage as the pipeline's `source` writes it)."""
        change, lines, cache, batch = self.change, [], "None", self.measured.pipeline.batch_size
        if change.l3:
            lines.append("# first: tfliquid convert l3 SRC DST, and decode with tfliquid.l3.decode_l3")
        if change.cache_fraction:
            capacity, cache = self.measured.cache_capacity(change), "cache"
            lines.append(f"cache = tfliquid.MinIOCache({capacity})  # {change.cache_fraction:.0%} of the dataset")
        if change.liquid_ratio is not None:  # LiquidDataset decodes each format itself: preprocess is left
            ratio = f"{change.liquid_ratio}:{STEPS - change.liquid_ratio}"
            lines.insert(0, f"# first: tfliquid convert liquid SRC DST --formats png,raw --ratio {ratio}")
            lines.append(f"raw = tfliquid.LiquidDataset(DST, batch_size={batch}, cache={cache})  # decoded")
        else:
            lines.append(
                "raw = " + self.measured.pipeline.source.format(scan_group=change.group(self.measured), cache=cache)
            )
        threads = "tf.data.AUTOTUNE" if change.prep_parallelism is None else change.prep_parallelism
        prep = "prep" if change.liquid_ratio is None else "preprocess"
        end = f".batch({batch}).prefetch(tf.data.AUTOTUNE)"
        return "\n".join([*lines, f"dataset = raw.map({prep}, num_parallel_calls={threads}){end}"])

    def whatif_rows(self) -> list[tuple[str, dict[str, float]]]:
        """The changes one at a time (and the recommendation), each with its prediction."""
        m, budget = self.measured, self.memory_budget_bytes
        changes = [Change(), *(Change(f) for f in (0.25, 0.5, 0.75, 1.0) if m.cache_capacity(Change(f)) <= budget)]
        changes += [
            Change(scan_group=g) for g in m.variants.ratios if isinstance(g, int) and g != m.pipeline.scan_group
        ]
        changes += [Change(prep_parallelism=k) for k in range(1, m.cores + 1)]
        if "l3" in m.variants.ratios:  # and the Liquid ratio predicted best, nothing else changed
            liquid = (Change(liquid_ratio=w) for w in range(STEPS))
            changes += [Change(l3=True), max(liquid, key=lambda change: predict(m, change)["rate"])]
        return [(self.describe(change), predict(m, change)) for change in dict.fromkeys([*changes, self.change])]

    def to_dict(self) -> dict:
        """The report's fields as measured and decided (the pipeline left out), the stall split, the what-if table
        and the code."""
        fetch_stall, prep_stall = self.stalls
        measured = dataclasses.replace(self.measured, pipeline=None)
        return dataclasses.asdict(dataclasses.replace(self, measured=measured)) | {
            "stalls": {"fetch": fetch_stall, "prep": prep_stall, "bottleneck": self.bottleneck},
            "whatif": [{"change": name, **prediction} for name, prediction in self.whatif_rows()],
            "recommendation": {
                "description": self.describe(self.change),
                "speedup": self.prediction["rate"] / self.measured.jobs.training,
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
            f"  stalls: fetch {fetch_stall:.0%}, prep {prep_stall:.0%} of epoch time; bottleneck: {self.bottleneck}",
        ]
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
        lines += [
            "",
            f"recommendation: {self.describe(self.change)}: predicted {self.prediction['rate']:.0f} items/s, "
            f"{self.prediction['rate'] / m.jobs.training:.2f}x the measured rate, {self.predicted_speedup:.2f}x the "
            f"prediction as it is (the best any change reaches: {self.best:.0f})",
        ]
        return "\n".join(lines + ["    " + line for line in self.code().splitlines()])

    def plot(self, path: str) -> None:
        """The predicted rate against the MinIO cache's fraction of the dataset, with P and G as lines (DS-Analyzer,
        Figure 11), as a PNG at `path`. Needs matplotlib (pip install 'tfliquid[plot]')."""
        plt = pyplot()
        m, fractions = self.measured, [i / 100 for i in range(101)]
        predictions = [predict(m, Change(cache_fraction=f)) for f in fractions]
        rate = [p["rate"] for p in predictions]
        figure, axes = plt.subplots(figsize=(6, 4))
        axes.plot(fractions, [p["fetch"] for p in predictions], label="fetch F'(f)", color="tab:blue", linestyle=":")
        axes.plot(fractions, rate, label="predicted training rate", color="black", linewidth=2)
        axes.axhline(m.prep.rate, label=f"prep P ({m.prep.rate:.0f})", color="tab:orange", linestyle="--")
        top = 1.1 * max(max(rate), m.prep.rate, min(m.ingestion.rate, 3 * max(rate)))
        ingestion = f"ingestion G ({m.ingestion.rate:.0f})"
        if m.ingestion.rate <= top:
            axes.axhline(m.ingestion.rate, label=ingestion, color="tab:green", linestyle="--")
        else:  # far above the rest: drawn, it would flatten every other line
            axes.plot([], [], " ", label=f"{ingestion}, above the plot")
        axes.set(xlabel="MinIO cache, fraction of the dataset", ylabel="items / s")
        axes.set_ylim(0, top)
        axes.legend()
        save_png(figure, path)
