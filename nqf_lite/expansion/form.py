"""The neural quadratic form of a data set and its training (paper Sections
3-4).

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

Theorem 2 (Eqs. 23-24) follows by multiplying out ``W' = W - lr (v 1^T + H
W)``.
:meth:`NQF.train` and :meth:`NQF.train_closed` run either loop and return every
step's predictions, or, with ``record=("pred", "loss", "M", "mu", "W")``, a
:class:`TrainingRecord` of what was asked for;
the tangent kernel of Prop. 8 (App. B.6) is a function of ``(M, μ)`` too
(:func:`ntk_from_moments`).  :func:`realize_moments` goes back from ``(M, μ)``
to weights; :func:`random_nqf` draws a test bed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg.lapack import dpotrf

from nqf_lite._checks import (
    as_array,
    batch_indices,
    check_shape,
    check_symmetric,
    generator,
    integer,
    nonnegative,
    positive,
    width,
)

__all__ = [
    "NQF",
    "REALIZABLE_RTOL",
    "TrainingRecord",
    "check_realizable",
    "frame_orthogonal_to_ones",
    "moments",
    "ntk_from_moments",
    "random_nqf",
    "realize_moments",
]


def moments(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order parameters of a layer: ``M = W W^T`` and ``mu = W 1`` (Theorem 2).

    Parameters
    ----------
    W : ndarray, shape (p, d)
        Neurons as columns.

    Returns
    -------
    M : ndarray, shape (p, p)
    mu : ndarray, shape (p,)
    """
    W = as_array("W", W, ndim=2)
    if W.size == 0:
        raise ValueError(
            f"W must hold at least one neuron of at least one parameter, got shape {W.shape}"
        )
    return W @ W.T, W.sum(axis=1)


#: what :meth:`NQF.train` and :meth:`NQF.train_closed` can record
_TRAIN_RECORDS = ("pred", "loss", "M", "mu", "W")
_CLOSED_RECORDS = ("pred", "loss", "M", "mu")


@dataclass(frozen=True)
class TrainingRecord:
    """What :meth:`NQF.train` or :meth:`NQF.train_closed` recorded
    (``record=...``).

    Every recorded array has a leading axis over the recorded steps; the ones
    not asked for are ``None``.

    Attributes
    ----------
    steps : ndarray of int, shape (T,)
        The recorded steps: ``0, every, 2 every, ...`` and the last one.
    final : ndarray or tuple
        The state after the last step: ``W`` for :meth:`NQF.train`, ``(M, mu)``
        for
        :meth:`NQF.train_closed` (what the first element of their plain return
        is).
    pred : ndarray, shape (T, m) or (T, m, V), optional
        Predictions on every sample.
    loss : ndarray, shape (T,), optional
        Full-batch training loss of Eq. 26 (summed over outputs, averaged over
        samples).
    M : ndarray, shape (T, p, p), optional
        ``M = W Wᵀ``.
    mu : ndarray, shape (T, p), optional
        ``μ = W 1``.
    W : ndarray, shape (T, p, d), optional
        The weights (:meth:`NQF.train` only).
    """

    steps: np.ndarray
    final: Any
    pred: np.ndarray | None = None
    loss: np.ndarray | None = None
    M: np.ndarray | None = None
    mu: np.ndarray | None = None
    W: np.ndarray | None = None


