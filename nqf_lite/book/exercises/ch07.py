"""Coding exercises of chapter 7 (power laws): a fitted exponent, k_eff, the
Fourier modes.

Each judge computes the right answer with the package
(``nqf_lite.dynamics.scaling``, ``nqf_lite.expansion.models.fourier``), never
with the chapter's solution code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nqf_lite.dynamics import scaling as sc
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import (
    as_floats,
    compare_arrays,
    compare_number,
)

__all__: list[str] = []

# -----------------------------------------------------------------------------
# a fitted exponent

#: how far a hand-made least-squares fit may sit from the package's log-uniform
#: one
FIT_ATOL = 0.01


def _fit_exponent(answer: Any, t: Any, E: Any, window: Any) -> str | None:
    """Minus the log-log slope of ``E(t)`` on ``window`` (Theorem 9's exponent,
    measured)."""
    try:
        lo, hi = (float(w) for w in window)
    except (TypeError, ValueError):
        return "window_fit should be a pair of times (t_lo, t_hi)."
    t = np.asarray(t, dtype=float)
    if not (t[0] <= lo < hi <= t[-1]):
        return (
            f"window_fit should lie inside the time grid, [{t[0]:.3g}, "
            f"{t[-1]:.3g}], with t_lo < t_hi."
        )
    if hi / lo < 10:
        return (
            "choose a window of at least one decade (t_hi >= 10 t_lo): "
            "shorter fits see single steps."
        )
    expected = -sc.fit_loglog_slope(t, E, (lo, hi)).slope
    return compare_number(
        answer, expected, what="exponent_fit", atol=FIT_ATOL, rtol=0.0
    )


_T = np.geomspace(1.0, 1e4, 400)
_E = 3.0 * _T**-1.5
_W = (10.0, 1000.0)

register(
    Exercise(
        "ex-ch7-fit-exponent",
        "minus the slope of ln E against ln t on a window of at least one "
        "decade",
        _fit_exponent,
        given=("t", "E", "window"),
        wrong=(
            (
                -1.5,
                {"t": _T, "E": _E, "window": _W},
                "sign",
            ),  # the slope itself
            (
                1.5 / np.log(10),
                {"t": _T, "E": _E, "window": _W},
                "log base",
            ),  # log10 E, ln t
            (
                1.5,
                {"t": _T, "E": _E, "window": (10.0, 50.0)},
            ),  # less than a decade
        ),
    )
)

# -----------------------------------------------------------------------------
# k_eff


def _keff(
    answer: Any, r: Any, C: Any, z0: Any, alpha1: Any, alpha2: Any
) -> str | None:
    """Eq. 292 of the paper (beta0 = 0) for every mode, from its own ln(z_k^inf
    / z_k(0))."""
    expected = sc.effective_slope(alpha1, alpha2, r, C, z0)
    hint = compare_arrays(answer, expected, what="keff_modes", rtol=1e-8)
    a = as_floats(answer)
    if hint is None or a is None or a.shape != np.shape(expected):
        return hint
    a1, a2 = float(alpha1), float(alpha2)
    log = np.log(
        np.asarray(r, float) / np.asarray(C, float) / np.asarray(z0, float)
    )
    if np.allclose(a, (a1 - 1) / (a2 + (a1 - a2) / log), rtol=1e-8):
        return (
            "keff_modes: the correction to alpha_2 in the denominator has the "
            "wrong sign: a finite "
            "start makes the exponent larger than (alpha_1 - 1)/alpha_2, not "
            "smaller."
        )
    if np.allclose(
        a, (a1 - 1) / (a2 - (a1 - a2) / (log / np.log(10))), rtol=1e-8
    ):
        return (
            "keff_modes: ln(z_k^inf / z_k(0)) is a natural logarithm "
            "(np.log); yours is a base-10 "
            "logarithm (np.log10)."
        )
    return hint


_PM = sc.powerlaw_modes(5, 2.0, 0.8)
_Z0 = np.full(5, 1e-6)
_LOG = np.log(_PM.r / _PM.C / _Z0)
_KEFF_GIVEN = {"r": _PM.r, "C": _PM.C, "z0": _Z0, "alpha1": 2.0, "alpha2": 0.8}

register(
    Exercise(
        "ex-ch7-keff",
        f"k_eff of {eq('eq-ch7-keff')} (uniform start, beta_0 = 0) for every "
        "mode",
        _keff,
        given=("r", "C", "z0", "alpha1", "alpha2"),
        wrong=(
            (
                np.full(5, 1.0 / 0.8),
                _KEFF_GIVEN,
            ),  # the eps -> 0 exponent for all modes
            (
                1.0 / (0.8 + 1.2 / _LOG),
                _KEFF_GIVEN,
                "sign",
            ),  # sign of the correction
            (
                1.0 / (0.8 - 1.2 / (_LOG / np.log(10))),
                _KEFF_GIVEN,
                "log base",
            ),  # log10
        ),
    )
)

# -----------------------------------------------------------------------------
# Fourier modes


def _fourier(answer: Any, s: Any, b: Any, c: Any) -> str | None:
    """``(r_k, C_kk)`` of the growing Fourier modes (Eq. 37 with Eq. 296, i.e.
    Eq. 297)."""
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        return "fourier_rC should be a pair of arrays: (r_k, C_kk)."
    r, C = fo.fourier_modes(s, b, c)
    return compare_arrays(
        answer[0], r, what="r_k", rtol=1e-8
    ) or compare_arrays(answer[1], C, what="C_kk", rtol=1e-8)


_S = np.arange(1.0, 5.0) ** -0.5
_B = np.arange(1.0, 5.0) ** -1.5
_RC = fo.fourier_modes(_S, _B, 0.1)
_F_GIVEN = {"s": _S, "b": _B, "c": 0.1}

register(
    Exercise(
        "ex-ch7-fourier-rates",
        "r_k and C_kk of the growing Fourier modes from the data, "
        f"{eq('eq-ch7-fourier-modes')}",
        _fourier,
        given=("s", "b", "c"),
        wrong=(
            (
                (2 * _RC[0], 4 * _RC[1]),
                _F_GIVEN,
                "factor 2",
            ),  # s_k psi_k without the 1/2
            (
                (_RC[0] / 2, _RC[1] / 2),
                _F_GIVEN,
                "factor 2",
            ),  # 4/M in place of 8/M
            ((_RC[1], _RC[0]), _F_GIVEN),  # swapped
        ),
    )
)
