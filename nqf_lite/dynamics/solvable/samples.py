"""Exact solutions for special sample geometries (paper Theorems 4, 5 and 7,
Eqs. 40-42, App. A.15-A.17).

Proportional samples (Theorem 4), orthogonal samples (Theorem 5) and
isotropic samples with ``M(0)`` commuting with ``Y`` (Theorem 7), whose matrix
Riccati flow is integrated by :func:`isotropic_trajectory`.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from nqf_lite._checks import (
    abundances,
    as_array,
    check_shape,
    check_symmetric,
    fraction,
    matrix,
    nonempty_times,
    positive,
    times,
    vector,
)
from nqf_lite.dynamics.solvable.glv import (
    feature_trajectory,
)

__all__ = [
    "ISO_MAX_STEPS",
    "ISO_RANK_RTOL",
    "ISO_STEP_GROWTH",
    "isotropic_logistic",
    "isotropic_trajectory",
    "orthogonal_samples_xi",
    "orthogonal_samples_z",
    "proportional_samples_W",
    "proportional_samples_xi",
    "psd_factor",
]


# -----------------------------------------------------------------------------
# Theorems 4, 5, 7
def _integrate_xi(
    rhs, t: np.ndarray, n: int, rtol: float, method: str = "DOP853"
) -> np.ndarray:
    nonempty_times("t", t)
    sol = solve_ivp(
        rhs,
        (0.0, float(t[-1])),
        np.zeros(n),
        method=method,
        t_eval=t,
        rtol=rtol,
        atol=rtol * 1e-3,
    )
    if not sol.success:
        raise RuntimeError(f"xi integration failed: {sol.message}")
    return sol.y.T


def proportional_samples_xi(
    t: object,
    lam: object,
    z0: object,
    alpha: float,
    beta: float,
    rtol: float = 1e-12,
) -> np.ndarray:
    """Integrated residual ``xi(t)`` for proportional samples ``A_n = c_n A``
    (Theorem 4, Eqs. 34, 124).

    Solves ``xi' = alpha sum_j lam_j z_j(0) e^{-2 lam_j xi} - beta``,
    ``xi(0) = 0`` (DOP853), the differential form of the implicit integral Eq.
    34.

    Parameters
    ----------
    t : array_like, shape (T,)
    lam : array_like, shape (p,)
        Eigenvalues of ``A``.
    z0 : array_like, shape (p,)
        ``z_j(0) = (P^T M(0) P)_jj``.
    alpha, beta : float
        ``alpha = (4/m) sum c_n^2 > 0``, ``beta = (4/m) sum c_n y_n``.
    rtol : float

    Returns
    -------
    ndarray, shape (T,)
    """
    t = times("t", t)
    lam = vector("lam", lam)
    z0 = abundances("z0", z0, lam.size)
    alpha = positive("alpha", alpha)
    beta = float(as_array("beta", beta, ndim=0))
    rtol = fraction("rtol", rtol)
    w = alpha * lam * z0
    return _integrate_xi(
        lambda _s, x: np.array([w @ np.exp(-2.0 * lam * x[0]) - beta]),
        t,
        1,
        rtol,
    )[:, 0]


def proportional_samples_W(
    xi: object, P: object, lam: object, W0: object
) -> np.ndarray:
    """``W(t) = P exp(-xi(t) Lambda) P^T W(0)`` (Theorem 4, Eq. 33).

    Parameters
    ----------
    xi : array_like, shape (T,)
    P : array_like, shape (p, p)
    lam : array_like, shape (p,)
    W0 : array_like, shape (p, d)

    Returns
    -------
    ndarray, shape (T, p, d)
    """
    xi = as_array("xi", xi, ndim=1)
    P = as_array("P", P, ndim=2)
    lam = vector("lam", lam, P.shape[0])
    W0 = as_array("W0", W0, ndim=2)
    if W0.shape[0] != P.shape[0]:
        raise ValueError(f"W0 must have {P.shape[0]} rows, got {W0.shape}")
    D = np.exp(-xi[:, None] * lam[None, :])
    return np.einsum("ik,tk,kd->tid", P, D, P.T @ W0)


def orthogonal_samples_xi(
    t: object, lam: object, y: object, z0: object, rtol: float = 1e-11
) -> np.ndarray:
    """Per-sample integrated residuals for orthogonal samples (Theorem 5, Eqs.
    36, 133).

    ``xi_n' = sum_k lam_{n,k} z_k(0) exp(-(8/m) lam_{n,k} xi_n) - y_n``,
    ``xi_n(0) = 0``, integrated for all ``n`` at once by an explicit
    Runge-Kutta method (DOP853).

    Parameters
    ----------
    t : array_like, shape (T,)
    lam : array_like, shape (m, p)
        Each column has at most one non-zero entry (``A_n A_n' = 0``).
    y : array_like, shape (m,)
    z0 : array_like, shape (p,)
    rtol : float

    Returns
    -------
    ndarray, shape (T, m)
    """
    t = times("t", t)
    lam = matrix("lam", lam)
    m, p = lam.shape
    y = vector("y", y, m)
    z0 = abundances("z0", z0, p)
    if np.any((lam != 0).sum(axis=0) > 1):
        raise ValueError(
            "lam must have at most one non-zero per column (orthogonal "
            "samples, A_n A_n' = 0)"
        )
    rtol = fraction("rtol", rtol)
    a = 8.0 / m * lam
    w = lam * z0[None, :]
    return _integrate_xi(
        lambda _s, x: (w * np.exp(-a * x[:, None])).sum(axis=1) - y, t, m, rtol
    )


def orthogonal_samples_z(xi: object, lam: object, z0: object) -> np.ndarray:
    """Abundances ``z_k = z_k(0) exp(-(8/m) sum_n xi_n lam_{n,k})`` (Theorem 5,
    Eq. 131).

    Parameters
    ----------
    xi : array_like, shape (T, m)
    lam : array_like, shape (m, p)
    z0 : array_like, shape (p,)

    Returns
    -------
    ndarray, shape (T, p)
    """
    lam = matrix("lam", lam)
    xi = as_array("xi", xi, ndim=2)
    if xi.shape[1] != lam.shape[0]:
        raise ValueError(
            f"xi must have shape (T, {lam.shape[0]}), got {xi.shape}"
        )
    z0 = abundances("z0", z0, lam.shape[1])
    return z0 * np.exp(-(8.0 / lam.shape[0]) * xi @ lam)


#: Growth allowed in one step of :func:`isotropic_trajectory`: ``gamma_max *
#: step <= ISO_STEP_GROWTH``.
ISO_STEP_GROWTH = 8.0
#: Eigenvalues of ``M(0)`` below ``ISO_RANK_RTOL * max eigenvalue`` are
#: round-off: ``M(0)`` has lower rank.
ISO_RANK_RTOL = 1e-12
#: Most steps :func:`isotropic_trajectory` takes before the flow must have
#: reached its fixed point.
ISO_MAX_STEPS = 200_000


def psd_factor(name: str, M: np.ndarray) -> np.ndarray:
    """A factor ``F`` (p, r) with ``F F^T = M`` and ``r = rank M`` (eigenvalues
    below ISO_RANK_RTOL dropped)."""
    lam, V = np.linalg.eigh(0.5 * (M + M.T))
    top = float(np.max(np.abs(lam), initial=0.0))
    if lam.size and lam[0] < -ISO_RANK_RTOL * top:
        raise ValueError(
            f"{name} must be positive semi-definite (a Gram matrix W W^T), "
            "but its smallest eigenvalue is "
            f"{lam[0]:.3g} (largest {top:.3g})"
        )
    keep = lam > ISO_RANK_RTOL * top
    return V[:, keep] * np.sqrt(lam[keep])


def _riccati_steps(
    Z: np.ndarray, g: np.ndarray, c: float, dt: np.ndarray
) -> np.ndarray:
    """Factors ``Z(dt)`` (B, p, r) of the Riccati flow from the factor ``Z``
    (p, r), in the eigenbasis of ``Y``.

    ``M(dt) = D Z (I + 8c Z^T Phi Z)^{-1} Z^T D`` (Eq. 41 with
    ``M(0) = Z Z^T``, pushed through to the r x r inner matrix),
    ``D = e^{g dt}``, ``Phi = (e^{2 g dt} - 1)/(2g)``. With
    ``[I; sqrt(8c Phi) Z] = Q R``, ``R^T R`` is the inner matrix, so
    ``Z(dt) = D Z R^{-1}`` (no Gram matrix is formed). ``sqrt(8c Phi)`` is
    taken as ``e^{g dt} sqrt(8c (1 - e^{-2 g dt})/(2g))`` for a growing mode
    and directly for the others, so nothing overflows for ``g dt`` up to a few
    hundred.
    """
    gt = dt[:, None] * g[None, :]
    safe = np.where(g == 0, 1.0, g)
    grow = g > 0
    s = np.where(
        g == 0,
        dt[:, None],
        -np.expm1(-2.0 * np.where(grow, gt, 0.0)) / (2.0 * safe),
    )  # Phi e^{-2g dt}
    phi = np.where(
        g == 0,
        dt[:, None],
        np.expm1(2.0 * np.where(grow, 0.0, gt)) / (2.0 * safe),
    )  # Phi, g <= 0
    e = np.exp(gt)
    b = np.where(grow, e * np.sqrt(8.0 * c * s), np.sqrt(8.0 * c * phi))
    r = Z.shape[1]
    stacked = np.concatenate(
        [np.broadcast_to(np.eye(r), (dt.size, r, r)), b[:, :, None] * Z],
        axis=1,
    )
    R = np.linalg.qr(stacked, mode="r")
    DZ = e[:, :, None] * Z
    return np.swapaxes(
        np.linalg.solve(np.swapaxes(R, 1, 2), np.swapaxes(DZ, 1, 2)), 1, 2
    )


def isotropic_trajectory(
    t: object, Y: object, c: float, M0: object
) -> np.ndarray:
    """Riccati solution for isotropic samples (Theorem 7, Eq. 41), at any time
    and any rank of ``M0``.

    ``M(t) = e^{Yt} M0 [I + 8c Phi(t) M0]^{-1} e^{Yt}``,
    ``Phi(t) = int_0^t e^{2Ys} ds``, solving ``M' = Y M + M Y - 8c M^2`` (Eq.
    143).

    Evaluation.  In the eigenbasis of ``Y`` (eigenvalues ``gamma_k``) and with
    ``M0 = F F^T`` (``F`` of ``r = rank M0`` columns: ``M0 = W W^T`` of width
    ``d < p`` has rank ``d``, and eigenvalues below ``ISO_RANK_RTOL`` times the
    largest are its round-off), Eq. 41 is ``M(t) = D F (I_r + 8c F^T Phi
    F)^{-1} F^T D`` with ``D = e^{Yt}``, an ``r x r`` inverse that exists at
    every ``t``.  Its factor ``Z(t) = D F R^{-1}`` (``R`` from a QR
    factorisation, see ``_riccati_steps``) is advanced in steps with
    ``gamma_max * step <= ISO_STEP_GROWTH`` (Eq. 41 is a flow: ``M(t + s)`` is
    Eq. 41 started from ``M(t)``), so ``e^{2 gamma t}`` is never formed and the
    result stays finite and exact to rounding however large ``t`` is; times
    within one step of the last are evaluated together.  Once ``M`` is a fixed
    point of Eq. 143 to rounding, later times take its value.  A rank-``r``
    start stays rank ``r``, as gradient descent on ``d = r`` neurons keeps it.

    Parameters
    ----------
    t : array_like, shape (T,)
        Non-negative, non-decreasing times.
    Y : array_like, shape (p, p), symmetric
        ``Y = (4/m) sum_n y_n A_n``.
    c : float
        Isotropy constant of Eq. 40, ``> 0``.
    M0 : array_like, shape (p, p), symmetric positive semi-definite (any rank)

    Returns
    -------
    ndarray, shape (T, p, p)

    Raises
    ------
    ValueError
        On bad shapes or values, a non-PSD ``M0``, or a start whose flow is
        still moving after ``ISO_MAX_STEPS`` steps (``gamma_max t`` beyond
        ~1.6e6 with a mode of rate 0 in play).
    """
    t = times("t", t)
    Y = as_array("Y", Y, ndim=2)
    if Y.shape[0] != Y.shape[1] or Y.shape[0] == 0:
        raise ValueError(
            f"Y must be a non-empty square matrix, got shape {Y.shape}"
        )
    check_symmetric("Y", Y)
    c = positive("c", c)
    M0 = as_array("M0", M0, ndim=2)
    check_shape("M0", M0, Y.shape)
    check_symmetric("M0", M0)
    g, Q = np.linalg.eigh(0.5 * (Y + Y.T))
    Z = Q.T @ psd_factor("M0", M0)
    p, r = Z.shape
    out = np.zeros((t.size, p, p))
    if r == 0 or t.size == 0:
        return out
    top = float(np.abs(g).max())
    step = ISO_STEP_GROWTH / g[-1] if g[-1] > 0 else np.inf
    anchor, i, n_steps = 0.0, 0, 0
    while i < t.size:
        j = int(np.searchsorted(t, anchor + step, side="right"))
        if (
            j > i
        ):  # every remaining time within one step of the anchor, in one batch
            Zs = _riccati_steps(Z, g, c, t[i:j] - anchor)
            out[i:j] = Zs @ np.swapaxes(Zs, 1, 2)
            Z, anchor, i = Zs[-1], float(t[j - 1]), j
        else:
            Z = _riccati_steps(Z, g, c, np.array([step]))[0]
            anchor += step
        n_steps += 1
        if n_steps % 64 == 0 and i < t.size:
            M = Z @ Z.T
            flow = g[:, None] * M + M * g[None, :] - 8.0 * c * M @ M
            if np.abs(flow).max() <= 1e-14 * top * max(
                np.abs(M).max(), 1e-300
            ):  # a fixed point of Eq. 143
                out[i:] = M
                break
            if n_steps > ISO_MAX_STEPS:
                raise ValueError(
                    f"the flow is still moving after {ISO_MAX_STEPS} steps "
                    f"(gamma_max t = {g[-1] * anchor:.3g}); "
                    f"t = {t[-1]:.3g} is beyond the range "
                    "isotropic_trajectory integrates for this start"
                )
    M = np.einsum("ik,tkl,jl->tij", Q, out, Q)
    return 0.5 * (M + np.swapaxes(M, 1, 2))


def isotropic_logistic(
    t: object, gamma: object, c: float, z0: object
) -> np.ndarray:
    """Eigenvalues of ``M(t)`` for isotropic samples, ``M(0)`` and ``Y``
    commuting (Theorem 7, Eq. 42).

    Derivation.  Let ``Y = Q diag(gamma) Q^T`` and ``M(0) = Q diag(z(0)) Q^T``
    (simultaneously diagonalisable).  In Eq. 41 every factor is then a function
    of ``Y`` or ``M(0)`` and is diagonal in ``Q``: ``e^{Yt} -> e^{gamma_k t}``
    and ``Phi(t) -> phi_k = (e^{2 gamma_k t} - 1)/(2 gamma_k)`` (``= t`` if
    ``gamma_k = 0``), so ``M(t) = Q diag(z(t)) Q^T`` with

    .. math::

        z_k(t) = \\frac{e^{2\\gamma_k t} z_k(0)}{1 + 8c\\,\\phi_k(t) z_k(0)}
               = \\frac{\\gamma_k z_k(0)}
                       {4c z_k(0) + (\\gamma_k - 4c z_k(0)) e^{-2\\gamma_k t}},

    multiplying numerator and denominator by ``2 gamma_k e^{-2 gamma_k t}``
    (Eq. 42), and ``z_k(t) = z_k(0)/(1 + 8c z_k(0) t)`` for ``gamma_k = 0``.
    Equivalently ``z_k`` solves the logistic ``z_k' = z_k (2 gamma_k - 8c
    z_k)`` (the diagonal of Eq. 143), i.e.
    :func:`feature_trajectory` with ``r = 2 gamma`` and ``C_kk = 8c``, which is
    how it is evaluated (overflow-free for any sign of ``gamma_k``).

    Parameters
    ----------
    t : array_like, shape (T,)
        Non-negative, non-decreasing times.
    gamma : array_like, shape (K,)
        Eigenvalues of ``Y = (4/m) sum_n y_n A_n``.
    c : float
        Isotropy constant of Assumption 2 (Eq. 40), ``> 0``.
    z0 : array_like, shape (K,)
        Eigenvalues of ``M(0)`` on the same eigenvectors, ``>= 0``.

    Returns
    -------
    ndarray, shape (T, K)
    """
    gamma = vector("gamma", gamma)
    c = positive("c", c)
    return feature_trajectory(t, 2.0 * gamma, np.full(gamma.size, 8.0 * c), z0)
