"""Tests for nqf_lite.scaling (paper Sec. 6, App. A.17, App. C).

Expected values come from hand formulas, torch autograd, direct loss evaluation or
explicit logistic solutions written here, never from the function under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite import scaling as sc

torch.set_default_dtype(torch.float64)


def logistic(t, r, c, z0):
    """Eq. 39 written out directly (r > 0)."""
    t = np.asarray(t)[:, None]
    return r * z0 / (c * z0 + (r - c * z0) * np.exp(-r * t))


# ----------------------------------------------------------------------------- exponents
def test_scaling_exponent_values():
    assert sc.scaling_exponent(2.0, 0.8) == pytest.approx(1.25, abs=1e-15)
    assert sc.scaling_exponent(3.0, 1.5) == pytest.approx(4.0 / 3.0, abs=1e-15)
    # Fourier MLP: alpha1 = 2 beta, alpha2 = theta + beta
    assert sc.scaling_exponent(2 * 1.5, 1.0 + 1.5) == pytest.approx(0.8, abs=1e-15)


@pytest.mark.parametrize("a1,a2", [(1.0, 1.0), (0.5, 1.0), (2.0, 0.0), (2.0, -1.0), (np.nan, 1.0)])
def test_scaling_exponent_bad(a1, a2):
    with pytest.raises(ValueError):
        sc.scaling_exponent(a1, a2)


def test_scaling_exponent_type():
    with pytest.raises(TypeError):
        sc.scaling_exponent("two", 1.0)


def test_samplewise_exponent():
    assert sc.samplewise_exponent(1.0, 0.8) == pytest.approx(1.25, abs=1e-15)
    assert sc.samplewise_exponent(0.75, 2.0) == pytest.approx(0.25, abs=1e-15)
    with pytest.raises(ValueError, match="gamma1"):
        sc.samplewise_exponent(0.5, 1.0)
    with pytest.raises(ValueError, match="gamma2"):
        sc.samplewise_exponent(1.0, 0.0)


# ----------------------------------------------------------------------------- effective slope
def _slope_by_finite_difference(a1, a2, eps, beta0, k):
    """-d ln E/d ln t along the continuum k (Eqs. 289-290), central differences."""

    def ln_t(kk):
        r = kk**-a2
        V = kk**-a1
        zinf = 8 * V / r  # r/C with C = r^2/(8V)
        return np.log(np.log(zinf / (eps * kk**-beta0)) / r)

    def ln_E(kk):
        return np.log(kk ** (1 - a1) / (a1 - 1))

    h = 1e-5
    dE = (ln_E(k * np.exp(h)) - ln_E(k * np.exp(-h))) / (2 * h)
    dt = (ln_t(k * np.exp(h)) - ln_t(k * np.exp(-h))) / (2 * h)
    return -dE / dt


@pytest.mark.parametrize("a1,a2,eps,beta0", [(3.0, 1.5, 1e-8, 0.0), (2.0, 0.8, 1e-6, 0.0), (2.0, 1.2, 1e-4, 0.3)])
def test_effective_slope_matches_derivative(a1, a2, eps, beta0):
    K = 50
    k = np.arange(1, K + 1, dtype=float)
    r = k**-a2
    C = r**2 / (8 * k**-a1)
    got = sc.effective_slope(a1, a2, r, C, eps, beta0=beta0)
    want = _slope_by_finite_difference(a1, a2, eps, beta0, k)
    np.testing.assert_allclose(got, want, rtol=1e-8)


def test_effective_slope_closed_form_and_limits():
    a1, a2, eps = 3.0, 1.5, 1e-8
    k = np.arange(1, 11, dtype=float)
    r = 0.4 * k**-a2
    C = 2.0 * np.ones_like(k)
    want = (a1 - 1) / (a2 - (a1 - a2) / np.log(r / (C * eps)))  # Eq. 292
    np.testing.assert_allclose(sc.effective_slope(a1, a2, r, C, eps), want, rtol=1e-13)
    # C as a diagonal matrix gives the same
    np.testing.assert_allclose(sc.effective_slope(a1, a2, r, np.diag(C), eps), want, rtol=1e-13)
    # steeper than (a1-1)/a2 when a1 > a2
    assert np.all(want > (a1 - 1) / a2)
    # eps -> 0: back to Eq. 46 (correction ~ 1/ln(1/eps))
    tiny = sc.effective_slope(a1, a2, r, C, 1e-300)
    assert np.all(np.abs(tiny - 4.0 / 3.0) < 4.0 / 3.0 * 1.5 / (690 - 10))
    # aligned init beta0 = a1 - a2 removes the correction exactly
    kk = np.arange(1, 30, dtype=float)
    rr = kk**-a2
    CC = rr**2 / (8 * kk**-a1)
    np.testing.assert_allclose(sc.effective_slope(a1, a2, rr, CC, 1e-6, beta0=a1 - a2), 4.0 / 3.0, rtol=1e-13)


def test_effective_slope_bad():
    r = np.array([1.0, 0.5])
    C = np.array([1.0, 1.0])
    with pytest.raises(ValueError, match="r_k > 0"):
        sc.effective_slope(2.0, 1.0, [1.0, -0.5], C, 1e-6)
    with pytest.raises(ValueError, match="eps"):
        sc.effective_slope(2.0, 1.0, r, C, 0.0)
    with pytest.raises(ValueError, match="saturation"):
        sc.effective_slope(2.0, 1.0, r, C, 0.7)
    with pytest.raises(ValueError, match="diagonal"):
        sc.effective_slope(2.0, 1.0, r, [[1.0, 0.1], [0.1, 1.0]], 1e-6)
    with pytest.raises(ValueError, match="shape"):
        sc.effective_slope(2.0, 1.0, r, [1.0, 1.0, 1.0], 1e-6)
    with pytest.raises(ValueError, match="alpha1"):
        sc.effective_slope(1.0, 1.0, r, C, 1e-6)
    with pytest.raises(ValueError, match="increase"):
        # a1 - a2 large and eps close to saturation: Eq. 290 decreases with k
        sc.effective_slope(5.0, 0.5, [1.0, 0.7], [1.0, 1.0], 0.5)


# ----------------------------------------------------------------------------- excess loss
def test_excess_loss_is_the_loss_of_the_onehot_network():
    m = 40
    pm = sc.powerlaw_modes(m, 2.0, 0.8)
    rng = np.random.default_rng(0)
    z = rng.uniform(0, 3, size=(5, m)) * (pm.r / pm.C)
    # direct loss of f_n = a_n z_n against y_n; L(inf) = 0 (exact fit possible)
    L = np.mean((pm.a * z - pm.y) ** 2, axis=1)
    np.testing.assert_allclose(sc.excess_loss(z, pm.r, pm.C), L, rtol=1e-12)
    # and the V form of Eq. 163
    V = pm.r**2 / (8 * pm.C)
    np.testing.assert_allclose(sc.excess_loss(z, pm.r, pm.C), ((1 - z / (pm.r / pm.C)) ** 2) @ V, rtol=1e-12)


def test_excess_loss_bad():
    with pytest.raises(ValueError):
        sc.excess_loss(np.ones((2, 3)), [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="diagonal"):
        sc.excess_loss(np.ones((2, 2)), [1.0, 1.0], [[1.0, 0.5], [0.5, 1.0]])


# ----------------------------------------------------------------------------- staircase
def test_staircase_by_hand():
    got = sc.staircase_loss([0.0, 0.5, 1.5, 2.5], [1.0, 0.5], [3.0, 2.0])
    np.testing.assert_array_equal(got, [5.0, 5.0, 2.0, 0.0])


def test_staircase_is_eps_to_zero_limit():
    r = np.array([1.0, 0.5, 0.25])
    C = np.array([1.0, 2.0, 0.5])
    V = r**2 / (8 * C)
    tau = np.array([0.3, 1.2, 2.7, 5.0])  # away from the steps 1, 2, 4
    want = np.array([V.sum(), V[1:].sum(), V[2], 0.0])
    errs = []
    for eps in (1e-20, 1e-80, 1e-250):
        z = logistic(tau * np.log(1 / eps), r, C, np.full(3, eps))
        E = ((1 - z / (r / C)) ** 2) @ V
        errs.append(np.max(np.abs(E - want)))
    np.testing.assert_allclose(sc.staircase_loss(tau, r, V), want, rtol=1e-15)
    # finite eps leaves a visible smoothing that disappears as eps -> 0
    assert errs[0] > 1e-9 and errs[0] >= errs[1] >= errs[2] and errs[2] < 1e-12


def test_staircase_bad():
    with pytest.raises(ValueError, match="tau"):
        sc.staircase_loss([-1.0], [1.0], [1.0])
    with pytest.raises(ValueError, match="r must be > 0"):
        sc.staircase_loss([1.0], [0.0], [1.0])
    with pytest.raises(ValueError, match="V must be >= 0"):
        sc.staircase_loss([1.0], [1.0], [-1.0])
    with pytest.raises(ValueError, match="shape"):
        sc.staircase_loss([1.0], [1.0, 2.0], [1.0])


# ----------------------------------------------------------------------------- slope fit
def test_fit_exact_power_law_any_sampling():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(1.0, 1e4, 3000))
    t = np.unique(t)
    L = 3.0 * t**-1.7
    fit = sc.fit_loglog_slope(t, L, (10.0, 1000.0))
    assert fit.slope == pytest.approx(-1.7, abs=1e-6)
    assert fit.intercept == pytest.approx(np.log(3.0), abs=1e-5)
    assert fit.decades == pytest.approx(2.0, abs=1e-14)


def test_fit_weights_decades_equally():
    # two regimes: slope -1 on [1, 10], slope -3 on [10, 100]; equal weight -> about -2
    t = np.linspace(1.0, 100.0, 100000)
    L = np.where(t < 10, 1 / t, 100 / t**3)
    fit = sc.fit_loglog_slope(t, L, (1.0, 100.0), n=2001)
    assert fit.slope == pytest.approx(-2.0, abs=1e-2)


@pytest.mark.parametrize(
    "window,err",
    [((0.5, 10.0), ValueError), ((10.0, 5.0), ValueError), ((1.0, 1e9), ValueError), ("ab", TypeError), (None, TypeError)],
)
def test_fit_bad_window(window, err):
    t = np.geomspace(1, 100, 50)
    with pytest.raises(err):
        sc.fit_loglog_slope(t, 1 / t, window)


def test_fit_bad_data():
    t = np.geomspace(1, 100, 50)
    with pytest.raises(ValueError, match="L must be > 0"):
        sc.fit_loglog_slope(t, np.zeros(50), (2.0, 50.0))
    with pytest.raises(ValueError, match="increasing"):
        sc.fit_loglog_slope(t[::-1], 1 / t, (2.0, 50.0))
    with pytest.raises(ValueError, match="shape"):
        sc.fit_loglog_slope(t, np.ones(49), (2.0, 50.0))
    with pytest.raises(ValueError, match="n must"):
        sc.fit_loglog_slope(t, 1 / t, (2.0, 50.0), n=1)


# ----------------------------------------------------------------------------- Fig. 3 right data
def test_powerlaw_modes_reproduce_r_and_C_from_data():
    m = 200
    pm = sc.powerlaw_modes(m, 2.0, 0.8)
    k = np.arange(1, m + 1)
    # Eq. 37 with lambda_{n,k} = a_n delta_{nk}
    np.testing.assert_allclose(8 / m * pm.a * pm.y, k**-0.8, rtol=1e-13)
    np.testing.assert_allclose(8 / m * pm.a**2, pm.C, rtol=1e-13)
    np.testing.assert_allclose(pm.r**2 / (8 * pm.C), k**-2.0, rtol=1e-13)
    np.testing.assert_allclose(pm.V, k**-2.0, rtol=1e-13)
    # z_inf = 8 V / r = 8 k^{-1.2}
    np.testing.assert_allclose(pm.r / pm.C, 8 * k**-1.2, rtol=1e-13)


def test_powerlaw_modes_bad():
    with pytest.raises(ValueError, match="m must"):
        sc.powerlaw_modes(0, 2.0, 0.8)
    with pytest.raises(TypeError, match="m must be a positive integer"):
        sc.powerlaw_modes(10.0, 2.0, 0.8)
    with pytest.raises(ValueError, match="alpha1"):
        sc.powerlaw_modes(10, 1.0, 0.8)


def test_onehot_gd_one_step_matches_autograd():
    m, d = 6, 3
    rng = np.random.default_rng(2)
    a = rng.uniform(0.5, 2, m)
    y = rng.normal(size=m)
    W0 = 0.3 * rng.normal(size=(m, d))
    lr = 0.07
    _, z = sc.onehot_quadratic_gd(a, y, W0, lr, 1, progress=False)
    W = torch.tensor(W0, requires_grad=True)
    X = torch.diag(torch.tensor(np.sqrt(a)))  # rows x_n = sqrt(a_n) e_n
    f = ((X @ W) ** 2).sum(dim=1)  # x^T W W^T x
    loss = ((f - torch.tensor(y)) ** 2).mean()
    loss.backward()
    W1 = (W - lr * W.grad).detach().numpy()
    np.testing.assert_allclose(z[0], (W0**2).sum(1), rtol=1e-14)
    np.testing.assert_allclose(z[1], (W1**2).sum(1), rtol=1e-12)


def test_onehot_gd_small_lr_is_logistic():
    pm = sc.powerlaw_modes(30, 2.0, 0.8)
    z0 = 1e-4 * np.arange(1, 31) ** -1.2
    t, z = sc.onehot_quadratic_gd(pm.a, pm.y, np.sqrt(z0)[:, None], 1e-3, 20000, every=1000, progress=False)
    np.testing.assert_allclose(t, 1e-3 * np.arange(0, 20001, 1000), rtol=1e-14)
    zt = logistic(t, pm.r, pm.C, z0)
    zinf = pm.r / pm.C
    assert np.max(np.abs(z - zt) / zinf) < 5e-3


def test_onehot_gd_bad():
    with pytest.raises(ValueError, match="a must be > 0"):
        sc.onehot_quadratic_gd([1.0, 0.0], [1.0, 1.0], np.ones((2, 1)), 0.1, 3)
    with pytest.raises(ValueError, match="rows"):
        sc.onehot_quadratic_gd([1.0, 1.0], [1.0, 1.0], np.ones((3, 1)), 0.1, 3)
    with pytest.raises(ValueError, match="n_steps"):
        sc.onehot_quadratic_gd([1.0, 1.0], [1.0, 1.0], np.ones((2, 1)), 0.1, 0)
    with pytest.raises(ValueError, match="lr"):
        sc.onehot_quadratic_gd([1.0, 1.0], [1.0, 1.0], np.ones((2, 1)), -0.1, 3)
    with pytest.raises(ValueError, match="every"):
        sc.onehot_quadratic_gd([1.0, 1.0], [1.0, 1.0], np.ones((2, 1)), 0.1, 3, every=0)


# ----------------------------------------------------------------------------- Fourier MLP
def test_fourier_features_orthonormal():
    x, psi = sc.fourier_features(64, 31)
    np.testing.assert_allclose(x, np.arange(64) / 64, rtol=0, atol=0)
    np.testing.assert_allclose(psi.T @ psi / 64, np.eye(31), atol=1e-12)
    np.testing.assert_allclose(psi.mean(axis=0), 0, atol=1e-12)
    assert psi[5, 2] == pytest.approx(np.sqrt(2) * np.cos(2 * np.pi * 3 * 5 / 64), abs=1e-15)


def test_fourier_features_bad():
    with pytest.raises(ValueError, match="M/2"):
        sc.fourier_features(64, 32)
    with pytest.raises(ValueError, match="P must"):
        sc.fourier_features(64, 0)


def test_fourier_target():
    _, psi = sc.fourier_features(32, 5)
    b = np.arange(1, 6) ** -1.5
    y = sc.fourier_target(psi, b, c=0.1)
    np.testing.assert_allclose(psi.T @ y / 32, 0.1 * b, atol=1e-14)
    with pytest.raises(ValueError, match="shape"):
        sc.fourier_target(psi, b[:3])
    with pytest.raises(ValueError, match="c"):
        sc.fourier_target(psi, b, c=0.0)


def _torch_mlp(w, s, psi, scale):
    a, W = w[0::2], w[1::2]
    return scale * torch.tanh(torch.tensor(psi) * (torch.tensor(s) * a)) @ W


@pytest.mark.parametrize("scale", [1.0, 1 / np.sqrt(4)])
def test_fourier_structure_is_half_hessian(scale):
    M, P = 16, 4
    _, psi = sc.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -0.5
    A = sc.fourier_nqf_structure(s, psi, scale)
    for n in (0, 3, 7):
        H = torch.autograd.functional.hessian(
            lambda w: _torch_mlp(w, s, psi[n : n + 1], scale)[0], torch.zeros(2 * P)
        ).numpy()
        np.testing.assert_allclose(A[n], H / 2, atol=1e-13)


def test_fourier_nqf_is_trace_and_mlp_agrees_to_fourth_order():
    M, P = 16, 4
    _, psi = sc.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -1.0
    rng = np.random.default_rng(3)
    a, W = rng.normal(size=P), rng.normal(size=P)
    w = np.empty(2 * P)
    w[0::2], w[1::2] = a, W
    A = sc.fourier_nqf_structure(s, psi, 0.5)
    np.testing.assert_allclose(sc.fourier_nqf(a, W, s, psi, 0.5), np.einsum("i,nij,j->n", w, A, w), rtol=1e-12)
    np.testing.assert_allclose(
        sc.fourier_mlp(a, W, s, psi, 0.5), _torch_mlp(torch.tensor(w), s, psi, 0.5).numpy(), rtol=1e-12
    )
    # tanh: f - NQF = O(|w|^4)
    d = [np.max(np.abs(sc.fourier_mlp(h * a, h * W, s, psi) - sc.fourier_nqf(h * a, h * W, s, psi))) for h in (1e-2, 5e-3)]
    assert d[0] / d[1] == pytest.approx(16.0, rel=1e-3)


def test_fourier_modes_from_eigendecomposition():
    M, P, c, scale = 64, 8, 0.1, 1 / np.sqrt(8)
    _, psi = sc.fourier_features(M, P)
    k = np.arange(1, P + 1)
    s, b = k**-0.5, k**-1.5
    y = c * psi @ b
    A = sc.fourier_nqf_structure(s, psi, scale)
    # eigenvectors (e_{2k} +- e_{2k+1})/sqrt(2) of each block
    Pp = np.zeros((2 * P, P))
    Pp[2 * (k - 1), k - 1] = Pp[2 * (k - 1) + 1, k - 1] = 1 / np.sqrt(2)
    lam = np.einsum("ik,nij,jk->nk", Pp, A, Pp)
    r_want = 8 / M * lam.T @ y
    C_want = 8 / M * lam.T @ lam
    r, C = sc.fourier_modes(s, b, c, scale)
    np.testing.assert_allclose(r, r_want, rtol=1e-12)
    np.testing.assert_allclose(C, np.diag(C_want), rtol=1e-12)
    np.testing.assert_allclose(C_want - np.diag(np.diag(C_want)), 0, atol=1e-14)
    # V_k = c^2 b_k^2, independent of s_k
    np.testing.assert_allclose(r**2 / (8 * C), c**2 * b**2, rtol=1e-12)


def test_fourier_bad_inputs():
    _, psi = sc.fourier_features(16, 4)
    ones = np.ones(4)
    with pytest.raises(ValueError, match="shape"):
        sc.fourier_mlp(np.ones(3), ones, ones, psi)
    with pytest.raises(ValueError, match="scale"):
        sc.fourier_nqf(ones, ones, ones, psi, scale=0.0)
    with pytest.raises(ValueError, match="axes"):
        sc.fourier_nqf_structure(ones, np.ones(16))
    with pytest.raises(ValueError, match="shape"):
        sc.fourier_modes(ones, np.ones(3))
    with pytest.raises(ValueError, match="model"):
        sc.train_fourier(ones, ones, ones, psi, np.ones(16), 0.1, 2, model="cnn")
    with pytest.raises(ValueError, match="NaN"):
        sc.fourier_mlp(ones * np.nan, ones, ones, psi)


@pytest.mark.parametrize("model", ["mlp", "nqf"])
def test_train_fourier_two_steps_match_autograd(model):
    M, P, scale, lr = 16, 4, 0.5, 0.3
    _, psi = sc.fourier_features(M, P)
    s = np.arange(1, P + 1) ** -0.5
    rng = np.random.default_rng(4)
    a0, W0, y = 0.4 * rng.normal(size=P), 0.4 * rng.normal(size=P), rng.normal(size=M)
    t, L, (a, W) = sc.train_fourier(a0, W0, s, psi, y, lr, 2, scale=scale, model=model, progress=False)
    w = torch.tensor(np.stack([a0, W0], 1).ravel(), requires_grad=True)
    A = torch.tensor(sc.fourier_nqf_structure(s, psi, scale))
    losses = []
    for _ in range(2):
        f = _torch_mlp(w, s, psi, scale) if model == "mlp" else torch.einsum("i,nij,j->n", w, A, w)
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
    _, psi = sc.fourier_features(M, P)
    k = np.arange(1, P + 1)
    s, b = k**-0.5, k**-1.5
    y = c * psi @ b
    a0 = W0 = np.full(P, 1e-3)  # z- = 0 exactly, z+ = 2e-6
    r, C = 4 * c * s * b, 2 * s**2
    errs = []
    for lr in (0.05, 0.025):
        n = int(round(2000 / lr))
        t, L, _ = sc.train_fourier(a0, W0, s, psi, y, lr, n, model="nqf", progress=False)
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
    _, L = sc.train_tanh_mlp(u0, v0, x, y, lr, 2, progress=False)
    u = torch.tensor(u0, requires_grad=True)
    v = torch.tensor(v0, requires_grad=True)
    want = []
    for _ in range(2):
        loss = ((torch.tanh(torch.outer(torch.tensor(x), u)) @ v - torch.tensor(y)) ** 2).mean()
        want.append(loss.item())
        gu, gv = torch.autograd.grad(loss, (u, v))
        u = (u - lr * gu).detach().requires_grad_(True)
        v = (v - lr * gv).detach().requires_grad_(True)
    np.testing.assert_allclose(L, want, rtol=1e-12)


def test_train_tanh_mlp_bad():
    with pytest.raises(ValueError, match="shape"):
        sc.train_tanh_mlp(np.ones(3), np.ones(2), np.ones(4), np.ones(4), 0.1, 2)
    with pytest.raises(ValueError, match="shape"):
        sc.train_tanh_mlp(np.ones(3), np.ones(3), np.ones(4), np.ones(5), 0.1, 2)
    with pytest.raises(TypeError, match="n_steps must be a positive integer"):
        sc.train_tanh_mlp(np.ones(3), np.ones(3), np.ones(4), np.ones(4), 0.1, True)
