"""StallMonitor: how much of each epoch model.fit spent waiting for its input, without a profiler.

The monitored dataset ends in a map that stamps each batch with the time it left the pipeline, into a ring of
timestamps held in a variable (graph ops only: no Python in the pipeline). The callback notes when each train
step began, just before the step asks for its batch. A batch that was ready waited in the pipeline's buffer and
leaves it at once; one that was not leaves when it is done, and the step waited the difference. Summed over an
epoch, divided by the epoch's time: the data stall fraction.
"""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

RING = 1 << 14  # batches whose stamps are kept between two reads of the ring


class StallMonitor(keras.callbacks.Callback):
    """Logs, at each epoch's end, `data_stall_fraction` (share of the epoch's time the train steps waited for
    input) and `input_rate` (items per second the input delivered), so History and TensorBoard show when
    training turns input-bound.

        monitor = tfliquid.keras.StallMonitor()
        model.fit(monitor.instrument(dataset), epochs=10, callbacks=[monitor, tensorboard])

    Put it before callbacks that read the logs (TensorBoard, CSVLogger). It assumes one batch per train step
    (Keras' default `steps_per_execution=1`) and one process reading the dataset.
    """

    def __init__(self):
        super().__init__()
        self._stamps = tf.Variable(tf.zeros([RING], tf.float64), trainable=False, name="stall_monitor_stamps")
        self._batches = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="stall_monitor_batches")
        self._items = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="stall_monitor_items")

    def instrument(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """The dataset, then a prefetch, then a sequential map that stamps each batch as it leaves (add nothing
        after it). The prefetch is the one tf.data would otherwise inject after the stamp."""

        def stamp(*batch):
            index = self._batches.assign_add(1) - 1
            first = tf.nest.flatten(batch)[0]
            updates = [
                self._stamps.scatter_nd_update([[index % RING]], [tf.timestamp()]),
                self._items.assign_add(tf.cast(tf.shape(first)[0], tf.int64)),
            ]
            with tf.control_dependencies(updates):
                outputs = tf.nest.map_structure(tf.identity, batch)
            return outputs if len(batch) > 1 else outputs[0]

        options = tf.data.Options()
        # tf.data would otherwise add a prefetch after a last synchronous map, stamping batches ahead of the
        # steps that take them. (It never runs this map in parallel: its function writes variables.)
        options.experimental_optimization.inject_prefetch = False
        return dataset.prefetch(tf.data.AUTOTUNE).map(stamp).with_options(options)

    def on_epoch_begin(self, epoch, logs=None):
        self._first_batch = int(self._batches.numpy())
        self._first_items = int(self._items.numpy())
        self._asked: list[float] = []
        self._stalled = 0.0
        self._epoch_start = time.time()

    def on_train_batch_begin(self, batch, logs=None):
        self._asked.append(time.time())
        if len(self._asked) == RING // 2:
            self._settle()

    def _settle(self) -> None:
        """Adds the waits of the steps noted so far (their stamps are still in the ring) and forgets them."""
        count = min(len(self._asked), int(self._batches.numpy()) - self._first_batch)
        if count <= 0:
            return
        slots = (self._first_batch + np.arange(count)) % RING
        left = self._stamps.numpy()[slots]
        self._stalled += float(np.maximum(0.0, left - np.asarray(self._asked[:count])).sum())
        self._first_batch += count
        self._asked = self._asked[count:]

    def on_epoch_end(self, epoch, logs=None):
        self._settle()
        seconds = time.time() - self._epoch_start
        items = int(self._items.numpy()) - self._first_items
        if logs is not None:
            logs["data_stall_fraction"] = self._stalled / seconds if seconds > 0 else 0.0
            logs["input_rate"] = items / seconds if seconds > 0 else 0.0
