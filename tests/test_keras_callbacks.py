"""StallMonitor and ScanGroupAutotuner together in one model.fit, as docs/analysis.md and docs/autotune.md combine
them, on a PCR dataset of the conftest's photo crops: the tuner's probe, between epochs, is not a data stall."""

import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfliquid

BATCH, STEPS = 16, 4


@pytest.fixture(scope="module")
def pcr_path(jpeg_files, tmp_path_factory):
    """96 of the conftest's JPEG crops in 2 classes, as a PCR dataset of 6 records."""
    folder = tmp_path_factory.mktemp("photos")
    for i, path in enumerate(jpeg_files[:96]):
        (folder / str(i % 2)).mkdir(exist_ok=True)
        (folder / str(i % 2) / f"{i:03d}.jpg").symlink_to(path)
    destination = str(tmp_path_factory.mktemp("pcr") / "pcr")
    tfliquid.pcr.convert(str(folder), destination, images_per_record=16, progress=False)
    return destination


def _prep(x):
    return tf.image.resize(x["image"], [32, 32]) / 255.0, x["label"]


def _model():
    """Costs more per item than decoding a small crop: a model-bound job, whose epochs hardly wait for input."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.Flatten(), keras.layers.Dense(1024, activation="relu")]
        + [keras.layers.Dense(2)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class _Clock(keras.callbacks.Callback):
    """When each epoch's on_epoch_begin reached this callback."""

    def __init__(self):
        super().__init__()
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self.times.append(time.perf_counter())


@pytest.mark.slow
def test_the_tuners_probe_is_not_a_data_stall(pcr_path, tmp_path):
    monitor = tfliquid.keras.StallMonitor()
    # A probe of many gradient batches at every candidate: several times an epoch's training, on purpose.
    tuner = tfliquid.keras.ScanGroupAutotuner(
        pcr_path,
        start_epoch=1,
        every=2,
        probe_batches=3,
        measure_all=True,
        preprocess=_prep,
        dataset_options={"seed": 0},
    )
    train = monitor.instrument(tuner.dataset.repeat().map(_prep).batch(BATCH).prefetch(2))
    before, after = _Clock(), _Clock()  # around the tuner: its probe's time
    callbacks = [monitor, before, tuner, after, keras.callbacks.TensorBoard(str(tmp_path / "logs"))]  # as documented
    fit = _model().fit(train, epochs=5, steps_per_epoch=STEPS, verbose=0, shuffle=False, callbacks=callbacks)
    history = fit.history
    stalls, tuned = history["data_stall_fraction"], [d["epoch"] for d in tuner.decisions]
    training_seconds = [STEPS * BATCH / rate for rate in history["input_rate"]]
    probe_seconds = [b - a for a, b in zip(before.times, after.times)]
    assert tuned == [1, 3] and len(stalls) == 5, history
    untuned = max(training_seconds[2], training_seconds[4])
    for epoch in tuned:
        # Counted as waiting, the probe would make the epoch's fraction at least probe / (probe + training), 0.75.
        assert probe_seconds[epoch] > 3 * untuned, (probe_seconds, training_seconds)
        assert stalls[epoch] < max(stalls[2], stalls[4]) + 0.2, stalls
        assert training_seconds[epoch] < probe_seconds[epoch], (probe_seconds, training_seconds)  # nor training
    assert np.median(stalls) < 0.5, stalls
