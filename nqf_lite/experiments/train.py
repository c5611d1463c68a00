"""Gradient descent on torch tensors: one optimizer switch, one descent loop.

- :func:`optimizer`: ``"gd"``, ``"momentum"`` (heavy ball, 0.9) or ``"adam"``;
- :func:`descend`: full-batch descent on one weight tensor with a per-step
  callback (the loop every chapter used to write by hand);
- :func:`descend_many`: the same on several tensors at once (a list, tuple or
  dict of them, e.g. every weight of a network and of its NQFs), recording
  what the caller asks for every ``every`` steps in a :class:`Descent`.

A network trained next to its twin is :mod:`nqf_lite.experiments.pair`; the
teacher tasks of the paper's Fig. 2 are :mod:`nqf_lite.experiments.teacher`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import as_array, integer, positive

__all__ = ["OPTIMIZERS", "Descent", "descend", "descend_many", "optimizer"]

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
    lr = positive("lr", lr)
    steps = integer("steps", steps, minimum=0)
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
    lr = positive("lr", lr)
    steps = integer("steps", steps, minimum=0)
    every = integer("every", every)
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
    lr = positive("lr", lr)
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
