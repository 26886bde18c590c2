"""tfliquid: tf.data extensions that remove data stalls.

    >>> import tfliquid
    >>> tfliquid.pcr.convert("photos/", "photos-pcr/")          # or: tfliquid convert pcr photos/ photos-pcr/
    >>> ds = tfliquid.PCRDataset("photos-pcr/", scan_group=2)   # read every image at scan group 2
    >>> ds = files.apply(tfliquid.minio_cache(tf.io.read_file, 8 << 30))  # a never-evict cache of 8 GiB
    >>> print(tfliquid.inspect("photos-pcr/"))                  # or: tfliquid inspect photos-pcr/

One subpackage per capability: `tfliquid.pcr`, `tfliquid.l3`, `tfliquid.cache`, `tfliquid.liquid`,
`tfliquid.analysis` (data-stall analysis); below them `tfliquid.records` (the record container PCR and Liquid
share), `tfliquid.order` (seeded epoch orders), `tfliquid.jpeg`, `tfliquid.io` (throttled reads, sources);
`tfliquid.keras` (callbacks and layers), `tfliquid.samples` (the shipped photos as a dataset). Importing `tfliquid`
imports none of them, nor TensorFlow or Keras: each loads on first use, so `tfliquid --help` answers at once and a
program that never touches Keras never imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tfliquid._common.errors import (
    ArgumentError,
    ConversionError,
    FormatError,
    OperandError,
    PathError,
    TfliquidError,
)
from tfliquid._keras_registration import register_layers_with_keras
from tfliquid._version import __version__

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from tfliquid import analysis, cache, data, io, jpeg, keras, l3, liquid, order, pcr, records, samples  # noqa: F401
    from tfliquid._lib import load_ops  # noqa: F401
    from tfliquid.cache import MinIOCache, minio_cache  # noqa: F401
    from tfliquid.inspection import inspect  # noqa: F401
    from tfliquid.liquid import LiquidDataset  # noqa: F401
    from tfliquid.pcr import PCRDataset  # noqa: F401

# name -> (module, attribute in it, or None for the module itself)
_LAZY = {
    "PCRDataset": ("tfliquid.pcr", "PCRDataset"),
    "LiquidDataset": ("tfliquid.liquid", "LiquidDataset"),
    "MinIOCache": ("tfliquid.cache", "MinIOCache"),
    "minio_cache": ("tfliquid.cache", "minio_cache"),
    "inspect": ("tfliquid.inspection", "inspect"),
    "load_ops": ("tfliquid._lib", "load_ops"),
    **{
        name: (f"tfliquid.{name}", None)
        for name in (
            "analysis",
            "cache",
            "data",
            "io",
            "jpeg",
            "keras",
            "l3",
            "liquid",
            "order",
            "pcr",
            "records",
            "samples",
        )
    },
}

register_layers_with_keras()  # a saved model with tfliquid's layers loads after `import tfliquid` alone

__all__ = [
    "ArgumentError",
    "ConversionError",
    "FormatError",
    "OperandError",
    "PathError",
    "TfliquidError",
    "__version__",
    *sorted(_LAZY),
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'tfliquid' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
