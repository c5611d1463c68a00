"""The neural quadratic form of a data set (paper Sections 3-4, Eq. 20).

The order parameters of a layer are ``M = W Wᵀ`` and ``μ = W 1``
(:func:`moments`). The general NQF of a data set (paper Eq. 20) predicts, for
sample ``n`` (and output ``o`` when there are ``V`` of them),

.. math::

    f_n = f_0(x_n) + g(x_n)^\\top\\mu + \\mu^\\top B(x_n)\\mu + \\mathrm{Tr}[M
    A(x_n)].

With the loss of Eq. 26, ``L = (1/|b|) sum_{n in b} sum_o (f_no - y_no)^2``,
``l'_no = dL/df_no = 2 (f_no - y_no)/|b|`` and

.. math::

    v = \\sum_{n,o} \\ell'_{no} (g_{no} + 2 B_{no}\\mu), \\qquad
    H = \\sum_{n,o} 2\\ell'_{no} A_{no}, \\qquad
    \\nabla_W L = v\\mathbf 1^\\top + H W .

Theorem 2 (Eqs. 23-24) follows by multiplying out
``W' = W - lr (v 1^T + H W)``: the training of an NQF, explicit on
``W`` or closed on ``(M, μ)``, with its
:class:`~nqf_lite.dynamics.training.TrainingRecord`, lives in
:mod:`nqf_lite.dynamics.training` (:meth:`NQF.train`, :meth:`NQF.train_closed`,
:meth:`NQF.gd_step` and :meth:`NQF.closed_step` call it). The tangent kernel of
Prop. 8 (App. B.6) is a function of ``(M, μ)`` too (:func:`ntk_from_moments`).
:func:`realize_moments` (:mod:`nqf_lite.expansion.order`) goes back from
``(M, μ)`` to weights; :func:`random_nqf` draws a test bed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nqf_lite._checks import (
    as_array,
    batch_indices,
    check_shape,
    check_symmetric,
    integer,
    nonnegative,
    width,
)

# the order parameters and their realisability live in
# nqf_lite.expansion.order; they are re-exported here (their home in 0.3)
from nqf_lite.expansion.order import (
    REALIZABLE_RTOL,
    check_realizable,
    frame_orthogonal_to_ones,
    moments,
    realize_moments,
)

__all__ = [
    "NQF",
    "REALIZABLE_RTOL",
    "check_realizable",
    "coefficients",
    "frame_orthogonal_to_ones",
    "moments",
    "ntk_from_moments",
    "random_nqf",
    "realize_moments",
]


def coefficients(
    A, g=None, B=None, f0=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contract of :class:`NQF`, checked once: ``(A, g, B, f0)`` as
    contiguous float64 arrays of matching shapes (zeros for those not given).

    Raises
    ------
    TypeError
        For a coefficient that is not a real numeric array.
    ValueError
        For NaN or inf, a wrong shape (naming the coefficient and the shape
        expected), an empty ``A`` or a non-symmetric ``A`` or ``B``.
    """
    A = as_array("A", A, ndim=(3, 4))
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(
            f"A must have shape (m, p, p) or (m, V, p, p), got {A.shape}"
        )
    if A.size == 0:
        raise ValueError(
            "A must hold at least one sample and one parameter, got shape "
            f"{A.shape}"
        )
    check_symmetric("A", A)
    lead = A.shape[:-2]
    p = A.shape[-1]
    g = np.zeros(lead + (p,)) if g is None else as_array("g", g)
    check_shape("g", g, lead + (p,))
    B = np.zeros_like(A) if B is None else as_array("B", B)
    check_shape("B", B, A.shape)
    check_symmetric("B", B)
    f0 = np.zeros(lead) if f0 is None else as_array("f0", f0)
    check_shape("f0", f0, lead)
    return tuple(np.ascontiguousarray(c) for c in (A, g, B, f0))


