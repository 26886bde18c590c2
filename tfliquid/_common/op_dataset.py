"""The Python face of one of tfliquid's dataset ops, for the datasets built from them."""

from __future__ import annotations

import tensorflow as tf


class OpDataset(tf.data.Dataset):
    """A dataset that is one op's variant: its element spec, and the datasets the op takes as inputs (if any)."""

    def __init__(self, variant, element_spec, inputs=()):
        self._spec, self._op_inputs = element_spec, list(inputs)
        super().__init__(variant)

    @property
    def element_spec(self):
        return self._spec

    def _inputs(self):
        return self._op_inputs
