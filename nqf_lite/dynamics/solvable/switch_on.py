"""Switch-on times, plateaus and the excess loss of orthogonal features
(paper Theorems 6-8, Eq. 43, Sec. 6).

A mode with ``r_k > 0`` starting at ``z_k(0) = eps`` rises from its plateau
to ``r_k / C_kk`` at ``t_k ~ log(r_k / (C_kk eps)) / r_k`` (Eq. 43,
:func:`switch_on_time`; the exact crossing of half its height is
:func:`switch_on_time_exact`).  The excess loss over the plateaus is what the
loss curves of Section 6 are made of.
"""

from __future__ import annotations

import numpy as np

from nqf_lite._checks import (
    as_array,
    broadcast,
    check_shape,
    competition_diagonal,
    glv_rates,
    positive,
    times,
    vector,
)
from nqf_lite.dynamics.solvable.glv import (
    feature_trajectory,
)

__all__ = [
    "crossing_time",
    "excess_loss",
    "excess_loss_draws",
    "plateau_values",
    "switch_on_time",
    "switch_on_time_exact",
]


# -----------------------------------------------------------------------------
# switch-on times
def switch_on_time(r: object, C: object, eps: object) -> np.ndarray:
    """Leading-order half-saturation times
    ``t*_k = (1/r_k) ln(r_k/(C_kk eps))`` (Fig. 3, Eq. 158).

    This is Eq. 158 with ``rho = 1/2``, ``z_k(0) = eps`` and the ``O(eps)``
    term dropped (the exact value is ``(1/r_k) ln(r_k/(C_kk eps) - 1)``, see
    :func:`switch_on_time_exact`).
    Arguments broadcast like numpy ufuncs (scalars in, scalar out).

    Parameters
    ----------
    r : array_like
        Growth rates.
    C : array_like
        Self-competitions ``C_kk`` (broadcast with ``r``), or the full
        ``(K, K)`` diagonal competition matrix when ``r`` has shape ``(K,)``.
    eps : array_like
        Initial abundance scale ``z_k(0) = eps > 0`` (M-units, quadratic in the
        weights).

    Returns
    -------
    ndarray or float
        ``inf`` where ``r_k <= 0`` (the mode never switches on) or ``C_kk =
        0``.

    Raises
    ------
    ValueError
        If a growing mode starts at or above saturation, ``eps >= r_k/C_kk``:
        it has no switch-on and the formula would return a time <= 0.
    """
    r, c = glv_rates(r, C)
    eps = as_array("eps", eps)
    if np.any(eps <= 0):
        raise ValueError(f"eps must be > 0, got min {eps.min():.3g}")
    r, c, eps = broadcast("r, C and eps", r, c, eps)
    ok = (r > 0) & (c > 0)
    ratio = np.divide(r, c * eps, out=np.full(r.shape, np.inf), where=ok)
    if np.any(ok & (ratio <= 1)):
        raise ValueError(
            "eps must be below saturation, eps < r_k/C_kk, for every "
            "growing mode "
            f"(min r_k/(C_kk eps) = {ratio[ok].min():.3g}); such a mode has "
            "no switch-on"
        )
    out = np.full(r.shape, np.inf)
    out[ok] = np.log(ratio[ok]) / r[ok]
    return out[()]


def switch_on_time_exact(
    r: object, C: object, z0: object, rho: float = 0.5
) -> np.ndarray:
    """Exact time at which ``z_k = rho * z_k^inf`` under Eq. 39 (Eq. 157).

    ``t_k(rho) = (1/r_k) ln[(rho/(1-rho)) (z_k^inf - z_k(0))/z_k(0)]`` with
    ``z_k^inf = r_k/C_kk``.  Arguments broadcast like numpy ufuncs.

    Parameters
    ----------
    r : array_like
    C : array_like
        As in :func:`switch_on_time`.
    z0 : array_like
        ``z_k(0) > 0``.
    rho : float
        Saturation fraction in (0, 1); 1/2 is half saturation.

    Returns
    -------
    ndarray or float
        ``inf`` where ``r_k <= 0`` or ``C_kk = 0``; ``0`` where
        ``z_k(0) >= rho z_k^inf`` already.
    """
    r, c = glv_rates(r, C)
    z0 = as_array("z0", z0)
    if np.any(z0 <= 0):
        raise ValueError("z0 must be > 0: a mode with z_k(0) = 0 never grows")
    rho = positive("rho", rho)
    if rho >= 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    r, c, z0 = broadcast("r, C and z0", r, c, z0)
    out = np.full(r.shape, np.inf)
    ok = (r > 0) & (c > 0)
    zinf = r[ok] / c[ok]
    above = z0[ok] >= rho * zinf
    # ln of (rho/(1-rho)) (zinf/z0 - 1), formed in log space so z0 ~ 1e-300
    # cannot overflow
    arg = np.where(above, 1.0, (rho / (1 - rho)) * (zinf / z0[ok] - 1.0))
    out[ok] = np.where(above, 0.0, np.log(arg) / r[ok])
    return out[()]


