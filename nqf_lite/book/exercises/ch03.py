"""Coding exercises of chapter 3 (does the NQF describe real networks?).

Each judge computes the right answer with the package, independently of the
chapter's solution code: the twin's outputs with the twin module
(``net.twin()``), the departure exponent from the networks of
:mod:`nqf_lite.expansion.models`, the linear part of a tanh teacher with
``scipy.integrate.quad`` (without Stein's lemma), and the CNN twin's floor
from ``TanhCNN.patch_sum`` (``torch.nn.functional.unfold``) and torch's
least squares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from scipy.integrate import quad

from nqf_lite.expansion import models as ar
from nqf_lite.book.exercises import Exercise, register
from nqf_lite.book.exercises._judges import (
    as_floats,
    close,
    compare_arrays,
    compare_number,
)

__all__: list[str] = []


def _mlp(net: Any, what: str) -> str | None:
    if not isinstance(net, ar.TanhMLP) or net.is_twin:
        return f"{what} should be the tanh MLP of the exercise (ar.TanhMLP)."
    return None


def _outputs(net: ar.TanhMLP, X: Any) -> tuple[np.ndarray, np.ndarray]:
    """The network's and its twin's outputs (m, V) on the inputs X."""
    X = torch.as_tensor(np.asarray(X, dtype=float))
    with torch.no_grad():
        return net(X).numpy(), net.twin()(X).numpy()


# -------------------------------------------------------- ex-ch3-twin-moments


def judge_twin_moments(answer: Any, net: Any, X: Any) -> str | None:
    """Tr[M A_o(x)] against the twin module at the net's weights."""
    hint = _mlp(net, "net")
    if hint:
        return hint
    f_net, f_twin = _outputs(net, X)
    if close(answer, f_net):
        return (
            "f_twin_tiny is the network's own output; the twin keeps only "
            "the quadratic term Tr[M A_o(x)] of the expansion."
        )
    return compare_arrays(
        answer, f_twin, what="f_twin_tiny", rtol=1e-9, atol=1e-14
    )


def _wrong_twin_moments() -> tuple[tuple[Any, dict[str, Any]], ...]:
    net = ar.TanhMLP(3, 4, V=2, sigma=0.3, seed=3)
    X = np.cos(np.arange(18.0).reshape(6, 3) ** 1.2)
    f_net, f_twin = _outputs(net, X)
    given = {"net": net, "X": X}
    return (
        (2 * f_twin, given, "factor 2"),  # the 1/2 of A(x) dropped
        (f_net, given),  # the network instead of its quadratic form
        (f_twin.T, given),  # outputs by rows
    )


register(
    Exercise(
        key="ex-ch3-twin-moments",
        task="f_twin_tiny = the twin's outputs Tr[M A_o(x)] from M = W W^T",
        judge=judge_twin_moments,
        given=("net", "X"),
        wrong=_wrong_twin_moments(),
    )
)


# ----------------------------------------------------------- ex-ch3-departure


def _departure_slope(sigmas: np.ndarray, X: np.ndarray, seed: int) -> float:
    """Least-squares slope of log(|f - f_NQF| / |f_NQF|) against log(sigma)."""
    r = []
    for s in sigmas:
        net = ar.TanhMLP(X.shape[1], 64, V=8, sigma=float(s), seed=seed)
        f, f_twin = _outputs(net, X)
        r.append(np.linalg.norm(f - f_twin) / np.linalg.norm(f_twin))
    x, y = np.log(sigmas), np.log(r)
    x0 = x - x.mean()
    return float(x0 @ (y - y.mean()) / (x0 @ x0))


def judge_departure(answer: Any, sigmas: Any, X: Any, seed: Any) -> str | None:
    """The measured exponent of the relative departure, within 0.05."""
    sigmas = as_floats(sigmas)
    X = as_floats(X)
    if sigmas is None or sigmas.ndim != 1 or sigmas.size < 2:
        return "sigmas should be at least two initial scales."
    if X is None or X.ndim != 2:
        return "X should be the (m, 20) array of inputs of the exercise."
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        return "seed should be the integer seed of the exercise's networks."
    expected = _departure_slope(sigmas, X, int(seed))
    a = as_floats(answer)
    if a is not None and a.size == 1 and abs(float(a) - 4.0) < 0.1:
        return (
            "slope_dep is the exponent of the absolute departure "
            "|f - f_NQF|; divide by the twin's output, which itself grows "
            "with sigma."
        )
    return compare_number(answer, expected, what="slope_dep", atol=0.05)


def _wrong_departure() -> tuple[tuple[Any, dict[str, Any]], ...]:
    given = {
        "sigmas": np.logspace(-3, -2, 3),
        "X": np.cos(np.arange(200.0).reshape(10, 20) ** 1.1),
        "seed": 5,
    }
    return (
        (4.0, given),  # the absolute departure, sigma^4
        (3.0, given),  # a cubic remainder: the symmetry w -> -w ignored
        (1.0, given),
    )


register(
    Exercise(
        key="ex-ch3-departure",
        task="slope_dep = exponent of |f - f_NQF| / |f_NQF| in sigma",
        judge=judge_departure,
        given=("sigmas", "X", "seed"),
        wrong=_wrong_departure(),
    )
)


# --------------------------------------------------------- ex-ch3-linear-part


