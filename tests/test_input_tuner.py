"""InputTuner on real PCR datasets of photo crops and real model.fit runs: each diagnosis (storage, CPU, compute),
levers applied, kept and rolled back, the scan group lowered and raised again, and the callbacks' composition
(StallMonitor, TensorBoard, the caller's own) across the tuner's windows."""

import dataclasses
import glob

import keras
import pytest
import tensorflow as tf

import tfliquid
from tfliquid._common.errors import ArgumentError
from tfliquid.keras.tuner import levers
from tfliquid.keras.tuner.diagnosis import CPU, Diagnosis, Probes, Window
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos

pytestmark = pytest.mark.slow

SLOW_DISK = 1e6  # bytes/s: the small dataset's epoch reads in about a second


def _pcr(root, name, per_class, size, images_per_record):
    folder = root / name
    sample_photos.write_image_folder(str(folder), per_class, size=size, seed=len(name))
    tfliquid.pcr.convert(str(folder), str(root / f"{name}-pcr"), images_per_record=images_per_record, progress=False)
    return str(root / f"{name}-pcr")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuner")
    return {
        "small": _pcr(root, "small", 24, 96, 24),  # 240 crops of 96 x 96 in 10 records
        "large": _pcr(root, "large", 20, 512, 20),  # 200 crops of 512 x 512: their decode is the work
        "few": _pcr(root, "few", 6, 96, 20),  # 60 crops, for a slow model
    }


@pytest.fixture
def slow_disk():
    tfliquid.io.set_read_bandwidth(SLOW_DISK)
    yield
    tfliquid.io.set_read_bandwidth(None)


def _model(seed=0):
    keras.utils.set_random_seed(seed)
    return sample_model.small_cnn(10)