class NQF:
    """The neural quadratic form of a data set of ``m`` inputs (Eq. 20).

    Parameters
    ----------
    A : array, shape (m, p, p) or (m, V, p, p)
        Symmetric structure matrices, one per sample (and output).
    g : array, shape (m, p) or (m, V, p), optional
        Linear coefficients (zero under ZGZ).
    B : array, shape like ``A``, optional
        Symmetric cross-neuron coefficients (zero under ZGZ).
    f0 : array, shape (m,) or (m, V), optional
        Outputs at ``W = 0``.

    Notes
    -----
    The coefficients are validated once, here, and kept flattened
    (``A`` as an ``(m V, p²)`` matrix, so that every prediction is one
    matrix-vector product with ``vec(M)``).  Do not modify ``A``, ``g``,
    ``B`` or ``f0`` in place after construction.
    """

    def __init__(self, A, g=None, B=None, f0=None) -> None:
        self.A, self.g, self.B, self.f0 = coefficients(A, g, B, f0)
        self.m = int(self.A.shape[0])
        self.p = int(self.A.shape[-1])
        self.V = None if self.A.ndim == 3 else int(self.A.shape[1])
        lead = self.f0.shape
        self._zgz = not (np.any(self.g) or np.any(self.B))
        # per-model constants: rows of (sample[, output]) coefficients,
        # flattened over (i, j)
        pp = self.p * self.p
        self._lead = lead
        self._A_rows = self.A.reshape(lead + (pp,))
        self._B_rows = self.B.reshape(lead + (pp,))
        self._A_mat = self.A.reshape(-1, pp)
        self._B_mat = self.B.reshape(-1, pp)
        self._g_mat = self.g.reshape(-1, self.p)
        self._eye = np.eye(self.p)

    # ------------------------------------------------------------------
    # helpers
    @property
    def zgz(self) -> bool:
        """True when ``g = 0`` and ``B = 0`` for every sample: the width drops
        out (Thm 2)."""
        return self._zgz

    def __repr__(self) -> str:
        out = "scalar" if self.V is None else f"V={self.V}"
        return f"NQF(m={self.m}, p={self.p}, {out}, zgz={self.zgz})"

    def _state(self, M, mu) -> tuple[np.ndarray, np.ndarray]:
        M = as_array("M", M, ndim=2)
        check_shape("M", M, (self.p, self.p))
        mu = np.zeros(self.p) if mu is None else as_array("mu", mu, ndim=1)
        check_shape("mu", mu, (self.p,))
        return M, mu

    def _W(self, W) -> np.ndarray:
        W = as_array("W", W, ndim=2)
        if W.shape[0] != self.p or W.shape[1] < 1:
            raise ValueError(
                f"W must have shape (p={self.p}, d) with d >= 1, got {W.shape}"
            )
        return W

    def _y(self, y) -> np.ndarray:
        y = as_array("y", y)
        if y.shape != self._lead:
            hint = (
                ""
                if self.V is None
                else f" (one label per sample and output, V = {self.V})"
            )
            raise ValueError(
                f"y must have shape {self._lead}{hint}, got {y.shape}"
            )
        return y

    def _batch(self, batch) -> np.ndarray | None:
        """``None`` for the full batch (no copy of the coefficients), else
        validated indices."""
        return None if batch is None else batch_indices(batch, self.m)

    # ------------------------------------------------- unchecked arithmetic
    # (validated inputs)
    def _f(
        self, M: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> np.ndarray:
        """Predictions ``f0 + Tr[M A] (+ g.mu + mu^T B mu)`` on the batch
        ``idx`` (all when ``None``)."""
        if idx is None:
            out = self._A_mat @ M.reshape(-1)
            if not self._zgz:
                out += self._g_mat @ mu
                out += self._B_mat @ (mu[:, None] * mu).reshape(-1)
            return out.reshape(self._lead) + self.f0
        out = self._A_rows[idx] @ M.reshape(-1)
        if not self._zgz:
            out += self.g[idx] @ mu
            out += self._B_rows[idx] @ (mu[:, None] * mu).reshape(-1)
        return out + self.f0[idx]

    def _grad(
        self, lp: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``v = sum l' (g + 2 B mu)`` and ``H = sum 2 l' A`` for loss
        derivatives ``lp`` on the batch."""
        p = self.p
        lp = lp.reshape(-1)
        if idx is None:
            A, g, B = self._A_mat, self._g_mat, self._B_mat
        else:
            A = self._A_rows[idx].reshape(-1, p * p)
            g, B = (
                (None, None)
                if self._zgz
                else (
                    self.g[idx].reshape(-1, p),
                    self._B_rows[idx].reshape(-1, p * p),
                )
            )
        H = 2.0 * (lp @ A).reshape(p, p)
        if self._zgz:
            return np.zeros(p), H
        v = lp @ g + 2.0 * ((lp @ B).reshape(p, p) @ mu)
        return v, H

    def _lp(
        self, f: np.ndarray, y: np.ndarray, idx: np.ndarray | None
    ) -> np.ndarray:
        """``l' = dL/df = 2 (f - y)/|batch|`` (Eq. 26)."""
        if idx is None:
            return 2.0 * (f - y) / self.m
        return 2.0 * (f - y[idx]) / idx.size

    def _loss(
        self, M: np.ndarray, mu: np.ndarray, y: np.ndarray, idx
    ) -> float:
        """The loss of Eq. 26 on the batch ``idx`` (all when ``None``)."""
        r = self._f(M, mu, idx) - (y if idx is None else y[idx])
        return float(np.sum(r**2) / (self.m if idx is None else idx.size))

    # --------------------------------------------------------------
    # predictions (every argument checked here, once, then trusted)
    def predict(self, M, mu=None, batch=None) -> np.ndarray:
        """Predictions ``f_n`` from the order parameters (Eq. 20).

        Parameters
        ----------
        M : array, shape (p, p)
        mu : array, shape (p,), optional
            Needed only when ``g`` or ``B`` is non-zero; defaults to zero.
        batch : int array, optional
            Sample indices; all samples by default.

        Returns
        -------
        ndarray, shape (|batch|,) or (|batch|, V)
        """
        M, mu = self._state(M, mu)
        return self._f(M, mu, self._batch(batch))

    def predict_W(self, W, batch=None) -> np.ndarray:
        """Predictions at weights ``W`` of shape (p, d)."""
        W = self._W(W)
        return self._f(W @ W.T, W.sum(axis=1), self._batch(batch))

    def loss(self, M, mu, y, batch=None) -> float:
        """Mean squared error of Eq. 26, summed over outputs, averaged over the
        batch."""
        M, mu = self._state(M, mu)
        return self._loss(M, mu, self._y(y), self._batch(batch))

    def loss_W(self, W, y, batch=None) -> float:
        """:meth:`loss` at weights ``W``."""
        W = self._W(W)
        idx = self._batch(batch)
        return self._loss(W @ W.T, W.sum(axis=1), self._y(y), idx)

    # ----------------------------------------------------------------
    # gradients
    def vH(self, M, mu, y, batch=None) -> tuple[np.ndarray, np.ndarray]:
        """The batch quantities ``v`` (p,) and ``H`` (p, p) of Theorem 2.

        ``v = sum l'_x (g(x) + 2 B(x) mu)`` and ``H = sum 2 l'_x A(x)`` with
        ``l'_x = 2 (f_x - y_x)/|batch|``; the loss gradient is ``v 1^T + H W``.
        """
        M, mu = self._state(M, mu)
        y = self._y(y)
        idx = self._batch(batch)
        return self._grad(self._lp(self._f(M, mu, idx), y, idx), mu, idx)

    def grad_W(self, W, y, batch=None) -> np.ndarray:
        """Gradient of the (batch) loss with respect to every neuron:
        ``v 1^T + H W``."""
        W = self._W(W)
        y = self._y(y)
        idx = self._batch(batch)
        mu = W.sum(axis=1)
        v, H = self._grad(self._lp(self._f(W @ W.T, mu, idx), y, idx), mu, idx)
        return v[:, None] + H @ W

    # ----------------------------------------------------------------
    # training (Theorem 2) is nqf_lite.dynamics.training's: these methods
    # pass it this form first and the rest as given (its functions document
    # the arguments)
    def gd_step(
        self, W, y, lr, batch=None, weight_decay: float = 0.0
    ) -> np.ndarray:
        """One explicit (S)GD step on every neuron (Eq. 21):
        :func:`nqf_lite.dynamics.training.gd_step`."""
        return _training().gd_step(self, W, y, lr, batch, weight_decay)

    def closed_step(
        self,
        M,
        mu,
        d,
        y,
        lr,
        batch=None,
        weight_decay: float = 0.0,
        *,
        trusted: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One step of the closed dynamics of Theorem 2 (Eqs. 23-24), the new
        ``(M, mu)``: :func:`nqf_lite.dynamics.training.closed_step`."""
        step = _training().closed_step
        args = (M, mu, d, y, lr, batch, weight_decay)
        return step(self, *args, trusted=trusted)

    def train(
        self,
        W,
        y,
        lr,
        steps: int,
        batches=None,
        weight_decay: float = 0.0,
        progress: bool = False,
        *,
        record: str | Sequence[str] | None = None,
        every: int = 1,
    ) -> Any:
        """``steps`` explicit (S)GD steps from ``W`` (Eq. 21):
        :func:`nqf_lite.dynamics.training.train`."""
        run = _training().train
        args = (W, y, lr, steps, batches, weight_decay, progress)
        return run(self, *args, record=record, every=every)

    def train_closed(
        self,
        M,
        mu,
        d: int,
        y,
        lr,
        steps: int,
        batches=None,
        weight_decay: float = 0.0,
        progress: bool = False,
        *,
        record: str | Sequence[str] | None = None,
        every: int = 1,
    ) -> Any:
        """``steps`` steps of the closed recursion on ``(M, mu)`` at width
        ``d`` (Theorem 2): :func:`nqf_lite.dynamics.training.train_closed`."""
        run = _training().train_closed
        args = (M, mu, d, y, lr, steps, batches, weight_decay, progress)
        return run(self, *args, record=record, every=every)


def _training() -> Any:
    """:mod:`nqf_lite.dynamics.training`, imported when first called (the
    dynamics sit above the expansion)."""
    from nqf_lite.dynamics import training

    return training


def ntk_from_moments(nqf: NQF, M, mu, d: int) -> np.ndarray:
    """The empirical tangent kernel of an NQF from its order parameters alone
    (Prop. 8, App. B.6).

    With ``∇_{w_i} f_x = u_x + 2 A_x w_i`` and ``u_x = g_x + 2 B_x μ``,

    .. math::

        \\Theta(x, x') ={}& \\sum_i \\langle\\nabla_{w_i} f_x, \\nabla_{w_i}
        f_{x'}\\rangle \\\\
        ={}& d\\,u_x^\\top u_{x'} + 2u_x^\\top A_{x'}\\mu \\\\
          &+ 2\\mu^\\top A_x u_{x'} + 4\\,\\mathrm{Tr}[A_x A_{x'} M].

    Parameters
    ----------
    nqf : NQF
        A scalar-output NQF (``V = None``) of ``m`` samples.
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int >= 1
        Width.

    Returns
    -------
    ndarray, shape (m, m)
    """
    if not isinstance(nqf, NQF):
        raise TypeError(f"nqf must be an NQF, got {type(nqf).__name__}")
    if nqf.V is not None:
        raise ValueError(
            "nqf must have a scalar output for the m x m kernel, got V = "
            f"{nqf.V}"
        )
    M, mu = nqf._state(M, mu)
    d = width("d", d)
    u = nqf.g + 2 * np.einsum("nij,j->ni", nqf.B, mu)
    A_mu = nqf.A @ mu
    return (
        d * u @ u.T
        + 2 * u @ A_mu.T
        + 2 * A_mu @ u.T
        + 4 * np.einsum("aij,bjk,ki->ab", nqf.A, nqf.A, M)
    )


def random_nqf(
    m: int,
    p: int,
    k: int | None = None,
    V: int | None = None,
    *,
    scale_A: float = 1.0,
    scale_g: float = 0.0,
    scale_B: float = 0.0,
    scale_f0: float = 0.0,
    seed: int | np.random.Generator = 0,
) -> NQF:
    """A random NQF (Eq. 20) whose coefficients live in a random
    ``k``-dimensional subspace of ``R^p``.

    With ``Q`` (p, k) an orthonormal basis of a random subspace (``Q = I`` when
    ``k = p``) and ``S = (Z + Z^T)/2`` for standard normal ``Z`` (k, k): ``A_n
    = scale_A Q S_n Q^T``, ``B_n = scale_B Q S'_n Q^T``, ``g_n = scale_g Q
    z_n`` and ``f0_n = scale_f0 z'_n`` (one draw per sample and output). A
    generic symmetric ``S_n`` has rank ``k``, so ``k_V = k``: a test bed for
    compression (Theorem 3).

    Parameters
    ----------
    m : int >= 1
        Number of samples.
    p : int >= 1
        Dimension of one neuron.
    k : int, optional
        Dimension of the subspace, ``1 <= k <= p``; ``p`` by default.
    V : int, optional
        Number of outputs; scalar output when ``None``.
    scale_A, scale_g, scale_B, scale_f0 : float >= 0
        Scales of the coefficients; ``g``, ``B`` and ``f0`` are drawn only when
        their scale is non-zero (zero arrays otherwise, so ``scale_g = scale_B
        = 0`` gives a ZGZ model).
    seed : int or numpy Generator
        Seed of ``numpy.random.default_rng``; a Generator is used (and
        advanced) as it is. Draw order: basis (when ``k < p``), ``A``, ``g``,
        ``B``, ``f0``.

    Returns
    -------
    NQF
        With ``A`` of shape (m, p, p) or (m, V, p, p); ``A`` and ``B`` exactly
        symmetric.
    """
    m = integer("m", m)
    p = integer("p", p)
    k = p if k is None else integer("k", k)
    if k > p:
        raise ValueError(f"k must satisfy 1 <= k <= p = {p}, got k = {k}")
    lead = (m,) if V is None else (m, integer("V", V))
    scales = {
        name: nonnegative(name, val)
        for name, val in (
            ("scale_A", scale_A),
            ("scale_g", scale_g),
            ("scale_B", scale_B),
            ("scale_f0", scale_f0),
        )
    }
    if not isinstance(
        seed, (int, np.integer, np.random.Generator)
    ) or isinstance(seed, bool):
        raise TypeError(
            "seed must be an int or a numpy Generator, got "
            f"{type(seed).__name__}"
        )
    if not isinstance(seed, np.random.Generator) and seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed}")
    rng = np.random.default_rng(seed)
    Q = np.eye(p) if k == p else np.linalg.qr(rng.standard_normal((p, k)))[0]

    def sym_in_subspace(scale: float) -> np.ndarray:
        Z = rng.standard_normal(lead + (k, k))
        X = scale * (Q @ ((Z + np.swapaxes(Z, -1, -2)) / 2) @ Q.T)
        return (X + np.swapaxes(X, -1, -2)) / 2

    A = sym_in_subspace(scales["scale_A"])
    g = (
        scales["scale_g"] * rng.standard_normal(lead + (k,)) @ Q.T
        if scales["scale_g"]
        else None
    )
    B = sym_in_subspace(scales["scale_B"]) if scales["scale_B"] else None
    f0 = (
        scales["scale_f0"] * rng.standard_normal(lead)
        if scales["scale_f0"]
        else None
    )
    return NQF(A, g=g, B=B, f0=f0)


def __getattr__(name: str) -> Any:
    """``TrainingRecord`` moved to :mod:`nqf_lite.dynamics.training`."""
    if name == "TrainingRecord":
        from nqf_lite.dynamics.training import TrainingRecord

        return TrainingRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
