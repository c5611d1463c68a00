"""Optimisers beyond plain SGD on an NQF: heavy-ball momentum closes, Adam does
not.

Polyak heavy-ball momentum (PyTorch's ``SGD(momentum=beta)``) keeps a velocity
``Vel`` next to the weights ``W`` (p x d, one neuron per column)::

    Vel <- beta * Vel - lr * grad L(W),      W <- W + Vel.

For an NQF the gradient is ``v 1^T + H W`` (paper Eq. 96), so every update is a
"linear-span" update in the sense of the paper's Cor. 2 (App. B.3).  The
moments ``(M, mu)`` alone no longer suffice, but adding the velocity's moments
gives a closed state of fixed size, whatever the width d::

    M = W W^T,   mu = W 1,   S = W Vel^T,   N = Vel Vel^T,   nu = Vel 1.

:func:`heavy_ball_closed_step` advances that state exactly (Cor. 2 of App. B.3,
Eq. 209, written out for Polyak momentum); :func:`heavy_ball_step` is the
explicit update of every neuron. Adam (:func:`adam_step`) acts elementwise on W
and therefore breaks the closure (paper Limitation 5); it is here as the
counter-example.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nqf_lite._checks import (
    as_array,
    check_symmetric,
    nonnegative,
    nqf,
    positive,
    shaped,
    unit_interval,
    width,
)
from nqf_lite.expansion.form import NQF, REALIZABLE_RTOL

__all__ = [
    "AdamState",
    "MomentumState",
    "adam_step",
    "heavy_ball_closed_step",
    "heavy_ball_step",
]


# ----------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------
def _finite_step(lr: float, *arrays: np.ndarray) -> None:
    """Raise ``FloatingPointError`` when a step produced NaN or inf (a learning
    rate too large)."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise FloatingPointError(
            f"the step diverged (non-finite weights) at lr = {lr:g}: lower "
            "the learning rate"
        )


# ----------------------------------------------------------------------------
# heavy-ball momentum
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class MomentumState:
    """Closed state of heavy-ball momentum on an NQF (paper App. B.3, Cor. 2).

    Attributes
    ----------
    M : ndarray, shape (p, p)
        Second moment of the weights, ``W W^T``.
    mu : ndarray, shape (p,)
        First moment of the weights, ``W 1``.
    S : ndarray, shape (p, p)
        Weight-velocity cross moment ``W Vel^T`` (not symmetric in general).
    N : ndarray, shape (p, p)
        Second moment of the velocity, ``Vel Vel^T``.
    nu : ndarray, shape (p,)
        First moment of the velocity, ``Vel 1``.
    """

    M: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    N: np.ndarray
    nu: np.ndarray

    def __post_init__(self) -> None:
        M = as_array("M", self.M)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(
                f"M must be a square (p, p) matrix, got shape {M.shape}"
            )
        p = M.shape[0]
        object.__setattr__(self, "M", shaped("M", M, (p, p)))
        object.__setattr__(self, "mu", shaped("mu", self.mu, (p,)))
        object.__setattr__(self, "S", shaped("S", self.S, (p, p)))
        object.__setattr__(self, "N", shaped("N", self.N, (p, p)))
        object.__setattr__(self, "nu", shaped("nu", self.nu, (p,)))
        if p == 0:
            raise ValueError(
                "M must be at least 1 x 1 (p >= 1 parameters per neuron)"
            )
        check_symmetric("M", self.M)
        check_symmetric("N", self.N)
        # (M, S, N) are the Gram matrix of the stacked [W; Vel]: it must be
        # positive semi-definite
        gram = np.block([[self.M, self.S], [self.S.T, self.N]])
        lam = np.linalg.eigvalsh(0.5 * (gram + gram.T))
        scale = max(float(np.abs(gram).max()), 1e-300)
        if lam[0] < -REALIZABLE_RTOL * scale:
            raise ValueError(
                "(M, S, N) must be the moments W W^T, W Vel^T, Vel Vel^T of "
                "some weights and velocity: "
                "[[M, S], [S^T, N]] must be positive semi-definite, but "
                f"has eigenvalue {lam[0]:.3g}"
            )

    @classmethod
    def _trusted(
        cls,
        M: np.ndarray,
        mu: np.ndarray,
        S: np.ndarray,
        N: np.ndarray,
        nu: np.ndarray,
    ) -> MomentumState:
        """A state from moments already known to be consistent (the exact
        step of a checked state): made without checking them again."""
        state = object.__new__(cls)
        for name, value in zip(["M", "mu", "S", "N", "nu"], (M, mu, S, N, nu)):
            object.__setattr__(state, name, value)
        return state

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return self.M.shape[0]

    @classmethod
    def at_rest(cls, M: np.ndarray, mu: np.ndarray) -> MomentumState:
        """State with zero velocity: ``S = N = 0`` and ``nu = 0``.

        With ``Vel(0) = 0`` (PyTorch's default) ``(M(0), mu(0))`` fixes the
        whole trajectory.
        """
        M = as_array("M", M)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(
                f"M must be a square (p, p) matrix, got shape {M.shape}"
            )
        p = M.shape[0]
        return cls(M, mu, np.zeros((p, p)), np.zeros((p, p)), np.zeros(p))

    @classmethod
    def from_W(cls, W: np.ndarray, Vel: np.ndarray) -> MomentumState:
        """Moments of explicit weights ``W`` and velocity ``Vel`` (both p x
        d)."""
        W = as_array("W", W)
        if W.ndim != 2 or 0 in W.shape:
            raise ValueError(
                f"W must have shape (p, d) with p, d >= 1, got {W.shape}"
            )
        Vel = shaped("Vel", Vel, W.shape)
        return cls(
            W @ W.T, W.sum(axis=1), W @ Vel.T, Vel @ Vel.T, Vel.sum(axis=1)
        )


