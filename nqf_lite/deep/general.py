"""Deep NQFs with a linear part: Theorem 14 of the paper when ``g`` and ``B``
are not zero.

:class:`nqf_lite.deep.deep_nqf.DeepNQF` obtains the two gradients of Theorem
14, ``v^(l) = dL/dmu^(l)`` and ``H^(l) = G + G^T`` (``G = dL/dM^(l)``), by
automatic differentiation of the loss with respect to the order parameters.
This module writes the paper's definitions out term by term instead (Eqs.
224-225),

.. math::

    v^{(l)} = \\sum_{x\\in\\mathcal B}\\sum_{k=1}^{D_l}
              \\frac{\\partial\\mathcal L}{\\partial h^{(l)}_k(x)}
              \\big(g^{(l)}_k + 2B^{(l)}_k\\mu^{(l)}\\big),\\qquad
    H^{(l)} = \\sum_{x\\in\\mathcal B}\\sum_{k=1}^{D_l}
              2\\,\\frac{\\partial\\mathcal L}{\\partial
              h^{(l)}_k(x)}A^{(l)}_k,

from the back-propagated signals ``dL/dh^(l)`` and the structure of each layer
(:func:`order_gradients_by_structure`), so that the two routes check each
other. It also provides a test bed in which every term of Eq. 219 is present
(:func:`random_general_layer`): with ``g, B != 0`` the vector ``v^(l)`` is not
zero and the width ``d_l`` enters the closed dynamics through ``d_l v^(l)``
(Eqs. 222-223), which is why two stacks with equal ``(M^(l), mu^(l))`` but
different widths part ways.

The loss is the one of :mod:`nqf_lite.deep.deep_nqf` (Eq. 26): squared error
summed over outputs and leading axes, averaged over the ``n`` inputs.
"""

from __future__ import annotations

import numpy as np
import torch

from nqf_lite._checks import integer, positive, sequence, torch_tensor
from nqf_lite.deep.deep_nqf import DeepNQF, FunctionLayer, LayerStructure

__all__ = [
    "backprop_signals",
    "order_gradients_by_structure",
    "random_general_layer",
]

DTYPE = torch.float64


