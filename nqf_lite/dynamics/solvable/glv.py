"""The GLV reduction and its logistic closed forms (paper Sec. 5, Eqs.
32-39, Theorems 4-6, 16, App. A.12-A.14).

When the ``A_n = P Lambda_n P^T`` commute (Assumption 1), the mode abundances
``z_k = (P^T M P)_kk`` obey the generalised Lotka-Volterra equation
``z_k' = z_k (r_k - (C z)_k)`` (Eq. 32) with the rates and competitions of Eq.
37 (:func:`glv_coefficients`, found in the common eigenbasis of
:func:`common_eigenbasis`). For orthogonal features every mode is a logistic
(Theorem 6, Eq. 39: :func:`feature_trajectory`), as are the projector modes of
Theorem 16 and Saxe's deep linear modes.
"""

from __future__ import annotations

import numpy as np

from nqf_lite._checks import (
    abundances,
    as_array,
    broadcast,
    check_symmetric,
    competition_diagonal,
    fraction,
    integer,
    times,
    vector,
)

__all__ = [
    "COMMUTE_RTOL",
    "common_eigenbasis",
    "feature_trajectory",
    "glv_coefficients",
    "projector_logistic",
    "saxe_logistic",
]


#: Relative tolerance for "the A_n commute": max ||A_a A_b - A_b A_a|| <=
#: COMMUTE_RTOL * max ||A||^2.
COMMUTE_RTOL = 1e-10


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
    y = vector("y", y, m)
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
        Commutation and diagonalisation tolerance relative to
        ``max_n ||A_n||_2^2`` (resp. ``max_n ||A_n||_2``).
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

    ``z_k(t) = z_k(0) e^{r_k t} / (1 + C_kk z_k(0) phi_k(t))`` with
    ``phi_k(t) = (e^{r_k t} - 1)/r_k`` (``= t`` for ``r_k = 0``), which is Eq.
    39 for ``r_k != 0`` and ``z_k(0)/(1 + C_kk z_k(0) t)`` for ``r_k = 0``;
    evaluated without overflow for any sign of ``r_k`` and any ``z_k(0) >= 0``
    (down to 1e-300).

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
    t = times("t", t)
    r = vector("r", r)
    c = competition_diagonal(C, r.size)
    z0 = abundances("z0", z0, r.size)
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
    gamma = vector("gamma", gamma)
    kappa = vector("kappa", kappa, gamma.size)
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
    tau = vector("tau", tau)
    c = broadcast("c and tau", as_array("c", c, ndim=(0, 1)), tau)[0]
    rho0 = broadcast("rho0 and tau", as_array("rho0", rho0, ndim=(0, 1)), tau)[
        0
    ]
    if np.any(c < 0):
        raise ValueError("c must be >= 0 (Eq. 268)")
    if np.any(rho0 < 0):
        raise ValueError(
            f"rho0 must be >= 0 (singular values), got min {rho0.min():.3g}"
        )
    return feature_trajectory(t, 4.0 * tau, 4.0 * c, rho0)
