"""ScanGroupAutotuner on real PCR datasets of photo crops: a task decided by coarse colour tunes down to a low
scan group, one decided by fine texture (gone from the low scans) keeps a high one; the probe leaves the model,
optimizer, BatchNorm statistics, metrics and random state bit-identical and reads the same images at every group."""

import glob
import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.pcr import format as pcr_format
from tfliquid.samples.photos import load_photos

SIZE = 48


def _write_task(folder, task, per_class=96, seed=0):
    """Photo crops whose label is their tint (colour) or a 1-pixel checkerboard over their grey (texture)."""
    photos = [p for _, p in load_photos()]
    rng = np.random.default_rng(seed)
    for label in (0, 1):
        os.makedirs(os.path.join(folder, f"class{label}"))
        for i in range(per_class):
            photo = photos[int(rng.integers(len(photos)))]
            side = int(rng.integers(64, min(photo.size)))
            x, y = int(rng.integers(0, photo.width - side)), int(rng.integers(0, photo.height - side))
            crop = np.asarray(photo.crop((x, y, x + side, y + side)).resize((SIZE, SIZE)), np.float32)
            if task == "colour":
                crop = crop * (np.array([1.0, 0.45, 0.45]) if label == 0 else np.array([0.45, 0.45, 1.0]))
            else:
                crop = crop.mean(axis=2, keepdims=True).repeat(3, axis=2)
                if label == 1:
                    yy, xx = np.mgrid[:SIZE, :SIZE]
                    crop += np.where((yy + xx) % 2 == 0, 40.0, -40.0)[..., None]
            Image.fromarray(np.clip(crop, 0, 255).astype(np.uint8)).save(
                os.path.join(folder, f"class{label}", f"{i:03d}.png")
            )


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("autotune")
    paths = {}
    for task in ("colour", "texture"):
        _write_task(str(root / task), task)
        paths[task] = str(root / f"{task}-pcr")
        tfliquid.pcr.convert(str(root / task), paths[task], images_per_record=32, quality=95, progress=False)
    return paths


def _groups(path) -> int:
    """The dataset's scan groups: its last is full fidelity (7 for colour images with the fast script)."""
    return pcr_format.read_index(path).num_scan_groups


def _prep(x):
    return tf.image.resize(x["image"], [SIZE, SIZE]) / 255.0, x["label"]


def _model(batch_norm=False):
    layers = [keras.Input((SIZE, SIZE, 3)), keras.layers.Conv2D(16, 3, activation="relu")]
    if batch_norm:
        layers += [keras.layers.BatchNormalization(), keras.layers.Dropout(0.3)]
    layers += [
        keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(2),
    ]
    model = keras.Sequential(layers)
    model.compile(
        keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
    )
    return model


