"""Training a neural quadratic form: explicit (S)GD on the weights and the
closed dynamics of the order parameters (Theorem 2, Eqs. 21-24).

With the loss of Eq. 26 and the batch quantities ``v`` and ``H`` of
:meth:`~nqf_lite.expansion.form.NQF.vH`, one explicit step is
``W' = W - lr (v 1ᵀ + H W)`` (Eq. 21); multiplying it out gives a recursion on
``(M, μ)`` alone in which the width ``d`` is a number (Theorem 2, Eqs. 23-24):

.. math::

    \\Delta\\mu &= -\\eta(d\\,v + H\\mu), \\\\
    \\Delta M &= -\\eta(v\\mu^\\top + \\mu v^\\top + HM + MH) \\\\
    &\\quad + \\eta^2(d\\,vv^\\top + v\\mu^\\top H + H\\mu v^\\top + HMH).

- :func:`gd_step`, :func:`closed_step`: one step of either;
- :func:`train`, :func:`train_closed`: ``steps`` of them, returning every
  step's predictions or, with ``record=...``, a :class:`TrainingRecord`.

Every argument is validated once, before the first step; the loops are the
arithmetic only (:func:`gd_update`, :func:`closed_update`).  The methods
:meth:`NQF.train <nqf_lite.expansion.form.NQF.train>`,
:meth:`~nqf_lite.expansion.form.NQF.train_closed`,
:meth:`~nqf_lite.expansion.form.NQF.gd_step` and
:meth:`~nqf_lite.expansion.form.NQF.closed_step` call these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nqf_lite._checks import (
    checks,
    instance,
    integer,
    nonnegative,
    positive,
    width,
)
from nqf_lite.expansion.form import NQF
from nqf_lite.expansion.order import check_realizable

__all__ = [
    "TrainingRecord",
    "closed_step",
    "closed_update",
    "gd_step",
    "gd_update",
    "schedule",
    "train",
    "train_closed",
]

#: what :func:`train` and :func:`train_closed` can record
_TRAIN_RECORDS = ("pred", "loss", "M", "mu", "W")
_CLOSED_RECORDS = ("pred", "loss", "M", "mu")


@dataclass(frozen=True)
class TrainingRecord:
    """What :func:`train` or :func:`train_closed` recorded
    (``record=...``).

    Every recorded array has a leading axis over the recorded steps; the ones
    not asked for are ``None``.

    Attributes
    ----------
    steps : ndarray of int, shape (T,)
        The recorded steps: ``0, every, 2 every, ...`` and the last one.
    final : ndarray or tuple
        The state after the last step: ``W`` for :func:`train`, ``(M, mu)``
        for
        :func:`train_closed` (what the first element of their plain return
        is).
    pred : ndarray, shape (T, m) or (T, m, V), optional
        Predictions on every sample.
    loss : ndarray, shape (T,), optional
        Full-batch training loss of Eq. 26 (summed over outputs, averaged over
        samples).
    M : ndarray, shape (T, p, p), optional
        ``M = W Wᵀ``.
    mu : ndarray, shape (T, p), optional
        ``μ = W 1``.
    W : ndarray, shape (T, p, d), optional
        The weights (:func:`train` only).
    """

    steps: np.ndarray
    final: Any
    pred: np.ndarray | None = None
    loss: np.ndarray | None = None
    M: np.ndarray | None = None
    mu: np.ndarray | None = None
    W: np.ndarray | None = None


def _recording(
    record: Any, every: Any, steps: int, allowed: tuple[str, ...], method: str
):
    """Validate ``record`` and ``every``: ``(None, None)`` or
    ``(names, recorded steps)``."""
    every = integer("every", every)
    if record is None:
        if every != 1:
            raise ValueError(
                f"every = {every} needs record=...: without it {method} "
                "returns every step's predictions"
            )
        return None, None
    names = (record,) if isinstance(record, str) else record
    if not isinstance(names, (Sequence, np.ndarray)) or isinstance(
        names, bytes
    ):
        raise TypeError(
            f"record must be a name or a sequence of names from {allowed}, "
            f"got {type(record).__name__}"
        )
    names = tuple(names)
    if not names:
        raise ValueError(f"record must name at least one of {allowed}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"record must hold names (str) from {allowed}, got {name!r}"
            )
        if name not in allowed:
            extra = (
                " (train_closed has no weights; use train)"
                if name == "W"
                else ""
            )
            raise ValueError(
                f"record: unknown name {name!r} for {method}; choose from "
                f"{allowed}{extra}"
            )
    at = np.arange(0, steps + 1, every)
    if at[-1] != steps:
        at = np.append(at, steps)
    return tuple(dict.fromkeys(names)), at


def _diverged(lr: float) -> None:
    raise FloatingPointError(
        f"training diverged (non-finite weights) at lr = {lr:g}: lower the "
        "learning rate"
    )


def closed_update(
    nqf: NQF, M, mu, d, y, lr, idx, wd, f=None
) -> tuple[np.ndarray, np.ndarray]:
    """One closed step of Eqs. 23-24 on trusted arguments (the loop of
    :func:`train_closed`); ``f`` are the batch predictions at ``(M, mu)`` when
    known."""
    if f is None:
        f = nqf._f(M, mu, idx)
    v, H = nqf._grad(nqf._lp(f, y, idx), mu, idx)
    # W' = K W - lr v 1^T with K = I - lr (H + wd I), multiplied out (Eqs.
    # 23-24)
    K = nqf._eye - lr * H
    if wd:
        K -= (lr * wd) * nqf._eye
    KM = K @ M
    M_new = KM @ K.T
    Kmu = K @ mu
    if nqf._zgz:
        mu_new = Kmu
    else:
        lv = lr * v
        cross = lv[:, None] * Kmu
        M_new -= cross + cross.T
        M_new += d * (lv[:, None] * lv)
        mu_new = Kmu - d * lv
    M_new += M_new.T
    M_new *= 0.5
    if not (np.isfinite(M_new.sum()) and np.isfinite(mu_new.sum())):
        _diverged(lr)
    return M_new, mu_new


def gd_update(nqf: NQF, W, y, lr, idx, wd, f=None) -> np.ndarray:
    """One explicit step of Eq. 21 on trusted arguments (the loop of
    :func:`train`); ``f`` are the batch predictions at ``W`` when known."""
    mu = W.sum(axis=1)
    if f is None:
        f = nqf._f(W @ W.T, mu, idx)
    v, H = nqf._grad(nqf._lp(f, y, idx), mu, idx)
    step = H @ W
    if wd:
        step += wd * W
    if not nqf._zgz:
        step += v[:, None]
    step *= lr
    W_new = W - step
    if not np.isfinite(W_new.sum()):
        _diverged(lr)
    return W_new


@checks(nqf=instance(NQF), lr=positive, weight_decay=nonnegative)
def gd_step(
    nqf: NQF, W, y, lr, batch=None, weight_decay: float = 0.0
) -> np.ndarray:
    """One explicit (S)GD step on every neuron (Eq. 21).

    ``W' = W - lr (v 1^T + (H + weight_decay I) W)``.

    Parameters
    ----------
    nqf : NQF
        The quadratic form of the data set (validated when it was made).
    W : array, shape (p, d)
    y : array, shape (m,) or (m, V)
    lr : float > 0
    batch : int array, optional
    weight_decay : float >= 0
        Adds ``weight_decay * |W|^2 / 2`` to the loss.

    Returns
    -------
    ndarray, shape (p, d)

    Raises
    ------
    FloatingPointError
        If the step produces non-finite weights (learning rate too large).
    """
    W = nqf._W(W)
    y = nqf._y(y)
    with np.errstate(over="ignore", invalid="ignore"):
        return gd_update(nqf, W, y, lr, nqf._batch(batch), weight_decay)


@checks(nqf=instance(NQF), lr=positive, weight_decay=nonnegative, d=width)
def closed_step(
    nqf: NQF,
    M,
    mu,
    d,
    y,
    lr,
    batch=None,
    weight_decay: float = 0.0,
    *,
    trusted: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of the closed dynamics of Theorem 2 (Eqs. 23-24); the width
    is a number.

    .. math::

        \\Delta\\mu = -\\eta(d\\,v + H\\mu),

        \\Delta M ={}& -\\eta(v\\mu^\\top + \\mu v^\\top + HM + MH) \\\\
                  &+ \\eta^2(d\\,vv^\\top + v\\mu^\\top H + H\\mu v^\\top +
                  HMH),

    with ``H`` replaced by ``H + weight_decay I`` under weight decay.  It
    is evaluated as ``M' = K M K - (K mu)(eta v)^T - (eta v)(K mu)^T + d
    eta^2 v v^T`` and ``mu' = K mu - d eta v`` with ``K = I - eta H`` (the
    same polynomial).

    Parameters
    ----------
    nqf : NQF
        The quadratic form of the data set (validated when it was made).
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int >= 1
        Width (number of neurons).
    y, lr, batch, weight_decay
        As in :func:`gd_step`.
    trusted : bool, default False
        Skip the realisability check of ``(M, mu)`` at width ``d`` (for a
        state that came out of :func:`closed_step` or :func:`moments`).

    Returns
    -------
    (M, mu) after the step.

    Raises
    ------
    ValueError
        If no width-``d`` weights have the moments ``(M, mu)``
        (:func:`check_realizable`), or an argument is malformed.
    FloatingPointError
        If the step produces non-finite moments.
    """
    M, mu = nqf._state(M, mu)
    y = nqf._y(y)
    idx = nqf._batch(batch)
    if not trusted:
        check_realizable(M, mu, d)
    with np.errstate(over="ignore", invalid="ignore"):
        return closed_update(nqf, M, mu, d, y, lr, idx, weight_decay)


