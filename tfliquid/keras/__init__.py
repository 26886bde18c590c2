"""Keras callbacks and layers.

- `ScanGroupAutotuner`: picks the PCR scan group during `model.fit` by gradient cosine similarity (PCR, 4.3).
- `layers.DecodeL3`: decodes a batch of L3 images inside the model, on its GPU when it has one.
"""

from tfliquid.keras import layers
from tfliquid.keras.autotune import ScanGroupAutotuner

__all__ = ["ScanGroupAutotuner", "layers"]
