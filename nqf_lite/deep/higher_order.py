"""Beyond the quadratic form: the expansion of a symmetric module to any order.

Theorem 13 of the paper (App. B.1, Eqs. 200-203): a permutation-symmetric
module ``f(W; x)`` that is ``K + 1`` times differentiable satisfies, near
``W = 0``,

.. math::

    f(W) = f(0) + \\sum_{k=1}^{K} \\sum_{\\lambda \\vdash k}
           \\sum_{i_1, \\dots, i_m \\,\\mathrm{distinct}}
           T_\\lambda\\big[w_{i_1}^{\\otimes c_1}, \\dots, w_{i_m}^{\\otimes
           c_m}\\big]
           + O(\\|W\\|^{K+1}),

one symmetric tensor ``T_lambda`` of order ``k`` per integer partition
``lambda = (c_1 >= ... >= c_m)`` of ``k``. The sum runs over *ordered* tuples
of distinct neurons, so (Eq. 202, with the combinatorial constant written out)

.. math::

    T_\\lambda = \\frac{C_\\lambda}{k!} D_\\lambda
               = \\frac{D_\\lambda}{\\prod_r c_r! \\, \\prod_j n_j!},

where ``D_lambda`` is the ``k``-th derivative at the origin taken ``c_1`` times
with respect to neuron 1, ``c_2`` times to neuron 2, ... and ``n_j`` counts the
parts of ``lambda`` equal to ``j`` (the tuples that only relabel equal parts).
At ``k = 2`` this is Theorem 12 (Eq. 196): ``T_(2) = A_s`` and ``T_(1,1) = B``,
so the NQF's structure matrix is ``A = T_(2) - T_(1,1)``.

:func:`theorem13` computes every ``T_lambda`` by automatic differentiation
(``torch.func``).  :class:`NeuralForm` keeps the expansion of an *additive*
module ``f = sum_i phi(w_i; x)`` (where only the one-part partitions survive)
to order ``K`` on a data set and trains it by gradient descent; at ``K = 3`` it
is the *neural cubic form*, the next term after the NQF that the paper's
Limitation 3 (Section 9) names as the source of plateaus the NQF cannot
produce.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from nqf_lite._checks import as_array, integer, positive
from nqf_lite.deep.symmetric_expansion import (
    ADDITIVE_RTOL,
    MAX_BYTES,
    Module,
    SymmetricExpansion,
    call_scalar,
    partition_weight,
    partitions,
    theorem13,
)

__all__ = [
    "MAX_BYTES",
    "NeuralForm",
    "SymmetricExpansion",
    "gd_train",
    "partition_weight",
    "partitions",
    "theorem13",
]


def gd_train(
    predict: Callable[[torch.Tensor], torch.Tensor],
    W0: object,
    y: object,
    lr: float,
    n_steps: int,
    every: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full-batch gradient descent on ``L = (1/m) sum_n (f_n - y_n)^2`` (the
    loss of Eq. 26).

    Parameters
    ----------
    predict : callable ``W -> (..., m) tensor``
        The model's outputs on the whole data set at weights ``W`` (float64
        torch).  Leading axes are independent ensemble members: each member
        descends its own loss (their losses are summed before differentiating,
        which leaves every member's gradient unchanged).
    W0 : array_like
        Initial weights (any shape ``predict`` accepts).
    y : array_like, shape (m,)
        Targets.
    lr : float
        Learning rate; time is ``t = lr * step``.
    n_steps : int
        Number of updates.
    every : int
        Record the loss every ``every`` steps (steps ``0, every, ... <=
        n_steps``).

    Returns
    -------
    t : ndarray
        ``lr * step`` of the records.
    L : ndarray, shape (n_records, ...)
        Loss of every member at the recorded steps.
    W : ndarray
        Final weights.
    """
    if not callable(predict):
        raise TypeError(
            "predict must be callable as predict(W), got "
            f"{type(predict).__name__}"
        )
    W = torch.tensor(as_array("W0", W0), requires_grad=True)
    if W.ndim == 0 or W.numel() == 0:
        raise ValueError(
            f"W0 must hold at least one weight, got shape {tuple(W.shape)}"
        )
    yt = torch.as_tensor(as_array("y", y, ndim=1))
    if yt.numel() == 0:
        raise ValueError("y must hold at least one target")
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=1)
    every = integer("every", every, minimum=1)
    steps = np.arange(0, n_steps + 1, every)
    records = []
    for s in range(n_steps + 1):
        out = predict(W)
        if out.shape[-1:] != yt.shape:
            raise ValueError(
                f"predict(W) must return shape (..., {yt.shape[0]}) like y, "
                f"got {tuple(out.shape)}"
            )
        loss = ((out - yt) ** 2).mean(dim=-1)
        if s % every == 0:
            records.append(loss.detach().numpy().copy())
        if s == n_steps:
            if not torch.isfinite(
                loss
            ).all():  # the final weights, recorded or not
                raise FloatingPointError(
                    "gradient descent diverged (non-finite loss) at the "
                    "last step; lower lr"
                )
            break
        (grad,) = torch.autograd.grad(loss.sum(), W)
        with torch.no_grad():
            W -= lr * grad
    L = np.stack(records)
    if not np.all(np.isfinite(L)):
        raise FloatingPointError(
            "gradient descent diverged (non-finite loss); lower lr"
        )
    return lr * steps, L, W.detach().numpy()


