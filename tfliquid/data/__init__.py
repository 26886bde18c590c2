"""Stage 3: tf.data datasets over tfliquid's formats."""

from tfliquid.data.pcr_dataset import PCRDataset

__all__ = ["PCRDataset"]