def _linear_part(teacher: ar.TanhMLP) -> np.ndarray:
    """E[y x^T] for x ~ N(0, I): sum_i v_i u_i/|u_i| E[z tanh(|u_i| z)]."""
    U = teacher.U.detach().numpy()
    V = teacher.W_out.detach().numpy()
    norms = np.linalg.norm(U, axis=1)

    def along(a: float) -> float:  # E[z tanh(a z)], z ~ N(0, 1)
        def g(z: float) -> float:
            return z * math.tanh(a * z) * math.exp(-z * z / 2)

        value = quad(g, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12)[0]
        return value / math.sqrt(2 * math.pi)

    gains = np.array([along(a) for a in norms])
    return (V * (gains / norms)) @ U


def judge_linear_part(answer: Any, teacher: Any) -> str | None:
    """T_lin against a quadrature of E[z tanh(|u| z)] for each unit."""
    hint = _mlp(teacher, "teacher")
    if hint:
        return hint
    expected = _linear_part(teacher)
    nqf_map = teacher.effective_map().detach().numpy()
    if close(answer, nqf_map):
        return (
            "T_lin is the teacher's own quadratic-form map, tanh'(0) = 1; "
            "the teacher's preactivations u.x are of order |u|, so average "
            "tanh' over their Gaussian distribution."
        )
    a = as_floats(answer)
    if a is not None and a.shape == expected.shape:
        err = np.linalg.norm(a - expected) / np.linalg.norm(expected)
        if 1e-6 < err < 0.05:
            return (
                f"T_lin is close (relative error {err:.0e}) but not exact: "
                "a sample over x (error about 1/sqrt(N)), or a quadrature "
                "rule too coarse for tanh at these large weights, leaves an "
                "error of this size; average each unit's one-dimensional "
                "Gaussian integral over a fine uniform grid."
            )
    scale = np.abs(expected).max()
    return compare_arrays(
        answer, expected, what="T_lin", rtol=1e-6, atol=1e-8 * scale
    )


def _wrong_linear_part() -> tuple[tuple[Any, dict[str, Any]], ...]:
    teacher = ar.TanhMLP(6, 5, V=1, sigma=1.0, seed=4)
    right = _linear_part(teacher)
    given = {"teacher": teacher}
    return (
        (teacher.effective_map().detach().numpy(), given),  # tanh'(0) = 1
        (1.01 * right, given),  # a Monte Carlo estimate
        (np.zeros_like(right), given),  # E[tanh] = 0 in place of E[tanh']
    )


register(
    Exercise(
        key="ex-ch3-linear-part",
        task="T_lin = E[y x^T] of a tanh teacher for x ~ N(0, I)",
        judge=judge_linear_part,
        given=("teacher",),
        wrong=_wrong_linear_part(),
    )
)


# --------------------------------------------------------- ex-ch3-patch-floor

KERNEL = (5, 5)  # the digits CNN of Fig. 7


def _least_squares_floor(F: torch.Tensor, y: torch.Tensor) -> float:
    """min_T mean (F T - y)^2, by torch's least squares."""
    T = torch.linalg.lstsq(F, y[:, None]).solution
    return float(((F @ T)[:, 0] - y).pow(2).mean())


def judge_patch_floor(answer: Any, images: Any, y: Any) -> str | None:
    """L_floor against least squares on TanhCNN.patch_sum of the images."""
    imgs = as_floats(images)
    y = as_floats(y)
    if imgs is None or imgs.ndim != 3 or imgs.shape[1:] != (8, 8):
        return "images should be the (n, 8, 8) training images."
    if y is None or y.shape != (imgs.shape[0],):
        return "y should hold one label per image, shape (n,)."
    x = torch.as_tensor(imgs)
    yt = torch.as_tensor(y)
    cnn = ar.TanhCNN(imgs.shape[1:], KERNEL, channels=1, V=1)
    expected = _least_squares_floor(cnn.patch_sum(x), yt)
    a = as_floats(answer)
    if a is not None and a.size == 1:
        value = float(a)
        pixels = _least_squares_floor(x.reshape(len(x), -1), yt)
        if math.isclose(value, pixels, rel_tol=1e-6):
            return (
                "L_floor is the floor of a linear model on all 64 pixels; "
                "the twin sees an image only through its patch sum."
            )
        if math.isclose(value, len(y) * expected, rel_tol=1e-6):
            return "L_floor is a sum of squares; the loss is their mean."
    return compare_number(answer, expected, what="L_floor", rtol=1e-8)


def _wrong_patch_floor() -> tuple[tuple[Any, dict[str, Any]], ...]:
    images = np.cos(np.arange(40 * 64.0).reshape(40, 8, 8) ** 1.1)
    y = np.sign(np.sin(np.arange(40.0) ** 1.3))
    x, yt = torch.as_tensor(images), torch.as_tensor(y)
    cnn = ar.TanhCNN((8, 8), KERNEL, channels=1, V=1)
    right = _least_squares_floor(cnn.patch_sum(x), yt)
    given = {"images": images, "y": y}
    return (
        (_least_squares_floor(x.reshape(40, -1), yt), given),  # pixels
        (40 * right, given),  # the sum of squares
        (float(np.mean(y**2)), given),  # T = 0
    )


register(
    Exercise(
        key="ex-ch3-patch-floor",
        task="L_floor = least-squares floor of the CNN twin on patch sums",
        judge=judge_patch_floor,
        given=("images", "y"),
        wrong=_wrong_patch_floor(),
    )
)
