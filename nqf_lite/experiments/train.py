"""Training torch networks: one optimizer switch, one descent loop, a network
next to its twin.

- :func:`optimizer`: ``"gd"``, ``"momentum"`` (heavy ball, 0.9) or ``"adam"``;
- :func:`descend`: full-batch descent on one weight tensor with a per-step
  callback (the loop every chapter used to write by hand);
- :func:`descend_many`: the same on several tensors at once (a list, tuple or
  dict of them, e.g. every weight of a network and of its NQFs), recording
  what the caller asks for every ``every`` steps in a :class:`Descent`;
- :func:`train_pair`, :func:`train_pair_online`: a network of
  :mod:`nqf_lite.expansion.models` and its NQF twin trained side by side from
  the same weights (paper Sec. 7, Figs. 2, 6, 7), recorded in a
  :class:`PairHistory`;
- :func:`teacher_map`, :func:`teacher_task`: one panel of paper Fig. 2 (App. C
  sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from nqf_lite.expansion.models.attention import MultiHeadAttention, QKAttention
from nqf_lite._checks import as_array
from nqf_lite.expansion.models.blocks import (
    Inputs,
    Network,
    _generator,
    _int,
    _pos,
    _tensor,
)
from nqf_lite.expansion.models.cnn import TanhCNN
from nqf_lite.expansion.models.mlp import TanhMLP

__all__ = [
    "ARCHITECTURES",
    "OPTIMIZERS",
    "Descent",
    "PairHistory",
    "descend",
    "descend_many",
    "optimizer",
    "teacher_map",
    "teacher_task",
    "train_pair",
    "train_pair_online",
]

#: optimizer names accepted by :func:`optimizer` (Polyak momentum uses beta =
#: 0.9)
OPTIMIZERS = ("gd", "momentum", "adam")


def descend(
    W: object,
    loss: Callable[[Tensor], Tensor],
    lr: float,
    steps: int,
    name: str = "gd",
    callback: Callable[[int, Tensor], None] | None = None,
) -> np.ndarray:
    """Minimise ``loss(W)`` over one float64 weight tensor with
    :func:`optimizer` for ``steps`` steps.

    Parameters
    ----------
    W : array_like
        Initial weights (copied; the caller's array is not changed).
    loss : callable ``loss(W) -> scalar tensor``
    lr : float > 0
    steps : int >= 0
    name : {"gd", "momentum", "adam"}
    callback : callable ``callback(t, W)``, optional
        Called after every step ``t = 1, ..., steps`` with the current weights
        (no grad).

    Returns
    -------
    ndarray
        The weights after the last step.

    Raises
    ------
    TypeError
        If ``W`` is not a real numeric array (complex, bool, str, None) or
        ``loss(W)`` is not a real scalar tensor.
    FloatingPointError
        When the loss or the weights stop being finite, at any step including
        the last (the loss is evaluated once more at the final weights).
    """
    if not callable(loss):
        raise TypeError(
            f"loss must be callable as loss(W), got {type(loss).__name__}"
        )
    W = as_array("W", W)
    if W.size == 0:
        raise ValueError(
            f"W must hold at least one weight, got shape {W.shape}"
        )
    lr = _pos("lr", lr)
    steps = _int("steps", steps, low=0)
    Wt = torch.tensor(W, requires_grad=True)
    opt = optimizer(name, [Wt], lr)
    for t in range(1, steps + 1):
        value = _scalar_loss(loss, Wt, f"at step {t}", lr)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        if not torch.isfinite(Wt).all():
            raise FloatingPointError(
                f"descent diverged at step {t} (non-finite weights); "
                f"lower lr = {lr}"
            )
        if callback is not None:
            with torch.no_grad():
                callback(t, Wt.detach())
    if steps:
        with torch.no_grad():
            _scalar_loss(
                loss, Wt, f"at step {steps} (the last)", lr
            )  # the loss after the last step
    return Wt.detach().numpy().copy()


@dataclass(frozen=True)
class Descent:
    """What :func:`descend_many` returns.

    Attributes
    ----------
    params : ndarray, or list / tuple / dict of them
        The parameters after the last step (float64 arrays), in the container
        the caller passed.
    step : ndarray of int (T,)
        The steps at which ``record`` was called: ``0, every, 2 every, ...``
        and always the last step.
    history : ndarray, dict of ndarrays, or None
        ``record``'s values stacked along a new leading axis of length T
        (float64; one array per key when ``record`` returns a dict); None
        without ``record``.
    """

    params: object
    step: np.ndarray
    history: object = None


def descend_many(
    params: object,
    loss: Callable[[object], Tensor],
    lr: float,
    steps: int,
    name: str = "gd",
    record: Callable[[object], object] | None = None,
    every: int = 1,
) -> Descent:
    """Minimise ``loss(params)`` over several float64 tensors at once.

    All tensors take the same step of one optimizer on the one scalar
    ``loss``, the optimizer of :func:`optimizer` (so one tensor descends
    exactly as in :func:`descend`). ``"gd"`` is the paper's update, Eq. 21
    (Theorem 2), full batch: ``W <- W - lr grad_W L`` for every tensor ``W``
    (torch's ``SGD``, which rounds ``W + (-lr) grad`` once). ``"momentum"``
    is Polyak's heavy ball, one of the updates of Corollary 2 (App. B.3, Eq.
    209): ``b <- 0.9 b + grad_W L`` (``b = grad_W L`` at the first step),
    ``W <- W - lr b``. ``"adam"`` is torch's ``Adam`` (default betas); the
    paper's theorems do not cover it (Sec. 9, item 5).

    Parameters
    ----------
    params : array_like, or list / tuple / dict of array_like (nested)
        Initial parameters, copied as float64 tensors (the caller's are not
        changed). A container may nest (e.g. a dict of lists).
    loss : callable ``loss(params) -> scalar tensor``
        Called with the current tensors in ``params``' container.
    lr : float > 0
    steps : int >= 0
    name : {"gd", "momentum", "adam"}
    record : callable ``record(params)``, optional
        Evaluated without gradients at steps ``0, every, 2 every, ...`` and
        at the last step, before that step's update; returns a number, an
        array / tensor, or a dict of them (one history per key).
    every : int >= 1
        Record every this many steps.

    Returns
    -------
    Descent
        Final parameters, recorded steps and the stacked records.

    Raises
    ------
    TypeError
        If ``loss`` or ``record`` is not callable, a parameter is not a real
        numeric array, or ``loss`` does not return a real scalar tensor.
    ValueError
        On a bad ``lr``, ``steps``, ``name`` or ``every``, or no parameters.
    FloatingPointError
        When the loss or a parameter stops being finite.
    """
    if not callable(loss):
        raise TypeError(
            f"loss must be callable as loss(params), got {type(loss).__name__}"
        )
    if record is not None and not callable(record):
        raise TypeError(
            f"record must be callable as record(params) or None, got "
            f"{type(record).__name__}"
        )
    leaves: list[Tensor] = []
    tree = _leaves("params", params, leaves)
    if not leaves:
        raise ValueError("params must hold at least one tensor, got none")
    lr = _pos("lr", lr)
    steps = _int("steps", steps, low=0)
    every = _int("every", every)
    if name not in OPTIMIZERS:
        raise ValueError(
            f"name (the optimizer) must be one of {OPTIMIZERS}, got {name!r}"
        )
    opt = optimizer(name, leaves, lr)
    current = _rebuild(tree, iter(leaves))
    taken, records = [], []
    for t in range(steps + 1):
        if record is not None and (t % every == 0 or t == steps):
            with torch.no_grad():
                records.append(_snapshot(record(current)))
            taken.append(t)
        if t == steps:
            break
        value = _scalar_loss(
            loss, current, f"at step {t}", lr, what="loss(params)"
        )
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        if not all(torch.isfinite(p).all() for p in leaves):
            raise FloatingPointError(
                f"descent diverged at step {t + 1} (non-finite parameters); "
                f"lower lr = {lr}"
            )
    final = _rebuild(tree, (p.detach().numpy().copy() for p in leaves))
    history = _stack(records) if record is not None else None
    return Descent(final, np.asarray(taken, dtype=int), history)


def _leaves(where: str, node: object, out: list) -> object:
    """The structure of ``node`` with its arrays replaced by None; the arrays
    are appended to ``out`` as float64 leaf tensors that require grad."""
    if isinstance(node, dict):
        return {k: _leaves(f"{where}[{k!r}]", v, out) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        kids = [_leaves(f"{where}[{i}]", v, out) for i, v in enumerate(node)]
        return kids if isinstance(node, list) else tuple(kids)
    arr = as_array(where, node)
    if arr.size == 0:
        raise ValueError(
            f"{where} must hold at least one number, got shape {arr.shape}"
        )
    out.append(torch.tensor(arr, dtype=torch.float64, requires_grad=True))
    return None


def _rebuild(tree: object, leaves) -> object:
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        kids = [_rebuild(v, leaves) for v in tree]
        return kids if isinstance(tree, list) else tuple(kids)
    return next(leaves)


def _as_float(value: object) -> np.ndarray:
    """A float64 copy (a record must not follow the tensors it was read
    from)."""
    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    return np.array(value, dtype=np.float64)


def _snapshot(value: object) -> object:
    if isinstance(value, dict):
        return {k: _as_float(v) for k, v in value.items()}
    return _as_float(value)


def _stack(records: list) -> object:
    if records and isinstance(records[0], dict):
        return {k: np.stack([r[k] for r in records]) for k in records[0]}
    return np.stack(records)


def _scalar_loss(
    loss: Callable[[Tensor], Tensor],
    W: object,
    where: str,
    lr: float,
    what: str = "loss(W)",
) -> Tensor:
    """``loss(W)``, checked to be a finite real scalar tensor; ``where`` names
    the step in the error."""
    value = loss(W)
    if (
        not isinstance(value, Tensor)
        or value.numel() != 1
        or value.is_complex()
        or not value.is_floating_point()
    ):
        kind = (
            type(value).__name__
            if not isinstance(value, Tensor)
            else f"a {value.dtype} tensor of shape {tuple(value.shape)}"
        )
        raise TypeError(f"{what} must return a real scalar tensor, got {kind}")
    if not torch.isfinite(value):
        raise FloatingPointError(
            f"descent diverged {where} (non-finite loss "
            f"{float(value.detach())}); lower lr = {lr}"
        )
    return value.reshape(())


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
        Relative output gap ``sum_n |f_net(x_n) - f_twin(x_n)|^2 / sum_n
        |y_n|^2`` on the same
        data as the losses.
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


def optimizer(name: object, params: list, lr: float) -> torch.optim.Optimizer:
    """The torch optimizer of the book's GD / momentum / Adam runs (one place
    for all of them).

    ``"gd"`` = ``SGD(lr)``, ``"momentum"`` = ``SGD(lr, momentum=0.9)`` (Polyak
    heavy ball), ``"adam"`` = ``Adam(lr)`` (default betas).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"name (the optimizer) must be one of {OPTIMIZERS}, got {name!r}"
        )
    lr = _pos("lr", lr)
    if isinstance(params, (str, bytes, Tensor)) or not hasattr(
        params, "__iter__"
    ):
        raise TypeError(
            f"params must be a list of tensors to optimise, got "
            f"{type(params).__name__}"
        )
    params = list(params)
    if not params:
        raise ValueError(
            "params must hold at least one tensor to optimise, got none"
        )
    if name == "gd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(
        f"name (the optimizer) must be one of {OPTIMIZERS}, got {name!r}"
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
    lr = _pos("lr", lr)
    steps = _int("steps", steps)
    record_every = _int("record_every", record_every)
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
    Yt = _tensor(name, Y, 2)
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
        batch = _int("batch", batch)
        if batch > m:
            raise ValueError(
                f"batch must be at most the number of samples {m}, got {batch}"
            )
    gen = _generator(seed)

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
    k = len(s_arr) if s_arr is not None else _int("k", k)
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
    gen = _generator(seed)

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
        _int("k", k),
        record_every,
    )


