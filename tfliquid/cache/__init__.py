"""CoorDL's MinIO cache, and the simulator of cache policies.

- `MinIOCache` and `minio_cache`: a never-evict cache in front of any fetch function, in memory or in a directory
  shared by processes, per worker under tf.data service (docs/cache.md).
- `simulate`: per-epoch hit ratios of the policies (and of the offline optimum) on shuffled epochs.

Modules: `item_format` (the directory's item and ledger format, the oracle; no TensorFlow), `policies` (policy
names, from the C++ registry), `minio_cache` (the cache object), `transform` (the Dataset.apply transform),
`simulation`.
"""

from tfliquid.cache.item_format import CacheFormatError
from tfliquid.cache.minio_cache import CacheStats, EpochStats, MinIOCache
from tfliquid.cache.policies import store_policies
from tfliquid.cache.simulation import Simulation, simulate
from tfliquid.cache.transform import minio_cache

__all__ = [
    "CacheFormatError",
    "CacheStats",
    "EpochStats",
    "MinIOCache",
    "Simulation",
    "minio_cache",
    "simulate",
    "store_policies",
]
