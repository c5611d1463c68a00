"""Exactly solvable learning dynamics of the NQF (paper Sec. 5-6, App.
A.12-A.17, B.7).

Setting: ZGZ NQF ``f_n = Tr[M A_n]`` with loss ``L = (1/m) sum_n (f_n -
y_n)^2`` trained by gradient flow ``W' = -H W``, ``H = (4/m) sum_n Delta_n
A_n`` (Eq. 27), hence ``M' = -(H M + M H)`` (Eq. 28).  When the ``A_n = P
Lambda_n P^T`` commute (Assumption 1), the mode abundances ``z_k = (P^T M
P)_kk`` obey the generalised Lotka-Volterra (GLV) equation ``z_k' = z_k (r_k -
(C z)_k)`` (Eq. 32) with

    r_k  = (8/m) sum_n lambda_{n,k} y_n,      C_kj = (8/m) sum_n lambda_{n,k}
    lambda_{n,j}   (Eq. 37).

This module holds the closed forms (Theorems 4-7, 16, Corollary 4, Proposition
7), switch-on times (Theorem 8) and reference integrators (GLV in log z, the
matrix flow Eq. 28, full-batch GD on W and its exact discrete GLV).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from nqf_lite._checks import (
    as_array,
    check_shape,
    check_symmetric,
    fraction,
    integer,
    positive,
)

__all__ = [
    "COMMUTE_RTOL",
    "DIAG_RTOL",
    "ISO_MAX_STEPS",
    "ISO_RANK_RTOL",
    "ISO_STEP_GROWTH",
    "glv_coefficients",
    "common_eigenbasis",
    "feature_trajectory",
    "switch_on_time",
    "switch_on_time_exact",
    "plateau_values",
    "excess_loss",
    "excess_loss_draws",
    "crossing_time",
    "glv_integrate",
    "gd_discrete_glv",
    "gd_nqf",
    "matrix_flow",
    "slaved_ratio",
    "slaved_moments",
    "proportional_samples_xi",
    "proportional_samples_W",
    "orthogonal_samples_xi",
    "orthogonal_samples_z",
    "isotropic_trajectory",
    "isotropic_logistic",
    "projector_logistic",
    "saxe_logistic",
]

#: Relative tolerance for "the A_n commute": max ||A_a A_b - A_b A_a|| <=
#: COMMUTE_RTOL * max ||A||^2.
COMMUTE_RTOL = 1e-10
#: Relative tolerance for "C is diagonal": max |C_kj|, k != j, <= DIAG_RTOL *
#: max |C_kk|.
DIAG_RTOL = 1e-10


# -----------------------------------------------------------------------------
# helpers
def _times(t: object) -> np.ndarray:
    t = as_array("t", t, ndim=1)
    if t.size and (t[0] < 0 or np.any(np.diff(t) < 0)):
        raise ValueError("t must be non-negative and non-decreasing")
    return t


def _vector(name: str, value: object, k: int | None = None) -> np.ndarray:
    arr = as_array(name, value, ndim=1)
    if k is not None:
        check_shape(name, arr, (k,))
    if arr.size == 0:
        raise ValueError(
            f"{name} must hold at least one entry, got shape {arr.shape}"
        )
    return arr


def _matrix(name: str, value: object) -> np.ndarray:
    arr = as_array(name, value, ndim=2)
    if 0 in arr.shape:
        raise ValueError(
            f"{name} must hold at least one row and one column, got shape "
            f"{arr.shape}"
        )
    return arr


def _broadcast(names: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """``np.broadcast_arrays`` with an error naming the arguments."""
    try:
        return np.broadcast_arrays(*arrays)
    except ValueError as exc:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(
            f"{names} must broadcast together, got shapes {shapes}"
        ) from exc


def _z0(z0: object, k: int) -> np.ndarray:
    z0 = _vector("z0", z0, k)
    if np.any(z0 < 0):
        raise ValueError("z0 must be >= 0 (z_k = p_k^T M p_k of a PSD M)")
    return z0


def _diag_of_C(C: object, k: int) -> np.ndarray:
    """Return the diagonal of ``C`` given as (K,) or (K, K); raise if (K, K) is
    not diagonal."""
    C = as_array("C", C, ndim=(1, 2))
    if C.ndim == 1:
        check_shape("C", C, (k,))
        d = C
    else:
        check_shape("C", C, (k, k))
        d = np.diag(C).copy()
        off = np.abs(C - np.diag(d)).max(initial=0.0)
        if off > DIAG_RTOL * max(np.abs(d).max(initial=0.0), 1e-300):
            raise ValueError(
                "C must be diagonal (orthogonal features, Thm 6); max "
                f"|off-diagonal| = {off:.3g}. "
                "For coupled modes use glv_integrate."
            )
    if np.any(d < 0):
        raise ValueError("the diagonal of C must be >= 0 (C is a Gram matrix)")
    return d


def _rates(r: object, C: object) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates and self-competitions broadcast elementwise (numpy
    conventions).

    ``C`` is read as a full competition matrix (its diagonal is used, after
    checking that it is diagonal) when ``r`` is 1-D with ``K`` entries and
    ``C`` has shape ``(K, K)``; otherwise ``r`` and ``C`` broadcast against
    each other entry by entry.
    """
    r = as_array("r", r)
    C = as_array("C", C)
    if r.ndim == 1 and C.ndim == 2 and C.shape == (r.size, r.size):
        c = _diag_of_C(C, r.size)
    else:
        if (
            C.ndim >= 2
            and C.shape[-1] == C.shape[-2] > 1
            and r.shape != C.shape
        ):
            raise ValueError(
                f"C of shape {C.shape} is read as a competition matrix only "
                f"with r of shape ({C.shape[0]},), "
                f"got r of shape {r.shape}; for rates that broadcast entry "
                "by entry pass C's diagonal"
            )
        c = C
        if np.any(c < 0):
            raise ValueError(
                "C must be >= 0 (C_kk = (8/m) sum_n lambda_nk^2, Eq. 37)"
            )
    r, c = _broadcast("r and C", r, c)
    return r, c


