"""The modes of a forecast: one basis for all data matrices, GLV
coefficients, plateaus (paper Eqs. 32, 37, Assumption 1, Theorems 6-7).

:func:`joint_basis` rotates the data matrices ``A(x_mu)`` into the
eigenbasis of the label-weighted sum ``Y`` (Theorem 7), refined by Jacobi
joint diagonalisation inside its degenerate eigenspaces; :func:`glv_modes`
reads the growth rates and competitions of Eq. 37 in that basis, with how far
the data are from commuting; :func:`plateaus` and :func:`plateaus_gram` give
the loss at the GLV fixed point after each switch-on.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import nnls

from nqf_lite.dynamics.solvable import glv_coefficients
from nqf_lite.expansion.form import NQF

__all__ = [
    "DEGENERATE_RTOL",
    "RATE_RTOL",
    "GLVModes",
    "glv_modes",
    "growing_modes",
    "joint_basis",
    "mode_plateaus",
    "plateaus",
    "plateaus_gram",
]

#: Relative gap under which two eigenvalues of ``Y`` count as one degenerate
#: eigenspace.
DEGENERATE_RTOL = 1e-9


#: Growth rates ``r_k`` (and ``C_kk``) below this fraction of the largest count
#: as zero: such a mode never switches on (its rate is round-off, e.g. a
#: direction no structure matrix touches).
RATE_RTOL = 1e-10


def growing_modes(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Modes with ``r_k > 0`` and ``C_kk > 0``, both above round-off
    (``RATE_RTOL`` times the largest)."""
    return (r > RATE_RTOL * np.abs(r).max(initial=0.0)) & (
        c > RATE_RTOL * c.max(initial=0.0)
    )


def _jacobi_rotate(A: np.ndarray, P: np.ndarray, i: int, j: int) -> None:
    """In place: the Givens rotation of columns i, j that best diagonalises all
    A_mu jointly.

    Cardoso and Souloumiac's closed form for real symmetric matrices: with
    ``h_mu = (A_ii - A_jj, 2 A_ij)`` the optimal ``(cos 2t, sin 2t)`` is the
    leading eigenvector of ``sum_mu h_mu h_mu^T``.
    """
    h = np.stack([A[:, i, i] - A[:, j, j], 2.0 * A[:, i, j]], axis=1)
    _, vec = np.linalg.eigh(h.T @ h)
    x, s2 = vec[:, -1]
    if x < 0:
        x, s2 = -x, -s2
    c = math.sqrt((1.0 + x) / 2.0)
    s = s2 / (2.0 * c)
    G = np.array([[c, -s], [s, c]])
    idx = [i, j]
    A[:, :, idx] = A[:, :, idx] @ G
    A[:, idx, :] = np.swapaxes(G, 0, 1) @ A[:, idx, :]
    P[:, idx] = P[:, idx] @ G


def joint_basis(
    A: np.ndarray | None, Y: np.ndarray, sweeps: int = 30
) -> np.ndarray:
    """Eigenbasis of ``Y`` (decreasing), Jacobi-refined inside degenerate
    eigenspaces (when ``A`` is given)."""
    gam, P = np.linalg.eigh(Y)
    P = P[:, ::-1].copy()
    gam = gam[::-1]
    if A is None:
        return P
    scale = max(
        float(np.abs(gam).max(initial=0.0)),
        float(np.abs(A).max(initial=0.0)),
        1e-300,
    )
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    p = P.shape[0]
    pairs = [
        (i, j)
        for i in range(p)
        for j in range(i + 1, p)
        if abs(gam[i] - gam[j]) <= DEGENERATE_RTOL * scale
    ]
    for _ in range(sweeps if pairs else 0):
        before = float(
            np.sum(At[:, [i for i, _ in pairs], [j for _, j in pairs]] ** 2)
        )
        if before <= (1e-15 * scale) ** 2:
            break
        for i, j in pairs:
            _jacobi_rotate(At, P, i, j)
    return P


def plateaus(
    lam: np.ndarray, target: np.ndarray, order: np.ndarray, m: int
) -> np.ndarray:
    """Loss at the GLV saddle reached after each switch-on (Eq. 32 fixed
    points).

    After the modes ``S = order[:j]`` have switched on, ``z`` sits at the
    minimum of the loss of ``M = P diag(z) P^T``, ``(1/m) ||lam[:, S] z_S -
    target||^2`` over ``z_S >= 0`` (a non-negative least-squares problem; a
    stable fixed point of the GLV equation), with the loss of Eq. 26 (summed
    over the outputs, averaged over the ``m`` inputs). For a diagonal ``C``
    this is ``sum(target^2)/m - sum_{k in S} r_k^2/(8 C_kk)``.
    """
    out = [float(np.sum(target**2)) / m]
    for j in range(1, order.size + 1):
        _, res = nnls(lam[:, order[:j]], target)
        out.append(res**2 / m)
    return np.array(out)


