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
    "THEORY_LINE",
    "TWIN_LINE",
    "figure_data",
    "loglog_fit_line",
    "plot_band",
    "plot_quantiles",
    "plot_runs",
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

#: a closed form or recursion drawn over its network (the NQF of Thm 1, the
#: closed (M, mu) dynamics of Thm 2, the compressed twin of Thm 3): dashed,
#: in the theory colour
THEORY_LINE = {"color": COLORS["theory"], "ls": "--"}

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
    """Apply the book's matplotlib style (idempotent).

    In an IPython kernel it also attaches :func:`figure_data` to every figure
    the inline backend shows (the output's metadata ``nqf_figure_data``), so
    the book can link each figure's data.
    """
    mpl.rcParams.update(_STYLE)
    _attach_figure_data()


#: the key of a displayed figure's output metadata that holds its data as CSV
FIGURE_DATA_KEY = "nqf_figure_data"
_CSV_HEADER = (
    "panel",
    "panel title",
    "x axis",
    "y axis",
    "series",
    "x",
    "y",
    "value",
)


def _clean(text: Any) -> str:
    return " ".join(str(text or "").split())


def _series_label(artist: Any, kind: str, n: int) -> str:
    label = _clean(artist.get_label())
    return label if label and not label.startswith("_") else f"{kind} {n}"


def figure_data(fig: Any) -> str:
    """What ``fig`` plots, as CSV text: one row per plotted point, in long
    format.

    Columns: ``panel`` (1, 2, ... in the figure's order), ``panel title``, ``x
    axis`` and ``y axis`` (the axis labels as drawn, with their units),
    ``series`` (the legend label, or "line 3", "band 1", "points 2", "image
    1"), ``x``, ``y`` and ``value`` (the colour value of a heat map cell or a
    coloured point).  Lines give their points, bands (``fill_between``) their
    outline, scatter plots their points, images and meshes one row per cell.
    Axes without data (a colour bar, a legend panel) are skipped.

    Raises
    ------
    TypeError
        If ``fig`` is not a matplotlib Figure.
    """
    import csv
    import io

    from matplotlib.collections import (
        Collection,
        PathCollection,
        PolyCollection,
        QuadMesh,
    )
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

    if not isinstance(fig, Figure):
        raise TypeError(
            f"fig must be a matplotlib Figure, got {type(fig).__name__}"
        )
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(_CSV_HEADER)
    colorbars = {
        getattr(getattr(im, "colorbar", None), "ax", None)
        for ax in fig.axes
        for im in ax.images
    }
    colorbars |= {
        getattr(getattr(c, "colorbar", None), "ax", None)
        for ax in fig.axes
        for c in ax.collections
    }
    panel = 0
    for ax in fig.axes:
        if ax in colorbars or not (ax.lines or ax.collections or ax.images):
            continue
        panel += 1
        head = [
            panel,
            _clean(ax.get_title()),
            _clean(ax.get_xlabel()),
            _clean(ax.get_ylabel()),
        ]
        counts: dict[str, int] = {}

        def name(artist: Any, kind: str) -> str:
            counts[kind] = counts.get(kind, 0) + 1
            return _series_label(artist, kind, counts[kind])

        for line in ax.lines:
            x, y = (
                np.asarray(v, dtype=float).ravel()
                for v in line.get_data(orig=True)
            )
            if x.size != y.size:
                continue
            series = name(line, "line")
            spans_x = line.get_transform() is ax.get_yaxis_transform(
                which="grid"
            )  # axhline
            spans_y = line.get_transform() is ax.get_xaxis_transform(
                which="grid"
            )  # axvline
            rows = [
                (
                    "" if spans_x else f"{xi:.6g}",
                    "" if spans_y else f"{yi:.6g}",
                )
                for xi, yi in zip(x, y)
            ]
            if spans_x or spans_y:  # a guide across the panel: one row
                rows = list(dict.fromkeys(rows))
            for xs, ys in rows:
                out.writerow(head + [series, xs, ys, ""])
        for coll in ax.collections:
            if not isinstance(coll, Collection):
                continue
            if isinstance(coll, QuadMesh):
                values = np.asarray(coll.get_array(), dtype=float).ravel()
                coords = coll.get_coordinates()
                centres = 0.25 * (
                    coords[:-1, :-1]
                    + coords[1:, :-1]
                    + coords[:-1, 1:]
                    + coords[1:, 1:]
                )
                centres = centres.reshape(-1, 2)
                series = name(coll, "mesh")
                for (xi, yi), v in zip(centres, values):
                    out.writerow(
                        head + [series, f"{xi:.6g}", f"{yi:.6g}", f"{v:.6g}"]
                    )
            elif isinstance(coll, PathCollection):
                offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(
                    -1, 2
                )
                arr = coll.get_array()
                values = (
                    np.asarray(arr, dtype=float).ravel()
                    if arr is not None
                    else None
                )
                series = name(coll, "points")
                for i, (xi, yi) in enumerate(offsets):
                    v = (
                        f"{values[i]:.6g}"
                        if values is not None and i < values.size
                        else ""
                    )
                    out.writerow(head + [series, f"{xi:.6g}", f"{yi:.6g}", v])
            elif isinstance(coll, PolyCollection):
                series = name(coll, "band")
                for path in coll.get_paths():
                    for xi, yi in np.asarray(path.vertices, dtype=float):
                        out.writerow(
                            head + [series, f"{xi:.6g}", f"{yi:.6g}", ""]
                        )
            else:  # line collections (error bars, vertical guides)
                series = name(coll, "segments")
                for path in coll.get_paths():
                    for xi, yi in np.asarray(path.vertices, dtype=float):
                        out.writerow(
                            head + [series, f"{xi:.6g}", f"{yi:.6g}", ""]
                        )
        for im in ax.images:
            if not isinstance(im, AxesImage):
                continue
            data = np.ma.filled(
                np.ma.asarray(im.get_array(), dtype=float), np.nan
            )
            if data.ndim != 2:
                continue
            series = name(im, "image")
            for row in range(data.shape[0]):
                for col in range(data.shape[1]):
                    out.writerow(
                        head + [series, col, row, f"{data[row, col]:.6g}"]
                    )
    return buf.getvalue()


