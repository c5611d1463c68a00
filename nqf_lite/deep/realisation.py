"""Order parameters of a deep NQF: moments, realisation and compression
(paper Definition 2, Theorem 14, App. B.4).

:func:`deep_moments` gives the per-layer ``(M^(l), mu^(l))`` of weights,
:func:`realize_deep` weights of given widths with given order parameters (the
setup of Theorem 14), and :func:`structure_subspace` / :func:`compress_deep`
the subspace the structure of a layer sees and the layer compressed onto it.
The checks :func:`order_parameter`, :func:`check_layer_realisable` and
:func:`finite_step` are shared with :class:`~nqf_lite.deep.deep_nqf.DeepNQF`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from nqf_lite._checks import (
    SYM_RTOL,
    fraction,
    generator,
    sequence,
    torch_tensor,
    width,
)
from nqf_lite.deep.layers import DTYPE, Layer, ScaledLayer
from nqf_lite.expansion.form import (
    REALIZABLE_RTOL,
    check_realizable,
    realize_moments,
)

if TYPE_CHECKING:
    from nqf_lite.deep.deep_nqf import DeepNQF

__all__ = [
    "compress_deep",
    "deep_moments",
    "realize_deep",
    "structure_subspace",
]


def weight_moments(
    Ws: list[torch.Tensor],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(M, mu)`` of validated weights (no checks: ``W W^T`` is a valid order
    parameter)."""
    return [W @ W.transpose(-1, -2) for W in Ws], [W.sum(-1) for W in Ws]


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
    return weight_moments(
        [
            torch_tensor(f"Ws[{l}]", W, 2, differentiated=True)
            for l, W in enumerate(sequence("Ws", Ws))
        ]
    )


def order_parameter(name: str, M: torch.Tensor) -> torch.Tensor:
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


def check_layer_realisable(
    l: int, M: torch.Tensor, mu: torch.Tensor, d: int
) -> None:
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


def finite_step(X: torch.Tensor, lr: float) -> torch.Tensor:
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

    Layer by layer :func:`nqf_lite.realize_moments` (``W W^T = M``,
    ``W 1 = mu``).

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
        sequence("Ms", Ms),
        sequence("mus", mus),
        sequence("widths", widths),
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
    h = torch_tensor("h", h, ndim_min=2)
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
    bases : list of (p_l, k_l) arrays
        Orthonormal bases (e.g. from :func:`structure_subspace`).
    rng : optional, randomises the realisation of the small weights

    Returns
    -------
    small : DeepNQF
    Ws_small : list of (p_l, k_l + 1)
    lrs_small : list of float

    Raises
    ------
    ValueError
        If a basis has the wrong shape or is not orthonormal, or
        ``d_l <= k_l + 1``.
    """
    from nqf_lite.deep.deep_nqf import DeepNQF  # it imports this module

    if not isinstance(model, DeepNQF):
        raise TypeError(f"model must be a DeepNQF, got {type(model).__name__}")
    Ws = model._Ws(Ws)
    lrs = model._lrs(lr)
    bases = sequence("bases", bases)
    if len(bases) != model.L:
        raise ValueError(
            f"bases must hold one basis per layer ({model.L}), got "
            f"{len(bases)}"
        )
    layers, Ms_small, mus_small, widths, lrs_small = [], [], [], [], []
    for l, (layer, W, V, a) in enumerate(zip(model.layers, Ws, bases, lrs)):
        V = torch_tensor(f"bases[{l}]", V, ndim_min=2)
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