def teacher_map(
    D_in: int,
    V: int,
    s: Sequence[float] = (1.0, 0.5, 0.25, 0.125),
    seed: int = 0,
) -> np.ndarray:
    """A rank-``k`` teacher ``T* = P diag(s) Q^T`` (paper Fig. 2 and its
    settings in App. C).

    Parameters
    ----------
    D_in, V : int
        Input and output dimension of the map; ``len(s) <= min(D_in, V)``.
    s : sequence of float
        Positive singular values (paper: 1, 1/2, 1/4, 1/8).
    seed : int
        Seed of the random orthonormal ``P`` (V, k) and ``Q`` (D_in, k).

    Returns
    -------
    ndarray, shape (V, D_in)
    """
    D_in, V = _int("D_in", D_in), _int("V", V)
    s = np.asarray(s, dtype=np.float64)
    if (
        s.ndim != 1
        or s.size == 0
        or not np.all(np.isfinite(s))
        or np.any(s <= 0)
    ):
        raise ValueError(
            "s must be a non-empty 1-D sequence of positive numbers, "
            f"got {s!r}"
        )
    if s.size > min(D_in, V):
        raise ValueError(
            f"s has {s.size} values but the map is only {V} x {D_in}"
        )
    rng = np.random.default_rng(_int("seed", seed, low=0))
    P = np.linalg.qr(rng.standard_normal((V, s.size)))[0]
    Q = np.linalg.qr(rng.standard_normal((D_in, s.size)))[0]
    return P @ np.diag(s) @ Q.T


