"""Runners of the real networks against their twins (paper Sec. 7, App. C).

Chapter 3 trains networks next to their NQF twins on three tasks: the
teacher task of the paper's Fig. 2, online teachers (Fig. 6) and the
digits (Fig. 7). What the chapter runs, and does not explain line by line,
is here:

- :func:`twin_instance`, :func:`twin_remainder`: a small network and one
  input; its twin against ``nqf_lite.expand`` and the remainder's order
  (Thm 1);
- :func:`teacher_ensemble`: one (architecture, optimiser) of Fig. 2, every
  seed at every scale in one call;
- :func:`fig6_mlp`, :func:`fig6_qk`, :func:`gaussian_batches`,
  :func:`online_ensemble`: the models of Fig. 6 and online SGD of students
  and twins on fresh batches of their teachers;
- :func:`logit_scale`: the root mean square logit of query-key heads (this
  book's logit formula);
- :func:`row_tokens`, :func:`split_runs`: the digits as inputs, one split
  per run (Fig. 7).

Every random draw comes from a generator or seed the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from nqf_lite._checks import integer, positive
from nqf_lite.expansion import expand
from nqf_lite.expansion.models import (
    MultiHeadAttention,
    QKAttention,
    TanhCNN,
    TanhMLP,
)
from nqf_lite.expansion.models.blocks import Network
from nqf_lite.experiments.ensemble import (
    EnsembleHistory,
    stack_inputs,
    stack_weights,
    train_ensemble,
)
from nqf_lite.experiments.teacher import teacher_task

__all__ = [
    "TWIN_NAMES",
    "fig6_mlp",
    "fig6_qk",
    "gaussian_batches",
    "logit_scale",
    "online_ensemble",
    "row_tokens",
    "split_runs",
    "teacher_ensemble",
    "twin_instance",
    "twin_remainder",
]

#: the four modules whose twins chapter 3 checks against the expansion
TWIN_NAMES = ("MLP", "CNN", "QK heads", "MHA")

Inputs = Tensor | tuple[Tensor, ...]


def twin_instance(
    name: str, seed: int, generator: torch.Generator
) -> tuple[Network, Inputs]:
    """A small network (d = 2 units, scale 0.3, 2 outputs) and one input.

    The instances on which chapter 3 checks that each twin is the quadratic
    form of its network (Thm 1; Props. 1, 2, 3, 6).

    Parameters
    ----------
    name : {"MLP", "CNN", "QK heads", "MHA"}
    seed : int
        Seed of the weights (and of the query-key heads' readout).
    generator : torch.Generator
        Draws the input: a vector of 3, a 3 x 4 image, or a query of 3 with a
        context of 4 tokens.

    Returns
    -------
    net, x

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`TWIN_NAMES`.
    """
    if name not in TWIN_NAMES:
        raise ValueError(f"name must be one of {TWIN_NAMES}, got {name!r}")

    def randn(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    kw = dict(V=2, sigma=0.3, seed=seed)
    if name == "MLP":
        return TanhMLP(3, 2, **kw), randn(3)
    if name == "CNN":
        return TanhCNN((3, 4), (2, 2), channels=2, **kw), randn(3, 4)
    if name == "QK heads":
        net = QKAttention(3, 2, heads=2, readout_seed=seed, **kw)
    else:
        net = MultiHeadAttention(3, 2, 2, heads=2, **kw)
    return net, (randn(3), randn(4, 3))


def twin_remainder(
    net: Network, x: Inputs, lams: Sequence[float]
) -> tuple[float, np.ndarray]:
    """A twin against the expansion, and the remainder on a scale grid.

    The twin of ``net`` is its quadratic form ``f0 + Tr[MA]`` (Thm 1, Eq.
    20): it is compared with :func:`nqf_lite.expansion.expand` (autograd) at
    the network's weights and width. The remainder ``max |f(l W, x) -
    f_NQF(l W, x)|`` is measured at every scale ``l`` of ``lams``; for units
    even under ``w -> -w`` it falls as ``l^4``.

    Parameters
    ----------
    net : Network
        A network of :mod:`nqf_lite.expansion.models`.
    x : tensor or tuple of tensors
        One input (no batch axis).
    lams : sequence of float
        Positive scales of the weights.

    Returns
    -------
    gap : float
        ``max |twin(x) - expand(...).predict(W)|`` over the outputs.
    err : ndarray, shape (len(lams),)
        The remainder at each scale.

    Raises
    ------
    ValueError
        If a scale is not positive.
    """
    lams = [positive("lams", lam) for lam in lams]
    W, f = net.units(), net.unit_function()
    ft = net.twin().unit_function()
    e = expand(f, x, W.shape[0])  # at the network's own width
    one = tuple(t[None] for t in x) if isinstance(x, tuple) else x[None]
    out = net.twin()(one).detach().numpy()[0]
    gap = float(np.max(np.abs(out - e.predict(W.numpy()))))
    err = [
        float(torch.max(torch.abs(f(l * W, x) - ft(l * W, x)))) for l in lams
    ]
    return gap, np.array(err)


def teacher_ensemble(
    arch: str,
    sigmas: Sequence[float],
    members: Sequence[int],
    opt: str,
    lr: float,
    steps: int,
    m: int,
    s: Sequence[float],
    record_every: int = 4,
) -> dict[float, EnsembleHistory]:
    """One (architecture, optimiser) of the paper's Fig. 2 at every scale.

    Every seed of ``members`` gives a teacher task
    (:func:`nqf_lite.experiments.teacher.teacher_task`); the same teachers
    and initial weights (up to scale) are used at every ``sigma``, and all
    networks and twins are trained in one call of
    :func:`nqf_lite.experiments.ensemble.train_ensemble` on the full batch,
    recording the singular values of the learned maps over ``s``.

    Parameters
    ----------
    arch : {"mlp", "cnn", "qk", "mha"}
    sigmas : sequence of float
        Initial scales.
    members : sequence of int
        One seed per member of each ensemble.
    opt : {"gd", "momentum", "adam"}
    lr : float > 0
    steps : int >= 0
    m : int
        Samples per task.
    s : sequence of float
        Teacher singular values.
    record_every : int >= 1

    Returns
    -------
    dict of float to EnsembleHistory
        ``{sigma: the members' histories}``.

    Raises
    ------
    ValueError
        If ``sigmas`` or ``members`` is empty (or an argument of the task or
        the training is bad, named by the message).
    """
    if len(sigmas) == 0 or len(members) == 0:
        raise ValueError("sigmas and members must not be empty")
    n = len(members)
    tasks = [
        teacher_task(arch, sg, m=m, s=s, seed=sd)
        for sg in sigmas
        for sd in members
    ]
    nets, xs, ys = zip(*tasks)
    data = (stack_inputs(list(xs)), torch.stack(ys))
    h = train_ensemble(
        list(nets), lambda t: data, opt, lr, steps, record_every, s=s
    )
    return {
        sg: h.select(slice(i * n, (i + 1) * n)) for i, sg in enumerate(sigmas)
    }


def fig6_mlp(sigma: float, seed: int, readout: float = 1.0) -> TanhMLP:
    """The tanh MLP of the paper's Fig. 6: ``20 -> 100 -> 1`` (App. C).

    Parameters
    ----------
    sigma : float > 0
        Scale of the weights (students: small; teachers: 1).
    seed : int
    readout : float > 0
        Factor on the readout weights after the draw (this book's teachers
        take 0.5: with the full Gaussian readout the linear twin sits at the
        edge of stability at the paper's learning rate).

    Returns
    -------
    TanhMLP

    Raises
    ------
    ValueError
        If ``readout`` (or ``sigma``) is not positive.
    """
    readout = positive("readout", readout)
    net = TanhMLP(20, 100, V=1, sigma=sigma, seed=seed)
    if readout != 1.0:
        net.W_out.data.mul_(readout)
    return net


def fig6_qk(sigma: float, seed: int, readout_seed: int) -> QKAttention:
    """The query-key model of the paper's Fig. 6 (App. C).

    Four query-key heads with ``D = 16``, ``d_k = 8`` and one output, whose
    fixed readout ``c`` is drawn from ``readout_seed`` (students and
    teachers share it).

    Parameters
    ----------
    sigma : float > 0
    seed : int
        Seed of the trained weights.
    readout_seed : int

    Returns
    -------
    QKAttention
    """
    return QKAttention(
        16, 8, heads=4, V=1, sigma=sigma, seed=seed, readout_seed=readout_seed
    )


def gaussian_batches(
    E: int, *shapes: tuple[int, ...]
) -> Callable[[torch.Generator, int], tuple[Tensor, ...]]:
    """A sampler of standard Gaussian inputs for E runs (paper Fig. 6).

    Parameters
    ----------
    E : int >= 1
        Runs (the leading axis).
    *shapes : tuple of int
        The shape of one sample of each input tensor.

    Returns
    -------
    callable ``sample(generator, n)``
        A tuple with one float64 tensor ``(E, n, *shape)`` per shape, drawn
        in that order.

    Raises
    ------
    ValueError
        If ``E`` is not a positive integer or no shape is given.
    """
    E = integer("E", E)
    if not shapes:
        raise ValueError("shapes must name at least one input shape")

    def sample(gen: torch.Generator, n: int) -> tuple[Tensor, ...]:
        return tuple(
            torch.randn(E, n, *sh, generator=gen, dtype=torch.float64)
            for sh in shapes
        )

    return sample


def online_ensemble(
    students: Sequence[Network],
    teachers: Sequence[Network],
    sample: Callable[[torch.Generator, int], tuple[Tensor, ...]],
    lr: float,
    steps: int,
    batches: torch.Generator,
    held_out: torch.Generator,
    n_eval: int = 250,
    batch: int = 64,
    probe: Callable[[dict[str, Tensor]], Tensor] | None = None,
) -> EnsembleHistory:
    """Online SGD of students and twins on fresh batches of their teachers.

    The paper's Fig. 6 (App. C): student j and its twin learn teacher j by
    gradient descent on a fresh batch each step, the same batch for both;
    the losses are recorded every 10 steps on a fixed held-out set.

    Parameters
    ----------
    students, teachers : sequence of Network
        E students and E teachers (each of one architecture).
    sample : callable ``sample(generator, n)``
        Inputs of n samples for every run, e.g. :func:`gaussian_batches`.
    lr : float > 0
    steps : int >= 0
    batches, held_out : torch.Generator
        Draw the training batches and (once, first) the held-out set.
    n_eval, batch : int >= 1
        Sizes of the held-out set and of a batch.
    probe : callable, optional
        As in :func:`nqf_lite.experiments.ensemble.train_ensemble`.

    Returns
    -------
    EnsembleHistory
        Held-out losses of the students and twins.

    Raises
    ------
    ValueError
        If there are not as many teachers as students, or a size is bad.
    """
    if len(teachers) != len(students):
        raise ValueError(
            f"teachers must be one per student: {len(teachers)} teachers "
            f"for {len(students)} students"
        )
    n_eval, batch = integer("n_eval", n_eval), integer("batch", batch)
    teach = vmap(teachers[0]._func)
    T = {n: t.detach() for n, t in stack_weights(teachers).items()}
    ev = sample(held_out, n_eval)
    evaluate = (ev, teach(T, ev))  # T is detached: no graph is built

    def draw(t: int) -> tuple[tuple[Tensor, ...], Tensor]:
        xb = sample(batches, batch)
        return xb, teach(T, xb)

    kw = dict(record_every=10, evaluate=evaluate, probe=probe)
    return train_ensemble(students, draw, "gd", lr, steps, **kw)


def logit_scale(W: dict[str, Tensor]) -> Tensor:
    """Root mean square logit of query-key heads, averaged over heads.

    For weights ``W["Q"], W["K"]`` of shape ``(E, heads, d_k, D)`` the
    logit map of head h is ``T_h = W_K,h^T W_Q,h / sqrt(d_k)``, and with
    tokens of unit variance (alpha = 1 in this book's logit formula,
    Eq. eq-ch3-logit) the root mean square logit is ``|T_h|_F``.

    Parameters
    ----------
    W : dict of str to Tensor
        The stacked weights of E query-key models (``probe`` of
        :func:`online_ensemble`).

    Returns
    -------
    Tensor, shape (E,)

    Raises
    ------
    ValueError
        If ``W`` has no ``"Q"`` and ``"K"`` of equal 4-axis shape.
    """
    if (
        "Q" not in W
        or "K" not in W
        or W["Q"].ndim != 4
        or W["Q"].shape != W["K"].shape
    ):
        raise ValueError(
            "W must hold 'Q' and 'K' of one shape (E, heads, d_k, D)"
        )
    d_k = W["Q"].shape[2]
    T = torch.einsum("bhkd,bhke->bhde", W["K"], W["Q"]) / np.sqrt(d_k)
    return torch.linalg.matrix_norm(T).mean(-1)


def row_tokens(imgs: Tensor) -> tuple[Tensor, Tensor]:
    """Images as attention inputs: query = mean row, tokens = centred rows.

    The tokens are the rows centred across each image, so their mean is zero
    and the query-key heads' ``f0`` vanishes (paper Fig. 7, as in this
    book's digits task).

    Parameters
    ----------
    imgs : Tensor, shape (n, rows, cols)

    Returns
    -------
    x, X : Tensor, shapes (n, cols) and (n, rows, cols)

    Raises
    ------
    ValueError
        If ``imgs`` does not have three axes.
    """
    if not isinstance(imgs, Tensor) or imgs.ndim != 3:
        raise ValueError("imgs must be a tensor of shape (n, rows, cols)")
    return imgs.mean(1), imgs - imgs.mean(1, keepdim=True)


def split_runs(
    features: Callable[[Tensor], Inputs],
    images: Sequence[Tensor],
    labels: Tensor,
    splits: Sequence[Tensor],
    n_train: int,
) -> tuple[tuple[tuple[Tensor, ...], Tensor], ...]:
    """Each run's training and test set, stacked over the runs (Fig. 7).

    Run j takes ``features(images[j])`` and the labels at the first
    ``n_train`` indices of the permutation ``splits[j]`` for training, and
    the rest for testing.

    Parameters
    ----------
    features : callable
        Images (n, ...) to a network's inputs (a tensor or a tuple).
    images : sequence of Tensor
        The images of each run (e.g. centred with its training mean).
    labels : Tensor, shape (n, V)
    splits : sequence of Tensor
        One permutation of ``range(n)`` per run.
    n_train : int >= 1

    Returns
    -------
    train, test : (inputs, targets)
        Stacked as :func:`nqf_lite.experiments.ensemble.train_ensemble`
        takes them.

    Raises
    ------
    ValueError
        If ``images`` and ``splits`` differ in length or are empty, or
        ``n_train`` leaves no test set.
    """
    if len(images) != len(splits) or len(images) == 0:
        raise ValueError("images and splits must be one per run (non-empty)")
    n_train = integer("n_train", n_train)
    if n_train >= len(labels):
        raise ValueError(
            f"n_train must leave a test set: {n_train} of {len(labels)}"
        )

    def take(inputs: Inputs, idx: Tensor) -> Inputs:
        if isinstance(inputs, tuple):
            return tuple(t[idx] for t in inputs)
        return inputs[idx]

    parts: dict[str, list] = {"train": [], "test": []}
    for imgs, perm in zip(images, splits):
        feats = features(imgs)
        for part, idx in (("train", perm[:n_train]), ("test", perm[n_train:])):
            parts[part].append((take(feats, idx), labels[idx]))
    return tuple(
        (
            stack_inputs([x for x, _ in parts[k]]),
            torch.stack([y for _, y in parts[k]]),
        )
        for k in ("train", "test")
    )