def plateau_values(r: object, C: object) -> np.ndarray:
    """Loss drop of each mode ``V_k = r_k^2/(8 C_kk)`` (Theorem 9; 0 where
    ``r_k <= 0``).

    Parameters
    ----------
    r : array_like
    C : array_like
        As in :func:`switch_on_time`.

    Returns
    -------
    ndarray or float
    """
    r, c = glv_rates(r, C)
    if np.any((c == 0) & (r != 0)):
        raise ValueError(
            "C_kk = 0 with r_k != 0: the loss is unbounded below along mode k"
        )
    return np.where(r > 0, r**2 / (8.0 * np.where(c > 0, c, 1.0)), 0.0)[()]


def excess_loss(z: object, r: object, C: object) -> np.ndarray:
    """Excess loss ``E = sum_k V_k (1 - z_k/z_k^inf)^2`` of orthogonal features
    (Eq. 163).

    Modes with ``r_k <= 0`` (``z_k^inf = 0``) contribute ``C_kk z_k^2/8``.

    Parameters
    ----------
    z : array_like, shape (T, K) or (K,)
        Abundances, ``>= 0``.
    r : array_like, shape (K,)
    C : array_like, shape (K, K) or (K,)

    Returns
    -------
    ndarray, shape (T,), or float for a single state ``z`` of shape (K,)
    """
    z = as_array("z", z, ndim=(1, 2))
    if z.shape[-1] == 0:
        raise ValueError(
            "z must hold at least one mode (shape (T, K) or (K,)), got "
            f"{z.shape}"
        )
    if np.any(z < 0):
        raise ValueError(
            "z must be >= 0 (abundances z_k = p_k^T M p_k of a PSD M), got "
            f"min {z.min():.3g}"
        )
    r = vector("r", r, z.shape[-1])
    c = competition_diagonal(C, r.size)
    zinf = np.where(r > 0, r / np.where(c > 0, c, 1.0), 0.0)
    return ((c * (z - zinf) ** 2).sum(axis=-1) / 8.0)[()]


def excess_loss_draws(
    t: object, r: object, C: object, z0: object
) -> np.ndarray:
    """Exact excess loss (Eq. 163 along Eq. 39) of orthogonal features from
    many starts.

    Column ``j`` is ``excess_loss(feature_trajectory(t, r, C, z0[j]), r, C)``:
    the loss curve of the start ``z0[j]``.  The starts are evaluated a few at a
    time, so memory stays at about ``2**16`` numbers per work array whatever
    ``len(z0)`` (one large ``(T, N K)`` evaluation is several times slower, as
    each temporary must be fetched fresh from the operating system).

    Parameters
    ----------
    t : array_like, shape (T,)
        Non-negative, non-decreasing gradient-flow times.
    r : array_like, shape (K,)
    C : array_like, shape (K, K) or (K,)
        Diagonal competition matrix, or its diagonal.
    z0 : array_like, shape (N, K)
        One start per row, ``>= 0``.

    Returns
    -------
    ndarray, shape (T, N)
    """
    t = times("t", t)
    r = vector("r", r)
    c = competition_diagonal(C, r.size)
    z0 = as_array("z0", z0, ndim=2)
    check_shape("z0", z0, (z0.shape[0], r.size))
    if np.any(z0 < 0):
        raise ValueError("z0 must be >= 0 (z_k = p_k^T M p_k of a PSD M)")
    block = max(1, 2**16 // max(1, t.size * r.size))
    E = np.empty((t.size, z0.shape[0]))
    for j in range(0, z0.shape[0], block):
        rows = z0[j : j + block]
        z = feature_trajectory(
            t, np.tile(r, len(rows)), np.tile(c, len(rows)), rows.ravel()
        )
        E[:, j : j + block] = excess_loss(
            z.reshape(t.size * len(rows), r.size), r, c
        ).reshape(t.size, len(rows))
    return E


def crossing_time(
    t: object, x: object, level: object, rising: bool = True
) -> np.ndarray:
    """First time each column of ``x`` crosses ``level`` (linear
    interpolation).

    Parameters
    ----------
    t : array_like, shape (T,)
    x : array_like, shape (T,) or (T, K)
    level : float or array_like, shape (K,)
    rising : bool
        Upward crossing (``x`` reaches ``>= level``) if True, else downward
        (``<= level``).

    Returns
    -------
    float or ndarray, shape (K,)
        ``inf`` for a column that never crosses; ``t[0]`` if it starts beyond
        the level.
    """
    t = times("t", t)
    x = as_array("x", x, ndim=(1, 2))
    one = x.ndim == 1
    x2 = x[:, None] if one else x
    if x2.shape[0] != t.size:
        raise ValueError(
            f"x must have {t.size} rows (one per time), got shape {x.shape}"
        )
    if not isinstance(rising, (bool, np.bool_)):
        raise TypeError(f"rising must be True or False, got {rising!r}")
    level = as_array("level", level, ndim=(0, 1))
    if level.ndim == 1 and level.shape != (x2.shape[1],):
        raise ValueError(
            "level must be a number or one level per column of x "
            f"({x2.shape[1]}), got shape {level.shape}"
        )
    lev = np.broadcast_to(level, (x2.shape[1],))
    s = x2 - lev if rising else lev - x2
    out = np.full(x2.shape[1], np.inf)
    for k in range(x2.shape[1]):
        idx = np.flatnonzero(s[:, k] >= 0)
        if idx.size == 0:
            continue
        i = idx[0]
        if i == 0:
            out[k] = t[0]
        else:
            f = -s[i - 1, k] / (s[i, k] - s[i - 1, k])
            out[k] = t[i - 1] + f * (t[i] - t[i - 1])
    return out[0] if one else out
