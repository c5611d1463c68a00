"""Judges of the coding exercises of chapter 10 (where the theory stops).

- ``ex-ch10-nqf-exponent``: the measured exponent of the NQF's truncation error
  for a tanh layer (odd activation) and a GELU layer (``GELU''(0) != 0``)
  (Theorem 1; Theorem 13 names the first term the NQF leaves out);
- ``ex-ch10-cubic-tensor``: the cubic tensor ``T_(3)(x)`` of one GELU neuron
  (Theorem 13, Eq. 202);
- ``ex-ch10-relu-sides``: one-sided second differences of a ReLU layer along
  ``+W`` and ``-W``, which a quadratic form would make equal (Theorem 1's
  smoothness hypothesis).

The first two judges compute the right answer with the package
(:func:`nqf_lite.expansion.autograd.truncation_error`,
:func:`nqf_lite.deep.higher_order.theorem13`) on
their own draws or on the student's input; the third with the closed form of a
ReLU layer's homogeneity, ``relu(hz) = h relu(z)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from nqf_lite.expansion.autograd import expand, truncation_error
from nqf_lite.deep.higher_order import theorem13
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, register
from nqf_lite.book.exercises._judges import compare_arrays

#: how far a measured exponent may sit from the judge's own measurement
EXPONENT_ATOL = 0.2


def _tanh_layer(W: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``sum_i v_i tanh(u_i . x)``; neuron i is the column ``(u_i, v_i)``."""
    return (W[-1] * torch.tanh(x @ W[:-1])).sum()


