"""Seeded epoch orders: `SeededOrder`, the per-epoch shuffle of data-parallel workers as a first-class object
(docs/formats/seeded-order.md): who reads which item when. Datasets read their slice of it
(`PCRDataset(order=...)`, `LiquidDataset(order=...)`, `order.dataset()`), and a clairvoyant cache ranks its items
by it (`MinIOCache(policy="clairvoyant", order=...)`)."""

from tfliquid.order.seeded_order import SeededOrder

__all__ = ["SeededOrder"]
