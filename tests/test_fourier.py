"""Tests for nqf_lite.expansion.models.fourier (Section 7, Eq. 50; App. C, Eqs.
296-297).

Expected values come from torch autograd, eigendecompositions, hand formulas or
explicit logistic solutions written here, never from the function under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments import fourier as fx

torch.set_default_dtype(torch.float64)


def logistic(t, r, c, z0):
    """Eq. 39 written out directly (r > 0)."""
    t = np.asarray(t)[:, None]
    return r * z0 / (c * z0 + (r - c * z0) * np.exp(-r * t))


# -----------------------------------------------------------------------------
# Fourier MLP
def test_fourier_features_orthonormal():
    x, psi = fo.fourier_features(64, 31)
    np.testing.assert_allclose(x, np.arange(64) / 64, rtol=0, atol=0)
    np.testing.assert_allclose(psi.T @ psi / 64, np.eye(31), atol=1e-12)
    np.testing.assert_allclose(psi.mean(axis=0), 0, atol=1e-12)
    assert psi[5, 2] == pytest.approx(
        np.sqrt(2) * np.cos(2 * np.pi * 3 * 5 / 64), abs=1e-15
    )


def test_fourier_features_bad():
    with pytest.raises(ValueError, match="M/2"):
        fo.fourier_features(64, 32)
    with pytest.raises(ValueError, match="P must"):
        fo.fourier_features(64, 0)


def test_fourier_target():
    _, psi = fo.fourier_features(32, 5)
    b = np.arange(1, 6) ** -1.5
    y = fo.fourier_target(psi, b, c=0.1)
    np.testing.assert_allclose(psi.T @ y / 32, 0.1 * b, atol=1e-14)
    with pytest.raises(ValueError, match="shape"):
        fo.fourier_target(psi, b[:3])
    with pytest.raises(ValueError, match="c"):
        fo.fourier_target(psi, b, c=0.0)


def _torch_mlp(w, s, psi, scale):
    a, W = w[0::2], w[1::2]
    return scale * torch.tanh(torch.tensor(psi) * (torch.tensor(s) * a)) @ W


@pytest.mark.parametrize("scale", [1.0, 1 / np.sqrt(4)])
def test_fourier_structure_is_half_hessian(scale):
    M, P = 16, 4
    _, psi = fo.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -0.5
    A = fo.fourier_nqf_structure(s, psi, scale)
    for n in (0, 3, 7):
        H = torch.autograd.functional.hessian(
            lambda w: _torch_mlp(w, s, psi[n : n + 1], scale)[0],
            torch.zeros(2 * P),
        ).numpy()
        np.testing.assert_allclose(A[n], H / 2, atol=1e-13)


def test_fourier_nqf_is_trace_and_mlp_agrees_to_fourth_order():
    M, P = 16, 4
    _, psi = fo.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -1.0
    rng = np.random.default_rng(3)
    a, W = rng.normal(size=P), rng.normal(size=P)
    w = np.empty(2 * P)
    w[0::2], w[1::2] = a, W
    A = fo.fourier_nqf_structure(s, psi, 0.5)
    np.testing.assert_allclose(
        fo.fourier_nqf(a, W, s, psi, 0.5),
        np.einsum("i,nij,j->n", w, A, w),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        fo.fourier_mlp(a, W, s, psi, 0.5),
        _torch_mlp(torch.tensor(w), s, psi, 0.5).numpy(),
        rtol=1e-12,
    )
    # tanh: f - NQF = O(|w|^4)
    d = [
        np.max(
            np.abs(
                fo.fourier_mlp(h * a, h * W, s, psi)
                - fo.fourier_nqf(h * a, h * W, s, psi)
            )
        )
        for h in (1e-2, 5e-3)
    ]
    assert d[0] / d[1] == pytest.approx(16.0, rel=1e-3)


def test_fourier_modes_from_eigendecomposition():
    M, P, c, scale = 64, 8, 0.1, 1 / np.sqrt(8)
    _, psi = fo.fourier_features(M, P)
    k = np.arange(1, P + 1)
    s, b = k**-0.5, k**-1.5
    y = c * psi @ b
    A = fo.fourier_nqf_structure(s, psi, scale)
    # eigenvectors (e_{2k} +- e_{2k+1})/sqrt(2) of each block
    Pp = np.zeros((2 * P, P))
    Pp[2 * (k - 1), k - 1] = Pp[2 * (k - 1) + 1, k - 1] = 1 / np.sqrt(2)
    lam = np.einsum("ik,nij,jk->nk", Pp, A, Pp)
    r_want = 8 / M * lam.T @ y
    C_want = 8 / M * lam.T @ lam
    r, C = fo.fourier_modes(s, b, c, scale)
    np.testing.assert_allclose(r, r_want, rtol=1e-12)
    np.testing.assert_allclose(C, np.diag(C_want), rtol=1e-12)
    np.testing.assert_allclose(
        C_want - np.diag(np.diag(C_want)), 0, atol=1e-14
    )
    # V_k = c^2 b_k^2, independent of s_k
    np.testing.assert_allclose(r**2 / (8 * C), c**2 * b**2, rtol=1e-12)


def test_fourier_bad_inputs():
    _, psi = fo.fourier_features(16, 4)
    ones = np.ones(4)
    with pytest.raises(ValueError, match="shape"):
        fo.fourier_mlp(np.ones(3), ones, ones, psi)
    with pytest.raises(ValueError, match="scale"):
        fo.fourier_nqf(ones, ones, ones, psi, scale=0.0)
    with pytest.raises(ValueError, match="axes"):
        fo.fourier_nqf_structure(ones, np.ones(16))
    with pytest.raises(ValueError, match="shape"):
        fo.fourier_modes(ones, np.ones(3))
    with pytest.raises(ValueError, match="model"):
        fx.train_fourier(
            ones, ones, ones, psi, np.ones(16), 0.1, 2, model="cnn"
        )
    with pytest.raises(ValueError, match="NaN"):
        fo.fourier_mlp(ones * np.nan, ones, ones, psi)


@pytest.mark.parametrize("model", ["mlp", "nqf"])
def test_train_fourier_two_steps_match_autograd(model):
    M, P, scale, lr = 16, 4, 0.5, 0.3
    _, psi = fo.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -0.5
    rng = np.random.default_rng(4)
    a0, W0, y = (
        0.4 * rng.normal(size=P),
        0.4 * rng.normal(size=P),
        rng.normal(size=M),
    )
    t, L, (a, W) = fx.train_fourier(
        a0, W0, s, psi, y, lr, 2, scale=scale, model=model
    )
    w = torch.tensor(np.stack([a0, W0], 1).ravel(), requires_grad=True)
    A = torch.tensor(fo.fourier_nqf_structure(s, psi, scale))
    losses = []
    for _ in range(2):
        f = (
            _torch_mlp(w, s, psi, scale)
            if model == "mlp"
            else torch.einsum("i,nij,j->n", w, A, w)
        )
        loss = ((f - torch.tensor(y)) ** 2).mean()
        losses.append(loss.item())
        (g,) = torch.autograd.grad(loss, w)
        w = (w - lr * g).detach().requires_grad_(True)
    np.testing.assert_allclose(L, losses, rtol=1e-12)
    np.testing.assert_allclose(t, [0.0, lr], rtol=0)
    np.testing.assert_allclose(a, w.detach().numpy()[0::2], rtol=1e-12)
    np.testing.assert_allclose(W, w.detach().numpy()[1::2], rtol=1e-12)
    # inputs are not modified in place
    assert np.all(a0 != a)


def test_train_fourier_nqf_follows_logistic():
    M, P, c = 64, 6, 0.1
    _, psi = fo.fourier_features(M, P)
    k = np.arange(1, P + 1)
    s, b = k**-0.5, k**-1.5
    y = c * psi @ b
    a0 = W0 = np.full(P, 1e-3)  # z- = 0 exactly, z+ = 2e-6
    r, C = 4 * c * s * b, 2 * s**2
    errs = []
    for lr in (0.05, 0.025):
        n = int(round(2000 / lr))
        t, L, _ = fx.train_fourier(a0, W0, s, psi, y, lr, n, model="nqf")
        sel = slice(0, n, n // 80)
        z = logistic(t[sel], r, C, (a0 + W0) ** 2 / 2)
        E = ((1 - z / (r / C)) ** 2) @ (c**2 * b**2)
        errs.append(np.max(np.abs(L[sel] - E)) / L[0])
    # GD approaches the gradient flow at first order in lr
    assert errs[0] < 2e-2
    assert errs[1] / errs[0] == pytest.approx(0.5, abs=0.1)


def test_train_tanh_mlp_two_steps_match_autograd():
    H, lr = 5, 0.2
    rng = np.random.default_rng(5)
    x, y = np.linspace(0, 1, 12, endpoint=False), rng.normal(size=12)
    u0, v0 = 0.5 * rng.normal(size=H), 0.5 * rng.normal(size=H)
    _, L = fx.train_tanh_mlp(u0, v0, x, y, lr, 2)
    u = torch.tensor(u0, requires_grad=True)
    v = torch.tensor(v0, requires_grad=True)
    want = []
    for _ in range(2):
        loss = (
            (torch.tanh(torch.outer(torch.tensor(x), u)) @ v - torch.tensor(y))
            ** 2
        ).mean()
        want.append(loss.item())
        gu, gv = torch.autograd.grad(loss, (u, v))
        u = (u - lr * gu).detach().requires_grad_(True)
        v = (v - lr * gv).detach().requires_grad_(True)
    np.testing.assert_allclose(L, want, rtol=1e-12)


def test_train_tanh_mlp_bad():
    with pytest.raises(ValueError, match="shape"):
        fx.train_tanh_mlp(
            np.ones(3), np.ones(2), np.ones(4), np.ones(4), 0.1, 2
        )
    with pytest.raises(ValueError, match="shape"):
        fx.train_tanh_mlp(
            np.ones(3), np.ones(3), np.ones(4), np.ones(5), 0.1, 2
        )
    with pytest.raises(TypeError, match="n_steps must be a positive integer"):
        fx.train_tanh_mlp(
            np.ones(3), np.ones(3), np.ones(4), np.ones(4), 0.1, True
        )


def test_fourier_refuses_bool_str_complex():
    _, psi = fo.fourier_features(16, 4)
    ones = np.ones(4)
    with pytest.raises(TypeError, match="lr"):
        fx.train_fourier(ones, ones, ones, psi, np.ones(16), True, 2)
    with pytest.raises(TypeError, match="scale"):
        fo.fourier_mlp(ones, ones, ones, psi, scale="1")
    with pytest.raises(TypeError, match="b"):
        fo.fourier_target(psi, ones + 1j)


def test_train_fourier_diverging_lr_is_an_error():
    _, psi = fo.fourier_features(16, 4)
    ones = np.ones(4)
    with pytest.raises(ValueError, match="lr"):
        fx.train_fourier(
            ones, ones, ones, psi, 10 * np.ones(16), 1e3, 50, model="nqf"
        )


@pytest.mark.parametrize("model", ["mlp", "nqf"])
@pytest.mark.parametrize("grid", ["fourier", "asymmetric"])
def test_train_fourier_ensemble_is_train_fourier_run_by_run(model, grid):
    M, P, scale, lr, n = (
        32,
        5,
        0.7,
        0.4,
        40,
    )  # M divisible by 4: the folded and mirrored path
    _, psi = fo.fourier_features(M, P)
    rng = np.random.default_rng(11)
    if grid == "asymmetric":  # no grid symmetry to exploit: the plain path
        psi = psi + 0.1 * rng.normal(size=psi.shape)
    s = np.arange(1, P + 1) ** -0.5
    a0, W0 = 0.5 * rng.normal(size=(2, 3, P))
    # a symmetric target on the Fourier grid (the folded path), a random one
    # otherwise
    y = psi @ rng.normal(size=P) if grid == "fourier" else rng.normal(size=M)
    t, L, (a, W) = fx.train_fourier_ensemble(
        a0, W0, s, psi, y, lr, n, scale=scale, model=model
    )
    assert L.shape == (n, 3) and a.shape == W.shape == (3, P)
    for j in range(3):
        t1, L1, (a1, W1) = fx.train_fourier(
            a0[j], W0[j], s, psi, y, lr, n, scale=scale, model=model
        )
        np.testing.assert_allclose(L[:, j], L1, rtol=1e-11)
        np.testing.assert_allclose(a[j], a1, rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(W[j], W1, rtol=1e-11, atol=1e-14)
    np.testing.assert_array_equal(t, t1)


def test_grid_folds_use_the_symmetries_only_where_they_hold():
    _, psi = fo.fourier_features(64, 6)
    y = fo.fourier_target(psi, np.ones(6))
    keep, w, q = fx._grid_folds(psi, y)
    assert (
        keep.size == 33
        and q == 17
        and w.sum() == pytest.approx(1.0, abs=1e-15)
    )
    # an asymmetric target (a sine) keeps every point
    y_sin = np.sin(2 * np.pi * np.arange(64) / 64)
    assert (
        fx._grid_folds(psi, y_sin)[0].size == 64
        and fx._grid_folds(psi, y_sin)[2] == 0
    )
    _, psi_30 = fo.fourier_features(
        30, 6
    )  # M even but not divisible by 4: folded, no mirror
    keep, _, q = fx._grid_folds(psi_30, fo.fourier_target(psi_30, np.ones(6)))
    assert keep.size == 16 and q == 0
    keep, w, q = fx._grid_folds(
        psi[::-1][:40], y[:40]
    )  # an arbitrary point set: nothing folded
    assert (
        keep.size == 40 and q == 0 and w.sum() == pytest.approx(1.0, abs=1e-15)
    )


def test_train_fourier_ensemble_bad_inputs():
    _, psi = fo.fourier_features(16, 4)
    ones = np.ones(4)
    with pytest.raises(ValueError, match="a0"):
        fx.train_fourier_ensemble(ones, ones, ones, psi, np.ones(16), 0.1, 2)
    with pytest.raises(ValueError, match="W0"):
        fx.train_fourier_ensemble(
            np.ones((2, 4)), np.ones((3, 4)), ones, psi, np.ones(16), 0.1, 2
        )
    with pytest.raises(ValueError, match="model"):
        fx.train_fourier_ensemble(
            np.ones((2, 4)),
            np.ones((2, 4)),
            ones,
            psi,
            np.ones(16),
            0.1,
            2,
            model="cnn",
        )
    with pytest.raises(ValueError, match="diverged"):
        fx.train_fourier_ensemble(
            np.ones((2, 4)),
            np.ones((2, 4)),
            ones,
            psi,
            1e3 * np.ones(16),
            50.0,
            200,
        )
