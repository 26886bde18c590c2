"""InputTuner: a closed loop over the input pipeline's levers during training (docs/tuner.md).

    tuner = tfliquid.keras.InputTuner("train-pcr/", preprocess, batch_size=64, memory_budget=4 << 30)
    history = tuner.fit(model, epochs=30, validation_data=val)     # model.fit's arguments
    print(tuner)                                                   # every decision, its evidence and result

At the end of every window (an epoch) the tuner measures it, then either judges the change the window ran with
(kept if the window trained at least `keep_gain` times as fast as the one before the change, else rolled back) or,
with no change pending, diagnoses the window (diagnosis.py) and applies the cheapest lever not yet tried that
predicts a gain of at least `keep_gain` (levers.py). A pipeline's structure is fixed once model.fit has it, so the
tuner runs model.fit one window at a time on the pipeline its settings build; callbacks see one training.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

import keras
import tensorflow as tf

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline, pcr_pipeline
from tfliquid.analysis.threads import plan_threads
from tfliquid.cache import MinIOCache
from tfliquid.io.storage import process_bytes_read
from tfliquid.jpeg.sized import decode_jpeg, decode_jpeg_at_size
from tfliquid.keras.autotune import ScanGroupAutotuner
from tfliquid.keras.stall_monitor import StallMonitor
from tfliquid.keras.tuner import levers as levers_module
from tfliquid.keras.tuner.advice import advice
from tfliquid.keras.tuner.cache_trial import CacheTrial
from tfliquid.keras.tuner.diagnosis import Diagnosis, Probes, Window, diagnose
from tfliquid.keras.tuner.levers import Proposal, Settings
from tfliquid.keras.tuner.report import report
from tfliquid.order.seeded_order import derived_seed
from tfliquid.pcr import PCRDataset

KEEP_GAIN = 1.05  # a change is kept when its window trained this much faster than the one before it, or more
PROBE_BATCHES = 4  # batches the side probes read and prep
PROBE_SECONDS = 1.0  # a prep probe's pass lasts this share of it: shorter ones read low
FETCH_PROBE_SECONDS = 0.5  # the reads probe's timed part: a record or more at the storage rates that stall
FILLED_SHARE = 0.05  # a window whose cache grew by more of an epoch's bytes is not diagnosed
_WINDOW_SEEDS = 3  # the salt of each window's shuffle seed (tfliquid.order.derived_seed)


class InputTuner(keras.callbacks.Callback):
    """Tunes a PCR dataset's input pipeline while a Keras model trains on it: diagnose, fix, re-measure, keep or
    roll back, explain.

    Args:
      path: the PCR dataset's directory.
      preprocess: a decoded element {"image": uint8 [H, W, 3], "label", ...} -> (model input, target): the
        deterministic part of training's map, which the scan-group similarity test applies too.
      batch_size: the model's batch.
      augment: (input, target) -> (input, target), the random part of training's map, after `preprocess`.
      memory_budget: the largest MinIO cache, in bytes (default: half this machine's memory); 0: no cache.
      cache_trial: whether the first window's reads may fill a cache on trial from the moment its steps are seen
        waiting for storage (docs/tuner.md), which the diagnosis at its end keeps (the cache lever) or releases;
        False: a cache is filled only after it is applied, in a window of its own.
      dispatcher: a tf.data service dispatcher's address ("grpc://host:port"): the input may move to its workers
        when the prep holds training up.
      seed: of the shuffles (each window reads its own order) and of nothing else.
      keep_gain: the rule's gain: a change is kept when its window trains at least this many times as fast as
        the window before it, and a lever applies only when it predicts as much.
      threshold: the gradient similarity a lower scan group must reach (ScanGroupAutotuner's; paper: 0.8).
      scan_group_start: the first epoch after which the similarity test may run (the model has trained a little).
      retest_every: windows between similarity tests while the scan group is lowered; it is raised when the test
        accepts only a higher one.
      probe_batches: batches of the similarity test's probe.
      levers: the levers' names, cheapest first (default: every one: "threads", "cache", "decode size",
        "scan group", "service").

    `tuner.fit(model, ...)` takes model.fit's arguments (but the data: the tuner builds it) and returns its
    History, with the tuner's scalars of each epoch (what it ran with): tuner_images_per_second,
    tuner_data_stall_fraction, tuner_scan_group, tuner_cache_bytes, tuner_prep_threads (0: AUTOTUNE).
    `tuner.decisions` lists every decision as a dict; `str(tuner)` is the report. A `StallMonitor` in the
    callbacks instruments the data itself and reads only training's waits: the tuner's probes run between windows.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        preprocess,
        batch_size: int,
        *,
        augment=None,
        memory_budget: int | None = None,
        cache_trial: bool = True,
        dispatcher: str | None = None,
        seed: int = 0,
        keep_gain: float = KEEP_GAIN,
        threshold: float = 0.8,
        scan_group_start: int = 1,
        retest_every: int = 2,
        probe_batches: int = PROBE_BATCHES,
        levers: list[str] | None = None,
    ):
        super().__init__()
        for name, function in (("preprocess", preprocess), ("augment", augment)):
            if function is not None and not callable(function):
                raise ArgumentError(f"{name} must be callable, got {function!r}")
        if preprocess is None:
            raise ArgumentError("preprocess is required: the map from a decoded element to (model input, target)")
        self._reader = PCRDataset(path, decode=False)  # checks the path and reads the index
        self.path = os.fspath(path)
        self.preprocess, self.augment = preprocess, augment
        self.batch_size = check_int("batch_size", batch_size, 1)
        if memory_budget is None:
            memory_budget = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
        self.memory_budget = check_int("memory_budget", memory_budget, 0)
        if not isinstance(cache_trial, bool):
            raise ArgumentError(f"cache_trial must be True or False, got {cache_trial!r}")
        self.cache_trial = cache_trial
        if dispatcher is not None and not isinstance(dispatcher, str):
            raise ArgumentError(f"dispatcher must be a tf.data service address string, got {dispatcher!r}")
        self.dispatcher = dispatcher
        self.seed = check_int("seed", seed, 0)
        self.keep_gain = check_number("keep_gain", keep_gain, 1.0, what="a gain of 1 or more")
        self.threshold = check_number("threshold", threshold, 0.0, 1.0, "a cosine similarity")
        if not self.threshold:
            raise ArgumentError("threshold must be in (0, 1], got 0")
        self.scan_group_start = check_int("scan_group_start", scan_group_start, 0)
        self.retest_every = check_int("retest_every", retest_every, 1)
        self.probe_batches = check_int("probe_batches", probe_batches, 1)
        names = {lever.__name__.replace("_", " "): lever for lever in levers_module.LEVERS}
        chosen = list(names) if levers is None else list(levers)
        unknown = [name for name in chosen if name not in names]
        if unknown or not chosen:
            raise ArgumentError(f"levers must be some of {list(names)}, got {levers!r}")
        self.levers = [names[name] for name in chosen]
        self.settings = Settings(scan_group=self.full_fidelity)
        self.decisions: list[dict] = []
        self.windows: list[Window] = []
        self._monitor = StallMonitor()  # replaced by the caller's, when fit's callbacks hold one
        self._pending = None  # (proposal, the settings before it, the window before it, windows left to settle)
        self._considered: set = set()  # (lever, diagnosis kind, reason) already recorded
        self._tried: set = set()  # levers applied (kept or rolled back): each is tried once
        self._caches: dict = {}  # (capacity, scan group) -> its MinIOCache
        self._trial = None  # the first window's CacheTrial, until the window's end decides on it
        self._similarity = None  # (decode size, the ScanGroupAutotuner that runs the similarity test)
        self._last_test_epoch = None
        self._steady = None  # (settings, window, scan group testable) after which no lever applied
        self._window = None  # (first step's start, last step's end): each (wall clock, counters)
        self._held_at_start = 0  # the bytes the window's cache held at its start
        self._epoch = 0
        self._fitting = False

    # -- what the levers ask (levers.py) --

    @property
    def full_fidelity(self) -> int:
        return self._reader.num_scan_groups

    @property
    def model_size(self) -> tuple[int, int] | None:
        shape = getattr(self.model, "input_shape", None)
        if not shape or len(shape) != 4 or None in shape[1:3]:
            return None
        return int(shape[1]), int(shape[2])

    @property
    def num_records(self) -> int:
        return self._reader.num_records

    @property
    def num_images(self) -> int:
        return self._reader.num_images

    @property
    def cores(self) -> int:
        return os.cpu_count() or 1

    def trial_bytes(self, capacity: int, scan_group: int) -> int:
        """The bytes the cache on trial holds, if it is of this capacity and scan group (else 0)."""
        trial = self._trial
        return trial.held_bytes() if trial is not None and trial.key == (capacity, scan_group) else 0

    def record_bytes(self, scan_group: int) -> list[int]:
        return self._reader.record_bytes(scan_group)

    def bytes_per_epoch(self, scan_group: int) -> int:
        return self._reader.bytes_per_epoch(scan_group)

    def plan_threads(self, settings: Settings):
        items = self._probe_items()  # a dataset smaller than a batch is planned on its one partial batch
        pipeline = self._pipeline(settings)
        return plan_threads(pipeline.replace(batch_size=min(items, pipeline.batch_size)), subset_items=items)

    def prep_rate(self, settings: Settings) -> float:
        """Items/s of the prep (decode, preprocess, augment) at `settings`, over probe batches held in memory."""
        pipeline = self._pipeline(settings)
        job = phases.Job(None, pipeline, self._probe_items(), 0, self.cores, 1, 1, PROBE_SECONDS)
        return max(job.prep_pass(pipeline, job.subset())() for _ in range(2))

    def fetch_rate(self, settings: Settings) -> float:
        """Items/s the reads deliver at `settings`: storage's bytes/s read without the cache, over an item's bytes
        at the scan group, over 1 - h where the settings' cache holds the share h of those bytes. The bytes are
        every byte the process read (readers read whole records, several at once, ahead of the items they yield),
        over FETCH_PROBE_SECONDS from the first item on (before it, the readers start up); the whole read, from
        the start, where the first item brought every byte."""
        start, before = time.perf_counter(), process_bytes_read()
        reads = iter(self._pipeline(settings).reads())
        next(reads)
        first, at_first = time.perf_counter(), process_bytes_read()
        for _ in reads:
            if time.perf_counter() - first >= FETCH_PROBE_SECONDS:
                break
        end, read = time.perf_counter(), process_bytes_read()
        if read == at_first:  # nothing more to read after the first item
            first, at_first = start, before
        bytes_per_second = (read - at_first) / max(end - first, 1e-9)
        storage = bytes_per_second / (self.bytes_per_epoch(settings.scan_group) / self.num_images)
        held = self.cache_share(settings)
        return math.inf if held >= 1 else storage / (1 - held)

    def cache_share(self, settings: Settings) -> float:
        """The share of an epoch's bytes at the settings' scan group that their cache holds (0 without one)."""
        return min(1.0, self._cached_bytes(settings) / self.bytes_per_epoch(settings.scan_group))

    def _cached_bytes(self, settings: Settings) -> int:
        """What the settings' cache holds (0 without one); asking creates and releases none."""
        cache = self._caches.get((settings.cache_bytes, settings.scan_group))
        return 0 if cache is None else cache.stats().bytes

    @property
    def scan_group_testable(self) -> bool:
        return self.full_fidelity > 1 and self._epoch >= self.scan_group_start

    def accepted_scan_group(self) -> tuple[int, dict]:
        """(the lowest scan group the similarity test accepts, each group's similarity): ScanGroupAutotuner.tune
        on its probe, with this tuner's preprocess and decode."""
        size = self.settings.decode_size
        if self._similarity is None or self._similarity[0] != size:
            group = tf.Variable(self.full_fidelity, dtype=tf.int64, trainable=False)
            dataset = PCRDataset(self.path, scan_group=group, decode_size=size, shuffle=False)
            test = ScanGroupAutotuner(
                dataset,
                threshold=self.threshold,
                preprocess=self.preprocess,
                probe_batches=self.probe_batches,
                probe_batch_size=self.batch_size,
            )
            self._similarity = (size, test)
        test = self._similarity[1]
        test.threshold = self.threshold  # as the tuner's is now
        test.set_model(self.model)
        decision = test.tune(self._epoch)
        self._last_test_epoch = self._epoch
        return decision["scan_group"], decision["similarities"]

    # -- the pipeline --

    def _probe_items(self) -> int:
        return min(self._reader.num_images, PROBE_BATCHES * self.batch_size)

    def _training_map(self, element):
        example = self.preprocess(element)
        return example if self.augment is None else self.augment(*example)

    def _pipeline(self, settings: Settings, epoch: int = 0) -> InputPipeline:
        pipeline = pcr_pipeline(
            self.path,
            self._training_map,
            self.batch_size,
            scan_group=settings.scan_group,
            prep_parallelism=settings.prep_parallelism,
            read_parallelism=settings.read_parallelism,
            seed=derived_seed(self.seed, epoch, 0, _WINDOW_SEEDS),
        )
        size = settings.decode_size
        decode = decode_jpeg if size is None else (lambda data: decode_jpeg_at_size(data, size))
        return pipeline.replace(decode=decode, files=())  # the probes read storage as training does

    def _cache(self, settings: Settings) -> MinIOCache | None:
        """The MinIO cache of these settings (None without one): one per (capacity, scan group), since a
        record's cached prefix is its group's; the one before is released."""
        key = (settings.cache_bytes, settings.scan_group)
        if key not in self._caches:
            self._hold_only(key, MinIOCache(settings.cache_bytes) if settings.cache_bytes else None)
        return self._caches.get(key)

    def _hold_only(self, key: tuple[int, int], cache: MinIOCache | None) -> None:
        """Releases every cache held and holds `cache` (None: none) under `key`."""
        for old in self._caches.values():
            old.release()
        self._caches = {} if cache is None else {key: cache}

    def _trial_cache(self, settings: Settings) -> MinIOCache | None:
        """The first window's cache on trial (cache_trial.py), where the cache lever could apply to it: created once,
        before any window ran."""
        if self._trial is None and not self.windows and self.cache_trial:
            capacity = levers_module.cache_capacity(self, settings.scan_group)
            useful = levers_module.cache in self.levers and not settings.cache_bytes
            if useful and capacity >= min(self.record_bytes(settings.scan_group)) * levers_module.CACHE_SLACK:
                steps = math.ceil(self.num_images / self.batch_size)
                self._trial = CacheTrial(capacity, settings.scan_group, steps, self.cores)
        trial = self._trial
        return trial.cache if trial is not None and trial.scan_group == settings.scan_group else None

    def _decide_trial(self) -> None:
        """At the first window's end: the cache lever, applied at the trial's capacity and scan group, adopts the
        cache on trial with what it holds; otherwise it is released."""
        trial, self._trial = self._trial, None
        if trial is None:
            return
        if trial.opened_after is not None and (self.settings.cache_bytes, self.settings.scan_group) == trial.key:
            self._hold_only(trial.key, trial.cache)
            return
        held = trial.held_bytes()
        trial.cache.release()
        if trial.opened_after is not None:
            diagnosis = next((d["diagnosis"] for d in reversed(self.decisions) if d["action"] == "diagnose"), None)
            self._record(
                "release",
                lever="cache",
                why=f"the cache on trial held {held:,} bytes; the window was {diagnosis}: no cache applied",
            )

    def dataset_for(self, settings: Settings, epoch: int, monitor: StallMonitor | None = None) -> tf.data.Dataset:
        """The training batches the settings build for `epoch`, instrumented by `monitor` (default: the tuner's)."""
        pipeline = self._pipeline(settings, epoch)
        dataset = pipeline.dataset(cache=self._cache(settings) or self._trial_cache(settings))
        if settings.prep_parallelism is not None:  # a thread plan: one pool, no autotuner competing with it
            options = tf.data.Options()
            options.threading.private_threadpool_size = self.cores
            options.autotune.enabled = False
            dataset = dataset.with_options(options)
        if settings.service:
            service = tf.data.experimental.service
            # Each record once over the workers, a job per window.
            job = f"input-tuner-{id(self)}-{epoch}"
            dataset = dataset.apply(service.distribute(service.ShardingPolicy.DYNAMIC, self.dispatcher, job_name=job))
        return (monitor or self._monitor).instrument(dataset)

    @property
    def dataset(self) -> tf.data.Dataset:
        """The batches the current settings build (the next window's pipeline), for inspection."""
        return self.dataset_for(self.settings, len(self.windows))

    # -- the loop --

    def fit(self, model, epochs: int = 1, initial_epoch: int = 0, callbacks=None, **fit_arguments):
        """model.fit(the tuned data, ...) one window (epoch) at a time, the pipeline rebuilt between them with the
        tuner's settings; returns a History of every epoch. Callbacks see one training: their on_train_begin and
        on_train_end run once."""
        for name in ("x", "y", "batch_size"):
            if name in fit_arguments:
                raise ArgumentError(f"InputTuner.fit builds the training data itself: it takes no {name}=")
        check_int("epochs", epochs, 1)
        check_int("initial_epoch", initial_epoch, 0)
        callbacks = list(callbacks or [])
        monitors = [c for c in callbacks if isinstance(c, StallMonitor)]
        if len(monitors) > 1:
            raise ArgumentError("InputTuner.fit takes one StallMonitor in its callbacks, which instruments its data")
        self._monitor = monitors[0] if monitors else self._monitor
        windows = _AcrossWindows(callbacks)
        stop = _WindowEnd(self, windows)
        history, self._fitting = {}, True
        if epochs > initial_epoch:
            _trace_train_step(model, self.dataset_for(self.settings, initial_epoch, self._monitor))
        try:
            for epoch in range(initial_epoch, epochs):
                windows.last = epoch == epochs - 1
                data = self.dataset_for(self.settings, epoch, self._monitor)
                fit = model.fit(
                    data, epochs=epochs, initial_epoch=epoch, callbacks=[self, windows, stop], **fit_arguments
                )
                for key, values in fit.history.items():
                    history.setdefault(key, []).extend(values)
                windows.first = False
                if stop.user_stopped:
                    break
        finally:
            self._fitting = False
        merged = keras.callbacks.History()
        merged.set_model(model)
        merged.history, merged.epoch = history, list(range(initial_epoch, initial_epoch + len(history.get("loss", []))))
        return merged

    def on_train_begin(self, logs=None):
        if not self._fitting:
            raise ArgumentError(
                "InputTuner changes the pipeline between windows, which model.fit cannot: call "
                "tuner.fit(model, epochs=..., ...) with model.fit's other arguments instead"
            )

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._window = epoch, None
        self._held_at_start = self._cached_bytes(self.settings)

    def _mark(self) -> tuple:
        return time.perf_counter(), self._monitor.counters()

    def on_train_batch_begin(self, batch, logs=None):
        if self._window is None:
            self._window = (self._mark(), None)

    def on_train_batch_end(self, batch, logs=None):
        self._window = (self._window[0], self._mark())
        trial = self._trial
        if trial is not None and trial.after_batch(batch, self._window[1][1][0] - self._window[0][1][0]):
            self._record("trial", lever="cache", why=f"admission opened after step {batch}: {trial.evidence}")

    def on_epoch_end(self, epoch, logs=None):
        if self._window is None or self._window[1] is None:
            raise ArgumentError("InputTuner: an epoch without a train step has no window to measure")
        (start, (waited0, _, items0)), (end, (waited1, _, items1)) = self._window
        window = Window(epoch, items1 - items0, end - start, waited1 - waited0)
        self.windows.append(window)
        ran = self.settings
        self._end_window(window)
        self._decide_trial()
        if logs is not None:  # the window's: its settings, not the next one's
            logs["tuner_images_per_second"] = window.rate
            logs["tuner_data_stall_fraction"] = window.stall
            logs["tuner_scan_group"] = ran.scan_group
            logs["tuner_cache_bytes"] = ran.cache_bytes
            logs["tuner_prep_threads"] = ran.prep_parallelism or 0

    def _record(self, action: str, **fields) -> None:
        self.decisions.append({"epoch": self._epoch, "action": action, **fields})

    def _end_window(self, window: Window) -> None:
        """Judges the pending change, or re-tests a lowered scan group, or diagnoses and applies a lever."""
        if self._pending is not None:
            proposal, before_settings, before, settle = self._pending
            if settle:
                self._pending = (proposal, before_settings, before, settle - 1)
                self._record("settle", lever=proposal.lever, why="the window after the change fills the cache")
                return
            self._pending = None
            kept = window.rate >= self.keep_gain * before.rate
            self._record(
                "keep" if kept else "roll back",
                lever=proposal.lever,
                change=proposal.settings.changes(before_settings),
                before_images_per_second=before.rate,
                predicted_images_per_second=proposal.predicted_rate,
                measured_images_per_second=window.rate,
                rule=f"kept when at least {self.keep_gain:g}x the window before it",
            )
            if not kept:  # the next window runs the settings before it again, and is diagnosed
                self.settings = before_settings
                return
        if self._filled_in(window):
            return
        if self._retest_due() and self._raised():
            return
        if self._still_steady(window):
            return
        diagnosis = diagnose(window, lambda: Probes(self.fetch_rate(self.settings), self.prep_rate(self.settings)))
        self._record("diagnose", diagnosis=str(diagnosis), kind=diagnosis.kind, evidence=diagnosis.evidence())
        applied = diagnosis.input_bound and self._apply_a_lever(diagnosis)
        self._steady = None if applied else (self.settings, window, self.scan_group_testable)

    def _filled_in(self, window: Window) -> bool:
        """Whether the window's cache grew by more than FILLED_SHARE of an epoch's bytes during it: its reads were
        then not what the cache gives now, and the next window is diagnosed instead."""
        epoch_bytes = self.bytes_per_epoch(self.settings.scan_group)
        before, after = self._held_at_start, self._cached_bytes(self.settings)
        if after - before <= FILLED_SHARE * epoch_bytes:
            return False
        self._record(
            "fill",
            lever="cache",
            why=f"the window filled the cache from {before / epoch_bytes:.0%} to {after / epoch_bytes:.0%} of the "
            "records' bytes: the next window is diagnosed",
        )
        return True

    def _still_steady(self, window: Window) -> bool:
        """Whether the window ran the settings of a window after which no lever applied, at a rate within the
        rule's gain of it, with no lever become possible since: then nothing is diagnosed or probed again."""
        if self._steady is None:
            return False
        settings, before, testable = self._steady
        if settings != self.settings or testable != self.scan_group_testable:
            return False
        if max(window.rate / before.rate, before.rate / window.rate) >= self.keep_gain:
            return False
        self._record(
            "steady",
            why=f"{window.rate:.0f} images/s with the settings of epoch {before.epoch} ({before.rate:.0f}), "
            "after which no lever applied",
        )
        return True

    def _retest_due(self) -> bool:
        lowered = self.settings.scan_group < self.full_fidelity
        return lowered and self._epoch - (self._last_test_epoch or 0) >= self.retest_every

    def _raised(self) -> bool:
        """Re-runs the similarity test at a lowered scan group; raises the group where it accepts only a higher
        one. Accuracy comes first: a raise is not judged by its rate."""
        accepted, similarities = self.accepted_scan_group()
        tested = ", ".join(f"{g}: {s:.3f}" for g, s in similarities.items())
        if accepted <= self.settings.scan_group:
            self._record("retest", lever="scan group", why=f"the similarity test still accepts {accepted} ({tested})")
            return False
        before = self.settings
        self.settings = dataclasses.replace(before, scan_group=accepted)
        self._record("raise", lever="scan group", change=self.settings.changes(before), evidence=tested)
        return True

    def _apply_a_lever(self, diagnosis: Diagnosis) -> bool:
        """Applies the first lever that predicts the rule's gain; True if one did."""
        floor = self.keep_gain * diagnosis.window.rate
        for lever in self.levers:
            name = lever.__name__.replace("_", " ")
            if name in self._tried:
                continue
            proposal = lever(self, diagnosis, self.settings)
            if isinstance(proposal, str) or proposal.predicted_rate < floor:
                why = proposal if isinstance(proposal, str) else _too_little(proposal, diagnosis.window)
                if (name, diagnosis.kind, why) not in self._considered:
                    self._considered.add((name, diagnosis.kind, why))
                    self._record("skip", lever=name, why=why)
                continue
            self._tried.add(name)
            self._pending = (proposal, self.settings, diagnosis.window, proposal.settle)
            before, self.settings = self.settings, proposal.settings
            self._record(
                "apply",
                lever=name,
                change=proposal.settings.changes(before),
                evidence=proposal.reason,
                before_images_per_second=diagnosis.window.rate,
                predicted_images_per_second=proposal.predicted_rate,
            )
            return True
        for line in advice(self, diagnosis, self.settings):
            if ("advice", line) not in self._considered:
                self._considered.add(("advice", line))
                self._record("advise", why=line)
        return False

    def __str__(self) -> str:
        return report(self)


