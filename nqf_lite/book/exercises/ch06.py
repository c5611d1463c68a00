"""Coding exercises of chapter 6 (sudden learning): switch-on times, plateaus,
Theorem 16.

Each judge computes the right answer with the package
(``nqf_lite.dynamics.solvable``, ``nqf_lite.dynamics.projectors``), never with
the chapter's solution code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nqf_lite.dynamics import projectors as pj
from nqf_lite.dynamics import solvable as S
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import call_student, compare_arrays

__all__: list[str] = []

# -----------------------------------------------------------------------------
# switch-on times


def _switch_on(answer: Any, r: Any, C: Any, z0: Any) -> str | None:
    """Half-saturation times of Theorem 6 (Eq. 39 solved for z_k = z_k^inf /
    2)."""
    expected = S.switch_on_time_exact(r, C, z0)
    # the paper's Fig. 3 formula drops an O(eps) term: accept both to 1e-4
    hint = compare_arrays(answer, expected, what="t_star", rtol=1e-4)
    if hint is None:
        return None
    leading = np.log(1.0 / np.asarray(z0, float)) / np.asarray(r, float)
    if np.shape(answer) == leading.shape and np.allclose(
        answer, leading, rtol=1e-6
    ):
        return (
            "t_star is the leading order ln(1/z_k(0))/r_k only: the ceiling "
            "z_k^inf = r_k/C_kk enters the logarithm as well."
        )
    return hint


_R = np.array([1.0, 0.25])
_C = np.diag([1.0, 2.0])
_Z0 = np.array([1e-4, 1e-4])
_T_LEADING = np.log(1 / _Z0) / _R
_T_EXACT = (
    np.log((_R / np.diag(_C) - _Z0) / _Z0) / _R
)  # written out, for the wrong answers

register(
    Exercise(
        "ex-ch6-switch-on",
        f"the half-saturation times t*_k of {eq('eq-ch6-switch-on')} from r, "
        "C and z0",
        _switch_on,
        given=("r", "C", "z0"),
        wrong=(
            (_T_LEADING, {"r": _R, "C": _C, "z0": _Z0}),  # leading order only
            (
                _T_EXACT / 2,
                {"r": _R, "C": _C, "z0": _Z0},
                "factor 2",
            ),  # rate 2 r_k
            (
                _T_EXACT / np.log(10),
                {"r": _R, "C": _C, "z0": _Z0},
                "log base",
            ),  # log10
        ),
    )
)

# -----------------------------------------------------------------------------
# plateaus


def _plateaus(answer: Any, r: Any, C: Any) -> str | None:
    """Excess loss on each plateau: the drops V_j of the modes not yet switched
    on."""
    V = np.atleast_1d(S.plateau_values(r, C))
    order = np.argsort(-np.asarray(r, float), kind="stable")  # fastest first
    expected = np.cumsum(V[order][::-1])[
        ::-1
    ]  # plateau k: modes k, k+1, ... unlearned
    return compare_arrays(
        answer, expected, what="plateaus", rtol=1e-8, atol=1e-12
    )


_R5 = 2.0 ** -np.arange(3)
_C5 = np.eye(3)
_V5 = _R5**2 / 8

register(
    Exercise(
        "ex-ch6-plateau",
        "the excess loss on each plateau of the orthogonal-feature staircase",
        _plateaus,
        given=("r", "C"),
        wrong=(
            (
                _V5,
                {"r": _R5, "C": _C5},
            ),  # one drop, not the sum of the unlearned
            (np.cumsum(_V5), {"r": _R5, "C": _C5}),  # summed the wrong way
            (
                8 * np.cumsum(_V5[::-1])[::-1],
                {"r": _R5, "C": _C5},
            ),  # V = r^2/C
        ),
    )
)

# -----------------------------------------------------------------------------
# Theorem 16


def _judge_sets() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Data sets the student's function is run on: projectors of ranks 1-3,
    with and without noise."""
    sets = []
    for i, (ranks, noise) in enumerate(
        (([2, 1, 3], 1.0), ([1, 2], 0.0), ([3, 2, 2], 0.5))
    ):
        g = rng("exercises", "ch6", "projector-constants", i)
        gamma = g.uniform(-1.0, 1.0, len(ranks))
        kappa = g.uniform(0.2, 2.0, len(ranks))
        d = pj.projector_data(
            ranks,
            gamma,
            kappa,
            p=sum(ranks) + 2,
            m=len(ranks) + 4,
            rng=g,
            noise=noise,
        )
        sets.append((d.A, d.y, d.projectors))
    return sets


def _constants(answer: Any) -> str | None:
    """``answer(A, y, projectors) -> (gamma, kappa)`` as Eq. 253-254 read them
    (traces / ranks)."""
    for A, y, Pi in _judge_sets():
        got, hint = call_student(answer, A, y, Pi, what="theorem16_constants")
        if hint:
            return hint
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            return (
                "theorem16_constants should return two arrays: (gamma, kappa)."
            )
        want = pj.projector_coefficients(A, y, Pi)
        for name, value, expected in (
            ("gamma", got[0], want.gamma),
            ("kappa", got[1], want.kappa),
        ):
            hint = compare_arrays(
                value, expected, what=name, rtol=1e-8, atol=1e-12
            )
            if hint:
                return (
                    f"{hint} (on a data set with projectors of ranks "
                    f"{np.einsum('aii->a', Pi).round().astype(int).tolist()})"
                )
    return None


def _no_rank(
    A: np.ndarray, y: np.ndarray, Pi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wrong: traces not divided by the ranks."""
    m = len(y)
    Y = 4 / m * np.einsum("n,nij->ij", y, A)
    K = 4 / m * np.einsum("an,nij->aij", np.einsum("nij,aji->an", A, Pi), A)
    return np.einsum("ij,aji->a", Y, Pi), np.einsum("aij,aji->a", K, Pi)


def _eight_over_m(
    A: np.ndarray, y: np.ndarray, Pi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wrong: the 8/m of Eq. 37 in place of the 4/m of Eq. 252."""
    gamma, kappa = _no_rank(A, y, Pi)
    ranks = np.einsum("aii->a", Pi)
    return 2 * gamma / ranks, 2 * kappa / ranks


register(
    Exercise(
        "ex-ch6-projector-constants",
        "a function theorem16_constants(A, y, projectors) -> (gamma, kappa) "
        "of " + eq("eq-ch6-thm16-constants"),
        _constants,
        wrong=(
            (_no_rank, {}),
            (_eight_over_m, {}, "factor 2"),
            (lambda A, y, Pi: np.ones(3), {}),
        ),
    )
)
