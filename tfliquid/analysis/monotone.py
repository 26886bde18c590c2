"""Prep rates by PCR scan group, held to the order decoding allows: a record read to scan group g holds each
image's first g scan groups, so preparing it decodes a part of what any later group's prefix (or full fidelity)
decodes, and its prep is at least as fast. Measured in turns on 2 shared cores, the rates break that order by
noise: one analysis of the benchmark's fetch-bound job measured groups 4 and 5 at 7,789 and 7,827 items/s, group
3 at 6,904 and group 1 at 7,701; the what-if then ranked group 3 behind group 5 for its fidelity. Pooling adjacent
violators (isotonic regression) restores the order: each run of groups that breaks it takes their mean time per
item, and ties go to the change that keeps more fidelity (whatif.Change.cost)."""

from __future__ import annotations


def scans_order(group) -> float:
    """A scan group's place in the order of scans read: group 1 first, full fidelity (None) last."""
    return float("inf") if group is None else group


def monotone_prep_by_group(prep_by_group: dict) -> dict:
    """{scan group (None: full fidelity): items/s}, fitted to be non-increasing from group 1 to full fidelity: a
    least-squares fit of the times per item (pool adjacent violators, equal weights)."""
    blocks = []  # runs of adjacent groups, each [summed time per item, [groups]]
    for group in sorted(prep_by_group, key=scans_order):
        blocks.append([1 / prep_by_group[group], [group]])
        while len(blocks) > 1 and _mean(blocks[-2]) > _mean(blocks[-1]):
            seconds, groups = blocks.pop()
            blocks[-1][0] += seconds
            blocks[-1][1] += groups
    return {group: 1 / _mean(block) for block in blocks for group in block[1]}


def _mean(block) -> float:
    seconds, groups = block
    return seconds / len(groups)
