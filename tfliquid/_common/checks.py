"""Argument checks shared by the public API, with messages that name the argument."""

from __future__ import annotations

import math
import numbers
import os

from tfliquid._common.errors import ArgumentError, PathError


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


def check_number(name: str, value, least: float = -math.inf, most: float = math.inf, what: str = "a number") -> float:
    """`value` as a float, if it is a real number (not bool, not NaN, not infinite) in least..most.

    Raises ArgumentError naming `name` (and saying it is `what`, e.g. "a number of bytes") otherwise.
    """
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and least <= number <= most):
        bounds = _range(None if least == -math.inf else least, None if most == math.inf else most)
        raise ArgumentError(f"{name} must be {what}{bounds}, got {value!r}")
    return number


def _range(least: int | None, most: int | None) -> str:
    if least is not None and most is not None:
        return f" in {least}..{most}"
    if least is not None:
        return f" >= {least}"
    if most is not None:
        return f" <= {most}"
    return ""


def check_path_exists(path: str) -> None:
    """PathError "PATH: no such file or folder" if nothing is at `path`, before a function says what it expected
    to find there."""
    if not os.path.lexists(path):
        raise PathError(f"{path}: no such file or folder")


def check_dataset_path(value) -> str:
    """A dataset directory's path as a str, if `value` is a str or os.PathLike. A dataset reads its index or
    manifest when it is built, so its path cannot be a tensor (one built inside a dataset function, e.g. an
    interleave over directories): ArgumentError saying what to do instead."""
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise ArgumentError(
        f"the dataset's path must be a str or os.PathLike, got {type(value).__name__}: a dataset reads its index "
        "when it is built, so it cannot be built inside a dataset function from a tensor. Build one dataset per "
        "directory outside, and combine them (tf.data.Dataset.sample_from_datasets or choose_from_datasets)"
    )


def check_directory(name: str, value) -> str:
    """`value`, a directory's path (str or os.PathLike), made absolute. An empty path is refused (ArgumentError):
    it would mean the current directory, which nobody names that way on purpose."""
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ArgumentError(f"{name} must be a directory's path, got {value!r}")
    return os.path.abspath(os.fspath(value))


def check_output_file(name: str, path) -> str:
    """`path` (str or os.PathLike) as a str, if a file can be written there: not a directory, in a directory that
    exists and is writable. ArgumentError naming `name` otherwise; checked before the work whose result it keeps."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ArgumentError(f"{name} must be a file's path, got {path!r}")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ArgumentError(f"{name} must name a file, and {path} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ArgumentError(f"{name}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ArgumentError(f"{name}: the directory {parent} is not writable")
    return path