@checks(nqf=instance(NQF))
def train(
    nqf: NQF,
    W,
    y,
    lr,
    steps: int,
    batches=None,
    weight_decay: float = 0.0,
    progress: bool = False,
    *,
    record: str | Sequence[str] | None = None,
    every: int = 1,
) -> tuple[np.ndarray, np.ndarray] | TrainingRecord:
    """Run ``steps`` explicit (S)GD steps (:func:`gd_step`, Eq. 21) and
    record the predictions.

    Every argument is validated once, before the first step.

    Parameters
    ----------
    nqf : NQF
        The quadratic form of the data set (validated when it was made).
    W : array, shape (p, d)
        Initial weights.
    y : array, shape (m,) or (m, V)
    lr : float > 0
    steps : int >= 0
    batches : sequence of ``steps`` int arrays, optional
        ``batches[t]`` holds the sample indices of step ``t``; full batch
        when ``None``.
    weight_decay : float >= 0
    progress : bool
        Accepted for compatibility and ignored: the book shows no progress
        bars.
    record : str or sequence of str, optional
        What to record besides nothing: any of ``"pred"``, ``"loss"``,
        ``"M"``, ``"mu"``, ``"W"`` (see :class:`TrainingRecord`).  When
        given, a
        :class:`TrainingRecord` is returned instead of the pair below.
    every : int >= 1, default 1
        With ``record``: record at steps ``0, every, 2 every, ...`` and the
        last step.

    Returns
    -------
    W : ndarray, shape (p, d)
        Weights after the last step.
    predictions : ndarray, shape (steps + 1, m) or (steps + 1, m, V)
        Predictions on every sample at steps ``0, ..., steps``.

    or, with ``record``, a :class:`TrainingRecord` whose ``final`` is
    ``W``.

    Examples
    --------
    >>> rec = model.train(W0, y, 0.1, 500, record=("loss", "M"))
    ... # doctest: +SKIP
    >>> rec.M.shape  # doctest: +SKIP
    (501, p, p)
    """
    W = nqf._W(W)
    y, lr, wd, steps, batches = schedule(
        nqf, y, lr, weight_decay, steps, batches
    )
    names, at = _recording(record, every, steps, _TRAIN_RECORDS, "train")
    if names is None:  # the plain loop: every step's predictions
        preds = np.empty((steps + 1,) + y.shape)
        preds[0] = nqf._f(W @ W.T, W.sum(axis=1), None)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(steps):
                idx = batches[t]
                W = gd_update(
                    nqf, W, y, lr, idx, wd, f=preds[t] if idx is None else None
                )
                preds[t + 1] = nqf._f(W @ W.T, W.sum(axis=1), None)
        return W, preds

    def advance(W: np.ndarray, t: int, f: np.ndarray) -> np.ndarray:
        idx = batches[t]
        return gd_update(nqf, W, y, lr, idx, wd, f=f if idx is None else None)

    return _loop(
        nqf,
        W,
        advance,
        lambda W: (W @ W.T, W.sum(axis=1)),
        y,
        steps,
        names,
        at,
    )


