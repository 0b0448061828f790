"""matplotlib for the figures the demos write (files only: a demo may run without a display)."""

from __future__ import annotations


def pyplot():
    """matplotlib's pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
