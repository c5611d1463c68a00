"""Theorem 16 of the paper: logistic modes on orthogonal projectors (App. B.7,
Eqs. 252-262).

Setting: a ZGZ NQF ``f_n = Tr[M A_n]`` trained on ``L = (1/m) sum_n (f_n -
y_n)^2``.  With the empirical covariance and the label matrix of Eq. 252::

    K(X) = (4/m) sum_n <A_n, X>_F A_n,        Y = (4/m) sum_n y_n A_n,

the gradient flow reads ``M' = Y M + M Y - K(M) M - M K(M)`` (Eq. 258).  If
mutually orthogonal symmetric projectors ``Pi_a`` satisfy::

    Y Pi_a + Pi_a Y = 2 gamma_a Pi_a                                  (Eq. 253)
    K(Pi_b) Pi_a + Pi_a K(Pi_b) = 2 kappa_a delta_ab Pi_a             (Eq. 254)

and ``M(0) = sum_a z_a(0) Pi_a``, then ``M(t) = sum_a z_a(t) Pi_a`` (Eq. 255)
with the logistic ``z_a' = 2 z_a (gamma_a - kappa_a z_a)`` (Eq. 262), whose
closed form (Eqs. 256-257) is
:func:`nqf_lite.dynamics.solvable.projector_logistic`.  The ``A_n`` need not
commute.

This module reads ``gamma_a`` and ``kappa_a`` off a data set
(:func:`projector_coefficients`), builds data sets that satisfy Eqs. 253-254
with projectors of any rank and non-commuting structure matrices
(:func:`projector_data`), projects a moment matrix onto the span of the
projectors (:func:`span_coordinates`), and gives the exact map that full-batch
GD on ``W`` induces on the ``z_a`` (:func:`projector_gd_map`).
"""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

import numpy as np

from nqf_lite._checks import (
    as_array,
    check_shape,
    check_symmetric,
    generator,
    integer,
    nonnegative,
    positive,
)

__all__ = [
    "LinearNetworkCoefficients",
    "ProjectorCoefficients",
    "ProjectorData",
    "empirical_covariance",
    "label_matrix",
    "linear_network_coefficients",
    "projector_coefficients",
    "projector_data",
    "projector_gd_map",
    "span_coordinates",
    "span_start",
]

#: Relative tolerance for "the Pi_a are mutually orthogonal symmetric
#: projectors".
PROJECTOR_ATOL = 1e-10


class ProjectorCoefficients(NamedTuple):
    """``gamma_a``, ``kappa_a`` read off the data, and how well Eqs. 253-254
    hold."""

    gamma: np.ndarray
    kappa: np.ndarray
    residual: float


class LinearNetworkCoefficients(NamedTuple):
    """``tau_a``, ``c_a`` of Corollary 4 read off the data, and how well Eqs.
    267-268 hold."""

    tau: np.ndarray
    c: np.ndarray
    residual: float


class ProjectorData(NamedTuple):
    """A data set built for Theorem 16: structure matrices, labels,
    projectors."""

    A: np.ndarray
    y: np.ndarray
    projectors: np.ndarray


# -----------------------------------------------------------------------------
# validation
def _structures(A: object) -> np.ndarray:
    A = as_array("A", A, ndim=3)
    if A.shape[1] != A.shape[2] or A.shape[0] == 0:
        raise ValueError(
            f"A must have shape (m, p, p) with m >= 1, got {A.shape}"
        )
    check_symmetric("A", A)
    return A


