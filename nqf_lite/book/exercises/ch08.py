"""Judges of the coding exercises of chapter 8 (the atlas of Table 3).

- ``ex-ch8-two-factor-structure``: the structure matrix of the two-factor
  diagonal network (Table 3, row 8), written by hand;
- ``ex-ch8-tied-structure``: ``(A, f0)`` of the tied query–key head (Table 3,
  row 14);
- ``ex-ch8-switch-times``: the mean switch-on times of phase retrieval with
  orthonormal measurements under GD from a Gaussian start (Thm 8, Eq. 158, with
  the corrections of
  :mod:`nqf_lite.design.corrections`).

Each judge draws its own cases from :mod:`nqf_lite.book.seeding` and compares
the student's function with the registry's closed forms (``structure``) or with
:func:`~nqf_lite.design.corrections.gd_switch_on_time`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import ortho_group

from nqf_lite.expansion.models.bilinear import TiedQueryKey
from nqf_lite.expansion.models.diagonal import DiagonalTwoFactor
from nqf_lite.expansion.models.sensing import PhaseRetrieval
from nqf_lite.design.corrections import gd_growth_rate, gd_switch_on_time
from nqf_lite.book.seeding import rng
from nqf_lite.dynamics.solvable import (
    common_eigenbasis,
    glv_coefficients,
    switch_on_time,
)
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import (
    call_student,
    close,
    compare_arrays,
    compare_number,
)

#: input sizes the structure judges try (a formula tied to one size cannot
#: pass)
SIZES = (2, 5)


# ------------------------------------------------------------------ two-factor
# diagonal network


def judge_two_factor(two_factor_A: Any) -> str | None:
    """``two_factor_A(x) -> A`` (2K, 2K) against Table 3, row 8."""
    for K in SIZES:
        x = rng("exercises", "ex-ch8-two-factor-structure", K).standard_normal(
            K
        )
        out, hint = call_student(two_factor_A, x.copy(), what="two_factor_A")
        if hint:
            return hint
        expected = DiagonalTwoFactor(k=K).structure(x).A
        if close(out, np.kron(np.eye(2), np.diag(x)) / 2):
            return (
                "A couples u with u and v with v; but the output u^T Diag(x) "
                "v is a product of a u "
                "and a v: where must the blocks sit?"
            )
        hint = compare_arrays(out, expected, what="A", atol=1e-12)
        if hint:
            return hint
    return None


# -------------------------------------------------------------------------
# tied query-key head


def _tied_case(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    r = rng("exercises", "ex-ch8-tied-structure", N)
    D, d_k = 3, 2 + N % 3
    return (
        r.standard_normal(D),
        r.standard_normal((D, N)),
        r.standard_normal(D),
        d_k,
    )


def judge_tied(tied_structure: Any) -> str | None:
    """``tied_structure(x, X, c, d_k) -> (A, f0)`` against Table 3, row 14."""
    for N in (4, 7):
        x, X, c, d_k = _tied_case(N)
        out, hint = call_student(
            tied_structure,
            x.copy(),
            X.copy(),
            c.copy(),
            d_k,
            what="tied_structure",
        )
        if hint:
            return hint
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            return "tied_structure should return the pair (A, f0)."
        A, f0 = out
        s = TiedQueryKey(D=x.size, d_k=d_k, c=c, N=N).structure((x, X))
        try:
            A_arr = np.asarray(A, dtype=float)
        except (TypeError, ValueError):
            A_arr = None
        if (
            A_arr is not None
            and A_arr.shape == s.A.shape
            and not np.allclose(A_arr, A_arr.T)
        ):
            return (
                "A is not symmetric: Tr[M A] with a symmetric M only sees the "
                "symmetric part of A."
            )
        uncentred = X @ X.T / N @ c
        if close(
            A,
            (np.outer(x, uncentred) + np.outer(uncentred, x))
            / (2 * np.sqrt(d_k)),
        ):
            return (
                "u comes from the softmax's Jacobian at zero logits: check "
                "that you used a covariance."
            )
        hint = compare_arrays(A, s.A, what="A", atol=1e-12) or compare_number(
            f0, s.f0, what="f0", atol=1e-12
        )
        if hint:
            return hint
    return None


# -------------------------------------------------------------------------
# switch-on times


def _phase_case(m: int) -> dict[str, Any]:
    r = rng("exercises", "ex-ch8-switch-times", m)
    n = m + 2
    a = ortho_group.rvs(n, random_state=r)[
        :m
    ]  # orthonormal measurement vectors (rows)
    return dict(
        a=a,
        y=r.uniform(0.2, 0.9, m),
        eps=10.0 ** r.uniform(-6, -4),
        width=int(r.integers(4, 40)),
        lr=0.1,
    )


def _phase_glv(
    a: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r, C_kk, k_of_mu)``: GLV rates of phase retrieval and the mode of
    each measurement."""
    model = PhaseRetrieval(n=a.shape[1])
    A = np.stack([model.structure(a_mu).A for a_mu in a])
    _, lam = common_eigenbasis(A)
    r, C = glv_coefficients(lam, y)
    return r, np.diag(C), np.argmax(lam, axis=1)


