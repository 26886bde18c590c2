"""analyze(): DS-Analyzer's phases, the what-if over every change tfliquid offers, and the recommendation."""

from __future__ import annotations

import contextlib
import math
import os
import time

import tensorflow as tf

from tfliquid._common.progress import Progress
from tfliquid.analysis import phases
from tfliquid.analysis.monotone import monotone_prep_by_group
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.analysis.recommendation import checked_recommendation
from tfliquid.analysis.report import Report
from tfliquid.analysis.scaling import fit_scaling
from tfliquid.analysis.whatif import Measurements, recommend, same_prep

DEFAULT_SUBSET_BATCHES = 16


def _stored_sample(pipeline: InputPipeline, raw: tf.data.Dataset, items: int, store) -> tuple[tf.data.Dataset, float]:
    """The sample's PNGs decoded and stored again as `store(pixels)` (L3 bytes, or the pixels themselves:
    Liquid's raw format), in memory, and the stored bytes / the PNG bytes."""

    def stored(element):
        image = store(pipeline.decode(element["image"]))
        size = tf.strings.length(image) if image.dtype == tf.string else tf.size(image)
        png_size = tf.strings.length(element["image"])
        return {"image": image, "label": element["label"], "bytes": size, "png_bytes": png_size}

    converted = raw.take(items).map(stored).cache()
    png_bytes = stored_bytes = 0
    for element in converted:
        png_bytes += int(element["png_bytes"])
        stored_bytes += int(element["bytes"])
    return converted.map(lambda e: {"image": e["image"], "label": e["label"]}), stored_bytes / png_bytes


def _job_response(
    model,
    pipeline: InputPipeline,
    prep_variants: dict,
    prep_by_variant: dict,
    served: dict,
    items: int,
    cores: int,
    rounds: int,
):
    """(the prep variant, the job's speed-up with it with prep on every core, and with prep on 1 thread) for the
    variant whose prep rate differs most from the pipeline's, or (None, None, None) when none differs enough
    (whatif.same_prep); the third is None on 1 core. `served`: the variants' subsets a cache serves
    (phases.variant_speedup)."""
    own = prep_by_variant[pipeline.scan_group]
    others = [variant for variant in prep_variants if variant != pipeline.scan_group]
    if not others:
        return None, None, None
    variant = max(others, key=lambda v: abs(math.log(prep_by_variant[v] / own)))
    if same_prep(own, prep_by_variant[variant]):
        return None, None, None
    on_cores = phases.variant_speedup(model, pipeline, prep_variants, variant, items, cores, rounds, served)
    on_one = None
    if cores > 1:
        on_one = phases.variant_speedup(model, pipeline, prep_variants, variant, items, 1, rounds, served)
    return variant, on_cores, on_one