class _BytesPerEpoch(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.bytes = []

    def on_epoch_begin(self, epoch, logs=None):
        self._before = tfliquid.io.read_stats()["bytes_read"]

    def on_epoch_end(self, epoch, logs=None):
        self.bytes.append(tfliquid.io.read_stats()["bytes_read"] - self._before)


def _train_with_tuner(path, epochs=5, **tuner_args):
    keras.utils.set_random_seed(0)
    # Given the directory, the tuner builds the PCRDataset with a scan group variable of its own.
    tuner = tfliquid.keras.ScanGroupAutotuner(
        path, start_epoch=3, every=1, probe_batches=2, probe_batch_size=32, dataset_options={"seed": 0}, **tuner_args
    )
    train = tuner.dataset
    assert isinstance(train.scan_group, tf.Variable)
    reads = _BytesPerEpoch()  # listed after the tuner: it counts an epoch's training reads, not the probe's
    model = _model()
    history = model.fit(train.map(_prep).batch(32), epochs=epochs, callbacks=[tuner, reads], verbose=0, shuffle=False)
    return tuner, history, reads


@pytest.mark.slow
def test_coarse_colour_task_tunes_down_and_reads_less(tasks):
    tuner, history, reads = _train_with_tuner(tasks["colour"])
    assert [d["epoch"] for d in tuner.decisions] == [3, 4]
    assert all(d["scan_group"] <= 2 for d in tuner.decisions)  # colour survives the DC-only scans
    full = _groups(tasks["colour"])
    assert history.history["scan_group"][:3] == [full] * 3  # full fidelity before start_epoch
    assert history.history["scan_group"][3] == tuner.decisions[0]["scan_group"]
    # The switch took effect in the running pipeline: the tuned epochs read a fraction of the bytes (counted
    # after the tuner's on_epoch_begin, so without the probe's own reads).
    assert reads.bytes[3] == reads.bytes[4] < 0.3 * reads.bytes[0]
    similarities = history.history["scan_group_similarity_1"]
    assert len(similarities) == 2 and min(similarities) >= 0.8  # logged on the two tuned epochs
    # Group 1 qualified, so no higher candidate was measured.
    assert all(list(d["similarities"]) == [1] for d in tuner.decisions)
    assert "scan_group_similarity_2" not in history.history


@pytest.mark.slow
def test_fine_texture_task_keeps_a_high_group(tasks):
    tuner, history, _ = _train_with_tuner(tasks["texture"])
    for decision in tuner.decisions:
        assert decision["similarities"][1] < 0.8  # the checkerboard is gone from the low scans
        assert decision["scan_group"] >= 5
    # The probe read the same images at every group measured, as many as asked.
    measured = {g for d in tuner.decisions for g in d["similarities"]}
    full = _groups(tasks["texture"])
    assert set(tuner.probe_keys) == measured | {full}
    keys = list(tuner.probe_keys.values())
    assert all(k == keys[0] for k in keys) and len(keys[0]) == 64
    # Stopping at the first qualifying candidate picks what measuring them all picks, with the same similarities.
    bytes_before = tfliquid.io.read_stats()["bytes_read"]
    tuner.measure_all = True
    every = tuner.tune()
    tuner.measure_all = False
    first_qualifying = tuner.tune()
    assert tfliquid.io.read_stats()["bytes_read"] == bytes_before  # the probe is kept from the first tuning
    assert list(every["similarities"]) == list(range(1, full))
    assert first_qualifying["scan_group"] == every["scan_group"] >= 5
    # Measured: the candidates up to the chosen one, or all of them when none qualified (full fidelity is kept).
    assert list(first_qualifying["similarities"]) == list(range(1, min(every["scan_group"], full - 1) + 1))
    for group, similarity in first_qualifying["similarities"].items():
        assert similarity == pytest.approx(every["similarities"][group], abs=1e-6)


def test_a_tuning_step_changes_no_model_optimizer_metric_or_random_state(tasks):
    keras.utils.set_random_seed(1)
    group = tf.Variable(_groups(tasks["colour"]), dtype=tf.int64)
    train = tfliquid.PCRDataset(tasks["colour"], scan_group=group, seed=0)
    model = _model(batch_norm=True)
    model.fit(train.map(_prep).batch(32).take(3), epochs=1, verbose=0, shuffle=False)  # slots, BN stats, metrics
    tuner = tfliquid.keras.ScanGroupAutotuner(train, probe_batches=1, candidates=[1, 5])
    tuner.set_model(model)

    def state():
        return (
            [v.numpy().copy() for v in model.variables],
            [v.numpy().copy() for v in model.optimizer.variables],
            [v.numpy().copy() for m in model.metrics for v in m.variables],
            tf.random.get_global_generator().state.numpy().copy(),
        )

    before = state()
    decision = tuner.tune()
    after = state()
    for b, a in zip(before, after):
        if isinstance(b, list):
            assert len(b) == len(a) and all(np.array_equal(x, y) for x, y in zip(b, a))
        else:
            assert np.array_equal(b, a)
    assert any("moving_mean" in v.path for v in model.variables)  # BatchNorm statistics were among them
    assert int(group.numpy()) == decision["scan_group"]


def test_a_probe_the_model_does_not_see_is_warned_of(tasks):
    """The default preprocess scales to [0, 1]; a model that rescales its inputs itself gets the probe's scaled twice,
    and once it has learnt its task from its own inputs, its gradient hardly depends on the probe's images: every
    group looks like full fidelity, and the lowest is chosen. Given training's own map, the probe sees what training
    does."""

    def unscaled(x):  # what training maps for this model: its Rescaling scales
        return tf.image.resize(x["image"], [SIZE, SIZE]), x["label"]

    group = tf.Variable(_groups(tasks["colour"]), dtype=tf.int64)
    train = tfliquid.PCRDataset(tasks["colour"], scan_group=group, seed=0)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((SIZE, SIZE, 3)), keras.layers.Rescaling(1 / 255), *_model().layers])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(train.map(unscaled).batch(32), epochs=1, verbose=0, shuffle=False)
    twice = tfliquid.keras.ScanGroupAutotuner(train, probe_batches=1, candidates=[1, 3], measure_all=True)
    twice.set_model(model)
    with pytest.warns(UserWarning, match="the model does not see them.*pass preprocess="):
        decision = twice.tune()
    assert min(decision["similarities"].values()) > 0.999 and decision["scan_group"] == 1, decision
    # the check gave other labels to the images, and kept probe_keys those of the images read
    assert twice.probe_keys[_groups(tasks["colour"])] == twice.probe_keys[1]

    seen = tfliquid.keras.ScanGroupAutotuner(train, probe_batches=1, candidates=[1, 3], preprocess=unscaled)
    seen.set_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decision = seen.tune()  # the colour task: group 1 qualifies, and the check finds the images seen


