"""One figure style for the whole book.

Every chapter calls :func:`use_style` once and draws with the colours below, so
that "module" and "NQF" (and "theory") look the same on every page.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

__all__ = ["COLORS", "use_style", "loglog_fit_line", "subplots"]

#: Roles shared by every figure: the real module, its NQF twin, the theory.
COLORS = {
    "module": "#1f4e9c",
    "nqf": "#d1495b",
    "theory": "#222222",
    "accent": "#edae49",
    "muted": "#66a182",
}

_STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "figure.figsize": (6.4, 4.0),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "font.size": 10,
}


def use_style() -> None:
    """Apply the book's matplotlib style (idempotent)."""
    mpl.rcParams.update(_STYLE)


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """``plt.subplots`` with the book style and a size that grows with the grid."""
    use_style()
    w, h = _STYLE["figure.figsize"]
    kwargs.setdefault("figsize", (min(3.4 * ncols, 14.0), 2.9 * nrows) if ncols * nrows > 1 else (w, h))
    kwargs.setdefault("constrained_layout", True)
    return plt.subplots(nrows, ncols, **kwargs)


def loglog_fit_line(ax, x, slope: float, intercept: float, label: str | None = None, **kw) -> None:
    """Draw ``exp(intercept) * x**slope`` as a dashed theory-coloured line."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    kw.setdefault("color", COLORS["theory"])
    kw.setdefault("linestyle", "--")
    kw.setdefault("linewidth", 1.0)
    ax.plot(x, np.exp(intercept) * x**slope, label=label, **kw)
