"""The runs of the closure chapter: training on the moments (Theorem 2,
Eqs. 23-24), momentum (Corollary 2), Adam's twins and the tangent kernel
(Propositions 8-9).

- :func:`general_task`: a general NQF (``g, B != 0``) with labels,
  minibatches and a width-10 layer;
- :func:`closure_gap`, :func:`same_moments_gaps`: the closed recursion
  against explicit layers, and the ``d v`` term that tells widths apart
  (Theorem 2);
- :func:`momentum_gaps`, :func:`heavy_ball_predictions`: heavy-ball momentum
  against its closed recursion (Corollary 2, App. B.3);
- :func:`rotation_fixing_ones`, :func:`twin_gap`, :func:`adam_twins`,
  :func:`adam_ensemble`: a layer and its twins of the same moments under
  Adam and GD (App. B.3, Limitation 5);
- :func:`ntk_autograd`, :func:`kernel_motion`, :func:`ntk_change`: the
  tangent kernel by autograd and its motion in training (Props. 8-9).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from nqf_lite._checks import (
    integer,
    members,
    nqf,
    positive,
    weights,
    width,
)
from nqf_lite.dynamics.momentum import (
    AdamState,
    MomentumState,
    adam_step,
    heavy_ball_closed_step,
    heavy_ball_step,
)
from nqf_lite.expansion.form import NQF, ntk_from_moments, random_nqf
from nqf_lite.expansion.order import (
    frame_orthogonal_to_ones,
    moments,
    realize_moments,
)

__all__ = [
    "adam_ensemble",
    "adam_twins",
    "closure_gap",
    "general_task",
    "heavy_ball_predictions",
    "kernel_motion",
    "momentum_gaps",
    "ntk_autograd",
    "ntk_change",
    "rotation_fixing_ones",
    "same_moments_gaps",
    "twin_gap",
]

#: the moments of the heavy-ball state (Corollary 2, Eq. 97)
MOMENTS = ("M", "mu", "S", "N", "nu")


def _gap(*pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """The largest entry of ``|a - b|`` over the pairs ``(a, b)``."""
    return max(np.max(np.abs(a - b)) for a, b in pairs)


def general_task(
    seed: int,
    m: int,
    p: int,
    k: int,
    steps: int,
    *,
    d: int = 10,
    batch_size: int = 2,
    sigma: float = 0.2,
    scale_A: float = 0.5,
    scale_g: float = 0.2,
    scale_B: float = 0.05,
) -> tuple[NQF, np.ndarray, list[np.ndarray], np.ndarray]:
    """A general NQF (Eq. 20, ``g, B != 0``) with its task and a layer.

    The coefficients live in a random ``k``-dimensional subspace of ``R^p``
    (:func:`~nqf_lite.expansion.form.random_nqf`), so the width enters the
    dynamics through ``d v`` (Theorem 2, Eqs. 23-24). All draws come from
    ``numpy.random.default_rng(seed)``, in this order: the NQF, ``m``
    standard-normal labels, ``steps`` minibatches of ``batch_size`` samples
    without replacement, the weights ``sigma * N(0, 1)`` of shape ``(p, d)``.

    Parameters
    ----------
    seed : int
        Seed of the draws.
    m, p, k : int
        Samples, size of a neuron, dimension of the data subspace.
    steps : int
        Number of minibatches.
    d, batch_size : int
        Width of the layer, samples in a minibatch.
    sigma, scale_A, scale_g, scale_B : float
        Scale of the weights and of the coefficients.

    Returns
    -------
    model : NQF
    labels : ndarray, shape (m,)
    batches : list of ndarray, shape (batch_size,)
    W : ndarray, shape (p, d)

    Examples
    --------
    >>> model, y, batches, W = general_task(0, 6, 8, 4, 3)
    >>> W.shape, len(batches), model.zgz
    ((8, 10), 3, False)
    """
    m, steps = integer("m", m), integer("steps", steps)
    d, batch_size = width("d", d), integer("batch_size", batch_size)
    if batch_size > m:
        raise ValueError(f"batch_size must be <= m = {m}, got {batch_size}")
    sigma = positive("sigma", sigma)
    r = np.random.default_rng(seed)
    scales = dict(scale_A=scale_A, scale_g=scale_g, scale_B=scale_B)
    model = random_nqf(m, p, k, **scales, seed=r)
    labels = r.standard_normal(m)
    batches = [
        r.choice(m, size=batch_size, replace=False) for _ in range(steps)
    ]
    return model, labels, batches, sigma * r.standard_normal((p, d))


def closure_gap(
    model: NQF,
    Ws: Sequence[np.ndarray],
    start: tuple[np.ndarray, np.ndarray],
    y: np.ndarray,
    lr: float,
    steps: int,
    batches: Sequence[np.ndarray],
) -> float:
    """The closed recursion against explicit training (Thm 2, Eqs. 23-24).

    Each layer of ``Ws`` has the moments ``start = (M(0), mu(0))``; it and
    the closed recursion at its width train by GD and by SGD on ``batches``.

    Parameters
    ----------
    model : NQF
    Ws : sequence of ndarray, shape (p, d)
        Layers of the moments ``start``, of any widths.
    start : tuple of ndarray
    y, lr, steps
        Labels, learning rate and steps of the runs.
    batches : sequence of ndarray
        The minibatches of the SGD runs.

    Returns
    -------
    float
        The largest ``|f_W - f_closed|`` over layers, optimisers and steps.
    """
    model, Ws = nqf("model", model), members("Ws", Ws)
    worst = 0.0
    for bs in (None, batches):
        for i, W in enumerate(Ws):
            W = weights(f"Ws[{i}]", W)
            run = dict(y=y, lr=lr, steps=steps, batches=bs)
            f_W = model.train(W, **run)[1]
            f_c = model.train_closed(*start, W.shape[1], **run)[1]
            worst = max(worst, _gap((f_W, f_c)))
    return worst


def same_moments_gaps(
    seeds: Sequence[int],
    rngs: Sequence[np.random.Generator],
    task: tuple[int, int, int, int],
    lr: float,
    steps: int,
    d: int = 40,
) -> np.ndarray:
    """How far two widths of the same moments part under GD (Thm 2).

    For each seed, :func:`general_task` draws a general NQF, its labels and
    a width-10 layer; :func:`realize_moments` (with the generator of the
    same position in ``rngs``) builds a width-``d`` layer of its moments.
    GD with the same ``A`` and ``lr``: ``d v`` (Eqs. 23-24) parts them.

    Parameters
    ----------
    seeds, rngs : sequence of int, of numpy.random.Generator
    task : tuple of int
        ``(m, p, k, steps)`` of :func:`general_task`.
    lr, steps, d : float, int, int
        Learning rate and steps of GD, the second width.

    Returns
    -------
    ndarray, shape (len(seeds),)
        Each member's largest ``|f_10 - f_d|`` over steps and inputs.
    """
    seeds, rngs = members("seeds", seeds), members("rngs", rngs)
    if len(rngs) != len(seeds):
        raise ValueError(f"rngs must hold {len(seeds)} generators, one a seed")
    lr, d = positive("lr", lr), width("d", d)
    gaps = []
    for seed, r in zip(seeds, rngs):
        model, labels, _, W = general_task(seed, *task)
        W_d = realize_moments(*moments(W), d, rng=r)
        f, f_d = (model.train(V, labels, lr, steps)[1] for V in (W, W_d))
        gaps.append(np.max(np.abs(f - f_d)))
    return np.array(gaps)


def _state_gap(a: MomentumState, b: MomentumState) -> float:
    """Largest entry of ``a - b`` over the five moments, relative to b's."""
    size = max(np.max(np.abs(getattr(b, n))) for n in MOMENTS)
    return _gap(*((getattr(a, n), getattr(b, n)) for n in MOMENTS)) / size


