"""The tied linear-attention head of in-context regression: an exact NQF (von
Oswald et al. 2023; Zhang, Frei & Bartlett 2024).  Expected values come from
explicit loops, autograd, and one step of
gradient descent on the prompt's least squares written out by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite import expand
from nqf_lite.expansion.models.base import MODELS
from nqf_lite.expansion.models.linear_attention import (
    LinearAttentionHead,
    in_context_moment,
)


def _prompt(rng, D=4, N=6):
    return (
        rng.standard_normal(D),
        rng.standard_normal((D, N)),
        rng.standard_normal(N),
    )


def test_registered_with_its_metadata():
    model = MODELS["linear_attention"]
    assert isinstance(model, LinearAttentionHead)
    assert model.exact and model.neurons == "rows" and model.p == model.D == 3
    assert (
        "Table 3, row" not in model.reference
    )  # it is not one of the paper's rows
    assert "von Oswald" in model.reference and "Bartlett" in model.reference


def test_native_is_the_attention_sum_over_the_prompt():
    """ŷ = (1/N) Σ_i y_i <W x_i, W x_q>: each example's label weighted by its
    (softmax-free) attention."""
    rng = np.random.default_rng(0)
    model = LinearAttentionHead(D=4, N=6)
    xq, X, y = _prompt(rng)
    W = rng.standard_normal((3, 4))  # 3 rows = 3 neurons
    want = 0.0
    for i in range(X.shape[1]):
        score = sum(
            float(W[r] @ X[:, i]) * float(W[r] @ xq) for r in range(W.shape[0])
        )
        want += y[i] * score / X.shape[1]
    assert float(model.native(W, (xq, X, y))) == pytest.approx(want, abs=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exactly_its_quadratic_form(seed):
    """native(W) = Tr[M A] with M = WᵀW and A = (x_q uᵀ + u x_qᵀ)/2, u = (1/N)
    Σ_i y_i x_i, to 1e-12."""
    rng = np.random.default_rng(seed)
    model = LinearAttentionHead(D=5, N=7)
    xq, X, y = _prompt(rng, 5, 7)
    W = 3.0 * rng.standard_normal(
        (4, 5)
    )  # O(1) weights: no small-weight expansion involved
    u = sum(y[i] * X[:, i] for i in range(7)) / 7
    A_hand = 0.5 * (np.outer(xq, u) + np.outer(u, xq))
    s = model.structure((xq, X, y))
    np.testing.assert_allclose(s.A, A_hand, rtol=0, atol=1e-14)
    assert s.g is None and s.B is None and s.f0 == 0.0
    f = float(model.native(W, (xq, X, y)))
    assert abs(f - np.sum((W.T @ W) * s.A)) <= 1e-12 * (1 + abs(f))


def test_autograd_structure_equals_the_closed_form():
    rng = np.random.default_rng(4)
    model = LinearAttentionHead(D=3, N=5)
    for _ in range(3):
        W, x = model.sample(rng)
        e = expand(
            lambda Wc, x: model.native(Wc.T, x), x, model.p, d=W.shape[0]
        )
        np.testing.assert_allclose(
            e.A, model.structure(x).A, rtol=0, atol=1e-12
        )
        assert (
            np.abs(e.g).max() <= 1e-12
            and np.abs(e.B).max() <= 1e-12
            and abs(float(e.f0)) <= 1e-12
        )


def test_identity_key_query_is_one_gradient_step_on_the_prompt():
    """von Oswald et al.: Γ = WᵀW = η I predicts like one GD step from w = 0 on
    (1/2N) Σ (wᵀx_i - y_i)²."""
    rng = np.random.default_rng(7)
    D, N, eta = 4, 9, 0.3
    xq, X, y = _prompt(rng, D, N)
    w = np.zeros(D)
    grad = sum((w @ X[:, i] - y[i]) * X[:, i] for i in range(N)) / N
    w_one_step = w - eta * grad
    W = np.sqrt(eta) * np.eye(D)
    assert float(
        MODELS["linear_attention"].resized(D=D).native(W, (xq, X, y))
    ) == pytest.approx(float(xq @ w_one_step), abs=1e-13)


def test_twin_trains_like_the_head():
    """Torch GD on the head and the twin's explicit GD (Eq. 21) agree step by
    step."""
    rng = np.random.default_rng(3)
    model = LinearAttentionHead(D=3, N=4)
    prompts = [model.sample(rng)[1] for _ in range(5)]
    y = rng.standard_normal(5)
    W0 = 0.5 * rng.standard_normal((2, 3))
    twin = model.twin(prompts)
    _, preds_twin = twin.train(model.columns(W0), y, 0.05, 8)
    W = torch.tensor(W0, requires_grad=True)
    for t in range(9):
        out = torch.stack([model.native(W, p) for p in prompts])
        np.testing.assert_allclose(
            out.detach().numpy(), preds_twin[t], rtol=0, atol=1e-12
        )
        (g,) = torch.autograd.grad(((out - torch.as_tensor(y)) ** 2).mean(), W)
        with torch.no_grad():
            W -= 0.05 * g
    assert np.abs(preds_twin[-1] - preds_twin[0]).max() > 1e-3


def test_bad_prompts_raise_clear_errors():
    model = MODELS["linear_attention"]
    xq, X, y = _prompt(np.random.default_rng(1), 3, 4)
    with pytest.raises(TypeError, match="x must be a triple"):
        model.structure((xq, X))
    with pytest.raises(
        ValueError, match=r"y \(the prompt's labels\) must have shape \(4,\)"
    ):
        model.structure((xq, X, y[:3]))
    with pytest.raises(
        ValueError, match=r"X \(the prompt's inputs\) must hold N >= 1"
    ):
        model.native(np.ones((2, 3)), (xq, X[:, :0], y[:0]))
    with pytest.raises(
        ValueError, match=r"X \(the prompt's inputs\) must have shape \(3, N\)"
    ):
        model.structure((xq, X[:2], y))
    with pytest.raises(TypeError, match="complex"):
        model.native(np.ones((2, 3)), (xq, X, y + 1j))
    with pytest.raises(ValueError, match="NaN"):
        model.structure((xq * np.nan, X, y))
    with pytest.raises(ValueError, match=r"N must be a positive integer"):
        MODELS.make("linear_attention", N=0)


def test_in_context_moment():
    X = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
    y = np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(
        in_context_moment(X, y), [(1 - 2 + 0) / 3, (0 - 1 - 2) / 3]
    )
    with pytest.raises(ValueError, match="one per column of X"):
        in_context_moment(X, y[:2])
