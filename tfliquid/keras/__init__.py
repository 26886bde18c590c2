"""Stage 4: Keras callbacks.

- `ScanGroupAutotuner`: picks the PCR scan group during `model.fit` by gradient cosine similarity (PCR, 4.3).
"""

from tfliquid.keras.autotune import ScanGroupAutotuner

__all__ = ["ScanGroupAutotuner"]