def _rC(r: object, C: object) -> tuple[np.ndarray, np.ndarray]:
    r = _vector("r", r)
    C = as_array("C", C, ndim=2)
    check_shape("C", C, (r.size, r.size))
    return r, C


# -----------------------------------------------------------------------------
# GLV reduction
def glv_coefficients(lam: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates and competition matrix of the GLV equation (Eqs. 32, 37).

    Parameters
    ----------
    lam : array_like, shape (m, p)
        ``lam[n, k]`` is the eigenvalue of ``A_n`` on the common eigenvector
        ``p_k``.
    y : array_like, shape (m,)
        Labels.

    Returns
    -------
    r : ndarray, shape (p,)
        ``r_k = (8/m) sum_n lambda_{n,k} y_n``.
    C : ndarray, shape (p, p)
        ``C_kj = (8/m) sum_n lambda_{n,k} lambda_{n,j}`` (positive
        semi-definite).
    """
    lam = as_array("lam", lam, ndim=2)
    m = lam.shape[0]
    if m == 0 or lam.shape[1] == 0:
        raise ValueError(
            "lam must hold at least one sample and one mode, got shape "
            f"{lam.shape}"
        )
    y = _vector("y", y, m)
    return (8.0 / m) * lam.T @ y, (8.0 / m) * lam.T @ lam


def common_eigenbasis(
    A: object, rtol: float = COMMUTE_RTOL, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Joint eigenbasis ``A_n = P diag(lam[n]) P^T`` of commuting symmetric
    matrices (Assumption 1).

    A random linear combination ``sum_n c_n A_n`` is eigendecomposed; for
    commuting matrices its eigenvectors diagonalise every ``A_n`` (with
    probability one for generic ``c``), which is then verified.

    Parameters
    ----------
    A : array_like, shape (m, p, p)
        Symmetric structure matrices.
    rtol : float
        Commutation and diagonalisation tolerance relative to ``max_n
        ||A_n||_2^2``
        (resp. ``max_n ||A_n||_2``).
    seed : int
        Seed of the random combination (the result is deterministic).

    Returns
    -------
    P : ndarray, shape (p, p)
        Orthogonal matrix of common eigenvectors (columns), ordered by the
        coordinate on which each column peaks and signed so that peak is
        positive (``P = I`` for diagonal ``A`` with distinct joint eigenvalue
        tuples).
    lam : ndarray, shape (m, p)
        ``lam[n, k] = p_k^T A_n p_k``.

    Raises
    ------
    ValueError
        If the matrices are not symmetric, do not commute, or are not
        diagonalised.
    """
    A = as_array("A", A, ndim=3)
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(
            "A must hold at least one matrix of size >= 1, got shape "
            f"{A.shape}"
        )
    check_symmetric("A", A)
    rtol = fraction("rtol", rtol)
    seed = integer("seed", seed, minimum=0)
    scale = max(
        float(np.max(np.linalg.norm(A, ord=2, axis=(1, 2)), initial=0.0)),
        1e-300,
    )
    comm = np.einsum("aij,bjk->abik", A, A)
    comm = np.abs(comm - np.swapaxes(comm, 0, 1)).max(initial=0.0)
    if comm > rtol * scale**2:
        raise ValueError(
            "A must commute (Assumption 1): max |A_a A_b - A_b A_a| = "
            f"{comm:.3g} > {rtol:.1g} * max||A||^2"
        )
    c = np.random.default_rng(seed).standard_normal(A.shape[0])
    _, P = np.linalg.eigh(np.einsum("n,nij->ij", c, A))
    # canonical order and sign: column k peaks on coordinate k (P = I for
    # diagonal A)
    peak = np.argmax(np.abs(P), axis=0)
    P = P[:, np.argsort(peak, kind="stable")]
    P = P * np.sign(P[np.argmax(np.abs(P), axis=0), np.arange(P.shape[1])])
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    lam = np.einsum("nkk->nk", At).copy()
    resid = np.abs(At - lam[:, :, None] * np.eye(A.shape[1])).max(initial=0.0)
    if resid > 1e3 * rtol * scale:
        raise ValueError(
            "the random combination failed to diagonalise A (residual "
            f"{resid:.3g}); change seed"
        )
    return P, lam


# -----------------------------------------------------------------------------
# logistic closed forms
def feature_trajectory(
    t: object, r: object, C: object, z0: object
) -> np.ndarray:
    """Exact logistic trajectory of orthogonal features (Theorem 6, Eq. 39).

    ``z_k(t) = z_k(0) e^{r_k t} / (1 + C_kk z_k(0) phi_k(t))`` with ``phi_k(t)
    = (e^{r_k t} - 1)/r_k`` (``= t`` for ``r_k = 0``), which is Eq. 39 for
    ``r_k != 0`` and ``z_k(0)/(1 + C_kk z_k(0) t)`` for ``r_k = 0``; evaluated
    without overflow for any sign of ``r_k`` and any ``z_k(0) >= 0`` (down to
    1e-300).

    Parameters
    ----------
    t : array_like, shape (T,)
        Non-negative, non-decreasing gradient-flow times.
    r : array_like, shape (K,)
        Growth rates (Eq. 37).
    C : array_like, shape (K, K) or (K,)
        Diagonal competition matrix, or its diagonal.
    z0 : array_like, shape (K,)
        ``z_k(0) >= 0``.

    Returns
    -------
    ndarray, shape (T, K)

    Raises
    ------
    ValueError
        If ``C`` is not diagonal (use :func:`glv_integrate`), or on bad
        shapes/values.
    """
    t = _times(t)
    r = _vector("r", r)
    c = _diag_of_C(C, r.size)
    z0 = _z0(z0, r.size)
    rt = t[:, None] * r[None, :]
    grow = r > 0
    safe_r = np.where(r == 0, 1.0, r)
    rt_dn = np.where(grow, rt, 0.0)  # e^{-rt} <= 1 when r > 0
    rt_up = np.where(grow, 0.0, rt)  # e^{+rt} <= 1 when r <= 0
    phi_dn = np.where(
        r != 0, -np.expm1(-rt_dn) / safe_r, t[:, None]
    )  # phi e^{-rt}, r > 0
    phi_up = np.where(
        r != 0, np.expm1(rt_up) / safe_r, t[:, None]
    )  # phi, r <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        z_pos = z0 / (np.exp(-rt_dn) + c * z0 * phi_dn)
    z_neg = z0 * np.exp(rt_up) / (1.0 + c * z0 * phi_up)
    return np.where(z0 > 0, np.where(grow, z_pos, z_neg), 0.0)


def projector_logistic(
    t: object, gamma: object, kappa: object, z0: object
) -> np.ndarray:
    """General exact solution on orthogonal projectors (Theorem 16, Eqs.
    256-257).

    ``z_a' = 2 z_a (gamma_a - kappa_a z_a)``: the logistic of
    :func:`feature_trajectory`
    with ``r = 2 gamma`` and ``C = 2 kappa``.  Theorem 7's Eq. 42 is the case
    ``kappa = 4c`` (all modes).

    Parameters
    ----------
    t : array_like, shape (T,)
    gamma : array_like, shape (R,)
        Eigen-rates of ``Y`` on the projectors (Eq. 253).
    kappa : array_like, shape (R,)
        Non-negative self-couplings (Eq. 254).
    z0 : array_like, shape (R,)

    Returns
    -------
    ndarray, shape (T, R)
    """
    gamma = _vector("gamma", gamma)
    kappa = _vector("kappa", kappa, gamma.size)
    if np.any(kappa < 0):
        raise ValueError("kappa must be >= 0 (Theorem 16)")
    return feature_trajectory(t, 2.0 * gamma, 2.0 * kappa, z0)


def saxe_logistic(
    t: object, tau: object, c: object, rho0: object
) -> np.ndarray:
    """Singular values of a two-layer linear network, balanced aligned init
    (Corollary 4, Eqs. 271-272, 288).

    ``rho_a(t) = tau_a rho0 / (c_a rho0 + (tau_a - c_a rho0) e^{-4 tau_a t})``,
    the solution of ``rho_a' = 4 rho_a (tau_a - c_a rho_a)`` (Eq. 284).  For
    whitened inputs and the loss averaged over the ``m * n_out`` scalar
    outputs, ``tau_a = s_a/n_out`` and ``c_a = 1/n_out`` where ``s_a`` are the
    teacher's singular values.

    Parameters
    ----------
    t : array_like, shape (T,)
    tau : array_like, shape (R,)
        Singular values of ``T = (1/m) sum y_mu S_mu`` (Eq. 266).
    c : array_like, shape (R,) or float
        Eigenvalues of the covariance operator on the singular modes (Eq. 268),
        ``>= 0``.
    rho0 : array_like, shape (R,) or float
        Initial singular values ``rho_a(0) >= 0``.

    Returns
    -------
    ndarray, shape (T, R)
    """
    tau = _vector("tau", tau)
    c = _broadcast("c and tau", as_array("c", c, ndim=(0, 1)), tau)[0]
    rho0 = _broadcast(
        "rho0 and tau", as_array("rho0", rho0, ndim=(0, 1)), tau
    )[0]
    if np.any(c < 0):
        raise ValueError("c must be >= 0 (Eq. 268)")
    if np.any(rho0 < 0):
        raise ValueError(
            f"rho0 must be >= 0 (singular values), got min {rho0.min():.3g}"
        )
    return feature_trajectory(t, 4.0 * tau, 4.0 * c, rho0)


# -----------------------------------------------------------------------------
# switch-on times
def switch_on_time(r: object, C: object, eps: object) -> np.ndarray:
    """Leading-order half-saturation times ``t*_k = (1/r_k) ln(r_k/(C_kk
    eps))`` (Fig. 3, Eq. 158).

    This is Eq. 158 with ``rho = 1/2``, ``z_k(0) = eps`` and the ``O(eps)``
    term dropped (the exact value is ``(1/r_k) ln(r_k/(C_kk eps) - 1)``, see
    :func:`switch_on_time_exact`).
    Arguments broadcast like numpy ufuncs (scalars in, scalar out).

    Parameters
    ----------
    r : array_like
        Growth rates.
    C : array_like
        Self-competitions ``C_kk`` (broadcast with ``r``), or the full ``(K,
        K)`` diagonal competition matrix when ``r`` has shape ``(K,)``.
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
    r, c = _rates(r, C)
    eps = as_array("eps", eps)
    if np.any(eps <= 0):
        raise ValueError(f"eps must be > 0, got min {eps.min():.3g}")
    r, c, eps = _broadcast("r, C and eps", r, c, eps)
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
        ``inf`` where ``r_k <= 0`` or ``C_kk = 0``; ``0`` where ``z_k(0) >= rho
        z_k^inf`` already.
    """
    r, c = _rates(r, C)
    z0 = as_array("z0", z0)
    if np.any(z0 <= 0):
        raise ValueError("z0 must be > 0: a mode with z_k(0) = 0 never grows")
    rho = positive("rho", rho)
    if rho >= 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    r, c, z0 = _broadcast("r, C and z0", r, c, z0)
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
    r, c = _rates(r, C)
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
    r = _vector("r", r, z.shape[-1])
    c = _diag_of_C(C, r.size)
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
    t = _times(t)
    r = _vector("r", r)
    c = _diag_of_C(C, r.size)
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
    t = _times(t)
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


# -----------------------------------------------------------------------------
# integrators
def _psd_competition(C: np.ndarray) -> None:
    """Raise unless ``C`` is symmetric positive semi-definite (a Gram matrix,
    Eq. 37).

    A diagonal ``C`` needs ``C_kk >= 0``; otherwise a Cholesky factorisation of
    ``C + tol I`` (``tol = 1e-10 max|C|``) must exist, which is cheaper than a
    spectrum.
    """
    check_symmetric("C", C)
    diag = np.diag(C)
    tol = 1e-10 * max(float(np.abs(C).max(initial=0.0)), 1e-300)
    if not np.any(C - np.diag(diag)):
        ok = bool(np.all(diag >= -tol))
    else:
        try:
            np.linalg.cholesky(C + tol * np.eye(C.shape[0]))
            ok = True
        except np.linalg.LinAlgError:
            ok = False
    if not ok:
        raise ValueError(
            "C must be positive semi-definite (C = (8/m) lam^T lam, Eq. 37); "
            "with such a C the abundances can blow up in finite time"
        )


def glv_integrate(
    t: object,
    r: object,
    C: object,
    z0: object,
    method: str = "auto",
    rtol: float = 1e-12,
) -> np.ndarray:
    """Integrate the GLV equation ``z' = z (r - C z)`` (Eq. 32), accurate down
    to ``z ~ 1e-300``.

    The ODE is solved for ``u = ln z`` (``u_k' = r_k - (C e^u)_k``), so
    relative accuracy does not degrade at tiny initial scales (``eps = 1e-30``
    and below).

    Parameters
    ----------
    t : array_like, shape (T,)
    r : array_like, shape (K,)
    C : array_like, shape (K, K)
        Symmetric positive semi-definite competition matrix (Eq. 37).
    z0 : array_like, shape (K,), all > 0
    method : str
        ``"auto"``: exact logistic (:func:`feature_trajectory`) when ``C`` is
        diagonal, else ``"DOP853"``; or any :func:`scipy.integrate.solve_ivp`
        method name, which forces numerical integration.
    rtol : float
        Relative tolerance (``atol = rtol`` on ``ln z``).

    Returns
    -------
    ndarray, shape (T, K)
    """
    t = _times(t)
    r, C = _rC(r, C)
    z0 = _z0(z0, r.size)
    if np.any(z0 == 0):
        raise ValueError(
            "z0 must be > 0 (integration in ln z); drop modes with z_k(0) = 0"
        )
    rtol = fraction("rtol", rtol)
    _psd_competition(C)
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {method!r}")
    if method == "auto":
        off = np.abs(C - np.diag(np.diag(C))).max(initial=0.0)
        if off <= DIAG_RTOL * max(np.abs(np.diag(C)).max(initial=0.0), 1e-300):
            return feature_trajectory(t, r, np.diag(C), z0)
        method = "DOP853"
    _nonempty(t)
    implicit = (
        {"jac": lambda _s, u: -C * np.exp(u)[None, :]}
        if method in ("Radau", "BDF", "LSODA")
        else {}
    )
    diag = np.diag(C).copy()
    if not np.any(
        C - np.diag(diag)
    ):  # diagonal C: O(K) right-hand side instead of a K x K product
        competition = lambda z: diag * z  # noqa: E731
    else:
        competition = lambda z: C @ z  # noqa: E731
    sol = solve_ivp(
        lambda _s, u: (
            r - competition(np.exp(np.minimum(u, 700.0)))
        ),  # clip trial steps only
        (0.0, float(t[-1])),
        np.log(z0),
        method=method,
        t_eval=t,
        rtol=rtol,
        atol=rtol,
        **implicit,
    )
    if not sol.success:
        raise RuntimeError(f"GLV integration failed: {sol.message}")
    return np.exp(sol.y.T)


def gd_discrete_glv(
    r: object, C: object, z0: object, lr: float, n_steps: int
) -> np.ndarray:
    """Exact abundances under full-batch GD on W: ``z <- z [1 + (lr/2)(r - C
    z)]^2`` (Eq. 32, one GD step).

    One GD step multiplies the k-th row of ``P^T W`` by ``1 - lr H~_kk`` with
    ``H~_kk = -(r_k - (C z)_k)/2``, so ``z_k`` is multiplied by its square.

    Parameters
    ----------
    r : array_like, shape (K,)
    C : array_like, shape (K, K)
    z0 : array_like, shape (K,)
    lr : float
        Learning rate ``eta > 0``; GD time is ``t = lr * step``.
    n_steps : int

    Returns
    -------
    ndarray, shape (n_steps + 1, K)
    """
    r, C = _rC(r, C)
    z = _z0(z0, r.size).copy()
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=0)
    out = np.empty((n_steps + 1, r.size))
    out[0] = z
    for s in range(n_steps):
        z = z * (1.0 + 0.5 * lr * (r - C @ z)) ** 2
        out[s + 1] = z
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"lr = {lr:g} is too large: the discrete GLV diverged (overflow)"
        )
    return out


