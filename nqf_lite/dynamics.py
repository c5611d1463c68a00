"""Training an NQF: the explicit neuron update and the closed (M, mu) dynamics.

The general NQF of a data set (paper Eq. 20) predicts, for sample ``n`` (and
output ``o`` when there are ``V`` of them),

.. math::

    f_n = f_0(x_n) + g(x_n)^\\top\\mu + \\mu^\\top B(x_n)\\mu + \\mathrm{Tr}[M A(x_n)].

With the loss of Eq. 26, ``L = (1/|b|) sum_{n in b} sum_o (f_no - y_no)^2``,
``l'_no = dL/df_no = 2 (f_no - y_no)/|b|`` and

.. math::

    v = \\sum_{n,o} \\ell'_{no} (g_{no} + 2 B_{no}\\mu), \\qquad
    H = \\sum_{n,o} 2\\ell'_{no} A_{no}, \\qquad
    \\nabla_W L = v\\mathbf 1^\\top + H W .

Theorem 2 (Eqs. 23-24) follows by multiplying out ``W' = W - lr (v 1^T + H W)``.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_array,
    batch_indices,
    check_shape,
    check_symmetric,
    nonnegative,
    positive,
    width,
)
from .structure import moments

__all__ = ["NQF", "realize_moments"]


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
    """

    def __init__(self, A, g=None, B=None, f0=None) -> None:
        A = as_array("A", A, ndim=(3, 4))
        if A.shape[-1] != A.shape[-2]:
            raise ValueError(f"A must have shape (m, p, p) or (m, V, p, p), got {A.shape}")
        if A.shape[0] == 0 or A.shape[-1] == 0:
            raise ValueError(f"A must hold at least one sample and one parameter, got shape {A.shape}")
        check_symmetric("A", A)
        self.A = A
        self.m = int(A.shape[0])
        self.p = int(A.shape[-1])
        self.V = None if A.ndim == 3 else int(A.shape[1])
        lead = (self.m,) if self.V is None else (self.m, self.V)
        self.g = np.zeros(lead + (self.p,)) if g is None else as_array("g", g)
        check_shape("g", self.g, lead + (self.p,))
        self.B = np.zeros_like(A) if B is None else as_array("B", B)
        check_shape("B", self.B, A.shape)
        check_symmetric("B", self.B)
        self.f0 = np.zeros(lead) if f0 is None else as_array("f0", f0)
        check_shape("f0", self.f0, lead)

    # ------------------------------------------------------------------ helpers
    @property
    def zgz(self) -> bool:
        """True when ``g = 0`` and ``B = 0`` for every sample: the width drops out (Thm 2)."""
        return not (np.any(self.g) or np.any(self.B))

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
            raise ValueError(f"W must have shape (p={self.p}, d) with d >= 1, got {W.shape}")
        return W

    def _y(self, y) -> np.ndarray:
        y = as_array("y", y)
        lead = (self.m,) if self.V is None else (self.m, self.V)
        if y.shape != lead:
            hint = "" if self.V is None else f" (one label per sample and output, V = {self.V})"
            raise ValueError(f"y must have shape {lead}{hint}, got {y.shape}")
        return y

    # -------------------------------------------------------------- predictions
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
        idx = batch_indices(batch, self.m)
        out = self.f0[idx] + np.einsum("n...ij,ij->n...", self.A[idx], M)
        if not self.zgz:
            out = out + self.g[idx] @ mu + np.einsum("n...ij,i,j->n...", self.B[idx], mu, mu)
        return out

    def predict_W(self, W, batch=None) -> np.ndarray:
        """Predictions at weights ``W`` of shape (p, d)."""
        M, mu = moments(self._W(W))
        return self.predict(M, mu, batch=batch)

    def loss(self, M, mu, y, batch=None) -> float:
        """Mean squared error of Eq. 26, summed over outputs, averaged over the batch."""
        y = self._y(y)
        idx = batch_indices(batch, self.m)
        r = self.predict(M, mu, batch=idx) - y[idx]
        return float(np.sum(r**2) / idx.size)

    def loss_W(self, W, y, batch=None) -> float:
        """:meth:`loss` at weights ``W``."""
        M, mu = moments(self._W(W))
        return self.loss(M, mu, y, batch=batch)

    # ---------------------------------------------------------------- gradients
    def vH(self, M, mu, y, batch=None) -> tuple[np.ndarray, np.ndarray]:
        """The batch quantities ``v`` (p,) and ``H`` (p, p) of Theorem 2.

        ``v = sum l'_x (g(x) + 2 B(x) mu)`` and ``H = sum 2 l'_x A(x)`` with
        ``l'_x = 2 (f_x - y_x)/|batch|``; the loss gradient is ``v 1^T + H W``.
        """
        M, mu = self._state(M, mu)
        y = self._y(y)
        idx = batch_indices(batch, self.m)
        lp = 2.0 * (self.predict(M, mu, batch=idx) - y[idx]) / idx.size
        lp = lp.reshape(-1)
        p = self.p
        H = 2.0 * np.tensordot(lp, self.A[idx].reshape(-1, p, p), axes=1)
        if self.zgz:
            v = np.zeros(p)
        else:
            v = lp @ self.g[idx].reshape(-1, p) + 2.0 * np.tensordot(lp, self.B[idx].reshape(-1, p, p), axes=1) @ mu
        return v, H

    def grad_W(self, W, y, batch=None) -> np.ndarray:
        """Gradient of the (batch) loss with respect to every neuron: ``v 1^T + H W``."""
        W = self._W(W)
        M, mu = moments(W)
        v, H = self.vH(M, mu, y, batch=batch)
        return v[:, None] + H @ W

    # ----------------------------------------------------------------- training
    def gd_step(self, W, y, lr, batch=None, weight_decay: float = 0.0) -> np.ndarray:
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
        """
        lr = positive("lr", lr)
        wd = nonnegative("weight_decay", weight_decay)
        W = self._W(W)
        M, mu = moments(W)
        v, H = self.vH(M, mu, y, batch=batch)
        return _finite(W - lr * (v[:, None] + H @ W + wd * W), lr)

    def closed_step(self, M, mu, d, y, lr, batch=None, weight_decay: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """One step of the closed dynamics of Theorem 2 (Eqs. 23-24); the width is a number.

        .. math::

            \\Delta\\mu = -\\eta(d\\,v + H\\mu),\\quad
            \\Delta M = -\\eta(v\\mu^\\top + \\mu v^\\top + HM + MH)
                      + \\eta^2(d\\,vv^\\top + v\\mu^\\top H + H\\mu v^\\top + HMH),

        with ``H`` replaced by ``H + weight_decay I`` under weight decay.

        Parameters
        ----------
        M : array, shape (p, p)
        mu : array, shape (p,)
        d : int >= 1
            Width (number of neurons).
        y, lr, batch, weight_decay
            As in :meth:`gd_step`.

        Returns
        -------
        (M, mu) after the step.
        """
        lr = positive("lr", lr)
        wd = nonnegative("weight_decay", weight_decay)
        d = width("d", d)
        M, mu = self._state(M, mu)
        v, H = self.vH(M, mu, y, batch=batch)
        if wd:
            H = H + wd * np.eye(self.p)
        Hmu = H @ mu
        HM = H @ M
        mu_new = mu - lr * (d * v + Hmu)
        M_new = (
            M
            - lr * (np.outer(v, mu) + np.outer(mu, v) + HM + HM.T)
            + lr**2 * (d * np.outer(v, v) + np.outer(v, Hmu) + np.outer(Hmu, v) + HM @ H)
        )
        return _finite(0.5 * (M_new + M_new.T), lr), _finite(mu_new, lr)


def _finite(X: np.ndarray, lr: float) -> np.ndarray:
    if not np.all(np.isfinite(X)):
        raise FloatingPointError(f"training diverged (non-finite weights) at lr = {lr:g}: lower the learning rate")
    return X


def realize_moments(M, mu, d: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Weights ``W`` (p, d) with ``W W^T = M`` and ``W 1 = mu``.

    Possible iff ``C = M - mu mu^T / d`` is positive semi-definite with rank at
    most ``d - 1``.  Construction: ``w_i = mu/d + u_i`` with ``U = L Z^T``, where
    ``C = L L^T`` and the columns of ``Z`` (d, r) are orthonormal and
    orthogonal to ``1_d`` (a random such frame when ``rng`` is given).

    Parameters
    ----------
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int
        Target width.
    rng : Generator or int, optional
        Randomises the frame ``Z``; deterministic (a fixed frame) when ``None``.

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
        raise ValueError(f"M - mu mu^T/d has rank {r}, so it needs width >= {r + 1}, got d = {d}")
    L = Q[:, keep] * np.sqrt(lam[keep])
    # an orthonormal frame of the complement of 1_d
    base = np.eye(d)[:, 1:] if rng is None else np.random.default_rng(rng).standard_normal((d, d - 1))
    frame = np.linalg.qr(np.column_stack([np.ones(d), base]))[0][:, 1:]
    Z = frame[:, :r]
    return mu[:, None] / d + L @ Z.T