#: the four architectures of Fig. 2 with the sizes of App. C
ARCHITECTURES = ("mlp", "cnn", "qk", "mha")


def teacher_task(
    arch: str,
    sigma: float,
    m: int = 600,
    s: Sequence[float] = (1.0, 0.5, 0.25, 0.125),
    seed: int = 0,
    token_scale: float = 0.4,
    readout_scale: float = 8.0,
) -> tuple[Network, Inputs, Tensor]:
    """One panel of paper Fig. 2: a network with App. C sizes, its data and the
    teacher's targets.

    Sizes (App. C): MLP 20 -> 64 -> 8; CNN on 5 x 7 images with 64 kernels 4 x
    5; QK head with D = 20, d_k = 8, N = 16 context tokens; MHA with 4 heads, D
    = 20, d_k = 8, d_v = 20, N = 16.  Every network has 8 outputs.  The targets
    are those of the NQF whose effective map is the teacher ``T* = P diag(s)
    Q^T`` (:func:`teacher_map`), so the loss can reach zero and ``s_hat_k / s_k
    -> 1``. The effective inputs are exactly whitened (x, sum_p x_p, xbar)
    except for the QK head, whose Gaussian tokens have entries N(0,
    token_scale^2) and readout ``C`` entries N(0, readout_scale^2 / D).

    Parameters
    ----------
    arch : {"mlp", "cnn", "qk", "mha"}
    sigma : float
        Init scale of every trained weight.
    m : int
        Number of samples.
    s : sequence of float
        Teacher singular values.
    seed : int
        Seed of the weights (``seed``), the inputs (``seed + 1``) and the
        teacher (``seed + 2``).
    token_scale, readout_scale : float
        QK head only (see above).

    Returns
    -------
    net, X, Y
        The network (build its twin with ``net.twin()``), its inputs and the
        targets (m, 8).
    """
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
    token_scale, readout_scale = (
        _pos("token_scale", token_scale),
        _pos("readout_scale", readout_scale),
    )
    V, D, N = 8, 20, 16
    if arch == "mlp":
        net: Network = TanhMLP(D, 64, V=V, sigma=sigma, seed=seed)
        X: Inputs = net.sample_inputs(m, seed=seed + 1)
    elif arch == "cnn":
        net = TanhCNN((5, 7), (4, 5), channels=64, V=V, sigma=sigma, seed=seed)
        X = net.sample_inputs(m, seed=seed + 1)
    elif arch == "qk":
        net = QKAttention(
            D,
            8,
            heads=1,
            V=V,
            sigma=sigma,
            seed=seed,
            readout_scale=readout_scale,
        )
        X = net.sample_inputs(m, N, seed=seed + 1, scale=token_scale)
    else:
        net = MultiHeadAttention(
            D, 8, 20, heads=4, V=V, sigma=sigma, seed=seed
        )
        X = net.sample_inputs(m, N, seed=seed + 1)
    T = teacher_map(D, D if arch == "qk" else V, s, seed=seed + 2)
    return net, X, net.apply_map(X, T)