def _attach_figure_data() -> None:
    """Have IPython's inline backend add :func:`figure_data` to each shown
    figure's metadata."""
    try:
        from IPython import get_ipython
        from matplotlib_inline import backend_inline
    except ImportError:
        return
    if get_ipython() is None or getattr(
        backend_inline, "_nqf_figure_data", False
    ):
        return
    original = backend_inline._fetch_figure_metadata

    def with_data(fig: Any) -> dict | None:
        meta = original(fig)
        try:
            data = figure_data(fig)
        # a broad except on purpose: a figure is still shown when its data
        # cannot be read
        except Exception:
            return meta
        return {**(meta or {}), FIGURE_DATA_KEY: data}

    backend_inline._fetch_figure_metadata = with_data
    backend_inline._nqf_figure_data = True


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """``plt.subplots`` with the book style and a size that grows with the
    grid."""
    use_style()
    w, h = _STYLE["figure.figsize"]
    kwargs.setdefault(
        "figsize",
        (min(3.4 * ncols, 14.0), 2.9 * nrows) if ncols * nrows > 1 else (w, h),
    )
    kwargs.setdefault("constrained_layout", True)
    return plt.subplots(nrows, ncols, **kwargs)


def loglog_fit_line(
    ax, x, slope: float, intercept: float, label: str | None = None, **kw
) -> None:
    """Draw ``exp(intercept) * x**slope`` as a dashed theory-coloured line."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    kw.setdefault("color", COLORS["theory"])
    kw.setdefault("linestyle", "--")
    kw.setdefault("linewidth", 1.0)
    ax.plot(x, np.exp(intercept) * x**slope, label=label, **kw)


def plot_structure(
    ax: Any, A: Any, layout: Any, title: str | None = None
) -> Any:
    """Draw ``|A|`` with the neuron's parameter blocks marked and named.

    Parameters
    ----------
    ax : matplotlib Axes
    A : array_like, shape (p, p)
        One structure matrix (pick one output of a vector module).
    layout : nqf_lite.expansion.models.blocks.Layout
        The neuron layout, for block boundaries and tick labels.
    title : str, optional

    Returns
    -------
    matplotlib.image.AxesImage
    """
    A = np.abs(np.asarray(A, dtype=float))
    if A.shape != (layout.p, layout.p):
        raise ValueError(
            f"A must have shape ({layout.p}, {layout.p}) for layout "
            f"{layout.names}, got {A.shape}"
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


def _curves(x: Any, ys: Any) -> np.ndarray:
    ys = np.asarray(ys, dtype=float)
    if ys.ndim != 2 or ys.shape[1] != np.shape(x)[0]:
        raise ValueError(
            "ys must have shape (members, len(x)) = "
            f"(E, {np.shape(x)[0]}), got {ys.shape}"
        )
    return ys


def plot_quantiles(
    ax: Any,
    x: Any,
    ys: Any,
    q: tuple[float, float] = (0.1, 0.9),
    color: str | None = None,
    label: str | None = None,
    fmt: str = "-",
    alpha: float = 0.25,
    **kw: Any,
) -> None:
    """Draw an ensemble of curves by its quantiles: the median as a line,
    the band between the quantiles ``q``.

    The book's error plots are ensembles over random inputs and weight
    directions: the error of the quadratic form against the weight scale
    (Thm 1, Eqs. 2-3; Props. 1-6), the drift between twins of the same
    moments (Thm 2, App. B.3), the motion of the tangent kernel with the
    width (Prop. 9).  A median and a quantile band are robust to the one
    member whose error sits at rounding level.

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like, shape (T,)
    ys : array_like, shape (E, T)
        One curve per member.
    q : (float, float)
        Lower and upper quantile of the band, in ``[0, 1]``; ``(0, 1)`` is
        the range.
    color : str, optional
        Colour of the line and the band (default: the module's colour).
    label : str, optional
    fmt : str
        Matplotlib format of the median line (``"o-"``: with markers).
    alpha : float
        Opacity of the band.
    **kw
        Passed to the median line (e.g. ``ms``).
    """
    ys = _curves(x, ys)
    lo, hi = float(q[0]), float(q[1])
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"q must satisfy 0 <= q[0] <= q[1] <= 1, got {q}")
    low, mid, high = np.quantile(ys, [lo, 0.5, hi], axis=0)
    color = color or COLORS["module"]
    ax.fill_between(x, low, high, color=color, alpha=alpha, lw=0)
    ax.plot(x, mid, fmt, color=color, label=label, **kw)


def plot_runs(
    ax: Any, x: Any, ys: Any, label: str | None = None, **kw: Any
) -> None:
    """Draw every member of an ensemble as its own line; only the first
    carries ``label`` (one legend entry for the ensemble).

    For the runs whose individual curves the text discusses: the switch-on
    of each initialisation (the forecast of Eq. 143), the error of each
    compressed twin against its bound (Cor. 3).

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like, shape (T,)
    ys : array_like, shape (E, T)
        One curve per member.
    label : str, optional
    **kw
        Passed to every line (``color``, ``lw``, ``alpha``, ...).
    """
    ys = _curves(x, ys)
    for i, y in enumerate(ys):
        ax.plot(x, y, label=label if i == 0 else None, **kw)
