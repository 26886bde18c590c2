"""Plots saved as PNG files. A command checks where its plot goes before the work the plot shows, so that a bad
path or a missing matplotlib fails at once, not after a long measurement."""

from __future__ import annotations

from tfliquid._common.checks import check_output_file
from tfliquid._common.errors import ArgumentError


def check_plot_path(name: str, path) -> str:
    """`path`, if a PNG can be saved there (a file in an existing directory) and matplotlib is installed; else
    ArgumentError naming `name`."""
    path = check_output_file(name, path)
    pyplot()
    return path


def pyplot():
    """matplotlib.pyplot, drawing off screen (the Agg backend); ArgumentError when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError:
        raise ArgumentError("plots need matplotlib: pip install 'tfliquid[plot]'") from None
    return plt


def save_png(figure, path: str) -> None:
    """Saves `figure` as a PNG at exactly `path` (whatever its suffix) and frees it."""
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=120)
    pyplot().close(figure)
