"""Deep NQFs: layers of neural quadratic forms stacked on each other (paper
App. B.4).

Definition 2 (Eq. 219).  An ``L``-layer NQF maps an input ``x = h^(0)`` through
hidden representations ``h^(l) in R^{D_l}``,

.. math::

    h^{(l)}_k = C^{(l)}_k + g^{(l)\\top}_k\\mu^{(l)} +
    \\mu^{(l)\\top}B^{(l)}_k\\mu^{(l)}
              + \\mathrm{Tr}[M^{(l)}A^{(l)}_k],\\qquad k = 1, \\dots, D_l,

where the structure ``{C, g, B, A}^(l)`` depends on the previous output
``h^(l-1)(x)`` only, and ``M^(l) = W^(l) W^(l)T`` (p_l x p_l), ``mu^(l) = W^(l)
1`` are the order parameters of layer ``l``, whose ``d_l`` neurons are the
columns of ``W^(l)`` (p_l x d_l).  The output is ``f(x) = h^(L)(x)``.

Closed dynamics by autograd on the order parameters.  Because the forward pass
touches ``W^(l)`` only through ``(M^(l), mu^(l))``, the chain rule gives, for
any loss ``L`` and ``G^(l) = dL/dM^(l)`` (``M`` treated as an unconstrained
matrix),

.. math::

    \\nabla_{W^{(l)}}L
        = \\frac{\\partial L}{\\partial\\mu^{(l)}}\\mathbf 1^\\top
        + \\big(G^{(l)} + G^{(l)\\top}\\big)W^{(l)}
        = v^{(l)}\\mathbf 1^\\top + H^{(l)}W^{(l)}
        \\quad\\text{(Eq. 230)},

because ``d mu / d W = 1^T`` and ``dM = dW W^T + W dW^T``.  For the structure
of Eq. 219 (``A``, ``B`` symmetric) ``dL/dmu = sum_x sum_k (dL/dh_k)(g_k + 2
B_k mu)`` is Eq. 224 and ``G + G^T = sum_x sum_k 2 (dL/dh_k) A_k`` is Eq. 225.
So ``v^(l)`` and ``H^(l)`` are the gradients of the loss with respect to
``mu^(l)`` and (the symmetrised) ``M^(l)``, both functions of the order
parameters alone, and multiplying out ``W' = W - lr (v 1^T + H W)`` gives Eqs.
222-223 (:meth:`DeepNQF.closed_step`), exactly as in the one-layer Theorem 2.

Theorem 14: two deep NQFs with equal per-layer ``(M^(l), mu^(l))`` at ``t = 0``
(whatever their widths ``d_l``) stay equal and predict the same at every step.
Theorem 15: with ``V_l`` an orthonormal basis of the structure span of layer
``l`` (Eq. 236), width ``d'_l = k_l + 1``, ``A~^(l) = (d'_l/d_l) A^(l)`` and
layer learning rate ``lr~_l = (d_l/d'_l) lr_l`` train identically
(:func:`compress_deep`).

Loss: as in :mod:`nqf_lite.expansion.form`, ``L = (1/|b|) sum_{n in b} sum_k
w_nk (f_nk - y_nk)^2`` (the mean over the batch, Eq. 26) with per-output
weights ``w_nk >= 0`` (all ones by default; a 0/1 mask of the observed entries
gives matrix completion, a loss over the observed entries only).  Everything is
torch float64.  Leading batch axes ``...`` on the weights (and the matching
``x``, ``y``) train independent members at once: the loss is summed over them,
so each member gets its own gradient.

Depth.  A bias-free MLP ``W_L act(... act(W_1 x))`` is a stack of NQFs (App.
B.4): each *pair* of weight matrices is a two-layer block, quadratic in its
weights to leading order (:class:`MLPLayer`, Prop. 1), which is why a stack of
blocks covers even depths only.  A single weight matrix is *linear* in its
weights, which is also a layer of Definition 2, with ``g != 0`` and ``A = 0``
(:class:`LinearLayer`); with it
:meth:`DeepNQF.mlp` builds
the stack of an MLP of any depth ``L >= 1`` (``L // 2`` blocks and, for odd
``L``, a last linear layer), and :meth:`DeepNQF.mlp_weights` pairs the MLP's
matrices accordingly.  A stack of layers that are linear in their input (a deep
linear network) computes ``f(x) = T x`` with the end-to-end product ``T`` of
:meth:`DeepNQF.product`.

Validation.  Order parameters passed in (``Ms``, ``mus``) must be finite,
symmetric and positive semi-definite (and, with widths, realisable: ``M - mu
mu^T/d`` PSD of rank ``<= d - 1``); ``M`` is symmetrised, so the result does
not depend on which triangle of a (slightly) asymmetric ``M`` was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, NamedTuple

import numpy as np
import torch

from nqf_lite._checks import (
    SYM_RTOL,
    as_array,
    fraction,
    generator,
    integer,
    positive,
    width,
)
from nqf_lite.expansion.form import (
    REALIZABLE_RTOL,
    check_realizable,
    realize_moments,
)

__all__ = [
    "AttentionLayer",
    "DeepNQF",
    "FunctionLayer",
    "Layer",
    "LayerStructure",
    "LinearLayer",
    "MLPLayer",
    "ScaledLayer",
    "compress_deep",
    "deep_moments",
    "realize_deep",
    "structure_subspace",
]

DTYPE = torch.float64


class LayerStructure(NamedTuple):
    """The structure of one layer on ``n`` inputs (Eq. 219); ``g``, ``B`` are
    ``None`` when zero.

    Shapes: ``C`` (..., n, D), ``g`` (..., n, D, p), ``B`` and ``A`` (..., n,
    D, p, p).
    """

    C: torch.Tensor
    g: torch.Tensor | None
    B: torch.Tensor | None
    A: torch.Tensor


def _real_dtype(name: str, value: torch.Tensor) -> None:
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(
            f"{name} must be a real numeric array or tensor, got dtype "
            f"{value.dtype}"
        )


def _tensor(name: str, value: object, ndim_min: int = 0) -> torch.Tensor:
    """``value`` as a finite float64 tensor with at least ``ndim_min`` axes
    (complex, bool, str refused)."""
    if isinstance(value, torch.Tensor):
        _real_dtype(name, value)
        t = value.to(DTYPE)
        if not torch.all(torch.isfinite(t)):
            raise ValueError(f"{name} contains NaN or inf")
    else:
        t = torch.as_tensor(as_array(name, value))
    if t.ndim < ndim_min:
        raise ValueError(
            f"{name} must have at least {ndim_min} axes, got shape "
            f"{tuple(t.shape)}"
        )
    return t


def _param(name: str, value: object, ndim_min: int) -> torch.Tensor:
    """A tensor that is being differentiated passes as it is (no copy);
    anything else is validated by ``_tensor``."""
    if isinstance(value, torch.Tensor) and value.requires_grad:
        _real_dtype(name, value)
        if value.ndim < ndim_min:
            raise ValueError(
                f"{name} must have at least {ndim_min} axes, got shape "
                f"{tuple(value.shape)}"
            )
        return value
    return _tensor(name, value, ndim_min)


def _real(name: str, value: object) -> float:
    """A finite real number (bool, complex, str and arrays refused)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{name} must be a real number, got {type(value).__name__} "
            f"{value!r}"
        )
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


