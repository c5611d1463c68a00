"""Compression (Theorem 3): a width-(k_V + 1) NQF with the same training
predictions.

Let ``V`` be the span of every ``g(x)``, every column of ``A(x)`` and of
``B(x)`` over the training inputs (and outputs), ``k_V = dim V`` and ``P = V
V^T``.  For a width-``d`` NQF with ``d > k_V + 1`` and ``d' = k_V + 1``, the
NQF with ``g~ = g``, ``B~ = B``, ``A~ = (d'/d) A``, learning rate ``lr~ =
(d/d') lr`` and initial moments ``mu~ = P mu``, ``M~ = (d/d') P M P`` makes the
same predictions on the training inputs at every step of (S)GD with the same
batches.  With fewer neurons, ``d' <= k_V``, the best twin keeps the top ``d' -
1`` eigenpairs of the projected neuron covariance and starts from the error of
:func:`compression_residual` (Corollary 3).
"""

from __future__ import annotations

import numpy as np

from nqf_lite._checks import fraction, positive
from nqf_lite.expansion.form import NQF, frame_orthogonal_to_ones

__all__ = ["compress", "compression_residual", "data_subspace", "k_V"]


def data_subspace(model: NQF, rtol: float = 1e-10) -> np.ndarray:
    """Orthonormal basis (p, k_V) of ``span{g(x), Col A(x), Col B(x)}`` over
    the training set.

    Parameters
    ----------
    model : NQF
    rtol : float, 0 < rtol < 1
        Singular values below ``rtol * largest`` count as zero.

    Raises
    ------
    ValueError
        If ``rtol`` is not a finite number in (0, 1) (``rtol >= 1`` would drop
        the largest direction and return a wrong, too small subspace).
    """
    if not isinstance(model, NQF):
        raise TypeError(f"model must be an NQF, got {type(model).__name__}")
    rtol = fraction("rtol", rtol)
    p = model.p
    if getattr(
        model, "factored", False
    ):  # the factors span the same space, never a p x p per input
        _, s, Vt = np.linalg.svd(model._span_columns(), full_matrices=False)
        if s.size == 0 or s[0] == 0.0:
            return np.zeros((p, 0))
        return Vt[s > rtol * s[0]].T
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
    """Dimension of the data subspace of Theorem 3 (``rtol`` as in
    :func:`data_subspace`, 0 < rtol < 1)."""
    return int(data_subspace(model, rtol=rtol).shape[1])


def compress(
    model: NQF, W, lr: float, rtol: float = 1e-10, width: int | None = None
) -> tuple[NQF, np.ndarray, float]:
    """The compressed twin of Theorem 3, or its truncation to fewer neurons
    (Corollary 3).

    With ``V`` the basis of the data subspace, ``d`` the width of ``W`` and
    ``d'`` the twin's width, let ``C_V = (d/d') (V^T M V - V^T mu mu^T V / d)``
    with eigenvalues ``lambda_1 >= lambda_2 >= ...`` and orthonormal
    eigenvectors ``q_j``. The twin's neurons are ``w~_i = V (V^T mu / d' +
    sum_{j < d'} sqrt(lambda_j) q_j z_ji)`` with ``z_1, ..., z_{d'-1}``
    orthonormal rows orthogonal to ``1_{d'}``, so that ``mu~ = P mu`` and ``M~
    = (d/d') P M P`` up to the discarded eigenpairs ``j >= d'``.  For ``d' =
    k_V + 1`` nothing is discarded and the twin is exact (Theorem 3); for ``d'
    <= k_V`` it starts at the error of
    :func:`compression_residual` (Corollary 3, paper App. B.5).

    Parameters
    ----------
    model : NQF
        The width-``d`` model on the training set.
    W : array, shape (p, d)
        Its current (e.g. initial) weights.
    lr : float
        Its learning rate.
    rtol : float, 0 < rtol < 1
        Rank tolerance for :func:`data_subspace`.
    width : int, optional
        The twin's width ``d'``: ``k_V + 1`` (Theorem 3) when ``None``;
        otherwise ``1 <= width <= k_V + 1`` and ``width < d``, truncated when
        ``width <= k_V``.

    Returns
    -------
    small_model : NQF
        ``A~ = (d'/d) A``, same ``g``, ``B``, ``f0``.
    W_small : ndarray, shape (p, d')
        The twin's initial weights.
    lr_small : float
        ``(d/d') lr``.

    Raises
    ------
    ValueError
        If ``d <= d'`` (nothing to compress), ``width`` is out of range, or
        inputs are malformed.
    """
    W, basis, d, d_small, lam, Q = _twin_spectrum(model, W, rtol, width)
    lr = positive("lr", lr)
    ratio = d / d_small
    r = d_small - 1
    L = Q[:, :r] * np.sqrt(np.clip(lam[:r], 0.0, None))
    # r orthonormal rows in R^{d'} orthogonal to 1 (the "+1" neuron carries the
    # mean)
    frame = frame_orthogonal_to_ones(d_small)
    Vt_mu = basis.T @ W.sum(axis=1)
    W_small = basis @ (Vt_mu[:, None] / d_small + L @ frame[:, :r].T)
    if getattr(model, "factored", False):
        small = model._scaled(1.0 / ratio)
    else:
        small = NQF(A=model.A / ratio, g=model.g, B=model.B, f0=model.f0)
    return small, W_small, lr * ratio


