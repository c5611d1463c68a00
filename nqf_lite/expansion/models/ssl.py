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

from nqf_lite._checks import integer
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.sensing import TableModel

__all__ = ["LinearSSL"]


class LinearSSL(TableModel):
    """Linear SSL augmentation term ``‖W Δ‖² = Tr(Wᵀ W Δ Δᵀ)`` (Table 3, row
    16).

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

    def check_input(self, x: Any) -> np.ndarray:
        """The pair of views ``(x, χ)``, each finite of shape ``(D,)``; returns
        ``Δ = x − χ``."""
        a, b = self.pair("x (the views (x, χ))", x)
        return self.array(
            "x[0] (x, the first view)", a, (self.D,)
        ) - self.array("x[1] (χ, the second view)", b, (self.D,))

    def _native(self, W: torch.Tensor, delta: np.ndarray) -> torch.Tensor:
        return torch.sum((W @ torch.as_tensor(delta)) ** 2)

    def _structure(self, delta: np.ndarray) -> Structure:
        return Structure(A=np.outer(delta, delta))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        return rng.standard_normal((2, self.D)), (
            rng.standard_normal(self.D),
            rng.standard_normal(self.D),
        )


LINEAR_SSL = register(LinearSSL())
