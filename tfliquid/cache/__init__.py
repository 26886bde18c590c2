"""CoorDL's MinIO cache, and the simulator of cache policies.

- `MinIOCache` and one transform: `cached` wraps the dataset that fetches an item, as tf.data's CacheDataset wraps
  its input; `minio_cache` applies it to every key of a dataset of keys, and PCRDataset and LiquidDataset to the
  read of every record. In memory or in a directory shared by processes, per worker under tf.data service
  (docs/cache.md).
- `simulate`: per-epoch hit ratios of a policy (or of the offline optimum) on shuffled epochs; `simulate_policies`
  compares policies on one trace, on one worker or several (`tfliquid simulate cache`).

Modules: `item_format` (the directory's item and ledger format, the oracle; no TensorFlow), `policies` (policy
names, from the C++ registry), `minio_cache` (the cache object), `transform` (the transform), `simulation` and
`multiworker` (the policy simulators), `comparison` (the policies side by side).
"""

from tfliquid._common.errors import CacheDirectoryError
from tfliquid.cache.comparison import PolicyComparison, simulate_policies
from tfliquid.cache.item_format import CacheFormatError
from tfliquid.cache.minio_cache import CacheStats, EpochStats, MinIOCache
from tfliquid.cache.policies import store_policies
from tfliquid.cache.simulation import Simulation, simulate
from tfliquid.cache.transform import cached, each_pass, minio_cache, with_pass

__all__ = [
    "CacheDirectoryError",
    "CacheFormatError",
    "CacheStats",
    "EpochStats",
    "MinIOCache",
    "PolicyComparison",
    "Simulation",
    "cached",
    "each_pass",
    "minio_cache",
    "simulate",
    "simulate_policies",
    "store_policies",
    "with_pass",
]
