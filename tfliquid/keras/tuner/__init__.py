"""The closed-loop input tuner (docs/tuner.md): `InputTuner`, its diagnosis, its levers and its report."""

from tfliquid.keras.tuner.input_tuner import InputTuner

__all__ = ["InputTuner"]
