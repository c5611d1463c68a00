"""The power-law runs of chapter 7 against hand-written closed forms, an
independent route, or the paper's exponents; and their bad input."""

import numpy as np
import pytest

from nqf_lite.dynamics import scaling as sc
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments import power_laws as px


def _switch_on(r, C, z0):
    """Half-saturation time of the logistic, written out (Eq. 157)."""
    zinf = r / C
    return np.log((zinf - z0) / z0) / r


def _loss(t, r, C, z0):
    """sum_k V_k (1 - z_k/z_k^inf)^2 along the logistic, written out."""
    e = np.exp(np.outer(t, r))
    z = z0 * e / (1 + C * z0 * (e - 1) / r)
    return ((r**2 / (8 * C)) * (1 - z / (r / C)) ** 2).sum(axis=1)


def _slope(t, L, lo, hi):
    inside = (t >= lo) & (t <= hi)
    return np.polyfit(np.log(t[inside]), np.log(L[inside]), 1)[0]


def test_local_exponents_follow_theorem_9_on_the_switch_on_windows():
    a1, a2, m = 2.0, 0.8, 300
    pm = sc.powerlaw_modes(m, a1, a2)
    k = np.arange(1, m + 1)
    z0 = 1e-9 * k ** -(a1 - a2)  # aligned: no finite-eps correction
    edges = [3, 10, 40]
    exps, wins = px.local_exponents(pm.r, pm.C, z0, edges)
    ts = _switch_on(pm.r, pm.C, z0)
    assert np.allclose(wins, [(ts[2], ts[9]), (ts[9], ts[39])], rtol=1e-12)
    # Theorem 9: (alpha1 - 1)/alpha2, to the 10 % of windows of 0.5 decades
    assert np.allclose(exps, (a1 - 1) / a2, rtol=0.1)
    # a hand least-squares fit of the hand loss on the same windows
    t = np.geomspace(ts[0] / 10, ts[60], 4000)
    hand = [-_slope(t, _loss(t, pm.r, pm.C, z0), *w) for w in wins]
    assert np.allclose(exps, hand, atol=0.01)


def test_local_exponents_refuse_bad_edges():
    pm = sc.powerlaw_modes(100, 2.0, 0.8)
    with pytest.raises(ValueError, match="edges"):
        px.local_exponents(pm.r, pm.C, np.full(100, 1e-6), [10, 5])
    with pytest.raises(ValueError, match="edges"):
        px.local_exponents(pm.r, pm.C, np.full(100, 1e-6), [3, 80])


def test_exponent_shifts_vanish_for_the_aligned_start_and_follow_eq_292():
    a1, a2, m = 2.0, 0.8, 200
    eps = np.array([1e-6, 1e-12, 1e-24])
    ones = [np.ones(m)]
    # c = 1, beta0 = alpha1 - alpha2 is the aligned start itself
    with np.errstate(divide="ignore"):  # its rates: logs of exact zeros
        aligned = px.exponent_shifts(a1, a2, a1 - a2, eps, ones, m=m)
    assert np.abs(aligned.shift).max() < 1e-9
    # the uniform start: Eq. 292 mode by mode, written out
    c = np.random.default_rng(1).uniform(0.5, 2.0, m)
    res = px.exponent_shifts(a1, a2, 0.0, eps, [c], m=m)
    pm = sc.powerlaw_modes(m, a1, a2)
    for i, e in enumerate(eps):
        ln = np.log(pm.r / pm.C / (e * c))
        keff = (a1 - 1) / (a2 - (a1 - a2) / ln)
        want = keff[3:50].mean() - (a1 - 1) / a2
        assert res.shift_eq292[0, i] == pytest.approx(want, rel=1e-12)
    # a uniform start is steeper, by a shift that falls like 1/ln(1/eps)
    assert np.all(res.shift > 0) and np.all(res.shift_eq292 > 0)
    assert res.q_eq292[0] == pytest.approx(1.0, abs=0.3)
    assert res.shift.shape == (1, 3) and res.q.shape == (1,)


def test_exponent_shifts_refuse_bad_input():
    with pytest.raises(ValueError, match="eps"):
        px.exponent_shifts(2.0, 0.8, 0.0, [1e-6], [np.ones(100)], m=100)
    with pytest.raises(ValueError, match="window"):
        px.exponent_shifts(
            2.0, 0.8, 0.0, [1e-6, 1e-9], [np.ones(100)], m=100, window=(3, 99)
        )


