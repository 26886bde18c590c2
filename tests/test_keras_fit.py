"""A Keras 3 model trains with model.fit on a PCRDataset, at a low scan group and at full fidelity."""

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
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(dataset.num_images))
    train = dataset.map(lambda x: (tf.image.resize(x["image"], [32, 32]) / 255.0, x["label"])).batch(4)
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
    history = model.fit(train, epochs=6, verbose=0, shuffle=False)  # PCRDataset shuffles
    group.assign(10)
    history_full = model.fit(train, epochs=2, verbose=0, shuffle=False)
    losses = history.history["loss"] + history_full.history["loss"]
    assert len(losses) == 8 and np.all(np.isfinite(losses))
    assert min(losses[3:]) < losses[0]  # it learns from the data, at both fidelities
