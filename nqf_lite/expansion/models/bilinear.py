"""Bilinear scores: word-context embeddings, bilinear sequence regression, tied
query-key attention.

Three rows of the paper's Table 3 (App. A.2) whose output is a bilinear form in
two
embeddings of the input:

- word-context score ``u_wᵀ v_c`` (row 4) and bilinear sequence regression
  ``x_sᵀ U Vᵀ x_t`` (row 15): exact NQFs with the feed-forward structure
  ``A = ½ [[0, C], [Cᵀ, 0]]`` of Eq. 17 (neurons = columns of ``[U; V]``);
- tied query-key attention (row 14): a softmax head whose query and key share
  one matrix ``W`` (``W_Q = W_K = W``). Its neurons are the *rows* of ``W``
  (``M = Wᵀ W``, as Table 3's caption says), and the quadratic form
  ``cᵀx̄ + uᵀ Wᵀ W x/√d_k`` is its leading order in the attention logits, not
  an identity (``exact = False``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from nqf_lite._checks import as_array, integer
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.sensing import TableModel, offdiagonal

__all__ = [
    "WordContext",
    "BilinearSequence",
    "TiedQueryKey",
    "context_covariance",
]


class WordContext(TableModel):
    """Word-context embedding score ``s_wc = u_wᵀ v_c`` (Table 3, row 4).

    Word vectors ``U ∈ R^{n_words×r}`` (row ``u_w``) and context vectors
    ``V ∈ R^{n_contexts×r}`` (row ``v_c``), as in word2vec/GloVe.  The neurons
    are the ``r`` embedding dimensions: column ``k`` of ``W = [U; V]``,
    ``p = n_words + n_contexts``.  ``u_wᵀ v_c = (U Vᵀ)_wc = Tr[M A_wc]`` with
    ``A_wc = ½ [[0, e_w e_cᵀ], [e_c e_wᵀ, 0]]``.  Exact.  Input: ``x = (w,
    c)``.
    """

    title = "Word–context embedding score"
    reference = "Table 3, row 4; Ziyin et al. 2026 App. A.2 [55, 31]"
    neurons = "columns"
    exact = True

    def __init__(
        self, n_words: int = 3, n_contexts: int = 4, name: str = "word_context"
    ) -> None:
        self.n_words = integer("n_words", n_words, minimum=1)
        self.n_contexts = integer("n_contexts", n_contexts, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return self.n_words + self.n_contexts

    def check_input(self, x: Any) -> tuple[int, int]:
        """The pair ``(w, c)`` of a word index in ``[0, n_words)`` and a
        context index in ``[0, n_contexts)``."""
        w, c = self.pair("x (the pair (word, context))", x)
        return self.index("word", w, self.n_words), self.index(
            "context", c, self.n_contexts
        )

    def _native(self, W: torch.Tensor, x: tuple[int, int]) -> torch.Tensor:
        w, c = x
        return W[w] @ W[self.n_words + c]

    def _structure(self, x: tuple[int, int]) -> Structure:
        w, c = x
        C = np.zeros((self.n_words, self.n_contexts))
        C[w, c] = 1.0
        return Structure(A=offdiagonal(C))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[int, int]]:
        W = rng.standard_normal((self.p, 3))
        return W, (
            int(rng.integers(self.n_words)),
            int(rng.integers(self.n_contexts)),
        )


class BilinearSequence(TableModel):
    """Bilinear sequence regression ``x_sᵀ U Vᵀ x_t``, i.e. ``x_sᵀ B x_t`` with
    ``B = U Vᵀ`` (Table 3, row 15).

    Two tokens ``x_s, x_t ∈ R^D`` of a sequence interact through a low-rank
    bilinear form. Neuron ``k`` is ``[u_k; v_k]`` (column ``k`` of
    ``W = [U; V]``, ``p = 2D``, width = rank).
    ``x_sᵀ U Vᵀ x_t = ⟨x_s x_tᵀ, U Vᵀ⟩`` is rectangular sensing with
    ``S = x_s x_tᵀ``, so ``A_{s,t} = ½ [[0, x_s x_tᵀ], [x_t x_sᵀ, 0]]``. Exact.
    Input: the pair ``x = (x_s, x_t)``.
    """

    title = "Bilinear sequence regression"
    reference = "Table 3, row 15; Ziyin et al. 2026 App. A.2 [65, 33, 26]"
    neurons = "columns"
    exact = True

    def __init__(self, D: int = 3, name: str = "bilinear_sequence") -> None:
        self.D = integer("D", D, minimum=1)
        self.name = name

    @property
    def p(self) -> int:
        return 2 * self.D

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The pair of tokens ``(x_s, x_t)``, each finite of shape ``(D,)``."""
        xs, xt = self.pair("x (the tokens (x_s, x_t))", x)
        return self.array("x_s", xs, (self.D,)), self.array(
            "x_t", xt, (self.D,)
        )

    def _native(
        self, W: torch.Tensor, x: tuple[np.ndarray, np.ndarray]
    ) -> torch.Tensor:
        xs, xt = (torch.as_tensor(v) for v in x)
        return xs @ W[: self.D] @ W[self.D :].T @ xt

    def _structure(self, x: tuple[np.ndarray, np.ndarray]) -> Structure:
        xs, xt = x
        return Structure(A=offdiagonal(np.outer(xs, xt)))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        W = rng.standard_normal((self.p, 3))
        return W, (rng.standard_normal(self.D), rng.standard_normal(self.D))


