"""Keras callbacks and layers.

- `InputTuner`: tunes the input pipeline during training: diagnoses the stall, applies the cheapest fix,
  re-measures, keeps or rolls back, and explains (docs/tuner.md).
- `ScanGroupAutotuner`: picks the PCR scan group during `model.fit` by gradient cosine similarity (PCR, 4.3).
- `StallMonitor`: logs each epoch's share of time spent waiting for input, and the input rate.
- `layers.DecodeL3`: decodes a batch of L3 images inside the model, on its GPU when it has one.
"""

from tfliquid.keras import layers
from tfliquid.keras.autotune import ScanGroupAutotuner
from tfliquid.keras.stall_monitor import StallMonitor
from tfliquid.keras.tuner import InputTuner

__all__ = ["InputTuner", "ScanGroupAutotuner", "StallMonitor", "layers"]
