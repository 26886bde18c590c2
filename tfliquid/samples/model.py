"""The small Keras classifier that `make demo` and the benchmarks train on the sample photos (`samples.photos`): the
same model and preprocessing everywhere, so that their figures compare."""

from __future__ import annotations

import keras
import tensorflow as tf

IMAGE_SIZE = 64


def preprocess(example: dict) -> tuple[tf.Tensor, tf.Tensor]:
    """A `PCRDataset` element -> (image resized to IMAGE_SIZE and scaled to [0, 1], label)."""
    return tf.image.resize(example["image"], [IMAGE_SIZE, IMAGE_SIZE]) / 255.0, example["label"]


def small_cnn(num_classes: int, input_size: int = IMAGE_SIZE) -> keras.Model:
    """Three strided convolutions and a linear classifier, compiled with Adam and sparse cross-entropy. Inputs
    larger than IMAGE_SIZE (input_size x input_size) are first averaged over input_size // IMAGE_SIZE pixels a
    side, so the model costs about as much at any input size."""
    pool = max(1, input_size // IMAGE_SIZE)
    model = keras.Sequential(
        [
            keras.Input((input_size, input_size, 3)),
            *([keras.layers.AveragePooling2D(pool)] if pool > 1 else []),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, strides=2, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(num_classes),
        ]
    )
    return compiled(model)


def compiled(model: keras.Model) -> keras.Model:
    """`model` compiled as the sample classifiers are: Adam, sparse cross-entropy on logits, accuracy."""
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model
