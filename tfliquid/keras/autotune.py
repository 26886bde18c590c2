"""ScanGroupAutotuner: the PCR paper's fidelity tuner (sections 4.3 and 6.5) as a Keras callback.

At each tuning point the callback cuts the probe images (read once, at full fidelity, at the first tuning) after
candidate scan groups, lowest first (byte for byte the record prefix at that group), computes the loss gradient of
the model's trainable weights on each, and sets the dataset's scan group variable to the lowest group whose
gradient has a cosine similarity of at least `threshold` with the full-fidelity one: the first that qualifies ends
the search, since no later candidate can be lower. The probe calls the model in inference mode and never touches
the optimizer, so the weights, optimizer slots, BatchNorm statistics, metrics and random state are exactly as they
were (the authors' code probed in training mode, which updated BatchNorm statistics, and emulated prefixes by
re-encoding images).
"""

from __future__ import annotations

import os
import warnings

import keras
import numpy as np
import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid.jpeg.ops import jpeg_scan_ends
from tfliquid.jpeg.scans import EOI
from tfliquid.pcr import format as pcr_format
from tfliquid.pcr.dataset import PCRDataset

# The lowest candidate this close to full fidelity is suspect: a model that hardly tells the DC-only scans from full
# fidelity may not see the images at all (inputs scaled twice). It does not if its gradient with the images given to
# other labels is this close to the probe's: from 0.79 to 0.99998 where a trained model's probe was scaled twice,
# 0.44 at most where not (tests/test_autotune.py's tasks, 2 seeds, tuned after each of their first 6 epochs).
SUSPECT_SIMILARITY = 0.99
BLIND_SIMILARITY = 0.7


