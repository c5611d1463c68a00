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

because ``d mu / d W = 1^T`` and ``dM = dW W^T + W dW^T``. For the structure of
Eq. 219 (``A``, ``B`` symmetric)
``dL/dmu = sum_x sum_k (dL/dh_k)(g_k + 2 B_k mu)`` is Eq. 224 and
``G + G^T = sum_x sum_k 2 (dL/dh_k) A_k`` is Eq. 225. So
``v^(l)`` and ``H^(l)`` are the gradients of the loss with respect to
``mu^(l)`` and (the symmetrised) ``M^(l)``, both functions of the order
parameters alone, and multiplying out ``W' = W - lr (v 1^T + H W)`` gives Eqs.
222-223 (:meth:`DeepNQF.closed_step`), exactly as in the one-layer Theorem 2.

Theorem 14: two deep NQFs with equal per-layer ``(M^(l), mu^(l))`` at ``t = 0``
(whatever their widths ``d_l``) stay equal and predict the same at every step.
Theorem 15: with ``V_l`` an orthonormal basis of the structure span of layer
``l`` (Eq. 236), width ``d'_l = k_l + 1``, ``A~^(l) = (d'_l/d_l) A^(l)`` and
layer learning rate ``lr~_l = (d_l/d'_l) lr_l`` train identically
(:func:`compress_deep`).

Loss: as in :mod:`nqf_lite.expansion.form`,
``L = (1/|b|) sum_{n in b} sum_k w_nk (f_nk - y_nk)^2`` (the mean over the
batch, Eq. 26) with per-output weights ``w_nk >= 0`` (all ones by default; a
0/1 mask of the observed entries gives matrix completion, a loss over the
observed entries only). Everything is torch float64. Leading batch axes
``...`` on the weights (and the matching ``x``, ``y``) train independent
members at once: the loss is summed over them, so each member gets its own
gradient.

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

Layout.  The layers live in :mod:`nqf_lite.deep.layers`, the moments,
realisation and compression in :mod:`nqf_lite.deep.realisation`;
:class:`DeepNQF` takes its argument checks from
:class:`~nqf_lite.deep.inputs.DeepInputs` and its gradients, steps and
training loops from :class:`~nqf_lite.deep.training.DeepTraining`.  Every name
is re-exported here.

Validation.  Order parameters passed in (``Ms``, ``mus``) must be finite,
symmetric and positive semi-definite (and, with widths, realisable: ``M - mu
mu^T/d`` PSD of rank ``<= d - 1``); ``M`` is symmetrised, so the result does
not depend on which triangle of a (slightly) asymmetric ``M`` was given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from nqf_lite._checks import sequence
from nqf_lite.deep.inputs import DeepInputs
from nqf_lite.deep.layers import (
    AttentionLayer,
    FunctionLayer,
    Layer,
    LayerStructure,
    LinearLayer,
    MLPLayer,
    ScaledLayer,
    mlp_layers,
    mlp_weights,
)
from nqf_lite.deep.realisation import (
    compress_deep,
    deep_moments,
    realize_deep,
    structure_subspace,
    weight_moments,
)
from nqf_lite.deep.training import DeepTraining

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
    "mlp_layers",
    "mlp_weights",
    "realize_deep",
    "structure_subspace",
]


class DeepNQF(DeepInputs, DeepTraining):
    """An ``L``-layer NQF (Definition 2, Eq. 219) with explicit and closed
    training (Thm 14).

    Parameters
    ----------
    layers : sequence of Layer
        ``layers[l].n_in`` must equal ``layers[l-1].n_out``.

    Notes
    -----
    Every loss, gradient and training method takes optional per-output
    ``weights`` ``w_nk >= 0`` (broadcastable to ``y``; the loss is
    ``(1/|b|) sum w_nk (f_nk - y_nk)^2``): a 0/1 mask of the observed
    entries trains on those entries only (matrix completion).
    """

    def __init__(self, layers: Sequence[Layer]) -> None:
        layers = sequence("layers", layers)
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
    ) -> DeepNQF:
        """The deep NQF of a bias-free MLP ``x -> W_L act(... act(W_1 x))``
        of any depth (App. B.4): the layers of
        :func:`~nqf_lite.deep.layers.mlp_layers`, whose parameters these
        are; :meth:`mlp_weights` gives the matching weights."""
        return cls(mlp_layers(dims, act, slope))

    #: NQF weights of the MLP matrices
    #: (:func:`~nqf_lite.deep.layers.mlp_weights`)
    mlp_weights = staticmethod(mlp_weights)

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
        return self._hidden(self._x(x), *weight_moments(self._Ws(Ws)))[-1]

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
        return self._product(*weight_moments(self._Ws(Ws)))

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
