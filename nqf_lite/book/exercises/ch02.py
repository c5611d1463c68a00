"""Coding exercises of chapter 2 (architecture lives in A(x)).

Each judge builds the module of its exercise in torch and reads the right
structure matrix off its Hessian with :func:`nqf_lite.expand` (Theorem 1 of
the paper), independently of the chapter's solution code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from nqf_lite.expansion import models as ar
from nqf_lite.expansion.autograd import expand
from nqf_lite.book.exercises import Exercise, register
from nqf_lite.book.exercises._judges import as_floats, close, compare_arrays

__all__: list[str] = []


def _offdiagonal(C: np.ndarray) -> np.ndarray:
    """``1/2 [[0, C], [C^T, 0]]``, written out (for the wrong answers)."""
    r, c = C.shape
    A = np.zeros((r + c, r + c))
    A[:r, r:], A[r:, :r] = C / 2, C.T / 2
    return A


# -------------------------------------------------------------- ex-ch2-gated


def _glu(W: torch.Tensor, x: Any) -> torch.Tensor:
    """Gated linear units: sum_i v_i (a_i . x) sigmoid(b_i . x)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    k = x.shape[0]
    a, b, v = W[:k], W[k : 2 * k], W[2 * k]
    return (v * (a.T @ x) * torch.sigmoid(b.T @ x)).sum()


def judge_gated(answer: Any, x: Any) -> str | None:
    """A(x) of the GLU, neuron [a; b; v], against autograd."""
    x = as_floats(x, 1)
    if x is None:
        return "the input x should be a vector of finite numbers."
    k = x.size
    expected = expand(_glu, x, 2 * k + 1).A
    a = as_floats(answer, 2)
    if a is not None and a.shape == expected.shape:
        gate_rows = np.abs(a[k : 2 * k]).max()
        feature_rows = np.abs(a[:k]).max()
        if gate_rows > 0 and feature_rows == 0:
            return (
                "A_glu couples the gate's weights b; expand the gate "
                "around b = 0 and see which weights the second-order term "
                "holds."
            )
    return compare_arrays(answer, expected, what="A_glu")


def _wrong_gated() -> tuple[tuple[Any, dict[str, Any]], ...]:
    x = np.array([0.9, -0.4, 1.6])
    k = x.size
    right = np.zeros((2 * k + 1, 2 * k + 1))
    right[:k, 2 * k] = right[2 * k, :k] = 0.25 * x  # sigma(0) / 2 = 1/4
    in_gate = np.zeros_like(right)
    in_gate[k : 2 * k, 2 * k] = in_gate[2 * k, k : 2 * k] = 0.25 * x
    given = {"x": x}
    return (
        (2 * right, given, "factor 2"),  # no 1/2 of the quadratic form
        (right / 2, given, "factor 2"),  # sigma'(0) = 1/4, not sigma(0) = 1/2
        (in_gate, given),  # the coupling put into the gate's block
        (np.triu(right), given),  # only one of the two off-diagonal blocks
    )


register(
    Exercise(
        key="ex-ch2-gated",
        task="A_glu = the structure matrix of a gated linear unit [a; b; v]",
        judge=judge_gated,
        given=("x",),
        wrong=_wrong_gated(),
    )
)


# ------------------------------------------------------------ ex-ch2-pooling


def _pooled(W: torch.Tensor, X: Any) -> torch.Tensor:
    """Stride-2 2x2 convolution, erf, average pooling, readout v."""
    img = torch.as_tensor(X, dtype=torch.float64)[None, None]
    filters = W[:4].T.reshape(-1, 1, 2, 2)  # each k_i row by row
    pooled = torch.erf(F.conv2d(img, filters, stride=2)).mean(dim=(0, 2, 3))
    return pooled @ W[4]


