"""Judges of the coding exercises of chapter 5 (compression).

- ``ex-ch5-subspace``: an orthonormal basis of the data subspace ``V`` of a
  data set (Theorem 3; its width ``k_V`` sets the twin's width ``k_V + 1``);
- ``ex-ch5-twin``: the rescaled twin ``(Ã = (d'/d) A, W̃, η̃ = (d/d') η)`` of a
  width-``d`` layer (Theorem 3);
- ``ex-ch5-residual``: the initial error ``e0`` of a twin with too few neurons
  (Corollary 3, App. B.5).

Each judge draws its own models from :mod:`nqf_lite.book.seeding` and compares
the student's function with :func:`data_subspace`, :func:`compress` and
:func:`compression_residual`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nqf_lite.expansion.models.mlp import A_mlp
from nqf_lite.dynamics.compression import (
    compress,
    compression_residual,
    data_subspace,
    k_V,
)
from nqf_lite.expansion.form import NQF, moments
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, register
from nqf_lite.book.exercises._judges import (
    call_student,
    compare_arrays,
    compare_number,
)


def _tanh_net(key: str) -> NQF:
    """Two-output tanh network (Prop. 1) on 6 inputs in 10 dimensions spanning
    only 3: ``k_V = 5``."""
    r = rng("exercises", key, "tanh")
    X = r.standard_normal((6, 3)) @ r.standard_normal((3, 10))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # unit inputs: stable SGD
    return NQF(np.stack([A_mlp(x, dphi0=1.0, V=2) for x in X]))


def _general(key: str) -> NQF:
    """A general NQF (p = 12) whose ``A``, ``g`` and ``B`` each add their own
    directions: ``k_V = 6``.

    ``A`` lives on 3 directions, ``g`` on 2 more and ``B`` on one more, so a
    basis that forgets ``g`` or ``B`` is too small.
    """
    r = rng("exercises", key, "general")
    m, p = 6, 12
    Q = np.linalg.qr(r.standard_normal((p, 6)))[0]
    S = r.standard_normal((m, 3, 3))
    A = 0.5 * Q[:, :3] @ (S + S.transpose(0, 2, 1)) / 2 @ Q[:, :3].T
    g = 0.2 * r.standard_normal((m, 2)) @ Q[:, 3:5].T
    B = 0.05 * r.standard_normal(m)[:, None, None] * np.outer(Q[:, 5], Q[:, 5])
    return NQF(A, g=g, B=B, f0=0.1 * r.standard_normal(m))


def judge_subspace(data_basis: Any) -> str | None:
    """``data_basis(A, g, B) -> V`` (p, k_V) against :func:`data_subspace`."""
    for model in (_tanh_net("ex-ch5-subspace"), _general("ex-ch5-subspace")):
        args = (model.A.copy(), model.g.copy(), model.B.copy())
        V, hint = call_student(data_basis, *args, what="data_basis")
        if hint:
            return hint
        V = np.asarray(V, dtype=float) if _numeric(V) else None
        if V is None or V.ndim != 2 or V.shape[0] != model.p:
            return (
                "data_basis should return a p x k array: one row per "
                "coordinate of a "
                "neuron, one column per direction of the subspace."
            )
        if not np.allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-8):
            return (
                "the columns of the basis should be orthonormal (V^T V = I)."
            )
        expected = data_subspace(model)
        if V.shape[1] < expected.shape[1]:
            return (
                "your subspace misses directions: every kind of coefficient "
                "(g, the columns "
                "of A and of B, for every input and every output) contributes."
            )
        if V.shape[1] > expected.shape[1]:
            return (
                "your subspace has too many directions: count only singular "
                "values above a "
                "small fraction of the largest (rounding noise is not a "
                "direction)."
            )
        hint = compare_arrays(
            V @ V.T,
            expected @ expected.T,
            what="the projector V V^T",
            atol=1e-8,
        )
        if hint:
            return (
                "your basis spans another subspace of the right dimension: "
                + hint
            )
    return None


def _numeric(value: Any) -> bool:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(a)))


def _wide_layer(
    key: str,
) -> list[tuple[NQF, np.ndarray, np.ndarray, float, list]]:
    """``(model, W, y, lr, batches)``: a width-30 general layer and a width-25
    tanh layer."""
    r = rng("exercises", key, "layers")
    cases = []
    for model, d, lr in (
        (_general(key), 30, 0.02),
        (_tanh_net(key), 25, 0.05),
    ):
        W = 0.2 * r.standard_normal((model.p, d))
        y = r.standard_normal(
            (model.m,) if model.V is None else (model.m, model.V)
        )
        batches = [r.choice(model.m, size=3, replace=False) for _ in range(25)]
        cases.append((model, W, y, lr, batches))
    return cases


def judge_twin(make_twin: Any) -> str | None:
    """``make_twin(model, W, lr) -> (small_model, W_small, lr_small)`` against
    Theorem 3."""
    for model, W, y, lr, batches in _wide_layer("ex-ch5-twin"):
        out, hint = call_student(
            make_twin, model, W.copy(), lr, what="make_twin"
        )
        if hint:
            return hint
        if not (
            isinstance(out, (tuple, list))
            and len(out) == 3
            and isinstance(out[0], NQF)
        ):
            return (
                "make_twin should return (small_model, W_small, lr_small), "
                "small_model an NQF."
            )
        small, W_s, lr_s = out
        V = data_subspace(model)
        d, d_s = W.shape[1], V.shape[1] + 1
        if (
            not _numeric(W_s)
            or np.ndim(W_s) != 2
            or np.shape(W_s)[0] != model.p
        ):
            return (
                f"W_small should have shape (p, d') with p = {model.p} rows."
            )
        W_s = np.asarray(W_s, dtype=float)
        if W_s.shape[1] != d_s:
            return (
                "the twin of Theorem 3 has k_V + 1 neurons; yours has "
                f"{W_s.shape[1]}."
            )
        checks = (
            (
                small.A,
                model.A * d_s / d,
                "the twin's structure matrices A~ are not rescaled right.",
            ),
            (small.g, model.g, "the twin keeps g unchanged."),
            (small.B, model.B, "the twin keeps B unchanged."),
            (small.f0, model.f0, "the twin keeps f0 unchanged."),
        )
        for got, want, message in checks:
            if got.shape != want.shape or not np.allclose(
                got, want, rtol=1e-9, atol=1e-12
            ):
                return message
        if compare_number(lr_s, lr * d / d_s, what="lr_small", rtol=1e-9):
            return "the twin's learning rate lr_small is not rescaled right."
        if np.linalg.norm(W_s - V @ (V.T @ W_s)) > 1e-9 * max(
            1.0, np.linalg.norm(W_s)
        ):
            return "the twin's neurons should lie in the data subspace."
        (M, mu), (M_s, mu_s) = moments(V.T @ W), moments(V.T @ W_s)
        if not np.allclose(mu_s, mu, atol=1e-9):
            return (
                "mu~(0) should be the projection of mu(0) onto the data "
                "subspace."
            )
        if np.allclose(M_s, M, atol=1e-9):
            return (
                "M~(0) is the projected M(0) without the rescaling that the "
                "smaller width needs."
            )
        hint = compare_arrays(
            M_s, M * d / d_s, what="the projected M~(0)", atol=1e-9, rtol=1e-8
        )
        if hint:
            return hint
        f_big = model.train(W, y, lr, len(batches), batches=batches)[1]
        f_twin = small.train(W_s, y, lr_s, len(batches), batches=batches)[1]
        if not np.allclose(
            f_twin, f_big, atol=1e-9 * max(1.0, np.abs(f_big).max())
        ):
            return (
                "the twin starts right but leaves the wide layer's training "
                "predictions."
            )
    return None


def judge_residual(initial_error: Any) -> str | None:
    """``initial_error(model, W, width) -> e0`` against
    :func:`compression_residual`."""
    for model, W, _, _, _ in _wide_layer("ex-ch5-residual"):
        for width in range(2, k_V(model)):
            e0, hint = call_student(
                initial_error, model, W.copy(), width, what="initial_error"
            )
            if hint:
                return hint
            expected = compression_residual(model, W, width)
            hint = compare_number(e0, expected, what="e0", rtol=1e-8)
            if hint is None:
                continue
            if not compare_number(
                e0, expected * W.shape[1] / width, what="e0", rtol=1e-8
            ):
                return (
                    "e0 is off by the width ratio: C_V and e0 each carry a "
                    "factor d/d' or d'/d."
                )
            kept = np.sqrt(
                compression_residual(model, W, 1) ** 2 - expected**2
            )
            if not compare_number(e0, kept, what="e0", rtol=1e-8):
                return (
                    "e0 sums over the discarded eigenvalues of C_V, not over "
                    "the kept ones."
                )
            if not compare_number(
                e0,
                compression_residual(model, W, width + 1),
                what="e0",
                rtol=1e-8,
            ):
                return (
                    "check which eigenvalues are discarded: a twin of d' "
                    "neurons keeps the top d' - 1."
                )
            return f"width d' = {width}: " + hint
    return None


def _unscaled_lr(model, W, lr):
    small, W_small, _ = compress(model, W, lr)
    return small, W_small, lr


def _unscaled_A(model, W, lr):
    _, W_small, lr_small = compress(model, W, lr)
    return model, W_small, lr_small


register(
    Exercise(
        "ex-ch5-subspace",
        "data_basis(A, g, B) returns an orthonormal basis (p x k_V) of the "
        "data subspace",
        judge_subspace,
        wrong=(
            (lambda A, g, B: data_subspace(NQF(A)), {}),
            (lambda A, g, B: np.eye(A.shape[-1]), {}),
            (lambda A, g, B: data_subspace(NQF(A, g=g, B=B)).T, {}),
        ),
    )
)
register(
    Exercise(
        "ex-ch5-twin",
        "make_twin(model, W, lr) returns the rescaled twin (small_model, "
        "W_small, lr_small) of Theorem 3",
        judge_twin,
        wrong=(
            (_unscaled_lr, {}),
            (_unscaled_A, {}),
            (
                lambda model, W, lr: compress(model, W, lr, width=k_V(model)),
                {},
            ),
        ),
    )
)
register(
    Exercise(
        "ex-ch5-residual",
        "initial_error(model, W, width) returns e0 of Corollary 3 for a twin "
        "of `width` neurons",
        judge_residual,
        wrong=(
            (
                lambda model, W, width: (
                    compression_residual(model, W, width) * W.shape[1] / width
                ),
                {},
            ),
            (
                lambda model, W, width: compression_residual(
                    model, W, width + 1
                ),
                {},
            ),
            (
                lambda model, W, width: np.sqrt(
                    compression_residual(model, W, 1) ** 2
                    - compression_residual(model, W, width) ** 2
                ),
                {},
            ),
        ),
    )
)
