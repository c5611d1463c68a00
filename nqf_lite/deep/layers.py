"""The layers of a deep NQF (paper App. B.4, Definition 2, Eq. 219).

A layer maps ``h^(l-1)`` to ``h^(l)_k = C_k + g_k^T mu + mu^T B_k mu + Tr[M
A_k]`` with a structure ``{C, g, B, A}`` that depends on ``h^(l-1)`` only
(:class:`LayerStructure`).  :class:`MLPLayer` is a two-layer MLP block (its
inner activation linearised, Prop. 1), :class:`LinearLayer` one weight matrix,
:class:`AttentionLayer` linear attention, :class:`FunctionLayer` any structure
given as a function, and :class:`ScaledLayer` a layer whose ``M`` is scaled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from nqf_lite._checks import (
    integer,
    number,
    positive,
    sequence,
    torch_tensor,
)

__all__ = [
    "AttentionLayer",
    "FunctionLayer",
    "Layer",
    "LayerStructure",
    "LinearLayer",
    "MLPLayer",
    "ScaledLayer",
    "mlp_layers",
    "mlp_weights",
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
    to leading order, ``h_k = phi'(0) sum_i V_ki u_i . a``: neuron
    ``w_i = (u_i, V_:i)`` in ``R^{n_in + n_out}``, ``C = g = B = 0`` and
    ``A_k = (phi'(0)/2) [[0, a e_k^T], [e_k a^T, 0]]``. Then
    ``Tr[M A_k] = phi'(0) (a^T M_{uV})_k`` with
    ``M_{uV}`` the (n_in, n_out) off-diagonal block of ``M``, which
    :meth:`forward` uses directly.

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
        self.slope = number("slope", slope)

    def _a(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.act is None else self.act(h)

    def linear_map(self, M: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        """``T = phi'(0) M_{uV}^T`` (n_out, n_in): for neurons
        ``(u_i, V[:, i])``, ``T = V U`` (without ``act``)."""
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

    ``h_k = sum_j V_kj a_j = g_k^T mu``, ``g_k = vec(e_k a^T)`` (entry
    ``k + n_out j`` is ``a_j``),

    ``C = 0``, ``B = A = 0``: Definition 2 with only its linear term, exact (no
    expansion). Width ``d = 1`` is the plain matrix ``V``; ``d`` copies are an
    over-parametrised one whose ``mu`` moves ``d`` times as fast (Eq. 222,
    ``H = 0``). The unpaired last matrix of an MLP of odd depth is this layer
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


def mlp_layers(
    dims: Sequence[int],
    act: Callable[[torch.Tensor], torch.Tensor] | None = torch.tanh,
    slope: float = 1.0,
) -> list[Layer]:
    """The layers of the deep NQF of a bias-free MLP
    ``x -> W_L act(... act(W_1 x))`` of any depth ``L >= 1`` (App. B.4).

    The weight matrices pair up into two-layer blocks
    ``(W_1, W_2), (W_3, W_4), ...``, each an :class:`MLPLayer` (its inner
    activation linearised with ``slope = act'(0)``, Prop. 1); the first
    block sees ``x``, every later one ``act`` of the previous block's
    output. For odd ``L`` the last matrix ``W_L`` is a :class:`LinearLayer`
    on ``act`` of the last block's output (``x`` itself when ``L = 1``),
    which is exact. :func:`mlp_weights` gives the matching weights.

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
        integer(f"dims[{i}]", d) for i, d in enumerate(sequence("dims", dims))
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
            LinearLayer(dims[-2], dims[-1], act=None if n_mat == 1 else act)
        )
    return layers


def mlp_weights(Ws: Sequence[object]) -> list[torch.Tensor]:
    """NQF weights of the MLP matrices ``Ws`` (each (..., D_l, D_{l-1})),
    paired as :func:`mlp_layers` pairs them.

    A block ``(U, V) = (W_{2j+1}, W_{2j+2})`` becomes ``[U^T; V]`` (neuron
    ``i`` = hidden unit ``i``: its input weights and its output weights);
    an unpaired last ``W_L`` becomes its column-major ``vec`` as one
    neuron, (..., D_L D_{L-1}, 1).
    """
    Ws = [
        torch_tensor(f"Ws[{l}]", W, 2, differentiated=True)
        for l, W in enumerate(sequence("Ws", Ws))
    ]
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
        out.append(last.transpose(-1, -2).reshape(last.shape[:-2] + (-1, 1)))
    return out