def _gelu_layer(W: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``sum_i v_i GELU(u_i . x)``; neuron i is the column ``(u_i, v_i)``."""
    return (W[-1] * F.gelu(x @ W[:-1])).sum()


# -------------------------------------------------------------
# ex-ch10-nqf-exponent


def _measured_exponents(key: str) -> np.ndarray:
    """The slopes of log|f - NQF| against log eps for the tanh and GELU
    layers."""
    r = rng("exercises", key)
    x = torch.tensor(r.standard_normal(3))
    W = r.standard_normal((4, 4))
    eps = np.geomspace(1e-3, 1e-1, 6)
    slopes = []
    for layer in (_tanh_layer, _gelu_layer):
        err = truncation_error(layer, expand(layer, x, 4, d=4), x, W, eps)
        slopes.append(np.polyfit(np.log(eps), np.log(err), 1)[0])
    return np.array(slopes)


def judge_nqf_exponent(slopes: Any) -> str | None:
    """``slopes = (slope_tanh, slope_gelu)`` against the judge's own
    measurement."""
    try:
        s = np.asarray(slopes, dtype=float)
    except (TypeError, ValueError):
        s = None
    if s is None or s.shape != (2,) or not np.all(np.isfinite(s)):
        return (
            "slopes should be a pair of numbers: (exponent for the tanh "
            "layer, exponent for the GELU layer)."
        )
    expected = _measured_exponents("ex-ch10-nqf-exponent")
    close = np.abs(s - expected) <= EXPONENT_ATOL
    if close.all():
        return None
    if np.all(np.abs(s[::-1] - expected) <= EXPONENT_ATOL):
        return (
            "the two exponents are swapped: the first is for tanh, the "
            "second for GELU."
        )
    if np.all(np.abs(s - 2.0) <= EXPONENT_ATOL):
        return (
            "both slopes are about 2: that is how f and its NQF themselves "
            "grow. Fit the error |f(eps W) - NQF(eps W)| against eps."
        )
    if not close[0]:
        return (
            "the tanh exponent is off: which derivatives of tanh vanish at "
            "0, and which order in W does the first surviving term beyond "
            "the NQF have?"
        )
    return (
        "the GELU exponent is off: GELU''(0) is not zero; which order in W "
        "does the term v (u.x)^2 have?"
    )


# -------------------------------------------------------------
# ex-ch10-cubic-tensor


def _gelu_cubic(x: np.ndarray) -> np.ndarray:
    """``T_(3)(x)`` of one GELU neuron by automatic differentiation."""
    e = theorem13(
        _gelu_layer, torch.tensor(x), x.size + 1, 3, d=1, check=False
    )
    return e.tensors[(3,)]


def _is_symmetric(T: np.ndarray) -> bool:
    return all(
        np.allclose(T, T.transpose(axes), rtol=1e-9, atol=1e-12)
        for axes in ((1, 0, 2), (0, 2, 1), (2, 1, 0))
    )


def judge_cubic_tensor(T3: Any, x: Any) -> str | None:
    """``T3`` ((k+1)^3) against :func:`theorem13`'s ``T_(3)`` at input
    ``x``."""
    x = np.asarray(x, dtype=float).ravel()
    expected = _gelu_cubic(x)
    try:
        T = np.asarray(T3, dtype=float)
    except (TypeError, ValueError):
        T = None
    if T is not None and T.shape == expected.shape and np.all(np.isfinite(T)):
        w = rng("exercises", "ex-ch10-cubic-tensor", "probe").standard_normal(
            (4, x.size + 1)
        )
        if not _is_symmetric(T):
            cubic_T = np.einsum("abc,na,nb,nc->n", T, w, w, w)
            cubic_e = np.einsum("abc,na,nb,nc->n", expected, w, w, w)
            if np.allclose(cubic_T, cubic_e, rtol=1e-8, atol=1e-12):
                return (
                    "T3[w, w, w] is right, but Theorem 13's tensors are "
                    "symmetric: spread each coefficient evenly over the "
                    "orderings of its indices."
                )
            return (
                "T3 should be symmetric under any permutation of its three "
                "indices, as Theorem 13's tensors are."
            )
    return compare_arrays(T3, expected, what="T3", rtol=1e-8, atol=1e-12)


# ---------------------------------------------------------------
# ex-ch10-relu-sides


def _relu_layer(W: np.ndarray, x: np.ndarray) -> float:
    return float(W[-1] @ np.maximum(W[:-1].T @ x, 0.0))


def judge_relu_sides(D: Any, W: Any, x: Any, h: Any) -> str | None:
    """``D`` (2, len(h)) against ``2 f(W)`` and ``2 f(-W)`` (exact
    homogeneity)."""
    W, x = np.asarray(W, dtype=float), np.asarray(x, dtype=float).ravel()
    h = np.atleast_1d(np.asarray(h, dtype=float))
    plus, minus = 2 * _relu_layer(W, x), 2 * _relu_layer(-W, x)
    expected = np.array([np.full(h.size, plus), np.full(h.size, minus)])
    try:
        a = np.asarray(D, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is not None and a.shape == expected.shape:
        if np.allclose(a, expected[::-1], rtol=1e-6, atol=1e-12):
            return (
                "the rows are swapped: row 0 steps along +W, row 1 along -W."
            )
        if np.allclose(a, (plus + minus) / 2, rtol=1e-6, atol=1e-12):
            return (
                "both rows are equal: a central difference straddles the "
                "kink at W = 0. Keep all three points on one side: 0, hW, "
                "2hW (and 0, -hW, -2hW)."
            )
        if np.ptp(a, axis=1).max() > 1e-6 * np.abs(expected).max():
            return (
                "your rows change with h, but the ReLU layer is exactly "
                "homogeneous of degree 2: check the power of h you divide by."
            )
    return compare_arrays(D, expected, what="D", rtol=1e-6, atol=1e-12)


# -------------------------------------------------------------------
# registration


def _cubic_inputs() -> np.ndarray:
    return rng("exercises", "ex-ch10-cubic-tensor", "x").standard_normal(3)


def _one_ordering(x: np.ndarray, copies: int) -> np.ndarray:
    """Wrong answers: the whole coefficient on one ordering of the indices
    (``copies=1``), or on each of the three orderings (``copies=3``)."""
    T = np.zeros((x.size + 1,) * 3)
    block = np.outer(x, x) / np.sqrt(2 * np.pi)
    T[:-1, :-1, -1] = block
    if copies == 3:
        T[:-1, -1, :-1] = block
        T[-1, :-1, :-1] = block
    return T


def _relu_inputs() -> dict[str, np.ndarray]:
    r = rng("exercises", "ex-ch10-relu-sides")
    return dict(
        W=r.standard_normal((4, 6)),
        x=r.standard_normal(3),
        h=np.array([1e-1, 1e-2, 1e-3]),
    )


def _relu_differences(W, x, h, sides="one", power=2) -> np.ndarray:
    """Second differences of the ReLU layer: one-sided, or central (wrong)."""
    rows = []
    for s in (1.0, -1.0):
        if sides == "one":
            points = [(2 * t * s, t * s, 0.0) for t in h]
        else:
            points = [(t, 0.0, -t) for t in h]
        rows.append(
            [
                (
                    _relu_layer(a * W, x)
                    - 2 * _relu_layer(b * W, x)
                    + _relu_layer(c * W, x)
                )
                / t**power
                for (a, b, c), t in zip(points, h)
            ]
        )
    return np.array(rows)


_X3 = _cubic_inputs()
_RELU = _relu_inputs()

register(
    Exercise(
        "ex-ch10-nqf-exponent",
        "slopes = (exponent of |f - NQF| in eps for the tanh layer, "
        "the same for the GELU layer)",
        judge_nqf_exponent,
        wrong=(((3.0, 4.0), {}), ((2.0, 2.0), {}), ((4.0, 4.0), {})),
    )
)
register(
    Exercise(
        "ex-ch10-cubic-tensor",
        "T3 = the symmetric cubic tensor T_(3)(x) of one GELU neuron "
        "w = (u, v)",
        judge_cubic_tensor,
        given=("x",),
        wrong=(
            (_one_ordering(_X3, copies=1), {"x": _X3}),
            (_one_ordering(_X3, copies=3), {"x": _X3}),
            (np.zeros((4, 4, 4)), {"x": _X3}),
        ),
    )
)
register(
    Exercise(
        "ex-ch10-relu-sides",
        "D = one-sided second differences of the ReLU layer along +W "
        "(row 0) and -W (row 1), one column per step h",
        judge_relu_sides,
        given=("W", "x", "h"),
        wrong=(
            (_relu_differences(**_RELU, sides="central"), _RELU),
            (_relu_differences(**_RELU)[::-1], _RELU),
            (_relu_differences(**_RELU, power=1), _RELU),
        ),
    )
)
