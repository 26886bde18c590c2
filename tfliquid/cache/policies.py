"""The names of the cache policies. The C++ registry (ops/cache/policy.h) is their one source: it declares them as
the allowed values of the ops' `cache_policy` attribute, where this module reads them."""

from __future__ import annotations

import functools

from tfliquid._lib import op_def


@functools.cache
def store_policies() -> tuple[str, ...]:
    """The policies a `MinIOCache` can run, e.g. ("minio", "lru")."""
    attr = next(a for a in op_def("Liquid>CacheStats").attr if a.name == "cache_policy")
    return tuple(name.decode() for name in attr.allowed_values.list.s)


@functools.cache
def cache_attr_names(op_name: str) -> tuple[str, ...]:
    """The attributes by which op `op_name` names a cache (cache_name, cache_capacity_bytes, ...), as declared."""
    return tuple(a.name for a in op_def(op_name).attr if a.name.startswith("cache_"))
