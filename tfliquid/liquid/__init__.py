"""Liquid: datasets stored in a mix of formats, read at the ratio that balances storage against decoding
(the format: docs/formats/liquid.md; the guide: docs/liquid.md).

    >>> tfliquid.liquid.convert("photos/", "photos-liquid/", formats="png,raw", ratio="3:7")
    >>> ds = tfliquid.LiquidDataset("photos-liquid/", batch_size=256)    # every batch holds 3:7 png:raw
    >>> ds = ds.map(augment).batch(256)
    >>> print(tfliquid.liquid.inspect("photos-liquid/"))               # images and bytes per format

Modules, in the order data flows: `format` (the spec's reference: manifest, raw items, the plan, batch
composition), `items` (encode and decode items in graphs), `dataset` (LiquidDataset), `conversion` (the
conversion job), `profiling` (the offline ratio profiler), `inspection` (what a dataset holds).
"""

from tfliquid.liquid.conversion import convert
from tfliquid.liquid.dataset import LiquidDataset
from tfliquid.liquid.format import LiquidFormatError
from tfliquid.liquid.inspection import FormatShare, LiquidInspection, inspect

__all__ = ["FormatShare", "LiquidDataset", "LiquidFormatError", "LiquidInspection", "convert", "inspect"]
