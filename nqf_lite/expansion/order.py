"""The order parameters of a layer, ``M = W Wᵀ`` and ``μ = W 1`` (Theorem 2),
and the way back to weights.

Every NQF prediction, gradient and step depends on the weights ``W`` (p, d)
only through ``(M, μ)`` (Eq. 20, Eqs. 23-24).  Not every pair is reached:
some width-``d`` weights have the moments ``(M, μ)`` iff ``M - μμᵀ/d`` is
positive semi-definite of rank at most ``d - 1``.

- :func:`moments`: ``(M, μ)`` of weights ``W``;
- :func:`check_realizable`, :data:`REALIZABLE_RTOL`: the condition above,
  checked;
- :func:`realize_moments`, :func:`frame_orthogonal_to_ones`: width-``d``
  weights with given moments.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf

from nqf_lite._checks import (
    as_array,
    check_shape,
    check_symmetric,
    generator,
    width,
)

__all__ = [
    "REALIZABLE_RTOL",
    "check_realizable",
    "frame_orthogonal_to_ones",
    "moments",
    "realize_moments",
]


def moments(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order parameters of a layer: ``M = W W^T`` and ``mu = W 1`` (Theorem 2).

    Parameters
    ----------
    W : ndarray, shape (p, d)
        Neurons as columns.

    Returns
    -------
    M : ndarray, shape (p, p)
    mu : ndarray, shape (p,)
    """
    W = as_array("W", W, ndim=2)
    if W.size == 0:
        raise ValueError(
            "W must hold at least one neuron of at least one parameter, "
            f"got shape {W.shape}"
        )
    return W @ W.T, W.sum(axis=1)


#: relative tolerance of :func:`check_realizable` (eigenvalues of ``M - mu
#: mu^T/d`` below ``-REALIZABLE_RTOL * scale`` are negative, above
#: ``REALIZABLE_RTOL * scale`` count for the rank)
REALIZABLE_RTOL = 1e-9


def check_realizable(M: np.ndarray, mu: np.ndarray, d: int) -> None:
    """Raise ``ValueError`` unless some width-``d`` weights ``W`` have ``W Wᵀ =
    M`` and ``W 1 = mu``.

    Such ``W`` exist iff ``M`` is symmetric and ``C = M - mu muᵀ/d`` is
    positive semi-definite of rank at most ``d - 1`` (``W = mu 1ᵀ/d + U`` with
    ``U 1 = 0`` and ``U Uᵀ = C``); then ``M`` itself is PSD of rank at most
    ``d``.  The check is a Cholesky factorisation (LAPACK ``dpotrf``) of ``C +
    tol I`` when ``d > p`` (the rank bound holds automatically) and an
    eigenvalue count otherwise, with ``tol = REALIZABLE_RTOL * max(max_i
    |M_ii|, |mu|²/d)``.

    Parameters
    ----------
    M : ndarray, shape (p, p)
        Validated float64 array.
    mu : ndarray, shape (p,)
        Validated float64 array.
    d : int >= 1
        Width.
    """
    check_symmetric("M", M)
    p = M.shape[0]
    C = M - (mu[:, None] * mu) / d
    scale = max(float(np.abs(M.diagonal()).max()), float(mu @ mu) / d)
    tol = REALIZABLE_RTOL * scale + 1e-300
    if d > p:
        shifted = C.copy()
        shifted.flat[:: p + 1] += tol
        if (
            dpotrf(shifted, lower=1, clean=0, overwrite_a=1)[1] == 0
        ):  # C + tol I is positive definite
            return
    lam = np.linalg.eigvalsh(C)
    if lam[0] < -tol:
        raise ValueError(
            f"(M, mu) is not realisable by any width-{d} weights: M - mu "
            "mu^T/d must be positive "
            f"semi-definite, but its smallest eigenvalue is {lam[0]:.3g} (M "
            "must be a Gram matrix W W^T "
            "and mu = W 1 of the same W)"
        )
    rank = int(np.sum(lam > tol))
    if rank > d - 1:
        raise ValueError(
            f"(M, mu) is not realisable by any width-{d} weights: M - mu "
            f"mu^T/d has rank {rank} > d - 1 = "
            f"{d - 1} (M = W W^T has rank <= d); pass a width d >= {rank + 1}"
        )


def frame_orthogonal_to_ones(
    d: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """An orthonormal basis ``F`` (d, d - 1) of the complement of ``1_d``:
    ``Fᵀ F = I``, ``Fᵀ 1 = 0``.

    Moving neurons inside this complement keeps ``μ = W 1`` (Theorem 2's
    symmetry group: ``W -> W O`` with ``O 1 = 1``, ``O`` orthogonal, keeps
    ``(M, μ)``).

    Parameters
    ----------
    d : int >= 1
        Width.
    rng : Generator or int, optional
        Randomises the basis; a fixed basis (Gram-Schmidt of
        ``1, e_2, ..., e_d``) when ``None``.
    """
    d = width("d", d)
    gen = generator("rng", rng)
    base = np.eye(d)[:, 1:] if gen is None else gen.standard_normal((d, d - 1))
    return np.linalg.qr(np.column_stack([np.ones(d), base]))[0][:, 1:]


def realize_moments(
    M, mu, d: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Weights ``W`` (p, d) with ``W W^T = M`` and ``W 1 = mu``.

    Possible iff ``C = M - mu mu^T / d`` is positive semi-definite with rank at
    most ``d - 1``.  Construction: ``w_i = mu/d + u_i`` with ``U = L Z^T``,
    where ``C = L L^T`` and the columns of ``Z`` (d, r) are orthonormal and
    orthogonal to ``1_d`` (a random such frame when ``rng`` is given).

    Parameters
    ----------
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int
        Target width.
    rng : Generator or int, optional
        Randomises the frame ``Z``; deterministic (a fixed frame) when
        ``None``.

    Raises
    ------
    ValueError
        If ``C`` is not PSD or its rank exceeds ``d - 1``.
    """
    M = as_array("M", M, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    check_symmetric("M", M)
    p = M.shape[0]
    mu = as_array("mu", mu, ndim=1)
    check_shape("mu", mu, (p,))
    d = width("d", d)
    rng = generator("rng", rng)
    C = M - np.outer(mu, mu) / d
    lam, Q = np.linalg.eigh(0.5 * (C + C.T))
    tol = 1e-12 * max(1.0, float(np.max(np.abs(lam))))
    if lam.min() < -tol:
        raise ValueError(
            "M - mu mu^T/d must be positive semi-definite (smallest "
            f"eigenvalue {lam.min():.3g}): "
            "no width-d layer has these moments"
        )
    keep = lam > tol
    r = int(keep.sum())
    if r > d - 1:
        raise ValueError(
            f"M - mu mu^T/d has rank {r}, so it needs width >= {r + 1}, got "
            f"d = {d}"
        )
    L = Q[:, keep] * np.sqrt(lam[keep])
    Z = frame_orthogonal_to_ones(d, rng)[:, :r]
    return mu[:, None] / d + L @ Z.T
