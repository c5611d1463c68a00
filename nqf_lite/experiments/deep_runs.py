"""The runs of chapter 9: a tanh MLP next to its deep NQFs (the paper's Fig.
8, App. B.4 and C).

:func:`mlp_task` and :func:`mlp_ensemble` build the teacher-student task and
the network with its 2-layer and 1-layer NQFs; :func:`train_together` trains
them, every seed at once; :func:`rel_gap`, :func:`mean_se` and
:func:`bound_between` are the statistics of the claims on their loss gaps
(:func:`loss_gaps` for a whole grid of runs);
:func:`mlp_depth_gap` is the gap at any even depth. The checks of Theorems
14 and 15 are :mod:`nqf_lite.experiments.deep_checks`; the attention half of
Fig. 8 is :mod:`nqf_lite.experiments.attention_runs`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import integer, natural, positive, sequence
from nqf_lite.deep.deep_nqf import DeepNQF
from nqf_lite.experiments.train import descend_many

__all__ = [
    "N_TEST",
    "N_TRAIN",
    "bound_between",
    "loss_gaps",
    "mean_se",
    "mlp_depth_gap",
    "mlp_ensemble",
    "mlp_forward",
    "mlp_task",
    "pair",
    "rel_gap",
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


def loss_gaps(runs: dict, names: Sequence[str]) -> dict:
    """The :func:`rel_gap` of each named model to ``"model"`` in every run
    of a grid (this book; the paper's Fig. 8 comparison).

    Parameters
    ----------
    runs : dict
        ``(a, b) -> train_together(...)`` histories, e.g. ``(optimiser,
        variance index)``.
    names : sequence of str
        The models compared with ``"model"``.

    Returns
    -------
    dict
        ``(a, name, b) -> (S,)`` gaps, ``a`` and ``b`` in the order they
        first appear in ``runs``.
    """
    if not isinstance(runs, dict) or not runs:
        raise ValueError("runs must be a non-empty dict of histories")
    names = tuple(names)
    for key, run in runs.items():
        missing = {"model", *names} - set(run)
        if missing:
            raise ValueError(f"runs[{key}] must hold {sorted(missing)}")
    firsts = dict.fromkeys(a for a, _ in runs)
    seconds = dict.fromkeys(b for _, b in runs)
    return {
        (a, n, b): rel_gap(runs[a, b]["model"], runs[a, b][n])
        for a in firsts
        for n in names
        for b in seconds
    }


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
