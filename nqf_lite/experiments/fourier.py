"""The Fourier-features runs of Fig. 5 (Section 7, Eq. 50; App. C, Eq. 296):
full-batch gradient descent written out by hand.

- :func:`train_fourier`: the Fourier MLP of Eq. 50 or its NQF (Eq. 296);
- :func:`train_fourier_ensemble`: the same for an ensemble of
  initialisations at once;
- :func:`train_tanh_mlp`: the plain bias-free tanh MLP on the raw input, the
  baseline of Fig. 5.

The model (features, target, forward passes, structure matrices and mode
rates, Eq. 297) is :mod:`nqf_lite.expansion.models.fourier`; these runners
check their arguments once, before the first step, with its
:func:`~nqf_lite.expansion.models.fourier.fourier_arguments`.
"""

from __future__ import annotations

import numpy as np
import torch

from nqf_lite._checks import as_array, check_shape, integer, positive, vector
from nqf_lite.expansion.models.fourier import (
    feature_matrix,
    fourier_arguments,
)

__all__ = ["train_fourier", "train_fourier_ensemble", "train_tanh_mlp"]


def train_fourier(
    a0: object,
    W0: object,
    s: object,
    psi: object,
    y: object,
    lr: float,
    n_steps: int,
    scale: float = 1.0,
    model: str = "mlp",
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Full-batch GD on the Fourier MLP (Eq. 50) or its NQF (Eq. 296), loss
    ``(1/M) sum (f - y)^2``.

    Gradients are written out by hand (``e_n = (2/M)(f_n - y_n)``):

    * ``model="mlp"``: ``dL/dW_k = scale sum_n e_n tanh(u_kn)``,
      ``dL/da_k = scale W_k s_k sum_n e_n (1 - tanh^2 u_kn) psi_kn``,
      ``u_kn = s_k a_k psi_kn``;
    * ``model="nqf"``: ``dL/dW_k = scale s_k a_k sum_n e_n psi_kn`` and
      symmetrically for ``a_k``.

    Parameters
    ----------
    a0, W0 : array_like, shape (P,)
        Initial weights (the same for both models to compare them).
    s : array_like, shape (P,)
    psi : array_like, shape (M, P)
    y : array_like, shape (M,)
    lr : float
        Learning rate; time is ``t = lr * step``.
    n_steps : int
    scale : float
        Output prefactor (see
        :func:`~nqf_lite.expansion.models.fourier.fourier_mlp`).
    model : {"mlp", "nqf"}

    Returns
    -------
    t : ndarray, shape (n_steps,)
        ``lr * step`` for ``step = 0..n_steps-1``.
    L : ndarray, shape (n_steps,)
        Loss before each update.
    (a, W) : tuple of ndarray
        Final weights.
    """
    a, W, s, psi, scale = fourier_arguments(
        a0, W0, s, psi, scale, names=("a0", "W0")
    )
    a, W = a.copy(), W.copy()
    y = vector("y", y, psi.shape[0])
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps)
    if model not in ("mlp", "nqf"):
        raise ValueError(f"model must be 'mlp' or 'nqf', got {model!r}")
    M = psi.shape[0]
    psiT = np.ascontiguousarray(psi.T)
    L = np.empty(n_steps)
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # divergence is reported below
        for i in range(n_steps):
            if model == "mlp":
                h = np.tanh((s * a)[:, None] * psiT)
                e = h.T @ W * scale - y
                L[i] = e @ e / M
                g = (2.0 * scale / M) * e
                gW = h @ g
                ga = W * s * (((1.0 - h * h) * psiT) @ g)
            else:
                e = psi @ (s * a * W) * scale - y
                L[i] = e @ e / M
                q = (2.0 * scale / M) * s * (psiT @ e)
                ga, gW = q * W, q * a
            a -= lr * ga
            W -= lr * gW
    if not (
        np.all(np.isfinite(L))
        and np.all(np.isfinite(a))
        and np.all(np.isfinite(W))
    ):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * np.arange(n_steps), L, (a, W)


def _grid_folds(
    psi: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Distinct grid points of ``(psi, y)`` and their weights; whether the
    mirror applies.

    On the grid of
    :func:`~nqf_lite.expansion.models.fourier.fourier_features`,
    ``psi(x_{M-n}) = psi(x_n)``; when the target shares that symmetry (as a
    cosine target does) the loss is a weighted sum over ``n = 0..M/2``; and
    ``psi_k(x_{M/2-n}) = (-1)^k psi_k(x_n)``, so the odd ``tanh`` need only be
    evaluated for ``n = 0..M/4``.  Returns ``(index, weight, q)``: the points
    kept, their weights ``w_n`` (``sum_n w_n e_n^2`` is the loss), and ``q =
    M/4 + 1`` when the mirror relation holds (``q = 0`` otherwise). Any other
    ``psi`` or ``y`` keeps every point.
    """
    M = psi.shape[0]
    n = np.arange(M // 2 + 1)
    tol = 1e-13 * np.abs(psi).max()
    if (
        M % 2 == 0
        and np.allclose(psi[(M - n) % M], psi[n], rtol=0, atol=tol)
        and np.allclose(
            y[(M - n) % M], y[n], rtol=0, atol=1e-13 * np.abs(y).max()
        )
    ):
        w = np.full(n.size, 2.0 / M)
        w[0] = w[-1] = 1.0 / M
        q = M // 4 + 1
        mirror = psi[M // 2] * psi[0]
        ok = (
            M % 4 == 0
            and np.all(
                np.abs(np.abs(mirror) - psi[0] ** 2) <= 1e-12 * psi[0] ** 2
            )
            and np.allclose(
                psi[M // 2 - np.arange(q)],
                np.sign(mirror) * psi[:q],
                rtol=0,
                atol=tol,
            )
        )
        return n, w, q if ok else 0
    return np.arange(M), np.full(M, 1.0 / M), 0


def train_fourier_ensemble(
    a0: object,
    W0: object,
    s: object,
    psi: object,
    y: object,
    lr: float,
    n_steps: int,
    scale: float = 1.0,
    model: str = "mlp",
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """:func:`train_fourier` for an ensemble of initialisations at once, using
    the grid's symmetries.

    Row ``j`` of ``a0``, ``W0`` is one independent run; every run follows
    exactly the full-batch GD of :func:`train_fourier` (the same gradients, to
    rounding). On the grid of
    :func:`~nqf_lite.expansion.models.fourier.fourier_features` the loss is
    folded onto the ``M/2 + 1`` distinct points (``psi(x_{M-n}) = psi(x_n)``,
    when ``y`` is symmetric too) and, because ``tanh`` is odd and
    ``psi_k(x_{M/2-n}) = (-1)^k psi_k(x_n)``, ``tanh`` is evaluated on ``M/4 +
    1`` points and mirrored.  Any other ``psi`` or ``y`` is used as it is.

    Parameters
    ----------
    a0, W0 : array_like, shape (S, P)
        Initial input and output weights of the ``S`` runs.
    s, psi, y, lr, n_steps, scale, model
        As in :func:`train_fourier`.

    Returns
    -------
    t : ndarray, shape (n_steps,)
        ``lr * step``.
    L : ndarray, shape (n_steps, S)
        Loss of every run before each update.
    (a, W) : tuple of ndarray, shape (S, P)
        Final weights.
    """
    psi = feature_matrix(psi)
    M, P = psi.shape
    a = as_array("a0", a0, ndim=2).copy()
    check_shape("a0", a, (a.shape[0], P))
    W = as_array("W0", W0, ndim=2).copy()
    check_shape("W0", W, a.shape)
    s = vector("s", s, P)
    y = vector("y", y, M)
    scale = positive("scale", scale)
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps)
    if model not in ("mlp", "nqf"):
        raise ValueError(f"model must be 'mlp' or 'nqf', got {model!r}")
    keep, w, q = _grid_folds(psi, y)
    psiT, y = np.ascontiguousarray(psi[keep].T), y[keep]  # (P, n), (n,)
    psi_tanh = (
        np.ascontiguousarray(psiT[:, :q]) if q else psiT
    )  # the points where tanh is evaluated
    mirror = np.sign(psi[M // 2] * psi[0])[:, None]
    L = np.empty((n_steps, a.shape[0]))
    # Work arrays, allocated once: the loop itself allocates only (S, n) and
    # (S, P) arrays. torch's tanh runs in place on the numpy buffer (shared
    # memory): about twice as fast as numpy's float64 tanh on AVX2 and, like
    # it, accurate to about one ulp.
    H = np.empty(
        (a.shape[0], P, psiT.shape[1])
    )  # tanh(s a psi), every kept point
    X = (
        np.empty((a.shape[0], P, q)) if q else H
    )  # tanh on the evaluated points
    X_torch = torch.from_numpy(X)
    D = np.empty_like(H)  # (1 - h^2) psi
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # divergence is reported below
        for i in range(n_steps):
            if model == "mlp":
                np.multiply((s * a)[:, :, None], psi_tanh, out=X)
                X_torch.tanh_()
                if q:
                    H[..., :q] = X
                    np.multiply(mirror, X[..., q - 2 :: -1], out=H[..., q:])
                e = scale * (W[:, None, :] @ H)[:, 0] - y  # (S, n)
                g = (2.0 * scale * w * e)[:, :, None]
                gW = (H @ g)[..., 0]
                np.multiply(H, H, out=D)
                np.subtract(1.0, D, out=D)
                np.multiply(D, psiT, out=D)
                ga = W * s * (D @ g)[..., 0]
            else:
                e = scale * (s * a * W) @ psiT - y
                qv = 2.0 * scale * s * ((w * e) @ psiT.T)
                ga, gW = qv * W, qv * a
            L[i] = (e * e) @ w
            a -= lr * ga
            W -= lr * gW
    if not (
        np.all(np.isfinite(L))
        and np.all(np.isfinite(a))
        and np.all(np.isfinite(W))
    ):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * np.arange(n_steps), L, (a, W)


def train_tanh_mlp(
    u0: object, v0: object, x: object, y: object, lr: float, n_steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on a plain bias-free tanh MLP on the raw input,
    ``f(x) = sum_i v_i tanh(u_i x)``.

    The baseline of Fig. 5: its NQF is ``sum_i v_i u_i x`` (Prop. 1 with a
    scalar input), a single linear feature ``x``, so only the linear part of
    the target can be learned at small initialisation.

    Parameters
    ----------
    u0, v0 : array_like, shape (H,)
        Input and output weights of the ``H`` hidden units.
    x, y : array_like, shape (M,)
        Inputs and labels.
    lr : float
    n_steps : int

    Returns
    -------
    t : ndarray, shape (n_steps,)
    L : ndarray, shape (n_steps,)
        Loss ``(1/M) sum (f - y)^2`` before each update.
    """
    u = vector("u0", u0).copy()
    v = vector("v0", v0, u.size).copy()
    x = vector("x", x)
    y = vector("y", y, x.size)
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps)
    M = x.size
    L = np.empty(n_steps)
    H = np.empty(
        (u.size, M)
    )  # tanh(u x), in place by torch (see train_fourier_ensemble)
    H_torch = torch.from_numpy(H)
    D = np.empty_like(H)  # (1 - h^2) x
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # divergence is reported below
        for i in range(n_steps):
            np.multiply(u[:, None], x, out=H)
            H_torch.tanh_()
            e = v @ H - y
            L[i] = e @ e / M
            g = (2.0 / M) * e
            gv = H @ g
            np.multiply(H, H, out=D)
            np.subtract(1.0, D, out=D)
            np.multiply(D, x, out=D)
            gu = v * (D @ g)
            u -= lr * gu
            v -= lr * gv
    if not (
        np.all(np.isfinite(L))
        and np.all(np.isfinite(u))
        and np.all(np.isfinite(v))
    ):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * np.arange(n_steps), L
