"""Compression (Theorem 3): a width-(k_V + 1) NQF with the same training predictions.

Let ``V`` be the span of every ``g(x)``, every column of ``A(x)`` and of
``B(x)`` over the training inputs (and outputs), ``k_V = dim V`` and
``P = V V^T``.  For a width-``d`` NQF with ``d > k_V + 1`` and ``d' = k_V + 1``,
the NQF with ``g~ = g``, ``B~ = B``, ``A~ = (d'/d) A``, learning rate
``lr~ = (d/d') lr`` and initial moments ``mu~ = P mu``,
``M~ = (d/d') P M P`` makes the same predictions on the training inputs at
every step of (S)GD with the same batches.
"""

from __future__ import annotations

import numpy as np

from ._checks import positive
from .dynamics import NQF

__all__ = ["compress", "data_subspace", "k_V"]


def data_subspace(model: NQF, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (p, k_V) of ``span{g(x), Col A(x), Col B(x)}`` over the training set.

    Parameters
    ----------
    model : NQF
    rtol : float
        Singular values below ``rtol * largest`` count as zero.
    """
    if not isinstance(model, NQF):
        raise TypeError(f"model must be an NQF, got {type(model).__name__}")
    p = model.p
    cols = [
        model.g.reshape(-1, p).T,
        np.swapaxes(model.A.reshape(-1, p, p), 0, 1).reshape(p, -1),
        np.swapaxes(model.B.reshape(-1, p, p), 0, 1).reshape(p, -1),
    ]
    U, s, _ = np.linalg.svd(np.concatenate(cols, axis=1), full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return np.zeros((p, 0))
    return U[:, s > rtol * s[0]]


def k_V(model: NQF, rtol: float = 1e-10) -> int:
    """Dimension of the data subspace of Theorem 3."""
    return int(data_subspace(model, rtol=rtol).shape[1])


def compress(model: NQF, W, lr: float, rtol: float = 1e-10) -> tuple[NQF, np.ndarray, float]:
    """The compressed twin of Theorem 3.

    Parameters
    ----------
    model : NQF
        The width-``d`` model on the training set.
    W : array, shape (p, d)
        Its current (e.g. initial) weights.
    lr : float
        Its learning rate.
    rtol : float
        Rank tolerance for :func:`data_subspace`.

    Returns
    -------
    small_model : NQF
        ``A~ = (d'/d) A``, same ``g``, ``B``, ``f0``.
    W_small : ndarray, shape (p, d')
        Weights with ``mu~ = P mu`` and ``M~ = (d/d') P M P``; ``d' = k_V + 1``.
    lr_small : float
        ``(d/d') lr``.

    Raises
    ------
    ValueError
        If ``d <= k_V + 1`` (nothing to compress) or inputs are malformed.
    """
    if not isinstance(model, NQF):
        raise TypeError(f"model must be an NQF, got {type(model).__name__}")
    lr = positive("lr", lr)
    W = model._W(W)
    d = W.shape[1]
    basis = data_subspace(model, rtol=rtol)
    k = basis.shape[1]
    d_small = k + 1
    if d <= d_small:
        raise ValueError(
            f"width d = {d} is not larger than k_V + 1 = {d_small}: Theorem 3 has nothing to compress"
        )
    ratio = d / d_small
    Vt_mu = basis.T @ W.sum(axis=1)
    Vt_W = basis.T @ W
    C = ratio * (Vt_W @ Vt_W.T - np.outer(Vt_mu, Vt_mu) / d)
    lam, Q = np.linalg.eigh(0.5 * (C + C.T))
    L = Q * np.sqrt(np.clip(lam, 0.0, None))
    # k orthonormal rows in R^{d'} orthogonal to 1 (the "+1" neuron carries the mean)
    frame = np.linalg.qr(np.column_stack([np.ones(d_small), np.eye(d_small)[:, 1:]]))[0][:, 1:]
    U = L @ frame.T
    W_small = basis @ (Vt_mu[:, None] / d_small + U)
    small = NQF(A=model.A / ratio, g=model.g, B=model.B, f0=model.f0)
    return small, W_small, lr * ratio