def _A_y(A: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    A = as_array("A", A, ndim=3)
    if A.shape[1] != A.shape[2]:
        raise ValueError(f"A must have shape (m, p, p), got {A.shape}")
    check_symmetric("A", A)
    return A, _vector("y", y, A.shape[0])


def _H(A: np.ndarray, y: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``H = (4/m) sum_n Delta_n A_n`` with ``Delta_n = Tr[M A_n] - y_n`` (Eq.
    27)."""
    delta = np.einsum("nij,ij->n", A, M) - y
    return (4.0 / A.shape[0]) * np.einsum("n,nij->ij", delta, A)


def gd_nqf(
    A: object, y: object, W0: object, lr: float, n_steps: int, every: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on the weights of a ZGZ NQF: ``W <- W - lr H W`` (Eqs. 21,
    27).

    The arithmetic of :meth:`nqf_lite.expansion.form.NQF.gd_step` with ``g = B
    = 0``: the inputs are validated once, then the loop runs plain numpy (no
    per-step checks).

    Parameters
    ----------
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    W0 : array_like, shape (p, d)
    lr : float
    n_steps : int
    every : int
        Record every ``every``-th step.

    Returns
    -------
    t : ndarray, shape (S,)
        GD times ``lr * step`` of the records.
    M : ndarray, shape (S, p, p)
        Recorded ``M = W W^T``.

    Raises
    ------
    ValueError
        On bad inputs, or if the iteration overflows (``lr`` too large).
    """
    A, y = _A_y(A, y)
    W = as_array("W0", W0, ndim=2).copy()
    if W.shape[0] != A.shape[1]:
        raise ValueError(
            f"W0 must have {A.shape[1]} rows (p), got shape {W.shape}"
        )
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=0)
    every = integer("every", every, minimum=1)
    m, p = A.shape[0], A.shape[1]
    A2 = A.reshape(m, p * p)
    scale = 4.0 / m
    steps = np.arange(0, n_steps + 1, every)
    rec = np.empty((steps.size, p, p))
    rec[0] = W @ W.T
    for s in range(1, n_steps + 1):
        M = W @ W.T
        H = (scale * ((A2 @ M.ravel() - y) @ A2)).reshape(p, p)
        W = W - lr * (H @ W)
        if s % every == 0:
            rec[s // every] = W @ W.T
    if not np.all(np.isfinite(rec)):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * steps, rec


def matrix_flow(
    t: object, A: object, y: object, M0: object, rtol: float = 1e-12
) -> np.ndarray:
    """Integrate the gradient flow ``M' = -(H M + M H)`` (Eq. 28) with DOP853.

    A reference for the closed forms (no structural assumption on ``A``).

    Parameters
    ----------
    t : array_like, shape (T,)
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    M0 : array_like, shape (p, p), symmetric
    rtol : float
        Relative tolerance; ``atol = rtol * max|M0|``.

    Returns
    -------
    ndarray, shape (T, p, p)
    """
    t = _times(t)
    A, y = _A_y(A, y)
    p = A.shape[1]
    M0 = as_array("M0", M0, ndim=2)
    check_shape("M0", M0, (p, p))
    check_symmetric("M0", M0)
    rtol = fraction("rtol", rtol)

    def rhs(_s: float, v: np.ndarray) -> np.ndarray:
        M = v.reshape(p, p)
        H = _H(A, y, M)
        return -(H @ M + M @ H).ravel()

    _nonempty(t)
    atol = rtol * max(np.abs(M0).max(initial=0.0), 1e-300)
    sol = solve_ivp(
        rhs,
        (0.0, float(t[-1])),
        M0.ravel(),
        method="DOP853",
        t_eval=t,
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:
        raise RuntimeError(f"matrix flow integration failed: {sol.message}")
    return sol.y.T.reshape(t.size, p, p)


# -----------------------------------------------------------------------------
# Proposition 7
def slaved_ratio(M: object, P: object) -> np.ndarray:
    """Normalised off-diagonals ``M~_ij / sqrt(z_i z_j)`` with ``M~ = P^T M P``
    (Proposition 7).

    Under Assumption 1 this ratio is conserved by gradient flow (Eq. 30) and,
    exactly, by full-batch GD (each step rescales row k of ``P^T W`` by ``1 -
    lr H~_kk``).

    Parameters
    ----------
    M : array_like, shape (..., p, p)
    P : array_like, shape (p, p), orthogonal

    Returns
    -------
    ndarray, shape (..., p, p)
        Unit diagonal (the Cauchy-Schwarz bound gives |ratio| <= 1).
    """
    M = as_array("M", M)
    P = as_array("P", P, ndim=2)
    if M.ndim < 2 or M.shape[-2:] != P.shape or P.shape[0] != P.shape[1]:
        raise ValueError(
            f"M must have shape (..., p, p) matching P {P.shape}, got "
            f"{M.shape}"
        )
    Mt = np.swapaxes(P, 0, 1) @ M @ P
    z = np.einsum("...kk->...k", Mt)
    if np.any(z <= 0):
        raise ValueError(
            "every z_k = (P^T M P)_kk must be > 0 to normalise the "
            "off-diagonals"
        )
    s = np.sqrt(z)
    return Mt / (s[..., :, None] * s[..., None, :])


def slaved_moments(M0: object, P: object, z: object) -> np.ndarray:
    """Full ``M(t)`` from the abundances ``z(t)`` (Proposition 7, Eq. 30;
    Theorem 6, Eq. 38).

    ``M(t) = P D M~(0) D P^T`` with ``D = diag(sqrt(z(t)/z(0)))``: the
    off-diagonals of ``M~`` follow the diagonal.

    Parameters
    ----------
    M0 : array_like, shape (p, p)
    P : array_like, shape (p, p)
    z : array_like, shape (T, p), all > 0 where ``z_k(0) > 0``

    Returns
    -------
    ndarray, shape (T, p, p)
    """
    M0 = as_array("M0", M0, ndim=2)
    P = as_array("P", P, ndim=2)
    check_shape("M0", M0, P.shape)
    z = as_array("z", z, ndim=2)
    if z.shape[1] != P.shape[0]:
        raise ValueError(f"z must have shape (T, {P.shape[0]}), got {z.shape}")
    Mt0 = P.T @ M0 @ P
    z0 = np.diag(Mt0)
    d = np.sqrt(np.divide(z, z0, out=np.zeros_like(z), where=z0 > 0))
    return np.einsum("ik,tk,kl,tl,jl->tij", P, d, Mt0, d, P)


# -----------------------------------------------------------------------------
# Theorems 4, 5, 7
def _nonempty(t: np.ndarray) -> np.ndarray:
    if t.size == 0:
        raise ValueError("t must hold at least one time")
    return t


def _integrate_xi(
    rhs, t: np.ndarray, n: int, rtol: float, method: str = "DOP853"
) -> np.ndarray:
    _nonempty(t)
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

    Solves ``xi' = alpha sum_j lam_j z_j(0) e^{-2 lam_j xi} - beta``, ``xi(0) =
    0`` (DOP853), the differential form of the implicit integral Eq. 34.

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
    t = _times(t)
    lam = _vector("lam", lam)
    z0 = _z0(z0, lam.size)
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
    lam = _vector("lam", lam, P.shape[0])
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
    t = _times(t)
    lam = _matrix("lam", lam)
    m, p = lam.shape
    y = _vector("y", y, m)
    z0 = _z0(z0, p)
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
    lam = _matrix("lam", lam)
    xi = as_array("xi", xi, ndim=2)
    if xi.shape[1] != lam.shape[0]:
        raise ValueError(
            f"xi must have shape (T, {lam.shape[0]}), got {xi.shape}"
        )
    z0 = _z0(z0, lam.shape[1])
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


def _psd_factor(name: str, M: np.ndarray) -> np.ndarray:
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

    ``M(dt) = D Z (I + 8c Z^T Phi Z)^{-1} Z^T D`` (Eq. 41 with ``M(0) = Z
    Z^T``, pushed through to the r x r inner matrix), ``D = e^{g dt}``, ``Phi =
    (e^{2 g dt} - 1)/(2g)``. With ``[I; sqrt(8c Phi) Z] = Q R``, ``R^T R`` is
    the inner matrix, so ``Z(dt) = D Z R^{-1}`` (no Gram matrix is formed).
    ``sqrt(8c Phi)`` is taken as ``e^{g dt} sqrt(8c (1 - e^{-2 g dt})/(2g))``
    for a growing mode and directly for the others, so nothing overflows for
    ``g dt`` up to a few hundred.
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

    ``M(t) = e^{Yt} M0 [I + 8c Phi(t) M0]^{-1} e^{Yt}``, ``Phi(t) = int_0^t
    e^{2Ys} ds``, solving ``M' = Y M + M Y - 8c M^2`` (Eq. 143).

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
    t = _times(t)
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
    Z = Q.T @ _psd_factor("M0", M0)
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
    gamma = _vector("gamma", gamma)
    c = positive("c", c)
    return feature_trajectory(t, 2.0 * gamma, np.full(gamma.size, 8.0 * c), z0)
