"""Figure pieces that the chapters on learning dynamics share.

The claims of chapters 7 and 10 hold for ensembles of seeds (every claim of
this book holds for any seed), so their figures draw every member of an
ensemble, summarise fitted exponents as mean and spread over the members, and
shade the window on which a power law (Theorem 9 of the paper, Eq. 46) is
fitted. The colours are those of :mod:`nqf_lite.book.plotting`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from nqf_lite.book.plotting import COLORS

__all__ = ["OPEN", "plot_mean_sd", "plot_members", "shade_window"]

#: measured points: open circles of the size the chapters use
OPEN = {"ms": 3.5, "mfc": "none"}
_PLOTS = ("plot", "loglog", "semilogx", "semilogy")


def plot_members(
    ax: Any,
    x: Any,
    series: Iterable[tuple[Any, str | None, dict]],
    plot: str = "plot",
) -> None:
    """Draw ensembles member by member, labelling each series once.

    An ensemble of trained networks (and the NQF twin of each, Theorem 1 of
    the paper) is drawn as one line per seed: for member ``j`` one line of
    every series, then member ``j + 1``, so that a network and its twin from
    the same start are drawn together.

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like, shape (T,)
    series : iterable of (Y, label, style)
        ``Y`` of shape ``(T, E)``, one column a member (the same ``E`` for
        every series); ``label`` goes on the first member only; ``style`` is
        passed to the line (e.g. ``color``, ``ls``, ``marker``).
    plot : {"plot", "loglog", "semilogx", "semilogy"}
        The Axes method that draws.

    Raises
    ------
    ValueError
        If ``plot`` is unknown, ``series`` is empty, or a ``Y`` is not 2-D
        with ``len(x)`` rows and the members of the others.
    """
    if plot not in _PLOTS:
        raise ValueError(f"plot must be one of {_PLOTS}, got {plot!r}")
    n_x = np.shape(x)[0]
    series = [(np.asarray(Y, dtype=float), lab, kw) for Y, lab, kw in series]
    if not series:
        raise ValueError("series must hold at least one (Y, label, style)")
    n_members = series[0][0].shape[-1]
    for i, (Y, _, _) in enumerate(series):
        if Y.ndim != 2 or Y.shape != (n_x, n_members):
            raise ValueError(
                f"series[{i}] must have shape (len(x), members) = "
                f"({n_x}, {n_members}), got {Y.shape}"
            )
    draw = getattr(ax, plot)
    for j in range(n_members):
        for Y, label, style in series:
            draw(x, Y[:, j], label=None if j else label, **style)


def plot_mean_sd(ax: Any, x: Any, samples: Sequence[Any], **kw: Any) -> Any:
    """Draw the mean of each sample with its standard deviation as an error
    bar.

    The chapters fit one exponent per seed (Theorem 9 of the paper, Eq. 46;
    App. C, Eq. 292) and show the ensemble as mean ± s.d. (``ddof=1``, as in
    the ledger's spread).

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like, shape (K,)
        Where each sample is drawn.
    samples : sequence of K array_like
        One sample (at least two values) per point of ``x``.
    **kw
        Passed to ``ax.errorbar`` (default ``capsize=3``).

    Returns
    -------
    matplotlib.container.ErrorbarContainer

    Raises
    ------
    ValueError
        If ``samples`` does not match ``x`` or a sample has fewer than two
        values.
    """
    samples = [np.asarray(s, dtype=float).ravel() for s in samples]
    if len(samples) != np.shape(x)[0]:
        raise ValueError(
            f"samples must hold one sample per point of x ({np.shape(x)[0]}),"
            f" got {len(samples)}"
        )
    if any(s.size < 2 for s in samples):
        raise ValueError(
            "every sample needs at least two values (a standard deviation)"
        )
    kw.setdefault("capsize", 3)
    means = [s.mean() for s in samples]
    sds = [s.std(ddof=1) for s in samples]
    return ax.errorbar(x, means, yerr=sds, **kw)


def shade_window(
    ax: Any, window: Sequence[float], label: str | None = None
) -> Any:
    """Shade the time window on which a power law is fitted.

    The exponent of Theorem 9 of the paper (Eq. 46) holds where the
    switch-ons crowd, between the switch-on times of early and late modes;
    the chapters fit it on such a window and shade it in the accent colour.

    Parameters
    ----------
    ax : matplotlib Axes
    window : (float, float)
        ``(t_lo, t_hi)`` with ``t_lo < t_hi``.
    label : str, optional

    Raises
    ------
    ValueError
        If ``window`` is not two increasing finite numbers.
    """
    lo_hi = np.asarray(window, dtype=float)
    if lo_hi.shape != (2,) or not (
        np.all(np.isfinite(lo_hi)) and lo_hi[0] < lo_hi[1]
    ):
        raise ValueError(
            f"window must be (t_lo, t_hi) with t_lo < t_hi, got {window!r}"
        )
    return ax.axvspan(*window, color=COLORS["accent"], alpha=0.15, label=label)
