"""The Fourier-features MLP of Section 7 (Eq. 50) and its NQF (App. C, Eqs.
296-297).

The model family of Fig. 5: a one-hidden-layer tanh network whose k-th unit
sees its own fixed feature,

    f(x) = scale * sum_k W_k tanh(s_k a_k psi_k(x)),   psi_k(x) = sqrt(2) cos(2
    pi k x),

with feature weights ``s_k = k^{-theta}`` and a target
``y = c sum_k b_k psi_k``, ``b_k = k^{-beta}``. The paper's Eq. 50 has
``scale = 1/sqrt(P)``; ``scale = 1`` drops that prefactor. Its NQF (Prop. 1,
Eq. 296) is block-diagonal with commuting, orthogonal blocks, so Theorem 6
applies and the growth rates and self-competitions (Eq. 297) feed the power-law
theory of :mod:`nqf_lite.dynamics.scaling`.

This module holds the features and target, both forward passes, the structure
matrices and the mode rates; the hand-written full-batch GD runners of Fig. 5
(the Fourier MLP or its NQF, and the plain tanh MLP baseline) are in
:mod:`nqf_lite.experiments.fourier`.  It is not a
:class:`nqf_lite.expansion.models.base.Model`: the network is not
permutation-symmetric (each unit has its own feature), so it is a single
"neuron" with ``p = 2P``.
"""

from __future__ import annotations

import numpy as np

from nqf_lite._checks import as_array, integer, positive, vector

__all__ = [
    "fourier_features",
    "fourier_target",
    "fourier_mlp",
    "fourier_nqf",
    "fourier_nqf_structure",
    "fourier_modes",
]


