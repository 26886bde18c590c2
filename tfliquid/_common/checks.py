"""Argument checks shared by the public API, with messages that name the argument."""

from __future__ import annotations

import numbers

from tfliquid._common.errors import ArgumentError


def check_int(name: str, value, least: int | None = None, most: int | None = None) -> int:
    """`value` as a Python int, if it is an integer (int or NumPy integer; not bool, not float) in least..most.

    Raises ArgumentError naming `name` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"{name} must be an int{_range(least, most)}, got {value!r}")
    value = int(value)
    if (least is not None and value < least) or (most is not None and value > most):
        raise ArgumentError(f"{name} must be an int{_range(least, most)}, got {value}")
    return value


def _range(least: int | None, most: int | None) -> str:
    if least is not None and most is not None:
        return f" in {least}..{most}"
    if least is not None:
        return f" >= {least}"
    if most is not None:
        return f" <= {most}"
    return ""
