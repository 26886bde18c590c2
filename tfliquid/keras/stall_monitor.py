"""StallMonitor: how much of each epoch model.fit spent waiting for its input, without a profiler.

The monitored dataset ends in an op (Liquid>StallStampDataset, in C++: no Python on the step's path to its batch)
that times each request for a batch from the moment the step asks to the moment the pipeline answers, and adds the
wait to counters named after the monitor. A batch that was ready leaves the pipeline's buffer at once; one that
was not keeps the step waiting until it is done. The callback reads the counters where an epoch's training begins
(its first step) and ends (its last step's end) and around its validation: only waits for batches count, so what
other callbacks do between epochs (a ScanGroupAutotuner's probe) is neither training time nor waiting.
"""

from __future__ import annotations

import time
import uuid

import keras
import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid._common.op_dataset import OpDataset
from tfliquid._lib import load_ops


class StallMonitor(keras.callbacks.Callback):
    """Logs, at each epoch's end, `data_stall_fraction` (the share of the epoch's training time spent waiting for
    input) and `input_rate` (items per second the input delivered), so History and TensorBoard show when training
    turns input-bound; with `validation_data` instrumented by the same monitor, also `val_data_stall_fraction`.

        monitor = tfliquid.keras.StallMonitor()
        model.fit(monitor.instrument(dataset), epochs=10, callbacks=[monitor, tensorboard])

    Waiting for input is the time each train step waited for its batches, timed where they are asked for (so any
    `steps_per_execution` works, and tracing the first step is not waiting). An epoch's training time runs from its
    first step's start to its last step's end: what comes before (every callback's `on_epoch_begin`, such as a
    `ScanGroupAutotuner`'s probe, and Keras making the epoch's iterator), what Keras does with the input after the
    last step, and validation are left out, so the monitor combines with other callbacks in any order. Put it
    before callbacks that read the logs (TensorBoard, CSVLogger).
    The data model.fit trains on must be this monitor's `instrument(...)`: if the first train step took no batch
    from it, the monitor raises `tfliquid.ArgumentError` rather than log a stall of 0. It measures one process.
    """

    def __init__(self):
        super().__init__()
        self._ring = f"stall-monitor-{uuid.uuid4().hex}"  # the counters this monitor's datasets add to
        self._in_epoch = False  # between fit's on_epoch_begin and on_epoch_end
        self._epoch = None  # once the epoch's first step began: (its start, the counters then)
        self._checked = False  # whether this fit's first train step was seen to take an instrumented batch

    def instrument(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """The dataset, then a prefetch, then the op that times each request for a batch (add nothing after it)."""
        if not isinstance(dataset, tf.data.Dataset):
            raise ArgumentError(f"StallMonitor.instrument takes a tf.data.Dataset, got {type(dataset).__name__}")
        options = tf.data.Options()
        # tf.data would otherwise add a prefetch after the op, which would then time its own requests.
        options.experimental_optimization.inject_prefetch = False
        return _stamped(dataset.prefetch(tf.data.AUTOTUNE), self._ring).with_options(options)

    def counters(self) -> tuple[float, int, int]:
        """(seconds waited, batches taken, items taken) by every dataset this monitor instrumented, so far."""
        waited, batches, items = load_ops().liquid_stall_ring_read(ring=self._ring)
        return float(waited), int(batches), int(items)

    def on_train_begin(self, logs=None):
        self._checked = False

    def on_epoch_begin(self, epoch, logs=None):
        self._in_epoch, self._epoch, self._last_step = True, None, None
        self._training = self._validation = None  # (seconds, waited, batches, items) of each part

    def on_train_batch_begin(self, batch, logs=None):
        if self._in_epoch and self._epoch is None:
            self._epoch = (time.perf_counter(), self.counters())

    def on_train_batch_end(self, batch, logs=None):
        self._last_step = time.perf_counter()
        if not self._checked:
            self._checked = True
            if self._epoch is not None and self.counters()[1] == self._epoch[1][1]:
                raise ArgumentError(
                    "StallMonitor: model.fit's training data is not instrumented by this monitor, so its waits "
                    "cannot be measured; pass monitor.instrument(dataset) to fit, with this same monitor in callbacks"
                )

    def _end_training(self) -> None:
        """The epoch's training: from its first step's start to its last step's end (deleting its iterator after
        that, and validation, are not training), and the waits for its batches."""
        if not self._in_epoch or self._training is not None:
            return
        if self._epoch is None:  # no step ran
            self._training = (0.0, 0.0, 0, 0)
            return
        start, counters = self._epoch
        _, waited, batches, items = self._since(start, counters)
        self._training = (self._last_step - start, waited, batches, items)

    def _since(self, start: float, counters: tuple) -> tuple[float, float, int, int]:
        return (time.perf_counter() - start, *(now - then for now, then in zip(self.counters(), counters)))

    def on_test_begin(self, logs=None):
        self._end_training()
        if self._in_epoch:  # validation within fit
            self._test = (time.perf_counter(), self.counters())

    def on_test_end(self, logs=None):
        if self._in_epoch:
            self._validation = self._since(*self._test)

    def on_epoch_end(self, epoch, logs=None):
        self._end_training()
        (seconds, waited, _, items), validation = self._training, self._validation
        self._in_epoch, self._epoch = False, None
        if logs is not None and seconds > 0:
            logs["data_stall_fraction"] = min(1.0, waited / seconds)
            logs["input_rate"] = items / seconds
            if validation is not None and validation[2] and validation[0] > 0:
                logs["val_data_stall_fraction"] = min(1.0, validation[1] / validation[0])


def _stamped(dataset: tf.data.Dataset, ring: str) -> tf.data.Dataset:
    """`dataset`'s elements unchanged, each request timed into the named counters (Liquid>StallStampDataset)."""
    variant = load_ops().liquid_stall_stamp_dataset(dataset._variant_tensor, ring=ring)
    return OpDataset(variant, dataset.element_spec, [dataset])
