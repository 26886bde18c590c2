"""Hypothesis strategies shared by the tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def l3_images(max_side: int = 40):
    """uint8 [H, W, C] arrays of every size up to max_side x max_side with C in 1, 3, 4 (what L3 stores). The shape
    is drawn directly: a filter on the channel count failed Hypothesis' filter_too_much health check at random."""
    shapes = st.tuples(st.integers(1, max_side), st.integers(1, max_side), st.sampled_from([1, 3, 4]))
    return shapes.flatmap(lambda shape: hnp.arrays(np.uint8, shape))