def compression_residual(
    model: NQF, W, width: int, rtol: float = 1e-10
) -> float:
    """Initial error ``e0`` of the width-``d'`` twin of :func:`compress`
    (Corollary 3).

    .. math::

        e_0 = \\Big\\lVert \\tfrac{d'}{d}\\tilde M(0) - PM(0)P\\Big\\rVert_F +
        \\lVert\\tilde\\mu(0) - P\\mu(0)\\rVert
            = \\tfrac{d'}{d}\\sqrt{\\textstyle\\sum_{j \\ge d'} \\lambda_j^2},

    with ``lambda_1 >= lambda_2 >= ...`` the eigenvalues of
    ``C_V = (d/d') (V^T M V - V^T mu mu^T V / d)`` (``mu~ = P mu`` exactly, so
    the second norm vanishes). The paper states the bound with the eigenvalues
    of ``C`` without the prefactor ``d'/d``; the prefactor only rescales it.
    ``e0 = 0`` for ``d' = k_V + 1`` (Theorem 3).

    Parameters
    ----------
    model : NQF
    W : array, shape (p, d)
    width : int
        The twin's width ``d'``, ``1 <= d' <= k_V + 1`` and ``d' < d``.
    rtol : float, 0 < rtol < 1
        Rank tolerance for :func:`data_subspace`.

    Returns
    -------
    float
    """
    if width is None:
        raise TypeError(
            "width must be an integer (the twin's width d'), got None"
        )
    _, _, d, d_small, lam, _ = _twin_spectrum(model, W, rtol, width)
    return float(d_small / d * np.sqrt(np.sum(lam[d_small - 1 :] ** 2)))


def _twin_spectrum(model: NQF, W, rtol: float, width: int | None) -> tuple:
    """Validate; return ``W, V, d, d', lambda, Q`` with
    ``C_V = Q diag(lambda) Q^T``, ``lambda`` descending."""
    if not isinstance(model, NQF):
        raise TypeError(f"model must be an NQF, got {type(model).__name__}")
    W = model._W(W)
    d = W.shape[1]
    basis = data_subspace(model, rtol=rtol)
    k = basis.shape[1]
    if width is None:
        d_small = k + 1
        if d <= d_small:
            raise ValueError(
                f"width d = {d} is not larger than k_V + 1 = {d_small}: "
                "Theorem 3 has nothing to compress"
            )
    else:
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)):
            raise TypeError(f"width must be None or an integer, got {width!r}")
        if not 1 <= width <= k + 1:
            raise ValueError(
                f"width must satisfy 1 <= width <= k_V + 1 = {k + 1}, got "
                f"{width}"
            )
        if width >= d:
            raise ValueError(
                f"width must be smaller than the model's width d = {d}, got "
                f"{width}"
            )
        d_small = int(width)
    Vt_mu = basis.T @ W.sum(axis=1)
    Vt_W = basis.T @ W
    C = d / d_small * (Vt_W @ Vt_W.T - np.outer(Vt_mu, Vt_mu) / d)
    lam, Q = np.linalg.eigh(0.5 * (C + C.T))
    return W, basis, d, d_small, lam[::-1], Q[:, ::-1]