@checks(nqf=instance(NQF), d=width)
def train_closed(
    nqf: NQF,
    M,
    mu,
    d: int,
    y,
    lr,
    steps: int,
    batches=None,
    weight_decay: float = 0.0,
    progress: bool = False,
    *,
    record: str | Sequence[str] | None = None,
    every: int = 1,
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray] | TrainingRecord:
    """Run ``steps`` steps of the closed recursion (:func:`closed_step`,
    Theorem 2) and record the predictions.

    Every argument is validated once, before the first step (including the
    realisability of ``(M, mu)`` at width ``d``, :func:`check_realizable`);
    the loop itself is the arithmetic of Eqs. 23-24 only.

    Parameters
    ----------
    nqf : NQF
        The quadratic form of the data set (validated when it was made).
    M : array, shape (p, p)
    mu : array, shape (p,)
    d : int >= 1
        Width (a number: no weights are stored).
    y, lr, steps, batches, weight_decay, progress
        As in :func:`train`.
    record : str or sequence of str, optional
        Any of ``"pred"``, ``"loss"``, ``"M"``, ``"mu"`` (there are no
        weights); when given, a :class:`TrainingRecord` is returned.
    every : int >= 1, default 1
        As in :func:`train`.

    Returns
    -------
    (M, mu) : tuple of ndarray
        Order parameters after the last step.
    predictions : ndarray, shape (steps + 1, m) or (steps + 1, m, V)
        Predictions on every sample at steps ``0, ..., steps``.

    or, with ``record``, a :class:`TrainingRecord` whose ``final`` is
    ``(M, mu)``.
    """
    M, mu = nqf._state(M, mu)
    y, lr, wd, steps, batches = schedule(
        nqf, y, lr, weight_decay, steps, batches
    )
    names, at = _recording(
        record, every, steps, _CLOSED_RECORDS, "train_closed"
    )
    check_realizable(M, mu, d)
    if names is None:  # the plain loop: every step's predictions
        preds = np.empty((steps + 1,) + y.shape)
        preds[0] = nqf._f(M, mu, None)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(steps):
                idx = batches[t]
                M, mu = closed_update(
                    nqf,
                    M,
                    mu,
                    d,
                    y,
                    lr,
                    idx,
                    wd,
                    f=preds[t] if idx is None else None,
                )
                preds[t + 1] = nqf._f(M, mu, None)
        return (M, mu), preds

    def advance(state: tuple, t: int, f: np.ndarray) -> tuple:
        idx = batches[t]
        return closed_update(
            nqf, *state, d, y, lr, idx, wd, f=f if idx is None else None
        )

    return _loop(
        nqf, (M, mu), advance, lambda state: state, y, steps, names, at
    )


