"""The tied linear-attention head of in-context regression: an exact NQF beyond
the paper's Table 3.

In in-context linear regression a prompt holds ``N`` labelled examples ``(x_i,
y_i)`` and a query ``x_q``; a single softmax-free (linear) self-attention layer
predicts the query's label from the prompt.  With the value channel reading the
labels and the key-query matrix ``Γ``, the prediction is ``ŷ = (1/N) Σ_i y_i
x_iᵀ Γ x_q`` (Zhang, Frei & Bartlett 2024, Sec. 3; one gradient-descent step
from zero on the prompt's least squares is ``Γ = η I``, von Oswald et al.
2023).  Tying the query and key maps to one ``W ∈ R^{d×D}`` gives ``Γ = Wᵀ W``,
and the head is a neural quadratic form *exactly* (Eq. 4 of the paper), with
the rows of ``W`` as its neurons, as for the tied softmax head of Table 3, row
14 (:class:`~nqf_lite.expansion.models.bilinear.TiedQueryKey`), whose softmax
this head drops.

References
----------
J. von Oswald, E. Niklasson, E. Randazzo, J. Sacramento, A. Mordvintsev, A.
Zhmoginov and M. Vladymyrov, "Transformers learn in-context by gradient
descent", Proceedings of the 40th International Conference on Machine Learning
(ICML), PMLR 202, 2023 (arXiv:2212.07677).

R. Zhang, S. Frei and P. L. Bartlett, "Trained transformers learn linear models
in-context", Journal of Machine Learning Research 25(49):1-55, 2024.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nqf_lite._checks import as_array, integer
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.sensing import TableModel

__all__ = ["LinearAttentionHead", "in_context_moment"]


def in_context_moment(X: Any, y: Any) -> np.ndarray:
    """``u = X y / N = (1/N) Σ_i y_i x_i``: the label-weighted mean of the
    prompt's inputs.

    Parameters
    ----------
    X : array_like, shape (D, N)
        The prompt's inputs as columns, ``N >= 1``.
    y : array_like, shape (N,)
        Their labels.

    Returns
    -------
    ndarray, shape (D,)
    """
    X = as_array("X (the prompt's inputs)", X, ndim=2)
    if X.shape[1] < 1:
        raise ValueError(
            "X (the prompt's inputs) must hold N >= 1 examples as columns, "
            f"got shape {X.shape}"
        )
    y = as_array("y (the prompt's labels)", y, ndim=1)
    if y.shape != (X.shape[1],):
        raise ValueError(
            f"y (the prompt's labels) must have shape ({X.shape[1]},), one "
            f"per column of X, got {y.shape}"
        )
    return X @ y / X.shape[1]


class LinearAttentionHead(TableModel):
    """Tied linear attention for in-context regression,
    ``ŷ = (1/N) Σ_i y_i (W x_i)ᵀ (W x_q)``.

    One softmax-free attention head with query and key maps tied to
    ``W ∈ R^{d×D}`` and the value reading each example's label: the query
    ``x_q`` attends to example ``i`` with the weight ``(W x_i)ᵀ(W x_q)/N`` and
    collects its label ``y_i``. The neurons are the *rows* ``w_r`` of
    ``W`` (``neurons = "rows"``, ``M = Wᵀ W``, ``p = D``, width ``d``):

    ``ŷ = Σ_r (w_rᵀ x_q)(w_rᵀ u) = uᵀ M x_q = Tr[M A]``,
    ``A = (x_q uᵀ + u x_qᵀ)/2``, ``u = X y/N`` (:func:`in_context_moment`).

    Exact: ``f0 = 0``, ``g = B = 0``, and ``A`` has rank at most two.  Its twin
    on a set of prompts is the NQF of the key-query matrix ``Γ = M`` of Zhang,
    Frei & Bartlett (2024), and ``M = η I`` is von Oswald et al.'s (2023) one
    gradient step (full references in the module docstring).  Input: the triple
    ``x = (x_q, X, y)`` of a query ``(D,)``, the prompt's inputs ``(D, N)`` and
    their labels ``(N,)``.

    Parameters
    ----------
    D : int >= 1
        Input dimension (parameters per neuron).
    N : int >= 1
        Prompt length drawn by :meth:`sample` (the model accepts any
        ``N >= 1``).
    width : int >= 1
        Rows of ``W`` drawn by :meth:`sample`.
    """

    title = "Linear attention head (in-context regression)"
    reference = (
        "von Oswald et al. 2023; Zhang, Frei & Bartlett 2024, Sec. "
        "3 (beyond Table 3; cf. row 14)"
    )
    neurons = "rows"
    exact = True

    def __init__(
        self,
        D: int = 3,
        N: int = 5,
        width: int = 2,
        name: str = "linear_attention",
    ) -> None:
        self.D = integer("D", D, minimum=1)
        self.N = integer("N", N, minimum=1)
        self.width = integer("width", width, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return self.D

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The triple ``(x_q, X, y)``: a finite query (D,), prompt inputs (D,
        N), N >= 1, and labels (N,)."""
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise TypeError(
                "x must be a triple (query x_q, prompt inputs X, prompt "
                f"labels y), got {type(x).__name__}"
            )
        q = self.array("x_q (the query)", x[0], (self.D,))
        X = as_array("X (the prompt's inputs)", x[1], ndim=2)
        if X.shape[0] != self.D:
            raise ValueError(
                f"X (the prompt's inputs) must have shape ({self.D}, N), "
                f"got {X.shape}"
            )
        y = as_array("x[2] (y, the prompt's labels)", x[2], ndim=1)
        in_context_moment(X, y)  # N >= 1 and one label per example
        return q, X, y

    def _native(
        self, W: torch.Tensor, x: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> torch.Tensor:
        q, X, y = (torch.as_tensor(v) for v in x)
        scores = (
            (W @ X).T @ (W @ q) / X.shape[1]
        )  # attention of the query on each example, no softmax
        return scores @ y

    def _structure(
        self, x: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> Structure:
        q, X, y = x
        u = in_context_moment(X, y)
        return Structure(A=0.5 * (np.outer(q, u) + np.outer(u, q)))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        W = rng.standard_normal((self.width, self.D))
        return W, (
            rng.standard_normal(self.D),
            rng.standard_normal((self.D, self.N)),
            rng.standard_normal(self.N),
        )


LINEAR_ATTENTION = register(LinearAttentionHead())
