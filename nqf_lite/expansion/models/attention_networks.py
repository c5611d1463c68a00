"""The batched torch attention networks of Props. 2-3 (Eqs. 7-9) and their
twins.

- :class:`QKAttention`: query-key-only heads with a fixed readout (Prop. 3,
  Eq. 9);
- :class:`MultiHeadAttention`: multi-head attention whose twin is
  ``f = sum_h W_O,h W_V,h xbar`` (Prop. 2, Eq. 8).

Both are :class:`~nqf_lite.expansion.models.blocks.Network` s: a forward of
``d`` symmetric units (the heads) and its quadratic form; the closed forms of
their structure matrices are in :mod:`nqf_lite.expansion.models.attention`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from nqf_lite._checks import (
    check_sizes,
    integer,
    positive,
    tensor,
    torch_generator,
)
from nqf_lite.expansion.models.blocks import (
    Inputs,
    Network,
    gaussian_parameter,
    whitened_gaussian,
)

__all__ = ["QKAttention", "MultiHeadAttention"]


def _check_tokens(obj: Network, inputs: Inputs, single: bool) -> tuple:
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
        raise TypeError(
            "inputs must be a pair (x, X): query tokens and context tokens"
        )
    x = tensor("x (query)", inputs[0], 1 if single else 2)
    X = tensor("X (context)", inputs[1], 2 if single else 3)
    check_sizes("x (query)", x, {-1: obj.D})
    check_sizes("X (context)", X, {-1: obj.D})
    if not single and X.shape[0] != x.shape[0]:
        raise ValueError(
            "x and X must hold the same number of samples, got "
            f"{x.shape[0]} and {X.shape[0]}"
        )
    return (x, X)


def _attention(Q: Tensor, K: Tensor, x: Tensor, X: Tensor) -> Tensor:
    """Softmax weights (m, H, N) of the logits
    ``X^T W_K,h^T W_Q,h x / sqrt(d_k)`` of every head."""
    G = torch.einsum("hkd,hke->hde", K, Q)  # W_K,h^T W_Q,h, (H, D, D)
    u = torch.einsum("hde,me->mhd", G, x)
    logits = torch.bmm(u, X.transpose(1, 2)) / math.sqrt(
        Q.shape[1]
    )  # (m, H, N)
    return torch.softmax(logits, dim=-1)


def _context_sigma_times(X: Tensor, z: Tensor) -> Tensor:
    """``Sigma_X z`` for every sample, without forming
    ``Sigma_X = X^T X / N - xbar xbar^T``."""
    xbar = X.mean(dim=1)
    return torch.einsum(
        "mnd,mn->md", X, torch.einsum("mnd,md->mn", X, z)
    ) / X.shape[1] - xbar * (xbar * z).sum(-1, keepdim=True)


def _gaussian_tokens(
    m: int, N: int, D: int, seed: int
) -> tuple[Tensor, Tensor]:
    gen = torch_generator(seed)
    return (
        torch.randn(m, D, generator=gen, dtype=torch.float64),
        torch.randn(m, N, D, generator=gen, dtype=torch.float64),
    )


class QKAttention(Network):
    """Query-key-only attention heads with a fixed readout (Prop. 3, Eq. 9).

    ``f_o(x, X) = sum_h c_o^T X softmax(X^T W_K,h^T W_Q,h x / sqrt(d_k))``,
    with ``X`` (D, N) the context, ``x`` the query and ``C = [c_1 .. c_V]`` (D,
    V) fixed.

    Parameters
    ----------
    D, d_k, heads, V : int
        Token dimension, key dimension, number of heads H and outputs.
    sigma, seed : float, int
        Init scale of ``W_Q, W_K`` (N(0, sigma^2)) and seed.
    readout_scale : float
        ``C`` has i.i.d. N(0, readout_scale^2 / D) entries; it is a buffer, not
        trained.
    readout_seed : int
        Seed of ``C`` (a teacher and a student share ``C`` when they share this
        seed).

    Notes
    -----
    Inputs are pairs ``(x, X)`` of shapes (m, D) and (m, N, D) (tokens as
    rows). Unit ``h`` is a head ``[vec W_Q,h; vec W_K,h]`` (p = 2 d_k D).
    """

    def __init__(
        self,
        D: int,
        d_k: int,
        heads: int = 1,
        V: int = 1,
        sigma: float = 0.01,
        seed: int = 0,
        readout_scale: float = 1.0,
        readout_seed: int = 0,
    ) -> None:
        super().__init__(sigma, V, seed)
        self.D, self.d_k, self.heads = (
            integer("D", D),
            integer("d_k", d_k),
            integer("heads", heads),
        )
        self.readout_scale = positive("readout_scale", readout_scale)
        self.readout_seed = integer("readout_seed", readout_seed, minimum=0)
        gen = torch_generator(seed)
        self.Q = gaussian_parameter(
            gen, self.sigma, self.heads, self.d_k, self.D
        )
        self.K = gaussian_parameter(
            gen, self.sigma, self.heads, self.d_k, self.D
        )
        C = torch.randn(
            self.D,
            self.V,
            generator=torch_generator(readout_seed),
            dtype=torch.float64,
        )
        self.register_buffer("C", C * self.readout_scale / math.sqrt(self.D))

    def _config(self) -> dict[str, Any]:
        return dict(
            D=self.D,
            d_k=self.d_k,
            heads=self.heads,
            V=self.V,
            sigma=self.sigma,
            seed=self.seed,
            readout_scale=self.readout_scale,
            readout_seed=self.readout_seed,
        )

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        return _check_tokens(self, inputs, single)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        x, X = inputs
        a = _attention(params["Q"], params["K"], x, X)
        return torch.bmm(a, X).sum(dim=1) @ self.C

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        n = self.d_k * self.D
        return {
            "Q": W[:n].T.reshape(-1, self.d_k, self.D),
            "K": W[n:].T.reshape(-1, self.d_k, self.D),
        }

    def units(self) -> Tensor:
        return (
            torch.cat(
                [
                    self.Q.reshape(self.heads, -1).T,
                    self.K.reshape(self.heads, -1).T,
                ]
            )
            .detach()
            .clone()
        )

    def effective_map(self) -> Tensor:
        return torch.einsum("hkd,hke->de", self.K, self.Q) / math.sqrt(
            self.d_k
        )

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF with effective map
        ``T`` (D, D): ``H C^T xbar + C^T Sigma_X T x``."""
        x, X = self._check_inputs(inputs)
        T = tensor("T", T, 2, (self.D, self.D))
        return (
            self.heads * X.mean(dim=1) + _context_sigma_times(X, x @ T.T)
        ) @ self.C

    def sample_inputs(
        self, m: int, N: int, seed: int = 0, scale: float = 1.0
    ) -> tuple[Tensor, Tensor]:
        """``m`` Gaussian queries (m, D) and contexts of ``N`` tokens (m, N,
        D), entries N(0, scale^2).

        The logits are quadratic in the tokens, so a small ``scale`` keeps them
        small at the teacher's weights too (the quadratic regime of the
        softmax).
        """
        x, X = _gaussian_tokens(
            integer("m", m),
            integer("N", N),
            self.D,
            integer("seed", seed, minimum=0),
        )
        scale = positive("scale", scale)
        return scale * x, scale * X

    def _nqf(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        """The NQF (twin forward):
        ``H C^T xbar + C^T Sigma_X (sum_h W_K,h^T W_Q,h/sqrt(d_k)) x``.

        This is Eq. 10 with ``u = Sigma_X c``.
        """
        x, X = inputs
        T = torch.einsum("hkd,hke->de", params["K"], params["Q"]) / math.sqrt(
            self.d_k
        )
        H = params["Q"].shape[0]
        return (H * X.mean(dim=1) + _context_sigma_times(X, x @ T.T)) @ self.C


class MultiHeadAttention(Network):
    """Multi-head softmax attention with value and output matrices (Prop. 2,
    Eq. 7).

    ``f(x, X) = sum_h W_O,h W_V,h X softmax(X^T W_K,h^T W_Q,h x / sqrt(d_k))``
    with ``W_Q,h, W_K,h`` (d_k, D), ``W_V,h`` (d_v, D) and ``W_O,h`` (V, d_v).

    Parameters
    ----------
    D, d_k, d_v, heads, V : int
        Token, key and value dimensions, number of heads H, outputs.
    sigma, seed : float, int
        Init scale (every entry N(0, sigma^2)) and seed.

    Notes
    -----
    Inputs are pairs ``(x, X)`` of shapes (m, D) and (m, N, D).  Unit ``h`` is
    the head ``[vec W_Q; vec W_K; vec W_V; vec W_O]`` (p = 2 d_k D + d_v D + V
    d_v).
    """

    def __init__(
        self,
        D: int,
        d_k: int,
        d_v: int,
        heads: int = 1,
        V: int = 1,
        sigma: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(sigma, V, seed)
        self.D, self.d_k, self.d_v = (
            integer("D", D),
            integer("d_k", d_k),
            integer("d_v", d_v),
        )
        self.heads = integer("heads", heads)
        gen = torch_generator(seed)
        self.Q = gaussian_parameter(
            gen, self.sigma, self.heads, self.d_k, self.D
        )
        self.K = gaussian_parameter(
            gen, self.sigma, self.heads, self.d_k, self.D
        )
        self.W_V = gaussian_parameter(
            gen, self.sigma, self.heads, self.d_v, self.D
        )
        self.W_O = gaussian_parameter(
            gen, self.sigma, self.heads, self.V, self.d_v
        )

    def _config(self) -> dict[str, Any]:
        return dict(
            D=self.D,
            d_k=self.d_k,
            d_v=self.d_v,
            heads=self.heads,
            V=self.V,
            sigma=self.sigma,
            seed=self.seed,
        )

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        return _check_tokens(self, inputs, single)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        x, X = inputs
        a = _attention(params["Q"], params["K"], x, X)
        E = torch.einsum(
            "hov,hvd->hod", params["W_O"], params["W_V"]
        )  # W_O,h W_V,h
        return torch.einsum("hod,mhd->mo", E, torch.bmm(a, X))

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        sizes = [
            self.d_k * self.D,
            self.d_k * self.D,
            self.d_v * self.D,
            self.V * self.d_v,
        ]
        q, k, v, o = torch.split(W, sizes, dim=0)
        return {
            "Q": q.T.reshape(-1, self.d_k, self.D),
            "K": k.T.reshape(-1, self.d_k, self.D),
            "W_V": v.T.reshape(-1, self.d_v, self.D),
            "W_O": o.T.reshape(-1, self.V, self.d_v),
        }

    def units(self) -> Tensor:
        parts = [self.Q, self.K, self.W_V, self.W_O]
        return (
            torch.cat([t.reshape(self.heads, -1).T for t in parts])
            .detach()
            .clone()
        )

    def effective_map(self) -> Tensor:
        return torch.einsum("hov,hvd->od", self.W_O, self.W_V)

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF with effective map
        ``T`` (V, D): ``T xbar``."""
        _, X = self._check_inputs(inputs)
        return X.mean(dim=1) @ tensor("T", T, 2, (self.V, self.D)).T

    def sample_inputs(
        self, m: int, N: int, seed: int = 0
    ) -> tuple[Tensor, Tensor]:
        """Gaussian queries (m, D) and contexts (m, N, D) whose token means
        ``xbar`` are exactly whitened.

        Each context is ``xbar 1^T`` plus centred Gaussian noise of unit
        variance per token.
        """
        m, N = integer("m", m), integer("N", N)
        x, X = _gaussian_tokens(m, N, self.D, integer("seed", seed, minimum=0))
        xbar = torch.as_tensor(whitened_gaussian(m, self.D, seed))
        return x, X - X.mean(dim=1, keepdim=True) + xbar.unsqueeze(1)

    def _nqf(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        """The NQF (twin forward): ``f = sum_h W_O,h W_V,h xbar`` (Eq. 8).

        ``W_Q`` and ``W_K`` stay in the module (same parameters as the network)
        but do not enter the output: at quadratic order they never move.
        """
        _, X = inputs
        return torch.einsum(
            "hov,hvd,md->mo", params["W_O"], params["W_V"], X.mean(dim=1)
        )