def random_general_layer(
    p: int,
    n_in: int,
    n_out: int,
    rng: np.random.Generator,
    *,
    linear: bool = True,
    features: int = 3,
    scale_g: float = 0.3,
    scale_B: float = 0.1,
    rank: int | None = None,
) -> FunctionLayer:
    """A layer of Definition 2 (Eq. 219) with random smooth structure
    functions.

    With ``z(h) = tanh(R h)`` (``features`` random features of the previous
    output ``h``), every term of Eq. 219 is a linear combination of the
    features:
    ``C_k = c_k . z``, ``g_k = sum_j z_j G_kj``, ``B_k = sum_j z_j S^B_kj`` and
    ``A_k = sum_j z_j S^A_kj``, with fixed random ``c``, ``G`` and symmetric
    ``S^A``, ``S^B`` drawn from ``rng``.

    With ``rank = k < p`` every ``g_k``, ``B_k`` and ``A_k`` lives in a fixed
    random ``k``-dimensional subspace ``Col E`` of ``R^p`` (``E`` orthonormal,
    ``p x k``): ``g = E g'``, ``B = E B' E^T``, ``A = E A' E^T`` with the terms
    ``g'``, ``B'``, ``A'`` of a rank-``k`` layer.  Then the structure span of
    Eq. 236 is ``Col E`` at every input and every step, and Theorem 15 of the
    paper compresses the layer to ``k + 1`` neurons.

    Parameters
    ----------
    p, n_in, n_out : int
        Neuron dimension and the layer's input and output dimensions.
    rng : numpy Generator
        Source of the fixed random coefficients.
    linear : bool
        ``False`` drops ``g`` and ``B`` (a ZGZ layer: ``g = B = 0``).
    features : int
        Number of random features of ``h``.
    scale_g, scale_B : float
        Sizes of the ``g`` and ``B`` coefficients relative to ``A``'s.
    rank : int, optional
        Dimension ``k <= p`` of the subspace that holds the structure
        (default ``p``: no constraint).

    Returns
    -------
    FunctionLayer
    """
    p, n_in, n_out = (
        integer("p", p),
        integer("n_in", n_in),
        integer("n_out", n_out),
    )
    features = integer("features", features)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy Generator, got {type(rng).__name__}"
        )
    if not isinstance(linear, bool):
        raise TypeError(
            f"linear must be True or False, got {type(linear).__name__}"
        )
    scale_g, scale_B = (
        positive("scale_g", scale_g),
        positive("scale_B", scale_B),
    )
    k = p if rank is None else integer("rank", rank)
    if k > p:
        raise ValueError(f"rank must be <= p = {p}, got {k}")

    def coefficients(*shape: int) -> torch.Tensor:
        return torch.as_tensor(rng.standard_normal(shape), dtype=DTYPE)

    def symmetric(scale: float) -> torch.Tensor:
        S = coefficients(n_out, features, k, k)
        return scale * (S + S.transpose(-1, -2)) / (2 * k)

    R = coefficients(features, n_in) / np.sqrt(n_in)
    c = coefficients(n_out, features) / np.sqrt(features)
    SA = symmetric(1.0)
    SB = symmetric(scale_B)
    G = scale_g * coefficients(n_out, features, k) / np.sqrt(k)
    if k < p:  # embed the rank-k terms in a random k-dimensional subspace
        E = torch.linalg.qr(coefficients(p, k))[0]
        SA, SB = (E @ S @ E.T for S in (SA, SB))
        SA, SB = ((S + S.transpose(-1, -2)) / 2 for S in (SA, SB))
        G = G @ E.T

    def structure(h: torch.Tensor) -> LayerStructure:
        z = torch.tanh(h @ R.T)  # (..., n, features)
        C = z @ c.T
        A = torch.einsum("...nj,kjab->...nkab", z, SA)
        if not linear:
            return LayerStructure(C, None, None, A)
        g = torch.einsum("...nj,kja->...nka", z, G)
        B = torch.einsum("...nj,kjab->...nkab", z, SB)
        return LayerStructure(C, g, B, A)

    return FunctionLayer(structure, p, n_in, n_out)


def _stack_inputs(
    model: object, x: object, y: object, Ms: object, mus: object
) -> tuple[
    DeepNQF, torch.Tensor, torch.Tensor, list[torch.Tensor], list[torch.Tensor]
]:
    if not isinstance(model, DeepNQF):
        raise TypeError(f"model must be a DeepNQF, got {type(model).__name__}")
    x, y = torch_tensor("x", x).detach(), torch_tensor("y", y).detach()
    if x.ndim != 2 or x.shape[1] != model.layers[0].n_in:
        raise ValueError(
            f"x must have shape (n, {model.layers[0].n_in}), got "
            f"{tuple(x.shape)}"
        )
    n_out = model.layers[-1].n_out
    if y.ndim == 1 and n_out == 1:
        y = y.unsqueeze(-1)
    if tuple(y.shape) != (x.shape[0], n_out):
        raise ValueError(
            f"y must have shape ({x.shape[0]}, {n_out}), got {tuple(y.shape)}"
        )
    Ms, mus = _per_layer("Ms", Ms, model.L), _per_layer("mus", mus, model.L)
    for l, layer in enumerate(model.layers):
        if tuple(Ms[l].shape) != (layer.p, layer.p):
            raise ValueError(
                f"Ms[{l}] must have shape ({layer.p}, {layer.p}), got "
                f"{tuple(Ms[l].shape)}"
            )
        if tuple(mus[l].shape) != (layer.p,):
            raise ValueError(
                f"mus[{l}] must have shape ({layer.p},), got "
                f"{tuple(mus[l].shape)}"
            )
    return model, x, y, Ms, mus


def _per_layer(name: str, seq: object, L: int) -> list[torch.Tensor]:
    seq = sequence(name, seq, "entry")
    if len(seq) != L:
        raise ValueError(
            f"{name} must hold one entry per layer ({L}), got {len(seq)}"
        )
    return [
        torch_tensor(f"{name}[{l}]", v).detach() for l, v in enumerate(seq)
    ]


