"""Tests for nqf_lite.dynamics.scaling (paper Sec. 6, App. A.17, App. C).

Expected values come from hand formulas, torch autograd, direct loss evaluation
or explicit logistic solutions written here, never from the function under
test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite.dynamics import scaling as sc

torch.set_default_dtype(torch.float64)


def logistic(t, r, c, z0):
    """Eq. 39 written out directly (r > 0)."""
    t = np.asarray(t)[:, None]
    return r * z0 / (c * z0 + (r - c * z0) * np.exp(-r * t))


# -----------------------------------------------------------------------------
# exponents
def test_scaling_exponent_values():
    assert sc.scaling_exponent(2.0, 0.8) == pytest.approx(1.25, abs=1e-15)
    assert sc.scaling_exponent(3.0, 1.5) == pytest.approx(4.0 / 3.0, abs=1e-15)
    # Fourier MLP: alpha1 = 2 beta, alpha2 = theta + beta
    assert sc.scaling_exponent(2 * 1.5, 1.0 + 1.5) == pytest.approx(
        0.8, abs=1e-15
    )


@pytest.mark.parametrize(
    "a1,a2", [(1.0, 1.0), (0.5, 1.0), (2.0, 0.0), (2.0, -1.0), (np.nan, 1.0)]
)
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


# -----------------------------------------------------------------------------
# effective slope
def _slope_by_finite_difference(a1, a2, eps, beta0, k):
    """-d ln E/d ln t along the continuum k (Eqs. 289-290), central
    differences."""

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


@pytest.mark.parametrize(
    "a1,a2,eps,beta0",
    [(3.0, 1.5, 1e-8, 0.0), (2.0, 0.8, 1e-6, 0.0), (2.0, 1.2, 1e-4, 0.3)],
)
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
    np.testing.assert_allclose(
        sc.effective_slope(a1, a2, r, C, eps), want, rtol=1e-13
    )
    # C as a diagonal matrix gives the same
    np.testing.assert_allclose(
        sc.effective_slope(a1, a2, r, np.diag(C), eps), want, rtol=1e-13
    )
    # steeper than (a1-1)/a2 when a1 > a2
    assert np.all(want > (a1 - 1) / a2)
    # eps -> 0: back to Eq. 46 (correction ~ 1/ln(1/eps))
    tiny = sc.effective_slope(a1, a2, r, C, 1e-300)
    assert np.all(np.abs(tiny - 4.0 / 3.0) < 4.0 / 3.0 * 1.5 / (690 - 10))
    # aligned init beta0 = a1 - a2 removes the correction exactly
    kk = np.arange(1, 30, dtype=float)
    rr = kk**-a2
    CC = rr**2 / (8 * kk**-a1)
    np.testing.assert_allclose(
        sc.effective_slope(a1, a2, rr, CC, 1e-6, beta0=a1 - a2),
        4.0 / 3.0,
        rtol=1e-13,
    )


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


# -----------------------------------------------------------------------------
# excess loss
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
    np.testing.assert_allclose(
        sc.excess_loss(z, pm.r, pm.C),
        ((1 - z / (pm.r / pm.C)) ** 2) @ V,
        rtol=1e-12,
    )


def test_excess_loss_bad():
    with pytest.raises(ValueError):
        sc.excess_loss(np.ones((2, 3)), [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="diagonal"):
        sc.excess_loss(np.ones((2, 2)), [1.0, 1.0], [[1.0, 0.5], [0.5, 1.0]])


# -----------------------------------------------------------------------------
# staircase
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


# -----------------------------------------------------------------------------
# slope fit
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
    # two regimes: slope -1 on [1, 10], slope -3 on [10, 100]; equal weight ->
    # about -2
    t = np.linspace(1.0, 100.0, 100000)
    L = np.where(t < 10, 1 / t, 100 / t**3)
    fit = sc.fit_loglog_slope(t, L, (1.0, 100.0), n=2001)
    assert fit.slope == pytest.approx(-2.0, abs=1e-2)


@pytest.mark.parametrize(
    "window,err",
    [
        ((0.5, 10.0), ValueError),
        ((10.0, 5.0), ValueError),
        ((1.0, 1e9), ValueError),
        ("ab", TypeError),
        (None, TypeError),
    ],
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


# -----------------------------------------------------------------------------
# Fig. 3 right data
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
    t, z = sc.onehot_quadratic_gd(
        pm.a, pm.y, np.sqrt(z0)[:, None], 1e-3, 20000, every=1000
    )
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
        sc.onehot_quadratic_gd(
            [1.0, 1.0], [1.0, 1.0], np.ones((2, 1)), -0.1, 3
        )
    with pytest.raises(ValueError, match="every"):
        sc.onehot_quadratic_gd(
            [1.0, 1.0], [1.0, 1.0], np.ones((2, 1)), 0.1, 3, every=0
        )


# -----------------------------------------------------------------------------
# numpy conventions, refusals
def test_exponents_and_effective_slope_broadcast():
    a = sc.scaling_exponent(np.array([2.0, 3.0]), 0.5)
    assert np.allclose(a, [2.0, 4.0], rtol=1e-15)
    assert np.ndim(sc.samplewise_exponent(1.0, 2.0)) == 0
    # the example: scalars in, scalar out; by hand (alpha1-1)/(alpha2 -
    # (alpha1-alpha2)/ln(r/(C eps)))
    k = sc.effective_slope(2.0, 0.8, 0.3, 0.05, 1e-6)
    assert np.ndim(k) == 0
    assert k == pytest.approx(
        1.0 / (0.8 - 1.2 / np.log(0.3 / (0.05 * 1e-6))), rel=1e-14
    )
    # an array of eps equals the elementwise calls
    eps = np.array([1e-3, 1e-6, 1e-12])
    assert np.array_equal(
        sc.effective_slope(2.0, 0.8, 0.3, 0.05, eps),
        np.array([sc.effective_slope(2.0, 0.8, 0.3, 0.05, e) for e in eps]),
    )


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: sc.effective_slope(2.0, 0.8, True, 0.05, 1e-6), "r"),
        (lambda: sc.effective_slope(2.0, 0.8, 0.3, 0.05, "1e-6"), "eps"),
        (lambda: sc.effective_slope(2.0, 0.8, 0.3, 0.05 + 0j, 1e-6), "C"),
        (lambda: sc.scaling_exponent(True, 1.0), "alpha1"),
        (lambda: sc.onehot_quadratic_gd([1.0], [1.0], [[0.1]], True, 3), "lr"),
        (
            lambda: sc.onehot_quadratic_gd([1.0], [1.0], [[0.1]], "0.1", 3),
            "lr",
        ),
        (lambda: sc.ntk_drift_exponent(0.5j, 1.0), "alpha_A"),
        (lambda: sc.effective_slope_at_time(1.0, 2.0, 0.8, "1e-6"), "eps"),
    ],
)
def test_bool_str_complex_are_type_errors(call, name):
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        call()


def test_effective_slope_refuses_eps_above_saturation():
    with pytest.raises(ValueError, match="eps"):
        sc.effective_slope(2.0, 0.8, 0.3, 0.05, 10.0)  # r/C = 6 < eps


# -----------------------------------------------------------------------------
# Eq. 295
def _keff_exact(t, alpha1, alpha2, eps, zeta1, zinf1):
    """Eq. 292 at the continuous mode index k(t) that solves Eq. 290 exactly
    (root finding)."""
    from scipy.optimize import brentq

    def resid(lnk):
        k = np.exp(lnk)
        zeta, zinf = zeta1 * k**-alpha2, zinf1 * k ** (alpha2 - alpha1)
        return zeta * t - np.log(zinf / eps)

    # modes k < k(t) have switched on (resid > 0); bracket the first crossing
    k = np.exp(
        brentq(
            resid,
            0.0,
            0.5 * np.log(zinf1 / eps) / (alpha1 - alpha2),
            xtol=1e-14,
        )
    )
    zinf = zinf1 * k ** (alpha2 - alpha1)
    return (alpha1 - 1) / (alpha2 - (alpha1 - alpha2) / np.log(zinf / eps))


def test_eq295_tracks_the_exact_slope_and_improves_as_eps_shrinks():
    alpha1, alpha2, zeta1, zinf1 = 2.0, 0.8, 1.0, 0.5
    errs = []
    for eps in (1e-8, 1e-30, 1e-100):
        L = np.log(1 / eps)
        ts = L * np.array(
            [2.0, 5.0, 20.0]
        )  # rescaled times tau = 2..20: modes k ~ 2..40
        approx = sc.effective_slope_at_time(
            ts, alpha1, alpha2, eps, zeta1, zinf1
        )
        exact = np.array(
            [_keff_exact(t, alpha1, alpha2, eps, zeta1, zinf1) for t in ts]
        )
        assert np.all(np.diff(approx) > 0) and np.all(
            np.diff(exact) > 0
        )  # increases with t
        errs.append(np.max(np.abs(approx - exact) / (exact - 1.25)))
    # relative error of the correction term: (ln ln(1/eps) / ln(1/eps)) order,
    # shrinking measured: 0.16, 0.025, 0.0068 (pinned: a cruder approximation
    # fails these)
    assert errs[0] < 0.2 and errs[1] < 0.03 and errs[2] < 0.008
    assert errs[0] > errs[1] > errs[2]
    # the eps -> 0 limit is Eq. 46
    assert sc.effective_slope_at_time(
        10.0, alpha1, alpha2, 1e-300
    ) == pytest.approx(1.25, rel=3e-3)


def test_eq295_by_hand_and_bad_input():
    alpha = (3.0 - 1.5) / 1.5
    L = np.log(1e10)
    expect = (2.0 / 1.5) * (
        1
        + alpha
        / (
            L
            + alpha * np.log(L)
            + np.log(2.0)
            - alpha * np.log(3.0)
            - alpha * np.log(7.0)
        )
    )
    assert sc.effective_slope_at_time(
        7.0, 3.0, 1.5, 1e-10, zeta1=3.0, zinf1=2.0
    ) == pytest.approx(expect, rel=1e-14)
    with pytest.raises(ValueError, match="eps"):
        sc.effective_slope_at_time(1.0, 2.0, 0.8, 2.0)
    with pytest.raises(ValueError, match=r"\bt\b"):
        sc.effective_slope_at_time(-1.0, 2.0, 0.8, 1e-3)
    with pytest.raises(ValueError, match="t too large"):
        sc.effective_slope_at_time(1e30, 3.0, 1.0, 1e-3)


# -----------------------------------------------------------------------------
# Prop. 9, alpha_B branch
def _ntk_drift(d, alpha_A, alpha_B, rng):
    """|d Theta(x, x)/dt| at t = 0 for an explicit width-d NQF, by central
    differences of W."""
    p = 3
    g = (
        5.0 * d**-0.5 * np.array([1.0, -0.5, 0.25])
    )  # g dominates u = g + 2 B mu already at d = 1e3
    B0 = np.array(
        [[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]]
    )  # positive definite
    B = d**-alpha_B * B0
    A = d**-alpha_A * np.diag([1.0, -1.0, 0.5])
    W = rng.standard_normal((p, d)) / np.sqrt(d)
    W += (np.array([0.6, -0.4, 0.3]) - W.sum(axis=1))[
        :, None
    ] / d  # mu(0) = fixed O(1) vector
    y = 3.0

    def f(W):
        mu = W.sum(axis=1)
        return g @ mu + mu @ B @ mu + np.sum((W @ W.T) * A)

    def grad(W):  # d f / d w_i = g + 2 B mu + 2 A w_i
        mu = W.sum(axis=1)
        return (g + 2 * B @ mu)[:, None] + 2 * A @ W

    def ntk(W):
        G = grad(W)
        return np.sum(G * G)

    flow = -2 * (f(W) - y) * grad(W)  # gradient flow of (f - y)^2
    h = 1e-4
    return abs(ntk(W + h * flow) - ntk(W - h * flow)) / (2 * h)


@pytest.mark.parametrize("alpha_B", [0.5, 0.75, 1.0, 1.5])
def test_prop9_alpha_B_branch_measured_on_explicit_networks(alpha_B):
    alpha_A = 3.0  # A negligible: the B branch d^{1 - alpha_B} dominates
    rng = np.random.default_rng(0)
    ds = np.array([1_000, 4_000, 16_000, 64_000])
    drift = np.array([_ntk_drift(d, alpha_A, alpha_B, rng) for d in ds])
    slope = np.polyfit(np.log(ds), np.log(drift), 1)[0]
    assert slope == pytest.approx(
        float(sc.ntk_drift_exponent(alpha_A, alpha_B)), abs=0.03
    )
    assert bool(sc.is_lazy(alpha_A, alpha_B)) == (alpha_B > 1)


def test_prop9_exponent_by_hand_and_bad_input():
    assert (
        sc.ntk_drift_exponent(0.0, 1.5) == 0.0
    )  # alpha_A = 0: feature learning
    assert np.allclose(
        sc.ntk_drift_exponent([0.5, 0.25], [2.0, 0.5]), [-0.5, 0.5]
    )
    assert (
        not sc.is_lazy(0.0, 2.0)
        and sc.is_lazy(0.5, 1.01)
        and not sc.is_lazy(0.5, 1.0)
    )
    with pytest.raises(ValueError, match="alpha_B"):
        sc.ntk_drift_exponent(0.0, 0.4)
    with pytest.raises(ValueError, match="alpha_A"):
        sc.ntk_drift_exponent(-0.1, 1.0)


def test_fit_loglog_slopes_fits_every_column_on_its_own_window():
    t = np.geomspace(1.0, 1e4, 400)
    # column 0: a pure t^-1.5; column 1: t^-0.5 before t = 100 and t^-2 after
    # (continuous)
    broken = np.where(t < 100, t**-0.5, 100**1.5 * t**-2.0)
    L = np.column_stack([t**-1.5, broken])
    common = sc.fit_loglog_slopes(t, L, (2.0, 50.0))
    np.testing.assert_allclose(common, [-1.5, -0.5], atol=1e-10)
    own = sc.fit_loglog_slopes(
        t, L, [(2.0, 50.0), (200.0, 5e3)]
    )  # each column its window
    np.testing.assert_allclose(own, [-1.5, -2.0], atol=1e-10)
    # the same numbers as one fit_loglog_slope call per column
    assert own[1] == sc.fit_loglog_slope(t, broken, (200.0, 5e3)).slope


def test_fit_loglog_slopes_bad_inputs():
    t, L = np.geomspace(1, 10, 5), np.ones((5, 3))
    with pytest.raises(ValueError, match="L"):
        sc.fit_loglog_slopes(t, np.ones(5), (2, 5))
    with pytest.raises(ValueError, match="windows"):
        sc.fit_loglog_slopes(t, L, (2, 5, 7))
    with pytest.raises(ValueError, match="windows"):
        sc.fit_loglog_slopes(t, L, [(2, 5), (2, 5)])  # 2 windows for 3 curves
    with pytest.raises(ValueError, match="window"):
        sc.fit_loglog_slopes(t, L, (5, 2))
    with pytest.raises(ValueError, match="L"):
        sc.fit_loglog_slopes(t, np.ones((4, 3)), (2, 5))  # T does not match t
