"""Judges of the coding exercises of chapter 4 (training closes on ``(M, μ)``).

- ``ex-ch4-closure``: one closed SGD step on ``(M, μ)`` from ``v`` and ``H``
  (Theorem 2, Eqs. 23-24);
- ``ex-ch4-wd-step``: the same step under weight decay (App. B.3);
- ``ex-ch4-ntk``: the tangent kernel from ``(M, μ)`` (Prop. 8, Eq. 245).

Each judge draws its own general NQFs (``g, B ≠ 0``, so the width matters) from
:mod:`nqf_lite.book.seeding` and compares the student's function with
:meth:`NQF.closed_step` or :func:`ntk_from_moments`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nqf_lite.expansion.form import NQF, moments, ntk_from_moments, random_nqf
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import call_student, close, compare_arrays

#: two widths, so that a formula that drops the width ``d`` cannot pass
WIDTHS = (7, 40)
LR, GAMMA = 0.1, 0.3


def _state(key: str, d: int) -> tuple[NQF, np.ndarray, np.ndarray, np.ndarray]:
    """A general NQF (p = 5, m = 6) and a width-``d`` layer on it: ``model, W,
    y, batch``."""
    r = rng("exercises", key, d)
    model = random_nqf(6, 5, scale_A=0.5, scale_g=0.3, scale_B=0.1, seed=r)
    W = r.standard_normal((5, d)) / np.sqrt(d)
    return model, W, r.standard_normal(6), r.choice(6, size=3, replace=False)


def _pair(out: Any, what: str) -> tuple[Any, Any, str | None]:
    """``(M_next, mu_next)`` from what the student's function returned, or a
    hint."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None, None, f"{what} should return the pair (M_next, mu_next)."
    return out[0], out[1], None


def _moment_step(M, mu, v, H, d, lr, *, second_order=True, width=True):
    """Eqs. 23-24, optionally with a slip (no ``η²`` part, or ``d`` dropped):
    wrong answers."""
    dv = d * v if width else v
    M_next = M - lr * (np.outer(v, mu) + np.outer(mu, v) + H @ M + M @ H)
    if second_order:
        M_next += lr**2 * (
            np.outer(dv, v)
            + np.outer(v, H @ mu)
            + np.outer(H @ mu, v)
            + H @ M @ H
        )
    return M_next, mu - lr * (dv + H @ mu)


def _judge_step(
    student: Any, gamma: float | None, key: str, what: str
) -> str | None:
    """Compare ``student(M, mu, v, H, d, lr[, gamma])`` with
    :meth:`NQF.closed_step`."""
    for d in WIDTHS:
        model, W, y, batch = _state(key, d)
        M, mu = moments(W)
        v, H = model.vH(M, mu, y, batch=batch)
        args = (M.copy(), mu.copy(), v.copy(), H.copy(), d, LR)
        args += () if gamma is None else (gamma,)
        out, hint = call_student(student, *args, what=what)
        if hint:
            return hint
        M_s, mu_s, hint = _pair(out, what)
        if hint:
            return hint
        M_1, mu_1 = model.closed_step(
            M, mu, d, y, LR, batch=batch, weight_decay=gamma or 0.0
        )
        H_eff = H if gamma is None else H + gamma * np.eye(5)
        first = _moment_step(M, mu, v, H_eff, d, LR, second_order=False)
        no_width = _moment_step(M, mu, v, H_eff, d, LR, width=False)
        if close(M_s, first[0]):
            return (
                "M_next is right to first order in the learning rate only: "
                "Theorem 2's step is exact, "
                "not a gradient-flow limit."
            )
        if close(mu_s, no_width[1]) or close(M_s, no_width[0]):
            return (
                "the shared shift v is applied to each of the d neurons: "
                "check where the width enters."
            )
        if gamma is not None:
            if close(mu_s, (mu_1 + LR * gamma * mu)):
                return (
                    "mu_next: the decay acts on every neuron, so on their sum "
                    "mu too."
                )
            decay_first = (
                _moment_step(M, mu, v, H, d, LR)[0] - 2 * LR * gamma * M
            )
            if close(M_s, decay_first):
                return (
                    "M_next: the decay is part of the gradient, so it enters "
                    "the second-order terms "
                    "as well."
                )
        hint = compare_arrays(
            M_s, M_1, what="M_next", atol=1e-12
        ) or compare_arrays(mu_s, mu_1, what="mu_next", atol=1e-12)
        if hint:
            return hint
    return None