class Layer:
    """One NQF layer of Definition 2: ``D_in -> D_out`` with neurons in
    ``R^p``.

    Subclasses implement :meth:`structure`; :meth:`forward` evaluates Eq. 219
    from it and may be overridden by an equivalent faster formula.

    Attributes
    ----------
    p : int
        Dimension of one neuron.
    n_in, n_out : int
        ``D_{l-1}`` and ``D_l``.
    """

    p: int
    n_in: int
    n_out: int

    def structure(self, h: torch.Tensor) -> LayerStructure:
        """Structure ``(C, g, B, A)`` of Eq. 219 at previous outputs ``h``
        (..., n, n_in)."""
        raise NotImplementedError

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        """``T`` (..., n_out, n_in) with ``h^(l) = T h^(l-1)`` when the layer
        is linear in its input.

        Raises ``TypeError`` for a layer that is not (an activation on its
        input, a general structure function).
        """
        raise TypeError(
            f"{type(self).__name__} is not linear in its input: it has no "
            "end-to-end matrix"
        )

    def forward(
        self, h: torch.Tensor, M: torch.Tensor, mu: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 219: ``h^(l)`` (..., n, n_out) from ``h^(l-1)`` (..., n, n_in),
        ``M`` (..., p, p), ``mu`` (..., p)."""
        C, g, B, A = self.structure(h)
        out = C + torch.einsum("...nkij,...ij->...nk", A, M)
        if g is not None:
            out = out + torch.einsum("...nki,...i->...nk", g, mu)
        if B is not None:
            out = out + torch.einsum("...nkij,...i,...j->...nk", B, mu, mu)
        return out


class FunctionLayer(Layer):
    """A layer given by a structure function (Definition 2 in full generality).

    Parameters
    ----------
    structure_fn : callable
        ``structure_fn(h) -> LayerStructure`` (or a 4-tuple ``(C, g, B, A)``)
        for ``h`` of shape (..., n, n_in); ``g``, ``B`` may be ``None``.
    p, n_in, n_out : int
        Neuron dimension and the layer's input and output dimensions.
    """

    def __init__(
        self,
        structure_fn: Callable[[torch.Tensor], tuple],
        p: int,
        n_in: int,
        n_out: int,
    ) -> None:
        if not callable(structure_fn):
            raise TypeError(
                "structure_fn must be callable, got "
                f"{type(structure_fn).__name__}"
            )
        self._fn = structure_fn
        self.p, self.n_in, self.n_out = (
            integer("p", p),
            integer("n_in", n_in),
            integer("n_out", n_out),
        )

    def structure(self, h: torch.Tensor) -> LayerStructure:
        out = self._fn(h)
        if not isinstance(out, tuple) or len(out) != 4:
            raise TypeError(
                "structure_fn must return a tuple (C, g, B, A), got "
                f"{type(out).__name__}"
            )
        C, g, B, A = out
        lead = tuple(h.shape[:-1])
        checks = (
            ("C", C, lead + (self.n_out,)),
            ("g", g, lead + (self.n_out, self.p)),
            ("B", B, lead + (self.n_out, self.p, self.p)),
            ("A", A, lead + (self.n_out, self.p, self.p)),
        )
        for name, val, shape in checks:
            if val is None and name in ("C", "A"):
                raise TypeError(
                    f"structure_fn must return a tensor {name}, got None"
                )
            if val is not None and not isinstance(val, torch.Tensor):
                raise TypeError(
                    f"structure_fn must return torch tensors, got {name} of "
                    f"type {type(val).__name__}"
                )
            if val is not None and tuple(val.shape) != shape:
                raise ValueError(
                    f"structure_fn returned {name} of shape "
                    f"{tuple(val.shape)}, expected {shape}"
                )
        return LayerStructure(C, g, B, A)


class MLPLayer(Layer):
    """A bias-free two-layer MLP block as an NQF layer (Prop. 1 with ``D``
    outputs, App. B.2).

    The block ``h_k = sum_i V_ki phi(u_i . a)`` with ``a = act(h_prev)`` has,
    to leading order, ``h_k = phi'(0) sum_i V_ki u_i . a``: neuron ``w_i =
    (u_i, V_:i)`` in ``R^{n_in + n_out}``, ``C = g = B = 0`` and ``A_k =
    (phi'(0)/2) [[0, a e_k^T], [e_k a^T, 0]]``.  Then ``Tr[M A_k] = phi'(0)
    (a^T M_{uV})_k`` with ``M_{uV}`` the (n_in, n_out) off-diagonal block of
    ``M``, which :meth:`forward` uses directly.

    Parameters
    ----------
    n_in, n_out : int
    act : callable, optional
        Applied to the previous layer's output before the block (e.g.
        ``torch.tanh`` between two blocks of a deep MLP); identity by default.
    slope : float
        ``phi'(0)`` of the block's own activation (1 for tanh).
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        act: Callable[[torch.Tensor], torch.Tensor] | None = None,
        slope: float = 1.0,
    ) -> None:
        self.n_in, self.n_out = integer("n_in", n_in), integer("n_out", n_out)
        self.p = self.n_in + self.n_out
        if act is not None and not callable(act):
            raise TypeError(
                f"act must be callable or None, got {type(act).__name__}"
            )
        self.act = act
        self.slope = _real("slope", slope)

    def _a(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.act is None else self.act(h)

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        """``T = phi'(0) M_{uV}^T`` (n_out, n_in): for neurons ``(u_i, V[:,
        i])``, ``T = V U`` (without ``act``)."""
        if self.act is not None:
            raise TypeError(
                "this MLPLayer applies act to its input: it is not linear, "
                "so it has no end-to-end matrix"
            )
        return self.slope * M[..., : self.n_in, self.n_in :].transpose(-1, -2)

    def structure(self, h: torch.Tensor) -> LayerStructure:
        a = self._a(h)
        lead = tuple(a.shape[:-1])
        A = torch.zeros(lead + (self.n_out, self.p, self.p), dtype=a.dtype)
        block = (
            0.5
            * self.slope
            * torch.einsum(
                "...i,kj->...kij", a, torch.eye(self.n_out, dtype=a.dtype)
            )
        )
        A[..., : self.n_in, self.n_in :] = block
        A[..., self.n_in :, : self.n_in] = block.transpose(-1, -2)
        return LayerStructure(
            torch.zeros(lead + (self.n_out,), dtype=a.dtype), None, None, A
        )

    def forward(
        self, h: torch.Tensor, M: torch.Tensor, mu: torch.Tensor
    ) -> torch.Tensor:
        block = M[..., : self.n_in, self.n_in :]
        return self.slope * self._a(h) @ block


class LinearLayer(Layer):
    """A single weight matrix ``h = V a`` (``a = act(h_prev)``) as an NQF
    layer: linear in its weights.

    Neuron ``i`` is the column-major ``vec`` of a matrix ``V_i`` (``p = n_in *
    n_out``) and the layer uses their sum ``V = sum_i V_i``, so ``mu = W 1 =
    vec(V)`` and

    ``h_k = sum_j V_kj a_j = g_k^T mu``, ``g_k = vec(e_k a^T)`` (entry ``k +
    n_out j`` is ``a_j``),

    ``C = 0``, ``B = A = 0``: Definition 2 with only its linear term, exact (no
    expansion). Width ``d = 1`` is the plain matrix ``V``; ``d`` copies are an
    over-parametrised one whose ``mu`` moves ``d`` times as fast (Eq. 222, ``H
    = 0``).  The unpaired last matrix of an MLP of odd depth is this layer
    (:meth:`DeepNQF.mlp`).

    Parameters
    ----------
    n_in, n_out : int
    act : callable, optional
        Applied to the previous layer's output first (e.g. ``torch.tanh``);
        identity by default.
    """

    def __init__(
        self,
        n_in: int,
        n_out: int,
        act: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        self.n_in, self.n_out = integer("n_in", n_in), integer("n_out", n_out)
        self.p = self.n_in * self.n_out
        if act is not None and not callable(act):
            raise TypeError(
                f"act must be callable or None, got {type(act).__name__}"
            )
        self.act = act

    def _a(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.act is None else self.act(h)

    def structure(self, h: torch.Tensor) -> LayerStructure:
        a = self._a(h)
        lead = tuple(a.shape[:-1])
        g = torch.einsum(
            "...j,kl->...kjl", a, torch.eye(self.n_out, dtype=a.dtype)
        ).reshape(lead + (self.n_out, self.p))
        zeros = a.new_zeros(lead + (self.n_out, self.p, self.p))
        return LayerStructure(
            a.new_zeros(lead + (self.n_out,)), g, None, zeros
        )

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        """``V`` (n_out, n_in), the matrix whose column-major ``vec`` is ``mu``
        (without ``act``)."""
        if self.act is not None:
            raise TypeError(
                "this LinearLayer applies act to its input: it is not "
                "linear, so it has no end-to-end matrix"
            )
        return mu.reshape(mu.shape[:-1] + (self.n_in, self.n_out)).transpose(
            -1, -2
        )

    def forward(
        self, h: torch.Tensor, M: torch.Tensor, mu: torch.Tensor
    ) -> torch.Tensor:
        return self._a(h) @ mu.reshape(mu.shape[:-1] + (self.n_in, self.n_out))


class AttentionLayer(Layer):
    """A single softmax-attention block as an NQF layer (Prop. 2, Eq. 8), value
    channels as neurons.

    The block maps ``N`` tokens ``X`` (N x D_in) to ``Y = softmax(X W_Q^T W_K
    X^T / sqrt(d_k)) X W_V^T W_O^T`` (every token, ``pooled=False``) or, with a
    readout ``W_O`` of one row and the query at one token, to the scalar ``W_O
    W_V X^T softmax(.)`` (``pooled=True``).  At small weights the logits are
    quadratic in the weights, so every softmax row is ``1/N + O(|W|^2)`` and to
    leading (quadratic) order each output is ``W_O W_V xbar`` with ``xbar = X^T
    1 / N`` the token average: the queries and keys drop out (Prop. 2).
    Grouping the head's weights by value channel ``a``, neuron ``w_a = (W_V[a,
    :], W_O[:, a])`` in ``R^{D_in + D_out}`` (width ``d = d_v``), the structure
    is that of
    :class:`MLPLayer` with input ``xbar``:
    ``C = g = B = 0`` and ``A_k = (1/2) [[0, xbar e_o^T], [e_o xbar^T, 0]]``
    for an output ``k`` of channel ``o``, the same for every token.  It is the
    block ``(W_V, W_O)`` of Eq. 8 re-indexed by channel.

    Tokens travel flattened: ``h`` (..., n, N * D_in) holds token ``t`` in
    columns ``t*D_in ... (t+1)*D_in - 1``.

    Parameters
    ----------
    n_tokens : int
        ``N``.
    d_in, d_out : int
        Token dimension before and after the block.
    pooled : bool
        ``False``: output every token, ``n_out = N * d_out`` (the input of a
        next attention layer). ``True``: one output of ``d_out`` values (the
        readout of the last layer), ``n_out = d_out``.
    """

    def __init__(
        self, n_tokens: int, d_in: int, d_out: int, pooled: bool = False
    ) -> None:
        self.n_tokens = integer("n_tokens", n_tokens)
        self.d_in, self.d_out = integer("d_in", d_in), integer("d_out", d_out)
        if not isinstance(pooled, bool):
            raise TypeError(
                f"pooled must be True or False, got {type(pooled).__name__}"
            )
        self.pooled = pooled
        self.n_in = self.n_tokens * self.d_in
        self.n_out = self.d_out if pooled else self.n_tokens * self.d_out
        self.p = self.d_in + self.d_out

    def token_mean(self, h: torch.Tensor) -> torch.Tensor:
        """``xbar`` (..., n, d_in): the average of the ``N`` tokens held in
        ``h`` (..., n, N * d_in)."""
        if h.shape[-1] != self.n_in:
            raise ValueError(
                f"h must have shape (..., n, {self.n_in}) ({self.n_tokens} "
                f"tokens of {self.d_in}), "
                f"got {tuple(h.shape)}"
            )
        return h.reshape(h.shape[:-1] + (self.n_tokens, self.d_in)).mean(-2)

    def _tokens(self, out: torch.Tensor) -> torch.Tensor:
        """One output per channel (..., n, d_out) -> the layer's output,
        repeated over tokens unless pooled."""
        return (
            out
            if self.pooled
            else out.repeat((1,) * (out.ndim - 1) + (self.n_tokens,))
        )

    def structure(self, h: torch.Tensor) -> LayerStructure:
        xbar = self.token_mean(h)
        lead = tuple(xbar.shape[:-1])
        A = torch.zeros(lead + (self.d_out, self.p, self.p), dtype=xbar.dtype)
        block = 0.5 * torch.einsum(
            "...i,kj->...kij", xbar, torch.eye(self.d_out, dtype=xbar.dtype)
        )
        A[..., : self.d_in, self.d_in :] = block
        A[..., self.d_in :, : self.d_in] = block.transpose(-1, -2)
        if not self.pooled:
            A = A.repeat((1,) * len(lead) + (self.n_tokens, 1, 1))
        return LayerStructure(
            torch.zeros(lead + (self.n_out,), dtype=xbar.dtype), None, None, A
        )

    def forward(
        self, h: torch.Tensor, M: torch.Tensor, mu: torch.Tensor
    ) -> torch.Tensor:
        return self._tokens(
            self.token_mean(h) @ M[..., : self.d_in, self.d_in :]
        )

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        """``T`` (n_out, N d_in): the block ``M_{VO}^T`` applied to the token
        average (repeated per token unless pooled)."""
        block = M[..., : self.d_in, self.d_in :].transpose(
            -1, -2
        )  # (..., d_out, d_in)
        T = (
            torch.cat([block] * self.n_tokens, dim=-1) / self.n_tokens
        )  # xbar = (1/N) sum_t h_t
        return T if self.pooled else torch.cat([T] * self.n_tokens, dim=-2)


class ScaledLayer(Layer):
    """``layer`` with ``A`` multiplied by ``factor`` (the ``A~ = (d'/d) A`` of
    Theorem 15).

    Since ``Tr[M (c A)] = Tr[(c M) A]``, the forward pass is ``layer``'s at
    ``(c M, mu)``.
    """

    def __init__(self, layer: Layer, factor: float) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(
                f"layer must be a Layer, got {type(layer).__name__}"
            )
        self.layer, self.factor = layer, positive("factor", factor)
        self.p, self.n_in, self.n_out = layer.p, layer.n_in, layer.n_out

    def structure(self, h: torch.Tensor) -> LayerStructure:
        C, g, B, A = self.layer.structure(h)
        return LayerStructure(C, g, B, self.factor * A)

    def forward(
        self, h: torch.Tensor, M: torch.Tensor, mu: torch.Tensor
    ) -> torch.Tensor:
        return self.layer.forward(h, self.factor * M, mu)

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        return self.layer.linear_map(self.factor * M, mu)


def deep_moments(
    Ws: Sequence[torch.Tensor],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per-layer order parameters ``M^(l) = W W^T`` and ``mu^(l) = W 1``
    (Definition 2).

    Parameters
    ----------
    Ws : sequence of tensors, shapes (..., p_l, d_l)

    Returns
    -------
    Ms : list of tensors (..., p_l, p_l)
    mus : list of tensors (..., p_l)
    """
    return _moments(
        [_param(f"Ws[{l}]", W, 2) for l, W in enumerate(_list("Ws", Ws))]
    )


def _list(name: str, seq: object) -> list:
    if isinstance(
        seq, (str, bytes, torch.Tensor, np.ndarray)
    ) or not isinstance(seq, Sequence):
        raise TypeError(
            f"{name} must be a list with one tensor per layer, got "
            f"{type(seq).__name__}"
        )
    return list(seq)


class DeepNQF:
    """An ``L``-layer NQF (Definition 2, Eq. 219) with explicit and closed
    training (Thm 14).

    Parameters
    ----------
    layers : sequence of Layer
        ``layers[l].n_in`` must equal ``layers[l-1].n_out``.

    Notes
    -----
    Every loss, gradient and training method takes optional per-output
    ``weights`` ``w_nk >= 0`` (broadcastable to ``y``; the loss is ``(1/|b|)
    sum w_nk (f_nk
    - y_nk)^2``):
    a 0/1 mask of the observed entries trains on those entries only (matrix
    completion).
    """

    def __init__(self, layers: Sequence[Layer]) -> None:
        layers = _list("layers", layers)
        if not layers:
            raise ValueError("layers must hold at least one Layer, got none")
        for l, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise TypeError(
                    f"layers[{l}] must be a Layer, got {type(layer).__name__}"
                )
            if l and layer.n_in != layers[l - 1].n_out:
                raise ValueError(
                    f"layers[{l}].n_in = {layer.n_in} does not match "
                    f"layers[{l - 1}].n_out = {layers[l - 1].n_out}"
                )
        self.layers = layers
        self.L = len(layers)

    def __repr__(self) -> str:
        dims = " -> ".join(
            [str(self.layers[0].n_in)]
            + [str(layer.n_out) for layer in self.layers]
        )
        return (
            f"DeepNQF(L={self.L}, D: {dims}, "
            f"p={[layer.p for layer in self.layers]})"
        )

    # ------------------------------------------------------------ constructors
    @classmethod
    def mlp(
        cls,
        dims: Sequence[int],
        act: Callable[[torch.Tensor], torch.Tensor] | None = torch.tanh,
        slope: float = 1.0,
    ) -> "DeepNQF":
        """The deep NQF of a bias-free MLP ``x -> W_L act(... act(W_1 x))`` of
        any depth ``L >= 1`` (App. B.4).

        The weight matrices pair up into two-layer blocks ``(W_1, W_2), (W_3,
        W_4), ...``, each an
        :class:`MLPLayer` (its inner activation linearised with ``slope =
        act'(0)``, Prop. 1); the first block sees ``x``, every later one
        ``act`` of the previous block's output.  For odd ``L`` the last matrix
        ``W_L`` is a :class:`LinearLayer` on ``act`` of the last block's output
        (``x`` itself when ``L = 1``), which is exact.
        :meth:`mlp_weights` gives the
        matching weights.

        Parameters
        ----------
        dims : sequence of int
            ``(D_0, D_1, ..., D_L)``: input, hidden and output sizes (``W_l``
            is ``D_l x D_{l-1}``).
        act : callable or None
            The activation between layers (``None``: a deep linear network).
        slope : float
            ``act'(0)`` (1 for tanh and for ``None``).
        """
        dims = [
            integer(f"dims[{i}]", d) for i, d in enumerate(_list("dims", dims))
        ]
        if len(dims) < 2:
            raise ValueError(
                "dims must hold the input size and at least one layer "
                f"size, got {dims}"
            )
        if act is not None and not callable(act):
            raise TypeError(
                f"act must be callable or None, got {type(act).__name__}"
            )
        n_mat = len(dims) - 1
        layers: list[Layer] = [
            MLPLayer(
                dims[i], dims[i + 2], act=None if i == 0 else act, slope=slope
            )
            for i in range(0, n_mat - 1, 2)
        ]
        if n_mat % 2:
            layers.append(
                LinearLayer(
                    dims[-2], dims[-1], act=None if n_mat == 1 else act
                )
            )
        return cls(layers)

    @staticmethod
    def mlp_weights(Ws: Sequence[object]) -> list[torch.Tensor]:
        """NQF weights of the MLP matrices ``Ws`` (each (..., D_l, D_{l-1})),
        paired as :meth:`mlp` pairs them.

        A block ``(U, V) = (W_{2j+1}, W_{2j+2})`` becomes ``[U^T; V]`` (neuron
        ``i`` = hidden unit ``i``: its input weights and its output weights);
        an unpaired last ``W_L`` becomes its column-major ``vec`` as one
        neuron, (..., D_L D_{L-1}, 1).
        """
        Ws = [_param(f"Ws[{l}]", W, 2) for l, W in enumerate(_list("Ws", Ws))]
        if not Ws:
            raise ValueError("Ws must hold at least one weight matrix")
        for l in range(1, len(Ws)):
            if Ws[l].shape[-1] != Ws[l - 1].shape[-2]:
                raise ValueError(
                    f"Ws[{l}] has {Ws[l].shape[-1]} columns but Ws[{l - 1}] "
                    f"has {Ws[l - 1].shape[-2]} rows"
                )
        out = [
            torch.cat([U.transpose(-1, -2), V], dim=-2)
            for U, V in zip(Ws[0:-1:2], Ws[1::2])
        ]
        if len(Ws) % 2:
            last = Ws[-1]
            out.append(
                last.transpose(-1, -2).reshape(last.shape[:-2] + (-1, 1))
            )
        return out

    # -------------------------------------------------------------- validation
    def _x(self, x: object) -> torch.Tensor:
        x = _tensor("x", x, ndim_min=2)
        if x.shape[-1] != self.layers[0].n_in:
            raise ValueError(
                f"x must have shape (..., n, {self.layers[0].n_in}), got "
                f"{tuple(x.shape)}"
            )
        if x.shape[-2] == 0:
            raise ValueError(
                f"x must hold at least one input, got shape {tuple(x.shape)}"
            )
        return x

    def _y(self, y: object, x: torch.Tensor) -> torch.Tensor:
        y = _tensor("y", y)
        want = tuple(x.shape[:-1]) + (self.layers[-1].n_out,)
        if y.shape != want and y.shape == want[:-1] and want[-1] == 1:
            y = y.unsqueeze(-1)
        if tuple(y.shape) != want:
            raise ValueError(
                f"y must have shape {want} (one target per input and "
                f"output), got {tuple(y.shape)}"
            )
        return y

    def _weights(
        self, weights: object, y: torch.Tensor
    ) -> torch.Tensor | None:
        """Per-output loss weights broadcast to ``y``'s shape (``None``: all
        ones)."""
        if weights is None:
            return None
        try:
            w = _tensor("weights", weights)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (give unobserved entries the weight 0 and any "
                "finite target)"
            ) from exc
        try:
            w = torch.broadcast_to(w, y.shape)
        except RuntimeError as exc:
            raise ValueError(
                f"weights must broadcast to y's shape {tuple(y.shape)}, got "
                f"{tuple(w.shape)}"
            ) from exc
        if torch.any(w < 0):
            raise ValueError(
                f"weights must be >= 0, got min {float(w.min()):.3g}"
            )
        if not torch.any(w > 0):
            raise ValueError(
                "weights are all zero: the loss would be identically 0 (no "
                "observed entry)"
            )
        return w

    def _data(
        self, x: object, y: object, weights: object
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        x = self._x(x)
        y = self._y(y, x)
        return x, y, self._weights(weights, y)

    def _state(
        self, Ms: object, mus: object, widths: object = None
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Validated order parameters: finite, ``M`` symmetric (then
        symmetrised) and PSD; realisable with widths."""
        Ms, mus = _list("Ms", Ms), _list("mus", mus)
        for name, seq in (("Ms", Ms), ("mus", mus)):
            if len(seq) != self.L:
                raise ValueError(
                    f"{name} must hold one entry per layer ({self.L}), got "
                    f"{len(seq)}"
                )
        widths = None if widths is None else self._widths(widths)
        out_M, out_mu = [], []
        for l, layer in enumerate(self.layers):
            M, mu = (
                _param(f"Ms[{l}]", Ms[l], 2),
                _param(f"mus[{l}]", mus[l], 1),
            )
            if tuple(M.shape[-2:]) != (layer.p, layer.p):
                raise ValueError(
                    f"Ms[{l}] must have shape (..., {layer.p}, {layer.p}), "
                    f"got {tuple(M.shape)}"
                )
            if mu.shape[-1] != layer.p:
                raise ValueError(
                    f"mus[{l}] must have shape (..., {layer.p}), got "
                    f"{tuple(mu.shape)}"
                )
            if (
                not M.requires_grad
            ):  # order parameters given by the caller (not an autograd pass)
                M = _order_parameter(f"Ms[{l}]", M)
                if widths is not None:
                    _realisable(l, M, mu, widths[l])
            out_M.append(M)
            out_mu.append(mu)
        return out_M, out_mu

    def _Ws(self, Ws: object) -> list[torch.Tensor]:
        Ws = _list("Ws", Ws)
        if len(Ws) != self.L:
            raise ValueError(
                f"Ws must hold one weight matrix per layer ({self.L}), got "
                f"{len(Ws)}"
            )
        out = []
        for l, (W, layer) in enumerate(zip(Ws, self.layers)):
            W = _param(f"Ws[{l}]", W, 2)
            if W.shape[-2] != layer.p or W.shape[-1] < 1:
                raise ValueError(
                    f"Ws[{l}] must have shape (..., p={layer.p}, d) with d "
                    f">= 1, got {tuple(W.shape)}"
                )
            out.append(W)
        return out

    def _lrs(self, lr: object) -> list[float]:
        if isinstance(lr, (Sequence, np.ndarray)) and not isinstance(
            lr, (str, bytes)
        ):
            if len(lr) != self.L:
                raise ValueError(
                    "lr must be a number or one learning rate per layer "
                    f"({self.L}), got {len(lr)}"
                )
            return [positive(f"lr[{l}]", v) for l, v in enumerate(lr)]
        return [positive("lr", lr)] * self.L

    # ----------------------------------------------------------------- forward
    def _hidden(
        self, x: torch.Tensor, Ms: list[torch.Tensor], mus: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        out, h = [], x
        for layer, M, mu in zip(self.layers, Ms, mus):
            h = layer.forward(h, M, mu)
            out.append(h)
        return out

    def _loss(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        w: torch.Tensor | None,
        Ms: list[torch.Tensor],
        mus: list[torch.Tensor],
    ) -> torch.Tensor:
        r2 = (self._hidden(x, Ms, mus)[-1] - y) ** 2
        return (r2 if w is None else w * r2).sum() / x.shape[-2]

    def hidden(self, x: object, Ms: object, mus: object) -> list[torch.Tensor]:
        """All representations ``[h^(1), ..., h^(L)]`` (Eq. 219), each (..., n,
        D_l)."""
        x = self._x(x)
        return self._hidden(x, *self._state(Ms, mus))

    def predict(self, x: object, Ms: object, mus: object) -> torch.Tensor:
        """Output ``f(x) = h^(L)(x)`` (..., n, D_L) from the order
        parameters."""
        return self.hidden(x, Ms, mus)[-1]

    def predict_W(self, x: object, Ws: object) -> torch.Tensor:
        """Output at weights ``Ws`` (list of (..., p_l, d_l))."""
        return self._hidden(self._x(x), *_moments(self._Ws(Ws)))[-1]

    def loss(
        self,
        x: object,
        y: object,
        Ms: object,
        mus: object,
        weights: object = None,
    ) -> torch.Tensor:
        """``(1/n) sum_{n,k} w_nk (f_nk - y_nk)^2``, summed over leading axes
        (Eq. 26; ``w = 1`` by default)."""
        x, y, w = self._data(x, y, weights)
        return self._loss(x, y, w, *self._state(Ms, mus))

    def product(self, Ms: object, mus: object) -> torch.Tensor:
        """End-to-end matrix ``T = T_L ... T_1`` (..., D_L, D_0) of a stack of
        linear layers: ``f(x) = T x``.

        Each layer contributes its :meth:`Layer.linear_map` (for a deep linear
        MLP, ``T_l = V_l U_l``, the product of the block's two weight
        matrices).

        Raises
        ------
        TypeError
            If a layer is not linear in its input (an activation, a general
            structure).
        """
        Ms, mus = self._state(Ms, mus)
        return self._product(Ms, mus)

    def product_W(self, Ws: object) -> torch.Tensor:
        """:meth:`product` at weights ``Ws``."""
        return self._product(*_moments(self._Ws(Ws)))

    def _product(
        self, Ms: list[torch.Tensor], mus: list[torch.Tensor]
    ) -> torch.Tensor:
        T = None
        for l, (layer, M, mu) in enumerate(zip(self.layers, Ms, mus)):
            try:
                Tl = layer.linear_map(M, mu)
            except TypeError as exc:
                raise TypeError(f"layers[{l}]: {exc}") from exc
            T = Tl if T is None else Tl @ T
        return T

    # --------------------------------------------------------------- gradients
    def _order_gradients(
        self, x, y, w, Ms, mus
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        Ms = [M.detach().requires_grad_(True) for M in Ms]
        mus = [mu.detach().requires_grad_(True) for mu in mus]
        grads = torch.autograd.grad(
            self._loss(x, y, w, Ms, mus), Ms + mus, allow_unused=True
        )
        Gs = [
            torch.zeros_like(M) if G is None else G
            for G, M in zip(grads[: self.L], Ms)
        ]
        vs = [
            torch.zeros_like(mu) if v is None else v
            for v, mu in zip(grads[self.L :], mus)
        ]
        return vs, [G + G.transpose(-1, -2) for G in Gs]

    def order_gradients(
        self,
        x: object,
        y: object,
        Ms: object,
        mus: object,
        weights: object = None,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """``v^(l)`` (Eq. 224) and ``H^(l)`` (Eq. 225) of every layer, by
        autograd on ``(M, mu)``.

        ``v^(l) = dL/dmu^(l)`` and ``H^(l) = G + G^T`` with ``G = dL/dM^(l)``;
        see the module docstring.

        Returns
        -------
        vs : list of tensors (..., p_l)
        Hs : list of tensors (..., p_l, p_l)
        """
        x, y, w = self._data(x, y, weights)
        return self._order_gradients(x, y, w, *self._state(Ms, mus))

    def _grad_W(self, x, y, w, Ws: list[torch.Tensor]) -> list[torch.Tensor]:
        Ws = [W.detach().requires_grad_(True) for W in Ws]
        return list(
            torch.autograd.grad(self._loss(x, y, w, *_moments(Ws)), Ws)
        )

    def grad_W(
        self, x: object, y: object, Ws: object, weights: object = None
    ) -> list[torch.Tensor]:
        """Explicit gradients ``dL/dW^(l)`` by autograd through the weights
        (Eq. 220)."""
        x, y, w = self._data(x, y, weights)
        return self._grad_W(x, y, w, self._Ws(Ws))

    # ---------------------------------------------------------------- training
    def _gd_step(
        self, x, y, w, Ws: list[torch.Tensor], lrs: list[float]
    ) -> list[torch.Tensor]:
        grads = self._grad_W(x, y, w, Ws)
        return [
            _finite(W.detach() - a * G, a) for W, G, a in zip(Ws, grads, lrs)
        ]

    def gd_step(
        self,
        x: object,
        y: object,
        Ws: object,
        lr: object,
        weights: object = None,
    ) -> list[torch.Tensor]:
        """One explicit (S)GD step on every layer's weights, ``W^(l) -= lr_l
        dL/dW^(l)`` (Eq. 220).

        ``lr`` is a number or one per layer (Theorem 15's layer-wise rates).
        """
        x, y, w = self._data(x, y, weights)
        return self._gd_step(x, y, w, self._Ws(Ws), self._lrs(lr))

    def _closed_step(
        self, x, y, w, Ms, mus, widths: list[int], lrs: list[float]
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        vs, Hs = self._order_gradients(x, y, w, Ms, mus)
        new_M, new_mu = [], []
        for M, mu, v, H, d, a in zip(Ms, mus, vs, Hs, widths, lrs):
            M, mu = M.detach(), mu.detach()
            Hmu = (H @ mu.unsqueeze(-1)).squeeze(-1)
            HM = H @ M
            vmu = v.unsqueeze(-1) * mu.unsqueeze(-2)
            vHmu = v.unsqueeze(-1) * Hmu.unsqueeze(-2)
            M_new = (
                M
                - a * (vmu + vmu.transpose(-1, -2) + HM + HM.transpose(-1, -2))
                + a
                * (
                    a
                    * (
                        d * v.unsqueeze(-1) * v.unsqueeze(-2)
                        + vHmu
                        + vHmu.transpose(-1, -2)
                        + HM @ H
                    )
                )
            )
            new_M.append(_finite(0.5 * (M_new + M_new.transpose(-1, -2)), a))
            new_mu.append(_finite(mu - a * (d * v + Hmu), a))
        return new_M, new_mu

    def closed_step(
        self,
        x: object,
        y: object,
        Ms: object,
        mus: object,
        widths: object,
        lr: object,
        weights: object = None,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """One step of the closed per-layer dynamics of Theorem 14 (Eqs.
        222-223).

        .. math::

            \\Delta\\mu = -\\eta(d\\,v + H\\mu),

            \\Delta M ={}& -\\eta(v\\mu^\\top + \\mu v^\\top + HM + MH) \\\\
                      &+ \\eta^2(d\\,vv^\\top + v\\mu^\\top H + H\\mu v^\\top +
                      HMH)

        per layer, with ``v``, ``H`` of :meth:`order_gradients` and ``d =
        widths[l]``.

        Parameters
        ----------
        x : (..., n, D_0); y : (..., n, D_L)
        Ms, mus : lists of (..., p_l, p_l) and (..., p_l)
            Realisable by width-``d_l`` weights (``M - mu mu^T/d`` PSD of rank
            ``<= d - 1``).
        widths : sequence of int
            ``d_l`` (numbers only: no weights are stored).
        lr : float or sequence of floats
        weights : per-output loss weights (see the class notes), optional
        """
        x, y, w = self._data(x, y, weights)
        widths = self._widths(widths)
        Ms, mus = self._state(Ms, mus, widths)
        return self._closed_step(x, y, w, Ms, mus, widths, self._lrs(lr))

    def train(
        self,
        x: object,
        y: object,
        Ws: object,
        lr: object,
        steps: int,
        batches: object = None,
        weights: object = None,
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """``steps`` explicit (S)GD steps (:meth:`gd_step`); outputs on all of
        ``x`` at every step.

        Parameters
        ----------
        x, y : inputs (..., n, D_0) and targets (..., n, D_L)
        Ws : list of (..., p_l, d_l)
        lr : float or one per layer
        steps : int >= 0
        batches : sequence of ``steps`` index arrays into the ``n`` inputs,
        optional (full batch when None)
        weights : per-output loss weights broadcastable to ``y`` (see the class
        notes), optional

        Returns
        -------
        Ws : list of tensors after the last step
        outputs : tensor (steps + 1, ..., n, D_L)
        """
        x, y, w, steps, batches = self._schedule(x, y, weights, steps, batches)
        Ws, lrs = self._Ws(Ws), self._lrs(lr)
        outs = [self._hidden(x, *_moments(Ws))[-1].detach()]
        for b in batches:
            Ws = self._gd_step(
                x[..., b, :],
                y[..., b, :],
                None if w is None else w[..., b, :],
                Ws,
                lrs,
            )
            outs.append(self._hidden(x, *_moments(Ws))[-1].detach())
        return Ws, torch.stack(outs)

    def train_closed(
        self,
        x: object,
        y: object,
        Ms: object,
        mus: object,
        widths: object,
        lr: object,
        steps: int,
        batches: object = None,
        weights: object = None,
    ) -> tuple[tuple[list, list], torch.Tensor]:
        """``steps`` steps of the closed recursion (:meth:`closed_step`);
        outputs at every step.

        Returns
        -------
        (Ms, mus) after the last step, and outputs (steps + 1, ..., n, D_L).
        """
        x, y, w, steps, batches = self._schedule(x, y, weights, steps, batches)
        widths, lrs = self._widths(widths), self._lrs(lr)
        Ms, mus = self._state(Ms, mus, widths)
        outs = [self._hidden(x, Ms, mus)[-1].detach()]
        for b in batches:
            Ms, mus = self._closed_step(
                x[..., b, :],
                y[..., b, :],
                None if w is None else w[..., b, :],
                Ms,
                mus,
                widths,
                lrs,
            )
            outs.append(self._hidden(x, Ms, mus)[-1].detach())
        return (Ms, mus), torch.stack(outs)

    def _widths(self, widths: object) -> list[int]:
        widths = _list("widths", widths)
        if len(widths) != self.L:
            raise ValueError(
                f"widths must hold one width per layer ({self.L}), got "
                f"{len(widths)}"
            )
        return [width(f"widths[{l}]", d) for l, d in enumerate(widths)]

    def _schedule(
        self,
        x: object,
        y: object,
        weights: object,
        steps: object,
        batches: object,
    ) -> tuple:
        x, y, w = self._data(x, y, weights)
        steps = integer("steps", steps, minimum=0)
        n = x.shape[-2]
        if batches is None:
            return x, y, w, steps, [slice(None)] * steps
        batches = _list("batches", batches)
        if len(batches) != steps:
            raise ValueError(
                f"batches must hold one index array per step ({steps}), got "
                f"{len(batches)}"
            )
        out = []
        for t, b in enumerate(batches):
            b = torch.as_tensor(np.asarray(b))
            if (
                b.ndim != 1
                or b.numel() == 0
                or b.dtype not in (torch.int64, torch.int32)
            ):
                raise ValueError(
                    f"batches[{t}] must be a non-empty 1-D integer index "
                    f"array, got {b.dtype} {tuple(b.shape)}"
                )
            if b.min() < 0 or b.max() >= n:
                raise ValueError(
                    f"batches[{t}] indices must lie in [0, {n}), got "
                    f"[{int(b.min())}, {int(b.max())}]"
                )
            out.append(b.long())
        return x, y, w, steps, out


def _moments(
    Ws: list[torch.Tensor],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(M, mu)`` of validated weights (no checks: ``W W^T`` is a valid order
    parameter)."""
    return [W @ W.transpose(-1, -2) for W in Ws], [W.sum(-1) for W in Ws]


def _order_parameter(name: str, M: torch.Tensor) -> torch.Tensor:
    """``M`` checked to be symmetric (relative tolerance) and positive
    semi-definite, then symmetrised."""
    scale = max(float(M.abs().max()), 1e-300) if M.numel() else 1.0
    asym = float((M - M.transpose(-1, -2)).abs().max()) if M.numel() else 0.0
    if asym > SYM_RTOL * scale:
        raise ValueError(
            f"{name} must be symmetric (max |M - M^T| = {asym:.3g}); it is "
            "M = W W^T of a layer"
        )
    M = 0.5 * (M + M.transpose(-1, -2))
    if M.numel():
        lam = torch.linalg.eigvalsh(M)[..., 0].min()
        if lam < -REALIZABLE_RTOL * scale:
            raise ValueError(
                f"{name} must be positive semi-definite (M = W W^T), but "
                f"has eigenvalue {float(lam):.3g}"
            )
    return M


def _realisable(l: int, M: torch.Tensor, mu: torch.Tensor, d: int) -> None:
    """Raise unless every member of layer ``l``'s ``(M, mu)`` is realised by
    width-``d`` weights."""
    Mn = M.detach().reshape(-1, M.shape[-2], M.shape[-1]).numpy()
    mun = (
        torch.broadcast_to(mu.detach(), M.shape[:-1])
        .reshape(-1, M.shape[-1])
        .numpy()
    )
    for Mi, mui in zip(Mn, mun):
        try:
            check_realizable(Mi, mui, d)
        except ValueError as exc:
            raise ValueError(f"layer {l}: {exc}") from exc


def _finite(X: torch.Tensor, lr: float) -> torch.Tensor:
    """``X`` unchanged if it and its squared norm are finite (so ``W W^T``
    cannot overflow); else raise."""
    if not (
        torch.all(torch.isfinite(X))
        and torch.isfinite((X.detach() ** 2).sum())
    ):
        raise FloatingPointError(
            f"training diverged (non-finite values) at lr = {lr:g}: lower "
            "the learning rate"
        )
    return X


def realize_deep(
    Ms: Sequence,
    mus: Sequence,
    widths: Sequence[int],
    rng: np.random.Generator | int | None = None,
) -> list[torch.Tensor]:
    """Weights of widths ``d_l`` with the given per-layer ``(M^(l), mu^(l))``
    (setup of Theorem 14).

    Layer by layer :func:`nqf_lite.realize_moments` (``W W^T = M``, ``W 1 =
    mu``).

    Parameters
    ----------
    Ms, mus : lists of (p_l, p_l) and (p_l,) arrays or tensors
    widths : list of int
    rng : numpy Generator or int, optional
        Randomises the realisation (a fixed one when ``None``).

    Returns
    -------
    list of tensors (p_l, d_l)
    """
    Ms, mus, widths = (
        _list("Ms", Ms),
        _list("mus", mus),
        _list("widths", widths),
    )
    if not len(Ms) == len(mus) == len(widths):
        raise ValueError(
            "Ms, mus and widths must have one entry per layer, got "
            f"{len(Ms)}, {len(mus)}, {len(widths)}"
        )
    gen = generator("rng", rng)
    out = []
    for l, (M, mu, d) in enumerate(zip(Ms, mus, widths)):
        M = M.detach().numpy() if isinstance(M, torch.Tensor) else M
        mu = mu.detach().numpy() if isinstance(mu, torch.Tensor) else mu
        try:
            W = realize_moments(M, mu, width(f"widths[{l}]", d), rng=gen)
        except ValueError as exc:
            raise ValueError(f"layer {l}: {exc}") from exc
        out.append(torch.as_tensor(W, dtype=DTYPE))
    return out


def structure_subspace(
    layer: Layer, h: object, rtol: float = 1e-10
) -> torch.Tensor:
    """Orthonormal basis (p, k) of ``span{g_k(h), Col A_k(h), Col B_k(h)}``
    over inputs ``h`` (Eq. 236).

    Theorem 15 takes the span over the training inputs *and all training
    steps*:
    pass the previous-layer outputs of every step, stacked along the first
    axis.

    Parameters
    ----------
    layer : Layer
    h : (n, n_in) previous-layer outputs
    rtol : float
        Singular values below ``rtol * largest`` count as zero.
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"layer must be a Layer, got {type(layer).__name__}")
    rtol = fraction("rtol", rtol)
    h = _tensor("h", h, ndim_min=2)
    if h.shape[-1] != layer.n_in:
        raise ValueError(
            f"h must have shape (n, {layer.n_in}), got {tuple(h.shape)}"
        )
    _, g, B, A = layer.structure(h.reshape(-1, layer.n_in))
    p = layer.p
    cols = [A.reshape(-1, p, p).transpose(0, 1).reshape(p, -1)]
    if g is not None:
        cols.append(g.reshape(-1, p).T)
    if B is not None:
        cols.append(B.reshape(-1, p, p).transpose(0, 1).reshape(p, -1))
    U, s, _ = torch.linalg.svd(torch.cat(cols, dim=1), full_matrices=False)
    if s.numel() == 0 or s[0] == 0:
        return torch.zeros(p, 0, dtype=DTYPE)
    return U[:, s > rtol * s[0]]


def compress_deep(
    model: DeepNQF,
    Ws: Sequence,
    lr: object,
    bases: Sequence,
    rng: np.random.Generator | int | None = None,
) -> tuple[DeepNQF, list[torch.Tensor], list[float]]:
    """The compressed deep NQF of Theorem 15: widths ``k_l + 1`` and layer-wise
    rescaled learning rates.

    With ``V_l`` (p_l, k_l) an orthonormal basis of layer ``l``'s structure
    span (Eq. 236), ``P_l = V_l V_l^T``, ``d'_l = k_l + 1``: the small model
    has ``A~^(l) = (d'_l/d_l) A^(l)`` (same ``C``, ``g``, ``B``), learning
    rates ``lr~_l = (d_l/d'_l) lr_l`` and weights realising ``mu~ = P mu`` and
    ``M~ = (d_l/d'_l) P M P``.  By induction over layers its representations
    equal the original's on every input whose structure lies in the spans, and
    by the one-layer argument of Theorem 3 applied per layer (``v~ = v``, ``H~
    = (d'/d) H``) they stay equal at every step.

    Parameters
    ----------
    model : DeepNQF
    Ws : list of (p_l, d_l) initial weights
    lr : float or one per layer
    bases : list of (p_l, k_l) orthonormal bases (e.g. from
    :func:`structure_subspace`)
    rng : optional, randomises the realisation of the small weights

    Returns
    -------
    small : DeepNQF
    Ws_small : list of (p_l, k_l + 1)
    lrs_small : list of float

    Raises
    ------
    ValueError
        If a basis has the wrong shape or is not orthonormal, or ``d_l <= k_l +
        1``.
    """
    if not isinstance(model, DeepNQF):
        raise TypeError(f"model must be a DeepNQF, got {type(model).__name__}")
    Ws = model._Ws(Ws)
    lrs = model._lrs(lr)
    bases = _list("bases", bases)
    if len(bases) != model.L:
        raise ValueError(
            f"bases must hold one basis per layer ({model.L}), got "
            f"{len(bases)}"
        )
    layers, Ms_small, mus_small, widths, lrs_small = [], [], [], [], []
    for l, (layer, W, V, a) in enumerate(zip(model.layers, Ws, bases, lrs)):
        V = _tensor(f"bases[{l}]", V, ndim_min=2)
        if W.ndim != 2:
            raise ValueError(
                f"Ws[{l}] must be a single (p, d) matrix for compression, "
                f"got {tuple(W.shape)}"
            )
        if V.ndim != 2 or V.shape[0] != layer.p:
            raise ValueError(
                f"bases[{l}] must have shape ({layer.p}, k), got "
                f"{tuple(V.shape)}"
            )
        if not torch.allclose(
            V.T @ V, torch.eye(V.shape[1], dtype=DTYPE), atol=1e-10
        ):
            raise ValueError(f"bases[{l}] must have orthonormal columns")
        d, d_small = W.shape[1], V.shape[1] + 1
        if d <= d_small:
            raise ValueError(
                f"layer {l}: width d = {d} is not larger than k + 1 = "
                f"{d_small}: nothing to compress"
            )
        P = V @ V.T
        W = W.detach()
        M, mu = W @ W.T, W.sum(1)
        Ms_small.append((d / d_small) * P @ M @ P)
        mus_small.append(P @ mu)
        widths.append(d_small)
        layers.append(ScaledLayer(layer, d_small / d))
        lrs_small.append(a * d / d_small)
    Ms_small = [0.5 * (M + M.T) for M in Ms_small]
    return (
        DeepNQF(layers),
        realize_deep(Ms_small, mus_small, widths, rng=rng),
        lrs_small,
    )