def test_theory_exponents_match_the_hand_loss_from_each_start():
    pm = sc.powerlaw_modes(80, 2.0, 0.8)
    z0 = np.random.default_rng(2).uniform(0.5, 2.0, (3, 80)) * 1e-8
    out = px.theory_exponents(
        pm.r, pm.C, z0, (2, 30), span=(0, 40), margin=(10, 1.1), n_grid=500
    )
    ts = np.array([_switch_on(pm.r, pm.C, z) for z in z0])
    assert np.allclose(out.ts, ts, rtol=1e-12)
    assert out.t[0] == pytest.approx(ts[:, 0].min() / 10, rel=1e-12)
    assert out.t[-1] == pytest.approx(ts[:, 40].max() * 1.1, rel=1e-12)
    for j, z in enumerate(z0):
        hand = _loss(out.t, pm.r, pm.C, z)
        assert np.allclose(out.E[:, j], hand, rtol=1e-9)
        fine = np.geomspace(out.t[0], out.t[-1], 5000)
        want = -_slope(fine, _loss(fine, pm.r, pm.C, z), *ts[j, [2, 30]])
        assert out.fits[j] == pytest.approx(want, abs=0.01)


def test_theory_exponents_refuse_bad_windows_and_margins():
    pm = sc.powerlaw_modes(20, 2.0, 0.8)
    z0 = np.full((2, 20), 1e-6)
    with pytest.raises(ValueError, match="window"):
        px.theory_exponents(pm.r, pm.C, z0, (2, 20))
    with pytest.raises(ValueError, match="margin"):
        px.theory_exponents(pm.r, pm.C, z0, (2, 10), margin=(0.5, 1.0))


def test_train_to_switch_on_runs_past_the_switch_on_from_the_target_loss():
    M, P, c, lr = 64, 6, 0.1, 0.5
    _, psi = fo.fourier_features(M, P)
    kk = np.arange(1, P + 1, dtype=float)
    s, b = kk**-0.5, kk**-1.5
    a0, W0 = 1e-4 * np.random.default_rng(4).standard_normal((2, 2, P))
    t, L = px.train_to_switch_on(a0, W0, s, b, psi, lr, c=c, last=3)
    # Eq. 297: r_k = 4 c s_k b_k, C_kk = 2 s_k^2, from z_k(0) = (a + W)^2/2
    ts = _switch_on(4 * c * s * b, 2 * s**2, (a0 + W0) ** 2 / 2)
    assert t.size == int(np.ceil(1.05 * ts[:, 3].max() / lr))
    # a tiny start predicts almost nothing: the target's power, c^2 sum b^2
    assert np.allclose(L[0], c**2 * (b**2).sum(), rtol=1e-6)
    assert np.all(L[-1] < L[0])


def test_train_to_switch_on_refuses_a_short_run():
    _, psi = fo.fourier_features(16, 3)
    one = np.ones((1, 3))
    with pytest.raises(ValueError, match="overrun"):
        px.train_to_switch_on(
            1e-3 * one, one, one[0], one[0], psi, 0.1, overrun=0.5
        )


def test_net_vs_nqf_on_power_laws_a_constant_factor_apart():
    t = np.concatenate([[0.0], np.geomspace(1.0, 1e4, 300)])
    L_nqf = np.stack([(1 + t) ** -1.5, (1 + t) ** -0.5], axis=1)
    L_net = L_nqf * np.exp([0.1, 0.2])
    ts = np.tile(np.geomspace(10.0, 1e3, 15), (2, 1))
    out = px.net_vs_nqf(t, L_net, L_nqf, ts)
    assert np.allclose(out["fit_net"], out["fit_nqf"], rtol=1e-12)
    assert np.allclose(out["fit_net"], [1.5, 0.5], rtol=0.02)
    assert np.allclose(out["gap"], [0.1, 0.2], rtol=1e-12)
    assert np.allclose(out["gap_mean"], [0.1, 0.2], rtol=1e-12)
    with pytest.raises(ValueError, match="L_nqf"):
        px.net_vs_nqf(t, L_net, L_nqf[:, :1], ts)


def test_fourier_power_law_windows_exponents_and_bad_input():
    theta, beta, P, z0 = 0.5, 1.5, 256, 1e-8
    out = px.fourier_power_law(theta, beta, P, 0.1, z0, window=(4, 60))
    kk = np.arange(1, P + 1, dtype=float)
    s, b = kk**-theta, kk**-beta
    ts = _switch_on(4 * 0.1 * s * b, 2 * s**2, z0)
    assert out.window == pytest.approx((ts[4], ts[60]), rel=1e-12)
    assert out.pred == pytest.approx((2 * beta - 1) / (theta + beta))
    # App. C, Eq. 292: k_eff above the eps -> 0 exponent, the fit near k_eff
    assert out.keff > out.pred
    assert -out.fit.slope == pytest.approx(out.keff, rel=0.04)
    with pytest.raises(ValueError, match="window"):
        px.fourier_power_law(theta, beta, 50, 0.1, z0, window=(4, 60))