class ScanGroupAutotuner(keras.callbacks.Callback):
    """Tunes a `PCRDataset`'s scan group during `model.fit` by gradient cosine similarity.

    Args:
      dataset: the training `PCRDataset`, built with an integer `tf.Variable` scan group (the callback assigns
        it; the pipeline reads it whenever it opens a record, so no rebuild is needed); or the PCR dataset's
        directory, in which case the callback creates that variable and builds the dataset, `tuner.dataset`.
      threshold: the lowest acceptable cosine similarity to the full-fidelity gradient (paper: 0.8).
      candidates: scan groups to consider (default: every group below full fidelity).
      probe_batches: batches of the probe, each of `probe_batch_size` images, read at every candidate.
      start_epoch: first epoch tuned (0-based); before it the dataset is read at full fidelity (paper: 5).
      every: tune again every this many epochs (paper: 20).
      preprocess: a deterministic function of a PCRDataset element {"image": uint8 [H, W, 3], "label", ...}
        -> (model input, target): the map training applies (its deterministic part, without random augmentation),
        so that the probe's inputs are what the model trains on; default: resize to the model's input size and
        scale to [0, 1], which is wrong for a model that scales its inputs itself (a Rescaling layer). Where the
        lowest candidate looks like full fidelity, and so does the probe with its images given to other labels,
        the tuner warns: the model does not see the probe's images.
      probe_batch_size: images per probe batch.
      measure_all: measure every candidate at each tuning (for analysis); by default the search stops at the first
        candidate, lowest first, that reaches `threshold`, which picks the same group for less work.
      dataset_options: keyword arguments for the `PCRDataset` built when `dataset` is a directory.

    Logs, at the end of every epoch: "scan_group" (what that epoch read), and at tuning epochs
    "scan_group_similarity_K" for each candidate K measured. History records them; a TensorBoard callback listed
    after this one writes them as scalars.

    >>> tuner = ScanGroupAutotuner("train-pcr/", preprocess=prep, dataset_options={"seed": 0})
    >>> model.fit(tuner.dataset.map(prep).batch(256), epochs=90, callbacks=[tuner])
    """

    def __init__(
        self,
        dataset: PCRDataset | str | os.PathLike,
        threshold: float = 0.8,
        candidates=None,
        probe_batches: int = 10,
        start_epoch: int = 5,
        every: int = 20,
        preprocess=None,
        probe_batch_size: int = 32,
        measure_all: bool = False,
        dataset_options: dict | None = None,
    ):
        super().__init__()
        if isinstance(dataset, (str, os.PathLike)):
            dataset = _dataset_with_a_scan_group_variable(dataset, dataset_options or {})
        elif dataset_options is not None:
            raise ArgumentError("dataset_options applies when dataset is a directory; this PCRDataset is already built")
        if not isinstance(dataset, PCRDataset):
            raise ArgumentError(f"dataset must be a tfliquid.PCRDataset or its directory, got {type(dataset).__name__}")
        if not isinstance(dataset.scan_group, tf.Variable):
            raise ArgumentError(
                "the PCRDataset must be built with a tf.Variable scan group, which the tuner assigns: "
                "PCRDataset(path, scan_group=tf.Variable(G, dtype=tf.int64))"
            )
        full = dataset.num_scan_groups
        if candidates is None:
            candidates = list(range(1, full))
        candidates = sorted(set(candidates))
        if not candidates or any(
            isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 1 <= g < full for g in candidates
        ):
            raise ArgumentError(
                f"candidates must be scan groups in 1..{full - 1} (below full fidelity {full}), got {candidates}"
            )
        if not 0 < threshold <= 1:
            raise ArgumentError(f"threshold must be in (0, 1], got {threshold}")
        if preprocess is not None and not callable(preprocess):
            raise ArgumentError(f"preprocess must be callable, got {preprocess!r}")
        self.dataset = dataset
        self.threshold = float(threshold)
        self.candidates = [int(g) for g in candidates]
        self.probe_batches = check_int("probe_batches", probe_batches, 1)
        self.probe_batch_size = check_int("probe_batch_size", probe_batch_size, 1)
        self.start_epoch = check_int("start_epoch", start_epoch, 0)
        self.every = check_int("every", every, 1)
        self.preprocess = preprocess
        self.measure_all = bool(measure_all)
        self.decisions: list[dict] = []  # one per tuning: epoch, similarities, chosen group
        self.probe_keys: dict[int, list[bytes]] = {}  # the images each group's probe read, for inspection
        self._tuned_this_epoch: dict | None = None
        self._probe_images: list[dict] | None = None  # read at the first tuning
        self._batch_gradient = None  # (model, its traced batch-gradient function)

    @property
    def full_fidelity(self) -> int:
        return self.dataset.num_scan_groups

    def on_train_begin(self, logs=None):
        self.dataset.scan_group.assign(self.full_fidelity)  # the paper starts at full fidelity

    def on_epoch_begin(self, epoch, logs=None):
        self._tuned_this_epoch = None
        if epoch >= self.start_epoch and (epoch - self.start_epoch) % self.every == 0:
            self._tuned_this_epoch = self.tune(epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        logs["scan_group"] = int(self.dataset.scan_group.numpy())
        if self._tuned_this_epoch:
            for group, similarity in self._tuned_this_epoch["similarities"].items():
                logs[f"scan_group_similarity_{group}"] = similarity

    def tune(self, epoch: int | None = None) -> dict:
        """Measures the candidates, lowest first, and assigns the chosen scan group; returns the decision."""
        images = self._read_probe()
        reference = self._probe_gradient(images, self.full_fidelity)
        similarities, chosen = {}, self.full_fidelity
        for group in self.candidates:
            similarities[group] = _cosine_similarity(self._probe_gradient(images, group), reference)
            if similarities[group] >= self.threshold and chosen == self.full_fidelity:
                chosen = group
                if not self.measure_all:
                    break
        if similarities[min(similarities)] >= SUSPECT_SIMILARITY:  # the lowest candidate's
            self._warn_if_blind(images, reference, similarities)
        self.dataset.scan_group.assign(chosen)
        decision = {"epoch": epoch, "similarities": similarities, "scan_group": chosen}
        self.decisions.append(decision)
        return decision

    def _read_probe(self) -> list[dict]:
        """The probe images at full fidelity: the first probe_batches x probe_batch_size images in record order, as
        progressive JPEG bytes with their scan ends. Read from storage at the first call, and kept in memory for
        the later tunings (a few MB: they are compressed), which then cost only computation."""
        if self._probe_images is None:
            count = self.probe_batches * self.probe_batch_size
            reader = PCRDataset(self.dataset.path, decode=False, shuffle=False, with_keys=True, num_parallel_reads=1)
            self._probe_images = [
                {**x, "scan_ends": jpeg_scan_ends(x["image"]).numpy().tolist()}
                for x in reader.take(count).as_numpy_iterator()
            ]
        return self._probe_images

    def _warn_if_blind(self, images: list[dict], reference: tf.Tensor, similarities: dict) -> None:
        """Warns where the full-fidelity gradient hardly changes with the probe's images given to other labels
        (each image the label half the probe away in label order, so that most change class): then it does not
        depend on the images, the similarities say nothing about the scan groups, and the lowest candidate wins."""
        labels = [x["label"] for x in images]
        if len(set(labels)) < 2:  # no other label to give an image
            return
        order = sorted(range(len(images)), key=labels.__getitem__)
        partner = {order[k]: order[(k + len(order) // 2) % len(order)] for k in range(len(order))}
        swapped = [{**images[partner[i]], "label": labels[i]} for i in range(len(images))]
        similarity = _cosine_similarity(self._probe_gradient(swapped, self.full_fidelity, record=False), reference)
        if similarity >= BLIND_SIMILARITY:
            groups = ", ".join(f"{group}: {score:.5f}" for group, score in similarities.items())
            warnings.warn(
                f"ScanGroupAutotuner: the probe's loss gradient hardly changes with its images given to other labels "
                f"(similarity {similarity:.5f}): the model does not see them, and every scan group looks alike "
                f"({groups}); pass preprocess=, the deterministic part of the map training applies (the default "
                "scales to [0, 1]; a model with its own Rescaling scales again)",
                stacklevel=2,
            )

    def _probe(self, images: list[dict], group: int) -> tf.data.Dataset:
        """Batches (inputs, targets, keys) of the probe images at `group`. Each image is cut at the end of scan
        group `group` (`pcr.prefix_end`) and closed with EOI: byte for byte what the record prefix at that group
        holds (docs/formats/pcr.md), without reading storage again for every group; decoded as the dataset
        decodes (at its decode_size, if it has one)."""
        prepare = self.preprocess or self._default_preprocess
        cut = {
            "image": [x["image"][: pcr_format.prefix_end(x["scan_ends"], group)] + EOI for x in images],
            "label": [x["label"] for x in images],
            "key": [x["key"] for x in images],
        }

        def decoded(x):
            return {**x, "image": self.dataset.decode_image(x["image"])}

        return (
            tf.data.Dataset.from_tensor_slices(cut)
            .map(lambda x: (*prepare(decoded(x)), x["key"]), num_parallel_calls=tf.data.AUTOTUNE)
            .batch(self.probe_batch_size)
            .prefetch(1)
        )

    def _default_preprocess(self, example):
        height, width = self.model.input_shape[1:3]
        image = tf.image.resize(example["image"], [height, width]) / 255.0
        return image, example["label"]

    def _probe_gradient(self, images: list[dict], group: int, record: bool = True) -> tf.Tensor:
        """The loss gradient of the trainable weights on the probe at `group`, summed over its batches and
        flattened (`record`: the images read kept in probe_keys). Inference mode, no optimizer: nothing the model or
        its training holds is changed."""
        batch_gradient = self._batch_gradient_function()
        total, keys = None, []
        for inputs, targets, batch_keys in self._probe(images, group):
            flat = batch_gradient(inputs, targets)
            total = flat if total is None else total + flat
            keys += [bytes(k) for k in batch_keys.numpy()]
        if record:
            self.probe_keys[group] = keys
        return total

    def _batch_gradient_function(self):
        """One batch's flattened gradient as a tf.function (traced once per model: eager gradients cost several
        times more, and the probe runs (candidates + 1) x probe_batches of them)."""
        if self._batch_gradient is not None and self._batch_gradient[0] is self.model:
            return self._batch_gradient[1]
        model, loss_fn = self.model, keras.losses.get(self.model.loss)

        @tf.function(reduce_retracing=True)
        def batch_gradient(inputs, targets):
            weights = model.trainable_variables
            with tf.GradientTape() as tape:
                loss = loss_fn(targets, model(inputs, training=False))
            gradients = tape.gradient(loss, weights)
            return tf.concat(
                [tf.reshape(tf.zeros_like(w) if g is None else g, [-1]) for g, w in zip(gradients, weights)], axis=0
            )

        self._batch_gradient = (model, batch_gradient)
        return batch_gradient


def _dataset_with_a_scan_group_variable(path, options: dict) -> PCRDataset:
    if "scan_group" in options:
        raise ArgumentError("dataset_options must not set scan_group: the tuner creates and assigns it")
    full = pcr_format.read_index(path).num_scan_groups
    return PCRDataset(path, scan_group=tf.Variable(full, dtype=tf.int64, trainable=False), **options)


def _cosine_similarity(a: tf.Tensor, b: tf.Tensor) -> float:
    norms = float(tf.norm(a)) * float(tf.norm(b))
    return float(tf.tensordot(a, b, 1)) / norms if norms > 0 else 0.0