def judge_closure(closed_sgd_step: Any) -> str | None:
    """``closed_sgd_step(M, mu, v, H, d, lr) -> (M_next, mu_next)`` against
    Theorem 2."""
    return _judge_step(
        closed_sgd_step, None, "ex-ch4-closure", "closed_sgd_step"
    )


def judge_wd_step(closed_wd_step: Any) -> str | None:
    """``closed_wd_step(M, mu, v, H, d, lr, gamma)`` against the closed step
    with weight decay."""
    return _judge_step(
        closed_wd_step, GAMMA, "ex-ch4-wd-step", "closed_wd_step"
    )


def judge_ntk(kernel: Any) -> str | None:
    """``kernel(A, g, B, M, mu, d) -> Theta`` (m, m) against Prop. 8."""
    for d in WIDTHS:
        model, W, _, _ = _state("ex-ch4-ntk", d)
        M, mu = moments(W)
        args = (
            model.A.copy(),
            model.g.copy(),
            model.B.copy(),
            M.copy(),
            mu.copy(),
            d,
        )
        out, hint = call_student(kernel, *args, what="the kernel function")
        if hint:
            return hint
        expected = ntk_from_moments(model, M, mu, d)
        if close(out, ntk_from_moments(NQF(model.A), M, mu, d)):
            return (
                "your kernel is that of a ZGZ module: g and B move every "
                "neuron by the same shift too."
            )
        if close(out, ntk_from_moments(model, M, mu, 1)):
            return (
                "the shared part of the gradient is summed over the d "
                "neurons: check where the width enters."
            )
        hint = compare_arrays(out, expected, what="Theta", atol=1e-12)
        if hint:
            return hint
    return None


def _no_second_order(M, mu, v, H, d, lr):
    return _moment_step(M, mu, v, H, d, lr, second_order=False)


def _no_width(M, mu, v, H, d, lr):
    return _moment_step(M, mu, v, H, d, lr, width=False)


def _decay_M_once(M, mu, v, H, d, lr, gamma):
    M_next, mu_next = _moment_step(M, mu, v, H, d, lr)
    return M_next - lr * gamma * M, mu_next


def _decay_not_on_mu(M, mu, v, H, d, lr, gamma):
    M_next, _ = _moment_step(M, mu, v, H + gamma * np.eye(len(mu)), d, lr)
    return M_next, _moment_step(M, mu, v, H, d, lr)[1]


def _kernel_without_4(A, g, B, M, mu, d):
    full = ntk_from_moments(NQF(A, g=g, B=B), M, mu, d)
    return full - 0.75 * ntk_from_moments(NQF(A), M, mu, d)


register(
    Exercise(
        "ex-ch4-closure",
        "closed_sgd_step(M, mu, v, H, d, lr) returns (M_next, mu_next) of "
        + eq("eq-ch4-dmu", "eq-ch4-dM"),
        judge_closure,
        wrong=(
            (_no_second_order, {}),
            (_no_width, {}),
            (lambda M, mu, v, H, d, lr: (M, mu), {}),
        ),
    )
)
register(
    Exercise(
        "ex-ch4-wd-step",
        "closed_wd_step(M, mu, v, H, d, lr, gamma): the closed step with "
        "weight decay gamma",
        judge_wd_step,
        wrong=(
            (_decay_M_once, {}),
            (_decay_not_on_mu, {}),
            (
                lambda M, mu, v, H, d, lr, gamma: _moment_step(
                    M, mu, v, H, d, lr
                ),
                {},
            ),
        ),
    )
)
register(
    Exercise(
        "ex-ch4-ntk",
        "kernel(A, g, B, M, mu, d) returns the m x m tangent kernel of "
        + eq("eq-ch4-ntk"),
        judge_ntk,
        wrong=(
            (lambda A, g, B, M, mu, d: ntk_from_moments(NQF(A), M, mu, d), {}),
            (
                lambda A, g, B, M, mu, d: ntk_from_moments(
                    NQF(A, g=g, B=B), M, mu, 1
                ),
                {},
            ),
            (_kernel_without_4, {}),
        ),
    )
)