def backprop_signals(
    model: DeepNQF, x: object, y: object, Ms: object, mus: object
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The representations ``h^(l)`` and the back-propagated signals
    ``dL/dh^(l)``.

    ``dL/dh^(L) = 2 (f - y) / n`` is the derivative of the loss (Eq. 26); the
    signal of every earlier layer is pulled back through the next layer,
    ``dL/dh^(l) = J_l^T dL/dh^(l+1)`` with ``J_l = dh^(l+1)/dh^(l)`` (one
    vector-Jacobian product per layer, by automatic differentiation of the
    layer's forward pass with respect to its input, never the order
    parameters).

    Parameters
    ----------
    model : DeepNQF
    x : (n, D_0) inputs; y : (n, D_L) targets
    Ms, mus : lists of (p_l, p_l) and (p_l,)

    Returns
    -------
    hs : list of (n, D_l), ``[h^(0) = x, h^(1), ..., h^(L)]``
    deltas : list of (n, D_l), ``[dL/dh^(1), ..., dL/dh^(L)]``
    """
    model, x, y, Ms, mus = _stack_inputs(model, x, y, Ms, mus)
    hs, inputs = [x], []
    for layer, M, mu in zip(model.layers, Ms, mus):
        h_in = hs[-1].detach().requires_grad_(True)
        inputs.append(h_in)
        hs.append(layer.forward(h_in, M, mu))
    delta = 2 * (hs[-1].detach() - y) / x.shape[0]
    deltas = [delta]
    for l in range(
        model.L - 1, 0, -1
    ):  # h^(l+1) = layers[l](h^(l)), h^(l) = inputs[l]
        out = hs[l + 1]
        grad = None
        if out.requires_grad:
            (grad,) = torch.autograd.grad(
                out, inputs[l], grad_outputs=delta, allow_unused=True
            )
        delta = torch.zeros_like(inputs[l]) if grad is None else grad
        deltas.insert(0, delta)
    return [h.detach() for h in hs], [d.detach() for d in deltas]


def order_gradients_by_structure(
    model: DeepNQF, x: object, y: object, Ms: object, mus: object
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``v^(l)`` and ``H^(l)`` of every layer from Eqs. 224-225, term by term.

    With ``delta_{x,k} = dL/dh^(l)_k(x)`` from :func:`backprop_signals` and the
    structure ``(g, B, A)`` of layer ``l`` at ``h^(l-1)(x)``:
    ``v = sum_{x,k} delta_{x,k} (g_k + 2 B_k mu)`` and
    ``H = sum_{x,k} 2 delta_{x,k} A_k``.  This is the paper's definition; it
    does not differentiate the loss with respect to ``(M, mu)``, so it is an
    independent route to
    :meth:`nqf_lite.deep.deep_nqf.DeepNQF.order_gradients`.

    Parameters
    ----------
    model : DeepNQF
    x : (n, D_0) inputs; y : (n, D_L) targets
    Ms, mus : lists of (p_l, p_l) and (p_l,)

    Returns
    -------
    vs : list of (p_l,)
    Hs : list of (p_l, p_l)
    """
    model, x, y, Ms, mus = _stack_inputs(model, x, y, Ms, mus)
    hs, deltas = backprop_signals(model, x, y, Ms, mus)
    vs, Hs = [], []
    for layer, h_prev, delta, mu in zip(model.layers, hs[:-1], deltas, mus):
        _, g, B, A = layer.structure(h_prev)
        H = 2 * torch.einsum("nk,nkij->ij", delta, A)
        v = torch.zeros(layer.p, dtype=DTYPE)
        if g is not None:
            v = v + torch.einsum("nk,nki->i", delta, g)
        if B is not None:
            v = v + 2 * torch.einsum("nk,nkij,j->i", delta, B, mu)
        vs.append(v)
        Hs.append(H)
    return vs, Hs