def heavy_ball_step(
    model: NQF,
    W: np.ndarray,
    Vel: np.ndarray,
    y: np.ndarray,
    lr: float,
    beta: float,
    batch: np.ndarray | None = None,
    weight_decay: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """One explicit heavy-ball step on every neuron.

    ``Vel' = beta Vel - lr (grad L(W) + weight_decay W)`` and
    ``W' = W + Vel'``. This is
    ``torch.optim.SGD(lr=lr, momentum=beta, weight_decay=weight_decay)`` with
    ``Vel = -lr * momentum_buffer`` (dampening 0, no Nesterov).

    Parameters
    ----------
    model : NQF
        The quadratic model (Eq. 20).
    W, Vel : ndarray, shape (p, d)
        Weights and velocity.
    y : ndarray
        Targets, shape (m,) or (m, V).
    lr : float
        Learning rate ``eta > 0``.
    beta : float
        Momentum coefficient in ``[0, 1)``; ``beta = 0`` is plain SGD (Eq. 21).
    batch : int array, optional
        Sample indices of the minibatch (default: all samples).
    weight_decay : float
        L2 coefficient ``gamma >= 0`` (adds ``gamma W`` to the gradient).

    Returns
    -------
    (W_next, Vel_next) : tuple of ndarray
    """
    model = nqf("model", model)
    W = model._W(W)
    Vel = shaped("Vel", Vel, W.shape)
    lr = positive("lr", lr)
    beta = unit_interval("beta", beta)
    weight_decay = nonnegative("weight_decay", weight_decay)
    grad = model.grad_W(W, y, batch=batch) + weight_decay * W
    Vel_next = beta * Vel - lr * grad
    W_next = W + Vel_next
    _finite_step(lr, W_next, Vel_next)
    return W_next, Vel_next


def heavy_ball_closed_step(
    model: NQF,
    state: MomentumState,
    d: int,
    y: np.ndarray,
    lr: float,
    beta: float,
    batch: np.ndarray | None = None,
    weight_decay: float = 0.0,
) -> MomentumState:
    """Advance the closed heavy-ball state ``(M, mu, S, N, nu)`` by one step,
    exactly.

    With ``v, H`` of Theorem 2 (Eqs. 23-24) evaluated at ``(M, mu)`` and
    ``H -> H + gamma I`` for weight decay, the gradient is ``G = v 1^T + H W``
    (Eq. 96) and::

        nu' = beta nu - lr (d v + H mu)
        X   = beta S - lr (mu v^T + M H)                               (= W
        Vel'^T)
        N'  = beta^2 N - beta lr (nu v^T + v nu^T + S^T H + H S)
              + lr^2 (d v v^T + v mu^T H + H mu v^T + H M H)
        M'  = M + X + X^T + N',   S' = X + N',   mu' = mu + nu'.

    With ``beta = 0`` this reduces to Theorem 2.  The width enters only
    through ``d v``.

    Parameters
    ----------
    model : NQF
    state : MomentumState
        Current closed state (``MomentumState.at_rest(M, mu)`` to start).
    d : int
        Width (number of neurons) of the model the state describes.
    y, lr, beta, batch, weight_decay
        As in :func:`heavy_ball_step`.

    Returns
    -------
    MomentumState
        The state after the step.
    """
    model = nqf("model", model)
    if not isinstance(state, MomentumState):
        raise TypeError(
            f"state must be a MomentumState, got {type(state).__name__}"
        )
    if state.p != model.p:
        raise ValueError(
            f"state has p = {state.p} but the model has p = {model.p}"
        )
    d = width("d", d)
    lr = positive("lr", lr)
    beta = unit_interval("beta", beta)
    weight_decay = nonnegative("weight_decay", weight_decay)
    M, mu, S, N, nu = state.M, state.mu, state.S, state.N, state.nu
    v, H = model.vH(M, mu, y, batch=batch)
    H = H + weight_decay * np.eye(model.p)
    Hmu = H @ mu
    nu_next = beta * nu - lr * (d * v + Hmu)
    X = beta * S - lr * (np.outer(mu, v) + M @ H)
    cross = np.outer(nu, v) + S.T @ H
    GGt = d * np.outer(v, v) + np.outer(v, Hmu) + np.outer(Hmu, v) + H @ M @ H
    N_next = beta**2 * N - beta * lr * (cross + cross.T) + lr * (lr * GGt)
    _finite_step(lr, X, N_next, nu_next)
    _finite_step(lr, M + X + X.T + N_next)
    return MomentumState._trusted(
        M + X + X.T + N_next, mu + nu_next, X + N_next, N_next, nu_next
    )


# ----------------------------------------------------------------------------
# Adam: the counter-example
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AdamState:
    """Adam's running moments (elementwise, shape of W) and step count."""

    m1: np.ndarray
    m2: np.ndarray
    t: int

    @classmethod
    def zeros_like(cls, W: np.ndarray) -> AdamState:
        """Fresh state for weights ``W``."""
        W = as_array("W", W, ndim=2)
        if 0 in W.shape:
            raise ValueError(
                f"W must have shape (p, d) with p, d >= 1, got {W.shape}"
            )
        return cls(np.zeros_like(W), np.zeros_like(W), 0)


def adam_step(
    model: NQF,
    W: np.ndarray,
    state: AdamState,
    y: np.ndarray,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    batch: np.ndarray | None = None,
) -> tuple[np.ndarray, AdamState]:
    """One Adam step on W (``torch.optim.Adam`` defaults, no weight decay).

    The update ``m_hat / (sqrt(v_hat) + eps)`` is taken entry by entry, so it
    commutes with permutations of the neurons but not with rotations
    ``W -> W O`` that keep ``(M, mu)`` fixed: Adam is not of the form of
    Cor. 2 (Eq. 209) and the dynamics no longer close on ``(M, mu)``.

    Returns
    -------
    (W_next, state_next)
    """
    model = nqf("model", model)
    W = model._W(W)
    if not isinstance(state, AdamState):
        raise TypeError(
            f"state must be an AdamState, got {type(state).__name__}"
        )
    if state.m1.shape != W.shape or state.m2.shape != W.shape:
        raise ValueError(f"state moments must have the shape of W {W.shape}")
    lr = positive("lr", lr)
    if not isinstance(betas, tuple) or len(betas) != 2:
        raise TypeError(f"betas must be a tuple (beta1, beta2), got {betas!r}")
    b1 = unit_interval("betas[0]", betas[0])
    b2 = unit_interval("betas[1]", betas[1])
    eps = positive("eps", eps)
    grad = model.grad_W(W, y, batch=batch)
    t = state.t + 1
    m1 = b1 * state.m1 + (1 - b1) * grad
    m2 = b2 * state.m2 + (1 - b2) * grad**2
    m1_hat = m1 / (1 - b1**t)
    m2_hat = m2 / (1 - b2**t)
    W_next = W - lr * m1_hat / (np.sqrt(m2_hat) + eps)
    _finite_step(lr, W_next, m1, m2)
    return W_next, AdamState(m1, m2, t)
