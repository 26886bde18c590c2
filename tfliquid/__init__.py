"""tfliquid: tf.data extensions that remove data stalls.

    >>> import tfliquid
    >>> tfliquid.pcr.convert("photos/", "photos-pcr/")          # or: tfliquid convert pcr photos/ photos-pcr/
    >>> ds = tfliquid.PCRDataset("photos-pcr/", scan_group=2)   # read every image at scan group 2
    >>> ds = files.apply(tfliquid.minio_cache(tf.io.read_file, 8 << 30))  # a never-evict cache of 8 GiB
"""

from tfliquid import cache, io, keras, pcr
from tfliquid._version import __version__
from tfliquid.cache import MinIOCache, minio_cache
from tfliquid.data import PCRDataset

__all__ = ["MinIOCache", "PCRDataset", "cache", "io", "keras", "minio_cache", "pcr", "__version__"]
