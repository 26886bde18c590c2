"""The analysis report: measured rates, the stall split, what AUTOTUNE chose per op, the what-if table, and the
recommendation with the code that applies it. As text, JSON, and a plot of the rate against cache size."""

from __future__ import annotations

import dataclasses
import json

from tfliquid.analysis.phases import QUICK_ROUNDS, Ledger, OpRow
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.analysis.whatif import Change, Measurements, predict
from tfliquid.liquid.profiling import STEPS


def _describe(change: Change, pipeline: InputPipeline) -> str:
    parts = []
    if change.l3:
        parts.append("L3 instead of PNG")
    if change.liquid_ratio is not None:
        parts.append(f"Liquid png:raw {change.liquid_ratio}:{STEPS - change.liquid_ratio}")
    if change.scan_group is not None and change.scan_group != pipeline.scan_group:
        parts.append(f"scan group {change.scan_group}")
    if change.cache_fraction:
        parts.append(f"MinIO cache {change.cache_fraction:.0%}")
    if change.prep_parallelism is not None:
        parts.append(f"prep on {change.prep_parallelism} thread{'s' if change.prep_parallelism > 1 else ''}")
    return ", ".join(parts) or "as it is"


@dataclasses.dataclass
class Report:
    pipeline: InputPipeline
    measured: Measurements
    ops: list[OpRow]
    change: Change  # the recommendation
    prediction: dict[str, float]
    best: float  # the best rate any candidate is predicted to reach
    memory_budget_bytes: float
    cost: Ledger

    @property
    def stalls(self) -> tuple[float, float]:
        return self.measured.stall_fractions()

    @property
    def as_it_is(self) -> dict[str, float]:
        """The what-if's prediction for the job with no change: its stage rates and the rate they allow."""
        return predict(self.measured, Change())

    @property
    def bottleneck(self) -> str:
        """What limits the job as it is: "fetch", "prep" or "ingestion" (the model)."""
        now = self.as_it_is
        limit = min(("fetch", now["fetch"]), ("prep", now["prep"]), ("ingestion", now["ingestion"]), key=lambda x: x[1])
        return limit[0]

    @property
    def predicted_speedup(self) -> float:
        """The recommendation's predicted rate over the what-if's own for the job as it is: the two predictions
        share their errors, where the measured rate does not (a prep-bound analysis in the benchmark measured the
        job at 684 items/s, ahead of the about 630 the what-if gives it, and quoted its recommendation at "0.94x
        the measured rate")."""
        return self.prediction["rate"] / self.as_it_is["rate"]

    def code(self) -> str:
        """Python that applies the recommendation (the pipeline's read stage, as its `source` writes it)."""
        change, measured, lines = self.change, self.measured, []
        cache = "None"
        if change.l3:
            lines.append("# first: tfliquid convert l3 SRC DST, and decode with tfliquid.l3.decode_l3")
        if change.liquid_ratio is not None:
            ratio = f"{change.liquid_ratio}:{STEPS - change.liquid_ratio}"
            lines.append(f"# first: tfliquid convert liquid SRC DST --formats png,raw --ratio {ratio}")
        if change.cache_fraction:
            lines.append(
                f"cache = tfliquid.MinIOCache({measured.cache_capacity(change)})  # {change.cache_fraction:.0%} of "
                f"{round(measured.stored_bytes(change))} bytes, and the cache's headers"
            )
            cache = "cache"
        batch = self.pipeline.batch_size
        if change.liquid_ratio is not None:  # LiquidDataset decodes each format itself: only preprocess is left
            lines.append(f"raw = tfliquid.LiquidDataset(DST, batch_size={batch}, cache={cache})  # decoded")
            prep = "preprocess"
        else:
            group = self.pipeline.scan_group if change.scan_group is None else change.scan_group
            lines.append("raw = " + self.pipeline.source.format(scan_group=group, cache=cache))
            prep = "prep"
        parallelism = "tf.data.AUTOTUNE" if change.prep_parallelism is None else change.prep_parallelism
        lines.append(
            f"dataset = raw.map({prep}, num_parallel_calls={parallelism}).batch({batch}).prefetch(tf.data.AUTOTUNE)"
        )
        return "\n".join(lines)

    def whatif_rows(self) -> list[tuple[str, dict[str, float]]]:
        """The changes one at a time (and the recommendation), each with its predicted stage rates."""
        m, rows = self.measured, []
        changes = [Change()]
        changes += [
            Change(cache_fraction=f)
            for f in (0.25, 0.5, 0.75, 1.0)
            if m.cache_capacity(Change(cache_fraction=f)) <= self.memory_budget_bytes
        ]
        changes += [Change(scan_group=g) for g in m.prep_by_scan_group if g is not None and g != m.scan_group]
        changes += [Change(prep_parallelism=k) for k in sorted({1, m.scaling.threads_at_peak(m.cores), m.cores})]
        if m.l3_prep is not None:
            changes.append(Change(l3=True))
        if m.raw_prep is not None:  # the Liquid ratio predicted best, with nothing else changed
            ratios = [Change(liquid_ratio=w) for w in range(STEPS)]
            changes.append(max(ratios, key=lambda change: predict(m, change)["rate"]))
        if self.change not in changes:
            changes.append(self.change)
        for change in changes:
            rows.append((_describe(change, self.pipeline), predict(m, change)))
        return rows

    def _response_lines(self) -> list[str]:
        """How much of a change in prep's time reaches the job on the CPU, and what it was measured with."""
        m = self.measured
        if not m.model_on_cpu:
            return []
        own = m.prep_by_scan_group[m.scan_group]
        checked = [
            f"  checked for the recommendation: with {_variant_name(v)}'s prep, {m.variant_prep(v) / own:.2f}x as "
            f"fast, the job ran {speedup:.3f}x as fast"
            for v, speedup in m.checked_speedups.items()
        ]
        if m.response_speedup is None:
            measured_with = "1 - m: not measured" if not checked else "fitted to the speed-ups below"
            return [f"  the job follows {m.prep_response:.2f} of a change in prep's time ({measured_with})", *checked]
        variant = m.variant_prep(m.response_variant) / own
        fitted = ", and those below" if checked else ""
        single_thread = []
        if m.single_thread_speedup is not None:
            single_thread = [
                f"  with prep on 1 thread, it follows {m.prep_response_at(1):.2f} (with that prep it ran "
                f"{m.single_thread_speedup:.3f}x as fast)"
            ]
        return [
            f"  the job follows {m.prep_response:.2f} of a change in prep's time (fitted to its speed-ups: with "
            f"{_variant_name(m.response_variant)}'s prep, {variant:.2f}x as fast, it ran {m.response_speedup:.3f}x "
            f"as fast{fitted})",
            *single_thread,
            *checked,
        ]

    def to_dict(self) -> dict:
        m = self.measured
        fetch_stall, prep_stall = self.stalls
        return {
            "rates_items_per_second": {
                "ingestion_G": m.ingestion,
                "prep_P": m.prep,
                "prep_by_threads": m.prep_by_threads,
                "fetch_F": m.fetch,
                "fetch_bytes_per_second": m.fetch_bytes_per_second,
                "storage_idle_offset_seconds": m.storage_idle_offset,
                "read_ahead": m.read_ahead,
                "cache_fetch_C": m.cache_fetch,
                "training": m.training,
                "training_without_fetch": m.training_cached,
            },
            "prep_response": {
                "beta": m.prep_response if m.model_on_cpu else None,
                "variant": m.response_variant,
                "job_speedup": m.response_speedup,
                "checked": [{"variant": v, "job_speedup": speedup} for v, speedup in m.checked_speedups.items()],
                "single_thread": {"beta": m.prep_response_at(1), "job_speedup": m.single_thread_speedup}
                if m.single_thread_speedup is not None
                else None,
            },
            "prep_scaling": dataclasses.asdict(m.scaling) | {"threads_at_peak": m.scaling.threads_at_peak(m.cores)},
            "stalls": {"fetch": fetch_stall, "prep": prep_stall, "bottleneck": self.bottleneck},
            "model_on_cpu": m.model_on_cpu,
            "ops": [dataclasses.asdict(row) for row in self.ops],
            "whatif": [{"change": name, **prediction} for name, prediction in self.whatif_rows()],
            "recommendation": {
                "change": dataclasses.asdict(self.change),
                "description": _describe(self.change, self.pipeline),
                "predicted": self.prediction["rate"],
                "speedup": self.prediction["rate"] / m.training,
                "predicted_speedup": self.predicted_speedup,
                "best_predicted": self.best,
                "code": self.code(),
            },
            "cost": dataclasses.asdict(self.cost),
        }

    @property
    def _quick(self) -> bool:
        return self.cost.rounds == QUICK_ROUNDS

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def __str__(self) -> str:
        m = self.measured
        fetch_stall, prep_stall = self.stalls
        lines = [
            f"data-stall analysis: {self.cost.items_read} items ({self.cost.bytes_read / 1e6:.1f} MB) read, "
            f"{self.cost.seconds:.1f} s" + (" (quick: its predictions scatter more)" if self._quick else ""),
            f"  ingestion G {m.ingestion:9.0f} items/s   (train steps on one batch in memory"
            f"{', on the CPU' if m.model_on_cpu else ''})",
            f"  prep P      {m.prep:9.0f} items/s   (1..{m.cores + 1} threads: "
            + ", ".join(f"{m.prep_by_threads[k]:.0f}" for k in sorted(m.prep_by_threads))
            + f"; peak at {m.scaling.threads_at_peak(m.cores)})",
            f"  fetch F     {m.fetch:9.0f} items/s   ({m.fetch_bytes_per_second / 1e6:.1f} MB/s from storage; a read"
            f" from idle storage {m.storage_idle_offset * 1e3:+.0f} ms off its bytes' time; {m.read_ahead} read(s)"
            " ahead)",
            f"  cache C     {m.cache_fetch:9.0f} items/s   (MinIO cache hits)",
            f"  training    {m.training:9.0f} items/s   (without fetch: {m.training_cached:.0f})",
            *self._response_lines(),
            f"  stalls: fetch {fetch_stall:.0%}, prep {prep_stall:.0%} of epoch time; bottleneck: {self.bottleneck}",
        ]
        op_width = max([30, *(len(row.name) for row in self.ops)])  # names indented by their depth in the pipeline
        lines += [
            "",
            f"  {'tf.data ops (output first)':{op_width + 3}s}elements  CPU share  us/element  AUTOTUNE chose",
        ]
        for row in self.ops:
            chose = "" if row.parallelism is None else f"{row.parallelism:g}"
            per_element = row.microseconds_per_element
            cells = f"{row.elements:9d}  {row.cpu_share:8.0%}  {per_element:10.1f}"
            lines.append(f"    {row.name:{op_width}s} {cells}  {chose}")
        rows = self.whatif_rows()
        width = max([36, *(len(name) for name, _ in rows)])  # the recommendation's row can name three changes
        stages = "  ".join(f"{stage:>9s}" for stage in ("ingestion", "prep", "fetch", "predicted"))
        lines += ["", f"  {'what if (items/s)':{width + 2}s} {stages}"]
        for name, p in rows:
            rates = "  ".join(f"{p[stage]:9.0f}" for stage in ("ingestion", "prep", "fetch", "rate"))
            lines.append(f"    {name:{width}s} {rates}")
        speedup = self.prediction["rate"] / m.training
        lines += [
            "",
            f"recommendation: {_describe(self.change, self.pipeline)}: predicted "
            f"{self.prediction['rate']:.0f} items/s, {speedup:.2f}x the measured rate, {self.predicted_speedup:.2f}x "
            f"the prediction as it is (the best any change reaches: {self.best:.0f})",
            *("    " + line for line in self.code().splitlines()),
        ]
        return "\n".join(lines)

    def plot(self, path: str) -> None:
        """Predicted training rate against MinIO cache fraction, with P and G as lines (DS-Analyzer, Figure 11).
        Needs matplotlib (pip install tfliquid[plot])."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(f"the plot needs matplotlib (pip install tfliquid[plot]): {e}") from None
        m = self.measured
        fractions = [i / 100 for i in range(101)]
        predictions = [predict(m, Change(cache_fraction=f)) for f in fractions]
        fetch = [p["fetch"] for p in predictions]
        rate = [p["rate"] for p in predictions]
        figure, axes = plt.subplots(figsize=(6, 4))
        axes.plot(fractions, fetch, label="fetch F'(f)", linestyle=":")
        axes.plot(fractions, rate, label="predicted training rate", linewidth=2)
        axes.axhline(m.prep, label="prep P", color="tab:orange", linestyle="--")
        axes.axhline(m.ingestion, label="ingestion G", color="tab:green", linestyle="--")
        axes.set_xlabel("MinIO cache, fraction of the dataset")
        axes.set_ylabel("items / s")
        axes.set_ylim(0, 1.1 * max(max(rate), m.prep, min(m.ingestion, 3 * max(rate))))
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=100)
        plt.close(figure)


def _variant_name(variant) -> str:
    return {None: "full fidelity", "l3": "L3", "raw": "raw pixels"}.get(variant, f"scan group {variant}")