def _projectors(projectors: object, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(R, p, p)`` mutually orthogonal symmetric projectors; return
    them and their ranks."""
    Pi = as_array("projectors", projectors, ndim=3)
    if Pi.shape[0] == 0:
        raise ValueError("projectors must hold at least one projector")
    check_shape("projectors", Pi, (Pi.shape[0], p, p))
    check_symmetric("projectors", Pi)
    products = np.einsum("aij,bjk->abik", Pi, Pi)
    expected = np.einsum("ab,aik->abik", np.eye(Pi.shape[0]), Pi)
    err = np.abs(products - expected).max()
    if err > PROJECTOR_ATOL:
        raise ValueError(
            "projectors must satisfy Pi_a Pi_b = delta_ab Pi_a (Theorem "
            f"16); max error {err:.3g}"
        )
    ranks = np.einsum("aii->a", Pi)
    if np.any(ranks < 0.5):
        raise ValueError("projectors must be non-zero (rank >= 1)")
    return Pi, ranks


# -----------------------------------------------------------------------------
# Eq. 252
def empirical_covariance(A: object, X: object) -> np.ndarray:
    """The empirical covariance ``K(X) = (4/m) sum_n <A_n, X>_F A_n`` (Eq.
    252).

    Parameters
    ----------
    A : array_like, shape (m, p, p)
        Symmetric structure matrices.
    X : array_like, shape (..., p, p)
        One matrix or a stack of them.

    Returns
    -------
    ndarray, shape (..., p, p)
    """
    A = _structures(A)
    X = as_array("X", X)
    if X.ndim < 2 or X.shape[-2:] != A.shape[1:]:
        raise ValueError(
            f"X must have shape (..., {A.shape[1]}, {A.shape[2]}), got "
            f"{X.shape}"
        )
    inner = np.einsum("nij,...ij->...n", A, X)
    return (4.0 / A.shape[0]) * np.einsum("...n,nij->...ij", inner, A)


def label_matrix(A: object, y: object) -> np.ndarray:
    """The label matrix ``Y = (4/m) sum_n y_n A_n`` (Eq. 252).

    Parameters
    ----------
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)

    Returns
    -------
    ndarray, shape (p, p)
    """
    A = _structures(A)
    y = as_array("y", y, ndim=1)
    check_shape("y", y, (A.shape[0],))
    return (4.0 / A.shape[0]) * np.einsum("n,nij->ij", y, A)


# -----------------------------------------------------------------------------
# Eqs. 253-254
def projector_coefficients(
    A: object, y: object, projectors: object
) -> ProjectorCoefficients:
    """Read ``gamma_a`` and ``kappa_a`` of Theorem 16 off a data set (Eqs.
    253-254).

    Taking the trace of Eq. 253 against ``Pi_a`` gives ``gamma_a = Tr[Y
    Pi_a]/rank(Pi_a)``, and of Eq. 254 with ``b = a`` gives ``kappa_a =
    Tr[K(Pi_a) Pi_a]/rank(Pi_a)``.  The residual measures how well the data
    satisfy the theorem's hypotheses with these constants.

    Parameters
    ----------
    A : array_like, shape (m, p, p)
        Symmetric structure matrices (they need not commute).
    y : array_like, shape (m,)
        Labels.
    projectors : array_like, shape (R, p, p)
        Mutually orthogonal symmetric projectors ``Pi_a`` (any ranks).

    Returns
    -------
    ProjectorCoefficients
        ``gamma`` and ``kappa`` (shape ``(R,)``), and ``residual``: the largest
        entry of ``Y Pi_a + Pi_a Y - 2 gamma_a Pi_a`` and of
        ``K(Pi_b) Pi_a + Pi_a K(Pi_b) - 2 kappa_a delta_ab Pi_a`` over all
        ``a, b``, relative to the largest entry of
        ``Y`` and of the ``K(Pi_b)``.

    Raises
    ------
    ValueError
        If the projectors are not mutually orthogonal symmetric projectors, or
        on bad shapes.
    """
    A = _structures(A)
    Pi, ranks = _projectors(projectors, A.shape[1])
    Y = label_matrix(A, y)
    K = empirical_covariance(A, Pi)  # K(Pi_b), shape (R, p, p)
    gamma = np.einsum("ij,aji->a", Y, Pi) / ranks
    kappa = np.einsum("aij,aji->a", K, Pi) / ranks
    eq253 = Y @ Pi + Pi @ Y - 2.0 * gamma[:, None, None] * Pi
    sym = np.einsum("bij,ajk->abik", K, Pi)
    eq254 = sym + np.swapaxes(sym, -1, -2)
    eq254 -= 2.0 * np.einsum("ab,a,aik->abik", np.eye(Pi.shape[0]), kappa, Pi)
    scale = max(np.abs(Y).max(), np.abs(K).max(), 1e-300)
    residual = max(np.abs(eq253).max(), np.abs(eq254).max()) / scale
    return ProjectorCoefficients(gamma, kappa, float(residual))


def span_coordinates(
    M: object, projectors: object
) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates ``z_a = Tr[M Pi_a]/rank(Pi_a)`` of ``M`` on the projectors,
    and what is left.

    Parameters
    ----------
    M : array_like, shape (..., p, p)
        Moment matrices (e.g. a trajectory of shape ``(T, p, p)``).
    projectors : array_like, shape (R, p, p)

    Returns
    -------
    z : ndarray, shape (..., R)
    off_span : ndarray, shape (...)
        Largest entry of ``M - sum_a z_a Pi_a`` (zero when ``M`` lies in the
        span, as Eq. 255 says it stays).
    """
    M = as_array("M", M)
    if M.ndim < 2:
        raise ValueError(f"M must have shape (..., p, p), got {M.shape}")
    Pi0 = as_array("projectors", projectors, ndim=3)
    Pi, ranks = _projectors(
        Pi0, Pi0.shape[-1]
    )  # the projectors fix p; M is checked against them
    check_shape("M", M, (*M.shape[:-2], Pi.shape[1], Pi.shape[1]))
    z = np.einsum("...ij,aji->...a", M, Pi) / ranks
    rest = M - np.einsum("...a,aij->...ij", z, Pi)
    return z, np.abs(rest).max(axis=(-2, -1))


