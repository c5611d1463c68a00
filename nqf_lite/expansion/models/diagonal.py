"""Diagonal linear networks (Table 3, rows 7-8).

A diagonal linear network predicts ``βᵀx`` with the regression vector ``β``
factorised entry-wise.  Both parametrisations of the paper's Table 3 (App. A.2)
are exact neural quadratic forms with a *diagonal* coupling: every coordinate
``k`` of the input talks only to the parameters of coordinate ``k``, which is
why, for inputs with disjoint supports, the structure matrices commute
(Assumption 1) and the coordinates are learned one by one (Theorem 6).

A neuron is one full copy of the factor(s): ``u ∈ R^k`` (square form) or
``[u; v] ∈ R^{2k}`` (two-factor form); the paper's model has width ``d = 1``,
and ``d`` copies add up (``β = Σ_i u_i ⊙ u_i / 4`` resp. ``Σ_i u_i ⊙ v_i``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nqf_lite._checks import integer
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.sensing import TableModel, offdiagonal

__all__ = ["DiagonalSquare", "DiagonalTwoFactor"]


class DiagonalSquare(TableModel):
    """Diagonal linear network, square parametrisation,
    ``f_x(u) = Σ_k x_k u_k²/4`` (Table 3, row 7).

    ``β = u ⊙ u / 4``. With ``W = (u_1, …, u_d) ∈ R^{k×d}`` (neurons as
    columns, ``p = k``),
    ``Σ_i Σ_k x_k u_{ik}²/4 = Σ_k (x_k/4) M_kk = Tr[M Diag(x)/4]``:
    ``A_x = ¼ Diag(x)``. Exact.
    """

    title = "Diagonal linear network, square parametrization"
    reference = "Table 3, row 7; Ziyin et al. 2026 App. A.2 [12, 59]"
    neurons = "columns"
    exact = True

    def __init__(self, k: int = 4, name: str = "diagonal_square") -> None:
        self.k = integer("k", k, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return self.k

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real vector of shape ``(k,)``."""
        return self.array("x", x, (self.k,))

    def _native(self, W: torch.Tensor, x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(x) @ (W**2).sum(dim=1) / 4

    def _structure(self, x: np.ndarray) -> Structure:
        return Structure(A=np.diag(x) / 4)

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.k, 2)), rng.standard_normal(self.k)


class DiagonalTwoFactor(TableModel):
    """Diagonal linear network, two-factor signed form,
    ``f_x(u, v) = uᵀ Diag(x) v`` (Table 3, row 8).

    ``β = u ⊙ v`` can take either sign.  Neuron ``w = [u; v] ∈ R^{2k}``
    (``p = 2k``, ``W = [U; V]`` with neurons as columns);
    ``Σ_i u_iᵀ Diag(x) v_i = Tr[M_UV Diag(x)]`` with ``M_UV = U Vᵀ`` the
    off-diagonal block of ``M``, hence the feed-forward form (Eq. 17) with
    ``C = Diag(x)``: ``A_x = ½ [[0, Diag(x)], [Diag(x), 0]]``.  Exact.  Its
    eigenvectors ``(e_k ± e_{k+K})/√2`` carry the eigenvalues ``±x_k/2``: the
    change of variables ``u ± v`` turns it into two square-form networks of
    opposite sign (the ``u² − v²`` form).
    """

    title = "Diagonal linear network, two-factor signed form"
    reference = "Table 3, row 8; Ziyin et al. 2026 App. A.2 [27, 59]"
    neurons = "columns"
    exact = True

    def __init__(self, k: int = 3, name: str = "diagonal_two_factor") -> None:
        self.k = integer("k", k, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return 2 * self.k

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real vector of shape ``(k,)``."""
        return self.array("x", x, (self.k,))

    def _native(self, W: torch.Tensor, x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(x) @ (W[: self.k] * W[self.k :]).sum(dim=1)

    def _structure(self, x: np.ndarray) -> Structure:
        return Structure(A=offdiagonal(np.diag(x)))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((self.p, 2)), rng.standard_normal(self.k)


DIAGONAL_SQUARE = register(DiagonalSquare())
DIAGONAL_TWO_FACTOR = register(DiagonalTwoFactor())