def _recording(
    record: Any, every: Any, steps: int, allowed: tuple[str, ...], method: str
):
    """Validate ``record`` and ``every``: ``(None, None)`` or ``(names,
    recorded steps)``."""
    every = integer("every", every)
    if record is None:
        if every != 1:
            raise ValueError(
                f"every = {every} needs record=...: without it {method} returns every step's predictions"
            )
        return None, None
    names = (record,) if isinstance(record, str) else record
    if not isinstance(names, (Sequence, np.ndarray)) or isinstance(
        names, bytes
    ):
        raise TypeError(
            f"record must be a name or a sequence of names from {allowed}, got {type(record).__name__}"
        )
    names = tuple(names)
    if not names:
        raise ValueError(f"record must name at least one of {allowed}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"record must hold names (str) from {allowed}, got {name!r}"
            )
        if name not in allowed:
            extra = (
                " (train_closed has no weights; use train)"
                if name == "W"
                else ""
            )
            raise ValueError(
                f"record: unknown name {name!r} for {method}; choose from {allowed}{extra}"
            )
    at = np.arange(0, steps + 1, every)
    if at[-1] != steps:
        at = np.append(at, steps)
    return tuple(dict.fromkeys(names)), at


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
        A = as_array("A", A, ndim=(3, 4))
        if A.shape[-1] != A.shape[-2]:
            raise ValueError(
                f"A must have shape (m, p, p) or (m, V, p, p), got {A.shape}"
            )
        if A.size == 0:
            raise ValueError(
                f"A must hold at least one sample and one parameter, got shape {A.shape}"
            )
        check_symmetric("A", A)
        self.A = np.ascontiguousarray(A)
        self.m = int(A.shape[0])
        self.p = int(A.shape[-1])
        self.V = None if A.ndim == 3 else int(A.shape[1])
        lead = (self.m,) if self.V is None else (self.m, self.V)
        self.g = (
            np.zeros(lead + (self.p,))
            if g is None
            else np.ascontiguousarray(as_array("g", g))
        )
        check_shape("g", self.g, lead + (self.p,))
        self.B = (
            np.zeros_like(self.A)
            if B is None
            else np.ascontiguousarray(as_array("B", B))
        )
        check_shape("B", self.B, A.shape)
        check_symmetric("B", self.B)
        self.f0 = (
            np.zeros(lead)
            if f0 is None
            else np.ascontiguousarray(as_array("f0", f0))
        )
        check_shape("f0", self.f0, lead)
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

    def _closed(
        self, M, mu, d, y, lr, idx, wd, f=None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One unchecked closed step; ``f`` are the batch predictions at ``(M,
        mu)`` when known."""
        if f is None:
            f = self._f(M, mu, idx)
        v, H = self._grad(self._lp(f, y, idx), mu, idx)
        # W' = K W - lr v 1^T with K = I - lr (H + wd I), multiplied out (Eqs.
        # 23-24)
        K = self._eye - lr * H
        if wd:
            K -= (lr * wd) * self._eye
        KM = K @ M
        M_new = KM @ K.T
        Kmu = K @ mu
        if self._zgz:
            mu_new = Kmu
        else:
            lv = lr * v
            cross = lv[:, None] * Kmu
            M_new -= cross + cross.T
            M_new += d * (lv[:, None] * lv)
            mu_new = Kmu - d * lv
        M_new += M_new.T
        M_new *= 0.5
        if not (np.isfinite(M_new.sum()) and np.isfinite(mu_new.sum())):
            _diverged(lr)
        return M_new, mu_new

    def _gd(self, W, y, lr, idx, wd, f=None) -> np.ndarray:
        """One unchecked explicit step; ``f`` are the batch predictions at
        ``W`` when known."""
        mu = W.sum(axis=1)
        if f is None:
            f = self._f(W @ W.T, mu, idx)
        v, H = self._grad(self._lp(f, y, idx), mu, idx)
        step = H @ W
        if wd:
            step += wd * W
        if not self._zgz:
            step += v[:, None]
        step *= lr
        W_new = W - step
        if not np.isfinite(W_new.sum()):
            _diverged(lr)
        return W_new

    # --------------------------------------------------------------
    # predictions
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
        y = self._y(y)
        idx = self._batch(batch)
        r = self._f(M, mu, idx) - (y if idx is None else y[idx])
        return float(np.sum(r**2) / (self.m if idx is None else idx.size))

    def loss_W(self, W, y, batch=None) -> float:
        """:meth:`loss` at weights ``W``."""
        W = self._W(W)
        return self.loss(W @ W.T, W.sum(axis=1), y, batch=batch)

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
        """Gradient of the (batch) loss with respect to every neuron: ``v 1^T +
        H W``."""
        W = self._W(W)
        v, H = self.vH(W @ W.T, W.sum(axis=1), y, batch=batch)
        return v[:, None] + H @ W

    # -----------------------------------------------------------------
    # training
    def gd_step(
        self, W, y, lr, batch=None, weight_decay: float = 0.0
    ) -> np.ndarray:
        """One explicit (S)GD step on every neuron (Eq. 21).

        ``W' = W - lr (v 1^T + (H + weight_decay I) W)``.

        Parameters
        ----------
        W : array, shape (p, d)
        y : array, shape (m,) or (m, V)
        lr : float > 0
        batch : int array, optional
        weight_decay : float >= 0
            Adds ``weight_decay * |W|^2 / 2`` to the loss.

        Returns
        -------
        ndarray, shape (p, d)

        Raises
        ------
        FloatingPointError
            If the step produces non-finite weights (learning rate too large).
        """
        lr = positive("lr", lr)
        wd = nonnegative("weight_decay", weight_decay)
        W = self._W(W)
        y = self._y(y)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._gd(W, y, lr, self._batch(batch), wd)

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
        """One step of the closed dynamics of Theorem 2 (Eqs. 23-24); the width
        is a number.

        .. math::

            \\Delta\\mu = -\\eta(d\\,v + H\\mu),

            \\Delta M ={}& -\\eta(v\\mu^\\top + \\mu v^\\top + HM + MH) \\\\
                      &+ \\eta^2(d\\,vv^\\top + v\\mu^\\top H + H\\mu v^\\top +
                      HMH),

        with ``H`` replaced by ``H + weight_decay I`` under weight decay.  It
        is evaluated as ``M' = K M K - (K mu)(eta v)^T - (eta v)(K mu)^T + d
        eta^2 v v^T`` and ``mu' = K mu - d eta v`` with ``K = I - eta H`` (the
        same polynomial).

        Parameters
        ----------
        M : array, shape (p, p)
        mu : array, shape (p,)
        d : int >= 1
            Width (number of neurons).
        y, lr, batch, weight_decay
            As in :meth:`gd_step`.
        trusted : bool, default False
            Skip the realisability check of ``(M, mu)`` at width ``d`` (for a
            state that came out of :meth:`closed_step` or :func:`moments`).

        Returns
        -------
        (M, mu) after the step.

        Raises
        ------
        ValueError
            If no width-``d`` weights have the moments ``(M, mu)``
            (:func:`check_realizable`), or an argument is malformed.
        FloatingPointError
            If the step produces non-finite moments.
        """
        lr = positive("lr", lr)
        wd = nonnegative("weight_decay", weight_decay)
        d = width("d", d)
        M, mu = self._state(M, mu)
        y = self._y(y)
        idx = self._batch(batch)
        if not trusted:
            check_realizable(M, mu, d)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._closed(M, mu, d, y, lr, idx, wd)

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
    ) -> tuple[np.ndarray, np.ndarray] | TrainingRecord:
        """Run ``steps`` explicit (S)GD steps (:meth:`gd_step`, Eq. 21) and
        record the predictions.

        Every argument is validated once, before the first step.

        Parameters
        ----------
        W : array, shape (p, d)
            Initial weights.
        y : array, shape (m,) or (m, V)
        lr : float > 0
        steps : int >= 0
        batches : sequence of ``steps`` int arrays, optional
            ``batches[t]`` holds the sample indices of step ``t``; full batch
            when ``None``.
        weight_decay : float >= 0
        progress : bool
            Accepted for compatibility and ignored: the book shows no progress
            bars.
        record : str or sequence of str, optional
            What to record besides nothing: any of ``"pred"``, ``"loss"``,
            ``"M"``, ``"mu"``, ``"W"`` (see :class:`TrainingRecord`).  When
            given, a
            :class:`TrainingRecord` is returned instead of the pair below.
        every : int >= 1, default 1
            With ``record``: record at steps ``0, every, 2 every, ...`` and the
            last step.

        Returns
        -------
        W : ndarray, shape (p, d)
            Weights after the last step.
        predictions : ndarray, shape (steps + 1, m) or (steps + 1, m, V)
            Predictions on every sample at steps ``0, ..., steps``.

        or, with ``record``, a :class:`TrainingRecord` whose ``final`` is
        ``W``.

        Examples
        --------
        >>> rec = model.train(W0, y, 0.1, 500, record=("loss", "M"))   # doctest: +SKIP
        >>> rec.M.shape                                               # doctest: +SKIP
        (501, p, p)
        """
        W = self._W(W)
        y, lr, wd, steps, batches = self._schedule(
            y, lr, weight_decay, steps, batches
        )
        names, at = _recording(record, every, steps, _TRAIN_RECORDS, "train")
        if names is None:  # the plain loop: every step's predictions
            preds = np.empty((steps + 1,) + y.shape)
            preds[0] = self._f(W @ W.T, W.sum(axis=1), None)
            with np.errstate(over="ignore", invalid="ignore"):
                for t in range(steps):
                    idx = batches[t]
                    W = self._gd(
                        W, y, lr, idx, wd, f=preds[t] if idx is None else None
                    )
                    preds[t + 1] = self._f(W @ W.T, W.sum(axis=1), None)
            return W, preds

        def advance(W: np.ndarray, t: int, f: np.ndarray) -> np.ndarray:
            idx = batches[t]
            return self._gd(W, y, lr, idx, wd, f=f if idx is None else None)

        return self._loop(
            W, advance, lambda W: (W @ W.T, W.sum(axis=1)), y, steps, names, at
        )

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
    ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray] | TrainingRecord:
        """Run ``steps`` steps of the closed recursion (:meth:`closed_step`,
        Theorem 2) and record the predictions.

        Every argument is validated once, before the first step (including the
        realisability of ``(M, mu)`` at width ``d``, :func:`check_realizable`);
        the loop itself is the arithmetic of Eqs. 23-24 only.

        Parameters
        ----------
        M : array, shape (p, p)
        mu : array, shape (p,)
        d : int >= 1
            Width (a number: no weights are stored).
        y, lr, steps, batches, weight_decay, progress
            As in :meth:`train`.
        record : str or sequence of str, optional
            Any of ``"pred"``, ``"loss"``, ``"M"``, ``"mu"`` (there are no
            weights); when given, a :class:`TrainingRecord` is returned.
        every : int >= 1, default 1
            As in :meth:`train`.

        Returns
        -------
        (M, mu) : tuple of ndarray
            Order parameters after the last step.
        predictions : ndarray, shape (steps + 1, m) or (steps + 1, m, V)
            Predictions on every sample at steps ``0, ..., steps``.

        or, with ``record``, a :class:`TrainingRecord` whose ``final`` is ``(M,
        mu)``.
        """
        M, mu = self._state(M, mu)
        d = width("d", d)
        y, lr, wd, steps, batches = self._schedule(
            y, lr, weight_decay, steps, batches
        )
        names, at = _recording(
            record, every, steps, _CLOSED_RECORDS, "train_closed"
        )
        check_realizable(M, mu, d)
        if names is None:  # the plain loop: every step's predictions
            preds = np.empty((steps + 1,) + y.shape)
            preds[0] = self._f(M, mu, None)
            with np.errstate(over="ignore", invalid="ignore"):
                for t in range(steps):
                    idx = batches[t]
                    M, mu = self._closed(
                        M,
                        mu,
                        d,
                        y,
                        lr,
                        idx,
                        wd,
                        f=preds[t] if idx is None else None,
                    )
                    preds[t + 1] = self._f(M, mu, None)
            return (M, mu), preds

        def advance(state: tuple, t: int, f: np.ndarray) -> tuple:
            idx = batches[t]
            return self._closed(
                *state, d, y, lr, idx, wd, f=f if idx is None else None
            )

        return self._loop(
            (M, mu), advance, lambda state: state, y, steps, names, at
        )

    def _loop(
        self, state, advance, moments_of, y, steps, names, at
    ) -> TrainingRecord:
        """The recording loop of :meth:`train` and :meth:`train_closed`.

        ``advance(state, t, f)`` takes step ``t`` from the predictions ``f``;
        ``moments_of(state)`` gives ``(M, mu)``; ``names`` are recorded at the
        steps ``at``.
        """
        out: dict[str, np.ndarray] = {}

        def keep(
            i: int, state, M: np.ndarray, mu: np.ndarray, f: np.ndarray
        ) -> None:
            for name in names:
                if name == "pred":
                    value = f
                elif name == "loss":
                    value = np.sum((f - y) ** 2) / self.m
                else:
                    value = {"M": M, "mu": mu, "W": state}[name]
                if name not in out:
                    out[name] = np.empty((at.size,) + np.shape(value))
                out[name][i] = value

        M, mu = moments_of(state)
        f = self._f(M, mu, None)
        keep(0, state, M, mu, f)  # at[0] = 0
        j = 1
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(steps):
                state = advance(state, t, f)
                M, mu = moments_of(state)
                f = self._f(M, mu, None)
                if j < at.size and at[j] == t + 1:
                    keep(j, state, M, mu, f)
                    j += 1
        return TrainingRecord(steps=at, final=state, **out)

    def _schedule(self, y, lr, weight_decay, steps, batches) -> tuple:
        """Validate the arguments shared by :meth:`train` and
        :meth:`train_closed`."""
        y = self._y(y)
        lr = positive("lr", lr)
        weight_decay = nonnegative("weight_decay", weight_decay)
        steps = integer("steps", steps, minimum=0)
        if batches is None:
            return y, lr, weight_decay, steps, [None] * steps
        if isinstance(batches, (str, bytes)) or not isinstance(
            batches, (Sequence, np.ndarray)
        ):
            raise TypeError(
                f"batches must be None or a sequence of {steps} index arrays, got {type(batches).__name__}"
            )
        if len(batches) != steps:
            raise ValueError(
                f"batches must hold one index array per step ({steps}), got {len(batches)}"
            )
        checked = []
        for t, batch in enumerate(batches):
            try:
                checked.append(self._batch(batch))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"batches[{t}]: {exc}") from exc
        return y, lr, weight_decay, steps, checked


def _diverged(lr: float) -> None:
    raise FloatingPointError(
        f"training diverged (non-finite weights) at lr = {lr:g}: lower the learning rate"
    )


#: relative tolerance of :func:`check_realizable` (eigenvalues of ``M - mu
#: mu^T/d`` below ``-REALIZABLE_RTOL * scale`` are negative, above
#: ``REALIZABLE_RTOL * scale`` count for the rank)
REALIZABLE_RTOL = 1e-9


def check_realizable(M: np.ndarray, mu: np.ndarray, d: int) -> None:
    """Raise ``ValueError`` unless some width-``d`` weights ``W`` have ``W Wᵀ =
    M`` and ``W 1 = mu``.

    Such ``W`` exist iff ``M`` is symmetric and ``C = M - mu muᵀ/d`` is
    positive semi-definite of rank at most ``d - 1`` (``W = mu 1ᵀ/d + U`` with
    ``U 1 = 0`` and ``U Uᵀ = C``); then ``M`` itself is PSD of rank at most
    ``d``.  The check is a Cholesky factorisation (LAPACK ``dpotrf``) of ``C +
    tol I`` when ``d > p`` (the rank bound holds automatically) and an
    eigenvalue count otherwise, with ``tol = REALIZABLE_RTOL * max(max_i
    |M_ii|, |mu|²/d)``.

    Parameters
    ----------
    M : ndarray, shape (p, p)
        Validated float64 array.
    mu : ndarray, shape (p,)
        Validated float64 array.
    d : int >= 1
        Width.
    """
    check_symmetric("M", M)
    p = M.shape[0]
    C = M - (mu[:, None] * mu) / d
    scale = max(float(np.abs(M.diagonal()).max()), float(mu @ mu) / d)
    tol = REALIZABLE_RTOL * scale + 1e-300
    if d > p:
        shifted = C.copy()
        shifted.flat[:: p + 1] += tol
        if (
            dpotrf(shifted, lower=1, clean=0, overwrite_a=1)[1] == 0
        ):  # C + tol I is positive definite
            return
    lam = np.linalg.eigvalsh(C)
    if lam[0] < -tol:
        raise ValueError(
            f"(M, mu) is not realisable by any width-{d} weights: M - mu mu^T/d must be positive "
            f"semi-definite, but its smallest eigenvalue is {lam[0]:.3g} (M must be a Gram matrix W W^T "
            "and mu = W 1 of the same W)"
        )
    rank = int(np.sum(lam > tol))
    if rank > d - 1:
        raise ValueError(
            f"(M, mu) is not realisable by any width-{d} weights: M - mu mu^T/d has rank {rank} > d - 1 = "
            f"{d - 1} (M = W W^T has rank <= d); pass a width d >= {rank + 1}"
        )


def frame_orthogonal_to_ones(
    d: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """An orthonormal basis ``F`` (d, d - 1) of the complement of ``1_d``: ``Fᵀ
    F = I``, ``Fᵀ 1 = 0``.

    Moving neurons inside this complement keeps ``μ = W 1`` (Theorem 2's
    symmetry group: ``W -> W O`` with ``O 1 = 1``, ``O`` orthogonal, keeps
    ``(M, μ)``).

    Parameters
    ----------
    d : int >= 1
        Width.
    rng : Generator or int, optional
        Randomises the basis; a fixed basis (Gram-Schmidt of ``1, e_2, ...,
        e_d``) when ``None``.
    """
    d = width("d", d)
    gen = generator("rng", rng)
    base = np.eye(d)[:, 1:] if gen is None else gen.standard_normal((d, d - 1))
    return np.linalg.qr(np.column_stack([np.ones(d), base]))[0][:, 1:]


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
            f"nqf must have a scalar output for the m x m kernel, got V = {nqf.V}"
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


def realize_moments(
    M, mu, d: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Weights ``W`` (p, d) with ``W W^T = M`` and ``W 1 = mu``.

    Possible iff ``C = M - mu mu^T / d`` is positive semi-definite with rank at
    most ``d - 1``.  Construction: ``w_i = mu/d + u_i`` with ``U = L Z^T``,
    where ``C = L L^T`` and the columns of ``Z`` (d, r) are orthonormal and
    orthogonal to ``1_d`` (a random such frame when ``rng`` is given).

    Parameters
    ----------
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int
        Target width.
    rng : Generator or int, optional
        Randomises the frame ``Z``; deterministic (a fixed frame) when
        ``None``.

    Raises
    ------
    ValueError
        If ``C`` is not PSD or its rank exceeds ``d - 1``.
    """
    M = as_array("M", M, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    check_symmetric("M", M)
    p = M.shape[0]
    mu = as_array("mu", mu, ndim=1)
    check_shape("mu", mu, (p,))
    d = width("d", d)
    rng = generator("rng", rng)
    C = M - np.outer(mu, mu) / d
    lam, Q = np.linalg.eigh(0.5 * (C + C.T))
    tol = 1e-12 * max(1.0, float(np.max(np.abs(lam))))
    if lam.min() < -tol:
        raise ValueError(
            f"M - mu mu^T/d must be positive semi-definite (smallest eigenvalue {lam.min():.3g}): "
            "no width-d layer has these moments"
        )
    keep = lam > tol
    r = int(keep.sum())
    if r > d - 1:
        raise ValueError(
            f"M - mu mu^T/d has rank {r}, so it needs width >= {r + 1}, got d = {d}"
        )
    L = Q[:, keep] * np.sqrt(lam[keep])
    Z = frame_orthogonal_to_ones(d, rng)[:, :r]
    return mu[:, None] / d + L @ Z.T


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
            f"seed must be an int or a numpy Generator, got {type(seed).__name__}"
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