def test_eq295_drift_divides_out_the_window_and_follows_eq_295():
    a1, a2, m = 2.0, 0.8, 300
    pm = sc.powerlaw_modes(m, a1, a2)
    k = np.arange(1, m + 1)
    edges, eps = [3, 10, 40], [1e-6, 1e-12]
    drift = px.eq295_drift(pm.r, pm.C, a1, a2, eps, edges)
    assert list(drift) == eps
    for e in eps:
        # by hand: both starts' exponents on their own switch-on windows
        expo = []
        for z0 in (np.full(m, e), e * k ** -(a1 - a2)):
            ts = _switch_on(pm.r, pm.C, z0)
            t = np.geomspace(ts[0] / 10, ts[60], 4000)
            zinf = pm.r / pm.C  # the logistic, without overflow
            z = zinf / (1 + (zinf / z0 - 1) * np.exp(-np.outer(t, pm.r)))
            L = ((pm.r**2 / (8 * pm.C)) * (1 - z / zinf) ** 2).sum(axis=1)
            wins = [(ts[2], ts[9]), (ts[9], ts[39])]
            expo.append(np.array([-_slope(t, L, *w) for w in wins]))
        ts = _switch_on(pm.r, pm.C, np.full(m, e))
        assert np.allclose(drift[e]["t"], np.sqrt(ts[[2, 9]] * ts[[9, 39]]))
        hand = expo[0] / expo[1] * (a1 - 1) / a2
        assert np.allclose(drift[e]["measured"], hand, atol=0.02)
        ell = np.log(1 / e)
        assert drift[e]["order"] == pytest.approx((np.log(ell) / ell) ** 2)
        # Eq. 295 to its order; the exponent rises with time
        assert drift[e]["err"] < 1.5 * drift[e]["order"]
        assert drift[e]["measured"][1] > drift[e]["measured"][0]
    with pytest.raises(ValueError, match="eps"):
        px.eq295_drift(pm.r, pm.C, a1, a2, [1e-6, -1.0], edges)
    with pytest.raises(ValueError, match="edges"):
        px.eq295_drift(pm.r, pm.C, a1, a2, eps, [10, 5])


def test_start_exponent_matches_the_hand_loss_and_eq_292():
    a1, a2, m, eps = 2.0, 0.8, 1000, 1e-6
    pm = sc.powerlaw_modes(m, a1, a2)
    k = np.arange(1, m + 1)
    t = np.geomspace(0.1, 3e4, 3000)
    for b0 in (a1 - a2, 0.0):
        out = px.start_exponent(pm.r, pm.C, a1, a2, eps, b0, t, (2, 49))
        z0 = eps * k**-b0
        zinf = pm.r / pm.C  # the logistic, without overflow
        z = zinf / (1 + (zinf / z0 - 1) * np.exp(-np.outer(t, pm.r)))
        L = ((pm.r**2 / (8 * pm.C)) * (1 - z / zinf) ** 2).sum(axis=1)
        assert np.allclose(out["E"], L, rtol=1e-9, atol=1e-15)
        ts = _switch_on(pm.r, pm.C, z0)
        assert np.allclose(out["window"], (ts[2], ts[49]), rtol=1e-12)
        hand = _slope(t, L, ts[2], ts[49])
        assert out["fit"].slope == pytest.approx(hand, abs=0.01)
        keff = (a1 - 1) / (a2 - (a1 - a2 - b0) / np.log(zinf / z0))
        assert out["keff"] == pytest.approx(keff[2:50].mean(), rel=1e-12)
    # Theorem 9: the aligned start's exponent is (a1 - 1)/a2
    out = px.start_exponent(pm.r, pm.C, a1, a2, eps, a1 - a2, t, (2, 49))
    assert -out["fit"].slope == pytest.approx((a1 - 1) / a2, rel=0.04)
    with pytest.raises(ValueError, match="window"):
        px.start_exponent(pm.r, pm.C, a1, a2, eps, 0.0, t, (40, 2))
    with pytest.raises(ValueError, match="eps"):
        px.start_exponent(pm.r, pm.C, a1, a2, -eps, 0.0, t)