def test_tensorboard_after_the_tuner_gets_its_scalars(tasks, tmp_path):
    group = tf.Variable(_groups(tasks["colour"]), dtype=tf.int64)
    train = tfliquid.PCRDataset(tasks["colour"], scan_group=group, seed=0)
    tuner = tfliquid.keras.ScanGroupAutotuner(
        train, start_epoch=0, probe_batches=1, candidates=[1, 2], measure_all=True
    )
    model = _model()
    model.fit(
        train.map(_prep).batch(32).take(2),
        epochs=1,
        verbose=0,
        shuffle=False,
        callbacks=[tuner, keras.callbacks.TensorBoard(str(tmp_path))],
    )
    tags = set()
    for events in glob.glob(str(tmp_path / "train" / "events.*")):
        for event in tf.compat.v1.train.summary_iterator(events):
            tags |= {value.tag for value in event.summary.value}
    assert {"epoch_scan_group", "epoch_scan_group_similarity_1", "epoch_scan_group_similarity_2"} <= tags


def test_parameters_are_validated(tasks):
    full = _groups(tasks["colour"])
    variable_dataset = tfliquid.PCRDataset(tasks["colour"], scan_group=tf.Variable(full, dtype=tf.int64))
    with pytest.raises(TypeError, match="PCRDataset"):
        tfliquid.keras.ScanGroupAutotuner(tf.data.Dataset.range(3))
    with pytest.raises(ValueError, match="must not set scan_group"):
        tfliquid.keras.ScanGroupAutotuner(tasks["colour"], dataset_options={"scan_group": 2})
    with pytest.raises(ValueError, match="dataset_options applies when dataset is a directory"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, dataset_options={"seed": 0})
    with pytest.raises(ValueError, match="tf.Variable scan group"):
        tfliquid.keras.ScanGroupAutotuner(tfliquid.PCRDataset(tasks["colour"], scan_group=2))
    with pytest.raises(ValueError, match=rf"candidates must be scan groups in 1\.\.{full - 1}"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, candidates=[0, 3])
    with pytest.raises(ValueError, match="candidates"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, candidates=[full])
    with pytest.raises(ValueError, match="threshold"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, threshold=1.5)
    for name in ("probe_batches", "every"):
        with pytest.raises(ValueError, match=name):
            tfliquid.keras.ScanGroupAutotuner(variable_dataset, **{name: 0})
    with pytest.raises(ValueError, match="start_epoch"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, start_epoch=-1)
    with pytest.raises(TypeError, match="preprocess"):
        tfliquid.keras.ScanGroupAutotuner(variable_dataset, preprocess="resize")


@pytest.mark.parametrize("decode_size", [None, (48, 40)])
def test_probe_cuts_are_the_record_prefixes(tasks, decode_size):
    """One full-fidelity read cut after scan g gives exactly what the record prefix at g decodes to, at the
    dataset's decode_size when it has one."""
    full = _groups(tasks["texture"])
    variable = tf.Variable(full, dtype=tf.int64)
    train = tfliquid.PCRDataset(tasks["texture"], scan_group=variable, decode_size=decode_size)
    tuner = tfliquid.keras.ScanGroupAutotuner(
        train, probe_batches=1, probe_batch_size=40, preprocess=lambda x: (x["image"], x["label"])
    )
    images = tuner._read_probe()
    for group in (1, 3, full - 1, full):
        prefixes = tfliquid.PCRDataset(
            tasks["texture"],
            scan_group=group,
            decode_size=decode_size,
            shuffle=False,
            with_keys=True,
            num_parallel_reads=1,
        ).take(40)
        expected = [(bytes(x["key"]), x["image"]) for x in prefixes.as_numpy_iterator()]
        got = [
            (bytes(k), image)
            for inputs, _, keys in tuner._probe(images, group).as_numpy_iterator()
            for k, image in zip(keys, inputs)
        ]
        assert [k for k, _ in got] == [k for k, _ in expected]
        for (_, a), (_, b) in zip(got, expected):
            np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_cpu_bound_example_runs(tmp_path):
    import subprocess
    import sys

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "pcr_cpu_bound.py")
    args = [sys.executable, example, "--workdir", str(tmp_path), "--epochs", "2", "--images-per-class", "4"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = result.stdout.split("val accuracy\n")[1].splitlines()[:4]
    assert [row.split()[0] for row in rows] == ["1", "2", "full", "auto"]
    assert all(float(row.split()[1]) > 0 and 0 <= float(row.split()[2]) <= 1 for row in rows)
    tuned = result.stdout.split("Autotuned scan group per epoch: ")[1].split(" (")[0]
    assert tuned.startswith("[7, ") and tuned.endswith("]"), tuned  # full fidelity before the first tuning
