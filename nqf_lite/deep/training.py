"""Training a deep NQF: explicit (S)GD on the weights and the closed dynamics
of its order parameters (paper Theorem 14, Eqs. 220-225).

:class:`DeepTraining` is a mixin of :class:`~nqf_lite.deep.deep_nqf.DeepNQF`
holding its gradient, step and training methods.
"""

from __future__ import annotations

import torch

from nqf_lite.deep.realisation import finite_step, weight_moments

__all__ = [
    "DeepTraining",
]


class DeepTraining:
    """Gradients, steps and training loops of a deep NQF (a mixin of
    :class:`~nqf_lite.deep.deep_nqf.DeepNQF`, whose forward pass, loss and
    argument checks it uses)."""

    def _grad_W(self, x, y, w, Ws: list[torch.Tensor]) -> list[torch.Tensor]:
        Ws = [W.detach().requires_grad_(True) for W in Ws]
        return list(
            torch.autograd.grad(self._loss(x, y, w, *weight_moments(Ws)), Ws)
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
            finite_step(W.detach() - a * G, a)
            for W, G, a in zip(Ws, grads, lrs)
        ]

    def gd_step(
        self,
        x: object,
        y: object,
        Ws: object,
        lr: object,
        weights: object = None,
    ) -> list[torch.Tensor]:
        """One explicit (S)GD step on every layer's weights,
        ``W^(l) -= lr_l dL/dW^(l)`` (Eq. 220).

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
            new_M.append(
                finite_step(0.5 * (M_new + M_new.transpose(-1, -2)), a)
            )
            new_mu.append(finite_step(mu - a * (d * v + Hmu), a))
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

        per layer, with ``v``, ``H`` of :meth:`order_gradients` and
        ``d = widths[l]``.

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
        outs = [self._hidden(x, *weight_moments(Ws))[-1].detach()]
        for b in batches:
            Ws = self._gd_step(
                x[..., b, :],
                y[..., b, :],
                None if w is None else w[..., b, :],
                Ws,
                lrs,
            )
            outs.append(self._hidden(x, *weight_moments(Ws))[-1].detach())
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
