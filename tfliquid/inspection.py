"""`tfliquid.inspect(path)`: what the tfliquid dataset at a path holds, whichever kind it is (`tfliquid inspect`)."""

from __future__ import annotations

import os

from tfliquid._common.checks import check_path_exists
from tfliquid._common.errors import PathError
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid.inspection import LiquidInspection
from tfliquid.liquid.inspection import inspect as inspect_liquid
from tfliquid.pcr import format as pcr_format
from tfliquid.pcr.inspection import PCRInspection
from tfliquid.pcr.inspection import inspect as inspect_pcr

__all__ = ["inspect"]


def inspect(path: str) -> PCRInspection | LiquidInspection:
    """What the dataset at `path` holds: a PCR dataset's `PCRInspection` (`tfliquid.pcr.inspect`), a Liquid
    dataset's `LiquidInspection` (`tfliquid.liquid.inspect`). `print()` it for what `tfliquid inspect PATH` prints.
    PathError if nothing is at `path` or it is a directory holding neither."""
    check_path_exists(path)
    if os.path.exists(os.path.join(path, liquid_format.MANIFEST_FILENAME)):
        return inspect_liquid(path)
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, pcr_format.INDEX_FILENAME)):
        raise PathError(
            f"{path} is neither a PCR dataset (no {pcr_format.INDEX_FILENAME}) nor a Liquid dataset (no "
            f"{liquid_format.MANIFEST_FILENAME}); make one with `tfliquid convert pcr|liquid SRC DST`"
        )
    return inspect_pcr(path)  # a file: its error names the directory to inspect
