"""The input tuner's levers, cheapest first, and how each predicts its gain before it is applied.

Every lever proposes a change of the pipeline's settings with a predicted rate, or says why it does not apply. An
input-bound window trained at the rate its input delivered, a share of what the slower of its stages does alone
(the probes: reads F, prep P); the prediction keeps that share, at the changed stages' rates, up to the
one-batch bound G:

    predicted = min(G, rate x min(P', F') / min(P, F))

A lever changes P (threads, a decode at the model's size, a scan group's smaller decode, tf.data service workers:
no prep here) or F (a cache's hits, a scan group's fewer bytes). The share measured in the window holds what
running beside the model costs the input (on a CPU, the cores its steps take).
"""

from __future__ import annotations

import dataclasses
import math

from tfliquid.keras.tuner.diagnosis import CPU, STORAGE, Diagnosis

CACHE_SLACK = 1.02  # a cache's capacity over the bytes it is to hold: the items' headers and keys
CACHE_HEADROOM = 64 << 10


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the tuner sets: the scan group read, the prep map's and the reads' parallelism (None: AUTOTUNE, the
    pipeline's default), the MinIO cache's bytes (0: none), the decode size (None: each image's own), and whether
    the input runs on tf.data service workers."""

    scan_group: int
    prep_parallelism: int | None = None
    read_parallelism: int | None = None
    cache_bytes: int = 0
    decode_size: tuple[int, int] | None = None
    service: bool = False

    def changes(self, before: Settings) -> str:
        """The settings that differ from `before`, as "name: old -> new"."""
        fields = [f.name for f in dataclasses.fields(self) if getattr(self, f.name) != getattr(before, f.name)]
        return ", ".join(f"{name}: {_shown(getattr(before, name))} -> {_shown(getattr(self, name))}" for name in fields)


def _shown(value) -> str:
    return "AUTOTUNE" if value is None else str(value)


@dataclasses.dataclass(frozen=True)
class Proposal:
    lever: str
    settings: Settings
    predicted_rate: float
    reason: str  # the measurements the prediction rests on
    settle: int = 0  # windows after the change that are not its measure (a cache's filling epoch)


def _scaled(diagnosis: Diagnosis, prep: float | None = None, fetch: float | None = None) -> float:
    """The predicted rate with the stages' rates changed to `prep` and `fetch` (None: as probed)."""
    window, probes = diagnosis.window, diagnosis.probes
    now = min(probes.prep, probes.fetch)
    new = min(probes.prep if prep is None else prep, probes.fetch if fetch is None else fetch)
    return min(window.compute_rate, window.rate * new / now)


def threads(context, diagnosis: Diagnosis, settings: Settings) -> Proposal | str:
    """Lobster's thread split (tfliquid.analysis.plan_threads): prep on the fewest threads at its peak rate, the
    reads the other cores, tf.data's autotuner off."""
    if diagnosis.kind != CPU:
        return "the reads, not the prep, hold the input up: threads for prep would not read faster"
    if settings.prep_parallelism is not None:
        return "already planned"
    plan = context.plan_threads(settings)
    planned = plan.prep_by_threads[plan.prep_parallelism]
    return Proposal(
        "threads",
        dataclasses.replace(settings, prep_parallelism=plan.prep_parallelism, read_parallelism=plan.read_parallelism),
        _scaled(diagnosis, prep=planned),
        f"{plan}; prep under AUTOTUNE {diagnosis.probes.prep:.0f} images/s",
    )


def cache_capacity(context, scan_group: int) -> int:
    """The cache lever's capacity at `scan_group`: the records' bytes with room for the items' headers, within
    the memory budget."""
    needed = math.ceil(sum(context.record_bytes(scan_group)) * CACHE_SLACK) + CACHE_HEADROOM
    return min(needed, context.memory_budget)


def cache(context, diagnosis: Diagnosis, settings: Settings) -> Proposal | str:
    """A MinIO cache of the records' bytes within the memory budget: from its second epoch on, the share it holds
    is read from memory, and storage delivers the rest (F' = F / (1 - h)). A cache on trial (cache_trial.py) that
    the window filled already is kept with what it holds: the next window reads that share from memory, and is
    the change's measure."""
    if diagnosis.kind != STORAGE:
        return "input-bound on the CPU: a cache saves reads, not decodes"
    if settings.cache_bytes:
        return "already caching"
    records = context.record_bytes(settings.scan_group)
    capacity = cache_capacity(context, settings.scan_group)
    held = _records_held(records, capacity / CACHE_SLACK)
    if held == 0:
        return f"a memory budget of {context.memory_budget:,} bytes holds no whole record"
    share = held / sum(records)
    reason = (
        f"a MinIO cache of {capacity:,} bytes holds {share:.0%} of the records' bytes at scan group "
        f"{settings.scan_group} (budget {context.memory_budget:,} bytes)"
    )
    prefilled = context.trial_bytes(capacity, settings.scan_group)
    if prefilled:
        share = min(1.0, prefilled / sum(records))
        reason += f"; the cache on trial holds {share:.0%} of them already"
    fetch = math.inf if share >= 1 else diagnosis.probes.fetch / (1 - share)
    return Proposal(
        "cache",
        dataclasses.replace(settings, cache_bytes=capacity),
        _scaled(diagnosis, fetch=fetch),
        f"{reason}; reads alone {diagnosis.probes.fetch:.0f} images/s",
        settle=0 if prefilled else 1,
    )


def _records_held(record_bytes: list[int], capacity: float) -> int:
    """The bytes of the records a never-evict cache of `capacity` admits whole, in a shuffled order's expectation:
    as many records of the mean size as fit."""
    mean = sum(record_bytes) / len(record_bytes)
    return round(min(len(record_bytes), math.floor(capacity / mean)) * mean)


def decode_size(context, diagnosis: Diagnosis, settings: Settings) -> Proposal | str:
    """A decode at the model's input size: libjpeg's DCT scaling decodes the least that still covers it."""
    if diagnosis.kind != CPU:
        return "the reads, not the decodes, hold the input up"
    if settings.decode_size is not None:
        return "already decoding at the model's size"
    size = context.model_size
    if size is None:
        return "the model's input has no fixed height and width to decode to"
    changed = dataclasses.replace(settings, decode_size=size)
    prep = context.prep_rate(changed)
    return Proposal(
        "decode size",
        changed,
        _scaled(diagnosis, prep=prep),
        f"prep at {size[0]}x{size[1]} {prep:.0f} images/s against {diagnosis.probes.prep:.0f}",
    )


def scan_group(context, diagnosis: Diagnosis, settings: Settings) -> Proposal | str:
    """The lowest scan group whose loss gradient the similarity test accepts (ScanGroupAutotuner's), while the
    input holds training up: fewer bytes to read, and a smaller decode."""
    if not context.scan_group_testable:
        return f"the similarity test runs from epoch {context.scan_group_start} on"
    accepted, similarities = context.accepted_scan_group()
    tested = ", ".join(f"{g}: {s:.3f}" for g, s in similarities.items())
    if accepted >= settings.scan_group:
        return f"the similarity test accepts no group below {settings.scan_group} ({tested})"
    changed, evidence = (
        dataclasses.replace(settings, scan_group=accepted),
        f"the similarity test accepts {accepted} ({tested})",
    )
    if diagnosis.kind == STORAGE:
        # A cache holds one group's prefixes: at another group it starts empty, and storage serves every read.
        storage = diagnosis.probes.fetch * (1 - context.cache_share(settings))
        fetch = storage * context.bytes_per_epoch(settings.scan_group) / context.bytes_per_epoch(accepted)
        why = f"reads at group {accepted} {fetch:.0f} images/s (from storage: a cache starts empty at a new group)"
        return Proposal("scan group", changed, _scaled(diagnosis, fetch=fetch), f"{evidence}; {why}")
    # A lower group decodes less only at a smaller DCT scale (a DC-only group at 1/8): so also at the model's size.
    candidates = [changed]
    if context.model_size is not None and settings.decode_size is None:
        candidates.append(dataclasses.replace(changed, decode_size=context.model_size))
    preps = {candidate: context.prep_rate(candidate) for candidate in candidates}
    best = max(preps, key=preps.get)
    size = f" decoded at {best.decode_size[0]}x{best.decode_size[1]}" if best.decode_size else ""
    why = f"prep at group {accepted}{size} {preps[best]:.0f} images/s against {diagnosis.probes.prep:.0f}"
    return Proposal("scan group", best, _scaled(diagnosis, prep=preps[best]), f"{evidence}; {why}")


def service(context, diagnosis: Diagnosis, settings: Settings) -> Proposal | str:
    """The input on tf.data service workers (where a dispatcher is given): prep leaves this machine's cores."""
    if context.dispatcher is None:
        return "no dispatcher given"
    if diagnosis.kind != CPU:
        return "the reads, not the prep, hold the input up"
    if settings.service:
        return "already on tf.data service workers"
    g, fetch = diagnosis.window.compute_rate, diagnosis.probes.fetch
    predicted = _scaled(diagnosis, prep=math.inf)
    return Proposal(
        "service",
        dataclasses.replace(settings, service=True),
        predicted,
        f"prep offloaded to the workers of {context.dispatcher}: the one-batch bound {g:.0f} and the reads "
        f"{fetch:.0f} images/s remain",
    )


LEVERS = [threads, cache, decode_size, scan_group, service]
