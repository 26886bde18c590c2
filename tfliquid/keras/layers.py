"""Keras layers that move input work into the model's train step, where the accelerator runs it."""

from __future__ import annotations

import keras
import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid.l3.ops import decode_l3_batch


@keras.saving.register_keras_serializable(package="tfliquid")
class DecodeL3(keras.layers.Layer):
    """Decodes a batch of L3 byte strings (string [B]) to uint8 [B, H, W, C] with `tfliquid.l3.decode_l3_batch`.

    The input pipeline then yields compact L3 bytes and the model's first layer decodes them: on the GPU when the
    model runs there (the GPU kernel, see `tfliquid.l3.gpu_available()`), on the CPU otherwise. The images of a
    batch must share one shape.

    Args:
      image_shape: (H, W, C) of the images, if known: the output's static shape, so that the layers after this one
        can be built; a batch of another shape is then an error. Unknown dimensions may be None.
    """

    def __init__(self, image_shape: tuple[int | None, int | None, int | None] | None = None, **kwargs):
        super().__init__(**kwargs)
        if image_shape is not None and not (
            isinstance(image_shape, tuple | list)
            and len(image_shape) == 3
            and all(d is None or (isinstance(d, int) and not isinstance(d, bool) and d > 0) for d in image_shape)
            and image_shape[2] in (None, 1, 3, 4)
        ):
            raise ArgumentError(
                "DecodeL3: image_shape is (height, width, channels), each a positive int or None, channels 1, 3 "
                f"or 4; got {image_shape!r}"
            )
        self.image_shape = None if image_shape is None else tuple(image_shape)

    def call(self, encoded):
        images = decode_l3_batch(encoded)
        if self.image_shape is not None:
            images = tf.ensure_shape(images, (None, *self.image_shape))
        return images

    def compute_output_shape(self, input_shape):
        return (input_shape[0], *(self.image_shape or (None, None, None)))

    def compute_output_spec(self, encoded):
        return keras.KerasTensor(self.compute_output_shape(encoded.shape), dtype="uint8")

    def get_config(self):
        return {**super().get_config(), "image_shape": self.image_shape}
