"""The network runs of chapter 7 against separate runs, hand-written closed
forms and the paper's exponents; and their bad input."""

import time

import numpy as np
import pytest
import torch
from scipy.special import digamma

from nqf_lite.dynamics import scaling as sc
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments import power_law_networks as pn


def _slope(t, L, lo, hi):
    """Least-squares slope of ln L against ln t at 100 points evenly spaced
    in ln t on [lo, hi], ln L interpolated linearly."""
    lt = np.linspace(np.log(lo), np.log(hi), 100)
    return np.polyfit(lt, np.interp(lt, np.log(t), np.log(L)), 1)[0]


def _switch_on(r, C, z0):
    """Half-saturation time of the logistic, written out (Eq. 157)."""
    return np.log((r / C - z0) / z0) / r


def test_onehot_ensemble_equals_separate_runs():
    m, d, n, lr = 30, 3, 3, 0.2
    pm = sc.powerlaw_modes(m, 1.8, 1.2)
    W0 = 1e-3 * np.random.default_rng(3).standard_normal((n * m, d))
    t, L = pn.onehot_ensemble(pm.a, pm.y, W0, lr, 400, n, every=10)
    assert L.shape == (t.size, n)
    for j in range(n):
        W_j = W0[j * m : (j + 1) * m]
        t_j, z_j = sc.onehot_quadratic_gd(pm.a, pm.y, W_j, lr, 400, every=10)
        assert np.allclose(t, t_j, rtol=1e-12)
        want = ((pm.a * z_j - pm.y) ** 2).sum(axis=1)
        assert np.allclose(L[:, j], want, rtol=1e-9)


def test_onehot_ensemble_refuses_an_empty_ensemble():
    pm = sc.powerlaw_modes(5, 1.8, 1.2)
    with pytest.raises(ValueError, match="n_ens"):
        pn.onehot_ensemble(pm.a, pm.y, np.ones((5, 2)), 0.1, 10, 0)


def _onehot_case():
    g1, g2, m, d, n, sigma, lr = 0.9, 1.2, 80, 3, 2, 1e-3, 0.2
    gen = np.random.default_rng(5)
    W0 = sigma * gen.standard_normal((n * m, d))
    draws = sigma**2 * gen.chisquare(d, (4, m))
    args = (g1, g2, W0, draws, lr, n, sigma)
    return args, pn.onehot_power_law(*args, window=(2, 20))


def test_onehot_power_law_fits_each_run_and_follows_its_own_theory():
    (g1, g2, W0, draws, lr, n, sigma), run = _onehot_case()
    m, d = 80, 3
    pm = sc.powerlaw_modes(m, 2 * g1, g2)
    z0 = (W0**2).sum(axis=1).reshape(n, m)
    ts = _switch_on(pm.r, pm.C, z0)
    assert np.allclose(run.ts, ts, rtol=1e-10)
    assert run.n_steps == int(1.3 * ts[:, 20].max() / lr)
    for j in range(n):  # each run alone, fitted by hand on its own window
        W_j = W0[j * m : (j + 1) * m]
        t_j, z_j = sc.onehot_quadratic_gd(
            pm.a, pm.y, W_j, lr, run.n_steps, every=10
        )
        L_j = ((pm.a * z_j - pm.y) ** 2).sum(axis=1)
        hand = -_slope(t_j[1:], L_j[1:], ts[j, 2], ts[j, 20])
        assert run.fits[j] == pytest.approx(hand, abs=1e-6)
    # Theorem 6: each run follows the exact theory from its own start
    assert np.abs(run.fits - run.fits_own).max() < 0.02
    assert run.fits_draws.shape == (4,)
    # Eq. 49 and Eq. 292 at the geometric mean of sigma^2 chi^2_3
    assert run.pred == pytest.approx((2 * g1 - 1) / g2, rel=1e-12)
    eps = sigma**2 * np.exp(np.mean(np.log(np.random.default_rng(0).chisquare(
        d, 2_000_000))))  # fmt: skip
    log_ratio = np.log(pm.r / pm.C / eps)
    keff = (2 * g1 - 1) / (g2 - (2 * g1 - g2) / log_ratio)
    assert run.keff == pytest.approx(keff[2:21].mean(), rel=1e-3)
    # the uniform start's exact loss, the logistic written out
    eps = sigma**2 * np.exp(digamma(d / 2) + np.log(2))
    zinf = pm.r / pm.C
    z = zinf / (1 + (zinf / eps - 1) * np.exp(-np.outer(run.t_u, pm.r)))
    E_u = ((pm.a * z - pm.y) ** 2).sum(axis=1)
    assert np.allclose(run.E_u, E_u, rtol=1e-9)
    ts_u = _switch_on(pm.r, pm.C, eps)
    fit_u = -_slope(run.t_u, E_u, ts_u[2], ts_u[20])
    assert run.window_err == pytest.approx(abs(fit_u - run.keff), abs=1e-9)


