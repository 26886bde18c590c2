"""tfliquid: tf.data extensions that remove data stalls.

    >>> import tfliquid
    >>> tfliquid.pcr.convert("photos/", "photos-pcr/")          # or: tfliquid convert pcr photos/ photos-pcr/
    >>> ds = tfliquid.PCRDataset("photos-pcr/", scan_group=2)   # read every image at scan group 2
"""

from tfliquid import io, pcr
from tfliquid._version import __version__
from tfliquid.data import PCRDataset

__all__ = ["PCRDataset", "io", "pcr", "__version__"]
