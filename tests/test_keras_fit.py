"""A Keras 3 model trains with model.fit on a PCRDataset, at a low scan group and at full fidelity; Keras knows
the length of every epoch of PCRDataset and LiquidDataset, for training and validation."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfliquid


@pytest.mark.slow
def test_fit_on_pcr_dataset_at_two_fidelities(photo_folder, tmp_path):
    keras.utils.set_random_seed(0)
    tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "pcr"), images_per_record=4, progress=False)
    group = tf.Variable(2, dtype=tf.int64)
    dataset = tfliquid.PCRDataset(str(tmp_path / "pcr"), scan_group=group, seed=0)
    train = dataset.map(lambda x: (tf.image.resize(x["image"], [32, 32]) / 255.0, x["label"])).batch(4)
    model = _model()
    history = model.fit(train, epochs=6, verbose=0, shuffle=False)  # PCRDataset shuffles
    group.assign(10)
    history_full = model.fit(train, epochs=2, verbose=0, shuffle=False)
    losses = history.history["loss"] + history_full.history["loss"]
    assert len(losses) == 8 and np.all(np.isfinite(losses))
    assert min(losses[3:]) < losses[0]  # it learns from the data, at both fidelities


def _model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


@pytest.mark.parametrize("kind", ["pcr", pytest.param("liquid", marks=pytest.mark.slow)])
def test_fit_counts_the_steps_of_every_epoch_and_never_runs_out_of_data(
    kind, photo_folder, liquid_photos, tmp_path, capsys
):
    """The datasets declare their images as their cardinality: Keras shows STEPS/STEPS, not "1/Unknown", and ends
    each epoch, of training and of validation, without its "ran out of data ... use .repeat()" warning."""
    if kind == "pcr":
        tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "pcr"), images_per_record=4, progress=False)
        train, val = (tfliquid.PCRDataset(str(tmp_path / "pcr"), seed=seed) for seed in (0, 1))
    else:
        train, val = (tfliquid.LiquidDataset(liquid_photos, batch_size=4, seed=seed) for seed in (0, 1))
    assert train.cardinality() == len(train) == train.num_images == len(list(train))
    train, val = (
        ds.map(lambda x: (tf.image.resize(x["image"], [32, 32]) / 255.0, x["label"])).batch(4) for ds in (train, val)
    )
    steps = -(-len(list(train.unbatch())) // 4)
    assert train.cardinality() == steps == len(list(train))
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = _model().fit(train, validation_data=val, epochs=2, verbose=1)
    assert [str(w.message) for w in caught if "ran out of data" in str(w.message)] == []
    shown = capsys.readouterr().out
    assert shown.count(f"{steps}/{steps}") == 2 and "Unknown" not in shown
    assert len(history.history["val_loss"]) == 2
