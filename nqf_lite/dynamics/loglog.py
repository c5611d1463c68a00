"""Log-log slopes of loss curves: the measured side of the power laws of
Section 6 (paper Eqs. 46, 161, Fig. 3).

:func:`fit_loglog_slope` fits ``ln L = slope ln t + intercept`` by least
squares on a window of a loss curve (resampled log-uniformly), to compare with
the exponents of :mod:`nqf_lite.dynamics.scaling`; :func:`fit_loglog_slopes`
does it for many curves at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nqf_lite._checks import (
    as_array,
    check_shape,
    vector,
)

__all__ = ["LogLogFit", "fit_loglog_slope", "fit_loglog_slopes"]


# -----------------------------------------------------------------------------
# slope fit
class LogLogFit(NamedTuple):
    """Least-squares line ``ln L = slope ln t + intercept`` over a window."""

    slope: float
    intercept: float
    decades: float


def fit_loglog_slope(
    t: object, L: object, window: tuple[float, float], n: int = 100
) -> LogLogFit:
    """Fit a power law ``L ∝ t^slope`` on the window ``[t_lo, t_hi]``.

    ``ln L`` is interpolated linearly in ``ln t`` onto ``n`` log-uniform points
    of the window, so the fit weights every decade equally whatever the
    sampling of ``t`` (e.g. one record per GD step).  The loss exponent is
    ``-slope``.

    Parameters
    ----------
    t : array_like, shape (T,)
        Strictly increasing positive times.
    L : array_like, shape (T,)
        Positive losses.
    window : (float, float)
        ``0 < t_lo < t_hi`` inside ``[t[0], t[-1]]``.
    n : int
        Number of fit points (``>= 2``).

    Returns
    -------
    LogLogFit
        ``slope``, ``intercept`` and ``decades = log10(t_hi/t_lo)``.
    """
    t = vector("t", t)
    L = vector("L", L, t.size)
    if np.any(t <= 0) or np.any(np.diff(t) <= 0):
        raise ValueError("t must be positive and strictly increasing")
    if np.any(L <= 0):
        raise ValueError("L must be > 0 to take logarithms")
    try:
        lo, hi = (float(w) for w in window)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"window must be a pair (t_lo, t_hi), got {window!r}"
        ) from exc
    if not (0 < lo < hi):
        raise ValueError(
            f"window must satisfy 0 < t_lo < t_hi, got {window!r}"
        )
    if lo < t[0] or hi > t[-1]:
        raise ValueError(
            f"window {window!r} must lie inside the sampled range "
            f"[{t[0]:.4g}, {t[-1]:.4g}]"
        )
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    lt = np.linspace(np.log(lo), np.log(hi), n)
    ll = np.interp(lt, np.log(t), np.log(L))
    slope, intercept = np.polyfit(lt, ll, 1)
    return LogLogFit(float(slope), float(intercept), float(np.log10(hi / lo)))


def fit_loglog_slopes(
    t: object, L: object, windows: object, n: int = 100
) -> np.ndarray:
    """:func:`fit_loglog_slope` for every column of ``L``: one curve per run,
    each on its window.

    Parameters
    ----------
    t : array_like, shape (T,)
        Strictly increasing positive times, shared by all curves.
    L : array_like, shape (T, N)
        Positive losses, one curve per column.
    windows : array_like, shape (2,) or (N, 2)
        One window ``(t_lo, t_hi)`` for every curve, or one per curve (row
        ``j`` for column ``j``), e.g. the switch-on times of each run's own
        modes.
    n : int
        Number of fit points per curve.

    Returns
    -------
    ndarray, shape (N,)
        The fitted slopes (loss exponents are their negatives).
    """
    L = as_array("L", L, ndim=2)
    if 0 in L.shape:
        raise ValueError(
            "L must hold at least one time and one curve, shape (T, N), "
            f"got {L.shape}"
        )
    w = as_array("windows", windows, ndim=(1, 2))
    if w.ndim == 1:
        check_shape("windows", w, (2,))
        w = np.broadcast_to(w, (L.shape[1], 2))
    else:
        check_shape("windows", w, (L.shape[1], 2))
    return np.array(
        [
            fit_loglog_slope(t, L[:, j], tuple(w[j]), n).slope
            for j in range(L.shape[1])
        ]
    )
