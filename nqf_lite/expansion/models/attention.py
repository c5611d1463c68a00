"""Softmax attention (Props. 2-4, Eqs. 7-12; App. A.5-A.6).

- :func:`mha` with :func:`A_mha`, :func:`mha_quartic`: multi-head attention
  (Prop. 2);
- :func:`qk_head` with :func:`A_qk`: query-key-only heads (Prop. 3);
- :func:`logits_head` with :func:`A_logits`: one head whose neurons are the
  rows of ``W_Q, W_K`` (Prop. 4);
- :class:`QKAttention`, :class:`MultiHeadAttention`: the batched torch networks
  and their twins (defined in
  :mod:`nqf_lite.expansion.models.attention_networks`);
- the registered models ``"mha"``, ``"qk"`` and ``"logits"``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from nqf_lite._checks import (
    as_array,
    integer,
    outputs,
    token_matrix,
    vector,
)
from nqf_lite.expansion.models.attention_networks import (
    MultiHeadAttention,
    QKAttention,
)
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.blocks import (
    Layout,
    ModuleModel,
    SymmetricModule,
    offdiag,
    per_output,
    tensor64,
)

__all__ = [
    "token_mean",
    "token_covariance",
    "mha_layout",
    "mha",
    "A_mha",
    "mha_quartic",
    "qk_head",
    "A_qk",
    "logits_head",
    "A_logits",
    "QKAttention",
    "MultiHeadAttention",
    "MultiHead",
    "QueryKeyHeads",
    "LogitsHead",
    "MHA",
    "QK",
    "LOGITS",
]


def token_mean(X: Any) -> np.ndarray:
    """``x̄ = X 1_N / N`` for a token matrix ``X`` of shape ``(D, N)``."""
    return token_matrix("X", X).mean(axis=1)


def token_covariance(X: Any) -> np.ndarray:
    """Token covariance ``Σ_X = X Xᵀ/N − x̄ x̄ᵀ`` (Prop. 3)."""
    X = token_matrix("X", X)
    xbar = X.mean(axis=1)
    return X @ X.T / X.shape[1] - np.outer(xbar, xbar)


def _xX(x: Any, X: Any, D: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    x = vector("x", x, D)
    return x, token_matrix("X", X, x.shape[0])


def _inputs_t(inputs: Any, D: int) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
        raise TypeError(
            "the input of an attention module must be a pair (x, X)"
        )
    x, X = tensor64(inputs[0]), tensor64(inputs[1])
    if x.shape != (D,) or X.ndim != 2 or X.shape[0] != D:
        raise ValueError(
            f"attention input must be x of shape ({D},) and X of shape "
            f"({D}, N), "
            f"got {tuple(x.shape)} and {tuple(X.shape)}"
        )
    return x, X


def mha_layout(D: int, d_k: int, d_v: int, V: int | None = None) -> Layout:
    """Head ``w = vec(W_Q, W_K, W_V, v)`` (Prop. 2), or ``… , vec W_O`` for
    ``V`` outputs.

    ``W_Q, W_K ∈ R^{d_k×D}``, ``W_V ∈ R^{d_v×D}``, ``v ∈ R^{d_v}``,
    ``W_O ∈ R^{V×d_v}``; ``p = 2 d_k D + d_v D + d_v (or V d_v)``.
    """
    D, d_k, d_v, V = (
        integer("D", D),
        integer("d_k", d_k),
        integer("d_v", d_v),
        outputs(V),
    )
    readout = ("v", (d_v,)) if V is None else ("W_O", (V, d_v))
    return Layout(
        (("W_Q", (d_k, D)), ("W_K", (d_k, D)), ("W_V", (d_v, D)), readout)
    )


def mha(D: int, d_k: int, d_v: int, V: int | None = None) -> SymmetricModule:
    """Multi-head softmax attention, one head per neuron (Eq. 7).

    ``f(W, (x, X)) = Σ_i v_iᵀ W_V,i X softmax(Xᵀ W_K,iᵀ W_Q,i x / √d_k)``
    (``W_O,i`` in place of ``v_iᵀ`` for ``V`` outputs); ``x ∈ R^D`` is the
    query token, ``X ∈ R^{D×N}`` the context.  Layout: :func:`mha_layout`.
    """
    layout = mha_layout(D, d_k, d_v, V)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)
        q = b["W_Q"] @ x  # (d, d_k)
        keys = b["W_K"] @ X  # (d, d_k, N)
        att = torch.softmax(
            torch.einsum("hk,hkn->hn", q, keys) / math.sqrt(d_k), dim=-1
        )
        heads = torch.einsum("hvn,hn->hv", b["W_V"] @ X, att)  # (d, d_v)
        if V is None:
            return (b["v"] * heads).sum()
        return torch.einsum("hov,hv->o", b["W_O"], heads)

    family = ("mha", dict(D=D, d_k=d_k, layout=layout))
    return SymmetricModule(fn, layout, V, "attention", family)


def A_mha(
    x: Any, X: Any, d_k: int, d_v: int, V: int | None = None
) -> np.ndarray:
    """Structure matrix of multi-head attention (Prop. 2, Eq. 8).

    Only the ``(vec W_V, v)`` block is non-zero: ``½ (x̄ ⊗ I_{d_v})`` and its
    transpose; query and key blocks vanish at quadratic order (they enter at
    quartic order, see :func:`mha_quartic`).  For ``V`` outputs, ``A^(o)``
    couples ``W_V[a, b]`` with ``W_O[o, a]`` with weight ``x̄_b / 2``. ``x`` is
    accepted for a uniform signature and checked, but does not enter.

    Returns
    -------
    numpy.ndarray
        ``(p, p)`` or ``(V, p, p)`` with ``p`` from :func:`mha_layout`.
    """
    x, X = _xX(x, X)
    D = x.shape[0]
    layout = mha_layout(D, d_k, d_v, V)
    sl = layout.slices()
    xbar = X.mean(axis=1)
    start = sl["W_V"].start  # Q and K rows are all zero

    def C(o: int) -> np.ndarray:
        if V is None:
            return np.kron(xbar[:, None], np.eye(d_v))  # (d_v D, d_v)
        # W_V[a, b] (row a + d_v b) with W_O[o, a] (column o + V a)
        block = np.zeros((d_v * D, V * d_v))
        for a in range(d_v):
            block[a + d_v * np.arange(D), o + V * a] = xbar
        return block

    core = per_output(C, V, 0.5)
    A = np.zeros(core.shape[:-2] + (layout.p, layout.p))
    A[..., start:, start:] = core
    return A


def mha_quartic(
    W: Any, x: Any, X: Any, d_k: int, d_v: int, V: int | None = None
) -> np.ndarray:
    """The quartic term of attention, where ``W_Q`` and ``W_K`` first appear.

    ``(1/√d_k) Σ_i v_iᵀ W_V,i Σ_X W_K,iᵀ W_Q,i x`` (``W_O,i`` for ``v_iᵀ`` with
    ``V`` outputs), from ``softmax(L) = 1/N + J L + O(L²)`` with
    ``X J Xᵀ = Σ_X`` (App. A.5-A.6).

    Returns
    -------
    numpy.ndarray
        Shape ``()`` or ``(V,)``.
    """
    x, X = _xX(x, X)
    layout = mha_layout(x.shape[0], d_k, d_v, V)
    W = as_array("W", W, ndim=2)
    layout.check(W)
    b = layout.unpack(W)
    S = token_covariance(X)
    inner = np.einsum(
        "hvD,DE,hkE,hkF,F->hv", b["W_V"], S, b["W_K"], b["W_Q"], x
    ) / math.sqrt(d_k)
    if V is None:
        return np.asarray(np.sum(b["v"] * inner))
    return np.einsum("hov,hv->o", b["W_O"], inner)


def qk_head(c: Any, d_k: int) -> SymmetricModule:
    """Query-key-only heads with a fixed readout ``c ∈ R^D`` (Eq. 9).

    ``f(W, (x, X)) = Σ_i cᵀ X softmax(Xᵀ W_K,iᵀ W_Q,i x / √d_k)``; head
    ``w = [vec W_Q; vec W_K]``, ``p = 2 d_k D``.
    """
    c_np = vector("c", c)
    D, d_k = c_np.shape[0], integer("d_k", d_k)
    layout = Layout((("W_Q", (d_k, D)), ("W_K", (d_k, D))))
    c_t = tensor64(c_np)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)
        logits = torch.einsum(
            "hk,hkn->hn", b["W_Q"] @ x, b["W_K"] @ X
        ) / math.sqrt(d_k)
        return (torch.softmax(logits, dim=-1) @ (X.T @ c_t)).sum()

    family = ("qk", dict(D=D, d_k=d_k, c_t=c_t))
    return SymmetricModule(fn, layout, None, "QK-only attention", family)


def A_qk(x: Any, X: Any, c: Any, d_k: int) -> np.ndarray:
    """Structure matrix of the QK-only head (Prop. 3, Eq. 10).

    ``A = (1/(2√d_k)) [[0, x uᵀ ⊗ I_{d_k}], [u xᵀ ⊗ I_{d_k}, 0]]`` with
    ``u = Σ_X c``; shape ``(2 d_k D, 2 d_k D)``.
    """
    x, X = _xX(x, X)
    c = vector("c", c, x.shape[0])
    d_k = integer("d_k", d_k)
    u = token_covariance(X) @ c
    return offdiag(
        np.kron(np.outer(x, u), np.eye(d_k)), 1 / (2 * math.sqrt(d_k))
    )


def logits_head(c: Any, d_k: int) -> SymmetricModule:
    """Single-head attention whose neurons are the rows of ``W_Q`` and ``W_K``
    (Eq. 11).

    ``f(W, (x, X)) = cᵀ X softmax(Xᵀ W_Kᵀ W_Q x / √d_k)`` with ``W ∈
    R^{2D×d}``: column ``i`` is ``w_i = [q_i; k_i]``, the i-th rows of ``W_Q``
    and ``W_K``. In the paper's model the width is ``d = d_k``; the scale
    ``1/√d_k`` is held fixed here so that the module is defined (and symmetric)
    at every width.
    """
    c_np = vector("c", c)
    D, d_k = c_np.shape[0], integer("d_k", d_k)
    layout = Layout((("q", (D,)), ("k", (D,))))
    c_t = tensor64(c_np)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)  # q, k: (d, D), the rows of W_Q, W_K
        logits = X.T @ (b["k"].T @ (b["q"] @ x)) / math.sqrt(d_k)
        return torch.softmax(logits, dim=0) @ (X.T @ c_t)

    family = ("logits", dict(D=D, d_k=d_k, c_t=c_t))
    return SymmetricModule(fn, layout, None, "attention logits", family)


def A_logits(x: Any, X: Any, c: Any, d_k: int) -> np.ndarray:
    """Structure matrix of the single-head logits (Prop. 4, Eq. 12).

    ``A = (1/(2√d_k)) [[0, x uᵀ], [u xᵀ, 0]]``, ``u = Σ_X c``; shape
    ``(2D, 2D)``.
    """
    x, X = _xX(x, X)
    c = vector("c", c, x.shape[0])
    d_k = integer("d_k", d_k)
    return offdiag(
        np.outer(x, token_covariance(X) @ c), 1 / (2 * math.sqrt(d_k))
    )


# ----------------------------------------------------------------------------
# registered models
# ----------------------------------------------------------------------------


def _tokens(
    rng: np.random.Generator, D: int, N: int
) -> tuple[np.ndarray, np.ndarray]:
    """A query ``x`` (D,) and a context ``X`` (D, N) of standard normal
    tokens."""
    return rng.standard_normal(D), rng.standard_normal((D, N))


def _query_context(x: Any, D: int) -> tuple[np.ndarray, np.ndarray]:
    """An attention input: the pair ``(x, X)`` of a query (D,) and a context
    (D, N), N >= 1."""
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(
            f"x must be a pair (query x, context X), got {type(x).__name__}"
        )
    return _xX(x[0], x[1], D)


class MultiHead(ModuleModel):
    """Multi-head attention, one head per neuron (Prop. 2): ``A`` couples
    ``W_V`` and ``v`` only.

    Parameters
    ----------
    D, d_k, d_v : int >= 1
        Token, key and value dimensions.
    N : int >= 1
        Context length drawn by :meth:`sample` (the model accepts any).
    width : int >= 1
        Heads drawn by :meth:`sample`.
    """

    name = "mha"
    title = "multi-head attention"
    reference = "Table 3, row 12; Prop. 2, Eqs. 7-8; App. A.5"
    exact = False
    remainder = 4

    def __init__(
        self,
        D: int = 3,
        d_k: int = 2,
        d_v: int = 2,
        N: int = 4,
        width: int = 3,
    ) -> None:
        self.D, self.d_k, self.d_v = (
            integer("D", D),
            integer("d_k", d_k),
            integer("d_v", d_v),
        )
        self.N, self.width = integer("N", N), integer("width", width)
        self.module = mha(self.D, self.d_k, self.d_v)

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The pair ``(x, X)``: a finite query (D,) and context (D, N), N >=
        1."""
        return _query_context(x, self.D)

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 8 (``f0 = g = B = 0``)."""
        q, X = self.check_input(x)
        return Structure(A=A_mha(q, X, self.d_k, self.d_v))

    def sample_input(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """A query (D,) and a context of ``N`` tokens (D, N)."""
        return _tokens(rng, self.D, self.N)


class QueryKeyHeads(ModuleModel):
    """Query-key-only heads with a fixed readout ``c`` (Prop. 3).

    Every head contributes ``cᵀ x̄`` at ``W = 0``, so ``f0 = d cᵀ x̄`` depends
    on the width: :meth:`structure` states it for the width :attr:`width` that
    :meth:`sample` draws.

    Parameters
    ----------
    D, d_k : int >= 1
        Token and key dimensions; the readout is ``c = linspace(1, -1/2, D)``.
    N : int >= 1
        Context length drawn by :meth:`sample` (the model accepts any).
    width : int >= 1
        Heads drawn by :meth:`sample` (and the width of ``f0``).
    """

    name = "qk"
    title = "query-key-only attention"
    reference = "Table 3, row 13; Prop. 3, Eqs. 9-10"
    exact = False
    remainder = 4

    def __init__(
        self, D: int = 3, d_k: int = 2, N: int = 4, width: int = 3
    ) -> None:
        self.D, self.d_k = integer("D", D), integer("d_k", d_k)
        self.N, self.width = integer("N", N), integer("width", width)
        self.c = np.linspace(1.0, -0.5, self.D)
        self.module = qk_head(self.c, self.d_k)

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The pair ``(x, X)``: a finite query (D,) and context (D, N), N >=
        1."""
        return _query_context(x, self.D)

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 10 and ``f0 = width · cᵀ x̄``."""
        q, X = self.check_input(x)
        return Structure(
            A=A_qk(q, X, self.c, self.d_k),
            f0=float(self.width * self.c @ token_mean(X)),
        )

    def sample_input(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """A query (D,) and a context of ``N`` tokens (D, N)."""
        return _tokens(rng, self.D, self.N)


class LogitsHead(ModuleModel):
    """One attention head whose neurons are the rows ``[q_i; k_i]`` of
    ``W_Q, W_K`` (Prop. 4).

    Parameters
    ----------
    D, d_k : int >= 1
        Token and key dimensions (:meth:`sample` draws ``d_k`` neurons, the
        paper's width).
    N : int >= 1
        Context length drawn by :meth:`sample` (the model accepts any).
    """

    name = "logits"
    title = "attention logits (rows of W_Q, W_K)"
    reference = "Prop. 4, Eqs. 11-12"
    exact = False
    remainder = 4

    def __init__(self, D: int = 3, d_k: int = 2, N: int = 4) -> None:
        self.D, self.d_k, self.N = (
            integer("D", D),
            integer("d_k", d_k),
            integer("N", N),
        )
        self.width = self.d_k
        self.c = np.linspace(1.0, -0.5, self.D)
        self.module = logits_head(self.c, self.d_k)

    def check_input(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """The pair ``(x, X)``: a finite query (D,) and context (D, N), N >=
        1."""
        return _query_context(x, self.D)

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 12 and ``f0 = cᵀ x̄`` (one softmax, whatever the
        width)."""
        q, X = self.check_input(x)
        return Structure(
            A=A_logits(q, X, self.c, self.d_k),
            f0=float(self.c @ token_mean(X)),
        )

    def sample_input(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """A query (D,) and a context of ``N`` tokens (D, N)."""
        return _tokens(rng, self.D, self.N)


MHA = register(MultiHead())
QK = register(QueryKeyHeads())
LOGITS = register(LogitsHead())