def fourier_features(M: int, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid and Fourier features of Eq. 50.

    ``x_n = n/M`` (``n = 0..M-1``) and ``psi_k(x) = sqrt(2) cos(2 pi k x)``,
    ``k = 1..P``. For ``P < M/2`` the features are orthonormal on the grid,
    ``(1/M) sum_n psi_k(x_n) psi_j(x_n) = delta_kj``, and have zero mean.

    Parameters
    ----------
    M : int
        Grid size.
    P : int
        Number of features, ``1 <= P < M/2``.

    Returns
    -------
    x : ndarray, shape (M,)
    psi : ndarray, shape (M, P)
    """
    M = integer("M", M)
    P = integer("P", P)
    if 2 * P >= M:
        raise ValueError(
            "P must be < M/2 for orthonormal cosines on the grid, got "
            f"P={P}, M={M}"
        )
    x = np.arange(M) / M
    k = np.arange(1, P + 1)
    return x, np.sqrt(2.0) * np.cos(2.0 * np.pi * np.outer(x, k))


def fourier_target(psi: object, b: object, c: float = 1.0) -> np.ndarray:
    """Target ``y(x_n) = c sum_k b_k psi_k(x_n)`` (Eq. 50's teacher,
    ``b_k = k^{-beta}``).

    Parameters
    ----------
    psi : array_like, shape (M, P)
    b : array_like, shape (P,)
    c : float
        Amplitude (the paper uses 1).

    Returns
    -------
    ndarray, shape (M,)
    """
    psi = feature_matrix(psi)
    b = vector("b", b, psi.shape[1])
    return positive("c", c) * psi @ b


def feature_matrix(psi: object) -> np.ndarray:
    """``psi`` (M, P) checked: a finite non-empty 2-D array of features."""
    psi = as_array("psi", psi, ndim=2)
    if 0 in psi.shape:
        raise ValueError(
            "psi must hold at least one grid point and one feature, shape "
            f"(M, P), got {psi.shape}"
        )
    return psi


def fourier_arguments(
    a: object,
    W: object,
    s: object,
    psi: object,
    scale: float,
    names: tuple[str, str] = ("a", "W"),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The arguments of the Fourier MLP checked once:
    ``(a, W, s, psi, scale)``, the vectors of length
    ``P`` (the columns of ``psi``)."""
    psi = feature_matrix(psi)
    P = psi.shape[1]
    return (
        vector(names[0], a, P),
        vector(names[1], W, P),
        vector("s", s, P),
        psi,
        positive("scale", scale),
    )


def fourier_mlp(
    a: object, W: object, s: object, psi: object, scale: float = 1.0
) -> np.ndarray:
    """The Fourier MLP ``f(x_n) = scale sum_k W_k tanh(s_k a_k psi_k(x_n))``
    (Eq. 50).

    Parameters
    ----------
    a, W : array_like, shape (P,)
        Input and output weights of the ``P`` units.
    s : array_like, shape (P,)
        Feature weights ``s_k = k^{-theta}``.
    psi : array_like, shape (M, P)
        Features on the grid (:func:`fourier_features`).
    scale : float
        Output prefactor: ``1/sqrt(P)`` in the paper, ``1`` without it.

    Returns
    -------
    ndarray, shape (M,)
    """
    a, W, s, psi, scale = fourier_arguments(a, W, s, psi, scale)
    return scale * np.tanh(psi * (s * a)) @ W


def fourier_nqf(
    a: object, W: object, s: object, psi: object, scale: float = 1.0
) -> np.ndarray:
    """NQF of the Fourier MLP,
    ``Tr[M A(x_n)] = scale sum_k s_k a_k W_k psi_k(x_n)`` (Eq. 296).

    Same arguments as :func:`fourier_mlp`; equals ``Tr[w w^T A(x_n)]`` with the
    block-diagonal ``A`` of :func:`fourier_nqf_structure` and
    ``w = (a_1, W_1, ..., a_P, W_P)``.

    Returns
    -------
    ndarray, shape (M,)
    """
    a, W, s, psi, scale = fourier_arguments(a, W, s, psi, scale)
    return scale * psi @ (s * a * W)


def fourier_nqf_structure(
    s: object, psi: object, scale: float = 1.0
) -> np.ndarray:
    """Block-diagonal structure matrices of the Fourier MLP (Eq. 296).

    ``A(x_n) = ⊕_k (scale s_k/2) [[0, psi_k(x_n)], [psi_k(x_n), 0]]`` on the
    parameters ordered ``(a_1, W_1, a_2, W_2, ...)``.  The network is not
    permutation-symmetric (each unit has its own feature), so it is a single
    "neuron" with ``p = 2P``.

    Parameters
    ----------
    s : array_like, shape (P,)
    psi : array_like, shape (M, P)
    scale : float

    Returns
    -------
    ndarray, shape (M, 2P, 2P)
    """
    psi = feature_matrix(psi)
    M, P = psi.shape
    s = vector("s", s, P)
    scale = positive("scale", scale)
    A = np.zeros((M, 2 * P, 2 * P))
    k = np.arange(P)
    A[:, 2 * k, 2 * k + 1] = 0.5 * scale * s * psi
    A[:, 2 * k + 1, 2 * k] = 0.5 * scale * s * psi
    return A


def fourier_modes(
    s: object, b: object, c: float = 1.0, scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates and self-competition of the growing Fourier modes (Eqs.
    296-297).

    Mode ``k+`` is the eigenvector ``(a_k + W_k)/sqrt(2)`` of the k-th block of
    Eq. 296, with eigenvalue ``lambda_{n,k} = scale s_k psi_k(x_n)/2``.  For
    the target ``y = c sum_k b_k psi_k`` and orthonormal features, Eq. 37 gives

    ``r_k = 4 c scale s_k b_k``, ``C_kk = 2 scale^2 s_k^2`` (so
    ``V_k = c^2 b_k^2``, ``z_k^inf = 2 c b_k/(scale s_k)``). The partner mode
    ``k-`` has rate ``-r_k``.

    Parameters
    ----------
    s : array_like, shape (P,)
        Feature weights.
    b : array_like, shape (P,)
        Target coefficients.
    c, scale : float
        Target amplitude and output prefactor.

    Returns
    -------
    r : ndarray, shape (P,)
    C : ndarray, shape (P,)
        Diagonal of the competition matrix of the growing modes.
    """
    s = vector("s", s)
    b = vector("b", b, s.size)
    c = positive("c", c)
    scale = positive("scale", scale)
    return 4.0 * c * scale * s * b, 2.0 * scale**2 * s**2
