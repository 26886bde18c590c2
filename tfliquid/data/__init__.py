"""Deprecated: the seeded order moved to `tfliquid.order` (`tfliquid.order.SeededOrder`), whose name does not
read like `tf.data`. `tfliquid.data.SeededOrder` still works, with a DeprecationWarning."""

import warnings


def __getattr__(name: str):
    if name == "SeededOrder":
        warnings.warn(
            "tfliquid.data.SeededOrder moved to tfliquid.order.SeededOrder; tfliquid.data will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        from tfliquid.order import SeededOrder

        return SeededOrder
    raise AttributeError(f"module 'tfliquid.data' has no attribute {name!r}")
