"""Linear self-supervised learning with augmentations (Table 3, row 16).

A linear encoder ``W ∈ R^{d×D}`` maps two augmented views ``x`` and ``χ`` of
one input; the alignment term of the SSL loss is ``‖W x − W χ‖² = ‖W Δ‖²``
with ``Δ = x − χ``.  The encoder's output units (the *rows* ``w_i`` of ``W``)
are exchangeable, so they are the neurons: ``M = Wᵀ W`` (Table 3's caption).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._checks import integer
from .base import Structure, register
from .sensing import TableModel

__all__ = ["LinearSSL"]


class LinearSSL(TableModel):
    """Linear SSL augmentation term ``‖W Δ‖² = Tr(Wᵀ W Δ Δᵀ)`` (Table 3, row 16).

    ``‖WΔ‖² = Σ_i (w_iᵀ Δ)² = Σ_i Tr[w_i w_iᵀ Δ Δᵀ] = Tr[M Δ Δᵀ]`` with
    ``M = Wᵀ W = Σ_i w_i w_iᵀ`` over the rows ``w_i ∈ R^D`` (``p = D``, width =
    embedding dimension): ``A_Δ = Δ Δᵀ``, ``Δ = x − χ``.  Exact.  Input: the
    pair of views ``x = (x, χ)``.
    """

    title = "Linear SSL augmentation"
    reference = "Table 3, row 16; Ziyin et al. 2026 App. A.2 [68, 9, 78]"
    neurons = "rows"
    exact = True

    def __init__(self, D: int = 4, name: str = "linear_ssl") -> None:
        self.D = integer("D", D, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return self.D

    def _delta(self, x: Any) -> np.ndarray:
        a, b = self.pair("x (the views (x, χ))", x)
        return self.array("x (first view)", a, (self.D,)) - self.array("χ (second view)", b, (self.D,))

    def native(self, W: Any, x: Any) -> torch.Tensor:
        W = self.weights(W)
        return torch.sum((W @ torch.as_tensor(self._delta(x))) ** 2)

    def structure(self, x: Any) -> Structure:
        delta = self._delta(x)
        return Structure(A=np.outer(delta, delta))

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        return rng.standard_normal((2, self.D)), (rng.standard_normal(self.D), rng.standard_normal(self.D))


LINEAR_SSL = register(LinearSSL())