def context_covariance(X: Any) -> np.ndarray:
    """Token covariance ``Σ_X = X Xᵀ/N − x̄ x̄ᵀ`` of a context ``X ∈ R^{D×N}``
    (Prop. 3).

    It equals ``X J Xᵀ`` with ``J = Diag(1)/N − 1 1ᵀ/N²`` the Jacobian of the
    softmax at zero logits.
    """
    X = as_array("X", X, ndim=2)
    if X.shape[1] == 0:
        raise ValueError(
            "X must hold at least one token (shape (D, N) with N >= 1), "
            f"got {X.shape}"
        )
    xbar = X.mean(axis=1)
    return X @ X.T / X.shape[1] - np.outer(xbar, xbar)


class TiedQueryKey(TableModel):
    """Tied query-key attention, ``cᵀ X softmax(Xᵀ Wᵀ W x/√d_k)`` (Table 3, row
    14).

    One head with ``W_Q = W_K = W ∈ R^{d_k×D}``, a fixed readout ``c ∈ R^D``, a
    query token ``x ∈ R^D`` and a context ``X ∈ R^{D×N}``. The logits
    ``Xᵀ Wᵀ W x = Σ_i Xᵀ w_i w_iᵀ x`` are a sum over the *rows*
    ``w_i`` of ``W``: these are the neurons (``neurons = "rows"``,
    ``M = Wᵀ W``, ``p = D``, width ``d = d_k``). The scale ``1/√d_k`` is held
    fixed (a constructor argument), so that the module is defined, and
    symmetric, at every width.

    Leading order.  At zero logits ``softmax(L) = 1/N + J L + O(L²)`` with
    ``X J Xᵀ = Σ_X`` (:func:`context_covariance`), so

    ``f = cᵀx̄ + cᵀ Σ_X Wᵀ W x/√d_k + O(‖W‖⁴) = f0 + Tr[M A]``,

    ``A = (x uᵀ + u xᵀ)/(2√d_k)``, ``u = Σ_X c``, ``f0 = cᵀ x̄`` (the
    symmetrised ``uᵀ M x``, Table 3's ``A^tied``).  ``f`` depends on ``W`` only
    through ``M``, so the remainder is second order in ``M``: ``O(‖W‖⁴)``.  The
    table's "NQF notation" ``uᵀ Wᵀ W x/√d_k`` is this leading order, hence
    ``exact = False``.  Input: the pair ``x = (x, X)``.

    Parameters
    ----------
    D : int
        Token dimension.
    d_k : int
        Key dimension (sets the scale ``1/√d_k``; the sampled width).
    c : array_like, shape (D,), optional
        Readout; default ``linspace(1, -1, D)``.
    N : int
        Context length of :meth:`sample`.
    """

    title = "Tied query–key attention"
    reference = (
        "Table 3, row 14; Ziyin et al. 2026 App. A.2, Props. 3-4 [58, 13]"
    )
    neurons = "rows"
    exact = False
    # the head is even in W (logits quadratic in W): the next term is O(ε⁴)
    remainder = 4

    def __init__(
        self,
        D: int = 3,
        d_k: int = 2,
        c: Any = None,
        N: int = 4,
        name: str = "tied_query_key",
    ) -> None:
        self.D = integer("D", D, minimum=1)
        self.d_k = integer("d_k", d_k, minimum=1)
        self.N = integer("N", N, minimum=1)
        self._default_c = c is None
        self.c = (
            np.linspace(1.0, -1.0, self.D)
            if c is None
            else self.array("c", c, (self.D,))
        )
        self.name = name

    @property
    def sizes(self) -> dict[str, Any]:
        """``D, d_k, c, N``; ``c`` is ``None`` for the default readout (which
        follows ``D`` when resized)."""
        return {**super().sizes, "c": None if self._default_c else self.c}

    @property
    def p(self) -> int:
        return self.D

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The pair ``(x, X)``: a finite query (D,) and context (D, N), N >=
        1."""
        q, X = self.pair("x (the pair (query x, context X))", x)
        q = self.array("x (the query token)", q, (self.D,))
        X = as_array("X (the context)", X, ndim=2)
        if X.shape[0] != self.D or X.shape[1] < 1:
            raise ValueError(
                f"X (the context) must have shape ({self.D}, N) with N >= "
                f"1, got {X.shape}"
            )
        return q, X

    def _native(
        self, W: torch.Tensor, x: tuple[np.ndarray, np.ndarray]
    ) -> torch.Tensor:
        q, X = (torch.as_tensor(v) for v in x)
        logits = X.T @ (W.T @ (W @ q)) / math.sqrt(self.d_k)
        return torch.softmax(logits, dim=0) @ (X.T @ torch.as_tensor(self.c))

    def _structure(self, x: tuple[np.ndarray, np.ndarray]) -> Structure:
        q, X = x
        u = context_covariance(X) @ self.c
        A = (np.outer(q, u) + np.outer(u, q)) / (2 * math.sqrt(self.d_k))
        return Structure(A=A, f0=float(self.c @ X.mean(axis=1)))

    def _sample(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        W = rng.standard_normal((self.d_k, self.D))
        return W, (
            rng.standard_normal(self.D),
            rng.standard_normal((self.D, self.N)),
        )


WORD_CONTEXT = register(WordContext())
BILINEAR_SEQUENCE = register(BilinearSequence())
TIED_QUERY_KEY = register(TiedQueryKey())
