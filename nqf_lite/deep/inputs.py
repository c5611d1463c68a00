"""The checks of a :class:`~nqf_lite.deep.deep_nqf.DeepNQF`'s arguments
(paper Definition 2, Eq. 219).

:class:`DeepInputs` is a mixin of :class:`~nqf_lite.deep.deep_nqf.DeepNQF`:
inputs, targets and loss weights, order parameters (finite, symmetric, PSD,
realisable with widths), weights, learning rates, widths and minibatch
schedules, each checked against the layers, with errors naming the argument.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nqf_lite._checks import (
    integer,
    positive,
    sequence,
    torch_tensor,
    width,
)
from nqf_lite.deep.realisation import (
    check_layer_realisable,
    order_parameter,
)

__all__ = [
    "DeepInputs",
]


class DeepInputs:
    """Argument checks of a deep NQF (a mixin: needs ``layers`` and ``L``)."""

    layers: list
    L: int

    # -------------------------------------------------------------- validation
    def _x(self, x: object) -> torch.Tensor:
        x = torch_tensor("x", x, ndim_min=2)
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
        y = torch_tensor("y", y)
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
            w = torch_tensor("weights", weights)
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
        Ms, mus = sequence("Ms", Ms), sequence("mus", mus)
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
                torch_tensor(f"Ms[{l}]", Ms[l], 2, differentiated=True),
                torch_tensor(f"mus[{l}]", mus[l], 1, differentiated=True),
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
                M = order_parameter(f"Ms[{l}]", M)
                if widths is not None:
                    check_layer_realisable(l, M, mu, widths[l])
            out_M.append(M)
            out_mu.append(mu)
        return out_M, out_mu

    def _Ws(self, Ws: object) -> list[torch.Tensor]:
        Ws = sequence("Ws", Ws)
        if len(Ws) != self.L:
            raise ValueError(
                f"Ws must hold one weight matrix per layer ({self.L}), got "
                f"{len(Ws)}"
            )
        out = []
        for l, (W, layer) in enumerate(zip(Ws, self.layers)):
            W = torch_tensor(f"Ws[{l}]", W, 2, differentiated=True)
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

    def _widths(self, widths: object) -> list[int]:
        widths = sequence("widths", widths)
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
        batches = sequence("batches", batches)
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
