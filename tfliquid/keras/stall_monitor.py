"""StallMonitor: how much of each epoch model.fit spent waiting for its input, without a profiler.

The monitored dataset ends in an op that stamps each batch with the time it left the pipeline, into a ring of
timestamps in C++ (Liquid>StallStampDataset: no Python in the pipeline, and no function call on the step's path to
its batch). The callback notes when each train step began, just before the step asks for its batch. A batch that
was ready waited in the pipeline's buffer and leaves it at once; one that was not leaves when it is done, and the
step waited the difference. Summed over an epoch, divided by the epoch's time: the data stall fraction.
"""

from __future__ import annotations

import time
import uuid

import keras
import numpy as np
import tensorflow as tf

from tfliquid._lib import load_ops

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
        self._ring = f"stall-monitor-{uuid.uuid4().hex}"  # the C++ ring this monitor's datasets stamp

    def instrument(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """The dataset, then a prefetch, then the op that stamps each batch as it leaves (add nothing after it).
        The prefetch is the one tf.data would otherwise inject after the stamp."""
        options = tf.data.Options()
        # tf.data would otherwise add a prefetch after the stamp, stamping batches ahead of the steps that take them.
        options.experimental_optimization.inject_prefetch = False
        return _Stamped(dataset.prefetch(tf.data.AUTOTUNE), self._ring).with_options(options)

    def _read(self) -> tuple[np.ndarray, int, int]:
        """(the ring of stamps, batches stamped, items stamped) so far."""
        stamps, batches, items = load_ops().liquid_stall_ring_read(ring=self._ring, capacity=RING)
        return stamps.numpy(), int(batches), int(items)

    def on_epoch_begin(self, epoch, logs=None):
        _, self._first_batch, self._first_items = self._read()
        self._asked: list[float] = []
        self._stalled = 0.0
        self._epoch_start = time.time()

    def on_train_batch_begin(self, batch, logs=None):
        self._asked.append(time.time())
        if len(self._asked) == RING // 2:
            self._settle()

    def _settle(self) -> None:
        """Adds the waits of the steps noted so far (their stamps are still in the ring) and forgets them."""
        stamps, batches, _ = self._read()
        count = min(len(self._asked), batches - self._first_batch)
        if count <= 0:
            return
        left = stamps[(self._first_batch + np.arange(count)) % RING]
        self._stalled += float(np.maximum(0.0, left - np.asarray(self._asked[:count])).sum())
        self._first_batch += count
        self._asked = self._asked[count:]

    def on_epoch_end(self, epoch, logs=None):
        self._settle()
        seconds = time.time() - self._epoch_start
        items = self._read()[2] - self._first_items
        if logs is not None:
            logs["data_stall_fraction"] = self._stalled / seconds if seconds > 0 else 0.0
            logs["input_rate"] = items / seconds if seconds > 0 else 0.0


class _Stamped(tf.data.Dataset):
    """`dataset`'s elements unchanged, each stamped into the named ring as it leaves (Liquid>StallStampDataset)."""

    def __init__(self, dataset: tf.data.Dataset, ring: str):
        self._input = dataset
        super().__init__(load_ops().liquid_stall_stamp_dataset(dataset._variant_tensor, ring=ring, capacity=RING))

    @property
    def element_spec(self):
        return self._input.element_spec

    def _inputs(self):
        return [self._input]