# -----------------------------------------------------------------------------
# data
def _orthonormal_complement(Q: np.ndarray) -> np.ndarray:
    """Columns spanning the orthogonal complement of the orthonormal columns of
    ``Q``."""
    u, _, _ = np.linalg.svd(Q, full_matrices=True)
    return u[:, Q.shape[1] :]


def projector_data(
    ranks: object,
    gamma: object,
    kappa: object,
    p: int,
    m: int,
    rng: object,
    noise: float = 1.0,
) -> ProjectorData:
    """A data set satisfying Theorem 16 with projectors of the given ranks
    (Eqs. 253-254).

    The projectors ``Pi_a`` project onto orthogonal subspaces of a random
    orthonormal frame of ``R^p``.  The structure matrices are::

        A_n = sum_a lambda_{n,a} Pi_a + sum_j e_{j,n} F_j,

    where the columns ``lambda_{., a} = s_a q_a`` are orthogonal in sample
    space (``q_a`` orthonormal in ``R^m``), the labels are ``y = sum_a beta_a
    q_a``, the sample-space vectors ``e_j`` span the complement of the ``q_a``
    (so they are orthogonal to ``y`` and to every ``lambda_{., a}``), and the
    ``F_j`` are random symmetric matrices with ``Tr[F_j Pi_a] = 0`` and
    Frobenius norm ``noise``. Then ``Y = sum_a gamma_a Pi_a`` and ``K(Pi_b) =
    kappa_b Pi_b`` exactly, with ``s_a = sqrt(kappa_a m / (4 rank_a))`` and
    ``beta_a = gamma_a m / (4 s_a)``. With ``noise > 0`` the ``A_n`` do not
    commute (Assumption 1 fails), yet Theorem 16 applies.

    Parameters
    ----------
    ranks : array_like of int, shape (R,)
        Ranks of the projectors, each ``>= 1``; their sum is at most ``p``.
    gamma : array_like, shape (R,)
        Target ``gamma_a`` (any sign).
    kappa : array_like, shape (R,)
        Target ``kappa_a > 0``.
    p : int
        Number of parameters per neuron (size of the ``A_n``).
    m : int
        Number of samples, ``>= R`` (``>= R + 1`` when ``noise > 0``).
    rng : int, numpy Generator or SeedSequence
        The random source (frame, sample-space directions, the ``F_j``).
    noise : float
        Frobenius norm of each ``F_j`` of the non-commuting part ``sum_j
        e_{j,n} F_j`` (``0``: the ``A_n`` are combinations of the projectors
        and commute).

    Returns
    -------
    ProjectorData
        ``A`` (m, p, p), ``y`` (m,), ``projectors`` (R, p, p).
    """
    ranks_arr = np.asarray(ranks)
    if (
        ranks_arr.ndim != 1
        or ranks_arr.size == 0
        or not np.issubdtype(ranks_arr.dtype, np.integer)
    ):
        raise TypeError(
            "ranks must be a non-empty 1-D sequence of integers, got "
            f"{ranks!r}"
        )
    if np.any(ranks_arr < 1):
        raise ValueError(f"ranks must all be >= 1, got {ranks_arr.tolist()}")
    R = ranks_arr.size
    gamma = as_array("gamma", gamma, ndim=1)
    check_shape("gamma", gamma, (R,))
    kappa = as_array("kappa", kappa, ndim=1)
    check_shape("kappa", kappa, (R,))
    if np.any(kappa <= 0):
        raise ValueError("kappa must be > 0 (kappa_a = (4/m) rank_a s_a^2)")
    p = integer("p", p)
    m = integer("m", m)
    noise = nonnegative("noise", noise)
    if ranks_arr.sum() > p:
        raise ValueError(
            f"the ranks sum to {ranks_arr.sum()}, more than p = {p}"
        )
    if m < R + (noise > 0):
        raise ValueError(
            f"m must be >= {R + (noise > 0)} for {R} projectors (noise = "
            f"{noise:g})"
        )
    g = generator("rng", rng)
    if g is None:
        raise TypeError(
            "rng must be a seed or a numpy Generator (draws need a source)"
        )

    frame = np.linalg.qr(g.standard_normal((p, p)))[0]
    edges = np.concatenate([[0], np.cumsum(ranks_arr)])
    Pi = np.stack(
        [frame[:, a:b] @ frame[:, a:b].T for a, b in pairwise(edges)]
    )

    q = np.linalg.qr(g.standard_normal((m, R)))[
        0
    ]  # orthonormal sample-space columns
    s = np.sqrt(kappa * m / (4.0 * ranks_arr))
    lam = q * s  # lambda_{n,a}
    y = q @ (gamma * m / (4.0 * s))
    A = np.einsum("na,aij->nij", lam, Pi)
    if noise > 0:
        e = _orthonormal_complement(q)  # (m, m - R)
        F = g.standard_normal((e.shape[1], p, p))
        F = (F + np.swapaxes(F, 1, 2)) / 2
        F -= np.einsum(
            "ja,aik->jik", np.einsum("jik,aki->ja", F, Pi) / ranks_arr, Pi
        )
        F /= np.linalg.norm(F, axis=(1, 2))[:, None, None]
        A = A + noise * np.einsum("nj,jik->nik", e, F)
    return ProjectorData(A, y, Pi)


