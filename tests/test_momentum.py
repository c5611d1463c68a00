"""Tests for nqf_lite.dynamics.momentum: heavy-ball closure and the Adam
counter-example."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite import NQF, realize_moments
from nqf_lite.dynamics.momentum import (
    AdamState,
    MomentumState,
    adam_step,
    heavy_ball_closed_step,
    heavy_ball_step,
)


def _sym(rng: np.random.Generator, *shape: int) -> np.ndarray:
    X = rng.standard_normal(shape)
    return (X + np.swapaxes(X, -1, -2)) / 2


def _general_nqf(
    rng: np.random.Generator, m: int = 6, p: int = 5, V: int | None = None
) -> NQF:
    """An NQF with g, B != 0 (not ZGZ), scaled so that training stays
    bounded."""
    lead = (m,) if V is None else (m, V)
    A = 0.3 * _sym(rng, *lead, p, p)
    B = 0.05 * _sym(rng, *lead, p, p)
    g = 0.2 * rng.standard_normal(lead + (p,))
    f0 = 0.1 * rng.standard_normal(lead)
    return NQF(A, g=g, B=B, f0=f0)


def _zgz_nqf(rng: np.random.Generator, m: int = 6, p: int = 5) -> NQF:
    return NQF(0.5 * _sym(rng, m, p, p))


def _torch_nqf_loss(
    model: NQF, W: torch.Tensor, y: torch.Tensor, batch: np.ndarray
) -> torch.Tensor:
    """Eq. 20 and the batch-mean squared loss, written directly in torch."""
    A = torch.as_tensor(model.A[batch])
    B = torch.as_tensor(model.B[batch])
    g = torch.as_tensor(model.g[batch])
    f0 = torch.as_tensor(model.f0[batch])
    mu = W.sum(dim=1)
    f = (
        f0
        + g @ mu
        + torch.einsum("nij,i,j->n", B, mu, mu)
        + torch.einsum("nij,ik,jk->n", A, W, W)
    )
    return ((f - y[batch]) ** 2).mean()


def _batches(
    rng: np.random.Generator, m: int, size: int, steps: int
) -> list[np.ndarray]:
    return [rng.choice(m, size=size, replace=False) for _ in range(steps)]


# ----------------------------------------------------------------------------
# closure of heavy-ball momentum
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("V", [None, 3])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_closed_state_matches_explicit_minibatch(
    V: int | None, weight_decay: float
) -> None:
    rng = np.random.default_rng(0)
    model = _general_nqf(rng, V=V)
    d = 9
    W = 0.3 * rng.standard_normal((model.p, d))
    Vel = np.zeros_like(W)
    y = rng.standard_normal((model.m,) if V is None else (model.m, V))
    state = MomentumState.at_rest(W @ W.T, W.sum(axis=1))
    worst = 0.0
    for batch in _batches(rng, model.m, 3, 300):
        W, Vel = heavy_ball_step(
            model, W, Vel, y, 0.02, 0.9, batch=batch, weight_decay=weight_decay
        )
        state = heavy_ball_closed_step(
            model,
            state,
            d,
            y,
            0.02,
            0.9,
            batch=batch,
            weight_decay=weight_decay,
        )
        ref = MomentumState.from_W(W, Vel)
        for name in ("M", "mu", "S", "N", "nu"):
            worst = max(
                worst,
                np.max(np.abs(getattr(state, name) - getattr(ref, name))),
            )
    assert np.max(np.abs(W)) > 0.05  # the run moved somewhere non-trivial
    assert worst <= 1e-10


def test_beta_zero_is_theorem_2() -> None:
    rng = np.random.default_rng(1)
    model = _general_nqf(rng)
    d = 4
    W = 0.3 * rng.standard_normal((model.p, d))
    y = rng.standard_normal(model.m)
    M, mu = W @ W.T, W.sum(axis=1)
    state = MomentumState.at_rest(M, mu)
    for _ in range(50):
        M, mu = model.closed_step(M, mu, d, y, 0.05)
        state = heavy_ball_closed_step(model, state, d, y, 0.05, 0.0)
    assert np.max(np.abs(state.M - M)) <= 1e-12
    assert np.max(np.abs(state.mu - mu)) <= 1e-12


def test_explicit_step_is_torch_sgd_momentum() -> None:
    rng = np.random.default_rng(2)
    model = _general_nqf(rng)
    W0 = 0.3 * rng.standard_normal((model.p, 7))
    y = rng.standard_normal(model.m)
    batches = _batches(rng, model.m, 4, 60)
    lr, beta, wd = 0.03, 0.8, 0.01
    Wt = torch.tensor(W0, requires_grad=True)
    opt = torch.optim.SGD([Wt], lr=lr, momentum=beta, weight_decay=wd)
    yt = torch.as_tensor(y)
    W, Vel = W0.copy(), np.zeros_like(W0)
    for batch in batches:
        opt.zero_grad()
        _torch_nqf_loss(model, Wt, yt, batch).backward()
        opt.step()
        W, Vel = heavy_ball_step(
            model, W, Vel, y, lr, beta, batch=batch, weight_decay=wd
        )
    assert np.max(np.abs(W - Wt.detach().numpy())) <= 1e-12


def test_zgz_widths_agree_under_momentum() -> None:
    rng = np.random.default_rng(3)
    model = _zgz_nqf(rng)
    Wa = 0.2 * rng.standard_normal((model.p, 7))
    M, mu = Wa @ Wa.T, Wa.sum(axis=1)
    Wb = realize_moments(M, mu, 40, rng=np.random.default_rng(4))
    Va, Vb = np.zeros_like(Wa), np.zeros_like(Wb)
    y = rng.standard_normal(model.m)
    worst = 0.0
    for batch in _batches(rng, model.m, 2, 200):
        Wa, Va = heavy_ball_step(model, Wa, Va, y, 0.02, 0.9, batch=batch)
        Wb, Vb = heavy_ball_step(model, Wb, Vb, y, 0.02, 0.9, batch=batch)
        worst = max(
            worst, np.max(np.abs(model.predict_W(Wa) - model.predict_W(Wb)))
        )
    assert worst <= 1e-10


def test_general_widths_differ_under_momentum() -> None:
    """With g != 0 the width enters through d v: same (M, mu), different d,
    different paths."""
    rng = np.random.default_rng(5)
    model = _general_nqf(rng)
    Wa = 0.2 * rng.standard_normal((model.p, 7))
    M, mu = Wa @ Wa.T, Wa.sum(axis=1)
    y = rng.standard_normal(model.m)
    sa, sb = MomentumState.at_rest(M, mu), MomentumState.at_rest(M, mu)
    for _ in range(50):
        sa = heavy_ball_closed_step(model, sa, 7, y, 0.02, 0.9)
        sb = heavy_ball_closed_step(model, sb, 40, y, 0.02, 0.9)
    assert (
        np.max(np.abs(model.predict(sa.M, sa.mu) - model.predict(sb.M, sb.mu)))
        >= 1e-2
    )


def test_state_constructors() -> None:
    rng = np.random.default_rng(6)
    W = rng.standard_normal((4, 5))
    Vel = rng.standard_normal((4, 5))
    s = MomentumState.from_W(W, Vel)
    assert s.p == 4
    assert np.allclose(
        s.S, sum(np.outer(W[:, i], Vel[:, i]) for i in range(5)), atol=1e-13
    )
    assert np.allclose(
        s.nu,
        Vel[:, 0] + Vel[:, 1] + Vel[:, 2] + Vel[:, 3] + Vel[:, 4],
        atol=1e-13,
    )
    rest = MomentumState.at_rest(s.M, s.mu)
    assert not rest.S.any() and not rest.N.any() and not rest.nu.any()


# ----------------------------------------------------------------------------
# Adam
# ----------------------------------------------------------------------------
def test_adam_matches_torch() -> None:
    rng = np.random.default_rng(7)
    model = _general_nqf(rng)
    W0 = 0.3 * rng.standard_normal((model.p, 6))
    y = rng.standard_normal(model.m)
    Wt = torch.tensor(W0, requires_grad=True)
    opt = torch.optim.Adam([Wt], lr=0.01)
    yt = torch.as_tensor(y)
    W, st = W0.copy(), AdamState.zeros_like(W0)
    full = np.arange(model.m)
    for _ in range(40):
        opt.zero_grad()
        _torch_nqf_loss(model, Wt, yt, full).backward()
        opt.step()
        W, st = adam_step(model, W, st, y, 0.01)
    assert st.t == 40
    assert np.max(np.abs(W - Wt.detach().numpy())) <= 1e-10


def _rotation_fixing_ones(rng: np.random.Generator, d: int) -> np.ndarray:
    Q, _ = np.linalg.qr(np.c_[np.ones(d), rng.standard_normal((d, d - 1))])
    basis = Q[:, 1:]  # orthonormal basis of 1-perp
    R, _ = np.linalg.qr(rng.standard_normal((d - 1, d - 1)))
    return np.ones((d, d)) / d + basis @ R @ basis.T


def test_adam_breaks_closure_but_not_for_permutations() -> None:
    rng = np.random.default_rng(8)
    model = _zgz_nqf(rng)
    d = 8
    Wa = 0.3 * rng.standard_normal((model.p, d))
    O = _rotation_fixing_ones(rng, d)
    assert np.allclose(O @ np.ones(d), np.ones(d), atol=1e-13)
    assert np.allclose(O @ O.T, np.eye(d), atol=1e-13)
    Wr, Wp = Wa @ O, Wa[:, rng.permutation(d)]
    y = rng.standard_normal(model.m)
    sa, sr, sp = (AdamState.zeros_like(Wa) for _ in range(3))
    for _ in range(50):
        Wa, sa = adam_step(model, Wa, sa, y, 0.01)
        Wr, sr = adam_step(model, Wr, sr, y, 0.01)
        Wp, sp = adam_step(model, Wp, sp, y, 0.01)
    fa = model.predict_W(Wa)
    assert np.max(np.abs(fa - model.predict_W(Wr))) >= 1e-3
    assert np.max(np.abs(fa - model.predict_W(Wp))) <= 1e-12


# ----------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------
@pytest.fixture
def setup():
    rng = np.random.default_rng(9)
    model = _general_nqf(rng)
    W = rng.standard_normal((model.p, 3))
    y = rng.standard_normal(model.m)
    return model, W, y


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"beta": 1.0}, ValueError, "beta"),
        ({"beta": -0.1}, ValueError, "beta"),
        ({"beta": "0.9"}, TypeError, "beta"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": float("nan")}, ValueError, "lr"),
        ({"weight_decay": -1.0}, ValueError, "weight_decay"),
    ],
)
def test_bad_hyperparameters(setup, kwargs, exc, match) -> None:
    model, W, y = setup
    args = {"lr": 0.1, "beta": 0.9} | kwargs
    with pytest.raises(exc, match=match):
        heavy_ball_step(model, W, np.zeros_like(W), y, **args)
    state = MomentumState.at_rest(W @ W.T, W.sum(axis=1))
    with pytest.raises(exc, match=match):
        heavy_ball_closed_step(model, state, 3, y, **args)


def test_bad_shapes_and_types(setup) -> None:
    model, W, y = setup
    with pytest.raises(TypeError, match="model"):
        heavy_ball_step("not a model", W, np.zeros_like(W), y, 0.1, 0.9)
    with pytest.raises(ValueError, match="W must have shape"):
        heavy_ball_step(model, W[:-1], np.zeros_like(W[:-1]), y, 0.1, 0.9)
    with pytest.raises(ValueError, match="Vel"):
        heavy_ball_step(model, W, np.zeros((model.p, 4)), y, 0.1, 0.9)
    bad = W.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        heavy_ball_step(model, bad, np.zeros_like(W), y, 0.1, 0.9)
    state = MomentumState.at_rest(W @ W.T, W.sum(axis=1))
    with pytest.raises(ValueError, match="d"):
        heavy_ball_closed_step(model, state, 0, y, 0.1, 0.9)
    with pytest.raises(TypeError, match="d"):
        heavy_ball_closed_step(model, state, 2.5, y, 0.1, 0.9)
    with pytest.raises(TypeError, match="state"):
        heavy_ball_closed_step(model, (W @ W.T, W.sum(axis=1)), 3, y, 0.1, 0.9)
    small = MomentumState.at_rest(np.eye(2), np.zeros(2))
    with pytest.raises(ValueError, match="p"):
        heavy_ball_closed_step(model, small, 3, y, 0.1, 0.9)
    with pytest.raises(ValueError, match="M must be a square"):
        MomentumState.at_rest(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="mu"):
        MomentumState.at_rest(np.eye(3), np.zeros(2))
    with pytest.raises(ValueError, match="Vel"):
        MomentumState.from_W(W, np.zeros((model.p, 5)))
    with pytest.raises(TypeError, match="state"):
        adam_step(model, W, None, y, 0.1)
    with pytest.raises(ValueError, match="shape of W"):
        adam_step(model, W, AdamState.zeros_like(W[:, :2]), y, 0.1)
    with pytest.raises(ValueError, match="eps"):
        adam_step(model, W, AdamState.zeros_like(W), y, 0.1, eps=0.0)


@pytest.mark.parametrize(
    "bad, name", [(True, "lr"), ("0.1", "lr"), (0.1 + 0j, "lr")]
)
def test_heavy_ball_refuses_bool_str_complex_lr(bad, name):
    rng = np.random.default_rng(0)
    A = _sym(rng, 3, 2, 2)
    model = NQF(A)
    W = rng.standard_normal((2, 4))
    with pytest.raises(TypeError, match=name):
        heavy_ball_step(model, W, np.zeros_like(W), np.ones(3), bad, 0.5)


def test_momentum_state_refuses_complex_moments():
    with pytest.raises(TypeError, match=r"\bM\b"):
        MomentumState.at_rest(np.eye(2) * (1 + 1j), np.zeros(2))
    with pytest.raises(TypeError, match=r"\bW\b"):
        AdamState.zeros_like(np.ones((2, 2), dtype=complex))
    with pytest.raises(TypeError, match="beta"):
        heavy_ball_step(
            NQF(np.ones((1, 1, 1))),
            np.ones((1, 1)),
            np.zeros((1, 1)),
            [1.0],
            0.1,
            True,
        )