def judge_pooling(answer: Any, X: Any) -> str | None:
    """A(X) of the stride-2, average-pooled erf convolution."""
    X = as_floats(X, 2)
    if X is None or X.shape[0] < 2 or X.shape[1] < 2:
        return "the image X should be a 2-D array of finite numbers."
    expected = expand(_pooled, X, 5).A
    P = (X.shape[0] // 2) * (X.shape[1] // 2)
    if P > 1 and close(answer, P * expected):
        return (
            "A_pool is what sum pooling would give; this layer averages "
            "over the patches."
        )
    return compare_arrays(answer, expected, what="A_pool")


def _wrong_pooling() -> tuple[tuple[Any, dict[str, Any]], ...]:
    X = np.cos(np.arange(36.0).reshape(6, 6) ** 1.3)
    derf0 = 2 / np.sqrt(np.pi)  # erf'(0)
    tiles = [
        X[r : r + 2, c : c + 2].ravel() for r in (0, 2, 4) for c in (0, 2, 4)
    ]
    slides = [
        X[r : r + 2, c : c + 2].ravel() for r in range(5) for c in range(5)
    ]
    mean = np.mean(tiles, axis=0)[:, None]
    given = {"X": X}
    return (
        (_offdiagonal(derf0 * 9 * mean), given),  # sum pooling
        (_offdiagonal(mean), given),  # phi'(0) = 1, as for tanh
        (_offdiagonal(derf0 * np.mean(slides, axis=0)[:, None]), given),
        (_offdiagonal(derf0 * mean.reshape(2, 2).T.reshape(4, 1)), given),
    )


register(
    Exercise(
        key="ex-ch2-pooling",
        task=(
            "A_pool = the structure matrix of a stride-2, average-pooled "
            "erf convolution with 2x2 filters"
        ),
        judge=judge_pooling,
        given=("X",),
        wrong=_wrong_pooling(),
    )
)


# ----------------------------------------------------------------- ex-ch2-qk


def judge_qk(answer: Any, x: Any, X: Any, c: Any, d_k: Any) -> str | None:
    """A(X) of the query-key-only head (Prop. 3 of the paper), by autograd."""
    x, X, c = as_floats(x, 1), as_floats(X, 2), as_floats(c, 1)
    if x is None or X is None or c is None:
        return "x and c should be vectors and X a matrix of finite numbers."
    if not (X.shape[0] == x.size == c.size):
        return "x, c and the columns of X should have the same size D."
    if not isinstance(d_k, (int, np.integer)) or d_k < 1:
        return "d_k should be a positive integer."
    head = ar.qk_head(c, int(d_k))
    expected = expand(head, (x, X), head.p).A
    uncentred = X @ X.T / X.shape[1] @ c
    C = np.kron(np.outer(x, uncentred), np.eye(int(d_k))) / np.sqrt(d_k)
    if close(answer, _offdiagonal(C)):
        return (
            "A_qk_ex uses the second moment of the tokens; the softmax's "
            "Jacobian subtracts the mean token as well."
        )
    return compare_arrays(answer, expected, what="A_qk_ex")


def _wrong_qk() -> tuple[tuple[Any, dict[str, Any]], ...]:
    D, N, d_k = 3, 4, 2
    X = np.sin(np.arange(D * N, dtype=float).reshape(D, N) * 1.3 + 0.5)
    x, c = np.array([0.5, -1.0, 0.8]), np.array([1.2, 0.3, -0.7])
    x_bar = X.mean(axis=1)
    u = (X @ X.T / N - np.outer(x_bar, x_bar)) @ c
    eye, scale = np.eye(d_k), 1 / np.sqrt(d_k)
    second_moment = X @ X.T / N @ c  # the mean token not subtracted
    given = {"x": x, "X": X, "c": c, "d_k": d_k}
    return (
        (_offdiagonal(np.kron(np.outer(x, u), eye)), given),  # no 1/sqrt(d_k)
        (
            _offdiagonal(scale * np.kron(np.outer(x, second_moment), eye)),
            given,
        ),
        (_offdiagonal(scale * np.kron(eye, np.outer(x, u))), given),  # order
        (_offdiagonal(scale * np.kron(np.outer(u, x), eye)), given),  # x <-> u
    )


register(
    Exercise(
        key="ex-ch2-qk",
        task=(
            "A_qk_ex = the structure matrix of the query-key-only head, "
            "built from the token covariance and Kronecker products"
        ),
        judge=judge_qk,
        given=("x", "X", "c", "d_k"),
        wrong=_wrong_qk(),
    )
)
