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
    _, z = sc.onehot_quadratic_gd(a, y, W0, lr, 1)
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
    t, z = sc.onehot_quadratic_gd(pm.a, pm.y, np.sqrt(z0)[:, None], 1e-3, 20000, every=1000)
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
