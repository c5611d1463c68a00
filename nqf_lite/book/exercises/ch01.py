"""Coding exercises of chapter 1 (symmetry and the neural quadratic form).

Each judge computes the right answer with the package, independently of the
chapter's solution code: ``expand`` (the Taylor coefficients of Eq. 20 of the
paper by autograd) and ``theorem13`` (the cubic term of the expansion).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nqf_lite.expansion import models as ar
from nqf_lite.expansion.autograd import expand
from nqf_lite.deep.higher_order import theorem13
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import (
    as_floats,
    compare_arrays,
    compare_number,
)

__all__: list[str] = []


def _input_and_weights(
    x: Any, W: Any = None
) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    """``x`` (k,) and, when given, ``W`` (k + 1, d) of a perceptron, or a
    hint."""
    x = as_floats(x)
    if x is None or x.ndim != 1 or x.size < 1:
        return None, None, "the input x should be a vector of finite numbers."
    if W is None:
        return x, None, None
    W = as_floats(W)
    if W is None or W.ndim != 2 or W.shape[0] != x.size + 1 or W.shape[1] < 2:
        return (
            None,
            None,
            (
                f"the weights W should be finite, of shape (k + 1, d) = "
                f"({x.size + 1}, d) with d >= 2."
            ),
        )
    return x, W, None


#: inputs of the wrong answers (fixed numbers: the judges must reject them)
_X = np.array([0.7, -1.3, 0.4, 1.1])
_W = 0.3 * np.cos(np.arange(5 * 6).reshape(5, 6) * 1.7 + 0.2)


# ------------------------------------------------------------ ex-ch1-moments


def _mean_field(k: int) -> Any:
    """The chapter's mean-field module rho(sum_i v_i sigma(u_i . x))."""
    return ar.mean_field_mlp(k, "sigmoid", "softplus0")


def judge_moments(answer: Any, x: Any, W: Any) -> str | None:
    """The general form (Eq. 20 of the paper) of the mean-field module at W."""
    x, W, hint = _input_and_weights(x, W)
    if hint:
        return hint
    module = _mean_field(x.size)
    e = expand(module, x, module.p, d=W.shape[1])
    expected = float(e.predict(W))
    M, mu = W @ W.T, W.sum(axis=1)
    trace_only = float(e.f0 + np.sum(e.A * M))
    no_B = trace_only + float(e.g @ mu)
    a = as_floats(answer)
    if a is not None and a.size == 1:
        value = float(a.reshape(()))
        if np.isclose(value, trace_only) and not np.isclose(value, expected):
            return (
                "nqf_mf is the form of Theorem 1 of the paper alone; this "
                f"module is not ZGZ, so its form, {eq('eq-ch1-general')}, "
                "has more terms."
            )
        doubled = expected + (expected - no_B)
        if np.isclose(value, doubled) and not np.isclose(value, expected):
            return (
                "the coupling term mu^T B mu of nqf_mf is twice what it "
                "should "
                "be: B is half the mixed block of the Hessian, so the 1/2 of "
                "the Taylor expansion is already in it."
            )
        if np.isclose(value, no_B) and not np.isclose(value, expected):
            return (
                "nqf_mf lacks the coupling between different neurons, the "
                "second-order term in the first moment mu."
            )
    return compare_number(answer, expected, what="nqf_mf", rtol=1e-8)