# -----------------------------------------------------------------------------
# GD
def projector_gd_map(
    gamma: object, kappa: object, z0: object, lr: float, n_steps: int
) -> np.ndarray:
    """Exact ``z_a`` under full-batch GD on ``W``:
    ``z_a <- z_a [1 + lr (gamma_a - kappa_a z_a)]^2``.

    Under Eqs. 253-254, on ``M = sum_a z_a Pi_a`` the matrix ``H = K(M) - Y``
    of one GD step ``W <- (I - lr H) W`` acts on the range of ``W`` as ``sum_a
    (kappa_a z_a - gamma_a) Pi_a``, so each ``Pi_a``-block of ``W`` is
    multiplied by ``1 + lr (gamma_a - kappa_a z_a)`` and ``z_a`` by its square.
    As ``lr -> 0`` this is the flow of Eq. 262.

    Parameters
    ----------
    gamma : array_like, shape (R,)
    kappa : array_like, shape (R,)
        ``kappa_a >= 0``.
    z0 : array_like, shape (R,)
        ``z_a(0) >= 0``.
    lr : float
        Learning rate ``> 0``; GD time is ``t = lr * step``.
    n_steps : int

    Returns
    -------
    ndarray, shape (n_steps + 1, R)
    """
    gamma = as_array("gamma", gamma, ndim=1)
    kappa = as_array("kappa", kappa, ndim=1)
    check_shape("kappa", kappa, gamma.shape)
    if np.any(kappa < 0):
        raise ValueError("kappa must be >= 0 (Theorem 16)")
    z = as_array("z0", z0, ndim=1).copy()
    check_shape("z0", z, gamma.shape)
    if np.any(z < 0):
        raise ValueError("z0 must be >= 0 (M(0) = sum_a z_a(0) Pi_a is PSD)")
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=0)
    out = np.empty((n_steps + 1, gamma.size))
    out[0] = z
    for s in range(n_steps):
        z = z * (1.0 + lr * (gamma - kappa * z)) ** 2
        out[s + 1] = z
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"lr = {lr:g} is too large: the GD map diverged (overflow)"
        )
    return out


# -----------------------------------------------------------------------------
# starts in the span
def span_start(
    z0: object, projectors: object, d: int, rng: object
) -> np.ndarray:
    """A random ``W(0)`` (p, d) with ``W(0) W(0)^T = sum_a z_a(0) Pi_a`` (the
    start of Theorem 16).

    With ``U_a`` an orthonormal basis of the range of ``Pi_a`` (``p x rank_a``)
    and a random ``O`` (``sum_a rank_a x d``) with orthonormal rows,
    ``W(0) = [sqrt(z_1) U_1, ..., sqrt(z_R) U_R] O``.  Its columns point in
    random directions of the span (the start is not aligned with any basis),
    yet ``M(0)`` is exactly the one of Eq. 255 at ``t = 0``.

    Parameters
    ----------
    z0 : array_like, shape (R,)
        ``z_a(0) >= 0``.
    projectors : array_like, shape (R, p, p)
        Mutually orthogonal symmetric projectors.
    d : int
        Number of neurons, ``>= sum_a rank(Pi_a)``.
    rng : int, numpy Generator or SeedSequence
        Source of ``O``.

    Returns
    -------
    ndarray, shape (p, d)
    """
    z0 = as_array("z0", z0, ndim=1)
    Pi = as_array("projectors", projectors, ndim=3)
    Pi, ranks = _projectors(Pi, Pi.shape[1])
    check_shape("z0", z0, (Pi.shape[0],))
    if np.any(z0 < 0):
        raise ValueError("z0 must be >= 0 (M(0) = sum_a z_a(0) Pi_a is PSD)")
    d = integer("d", d)
    total = round(float(ranks.sum()))
    if d < total:
        raise ValueError(
            f"d must be >= the summed ranks of the projectors ({total}), "
            f"got {d}"
        )
    g = generator("rng", rng)
    if g is None:
        raise TypeError(
            "rng must be a seed or a numpy Generator (draws need a source)"
        )
    blocks = []
    for a in range(Pi.shape[0]):
        w, U = np.linalg.eigh(Pi[a])
        blocks.append(np.sqrt(z0[a]) * U[:, w > 0.5])
    O = np.linalg.qr(g.standard_normal((d, total)))[0].T  # orthonormal rows
    return np.hstack(blocks) @ O


