"""Judges of the coding exercises of chapter 11 (A(x) as a design tool).

- ``ex-ch11-order``: the order in which the samples of a mixture of experts are
  learned, forecast from its structure matrices (Prop. 5, Eq. 14; Eq. 37; Eq.
  43);
- ``ex-ch11-head-start``: the head start in GD steps that more experts buy,
  with the GD rate and the chi^2_d initialisation
  (:mod:`nqf_lite.design.corrections`).

The order judge forecasts with
:func:`nqf_lite.design.forecast.predict_learning` (autograd
expansion of the torch layer); the head-start judge with
:func:`nqf_lite.design.corrections.gd_switch_on_time`.  Cases come from
:mod:`nqf_lite.book.seeding`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.stats import ortho_group

from nqf_lite.expansion.models.blocks import activation
from nqf_lite.expansion.models.moe import linear_expert, moe_module
from nqf_lite.design.forecast import predict_learning
from nqf_lite.design.corrections import gd_growth_rate, gd_switch_on_time
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, register
from nqf_lite.book.exercises._judges import call_student, close, compare_arrays

#: gates of the order judge, by name (their psi'(0) is passed to the student)
GATES = ("tanh", "gelu")


def _order_case(gate: str) -> dict[str, Any]:
    """Orthogonal inputs of different lengths and labels whose switch-ons are
    well apart."""
    r = rng("exercises", "ex-ch11-order", gate)
    k = 4
    while True:
        s = r.uniform(0.6, 1.6, k)
        X = s[:, None] * ortho_group.rvs(k, random_state=r)
        y = r.uniform(0.02, 0.1, k)
        lam = (
            activation(gate)[2] * s**2 / 2
        )  # eigenvalue on each sample's mode
        rate, c = 8 / k * lam * y, 8 / k * lam**2
        t = np.sort(np.log(rate / (c * 1e-6)) / rate)
        order_y = np.argsort(-y)
        if np.all(np.diff(t) > 0.05 * t[:-1]) and not np.array_equal(
            order_y, np.argsort(np.log(rate / (c * 1e-6)) / rate)
        ):
            return dict(X=X, y=y, dpsi0=activation(gate)[2], eps=1e-6)


def _forecast_order(gate: str, case: dict[str, Any]) -> np.ndarray:
    """Sample indices in the forecast's switch-on order, from
    predict_learning."""
    X, k = case["X"], case["X"].shape[1]
    f = moe_module(k, linear_expert(k), gate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fc = predict_learning(
            f, list(X), case["y"], f.p, eps=case["eps"], lr=1.0
        )
    x_hat = X / np.linalg.norm(X, axis=1, keepdims=True)
    own = np.hstack([x_hat, x_hat]) / np.sqrt(
        2
    )  # the mode of each sample, as rows
    return np.array(
        [int(np.argmax(np.abs(own @ fc.modes[:, j]))) for j in fc.order]
    )


def judge_order(learning_order: Any) -> str | None:
    """``learning_order(X, y, dpsi0, eps) -> sample indices``, earliest
    first."""
    for gate in GATES:
        case = _order_case(gate)
        out, hint = call_student(
            learning_order,
            case["X"].copy(),
            case["y"].copy(),
            case["dpsi0"],
            case["eps"],
            what="learning_order",
        )
        if hint:
            return hint
        expected = _forecast_order(gate, case)
        try:
            got = np.asarray(out).astype(int).ravel()
        except (TypeError, ValueError):
            return "learning_order should return an array of sample indices."
        if got.shape == expected.shape and np.array_equal(got, expected[::-1]):
            return (
                "the order is reversed: the first index should be the sample "
                "learned first."
            )
        if got.shape == expected.shape and np.array_equal(
            got, np.argsort(-case["y"])
        ):
            return (
                "that is the order of the labels: the rate r also carries the "
                "eigenvalue of A(x_mu) on "
                "its mode, and the time depends on C too."
            )
        hint = compare_arrays(got, expected, what="the order")
        if hint:
            return hint
    return None


# -----------------------------------------------------------------------------
# head start


def _head_case(lr: float) -> dict[str, Any]:
    r = rng("exercises", "ex-ch11-head-start", str(lr))
    rates = np.sort(r.uniform(0.02, 0.12, 4))[::-1]
    return dict(
        r=rates,
        C=rates / r.uniform(0.05, 0.3, 4),
        d_small=8,
        d_large=64,
        sigma2=1e-7,
        lr=lr,
    )


def _head_start(r, C, d_small, d_large, sigma2, lr):
    """The head start in steps: difference of two corrected switch-on times."""
    t = [
        gd_switch_on_time(r, C, d * sigma2, lr, d=d)
        for d in (d_small, d_large)
    ]
    return (t[0] - t[1]) / lr


def judge_head_start(head_start: Any) -> str | None:
    """``head_start(r, C, d_small, d_large, sigma2, lr) -> steps`` (per
    mode)."""
    for lr in (2.0, 0.5):
        case = _head_case(lr)
        args = (
            case["r"].copy(),
            case["C"].copy(),
            case["d_small"],
            case["d_large"],
            case["sigma2"],
            lr,
        )
        out, hint = call_student(head_start, *args, what="head_start")
        if hint:
            return hint
        expected = _head_start(*args)
        ratio = np.log(case["d_large"] / case["d_small"])
        if close(out, ratio / (lr * case["r"]), rtol=1e-3):
            return (
                "this is the gradient-flow head start from d sigma^2: a GD "
                "step grows a mode more slowly."
            )
        if close(out, ratio / (lr * gd_growth_rate(case["r"], lr)), rtol=1e-3):
            return (
                "the GD rate is in; the start is not: the two widths start "
                "from different geometric means."
            )
        if close(out, expected * lr, rtol=1e-3):
            return (
                "that is a time t = lr * step; the head start is asked in GD "
                "steps."
            )
        hint = compare_arrays(out, expected, what="the head start", rtol=1e-3)
        if hint:
            return hint
    return None


register(
    Exercise(
        "ex-ch11-order",
        "learning_order(X, y, dpsi0, eps) returns the sample indices in "
        "switch-on order",
        judge_order,
        wrong=(
            (lambda X, y, dpsi0, eps: np.argsort(-y), {}),
            (
                lambda X, y, dpsi0, eps: np.argsort(-y * (X**2).sum(1))[::-1],
                {},
            ),
            (lambda X, y, dpsi0, eps: np.arange(len(y)), {}),
        ),
    )
)
register(
    Exercise(
        "ex-ch11-head-start",
        "head_start(r, C, d_small, d_large, sigma2, lr) returns the head "
        "start of each mode in GD steps",
        judge_head_start,
        wrong=(
            (lambda r, C, ds, dl, s2, lr: np.log(dl / ds) / (lr * r), {}),
            (
                lambda r, C, ds, dl, s2, lr: (
                    np.log(dl / ds) / (lr * gd_growth_rate(r, lr))
                ),
                {},
            ),
            (
                lambda r, C, ds, dl, s2, lr: (
                    lr * _head_start(r, C, ds, dl, s2, lr)
                ),
                {},
            ),
        ),
    )
)
