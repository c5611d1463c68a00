"""Matrix sensing, matrix completion, phase retrieval and quadratic networks
(Table 3, rows 1-3, 5-6).

Each row of the paper's Table 3 (App. A.2) is one
:class:`~nqf_lite.expansion.models.base.Model`
registered in ``nqf_lite.expansion.models.MODELS``.  All five models of this
module are *exact* neural quadratic forms: their output is ``Tr[M A(x)]`` with
``M = W Wᵀ`` identically (Eq. 4), not only to leading order (Eq. 2).  A neuron
is one rank-one component of the factor(s): a column of ``W`` (of ``[U; V]``
for the rectangular models), so the width ``d`` is the rank of the
factorisation and ``p`` the number of rows.

The module also holds :class:`TableModel`, the shared base of the Table 3 rows
(input validation and the layout of ``W``), which the sibling modules
``diagonal``, ``bilinear`` and ``ssl`` import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nqf_lite._checks import as_array, check_shape, integer
from nqf_lite.expansion.models.base import (
    Model,
    Structure,
    as_weights,
    generator,
    register,
)

__all__ = [
    "TableModel",
    "PSDSensing",
    "RectangularSensing",
    "MatrixCompletion",
    "QuadraticNetwork",
    "PhaseRetrieval",
    "offdiagonal",
]


def offdiagonal(C: np.ndarray) -> np.ndarray:
    """The feed-forward structure ``½ [[0, C], [Cᵀ, 0]]`` of Eq. 17.

    Parameters
    ----------
    C : ndarray, shape (n1, n2)

    Returns
    -------
    ndarray, shape (n1 + n2, n1 + n2)
    """
    n1, n2 = C.shape
    A = np.zeros((n1 + n2, n1 + n2))
    A[:n1, n1:] = 0.5 * C
    A[n1:, :n1] = 0.5 * C.T
    return A


class TableModel(Model):
    """Shared validation for the Table 3 models: the weight layout and the
    inputs.

    A subclass implements :meth:`check_input` (the parsed, validated input),
    :meth:`_native`
    and :meth:`_structure` on it, and :meth:`_sample`; :meth:`native`,
    :meth:`structure` and
    :meth:`sample` validate ``W``, ``x`` and ``rng`` once, here.
    """

    def weights(self, W: Any) -> torch.Tensor:
        """``W`` as a finite float64 tensor in the native layout (gradients
        preserved).

        Raises
        ------
        TypeError
            If ``W`` is complex, bool or not numeric.
        ValueError
            If ``W`` is not 2-D with ``p`` rows (columns convention) or ``p``
            columns (rows convention), or holds NaN or inf.
        """
        return as_weights(W, self.p, self.neurons, self.name)

    def native(self, W: Any, x: Any) -> torch.Tensor:
        """The model's output on one input ``x``, ``W`` in the native layout
        (both validated)."""
        return self._native(self.weights(W), self.check_input(x))

    def structure(self, x: Any) -> Structure:
        """The closed-form coefficients on input ``x`` (validated as
        :meth:`native` validates it)."""
        return self._structure(self.check_input(x))

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        """A random instance ``(W, x)``; ``rng`` must be a numpy
        ``Generator``."""
        return self._sample(generator(rng))

    def _native(self, W: torch.Tensor, x: Any) -> torch.Tensor:
        raise NotImplementedError

    def _structure(self, x: Any) -> Structure:
        raise NotImplementedError

    def _sample(self, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        raise NotImplementedError

    @staticmethod
    def array(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
        """``value`` as a finite float64 array of exactly ``shape`` (else a
        ``ValueError`` naming it)."""
        arr = as_array(name, value, ndim=len(shape))
        check_shape(name, arr, shape)
        return arr

    @staticmethod
    def pair(name: str, value: Any) -> tuple[Any, Any]:
        """Unpack an input that is a pair ``(a, b)``."""
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise TypeError(
                f"{name} must be a pair, got {type(value).__name__}"
            )
        return value[0], value[1]

    @staticmethod
    def index(name: str, value: Any, n: int) -> int:
        """An integer index in ``[0, n)`` (a 0-d integer array counts; bool and
        float do not)."""
        if (
            isinstance(value, np.ndarray)
            and value.ndim == 0
            and value.dtype.kind in "iu"
        ):
            value = value[()]
        i = integer(name, value, minimum=0)
        if i >= n:
            raise ValueError(f"{name} must be an index in [0, {n}), got {i}")
        return i


class PSDSensing(TableModel):
    """PSD matrix sensing / PSD factorisation, ``ŷ_a = ⟨S_a, W Wᵀ⟩`` (Table 3,
    row 1).

    ``W ∈ R^{n×r}``; neuron ``i`` is column ``w_i ∈ R^n``, so ``p = n`` and the
    width is the rank ``r``.  Because ``⟨S, M⟩ = Tr[Sᵀ M]`` and ``M`` is
    symmetric, only the symmetric part of ``S`` survives: ``⟨S, M⟩ = Tr[M
    Sym(S)]`` with ``Sym(S) = (S + Sᵀ)/2``, hence ``A_a = Sym(S_a)`` (``= S_a``
    for symmetric sensing matrices).  The model is the NQF exactly (Eq. 4 with
    ``c_0 = 0``).

    Parameters
    ----------
    n : int
        Matrix size.
    """

    title = "PSD matrix sensing / PSD factorization"
    reference = "Table 3, row 1; Ziyin et al. 2026 App. A.2 [66, 33, 72]"
    neurons = "columns"
    exact = True

    def __init__(self, n: int = 4, name: str = "psd_sensing") -> None:
        self.n = integer("n", n)
        self.name = name

    @property
    def p(self) -> int:
        return self.n

    def check_input(self, x: Any) -> np.ndarray:
        """The sensing matrix ``S``: finite, real, shape ``(n, n)``."""
        return self.array("x (the sensing matrix S)", x, (self.n, self.n))

    def _native(self, W: torch.Tensor, S: np.ndarray) -> torch.Tensor:
        return torch.sum(torch.as_tensor(S) * (W @ W.T))

    def _structure(self, S: np.ndarray) -> Structure:
        return Structure(A=0.5 * (S + S.T))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.n, 3)), rng.standard_normal(
            (self.n, self.n)
        )


class RectangularSensing(TableModel):
    """Rectangular matrix sensing / factorisation, ``ŷ_a = ⟨S_a, U Vᵀ⟩`` (Table
    3, row 2).

    ``U ∈ R^{n1×r}``, ``V ∈ R^{n2×r}``; neuron ``i`` is ``w_i = [u_i; v_i]``
    (column ``i`` of ``W = [U; V]``), ``p = n1 + n2``, width ``r``. ``⟨S, UVᵀ⟩
    = Σ_i u_iᵀ S v_i``, and for ``M = W Wᵀ`` with blocks ``M_UV = U Vᵀ``,
    ``Tr[M ½[[0, S], [Sᵀ, 0]]] = ½(Tr[M_UV Sᵀ] + Tr[M_VU S]) = ⟨S, U Vᵀ⟩``;
    hence ``A_a = ½ [[0, S_a], [S_aᵀ, 0]]``, the feed-forward form of Eq. 17
    with ``C = S_a``.  Exact.

    Parameters
    ----------
    n1, n2 : int
        Matrix shape.
    """

    title = "Rectangular matrix sensing / matrix factorization"
    reference = "Table 3, row 2; Ziyin et al. 2026 App. A.2 [33, 5, 72]"
    neurons = "columns"
    exact = True

    def __init__(
        self, n1: int = 3, n2: int = 4, name: str = "rectangular_sensing"
    ) -> None:
        self.n1, self.n2 = integer("n1", n1), integer("n2", n2)
        self.name = name

    @property
    def p(self) -> int:
        return self.n1 + self.n2

    def check_input(self, x: Any) -> np.ndarray:
        """The sensing matrix ``S``: finite, real, shape ``(n1, n2)``."""
        return self.array("x (the sensing matrix S)", x, (self.n1, self.n2))

    def _native(self, W: torch.Tensor, S: np.ndarray) -> torch.Tensor:
        U, V = W[: self.n1], W[self.n1 :]
        return torch.sum(torch.as_tensor(S) * (U @ V.T))

    def _structure(self, S: np.ndarray) -> Structure:
        return Structure(A=offdiagonal(S))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.p, 3)), rng.standard_normal(
            (self.n1, self.n2)
        )


class MatrixCompletion(TableModel):
    """Matrix completion / recommender entry, ``R̂_ij = u_iᵀ v_j`` (Table 3,
    row 3).

    ``R̂ = U Vᵀ`` with user factors ``U ∈ R^{n_rows×r}`` (row ``u_i``) and item
    factors ``V ∈ R^{n_cols×r}`` (row ``v_j``).  The neurons are the ``r``
    latent dimensions: column ``k`` of ``W = [U; V]``, ``p = n_rows + n_cols``.
    Observing entry ``(i, j)`` is rectangular sensing with ``S = e_i e_jᵀ``,
    so ``A_ij = ½ [[0, e_i e_jᵀ], [e_j e_iᵀ, 0]]``.  Exact.  The input is the
    index pair ``x = (i, j)``.
    """

    title = "Matrix completion / recommender entry"
    reference = "Table 3, row 3; Ziyin et al. 2026 App. A.2 [41, 30]"
    neurons = "columns"
    exact = True

    def __init__(
        self, n_rows: int = 4, n_cols: int = 3, name: str = "matrix_completion"
    ) -> None:
        self.n_rows, self.n_cols = (
            integer("n_rows", n_rows),
            integer("n_cols", n_cols),
        )
        self.name = name

    @property
    def p(self) -> int:
        return self.n_rows + self.n_cols

    def check_input(self, x: Any) -> tuple[int, int]:
        """The entry ``(i, j)``: integer indices in ``[0, n_rows)`` and
        ``[0, n_cols)``."""
        i, j = self.pair("x (the entry (i, j))", x)
        return self.index("i", i, self.n_rows), self.index("j", j, self.n_cols)

    def _native(self, W: torch.Tensor, x: tuple[int, int]) -> torch.Tensor:
        i, j = x
        return W[i] @ W[self.n_rows + j]

    def _structure(self, x: tuple[int, int]) -> Structure:
        i, j = x
        C = np.zeros((self.n_rows, self.n_cols))
        C[i, j] = 1.0
        return Structure(A=offdiagonal(C))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[int, int]]:
        W = rng.standard_normal((self.p, 3))
        return W, (
            int(rng.integers(self.n_rows)),
            int(rng.integers(self.n_cols)),
        )


class QuadraticNetwork(TableModel):
    """Quadratic network ``f_W(x) = Σ_r (w_rᵀ x)²`` (Table 3, row 5).

    Hidden unit ``r`` has input weights ``w_r ∈ R^k`` (column ``r`` of ``W``),
    ``p = k``.  ``(w_rᵀx)² = Tr[w_r w_rᵀ x xᵀ]``, so summing over units gives
    ``Tr[M x xᵀ]``: ``A_x = x xᵀ``, rank one and positive semi-definite.
    Exact.
    """

    title = "Quadratic network"
    reference = "Table 3, row 5; Ziyin et al. 2026 App. A.2 [61, 76, 23]"
    neurons = "columns"
    exact = True

    def __init__(self, k: int = 4, name: str = "quadratic_network") -> None:
        self.k = integer("k", k)
        self.name = name

    @property
    def p(self) -> int:
        return self.k

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real vector of shape ``(k,)``."""
        return self.array("x", x, (self.k,))

    def _native(self, W: torch.Tensor, x: np.ndarray) -> torch.Tensor:
        return torch.sum((W.T @ torch.as_tensor(x)) ** 2)

    def _structure(self, x: np.ndarray) -> Structure:
        return Structure(A=np.outer(x, x))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.k, 3)), rng.standard_normal(self.k)