# -----------------------------------------------------------------------------
# Corollary 4
def linear_network_coefficients(
    S: object, y: object, u: object, v: object
) -> LinearNetworkCoefficients:
    """Read ``tau_a`` and ``c_a`` of Corollary 4 off a data set (Eqs. 266-268).

    For the NQF ``A_mu = (1/2) [[0, S_mu], [S_mu^T, 0]]`` of a two-layer linear
    network, with ``C(Q) = (1/m) sum_mu <S_mu, Q>_F S_mu`` and ``T = (1/m)
    sum_mu y_mu S_mu`` (Eq. 266), Corollary 4 asks that the orthonormal
    ``u_a``, ``v_a`` be singular vectors of ``T``, ``T v_a = tau_a u_a`` and
    ``T^T u_a = tau_a v_a`` (Eq. 267), and that ``C(u_a v_a^T) = c_a u_a
    v_a^T`` (Eq. 268).  Then ``rho_a`` obeys Eqs. 271-272
    (:func:`nqf_lite.dynamics.solvable.saxe_logistic`).  The inputs need not be
    whitened:
    ``c_a`` is whatever the data give.

    Parameters
    ----------
    S : array_like, shape (m, n_out, n_in)
    y : array_like, shape (m,)
    u : array_like, shape (R, n_out)
        Orthonormal rows.
    v : array_like, shape (R, n_in)
        Orthonormal rows.

    Returns
    -------
    LinearNetworkCoefficients
        ``tau = u_a^T T v_a``, ``c = <C(u_a v_a^T), u_a v_a^T>_F`` (shape
        ``(R,)``), and ``residual``: the largest entry of the defects of Eqs.
        267 and 268, relative to the largest entry of ``T`` and of the ``C(u_a
        v_a^T)``.

    Raises
    ------
    ValueError
        On bad shapes, or if ``u`` or ``v`` do not have orthonormal rows.
    """
    S = as_array("S", S, ndim=3)
    m, n_out, n_in = S.shape
    if m == 0:
        raise ValueError("S must hold at least one sample")
    y = as_array("y", y, ndim=1)
    check_shape("y", y, (m,))
    u = as_array("u", u, ndim=2)
    R = u.shape[0]
    check_shape("u", u, (R, n_out))
    v = as_array("v", v, ndim=2)
    check_shape("v", v, (R, n_in))
    for name, w in (("u", u), ("v", v)):
        if R == 0 or np.abs(w @ w.T - np.eye(R)).max() > PROJECTOR_ATOL:
            raise ValueError(
                f"{name} must have R >= 1 orthonormal rows (Corollary 4)"
            )
    T = np.einsum("m,mij->ij", y, S) / m
    modes = np.einsum("ai,aj->aij", u, v)  # u_a v_a^T
    C = np.einsum("mij,aij,mkl->akl", S, modes, S) / m  # C(u_a v_a^T)
    tau = np.einsum("ai,ij,aj->a", u, T, v)
    c = np.einsum("aij,aij->a", C, modes)
    eq267 = max(
        np.abs(v @ T.T - tau[:, None] * u).max(),  # T v_a - tau_a u_a
        np.abs(u @ T - tau[:, None] * v).max(),  # T^T u_a - tau_a v_a
    )
    eq268 = np.abs(C - c[:, None, None] * modes).max()
    scale = max(np.abs(T).max(), np.abs(C).max(), 1e-300)
    return LinearNetworkCoefficients(tau, c, float(max(eq267, eq268) / scale))
