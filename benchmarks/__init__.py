"""Benchmarks: `python -m benchmarks.NAME`. Each prints its peers side by side, as ratios measured in one run."""
