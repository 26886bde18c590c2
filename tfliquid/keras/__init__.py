"""Keras callbacks and layers.

- `ScanGroupAutotuner`: picks the PCR scan group during `model.fit` by gradient cosine similarity (PCR, 4.3).
- `StallMonitor`: logs each epoch's share of time spent waiting for input, and the input rate.
- `layers.DecodeL3`: decodes a batch of L3 images inside the model, on its GPU when it has one.
"""

from tfliquid.keras import layers
from tfliquid.keras.autotune import ScanGroupAutotuner
from tfliquid.keras.stall_monitor import StallMonitor

__all__ = ["ScanGroupAutotuner", "StallMonitor", "layers"]