def _linear_model(seed=0):
    """A classifier whose step costs far less than decoding the large crops, so that their input is CPU-bound on
    any machine (the small CNN's step is near the decode's time on 2 shared cores)."""
    keras.utils.set_random_seed(seed)
    head = keras.Sequential(
        [
            keras.Input((sample_model.IMAGE_SIZE, sample_model.IMAGE_SIZE, 3)),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    return sample_model.compiled(head)


def _actions(tuner, action):
    return [d for d in tuner.decisions if d["action"] == action]


class _Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append("train_begin")

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(epoch)

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


# With the cache on trial, the first window fills the cache from its fourth step on; without it, the window after
# the cache's is the fill. The StallMonitor is listed before the tuner's other callbacks in one and after in the other.
@pytest.mark.parametrize("cache_trial", [True, False], ids=["cache trial, monitor first", "no trial, monitor last"])
def test_a_storage_bound_job_gets_a_cache_that_is_kept(datasets, slow_disk, tmp_path, cache_trial):
    monitor, recorder = tfliquid.keras.StallMonitor(), _Recorder()
    board = keras.callbacks.TensorBoard(str(tmp_path / "logs"))
    callbacks = [monitor, board, recorder] if cache_trial else [recorder, board, monitor]
    tuner = tfliquid.keras.InputTuner(datasets["small"], sample_model.preprocess, 16, cache_trial=cache_trial)
    history = tuner.fit(_model(), epochs=3, verbose=0, callbacks=callbacks)

    if cache_trial:  # opened after the check's steps (the 15 steps' eighth, at least 3), before the diagnosis
        trial = tuner.decisions.pop(0)
        assert (trial["epoch"], trial["action"]) == (0, "trial"), tuner
        assert trial["why"].startswith("admission opened after step 3: steps 1-3 waited"), tuner
    first = tuner.decisions[0]
    assert (first["epoch"], first["action"], first["kind"]) == (0, "diagnose", "storage"), tuner
    applied = _actions(tuner, "apply")[0]  # (once cached, the CPU may hold it up, and a lever of its own apply)
    assert (applied["epoch"], applied["lever"]) == (0, "cache"), str(tuner)
    assert applied["predicted_images_per_second"] >= 1.05 * applied["before_images_per_second"]
    assert ("the cache on trial holds" in applied["evidence"]) == cache_trial, tuner
    [kept] = _actions(tuner, "keep")
    assert (kept["epoch"], kept["lever"]) == (1 if cache_trial else 2, "cache"), tuner
    assert kept["measured_images_per_second"] >= 1.05 * kept["before_images_per_second"]
    if cache_trial:  # the kept window read the rest from storage, filling the cache: not diagnosed
        [filled] = _actions(tuner, "fill")
        assert filled["epoch"] == 1 and "to 100% of the records' bytes" in filled["why"], tuner
        assert [d["epoch"] for d in _actions(tuner, "diagnose")] == [0, 2], tuner
    assert tuner.settings.cache_bytes > 0 and "keep cache" in str(tuner)

    # One training for the caller's callbacks; History and TensorBoard carry the tuner's scalars.
    assert recorder.calls == ["train_begin", 0, 1, 2, "train_end"]
    assert len(history.history["loss"]) == 3 and history.epoch == [0, 1, 2]
    assert history.history["tuner_cache_bytes"] == [0, tuner.settings.cache_bytes, tuner.settings.cache_bytes]
    events = glob.glob(str(tmp_path / "logs" / "train" / "events.out.tfevents.*"))
    tags = {
        value.tag
        for path in events
        for event in tf.compat.v1.train.summary_iterator(path)
        for value in event.summary.value
    }
    assert {"epoch_tuner_images_per_second", "epoch_tuner_data_stall_fraction"} <= tags
    # The StallMonitor, in either place, times training's waits as the tuner does: the tuner's probes, between
    # windows, are not stalls (they would add a second or more to an epoch's waits).
    for ours, theirs in zip(history.history["tuner_data_stall_fraction"], history.history["data_stall_fraction"]):
        assert abs(theirs - ours) < 0.05, history.history


class _SlowerDisk(keras.callbacks.Callback):
    """Storage becomes `factor` times slower from `epoch` on."""

    def __init__(self, epoch, factor):
        super().__init__()
        self.epoch, self.factor = epoch, factor

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            tfliquid.io.set_read_bandwidth(SLOW_DISK / self.factor)


def test_a_change_that_does_not_pay_is_rolled_back_and_not_tried_again(datasets, slow_disk):
    half = tfliquid.PCRDataset(datasets["few"], decode=False).bytes_per_epoch() // 2  # a record of its three
    tuner = tfliquid.keras.InputTuner(
        datasets["few"], sample_model.preprocess, 10, memory_budget=half, levers=["cache"], cache_trial=False
    )
    tuner.fit(_model(), epochs=4, verbose=0, callbacks=[_SlowerDisk(1, 3)])

    [applied] = _actions(tuner, "apply")
    assert (applied["epoch"], applied["lever"]) == (0, "cache"), str(tuner)
    [rolled_back] = _actions(tuner, "roll back")
    assert (rolled_back["epoch"], rolled_back["lever"]) == (2, "cache"), tuner
    assert rolled_back["measured_images_per_second"] < 1.05 * rolled_back["before_images_per_second"]
    assert tuner.settings.cache_bytes == 0 and "roll back cache" in str(tuner)
    diagnosed = [d["epoch"] for d in _actions(tuner, "diagnose")]
    assert diagnosed == [0, 3], tuner  # the rolled-back settings' window is diagnosed, and the cache not tried again


class _FastDiskAfter(keras.callbacks.Callback):
    """Storage's throttle is lifted after `step` of the first epoch (after the tuner's callback has seen it)."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.step:
            tfliquid.io.set_read_bandwidth(None)


def test_a_cache_on_trial_is_released_when_the_window_turns_out_cpu_bound(datasets, slow_disk):
    # The large crops wait for the slow disk in the steps the trial checks, then for their decodes.
    tuner = tfliquid.keras.InputTuner(datasets["large"], sample_model.preprocess, 10, levers=["cache", "decode size"])
    tuner.fit(_linear_model(), epochs=1, verbose=0, callbacks=[_FastDiskAfter(3)])

    assert [d["action"] for d in tuner.decisions[:2]] == ["trial", "diagnose"], str(tuner)
    assert tuner.decisions[1]["kind"] == "cpu", str(tuner)
    [released] = _actions(tuner, "release")
    held = int(released["why"].split(" held ")[1].split(" bytes")[0].replace(",", ""))
    assert held > 0 and "the window was input-bound on CPU: no cache applied" in released["why"], str(tuner)
    assert tuner.settings.cache_bytes == 0 and not tuner._caches and tuner._trial is None


def test_a_trial_cache_never_opened_is_not_kept_and_the_cache_lever_fills_its_own(datasets):
    tuner = tfliquid.keras.InputTuner(datasets["few"], sample_model.preprocess, 10)
    first = tuner.settings
    trial_cache = tuner._trial_cache(first)  # the first window's, closed: its steps were never seen waiting
    assert trial_cache is not None and tuner._trial.opened_after is None
    tuner.settings = dataclasses.replace(first, cache_bytes=tuner._trial.capacity)  # the cache lever applied
    tuner._decide_trial()
    assert tuner._trial is None and not tuner._caches and trial_cache.stats().items == 0  # released
    for _ in tuner.dataset_for(tuner.settings, 1):  # the lever's own cache admits what the window reads
        pass
    [cache] = tuner._caches.values()
    assert cache is not trial_cache and cache.stats().items == tuner.num_records


def test_a_cpu_bound_job_decodes_at_the_models_size(datasets):
    tuner = tfliquid.keras.InputTuner(datasets["large"], sample_model.preprocess, 10, levers=["decode size"])
    tuner.fit(_linear_model(), epochs=2, verbose=0)

    first = tuner.decisions[0]
    assert (first["epoch"], first["kind"]) == (0, "cpu"), str(tuner)
    [applied] = _actions(tuner, "apply")
    assert applied["lever"] == "decode size" and "decode_size: AUTOTUNE -> (64, 64)" in applied["change"], str(tuner)
    # Judged on the next window by the rule (the gain a 2-core machine shared with other work shows varies: the
    # benchmark measures it; a kept and a rolled-back change are tested on storage above).
    judged = [d for d in tuner.decisions if d["action"] in ("keep", "roll back")]
    assert len(judged) == 1, str(tuner)
    [judged] = judged
    gain = judged["measured_images_per_second"] / judged["before_images_per_second"]
    assert (judged["action"] == "keep") == (gain >= 1.05), str(tuner)
    assert tuner.settings.decode_size == ((64, 64) if judged["action"] == "keep" else None)


def test_the_thread_split_proposed_is_the_plans_and_trains(datasets):
    tuner = tfliquid.keras.InputTuner(datasets["large"], sample_model.preprocess, 10)
    model = _model()
    tuner.set_model(model)
    settings = tuner.settings
    probes = Probes(tuner.fetch_rate(settings), tuner.prep_rate(settings))
    window = Window(0, 200, 200 / (0.8 * probes.prep), 0.2 * 200 / (0.8 * probes.prep))  # prep-bound
    proposal = levers.threads(tuner, Diagnosis(CPU, window, probes), settings)
    assert isinstance(proposal, levers.Proposal), proposal
    assert 1 <= proposal.settings.prep_parallelism <= tuner.cores and proposal.settings.read_parallelism >= 1
    assert proposal.reason.startswith("thread plan on") and proposal.predicted_rate > 0
    history = model.fit(tuner.dataset_for(proposal.settings, 0), epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1


@pytest.fixture
def service_cluster():
    service = tf.data.experimental.service
    dispatcher = service.DispatchServer()
    worker = service.WorkerServer(service.WorkerConfig(dispatcher_address=dispatcher.target.split("://")[1]))
    yield dispatcher.target
    worker.stop()
    dispatcher.stop()


def test_the_input_moves_to_tf_data_service_workers_and_every_image_arrives(datasets, service_cluster):
    tuner = tfliquid.keras.InputTuner(
        datasets["large"], sample_model.preprocess, 10, dispatcher=service_cluster, levers=["service"], keep_gain=1.0
    )
    counter = _ImagesCounted()
    tuner.fit(_linear_model(), epochs=2, verbose=0, callbacks=[counter])
    [applied] = _actions(tuner, "apply")
    assert (applied["epoch"], applied["lever"]) == (0, "service"), str(tuner)
    assert counter.images == [200, 200]  # an epoch of batches through the workers, as without them
    [judged] = [d for d in tuner.decisions if d["action"] in ("keep", "roll back")]
    assert tuner.settings.service == (judged["action"] == "keep"), str(tuner)


class _ImagesCounted(keras.callbacks.Callback):
    """The images each epoch trained on, from the size of each batch."""

    def __init__(self):
        super().__init__()
        self.images = []

    def on_epoch_begin(self, epoch, logs=None):
        self.images.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.images[-1] += 10


def _slow_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((64, 64, 3)),
            keras.layers.Conv2D(48, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(96, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class _StopAt(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = epoch == self.epoch


def test_a_compute_bound_job_is_left_alone_and_a_callbacks_stop_ends_it(datasets):
    tuner = tfliquid.keras.InputTuner(datasets["few"], sample_model.preprocess, 10)
    history = tuner.fit(_slow_model(), epochs=5, verbose=0, callbacks=[_StopAt(1)])

    assert len(history.history["loss"]) == 2  # stopped after epoch 1, as model.fit would
    diagnoses = {d["epoch"]: d["kind"] for d in _actions(tuner, "diagnose")}
    assert diagnoses[0] == "compute", str(tuner)
    assert not _actions(tuner, "trial"), str(tuner)  # its first steps did not wait: no cache on trial filled
    # Nothing is applied after a compute-bound window. (A later window may wait for storage on a machine whose other
    # work evicts the dataset from the page cache; then a lever may apply, and rightly.)
    assert all(diagnoses[d["epoch"]] != "compute" for d in _actions(tuner, "apply")), str(tuner)
    if all(kind == "compute" for kind in diagnoses.values()):
        assert tuner.settings == levers.Settings(tuner.full_fidelity), str(tuner)


class _StricterTest(keras.callbacks.Callback):
    """From `epoch` on, the similarity test accepts only full fidelity."""

    def __init__(self, tuner, epoch):
        super().__init__()
        self.tuner, self.epoch = tuner, epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            self.tuner.threshold = 1.0


def test_the_scan_group_is_lowered_while_input_bound_and_raised_when_the_test_says_so(datasets, slow_disk):
    tuner = tfliquid.keras.InputTuner(
        datasets["few"], sample_model.preprocess, 10, memory_budget=0, threshold=1e-6, retest_every=1, probe_batches=2
    )
    history = tuner.fit(_model(), epochs=4, verbose=0, callbacks=[_StricterTest(tuner, 2)])

    assert [d["epoch"] for d in _actions(tuner, "apply")] == [1], str(tuner)  # the test runs from epoch 1 on
    [applied] = _actions(tuner, "apply")
    assert applied["lever"] == "scan group" and "scan_group: 7 -> " in applied["change"], tuner
    [kept] = _actions(tuner, "keep")
    assert kept["epoch"] == 2, tuner
    [raised] = _actions(tuner, "raise")
    assert raised["epoch"] == 2 and tuner.settings.scan_group == tuner.full_fidelity, tuner
    lowered = history.history["tuner_scan_group"][2]
    assert history.history["tuner_scan_group"] == [7, 7, lowered, 7] and lowered < 7  # what each epoch read


def test_the_tuner_runs_the_fit_itself(datasets):
    tuner = tfliquid.keras.InputTuner(datasets["few"], sample_model.preprocess, 10)
    model = _model()
    with pytest.raises(ArgumentError, match=r"call tuner.fit\(model"):
        model.fit(tuner.dataset, epochs=1, verbose=0, callbacks=[tuner])
    with pytest.raises(ArgumentError, match="builds the training data itself"):
        tuner.fit(model, x=tuner.dataset)
    with pytest.raises(ArgumentError, match="levers must be some of"):
        tfliquid.keras.InputTuner(datasets["few"], sample_model.preprocess, 10, levers=["more memory"])