def judge_switch_times(switch_times: Any) -> str | None:
    """``switch_times(a, y, eps, width, lr) -> t`` (m,) against the corrected
    Eq. 158."""
    for m in (2, 3):
        case = _phase_case(m)
        out, hint = call_student(
            switch_times,
            case["a"].copy(),
            case["y"].copy(),
            case["eps"],
            case["width"],
            case["lr"],
            what="switch_times",
        )
        if hint:
            return hint
        r, c, k = _phase_glv(case["a"], case["y"])
        r, c = r[k], c[k]
        eps, width, lr = case["eps"], case["width"], case["lr"]
        expected = gd_switch_on_time(r, c, eps, lr, d=width)
        if close(out, switch_on_time(r, c, eps), rtol=1e-4):
            return (
                "these are gradient-flow times from z(0) = eps "
                f"({eq('eq-ch8-tstar')}): the runs take discrete "
                "steps from a random start."
            )
        if close(out, gd_switch_on_time(r, c, eps, lr), rtol=1e-4):
            return (
                "the discrete steps are in; the start is not: z(0) is random, "
                "and t depends on ln z(0)."
            )
        if close(out, expected + 0.75 * np.log(2) * lr, rtol=1e-4):
            return (
                "close: the logistic map saturates a little faster than the "
                "flow (a fixed number of steps)."
            )
        if close(
            out, np.log(r / (c * eps)) / gd_growth_rate(r, lr), rtol=1e-4
        ):
            return (
                "the growth rate is corrected; the initial abundance and the "
                "saturation phase are not."
            )
        hint = compare_arrays(out, expected, what="t", rtol=1e-4)
        if hint:
            return hint
    return None


# -------------------------------------------------------------------------
# wrong answers


def _phase_times(
    a, y, eps, width, lr, *, steps=True, start=True, rate_scale=1.0
):
    """The corrected times, optionally with a slip: a wrong answer for the
    tests."""
    r, c, k = _phase_glv(np.asarray(a), np.asarray(y))
    r, c = rate_scale * r[k], c[k]
    if not steps:
        return switch_on_time(r, c, eps)
    return gd_switch_on_time(r, c, eps, lr, d=width if start else None)


register(
    Exercise(
        "ex-ch8-two-factor-structure",
        "two_factor_A(x) returns the structure matrix (2K, 2K) of u^T Diag(x) "
        "v",
        judge_two_factor,
        wrong=(
            (
                lambda x: np.block(
                    [
                        [0 * np.diag(x), np.diag(x)],
                        [np.diag(x), 0 * np.diag(x)],
                    ]
                ),
                {},
            ),
            (lambda x: np.kron(np.eye(2), np.diag(x)) / 2, {}),
            (lambda x: np.diag(x) / 4, {}),
        ),
    )
)
register(
    Exercise(
        "ex-ch8-tied-structure",
        "tied_structure(x, X, c, d_k) returns (A, f0) of the tied query-key "
        "head",
        judge_tied,
        wrong=(
            (
                lambda x, X, c, d_k: (
                    np.outer(x, X @ X.T / X.shape[1] @ c) / np.sqrt(d_k),
                    c @ X.mean(axis=1),
                ),
                {},
            ),
            (
                lambda x, X, c, d_k: (
                    TiedQueryKey(D=x.size, d_k=d_k, c=c, N=X.shape[1])
                    .structure((x, X))
                    .A
                    * 2,
                    c @ X.mean(axis=1),
                ),
                {},
            ),
            (
                lambda x, X, c, d_k: (
                    TiedQueryKey(D=x.size, d_k=d_k, c=c, N=X.shape[1])
                    .structure((x, X))
                    .A,
                    0.0,
                ),
                {},
            ),
        ),
    )
)
register(
    Exercise(
        "ex-ch8-switch-times",
        "switch_times(a, y, eps, width, lr) returns the mean GD switch-on "
        "time of each measurement",
        judge_switch_times,
        wrong=(
            (
                lambda a, y, eps, width, lr: _phase_times(
                    a, y, eps, width, lr, steps=False
                ),
                {},
            ),
            (
                lambda a, y, eps, width, lr: _phase_times(
                    a, y, eps, width, lr, start=False
                ),
                {},
            ),
            (
                lambda a, y, eps, width, lr: _phase_times(
                    a, y, eps, width, lr, rate_scale=len(y) / 8
                ),
                {},
            ),
        ),
    )
)