def _trace_train_step(model, data: tf.data.Dataset) -> None:
    """Traces model.fit's train function on one batch of `data` (an iterator of the same type and element spec as
    fit's), then restores every weight and optimizer variable: the first window then times steps, not the tracing,
    during which the pipeline would fill its buffers unseen."""
    variables = list(model.variables) + list(getattr(model.optimizer, "variables", []))
    values = [v.numpy() for v in variables]
    model.make_train_function()
    model.train_function(iter(data.take(1)))
    for variable, value in zip(variables, values):
        variable.assign(value)


def _too_little(proposal: Proposal, window: Window) -> str:
    return (
        f"predicts {proposal.predicted_rate:.0f} images/s against {window.rate:.0f} now ({proposal.reason}): "
        "below the rule's gain"
    )


class _AcrossWindows(keras.callbacks.Callback):
    """The caller's callbacks across the tuner's model.fit calls, one per window: on_train_begin in the first
    window only and on_train_end in the last, the rest as model.fit calls them."""

    def __init__(self, callbacks: list):
        super().__init__()
        self.callbacks, self.first, self.last = callbacks, True, False

    def set_model(self, model):
        super().set_model(model)
        for callback in self.callbacks:
            callback.set_model(model)

    def set_params(self, params):
        super().set_params(params)
        for callback in self.callbacks:
            callback.set_params(params)

    def _each(self, hook: str, *args, **kwargs) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(*args, **kwargs)

    def on_train_begin(self, logs=None):
        if self.first:
            self._each("on_train_begin", logs)

    def on_train_end(self, logs=None):
        if self.last:
            self._each("on_train_end", logs)


for _hook in (
    "on_epoch_begin",
    "on_epoch_end",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_begin",
    "on_test_end",
    "on_test_batch_begin",
    "on_test_batch_end",
):
    setattr(_AcrossWindows, _hook, lambda self, *args, _hook=_hook, **kwargs: self._each(_hook, *args, **kwargs))


class _WindowEnd(keras.callbacks.Callback):
    """Ends model.fit after each window, last in the callbacks: a stop the caller's callbacks asked for (early
    stopping) ends the tuner's training too, and is the last window."""

    def __init__(self, tuner: InputTuner, windows: _AcrossWindows):
        super().__init__()
        self.tuner, self.windows, self.user_stopped = tuner, windows, False

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training:
            self.user_stopped = self.windows.last = True
        self.model.stop_training = True