class NeuralForm:
    """The expansion of an additive module kept to order ``K`` on a data set
    (Theorem 13).

    For ``f(W; x) = sum_i phi(w_i; x)`` only the one-part partitions survive in
    Eq. 200, so

    .. math::

        f_K(W; x_n) = f_0(x_n) + \\sum_{i=1}^d \\sum_{k=1}^K
        T_k(x_n)[w_i^{\\otimes k}],

    ``T_k = T_(k)``.  ``K = 2`` is the NQF (Eq. 4, with ``g = T_1``); ``K = 3``
    is the *neural cubic form*.

    Parameters
    ----------
    f0 : array_like, shape (m,)
        ``f(0; x_n)``.
    T : sequence of array_like
        ``T[k-1]`` of shape ``(m,) + (p,) * k`` for ``k = 1..K``.
    """

    def __init__(self, f0: object, T: Sequence[object]) -> None:
        self.f0 = as_array("f0", f0, ndim=1)
        if self.f0.size == 0:
            raise ValueError(
                "f0 must hold one value per data point (m >= 1), got none"
            )
        if isinstance(
            T, (str, bytes, np.ndarray, torch.Tensor)
        ) or not isinstance(T, Sequence):
            raise TypeError(
                "T must be a list of tensors T[k-1] of shape (m,) + "
                f"(p,)*k, got {type(T).__name__}"
            )
        if len(T) == 0:
            raise ValueError("T must hold at least the order-1 tensors")
        m = self.f0.size
        Ts = []
        for k, Tk in enumerate(T, start=1):
            Tk = as_array(f"T[{k - 1}]", Tk, ndim=k + 1)
            p = Tk.shape[1]
            if Tk.shape != (m,) + (p,) * k:
                raise ValueError(
                    f"T[{k - 1}] must have shape (m,) + (p,)*{k} = "
                    f"{(m,) + (p,) * k}, got {Tk.shape}"
                )
            Ts.append(Tk)
        if len({Tk.shape[1] for Tk in Ts}) != 1:
            raise ValueError("all T[k] must share the same p")
        self.T = tuple(Ts)
        self._Tflat = tuple(torch.as_tensor(Tk.reshape(m, -1)) for Tk in Ts)

    @property
    def order(self) -> int:
        """The truncation order ``K``."""
        return len(self.T)

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return int(self.T[0].shape[1])

    @property
    def m(self) -> int:
        """Number of data points."""
        return int(self.f0.size)

    @classmethod
    def from_module(
        cls,
        f: Module,
        xs: Sequence[Any],
        p: int,
        order: int,
        d: int,
        max_bytes: int = MAX_BYTES,
    ) -> NeuralForm:
        """Expand ``f`` at every input to ``order`` (:func:`theorem13` at
        ``xs[0]``, then one neuron).

        The first input is expanded with all partitions (and the symmetry and
        smoothness checks) to confirm that ``f`` is additive: every
        cross-neuron tensor must vanish.  The other inputs need only one
        neuron.

        Parameters
        ----------
        f : callable ``f(W, x) -> scalar tensor``
        xs : sequence
            The ``m`` inputs.
        p : int
        order : int
            ``K >= 1``.
        d : int
            The width the form will be used at (``f0`` is ``f(0)`` at this
            width).
        max_bytes : int

        Raises
        ------
        ValueError
            If ``f`` is not additive (a cross-neuron tensor is non-zero).
        """
        if len(xs) == 0:
            raise ValueError("xs must hold at least one input")
        d = integer("d", d, minimum=1)
        first = theorem13(
            f,
            xs[0],
            p,
            order,
            d=max(min(order, d), 2),
            check=True,
            max_bytes=max_bytes,
        )
        scale = (
            max(float(np.abs(T).max()) for T in first.tensors.values()) + 1.0
        )
        if first.cross_size() > ADDITIVE_RTOL * scale:
            raise ValueError(
                "NeuralForm needs an additive module f = sum_i phi(w_i; "
                "x): its cross-neuron "
                "tensors of Eq. 200 must vanish, but max |T_lambda| over "
                "partitions with >= 2 "
                f"parts is {first.cross_size():.3g} at xs[0]"
            )
        f0 = np.empty(len(xs))
        T = [np.empty((len(xs),) + (p,) * k) for k in range(1, order + 1)]
        for n, x in enumerate(xs):
            single = theorem13(
                f, x, p, order, d=1, check=False, max_bytes=max_bytes
            )
            f0[n] = float(
                call_scalar(
                    f, torch.zeros(p, d, dtype=torch.float64), x
                ).detach()
            )
            for k in range(1, order + 1):
                T[k - 1][n] = single.tensors[(k,)]
        return cls(f0, T)

    def truncate(self, order: int) -> NeuralForm:
        """The same expansion kept to a lower ``order`` (``2`` gives the
        NQF)."""
        order = integer("order", order, minimum=1)
        if order > self.order:
            raise ValueError(f"order must be <= {self.order}, got {order}")
        return NeuralForm(self.f0, self.T[:order])

    def predict_torch(self, W: torch.Tensor) -> torch.Tensor:
        """``f_K(W; x_n)`` for all ``n`` as a differentiable torch tensor.

        ``W`` has shape ``(..., p, d)``; leading axes are independent members
        and the result has shape ``(..., m)``.
        """
        if W.ndim < 2 or W.shape[-2] != self.p:
            raise ValueError(
                f"W must have shape (..., p, d) with p = {self.p}, got "
                f"{tuple(W.shape)}"
            )
        batch = W.shape[:-2]
        Wb = W.reshape(-1, *W.shape[-2:])  # members on one axis "b"
        out = torch.as_tensor(self.f0).expand(Wb.shape[0], -1)
        power = Wb  # the k-fold outer power of every neuron, (b, p**k, d)
        for k, Tk in enumerate(self._Tflat, start=1):
            if k > 1:
                power = (power[:, :, None, :] * Wb[:, None, :, :]).reshape(
                    Wb.shape[0], -1, Wb.shape[-1]
                )
            out = out + (Tk @ power).sum(-1)
        return out.reshape(*batch, -1)

    def predict(self, W: object) -> np.ndarray:
        """``f_K(W; x_n)``, shape ``(..., m)``, for weights ``W`` of shape
        ``(..., p, d)``."""
        W = as_array("W", W)
        return self.predict_torch(torch.as_tensor(W)).numpy()

    def train(
        self, W0: object, y: object, lr: float, n_steps: int, every: int = 1
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Full-batch GD on the form (see :func:`gd_train`); returns
        ``t, L, W``."""
        W0 = as_array("W0", W0)
        if W0.ndim < 2 or W0.shape[-2] != self.p:
            raise ValueError(
                f"W0 must have shape (..., p, d) with p = {self.p}, got "
                f"{W0.shape}"
            )
        return gd_train(self.predict_torch, W0, y, lr, n_steps, every=every)