def _closed_form(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(g, B, A) of the mean-field module in closed form (no autograd)."""
    return ar.coeffs_mean_field_mlp(
        x, phi0=0.5, dphi0=0.25, drho0=0.5, ddrho0=0.25
    )


def _wrong_moments() -> tuple[tuple[Any, dict[str, Any]], ...]:
    W = 0.1 * _W
    g, B, A = _closed_form(_X)
    M, mu = W @ W.T, W.sum(axis=1)
    trace, coupling = float(np.sum(A * M)), float(mu @ B @ mu)
    full = float(g @ mu) + coupling + trace  # f(0) = 0
    given = {"x": _X, "W": W}
    return (
        (trace, given),  # Tr[MA] only, as if the module were ZGZ
        (full - coupling, given),  # without mu^T B mu
        (full + coupling, given, "factor 2"),  # B without its 1/2
        (-full, given, "sign"),  # the wrong sign
    )


register(
    Exercise(
        key="ex-ch1-moments",
        task=(
            "nqf_mf = f(0) + g.mu + mu^T B mu + Tr[M A] of the mean-field "
            "module at W_mf, from the moments M and mu"
        ),
        judge=judge_moments,
        given=("x", "W"),
        wrong=_wrong_moments(),
    )
)


# ------------------------------------------------------------ ex-ch1-hessian


def judge_hessian(answer: Any, x: Any) -> str | None:
    """A = A_s - B of the mean-field module, read off its Hessian at 0."""
    x, _, hint = _input_and_weights(x)
    if hint:
        return hint
    module = _mean_field(x.size)
    e = expand(module, x, module.p)
    a = as_floats(answer)
    if (
        a is not None
        and a.shape == e.A.shape
        and np.allclose(a, e.A + e.B, rtol=1e-7, atol=1e-10)
    ):
        return (
            "A_h is half the diagonal block H_11 alone. For a module that "
            "is not ZGZ that block also holds a coupling between neurons: "
            "see how the proof of Theorem 1 treats H_12."
        )
    return compare_arrays(answer, e.A, what="A_h")


def _wrong_hessian() -> tuple[tuple[Any, dict[str, Any]], ...]:
    _, B, A = _closed_form(_X)
    given = {"x": _X}
    return (
        (A + B, given),  # H_11 / 2 = A_s
        (2 * A, given, "factor 2"),  # H_11 - H_12 without the 1/2
        (A - B, given),  # A_s - 2B
    )


register(
    Exercise(
        key="ex-ch1-hessian",
        task=(
            "A_h = the structure matrix of the mean-field module, from the "
            "blocks of its width-2 Hessian at W = 0"
        ),
        judge=judge_hessian,
        given=("x",),
        wrong=_wrong_hessian(),
    )
)


# -------------------------------------------------------------- ex-ch1-cubic


def judge_cubic(answer: Any, x: Any, W: Any) -> str | None:
    """The eps^3 coefficient of f_x(eps W) for the GELU perceptron."""
    x, W, hint = _input_and_weights(x, W)
    if hint:
        return hint
    module = ar.mlp_module(x.size, "gelu")
    cubic = theorem13(module, x, module.p, order=3, d=W.shape[1])
    a = as_floats(answer)
    if a is not None and a.size == 1 and float(a.reshape(())) == 0.0:
        return (
            "c3 = 0 is the answer for tanh, which is odd; GELU is not, so "
            "its unit has a term of third order in the weights."
        )
    return compare_number(answer, cubic.term(W, 3), what="c3", rtol=1e-8)


def _wrong_cubic() -> tuple[tuple[Any, dict[str, Any]], ...]:
    z, v = _W[:4].T @ _X, _W[4]
    half_ddgelu0 = 1 / np.sqrt(2 * np.pi)  # GELU''(0) / 2, by hand
    given = {"x": _X, "W": _W}
    return (
        (2 * half_ddgelu0 * np.sum(v * z**2), given, "factor 2"),  # no 1/2
        (0.0, given),  # the tanh answer
        (half_ddgelu0 * np.sum(v * z**3), given),  # a cube for a square
        (0.5 * np.sum(v * z**2), given),  # GELU'(0) for GELU''(0) / 2
    )


register(
    Exercise(
        key="ex-ch1-cubic",
        task=(
            "c3 = the coefficient of eps^3 in f_x(eps W) for the GELU "
            "perceptron at (x_c, W_c)"
        ),
        judge=judge_cubic,
        given=("x", "W"),
        wrong=_wrong_cubic(),
    )
)