def plateaus_gram(
    G: np.ndarray, b: np.ndarray, tt: float, order: np.ndarray, m: int
) -> np.ndarray:
    """:func:`plateaus` from ``G = lamᵀ lam``, ``b = lamᵀ target`` and
    ``tt = |target|^2`` alone.

    ``||lam_S z - t||^2 = zᵀ G_S z - 2 b_Sᵀ z + tt``; with ``G_S = U S Uᵀ``
    this is ``||S^(1/2) Uᵀ z - S^(-1/2) Uᵀ b_S||^2 + tt - b_Sᵀ G_S^+ b_S``
    (``b_S`` lies in the range of ``G_S``), a non-negative least-squares
    problem of the size of ``S``.
    """
    out = [tt / m]
    for j in range(1, order.size + 1):
        S = order[:j]
        w, U = np.linalg.eigh(G[np.ix_(S, S)])
        keep = w > 1e-12 * max(float(w.max()), 1e-300)
        root = np.sqrt(w[keep])
        Ub = U[:, keep].T @ b[S]
        _, res = nnls(root[:, None] * U[:, keep].T, Ub / root)
        out.append(max(res**2 + tt - float(Ub @ (Ub / w[keep])), 0.0) / m)
    return np.array(out)


class GLVModes(NamedTuple):
    """The modes of a layer's data and their GLV coefficients (Eqs. 32, 37).

    ``P`` (p, p) holds the modes as columns (decreasing eigenvalue of ``Y``),
    ``r`` and ``C`` the growth rates and competitions, ``commuting_error``
    the relative off-diagonal mass of the rotated data matrices.  ``lam``
    (n, p), the diagonals of the rotated ``A_n``, is ``None`` for a factored
    NQF, which gives ``gram = lam^T lam`` and ``lam_t = lam^T target``
    instead (never a p x p matrix per input).
    """

    P: np.ndarray
    r: np.ndarray
    C: np.ndarray
    commuting_error: float
    lam: np.ndarray | None
    gram: np.ndarray | None
    lam_t: np.ndarray | None


#: largest number of entries of the data matrices (inputs x p x p) for which
#: a factored NQF's commuting error is summed entry by entry; above it, the
#: total minus the diagonal mass (one pass over the factors) resolves the
#: relative error down to about the square root of round-off, 1e-8
EXACT_OFF_ENTRIES = 2**22


def _off_diagonal_mass(A: np.ndarray, P: np.ndarray) -> float:
    """Sum of the squared off-diagonal entries of every ``Pᵀ A_n P``."""
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    At[:, np.arange(A.shape[-1]), np.arange(A.shape[-1])] = 0.0
    return float(np.sum(At**2))


def glv_modes(nqf: NQF, target: np.ndarray) -> GLVModes:
    """Rotate the data matrices of ``nqf`` into one basis of modes and read
    the GLV coefficients of ``target`` (Eqs. 32, 37, Theorem 7).

    The loss of Eq. 26 sums over outputs and averages over the ``m`` inputs,
    so every sum over the ``n = m V`` (input, output) pairs is divided by
    ``m``, as in :meth:`nqf_lite.expansion.form.NQF.train`.

    Parameters
    ----------
    nqf : NQF
        The layer on its training inputs (checked by the caller).
    target : ndarray, shape (n,)
        Labels minus the output at ``W = 0``, one per (input, output).
    """
    lead = nqf._lead
    m = int(lead[0])
    n, pp = int(np.prod(lead)), nqf.p
    if getattr(nqf, "factored", False):
        # never a p x p matrix per input: Gram matrices of the factors
        Y = nqf._weighted_sum((4.0 / m) * target.reshape(lead))
        P = joint_basis(None, Y)
        gram = nqf._gram_of_diagonals(P)  # sum_n lam_nk lam_nj
        # sum_n lam_nk t_n = (m/4) p_k^T Y p_k
        lam_t = (m / 4.0) * np.sum(P * (Y @ P), axis=0)
        total = nqf._frobenius2()
        if n * pp * pp <= EXACT_OFF_ENTRIES:
            # small enough to rotate: the off-diagonal mass summed directly
            off = _off_diagonal_mass(nqf.A.reshape(n, pp, pp), P)
        else:  # total minus the diagonal: resolves errors above ~1e-8
            off = total - float(np.trace(gram))
        r, C = (8.0 / m) * lam_t, (8.0 / m) * gram
        lam = None
    else:
        A = nqf.A.reshape(n, pp, pp)
        Y = (4.0 / m) * np.einsum("n,nij->ij", target, A)
        P = joint_basis(A, Y)
        lam = np.einsum("ki,nkl,li->ni", P, A, P)
        total = float(np.sum(A**2))
        off = _off_diagonal_mass(A, P)
        r, C = glv_coefficients(lam, target)
        # glv_coefficients divides by its n rows
        r, C = r * (n / m), C * (n / m)
        gram = lam_t = None
    commuting_error = math.sqrt(max(off, 0.0) / total) if total > 0 else 0.0
    return GLVModes(P, r, C, commuting_error, lam, gram, lam_t)


def mode_plateaus(
    modes: GLVModes, target: np.ndarray, order: np.ndarray, m: int
) -> np.ndarray:
    """The loss plateaus after each switch-on in ``order``:
    :func:`plateaus`, or :func:`plateaus_gram` for a factored NQF."""
    if modes.lam is None:
        return plateaus_gram(
            modes.gram, modes.lam_t, float(target @ target), order, m
        )
    return plateaus(modes.lam, target, order, m)