def momentum_gaps(
    model: NQF,
    W: object,
    y: np.ndarray,
    lr: float,
    beta: float,
    batches: Sequence[np.ndarray],
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heavy-ball momentum against its closed recursion, step by step.

    From ``W`` at rest, the explicit heavy-ball step
    (:func:`~nqf_lite.dynamics.momentum.heavy_ball_step`) runs over the
    minibatches next to the closed recursion of the state ``(M, mu, S, N,
    nu)`` (Corollary 2 of the paper, App. B.3, Eq. 97), once started from the
    explicit state at every step and once run on its own from the start.

    Parameters
    ----------
    model : NQF
    W : array_like, shape (p, d)
        Initial weights (zero velocity).
    y : ndarray
        Targets.
    lr, beta : float
        Learning rate and momentum coefficient.
    batches : sequence of int arrays
        One minibatch a step.
    start : (M, mu), optional
        The moments the recursion starts from on its own; those of ``W`` by
        default.

    Returns
    -------
    one_step : ndarray, shape (steps,)
        Largest relative gap of the five moments after one closed step from
        the explicit state, against the explicit step.
    one_pred : ndarray, shape (steps,)
        The same for the predictions, relative to their largest entry.
    drift : ndarray, shape (steps,)
        Relative gap of the recursion run on its own from the start.
    """
    model, W = nqf("model", model), weights("W", W)
    W, Vel = W.copy(), np.zeros_like(W)
    d = W.shape[1]
    # the recursion, run on its own from the start
    state = MomentumState.at_rest(*(moments(W) if start is None else start))
    one_step, one_pred, drift = [], [], []
    args = (y, lr, beta)
    for batch in batches:
        # one closed step from the explicit state, then the explicit step
        here = MomentumState.from_W(W, Vel)
        step_W = heavy_ball_closed_step(model, here, d, *args, batch=batch)
        W, Vel = heavy_ball_step(model, W, Vel, *args, batch=batch)
        state = heavy_ball_closed_step(model, state, d, *args, batch=batch)
        ref, f_ref = MomentumState.from_W(W, Vel), model.predict_W(W)
        one_step.append(_state_gap(step_W, ref))
        f_step = model.predict(step_W.M, step_W.mu)
        one_pred.append(_gap((f_step, f_ref)) / np.max(np.abs(f_ref)))
        drift.append(_state_gap(state, ref))
    return np.array(one_step), np.array(one_pred), np.array(drift)


def heavy_ball_predictions(
    model: NQF,
    W: object,
    y: np.ndarray,
    lr: float,
    beta: float,
    batches: Sequence[np.ndarray],
) -> np.ndarray:
    """Predictions along explicit heavy-ball training from ``W`` at rest.

    ``Vel' = beta Vel - lr grad L(W)``, ``W' = W + Vel'`` (Corollary 2 of the
    paper, App. B.3), one minibatch a step.

    Parameters
    ----------
    model : NQF
    W : array_like, shape (p, d)
    y : ndarray
    lr, beta : float
    batches : sequence of int arrays

    Returns
    -------
    ndarray, shape (steps + 1, m) (or (steps + 1, m, V))
        The predictions before the first step and after every step.
    """
    model, W = nqf("model", model), weights("W", W)
    Vel, preds = np.zeros_like(W), [model.predict_W(W)]
    for batch in batches:
        W, Vel = heavy_ball_step(model, W, Vel, y, lr, beta, batch=batch)
        preds.append(model.predict_W(W))
    return np.array(preds)


def rotation_fixing_ones(r: np.random.Generator, d: int) -> np.ndarray:
    """A random orthogonal ``O`` (d, d) with ``O 1 = 1``.

    The identity on ``1`` and a random rotation of its complement: the layer
    ``W O`` has the moments ``(M, mu)`` of ``W`` (App. B.3).

    Parameters
    ----------
    r : numpy.random.Generator
    d : int >= 2

    Returns
    -------
    ndarray, shape (d, d)
    """
    d = integer("d", d, minimum=2)
    frame = frame_orthogonal_to_ones(d, r)
    R = np.linalg.qr(r.standard_normal((d - 1, d - 1)))[0]
    return np.ones((d, d)) / d + frame @ R @ frame.T


def twin_gap(
    model: NQF,
    step: Callable[[np.ndarray, object], tuple[np.ndarray, object]],
    W1: object,
    W2: object,
    n_steps: int,
) -> np.ndarray:
    """``max_x |f(W1_t) - f(W2_t)|`` at every step ``t = 1..n_steps``.

    Both layers follow ``W, state = step(W, state)`` from ``state = None``;
    an update that mixes the neurons only through ``1^T`` and ``p x p``
    matrices keeps twins of the same moments together (Theorem 2), an
    entrywise one such as Adam does not (App. B.3).

    Parameters
    ----------
    model : NQF
    step : callable
        ``step(W, state) -> (W_next, state_next)``.
    W1, W2 : array_like, shape (p, d)
    n_steps : int

    Returns
    -------
    ndarray, shape (n_steps,)
    """
    model, n_steps = nqf("model", model), integer("n_steps", n_steps)
    W1, W2 = weights("W1", W1), weights("W2", W2)
    s1, s2, curve = None, None, []
    for _ in range(n_steps):
        (W1, s1), (W2, s2) = step(W1, s1), step(W2, s2)
        curve.append(_gap((model.predict_W(W1), model.predict_W(W2))))
    return np.array(curve)


def ntk_autograd(model: NQF, W: object) -> np.ndarray:
    """The tangent kernel ``<grad f_x, grad f_x'>`` by torch autograd.

    The gradient of Eq. 20 of the paper, ``g^T mu + mu^T B mu + Tr[M A]``,
    with respect to the weights ``W``; Proposition 8 (Eq. 245) gives the same
    kernel from the moments
    (:func:`~nqf_lite.expansion.form.ntk_from_moments`).

    Parameters
    ----------
    model : NQF
        A scalar-output NQF.
    W : array_like, shape (p, d)

    Returns
    -------
    ndarray, shape (m, m)
    """
    model, W = nqf("model", model), weights("W", W)
    if model.V is not None or W.shape[0] != model.p:
        raise ValueError(
            f"W must have shape (p, d) = ({model.p}, d) for a scalar-output "
            f"model, got {W.shape}"
        )
    A, B, g = (torch.tensor(a) for a in (model.A, model.B, model.g))

    def f(W: torch.Tensor) -> torch.Tensor:
        mu = W.sum(dim=1)
        quad = torch.einsum("nij,i,j->n", B, mu, mu)
        return g @ mu + quad + torch.einsum("nij,ik,jk->n", A, W, W)

    J = torch.autograd.functional.jacobian(f, torch.tensor(W)).reshape(
        model.m, -1
    )
    return (J @ J.T).numpy()


def kernel_motion(
    model: NQF,
    M: np.ndarray,
    mu: np.ndarray,
    d: int,
    y: np.ndarray,
    lr: float,
    steps: int,
) -> float:
    """Relative change ``|Theta_T - Theta_0|_F / |Theta_0|_F`` of the
    tangent kernel in ``steps`` GD steps of the closed dynamics.

    The kernel is a function of the moments (Proposition 8, Eq. 245) and the
    moments follow Theorem 2 (Eqs. 23-24) with the width ``d`` a number.

    Parameters
    ----------
    model : NQF
    M, mu : ndarray
        Initial moments.
    d : int
    y : ndarray
    lr : float
    steps : int

    Returns
    -------
    float
    """
    model, steps = nqf("model", model), integer("steps", steps)
    T0 = ntk_from_moments(model, M, mu, d)
    for _ in range(steps):
        M, mu = model.closed_step(M, mu, d, y, lr)
    T = ntk_from_moments(model, M, mu, d)
    return np.linalg.norm(T - T0) / np.linalg.norm(T0)


def ntk_change(
    seed: int,
    alpha: float,
    widths: object,
    *,
    m: int = 8,
    p: int = 6,
    steps: int = 100,
    lr: float = 0.08,
) -> np.ndarray:
    """Relative tangent-kernel motion of one random problem at each width,
    with the coefficients scaled as in Proposition 9 of the paper.

    From ``numpy.random.default_rng(seed)``: ``g`` (m, p) standard normal,
    ``A`` of :func:`~nqf_lite.expansion.form.random_nqf` (``scale_A=0.5``),
    labels ``0.5 N(0, 1)`` and ``mu(0)`` standard normal. At width ``d`` the
    NQF has ``A d^(-alpha)``, ``g / sqrt(d)``, ``B = 0`` and starts from
    ``M = I``; :func:`kernel_motion` measures the kernel's change.

    Parameters
    ----------
    seed : int
    alpha : float
        The exponent ``alpha_A >= 0`` of ``A = Theta(d^(-alpha_A))``.
    widths : array_like of int
    m, p, steps : int
    lr : float

    Returns
    -------
    ndarray, shape (len(widths),)

    Examples
    --------
    >>> change = ntk_change(0, 0.5, [10**6, 10**8])
    >>> bool(change[1] < change[0])
    True
    """
    widths = np.asarray(widths)
    if widths.ndim != 1 or widths.size == 0 or widths.dtype.kind not in "iu":
        raise ValueError(
            f"widths must be a non-empty 1-D array of integers, got {widths!r}"
        )
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    r = np.random.default_rng(seed)
    # g, A = O(1); rescaled with d below
    g0 = r.standard_normal((m, p))
    A0 = random_nqf(m, p, scale_A=0.5, seed=r).A
    y, mu0 = 0.5 * r.standard_normal(m), r.standard_normal(p)
    out = []
    for d in widths:
        model = NQF(A0 * d ** (-alpha), g=g0 / np.sqrt(d))
        out.append(
            kernel_motion(model, np.eye(p), mu0.copy(), int(d), y, lr, steps)
        )
    return np.array(out)


def adam_twins(
    model: NQF,
    y: np.ndarray,
    W: object,
    r: np.random.Generator,
    lr_adam: float,
    lr_gd: float,
    steps: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A layer and its twins of the same moments under Adam and under GD.

    From ``r``, in this order: an orthogonal ``O`` with ``O 1 = 1``
    (:func:`rotation_fixing_ones`) and a permutation of the columns. Adam
    (:func:`~nqf_lite.dynamics.momentum.adam_step`, entrywise) separates ``W``
    from ``W O`` but not from the permuted ``W``; full-batch GD keeps ``W O``
    with ``W`` (Theorem 2; App. B.3, Limitation 5).

    Parameters
    ----------
    model : NQF
    y : ndarray
    W : array_like, shape (p, d)
    r : numpy.random.Generator
    lr_adam, lr_gd : float
        Learning rates of Adam and of GD.
    steps : int

    Returns
    -------
    tuple of three ndarray, shape (steps,)
        :func:`twin_gap` of Adam with ``W O``, of Adam with the permuted
        ``W``, and of GD with ``W O``.
    """
    model, W = nqf("model", model), weights("W", W)
    lr_adam, lr_gd = positive("lr_adam", lr_adam), positive("lr_gd", lr_gd)

    def adam(W: np.ndarray, state: AdamState | None) -> tuple:
        state = AdamState.zeros_like(W) if state is None else state
        return adam_step(model, W, state, y, lr_adam)

    def gd(W: np.ndarray, state: None) -> tuple:
        return model.gd_step(W, y, lr_gd), None

    d = W.shape[1]
    O = rotation_fixing_ones(r, d)
    twins = ((adam, W @ O), (adam, W[:, r.permutation(d)]), (gd, W @ O))
    return tuple(twin_gap(model, step, W, twin, steps) for step, twin in twins)


def adam_ensemble(
    model: NQF,
    y: np.ndarray,
    seeds: Sequence[int],
    shape: tuple[int, int],
    lr_adam: float,
    lr_gd: float,
    steps: int,
    sigma: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`adam_twins` over an ensemble of layers (App. B.3, Lim. 5).

    Member ``j`` draws from ``numpy.random.default_rng(seeds[j])`` its
    layer ``sigma * N(0, 1)`` of ``shape``, then its twins.

    Parameters
    ----------
    model, y, lr_adam, lr_gd, steps
        As in :func:`adam_twins`.
    seeds, shape, sigma : sequence of int, (p, d), float

    Returns
    -------
    tuple of three ndarray, shape (len(seeds), steps)
        The curves of :func:`adam_twins`, one row a member.
    """
    seeds, sigma = members("seeds", seeds), positive("sigma", sigma)
    curves = []
    for seed in seeds:
        r = np.random.default_rng(seed)
        W = sigma * r.standard_normal(shape)
        curves.append(adam_twins(model, y, W, r, lr_adam, lr_gd, steps))
    return tuple(np.array(rows) for rows in zip(*curves))
