"""One figure style for the whole book.

Every chapter calls :func:`use_style` once and draws with the colours below, so
that "module" and "NQF" (and "theory") look the same on every page.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

__all__ = [
    "COLORS",
    "TWIN_LINE",
    "loglog_fit_line",
    "plot_band",
    "plot_structure",
    "subplots",
    "use_style",
]

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


def plot_structure(ax: Any, A: Any, layout: Any, title: str | None = None) -> Any:
    """Draw ``|A|`` with the neuron's parameter blocks marked and named.

    Parameters
    ----------
    ax : matplotlib Axes
    A : array_like, shape (p, p)
        One structure matrix (pick one output of a vector module).
    layout : nqf_lite.architectures.blocks.Layout
        The neuron layout, for block boundaries and tick labels.
    title : str, optional

    Returns
    -------
    matplotlib.image.AxesImage
    """
    A = np.abs(np.asarray(A, dtype=float))
    if A.shape != (layout.p, layout.p):
        raise ValueError(
            f"A must have shape ({layout.p}, {layout.p}) for layout {layout.names}, got {A.shape}"
        )
    im = ax.imshow(A, cmap="Blues", interpolation="nearest")
    centres = []
    for start, stop, _ in layout.edges():
        if start > 0:
            ax.axhline(start - 0.5, color="0.4", lw=0.7)
            ax.axvline(start - 0.5, color="0.4", lw=0.7)
        centres.append((start + stop - 1) / 2)
    ax.set_xticks(centres, layout.names, fontsize=7, rotation=90)
    ax.set_yticks(centres, layout.names, fontsize=7)
    ax.grid(False)
    if title:
        ax.set_title(title, fontsize=9)
    return im


#: the NQF twin drawn next to its network: black, dashed (the network: solid,
#: in colour)
TWIN_LINE = {"color": "k", "ls": "--", "lw": 1.3}


def plot_band(
    ax: Any,
    x: Any,
    ys: Any,
    color: str | None = None,
    label: str | None = None,
    log: bool = False,
    twin: bool = False,
    **kw: Any,
) -> None:
    """Draw an ensemble of curves: its mean as a line, its range as a band.

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like, shape (T,)
    ys : array_like, shape (E, T)
        One curve per member.
    color : str, optional
        Colour of the line and the band (default: the module's colour).
    label : str, optional
    log : bool
        Draw the geometric mean (for a log axis) instead of the mean.
    twin : bool
        Draw an NQF twin: :data:`TWIN_LINE`, a grey band (no ``color``).
    **kw
        Passed to the line (e.g. ``alpha``).
    """
    ys = np.asarray(ys, dtype=float)
    if ys.ndim != 2 or ys.shape[1] != np.shape(x)[0]:
        raise ValueError(
            "ys must have shape (members, len(x)) = "
            f"(E, {np.shape(x)[0]}), got {ys.shape}"
        )
    if log and np.any(ys <= 0):
        raise ValueError(
            "log=True needs positive curves (their geometric mean is drawn)"
        )
    mid = np.exp(np.log(ys).mean(0)) if log else ys.mean(0)
    band_color = "0.5" if twin else (color or COLORS["module"])
    alpha = 0.15 if twin else 0.18
    ax.fill_between(
        x, ys.min(0), ys.max(0), color=band_color, alpha=alpha, lw=0
    )
    line = dict(TWIN_LINE) if twin else {"color": band_color}
    line.update(kw)
    ax.plot(x, mid, label=label, **line)
