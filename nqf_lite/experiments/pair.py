"""A network next to its twin (paper Sec. 7, Figs. 2, 6, 7).

:func:`train_pair` and :func:`train_pair_online` train a network of
:mod:`nqf_lite.expansion.models` and its NQF twin side by side from the same
weights and record both in a :class:`PairHistory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import integer, positive, tensor, torch_generator
from nqf_lite.expansion.models.blocks import Inputs, Network
from nqf_lite.experiments.train import optimizer

__all__ = ["PairHistory", "train_pair", "train_pair_online"]


@dataclass(frozen=True)
class PairHistory:
    """What :func:`train_pair` records, every ``record_every`` steps (numpy
    float64).

    Attributes
    ----------
    step : ndarray (T,)
        Step numbers (0 = initial weights).
    loss_net, loss_twin : ndarray (T,)
        Training loss ``(1/m) sum_n |f_n - y_n|^2`` of the network and of its
        NQF twin (for online training: the loss on the fixed evaluation set).
    s_net, s_twin : ndarray (T, k)
        Singular values of the effective maps divided by the teacher's ``s`` (k
        = len(s)), or the top-k singular values when no ``s`` was given.
    gap : ndarray (T,)
        Relative output gap
        ``sum_n |f_net(x_n) - f_twin(x_n)|^2 / sum_n |y_n|^2`` on the same data
        as the losses.
    acc_net, acc_twin : ndarray (T,) or None
        Test accuracy (sign of a scalar output, or arg-max) when a test set was
        given.
    """

    step: np.ndarray
    loss_net: np.ndarray
    loss_twin: np.ndarray
    s_net: np.ndarray
    s_twin: np.ndarray
    gap: np.ndarray
    acc_net: np.ndarray | None = None
    acc_twin: np.ndarray | None = None

    @property
    def s_deviation(self) -> float:
        """``max_{t,k} |s_net - s_twin|`` (divided by ``s_k`` when ``s`` was
        given)."""
        return float(np.max(np.abs(self.s_net - self.s_twin)))

    @property
    def log_loss_deviation(self) -> float:
        """``max_t |log10 L_net - log10 L_twin|``."""
        return float(
            np.max(np.abs(np.log10(self.loss_net) - np.log10(self.loss_twin)))
        )


def _check_pair(net: object, twin: object) -> None:
    for name, obj in (("net", net), ("twin", twin)):
        if not isinstance(obj, Network):
            raise TypeError(
                f"{name} must be a Network from nqf_lite.expansion.models, "
                f"got {type(obj).__name__}"
            )
    if net.is_twin or not twin.is_twin or type(twin) is not type(net):
        raise TypeError(
            f"twin must be the NQF twin of net (net.twin()), got "
            f"{type(twin).__name__}"
        )
    a, b = net.state_dict(), twin.state_dict()
    if a.keys() != b.keys() or any(
        a[k].shape != b[k].shape or not torch.equal(a[k], b[k]) for k in a
    ):
        raise ValueError(
            "net and twin must start from identical weights; build the twin "
            "with net.twin()"
        )


def _loss(f: Tensor, Y: Tensor) -> Tensor:
    return ((f - Y) ** 2).sum(-1).mean()


def _accuracy(f: Tensor, Y: Tensor) -> float:
    if Y.shape[-1] == 1:
        return float((torch.sign(f) == torch.sign(Y)).double().mean())
    return float((f.argmax(-1) == Y.argmax(-1)).double().mean())


def _index(inputs: tuple, idx: Tensor) -> tuple:
    return tuple(t[idx] for t in inputs)


def _singular(model: Network, s: np.ndarray | None, k: int) -> np.ndarray:
    sv = torch.linalg.svdvals(model.effective_map().detach()).numpy()[:k]
    return sv / s if s is not None else sv


def _run(
    net: Network,
    twin: Network,
    draw: Callable[[int], tuple[tuple, Tensor]],
    evaluate: tuple[tuple, Tensor] | None,
    test: tuple[tuple, Tensor] | None,
    name: str,
    lr: float,
    steps: int,
    s: np.ndarray | None,
    k: int,
    record_every: int,
) -> PairHistory:
    models = (net, twin)
    opts = [
        optimizer(name, [p for p in mdl.parameters() if p.requires_grad], lr)
        for mdl in models
    ]
    rec: dict[str, list] = {
        key: []
        for key in (
            "step",
            "loss_net",
            "loss_twin",
            "s_net",
            "s_twin",
            "gap",
            "acc_net",
            "acc_twin",
        )
    }

    def record(t: int, outs: list[Tensor], yb: Tensor) -> None:
        with torch.no_grad():
            if evaluate is not None:
                outs, yb = [mdl(evaluate[0]) for mdl in models], evaluate[1]
            rec["step"].append(t)
            rec["gap"].append(
                float(
                    ((outs[0] - outs[1]) ** 2).sum(-1).mean()
                    / (yb**2).sum(-1).mean()
                )
            )
            for tag, mdl, out in zip(("net", "twin"), models, outs):
                rec[f"loss_{tag}"].append(float(_loss(out, yb)))
                rec[f"s_{tag}"].append(_singular(mdl, s, k))
                if test is not None:
                    rec[f"acc_{tag}"].append(_accuracy(mdl(test[0]), test[1]))

    for t in range(steps + 1):
        xb, yb = draw(t)
        outs = [mdl(xb) for mdl in models]
        losses = [_loss(out, yb) for out in outs]
        if not all(torch.isfinite(loss) for loss in losses):
            raise FloatingPointError(
                f"training diverged at step {t} (non-finite loss); "
                f"lower lr = {lr}"
            )
        if t % record_every == 0 or t == steps:
            record(t, [out.detach() for out in outs], yb)
        if t < steps:
            for loss, opt in zip(losses, opts):
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    as_np = {
        key: np.asarray(val, dtype=np.float64)
        for key, val in rec.items()
        if val
    }
    return PairHistory(**as_np)


def _common(net, twin, name, lr, steps, s, record_every):
    _check_pair(net, twin)
    optimizer(name, [torch.zeros(1, requires_grad=True)], 1.0)
    lr = positive("lr", lr)
    steps = integer("steps", steps)
    record_every = integer("record_every", record_every)
    s_arr = None
    if s is not None:
        s_arr = np.asarray(s, dtype=np.float64)
        if (
            s_arr.ndim != 1
            or s_arr.size == 0
            or np.any(~np.isfinite(s_arr))
            or np.any(s_arr <= 0)
        ):
            raise ValueError(
                "s must be a 1-D sequence of positive teacher singular "
                "values, "
                f"got {s!r}"
            )
    return lr, steps, record_every, s_arr


def _targets(name: str, Y: object, m: int, V: int) -> Tensor:
    Yt = tensor(name, Y, 2)
    if Yt.shape != (m, V):
        raise ValueError(
            f"{name} must have shape (m, V) = ({m}, {V}), "
            f"got {tuple(Yt.shape)}"
        )
    return Yt


def train_pair(
    net: Network,
    twin: Network,
    X: Inputs,
    Y: Tensor,
    optimizer: str = "gd",
    lr: float = 0.1,
    steps: int = 100,
    batch: int | None = None,
    s: Sequence[float] | None = None,
    k: int = 4,
    record_every: int = 1,
    test: tuple[Inputs, Tensor] | None = None,
    seed: int = 0,
    progress: bool = False,
) -> PairHistory:
    """Train a network and its NQF twin side by side from the same weights
    (paper Fig. 2, 7).

    Both are trained with the same torch optimizer on the loss ``L = (1/m)
    sum_n |f(x_n) - y_n|^2`` (paper Eq. 26, summed over outputs): ``"gd"`` =
    ``SGD(lr)``, ``"momentum"`` = ``SGD(lr, momentum=0.9)`` (Polyak heavy
    ball), ``"adam"`` = ``Adam(lr)``.  Mini-batches, when ``batch`` is given,
    are drawn with the same indices for both.

    Parameters
    ----------
    net, twin : module
        A network of this module and ``net.twin()`` (checked to hold identical
        weights).
    X : tensor or tuple of tensors
        Training inputs in the network's format (leading axis m).
    Y : tensor, shape (m, V)
        Targets.
    optimizer : {"gd", "momentum", "adam"}
    lr : float
        Learning rate.
    steps : int
        Number of optimizer steps.
    batch : int, optional
        Mini-batch size (default: full batch).
    s : sequence of float, optional
        Teacher singular values; recorded singular values are divided by them.
    k : int
        Number of singular values recorded when ``s`` is None.
    record_every : int
        Record every this many steps (and the last step).
    test : (inputs, targets), optional
        Held-out set for the test accuracy.
    seed : int
        Seed of the mini-batch draws.
    progress : bool
        Accepted for compatibility and ignored: the book shows no progress
        bars.

    Returns
    -------
    PairHistory
    """
    lr, steps, record_every, s_arr = _common(
        net, twin, optimizer, lr, steps, s, record_every
    )
    inputs = net._check_inputs(X)
    m = inputs[0].shape[0]
    Y = _targets("Y", Y, m, net.V)
    if batch is not None:
        batch = integer("batch", batch)
        if batch > m:
            raise ValueError(
                f"batch must be at most the number of samples {m}, got {batch}"
            )
    gen = torch_generator(seed)

    def draw(t: int) -> tuple[tuple, Tensor]:
        if batch is None:
            return inputs, Y
        idx = torch.randperm(m, generator=gen)[:batch]
        return _index(inputs, idx), Y[idx]

    tst = None
    if test is not None:
        if not isinstance(test, (tuple, list)) or len(test) != 2:
            raise TypeError("test must be a pair (inputs, targets)")
        t_in = net._check_inputs(test[0])
        tst = (
            t_in,
            _targets("test targets", test[1], t_in[0].shape[0], net.V),
        )
    evaluate = None if batch is None else (inputs, Y)
    k = len(s_arr) if s_arr is not None else integer("k", k)
    return _run(
        net,
        twin,
        draw,
        evaluate,
        tst,
        optimizer,
        lr,
        steps,
        s_arr,
        k,
        record_every,
    )


def train_pair_online(
    net: Network,
    twin: Network,
    sample: Callable[[int, torch.Generator], tuple[Inputs, Tensor]],
    evaluate: tuple[Inputs, Tensor],
    optimizer: str = "gd",
    lr: float = 0.05,
    steps: int = 2000,
    k: int = 1,
    record_every: int = 10,
    seed: int = 0,
    progress: bool = False,
) -> PairHistory:
    """Online SGD for a network and its NQF twin on the same fresh mini-batches
    (paper Fig. 6).

    Parameters
    ----------
    net, twin : module
        A network and ``net.twin()``.
    sample : callable ``sample(n, generator) -> (inputs, targets)``
        Draws a fresh mini-batch; called once per step with a shared seeded
        generator.
    evaluate : (inputs, targets)
        Fixed held-out set on which the recorded losses are measured.
    optimizer, lr, steps, record_every, seed, progress :
        As in :func:`train_pair`.
    k : int
        Number of singular values of the effective map recorded.

    Returns
    -------
    PairHistory
        ``loss_*`` are held-out losses.
    """
    lr, steps, record_every, _ = _common(
        net, twin, optimizer, lr, steps, None, record_every
    )
    if not callable(sample):
        raise TypeError(
            "sample must be callable as sample(step, generator), got "
            f"{type(sample).__name__}"
        )
    if not isinstance(evaluate, (tuple, list)) or len(evaluate) != 2:
        raise TypeError("evaluate must be a pair (inputs, targets)")
    e_in = net._check_inputs(evaluate[0])
    ev = (
        e_in,
        _targets("evaluate targets", evaluate[1], e_in[0].shape[0], net.V),
    )
    gen = torch_generator(seed)

    def draw(t: int) -> tuple[tuple, Tensor]:
        xb, yb = sample(t, gen)
        xb = net._check_inputs(xb)
        return xb, _targets("sampled targets", yb, xb[0].shape[0], net.V)

    return _run(
        net,
        twin,
        draw,
        ev,
        None,
        optimizer,
        lr,
        steps,
        None,
        integer("k", k),
        record_every,
    )