def _loop(
    nqf: NQF, state, advance, moments_of, y, steps, names, at
) -> TrainingRecord:
    """The recording loop of :func:`train` and :func:`train_closed`.

    ``advance(state, t, f)`` takes step ``t`` from the predictions ``f``;
    ``moments_of(state)`` gives ``(M, mu)``; ``names`` are recorded at the
    steps ``at``.
    """
    out: dict[str, np.ndarray] = {}

    def keep(
        i: int, state, M: np.ndarray, mu: np.ndarray, f: np.ndarray
    ) -> None:
        for name in names:
            if name == "pred":
                value = f
            elif name == "loss":
                value = np.sum((f - y) ** 2) / nqf.m
            else:
                value = {"M": M, "mu": mu, "W": state}[name]
            if name not in out:
                out[name] = np.empty((at.size,) + np.shape(value))
            out[name][i] = value

    M, mu = moments_of(state)
    f = nqf._f(M, mu, None)
    keep(0, state, M, mu, f)  # at[0] = 0
    j = 1
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps):
            state = advance(state, t, f)
            M, mu = moments_of(state)
            f = nqf._f(M, mu, None)
            if j < at.size and at[j] == t + 1:
                keep(j, state, M, mu, f)
                j += 1
    return TrainingRecord(steps=at, final=state, **out)


def schedule(nqf: NQF, y, lr, weight_decay, steps, batches) -> tuple:
    """Validate the arguments shared by :func:`train` and
    :func:`train_closed`."""
    y = nqf._y(y)
    lr = positive("lr", lr)
    weight_decay = nonnegative("weight_decay", weight_decay)
    steps = integer("steps", steps, minimum=0)
    if batches is None:
        return y, lr, weight_decay, steps, [None] * steps
    if isinstance(batches, (str, bytes)) or not isinstance(
        batches, (Sequence, np.ndarray)
    ):
        raise TypeError(
            f"batches must be None or a sequence of {steps} index arrays, "
            f"got {type(batches).__name__}"
        )
    if len(batches) != steps:
        raise ValueError(
            f"batches must hold one index array per step ({steps}), got "
            f"{len(batches)}"
        )
    checked = []
    for t, batch in enumerate(batches):
        try:
            checked.append(nqf._batch(batch))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"batches[{t}]: {exc}") from exc
    return y, lr, weight_decay, steps, checked
