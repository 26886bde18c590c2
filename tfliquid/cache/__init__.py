"""Stage 3: caching transforms.

- `MinIOCache` and `minio_cache`: CoorDL's never-evict cache in front of any fetch function, in memory or in a
  directory shared by processes, per worker under tf.data service (docs/cache.md).
- `simulate`: per-epoch hit ratios of the minio, lru and opt policies on shuffled epochs.
"""

from tfliquid.cache.minio_cache import CacheStats, EpochStats, MinIOCache
from tfliquid.cache.simulation import Simulation, simulate
from tfliquid.cache.transform import minio_cache

__all__ = ["CacheStats", "EpochStats", "MinIOCache", "Simulation", "minio_cache", "simulate"]