def test_onehot_power_law_refuses_bad_windows_and_draws():
    (g1, g2, W0, draws, lr, n, sigma), _ = _onehot_case()
    with pytest.raises(ValueError, match="window"):
        pn.onehot_power_law(g1, g2, W0, draws, lr, n, sigma, window=(5, 80))
    with pytest.raises(ValueError, match="z0_draws"):
        pn.onehot_power_law(g1, g2, W0, draws[:, :10], lr, n, sigma)


def _fourier_case(thetas=(0.5,)):
    M, P, beta, c, sigma = 64, 16, 1.5, 0.1, 1e-4
    _, psi = fo.fourier_features(M, P)
    gen = np.random.default_rng(7)
    a0, W0 = sigma * gen.standard_normal((2, 2, P))
    draws = sigma**2 * gen.chisquare(1, (6, P))
    eps = sigma**2 * np.exp(-1.2703628454614782)  # psi(1/2) + ln 2
    args = (thetas, a0, W0, draws, eps, beta, psi, (c, 1.0), (1.0, P**-0.5))
    return args


def test_fourier_exponent_runs_track_their_nqf_and_the_closed_forms():
    args = _fourier_case()
    thetas, a0, W0, draws, eps, beta, psi, (c, _), _ = args
    start = time.perf_counter()
    runs = pn.fourier_exponent_runs(*args)
    assert time.perf_counter() - start < 60
    R, th = runs[0.5], 0.5
    k = np.arange(1, 17.0)
    s, b = k**-th, k**-beta
    r, C = 4 * c * s * b, 2 * s**2  # Eq. 297, written out (kappa = 1)
    ts = _switch_on(r, C, (a0 + W0) ** 2 / 2)
    assert np.allclose(R["ts"], ts, rtol=1e-10)
    assert R["t"][-1] >= ts[:, 14].max() - 0.5 * 4**th
    # the network follows its NQF, and both the exact theory
    assert R["gap_mean"].max() < 0.02
    assert np.abs(R["fit_net"] - R["fit_nqf"]).max() < 0.01
    assert np.abs(R["fit_net"] - R["fit_th"]).max() < 0.01
    # the control, the paper's amplitudes: the units saturate
    P_ = R["paper"]
    assert P_["gap_mean"].min() > 0.02
    assert np.abs(P_["fit_net"] - P_["fit_th"]).min() > 0.01
    # Eq. 298 and the hand formulas of the partner modes and GD's step
    assert R["pred"] == pytest.approx((2 * beta - 1) / (th + beta))
    zminus = ((a0 - W0) ** 2 / 2 / (r / C)).max()
    assert R["zminus"] == pytest.approx(zminus, rel=1e-12)
    x = 0.5 * 4**th * r[2:15]
    disc = (1 - np.log((1 + x / 2) ** 2) / x).max()
    assert R["disc"] == pytest.approx(disc, rel=1e-9)
    keff = (2 * beta - 1) / (th + beta - (beta - th) / np.log(r / C / eps))
    assert R["keff"] == pytest.approx(keff[2:15].mean(), rel=1e-12)
    assert R["fit_draws"].shape == (6,) and R["band"].shape[0] == 3
    assert set(R["paper"]) == {"fit_th", "fit_net", "fit_nqf", "gap",
                               "gap_mean"}  # fmt: skip


def test_fourier_exponent_runs_refuse_mismatched_weights():
    thetas, a0, W0, draws, eps, beta, psi, amp, ctrl = _fourier_case()
    with pytest.raises(ValueError, match="W0"):
        pn.fourier_exponent_runs(
            thetas, a0, W0[:, :8], draws, eps, beta, psi, amp, ctrl
        )
    with pytest.raises(ValueError, match="eps_typ"):
        pn.fourier_exponent_runs(
            thetas, a0, W0, draws, -1.0, beta, psi, amp, ctrl
        )