class PhaseRetrieval(TableModel):
    """Phase retrieval ``ŷ_a = aᵀ W Wᵀ a = ‖Wᵀ a‖²`` (Table 3, row 6).

    The signal ``W ∈ R^{n×r}`` (rank ``r``; ``r = 1`` is classical phase
    retrieval ``(aᵀw)²``) is measured through the vector ``a``.  Neuron =
    column of ``W``, ``p = n``; ``aᵀ M a = Tr[M a aᵀ]`` gives ``A_a = a aᵀ``.
    Exact. The same quadratic form as :class:`QuadraticNetwork`, read as a
    measurement rather than a network.
    """

    title = "Phase retrieval"
    reference = "Table 3, row 6; Ziyin et al. 2026 App. A.2 [18, 47]"
    neurons = "columns"
    exact = True

    def __init__(self, n: int = 4, name: str = "phase_retrieval") -> None:
        self.n = integer("n", n)
        self.name = name

    @property
    def p(self) -> int:
        return self.n

    def check_input(self, x: Any) -> np.ndarray:
        """The measurement vector ``a``: finite, real, shape ``(n,)``."""
        return self.array("x (the measurement vector a)", x, (self.n,))

    def _native(self, W: torch.Tensor, a: np.ndarray) -> torch.Tensor:
        a = torch.as_tensor(a)
        return a @ W @ W.T @ a

    def _structure(self, a: np.ndarray) -> Structure:
        return Structure(A=np.outer(a, a))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.n, 2)), rng.standard_normal(self.n)


PSD_SENSING = register(PSDSensing())
RECTANGULAR_SENSING = register(RectangularSensing())
MATRIX_COMPLETION = register(MatrixCompletion())
QUADRATIC_NETWORK = register(QuadraticNetwork())
PHASE_RETRIEVAL = register(PhaseRetrieval())
