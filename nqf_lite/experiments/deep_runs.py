"""The runs of chapter 9: a tanh MLP next to its deep NQFs (the paper's Fig.
8, App. B.4 and C) and the live checks of Theorems 14 and 15.

:func:`mlp_task` and :func:`mlp_ensemble` build the teacher-student task and
the network with its 2-layer and 1-layer NQFs; :func:`train_together` trains
them, every seed at once; :func:`rel_gap`, :func:`mean_se` and
:func:`bound_between` are the statistics of the claims on their loss gaps;
:func:`mlp_depth_gap` is the gap at any even depth; ``theorem14_*`` and
``theorem15_*`` check Theorems 14 and 15 on the MLP stack (``_check``) and on
a general stack with ``g, B != 0`` (``_general``). The attention half of Fig.
8 is :mod:`nqf_lite.experiments.attention_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import generator, integer, natural, positive, sequence
from nqf_lite.deep.deep_nqf import (
    DeepNQF,
    compress_deep,
    deep_moments,
    realize_deep,
    structure_subspace,
)
from nqf_lite.deep.general import (
    order_gradients_by_structure,
    random_general_layer,
)
from nqf_lite.experiments.train import descend_many

__all__ = [
    "N_TEST",
    "N_TRAIN",
    "bound_between",
    "mean_se",
    "mlp_depth_gap",
    "mlp_ensemble",
    "mlp_forward",
    "mlp_task",
    "pair",
    "rel_gap",
    "theorem14_check",
    "theorem14_general",
    "theorem15_check",
    "theorem15_general",
    "train_together",
]

#: App. C: 200 training and 1000 test inputs per task
N_TRAIN, N_TEST = 200, 1000
F64 = torch.float64


def _gaussian(shape: tuple, gen: torch.Generator, var: float) -> Tensor:
    return var**0.5 * torch.randn(*shape, generator=gen, dtype=F64)


def mlp_forward(Ws: Sequence[Tensor], x: Tensor) -> Tensor:
    """The bias-free tanh MLP ``W_L tanh(... tanh(W_1 x))`` (App. C).

    ``Ws`` are the weight matrices, each ``(..., out, in)``; ``x`` the
    inputs ``(..., n, in)``, one row an input; the result ``(..., n, out)``.
    """
    a = x
    for W in Ws[:-1]:
        a = torch.tanh(a @ W.transpose(-1, -2))
    return a @ Ws[-1].transpose(-1, -2)


def mlp_task(
    seed_list: Sequence[int],
    variances: Sequence[float],
    depth: int,
    width: int = 16,
    d_in: int = 8,
    unit: bool = True,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
) -> tuple[Tensor, Tensor, list[Tensor]]:
    """A teacher-student task for a tanh MLP, one member per (variance,
    seed) (the paper's Fig. 8, App. C).

    Each member draws, from its own seed: a teacher of the same architecture
    with weight variance ``1/fan_in``, ``n_train + n_test`` standard Gaussian
    inputs, and the student's initial weights of variance ``var``.

    Parameters
    ----------
    seed_list : sequence of int
    variances : sequence of float > 0
        Initial variances of the student (members ordered variance-major).
    depth, width, d_in : int
        Weight matrices, hidden width, input size (one output).
    unit : bool
        Rescale the targets to unit variance on the training inputs.
    n_train, n_test : int

    Returns
    -------
    X : Tensor ``(S, n_train + n_test, d_in)``
    Y : Tensor ``(S, n_train + n_test, 1)``
    W : list of Tensor
        The initial weights, ``W[l]`` of shape ``(S, out, in)``.

    Raises
    ------
    ValueError
        On an empty ``seed_list`` or ``variances``, or a bad size.
    """
    seed_list = [natural("seed_list[]", s) for s in seed_list]
    variances = [
        positive(f"variances[{i}]", v)
        for i, v in enumerate(sequence("variances", variances, "number"))
    ]
    if not seed_list or not variances:
        raise ValueError("seed_list and variances must not be empty")
    depth, width = integer("depth", depth), integer("width", width)
    d_in, n_train = integer("d_in", d_in), integer("n_train", n_train)
    n_test = natural("n_test", n_test)
    dims = [d_in] + [width] * (depth - 1) + [1]
    shapes = [(dims[i + 1], dims[i]) for i in range(depth)]
    X, Y, W0 = [], [], []
    for var in variances:
        for s in seed_list:
            gen = torch.Generator().manual_seed(s)
            teacher = [_gaussian(sh, gen, 1.0 / sh[1]) for sh in shapes]
            x = torch.randn(n_train + n_test, d_in, generator=gen, dtype=F64)
            y = mlp_forward(teacher, x)
            X.append(x)
            Y.append(y / y[:n_train].std() if unit else y)
            W0.append([_gaussian(sh, gen, var) for sh in shapes])
    return torch.stack(X), torch.stack(Y), [torch.stack(w) for w in zip(*W0)]


def pair(U: Tensor, V: Tensor) -> Tensor:
    """The block ``V tanh(U a)`` as NQF neurons: column ``i`` is
    ``(u_i, V[:, i])`` (Prop. 1; one block of ``DeepNQF.mlp_weights``).

    ``U`` is ``(..., h, in)``, ``V`` ``(..., out, h)``; the result
    ``(..., in + out, h)``.
    """
    return torch.cat([U.transpose(-1, -2), V], dim=-2)


def _mlp_stack(depth: int) -> DeepNQF:
    """The ``depth // 2``-layer NQF of the task's MLP (input 8, width 16)."""
    return DeepNQF.mlp([8] + [16] * (depth - 1) + [1])


def mlp_ensemble(
    seed_list: Sequence[int],
    var: float,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
) -> tuple[tuple, dict]:
    """The 4-layer MLP of the paper's Fig. 8 and its two NQFs from the same
    weights, for :func:`train_together` (App. B.4, App. C).

    The 2-layer NQF pairs ``(W_1, W_2)`` and ``(W_3, W_4)``; the 1-layer NQF
    pairs ``(W_1, W_4)`` and gets the constant term ``C(x)`` (Eq. 219) that
    makes it equal the network at step zero.

    Returns
    -------
    task : tuple ``(X, Y, W, C)``
        :func:`mlp_task` at variance ``var`` and ``C``, ``(S, n, 1)``.
    models : dict
        ``"model"``, ``"nqf2"``, ``"nqf1"`` for :func:`train_together`.
    """
    X, Y, W = mlp_task(seed_list, (var,), 4, n_train=n_train, n_test=n_test)
    nqf2, nqf1 = _mlp_stack(4), _mlp_stack(2)
    with torch.no_grad():
        C = mlp_forward(W, X) - nqf1.predict_W(X, [pair(W[0], W[3])])
    models = {
        "model": (W, mlp_forward, None),
        "nqf2": (
            [pair(W[0], W[1]), pair(W[2], W[3])],
            lambda P, x: nqf2.predict_W(x, P),
            None,
        ),
        "nqf1": ([pair(W[0], W[3])], lambda P, x: nqf1.predict_W(x, P), C),
    }
    return (X, Y, W, C), models


def _mse(f: Tensor, y: Tensor) -> Tensor:
    return ((f - y) ** 2).mean(dim=(-2, -1))


def train_together(
    models: dict,
    X: Tensor,
    Y: Tensor,
    name: str,
    lr: float,
    steps: int,
    every: int,
    n_test: int | None = None,
    outputs: bool = False,
    n_train: int = N_TRAIN,
) -> dict:
    """Train several models, each on every member, at once (the paper's Fig.
    8; full-batch GD, momentum or Adam of Eq. 21, Cor. 2).

    All models descend by :func:`~nqf_lite.experiments.train.descend_many`
    on the sum of their mean squared errors over the members; each member
    of each model gets exactly its own gradient.

    Parameters
    ----------
    models : dict
        ``name -> (initial parameters, forward(P, x), offset)``: the
        parameters a list of ``(S, ...)`` tensors, ``forward`` mapping them
        and inputs ``(S, n, ...)`` to outputs ``(S, n, 1)``, ``offset`` a
        fixed term ``C(x)`` of shape ``(S, n, 1)`` on all inputs, or None.
    X, Y : Tensor
        Inputs ``(S, n, ...)`` and targets ``(S, n, 1)``; the first
        ``n_train`` inputs are the training set, the rest the test set.
    name : {"gd", "momentum", "adam"}
    lr : float > 0
    steps, every : int
        Steps, and record every this many steps.
    n_test : int, optional
        Only the first ``n_test`` members (all if None) are evaluated on the
        test set; the others record NaN there.
    outputs : bool
        Record every model's outputs on the training set instead.
    n_train : int

    Returns
    -------
    dict
        ``name -> (records, 2, S)``: training and test MSE every ``every``
        steps; with ``outputs``, ``name -> (records, S, n_train, 1)``.

    Raises
    ------
    ValueError
        On no models, inputs and targets of different members or inputs, or
        ``n_test`` outside ``0 .. S``.
    """
    if not isinstance(models, dict) or not models:
        raise ValueError("models must be a non-empty dict of models")
    if X.shape[:2] != Y.shape[:2]:
        raise ValueError(
            f"X and Y must share members and inputs, got shapes "
            f"{tuple(X.shape)} and {tuple(Y.shape)}"
        )
    n_train = integer("n_train", n_train)
    parts = {"train": slice(None, n_train), "test": slice(n_train, None)}
    n_test = X.shape[0] if n_test is None else natural("n_test", n_test)
    if n_test > X.shape[0]:
        raise ValueError(
            f"n_test must be at most the {X.shape[0]} members, got {n_test}"
        )

    def output(P, k, part, members=slice(None)):
        _, fwd, offset = models[k]
        f = fwd([p[members] for p in P[k]], X[members, parts[part]])
        return f if offset is None else f + offset[members, parts[part]]

    def loss(P, k, part, members=slice(None)):
        return _mse(output(P, k, part, members), Y[members, parts[part]])

    def record(P):
        if outputs:
            return {k: output(P, k, "train") for k in models}
        out = {}
        for k in models:
            train = loss(P, k, "train")
            test = torch.full_like(train, np.nan)
            if n_test:
                test[:n_test] = loss(P, k, "test", slice(n_test))
            out[k] = torch.stack([train, test])
        return out

    def total(P):
        return sum(loss(P, k, "train").sum() for k in models)

    params = {k: m[0] for k, m in models.items()}
    run = descend_many(params, total, lr, steps, name, record, every)
    return run.history


def rel_gap(ref: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The relative loss gap of two training curves (this book; the measure
    of the paper's Fig. 8 comparison).

    ``mean_t |L_ref(t) - L_other(t)| / mean_t L_ref(t)``, one value per
    member, on the training losses ``[:, 0]``.

    ``ref`` and ``other`` are ``(records, 2, S)`` as
    :func:`train_together` returns them (or ``(records, 1, S)``).
    """
    return np.abs(other[:, 0] - ref[:, 0]).mean(0) / ref[:, 0].mean(0)


def mean_se(values: np.ndarray) -> tuple[float, float]:
    """The ensemble mean of at least two ``values`` and its standard
    error (``ddof=1``)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        raise ValueError(
            f"values must hold at least two values, got {values.size}"
        )
    return values.mean(), values.std(ddof=1) / np.sqrt(values.size)


def bound_between(low: np.ndarray, high: np.ndarray) -> float:
    """A bound between two groups of positive per-seed gaps (this book).

    On a log scale (the gaps are skewed), the point as many standard
    deviations above the mean of the ``low`` group as below that of the
    ``high`` group: ``exp((m_lo s_hi + m_hi s_lo) / (s_lo + s_hi))`` (with
    equal spreads, the geometric middle).

    ``low`` and ``high`` hold at least two positive values each.
    """
    logs = []
    for what, g in (("low", low), ("high", high)):
        g = np.asarray(g, dtype=float)
        if g.size < 2 or not (g > 0).all():
            raise ValueError(
                f"{what} must hold at least two positive values, got {g!r}"
            )
        logs.append(np.log(g))
    (m_lo, m_hi), (s_lo, s_hi) = zip(
        *((v.mean(), v.std(ddof=1)) for v in logs)
    )
    return float(np.exp((m_lo * s_hi + m_hi * s_lo) / (s_lo + s_hi)))


def mlp_depth_gap(
    seed_list: Sequence[int],
    variances: Sequence[float],
    depth: int,
    lr: float = 0.01,
    steps: int = 100,
    every: int = 5,
) -> np.ndarray:
    """The relative loss gap of a tanh MLP of even ``depth`` to its
    ``depth / 2``-layer NQF under Adam, targets at the teacher's own scale
    (this book, beyond the paper's Fig. 8; App. B.4).

    Parameters
    ----------
    seed_list, variances : as for :func:`mlp_task`
    depth : int
        An even number of weight matrices, at least 2.
    lr, steps, every : Adam's rate, its steps and the record interval

    Returns
    -------
    ndarray ``(len(variances), len(seed_list))``
    """
    depth = integer("depth", depth, minimum=2)
    if depth % 2:
        raise ValueError(f"depth must be even, got {depth}")
    X, Y, W0 = mlp_task(seed_list, variances, depth=depth, unit=False)
    stack = _mlp_stack(depth)
    models = {
        "model": (W0, mlp_forward, None),
        "nqf": (
            [pair(W0[2 * j], W0[2 * j + 1]) for j in range(depth // 2)],
            lambda P, x: stack.predict_W(x, P),
            None,
        ),
    }
    runs = train_together(models, X, Y, "adam", lr, steps, every, n_test=0)
    gap = rel_gap(runs["model"], runs["nqf"])
    return gap.reshape(len(variances), len(seed_list))


def _source(gen: object) -> np.random.Generator:
    if gen is None:
        raise TypeError("gen must be a numpy Generator or an int seed")
    return generator("gen", gen)


def _gap(a: Tensor, b: Tensor) -> float:
    return float((a - b).abs().max())


def theorem14_check(
    seed: int, steps: int = 100, n: int = 8
) -> tuple[float, float, float]:
    """Theorem 14 (Eqs. 221-225) on the 2-layer NQF of the 4-layer MLP:
    widths ``(16, 16)`` and ``(40, 25)`` with equal per-layer ``(M, mu)``
    and the closed recursion, trained by minibatch SGD (batches of 4).

    Parameters
    ----------
    seed, steps, n : int
        The seed, the SGD steps and the training inputs (at least 4).

    Returns
    -------
    (width gap, closed gap, move) : floats
        Max output gaps of the wide model and of the closed recursion to
        the explicit run over ``steps`` steps on ``n`` inputs, and how far
        the outputs moved.
    """
    seed, steps = natural("seed", seed), integer("steps", steps)
    n = integer("n", n, minimum=4)
    stack = _mlp_stack(4)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=gen, dtype=F64)
    y = torch.randn(n, 1, generator=gen, dtype=F64)
    Ws = [0.3 * torch.randn(p, 16, generator=gen, dtype=F64) for p in (24, 17)]
    Ms, mus = deep_moments(Ws)
    Ws_wide = realize_deep(Ms, mus, [40, 25], rng=rng)
    batches = [rng.choice(n, 4, replace=False) for _ in range(steps)]
    lrs = [0.03, 0.05]
    _, out = stack.train(x, y, Ws, lrs, steps, batches=batches)
    _, out_wide = stack.train(x, y, Ws_wide, lrs, steps, batches=batches)
    _, out_closed = stack.train_closed(
        x, y, Ms, mus, [16, 16], lrs, steps, batches=batches
    )
    return _gap(out, out_wide), _gap(out, out_closed), _gap(out[-1], out[0])


def theorem14_general(
    gen: object, steps: int = 40, n: int = 8, lr: float = 0.05
) -> dict:
    """Theorem 14 with every term of Eq. 219 (``g, B != 0``): the width is
    part of the state (Eqs. 222-225).

    Widths ``(5, 8)`` and ``(11, 13)`` with the same initial ``(M, mu)``
    are trained by minibatch SGD next to the closed recursion run with
    either pair of widths; Eqs. 224-225 written out term by term
    (``order_gradients_by_structure``) are compared with autograd.

    Parameters
    ----------
    gen : numpy Generator or int seed
    steps, n, lr : SGD steps, training inputs (at least 4), learning rate

    Returns
    -------
    dict
        ``"closed"``, ``"wrong-width"`` (recursion at (11, 13) vs SGD at
        (5, 8)), ``"vH"`` (max relative difference), ``"v0"`` (smallest
        ``max|v^(l)|`` at step zero), ``"moved"`` and ``"problem"`` (stack,
        data, order parameters and rate).
    """
    gen = _source(gen)
    steps, n = integer("steps", steps), integer("n", n, minimum=4)
    lr = positive("lr", lr)
    stack = DeepNQF(
        [
            random_general_layer(6, 4, 3, gen),
            random_general_layer(5, 3, 1, gen),
        ]
    )
    x = torch.as_tensor(gen.standard_normal((n, 4)))
    y = torch.as_tensor(gen.standard_normal((n, 1)))
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((p, d)))
        for p, d in ((6, 5), (5, 8))
    ]  # widths (5, 8)
    Ms, mus = deep_moments(Ws)
    Ws_wide = realize_deep(Ms, mus, [11, 13], rng=gen)  # same (M, mu)
    batches = [gen.choice(n, 4, replace=False) for _ in range(steps)]
    Ws_end, out = stack.train(x, y, Ws, lr, steps, batches=batches)
    _, out_wide = stack.train(x, y, Ws_wide, lr, steps, batches=batches)
    closed = {  # the recursion of Eqs. 222-223 with either pair of widths
        d: stack.train_closed(x, y, Ms, mus, d, lr, steps, batches=batches)[1]
        for d in ((5, 8), (11, 13))
    }
    # Eqs. 224-225 term by term against autograd, at the start and the end
    vH_error = 0.0
    for state in ((Ms, mus), deep_moments(Ws_end)):
        by_autograd = stack.order_gradients(x, y, *state)
        by_structure = order_gradients_by_structure(stack, x, y, *state)
        for a, b in zip(sum(by_autograd, []), sum(by_structure, [])):
            vH_error = max(
                vH_error, float((a - b).abs().max() / b.abs().max())
            )
    v0 = order_gradients_by_structure(stack, x, y, Ms, mus)[0]
    return {
        "closed": max(_gap(out, closed[5, 8]), _gap(out_wide, closed[11, 13])),
        "wrong-width": _gap(out, closed[11, 13]),
        "vH": vH_error,
        "v0": min(float(v.abs().max()) for v in v0),
        "moved": _gap(out[-1], out[0]),
        "problem": dict(stack=stack, x=x, y=y, Ms=Ms, mus=mus, lr=lr),
    }


def theorem15_check(seed: int, steps: int = 100, m: int = 3) -> tuple:
    """Theorem 15 (Eq. 236) on the 2-layer NQF of the 4-layer MLP: widths
    ``(40, 30)`` compressed layer by layer (layer 2 not projected), both
    trained by full-batch GD with layer-wise rates.

    Parameters
    ----------
    seed, steps, m : int
        The seed, the GD steps and the training inputs.

    Returns
    -------
    (output gap, compressed widths, move, problem)
        ``problem`` is ``dict(x, y, Ws, lr)`` (``m`` inputs).
    """
    seed, steps = natural("seed", seed), integer("steps", steps)
    m = integer("m", m)
    stack = _mlp_stack(4)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, 8, generator=gen, dtype=F64)
    y = torch.randn(m, 1, generator=gen, dtype=F64)
    Ws = [
        0.3 * torch.randn(24, 40, generator=gen, dtype=F64),
        0.3 * torch.randn(17, 30, generator=gen, dtype=F64),
    ]
    bases = [
        structure_subspace(stack.layers[0], x),
        torch.eye(17, dtype=F64),
    ]
    # full batch, widths 40 and 30: larger steps diverge for some draws
    lrs = [0.01, 0.015]
    small, Ws_small, lrs_small = compress_deep(stack, Ws, lrs, bases, rng=seed)
    _, out = stack.train(x, y, Ws, lrs, steps)
    _, out_small = small.train(x, y, Ws_small, lrs_small, steps)
    return (
        _gap(out, out_small),
        [W.shape[1] for W in Ws_small],
        _gap(out[-1], out[0]),
        dict(x=x, y=y, Ws=Ws, lr=lrs),
    )


#: the relative size of the start's perturbation that measures how much a
#: run amplifies rounding (``theorem15_general``'s ``"floor"``): 1e4 times
#: float64's rounding of a step
SENSITIVITY = 1e-12


def _direction(W: Tensor) -> Tensor:
    """A fixed direction of the shape of ``W``, entries in [-1, 1]."""
    return torch.cos(torch.arange(W.numel(), dtype=W.dtype)).reshape(W.shape)


def _order_gap(Ws: list[Tensor], Vs: list[Tensor]) -> float:
    """Largest relative difference of ``(M, mu)`` between two weight lists."""
    gap = 0.0
    for W, V in zip(Ws, Vs):
        for a, b in ((W @ W.T, V @ V.T), (W.sum(1), V.sum(1))):
            gap = max(gap, float((a - b).abs().max() / a.abs().max()))
    return gap


def theorem15_general(
    gen: object, steps: int = 60, n: int = 6, lr: float = 0.05
) -> dict:
    """Theorem 15, statements 2 and 3, with ``g, B != 0`` and every layer
    projected (Eq. 236): widths ``(12, 10)``, structure in subspaces of
    dimension 4 and 3, compressed to ``(k_1 + 1, k_2 + 1)``; full-batch GD.

    Parameters
    ----------
    gen : numpy Generator or int seed
    steps, n, lr : GD steps, training inputs, learning rate

    Returns
    -------
    dict
        ``"widths"``, ``"out"`` (max output gap), ``"order"`` (max relative
        deviation of ``mu~ = P mu``, ``M~ = (d/d') P M P`` at the end),
        ``"ctrl"`` (gap at the original rate), ``"moved"``, ``"v0"``, and
        ``"floor"``: how far the full stack's own run moves, in outputs and
        in ``(M, mu)`` relative, when its weights start ``SENSITIVITY``
        (relative) away. Rounding is a perturbation of about ``1e-16`` a
        step; where GD is transiently unstable (the random general layers
        make it so on a few starts in a hundred) it is amplified, and two exact
        routes agree only to that amplification.
    """
    gen = _source(gen)
    steps, n, lr = integer("steps", steps), integer("n", n), positive("lr", lr)
    stack = DeepNQF(
        [
            random_general_layer(8, 4, 3, gen, rank=4),
            random_general_layer(7, 3, 1, gen, rank=3),
        ]
    )
    x = torch.as_tensor(gen.standard_normal((n, 4)))
    y = torch.as_tensor(gen.standard_normal((n, 1)))
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((p, d)))
        for p, d in ((8, 12), (7, 10))
    ]
    Ms, mus = deep_moments(Ws)
    h1 = stack.hidden(x, Ms, mus)[0]
    bases = [
        structure_subspace(stack.layers[0], x),
        structure_subspace(stack.layers[1], h1),
    ]
    small, Ws_small, lrs_small = compress_deep(stack, Ws, lr, bases, rng=gen)
    Ws_end, out = stack.train(x, y, Ws, lr, steps)
    Ws_small_end, out_small = small.train(x, y, Ws_small, lrs_small, steps)
    _, out_ctrl = small.train(x, y, Ws_small, lr, steps)  # rates not rescaled
    # statement 2 of the theorem at the last step, layer by layer
    order = 0.0
    for V, W, W_s in zip(bases, Ws_end, Ws_small_end):
        P, d, d_s = V @ V.T, W.shape[1], W_s.shape[1]
        (M, mu), (M_s, mu_s) = ((w @ w.T, w.sum(1)) for w in (W, W_s))
        order = max(
            order,
            float((mu_s - P @ mu).abs().max() / mu.abs().max()),
            float((M_s - d / d_s * P @ M @ P).abs().max() / M.abs().max()),
        )
    v0 = order_gradients_by_structure(stack, x, y, Ms, mus)[0]
    # the full run's sensitivity: the same stack from weights moved by
    # SENSITIVITY in a fixed direction (no draw: the runs above are unchanged)
    nudged = [W * (1 + SENSITIVITY * _direction(W)) for W in Ws]
    Ws_nudged, out_nudged = stack.train(x, y, nudged, lr, steps)
    floor = max(_gap(out, out_nudged), _order_gap(Ws_end, Ws_nudged))
    return {
        "widths": [W.shape[1] for W in Ws_small],
        "floor": floor,
        "out": _gap(out, out_small),
        "order": order,
        "ctrl": _gap(out, out_ctrl),
        "moved": _gap(out[-1], out[0]),
        "v0": min(float(v.abs().max()) for v in v0),
    }