def _ntk_drift_by_differences(d, alpha_A, alpha_B, seed, m=6, p=4, n_w=16):
    """||dTheta/dt|| from the NTK of autograd, differenced along -dL/dW."""
    g_ = np.random.default_rng(seed)
    sym = lambda X: (X + np.swapaxes(X, -1, -2)) / 2  # noqa: E731
    g = torch.tensor(g_.standard_normal((m, p)) * d**-0.5)
    B = torch.tensor(sym(g_.standard_normal((m, p, p))) * d**-alpha_B)
    A = torch.tensor(sym(g_.standard_normal((m, p, p))) * d**-alpha_A)
    y = torch.tensor(g_.standard_normal(m))
    Ws = torch.tensor(g_.standard_normal((n_w, d, p)) / np.sqrt(d))

    def f(W):  # one draw, the NQF of the paper's Eq. 20
        mu, M = W.sum(0), W.T @ W
        return (
            g @ mu
            + torch.einsum("i,nij,j->n", mu, B, mu)
            + (torch.einsum("ij,nji->n", M, A))
        )

    def ntk(W):
        J = torch.autograd.functional.jacobian(f, W).reshape(m, -1)
        return J @ J.T

    out = []
    for W in Ws:
        loss = lambda W: ((f(W) - y) ** 2).mean()  # noqa: E731
        v = -torch.autograd.functional.jacobian(loss, W)
        h = 1e-4
        dtheta = (ntk(W + h * v) - ntk(W - h * v)) / (2 * h)
        out.append((dtheta**2).sum())
    return float(torch.sqrt(torch.stack(out).mean()))


def test_ntk_drift_equals_a_finite_difference_of_the_autograd_ntk():
    for d, aA, aB in ((8, 2.0, 1.5), (16, 0.0, 1.5)):
        got = pn.ntk_drift(d, aA, aB, seed=5)
        assert got == pytest.approx(
            _ntk_drift_by_differences(d, aA, aB, 5), rel=1e-6
        )


def test_ntk_drift_grows_with_the_width_as_proposition_9_says():
    widths = np.array([64, 256, 1024, 4096])
    # max(1 - alpha_B, -alpha_A): the alpha_B branch, then the alpha_A branch
    for aA, aB, pred in ((2.0, 1.5, -0.5), (1.0, 2.5, -1.0)):
        drifts = [pn.ntk_drift(d, aA, aB, seed=7) for d in widths]
        slope = np.polyfit(np.log(widths), np.log(drifts), 1)[0]
        assert slope == pytest.approx(pred, abs=0.15)
    with pytest.raises(ValueError, match="d"):
        pn.ntk_drift(0, 2.0, 1.5, 7)
    with pytest.raises(TypeError, match="d"):
        pn.ntk_drift(64.5, 2.0, 1.5, 7)


def test_plain_mlp_control_follows_its_one_linear_mode():
    M, H, lr = 64, 32, 0.5
    x = np.arange(M) / M
    y = (
        0.1
        * np.sqrt(2)
        * np.sin(2 * np.pi * np.outer(x, [1.0, 2.0]))
        @ [
            1.0,
            0.35,
        ]
    )
    u0, v0 = 1e-4 * np.random.default_rng(6).standard_normal((2, 2, H))
    out = pn.plain_mlp_control(u0, v0, x, y, lr)
    # the one linear feature x: r = 4|<xy>|, C = 2<x^2>, V = <xy>^2/<x^2>
    xy, xx = np.mean(x * y), np.mean(x**2)
    assert out.V == pytest.approx(xy**2 / xx, rel=1e-12)
    assert out.L0 == pytest.approx(np.mean(y**2), rel=1e-12)
    # its mode from z(0) = (u + sign(<xy>) v)^2 / 2 reaches 90 % at t_90
    r, C = 4 * abs(xy), 2 * xx
    z0 = ((u0 + np.sign(xy) * v0) ** 2).sum(axis=1) / 2
    t90 = (np.log(9 * (r / C - z0) / z0) / r).max()
    assert out.t.size == int(3 * t90 / lr)
    # the flow's logistic, written out; GD's at the rate (2/lr) ln(1 + lr r/2)
    e = np.exp(r * out.t)[:, None]
    z = z0 * e / (1 + C * z0 * (e - 1) / r)
    assert np.allclose(
        out.L_flow, out.L0 - out.V * (1 - (1 - z * C / r) ** 2), rtol=1e-9
    )
    # the networks learn the linear part only, as the GD-rate mode predicts
    assert np.abs(out.L / out.L_gd - 1).max() < 0.004
    assert np.abs(out.L / out.L_flow - 1).max(axis=0).min() > 0.005
    with pytest.raises(ValueError, match="v0"):
        pn.plain_mlp_control(u0, v0[:, :3], x, y, lr)


def test_ntk_width_slopes_fit_the_autograd_ntk_across_widths():
    widths = [8.0, 16.0, 32.0]
    got = pn.ntk_width_slopes(widths, 2.0, 1.5, [3, 4])
    for seed, slope in zip([3, 4], got):
        drifts = [
            _ntk_drift_by_differences(int(d), 2.0, 1.5, seed) for d in widths
        ]
        hand = np.polyfit(np.log(widths), np.log(drifts), 1)[0]
        assert slope == pytest.approx(hand, abs=1e-5)
    with pytest.raises(ValueError, match="widths"):
        pn.ntk_width_slopes([64.0], 2.0, 1.5, [3])