def analyze(
    model,
    pipeline: InputPipeline,
    *,
    subset_items: int | None = None,
    steps: int = 20,
    memory_budget_bytes: float | None = None,
    quick: bool = False,
    progress: bool = True,
) -> Report:
    """Measures where `model` trained on `pipeline` stalls, predicts what each change would reach, and
    recommends the cheapest change that removes the dominant stall. With the model on the CPU, the job's speed-up
    with the recommendation's own prep (its scan group, or L3) is measured before it is recommended.

    The phases (tfliquid.analysis.phases) read a subset of `subset_items` items (default: 16 batches) a few times
    and run `steps` train steps on one batch; the report says how much was read and how long it took. The model
    is trained by the analysis: its weights are restored afterwards (its optimizer's state is not).

    Args:
      model: a compiled Keras model.
      pipeline: the input pipeline, an `InputPipeline` (e.g. from `pcr_pipeline` or `file_pipeline`).
      memory_budget_bytes: the largest MinIO cache the recommendation may use (default: half this machine's
        memory).
      quick: one round of most measurements made in turns instead of 3 to 16 (phases.QUICK_ROUNDS), in less than half
        the time: a first look, whose predictions scatter more than the default's (docs/analysis.md).
    """
    cores = os.cpu_count() or 1
    items = min(pipeline.num_items, subset_items or DEFAULT_SUBSET_BATCHES * pipeline.batch_size)
    items -= items % pipeline.batch_size or 0
    if items < pipeline.batch_size:
        raise ValueError(f"the subset ({items} items) holds no whole batch of {pipeline.batch_size}")
    budget = memory_budget_bytes if memory_budget_bytes is not None else _half_of_memory()
    model_on_cpu = not tf.config.list_logical_devices("GPU")
    rounds = phases.QUICK_ROUNDS if quick else phases.Rounds()
    ledger = phases.Ledger(rounds=rounds)
    start = time.perf_counter()
    weights = model.get_weights()
    groups = [None] if not pipeline.scan_groups else [None, *range(1, pipeline.scan_groups)]
    steps_total = 11 + len(groups) + (2 if pipeline.png else 0)
    bar = Progress(steps_total, "phase", enabled=progress)
    done = iter(range(1, steps_total + 1))

    def phase_done():
        bar.update(next(done))

    # Each scan group's subset a cache serves stays open until the recommendation's checks: the job's response to
    # its prep is measured served (phases.variant_speedup).
    served_subsets = contextlib.ExitStack()
    try:
        raw, read_cpu = phases.cached_raw(pipeline, items)
        ledger.charge(pipeline, phases.CACHED_RAW_READS * items)
        batch = next(iter(pipeline.prepared(raw)))
        ingestion = phases.ingestion_rate(model, batch, steps)
        phase_done()
        prep = phases.prep_rate(pipeline, raw)
        phase_done()
        threads = list(range(1, cores + 2))  # one past the cores: where the curve must be flat
        by_threads = {k: phases.prep_rate(pipeline, raw, k, passes=1) for k in threads}
        scaling = fit_scaling(threads, [by_threads[k] for k in threads])
        phase_done()
        fetch = phases.fetch_rate(pipeline, items)
        ledger.charge(pipeline, items)
        idle_offset = 0.0
        if pipeline.cache_item_bytes:  # whole records or files: the what-if replays their reads
            idle_offset, idle_items = phases.idle_read_offset(pipeline, fetch.bytes_per_second)
            ledger.charge(pipeline, idle_items)
        phase_done()
        steps_per_epoch = items // pipeline.batch_size
        training, training_without_fetch, storage_items = phases.job_with_and_without_fetch(
            model, pipeline, raw, items, rounds.training
        )
        ledger.charge(pipeline, storage_items)
        phase_done()
        served = served_subsets.enter_context(phases.served_subset(pipeline, items))
        ledger.charge(pipeline, items)
        cache_fetch = phases.cache_fetch_rate(pipeline, served)
        phase_done()
        # The job as a cache serves it (the what-if's base on the CPU): its reads' CPU is in it, measured.
        served_by_threads = phases.served_training_rates(
            model, pipeline, served, [None, *range(1, cores + 1)], max(steps_per_epoch, steps), rounds.served
        )
        phase_done()
        ops = phases.op_table(pipeline.prepared(pipeline.reads().take(items)), steps_per_epoch - 1)
        ledger.charge(pipeline, items)
        phase_done()
        # The prep variants the what-if scales P by (other scan groups; L3 or raw instead of PNG), in turns with
        # the pipeline's own (phases.prep_rates_in_turns).
        prep_variants = {pipeline.scan_group: (pipeline, raw)}
        read_cpu_by_group = {pipeline.scan_group: read_cpu}
        cache_by_group = {pipeline.scan_group: cache_fetch}
        served_by_group = {pipeline.scan_group: served}
        for group in groups:
            if group != pipeline.scan_group:
                variant = pipeline.replace(scan_group=group)
                variant_raw, read_cpu_by_group[group] = phases.cached_raw(variant, items)
                prep_variants[group] = (variant, variant_raw)
                served_by_group[group] = served_subsets.enter_context(phases.served_subset(variant, items))
                cache_by_group[group] = phases.cache_fetch_rate(variant, served_by_group[group])
                ledger.charge(variant, (phases.CACHED_RAW_READS + 1) * items)  # and the cache's fill
            phase_done()
        l3_ratio = raw_ratio = None
        if pipeline.png:
            from tfliquid.l3 import decode_l3, encode_l3

            l3_sample, l3_ratio = _stored_sample(pipeline, raw, items, encode_l3)
            prep_variants["l3"] = (pipeline.replace(decode=decode_l3), l3_sample)
            phase_done()
            pixels, raw_ratio = _stored_sample(pipeline, raw, items, tf.identity)
            prep_variants["raw"] = (pipeline.replace(decode=tf.identity), pixels)
            phase_done()
        prep_by_variant = phases.prep_rates_in_turns(prep_variants, pipeline.scan_group, cores, rounds.prep_turns)
        prep_by_group = monotone_prep_by_group({group: prep_by_variant[group] for group in groups})
        prep_by_variant |= prep_by_group
        l3_prep, raw_prep = prep_by_variant.get("l3"), prep_by_variant.get("raw")
        phase_done()
        # On the CPU, how much of a cheaper (or dearer) prep reaches the job: measured with the variant that
        # differs most, with prep on every core and on 1 thread (whatif.Measurements.prep_response_at).
        response = (None, None, None)
        if model_on_cpu:
            response = _job_response(
                model, pipeline, prep_variants, prep_by_variant, served_by_group, items, cores, rounds.response
            )
        phase_done()
        measured = Measurements(
            ingestion=ingestion,
            prep=prep,
            prep_by_threads=by_threads,
            scaling=scaling,
            fetch_bytes_per_second=fetch.bytes_per_second,
            fetch_cpu_seconds_per_item=fetch.cpu_seconds_per_item,
            cache_fetch=cache_fetch.items_per_second,
            cache_fetch_by_scan_group={g: r.items_per_second for g, r in cache_by_group.items()},
            cache_cpu_by_scan_group={g: r.cpu_seconds_per_item for g, r in cache_by_group.items()},
            training=training,
            training_cached=training_without_fetch,
            training_served_by_threads={k: r.items_per_second for k, r in served_by_threads.items()},
            training_cpu_by_threads={k: r.cpu_seconds_per_item for k, r in served_by_threads.items()},
            cache_bytes_per_stored_byte=served.cache_bytes_per_stored_byte,
            cache_item_bytes={g: tuple(pipeline.cache_item_bytes(g)) for g in groups}
            if pipeline.cache_item_bytes
            else {},
            bytes_per_item={g: pipeline.bytes_per_epoch(g) / pipeline.num_items for g in groups},
            scan_group=pipeline.scan_group,
            scan_groups=pipeline.scan_groups,
            prep_by_scan_group=prep_by_group,
            read_cpu_by_scan_group=read_cpu_by_group,
            model_on_cpu=model_on_cpu,
            cores=cores,
            dataset_bytes=pipeline.bytes_per_epoch(pipeline.scan_group),
            l3_prep=l3_prep,
            l3_bytes_ratio=l3_ratio,
            raw_prep=raw_prep,
            raw_bytes_ratio=raw_ratio,
            response_variant=response[0],
            response_speedup=response[1],
            single_thread_speedup=response[2],
            storage_idle_offset=idle_offset,
            read_ahead=pipeline.records_ahead(cores),
        )
        if model_on_cpu:
            measured, (change, prediction, best) = checked_recommendation(
                model, pipeline, prep_variants, items, measured, budget, rounds.response, served_by_group
            )
        else:
            change, prediction, best = recommend(measured, budget)
        phase_done()
    finally:
        served_subsets.close()
        model.set_weights(weights)
        bar.close()
    ledger.seconds = time.perf_counter() - start
    return Report(pipeline, measured, ops, change, prediction, best, budget, ledger)


def _half_of_memory() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2
