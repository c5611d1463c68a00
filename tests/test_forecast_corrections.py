"""GD and initialisation corrections to the switch-on time
(nqf_lite.design.corrections).

Expected values come from elsewhere: closed forms of the exponential
distribution (chi^2_2 / 2), a hand-iterated logistic map of Eq. 24, Monte Carlo
draws of chi^2_d, and the gradient-flow limit of nqf_lite.dynamics.solvable.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nqf_lite.design.corrections import (
    gd_growth_rate,
    gd_half_time_from,
    gd_switch_on_time,
    geometric_mean_abundance,
    log_chi2_kurtosis,
    log_chi2_mean,
    log_chi2_sd,
    spread_ratio,
)
from nqf_lite.book.seeding import rng
from nqf_lite.dynamics.solvable import switch_on_time_exact

EULER_GAMMA = 0.5772156649015329


def map_half_time(r, c, z0, lr):
    """Half-saturation time of z <- z (1 + lr (r - c z)/2)^2, linear
    interpolation in z (by hand)."""
    z0 = np.atleast_1d(np.asarray(z0, dtype=float))
    zinf, t = r / c, np.full(z0.shape, np.nan)
    z = z0.copy()
    for n in range(1, 10**6):
        new = z * (1 + lr * (r - c * z) / 2) ** 2
        hit = np.isnan(t) & (new >= zinf / 2)
        t[hit] = lr * (n - 1 + (zinf / 2 - z[hit]) / (new[hit] - z[hit]))
        z = new
        if not np.isnan(t).any():
            return t
    raise AssertionError("the map never reached half saturation")


def test_gd_growth_rate_by_hand_and_flow_limit():
    # r = 1, lr = 2: one step doubles the weight row, z grows 4x per unit of
    # time 2: rate ln 2
    assert gd_growth_rate(1.0, 2.0) == pytest.approx(math.log(2.0), abs=1e-14)
    assert gd_growth_rate(np.array([0.5, 1.0]), 1e-7) == pytest.approx(
        [0.5, 1.0], rel=1e-6
    )
    # second order: (2/lr) ln(1 + lr r/2) = r - lr r^2/4 + ...
    assert gd_growth_rate(1.0, 1e-3) == pytest.approx(1 - 1e-3 / 4, abs=1e-7)


def test_chi2_log_moments_match_the_exponential_distribution():
    # chi^2_2 / 2 is Exp(1): E ln = -gamma, Var ln = pi^2/6
    assert log_chi2_mean(2) == pytest.approx(-EULER_GAMMA, abs=1e-14)
    assert log_chi2_sd(2) == pytest.approx(math.pi / math.sqrt(6), abs=1e-14)
    # chi^2_4 / 4 is Gamma(2) / 2: E ln Gamma(2) = 1 - gamma
    assert log_chi2_mean(4) == pytest.approx(
        1 - EULER_GAMMA - math.log(2), abs=1e-14
    )
    # large d: E ln(chi^2_d/d) = -1/d + O(1/d^2), sd = sqrt(2/d) (1 + O(1/d))
    assert log_chi2_mean(1000) == pytest.approx(-1e-3, rel=2e-3)
    assert log_chi2_sd(1000) == pytest.approx(math.sqrt(2e-3), rel=2e-3)


def test_chi2_log_moments_match_monte_carlo():
    n, d = 200_000, 8
    logs = np.log(rng("test", "chi2").chisquare(d, size=n) / d)
    se = logs.std() / math.sqrt(n)
    assert abs(logs.mean() - log_chi2_mean(d)) <= 4 * se
    assert logs.std() == pytest.approx(log_chi2_sd(d), rel=0.01)
    assert geometric_mean_abundance(3.0, d) == pytest.approx(
        3.0 * math.exp(log_chi2_mean(d)), rel=1e-14
    )


@pytest.mark.parametrize("lr", [0.02, 0.08, 0.2])
@pytest.mark.parametrize("r, c", [(1.0, 1.0), (0.3, 1.0), (0.6, 8 / 3)])
def test_switch_on_time_matches_the_logistic_map(r, c, lr):
    eps = 1e-5
    exact = map_half_time(r, c, eps, lr)[0]
    predicted = gd_switch_on_time(r, c, eps, lr)
    # the formula is exact up to O(lr) steps: within a tenth of a step at h =
    # lr r/2 <= 0.1
    assert abs(predicted - exact) <= 0.1 * lr
    # the two corrections are each far larger than that
    flow = switch_on_time_exact(r, c, eps)
    assert predicted - flow > 0.2 * lr  # GD is later than the flow ...
    assert (
        abs(predicted + 0.75 * math.log(2) * lr - exact) > 0.3 * lr
    )  # ... and the map saturates early


def test_switch_on_time_averages_over_gaussian_starts():
    r, c, eps, lr, d, n = (
        np.array([1.0, 0.4]),
        np.array([1.0, 0.5]),
        1e-4,
        0.1,
        4,
        3000,
    )
    z0 = eps * rng("test", "starts").chisquare(d, size=(n, 2)) / d
    times = np.stack(
        [map_half_time(r[k], c[k], z0[:, k], lr) for k in range(2)], axis=1
    )
    se = times.std(axis=0, ddof=1) / math.sqrt(n)
    predicted = gd_switch_on_time(r, c, eps, lr, d=d)
    assert np.all(np.abs(times.mean(axis=0) - predicted) <= 4 * se)
    # the chi^2 bias is resolved: the prediction from the arithmetic mean eps
    # misses
    assert np.all(
        np.abs(times.mean(axis=0) - gd_switch_on_time(r, c, eps, lr)) > 8 * se
    )
    # and the spread is the predicted one
    assert times.std(axis=0, ddof=1) == pytest.approx(
        log_chi2_sd(d) / gd_growth_rate(r, lr), rel=0.05
    )


def test_switch_on_time_flow_limit_broadcasting_and_dead_modes():
    r, c = np.array([1.0, 0.5, 0.0, -0.2]), np.array([2.0, 1.0, 1.0, 1.0])
    out = gd_switch_on_time(r, c, 1e-6, 1e-9)
    assert out.shape == (4,)
    assert out[:2] == pytest.approx(
        switch_on_time_exact(r[:2], c[:2], 1e-6), rel=1e-7
    )
    assert np.all(np.isinf(out[2:]))
    assert gd_switch_on_time(np.array([1.0, 0.5]), 1.0, 1e-6, 0.1).shape == (
        2,
    )
    assert np.isinf(gd_switch_on_time(1.0, 0.0, 1e-6, 0.1))
    assert isinstance(gd_switch_on_time(1.0, 1.0, 1e-6, 0.1), float)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(lr=0.0), ValueError, "lr"),
        (dict(lr=-1.0), ValueError, "lr"),
        (dict(lr=2.5), ValueError, "lr"),
        (dict(eps=0.0), ValueError, "eps"),
        (dict(eps=0.6), ValueError, "half saturation"),
        (dict(d=0), ValueError, "d must be"),
        (dict(d=2.5), TypeError, "d must be"),
        (dict(C=-1.0), ValueError, "C must be"),
        (dict(C=np.ones(3)), ValueError, "broadcast"),
        (dict(r="1"), TypeError, "r must be"),
        (dict(r=np.nan), ValueError, "r contains"),
    ],
)
def test_switch_on_time_refuses_bad_input(kwargs, error, match):
    args = (
        dict(r=np.array([1.0, 0.5]), C=1.0, eps=1e-4, lr=0.1, d=None) | kwargs
    )
    with pytest.raises(error, match=match):
        gd_switch_on_time(**args)


def test_growth_rate_refuses_a_sign_flip_and_bad_width():
    with pytest.raises(ValueError, match="lr"):
        gd_growth_rate(-3.0, 1.0)
    with pytest.raises(ValueError, match="d must be"):
        log_chi2_mean(0)
    with pytest.raises(TypeError, match="d must be"):
        log_chi2_sd(True)


# ---------------------------------------------------------------- one run from
# its own start; the spread


def test_gd_half_time_from_matches_the_map_run_by_run():
    r, c, lr = np.array([1.0, 0.6, 0.3]), np.array([1.0, 2.0, 0.5]), 0.1
    z0 = np.array([[1e-6, 3e-7, 2e-5], [4e-6, 1e-8, 5e-6]])
    got = gd_half_time_from(r, c, z0, lr)
    want = np.array(
        [
            [map_half_time(r[k], c[k], z0[s, k], lr)[0] for k in range(3)]
            for s in range(2)
        ]
    )
    # the derivation drops O(h) steps, h = lr r / 2: lr * h in flow time
    assert np.all(np.abs(got - want) <= lr * (lr * r / 2))
    no_lead = gd_half_time_from(r, c, z0, lr, lead=False)
    np.testing.assert_allclose(
        no_lead - got, 0.75 * math.log(2) * lr, rtol=1e-12
    )
    # without the lead the map is missed by more than the dropped terms
    assert np.all(np.abs(no_lead - want) > lr * (lr * r / 2))
    assert gd_half_time_from(1.0, 1.0, 1e-6, 0.1).shape == ()


@pytest.mark.parametrize(
    "args, kwargs, exc, word",
    [
        ((1.0, 1.0, 0.0, 0.1), {}, ValueError, "z0"),
        ((1.0, 1.0, 0.6, 0.1), {}, ValueError, "z0"),
        ((-1.0, 1.0, 1e-6, 0.1), {}, ValueError, "r and C"),
        ((1.0, 0.0, 1e-6, 0.1), {}, ValueError, "r and C"),
        ((1.0, 1.0, 1e-6, 2.5), {}, ValueError, "lr"),
        (([1.0, 2.0], 1.0, [1e-6] * 3, 0.1), {}, ValueError, "broadcast"),
        ((1.0, 1.0, 1e-6, 0.1), {"lead": 1}, TypeError, "lead"),
        ((1.0, 1.0, np.nan, 0.1), {}, ValueError, "z0"),
    ],
)
def test_gd_half_time_from_bad_input(args, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        gd_half_time_from(*args, **kwargs)


def test_log_chi2_kurtosis():
    # ln chi^2_2 = ln 2 + ln Exp(1), a Gumbel variable: excess kurtosis 12/5
    assert log_chi2_kurtosis(2) == pytest.approx(3 + 12 / 5, rel=1e-12)
    # large d: ln chi^2_d is nearly normal
    assert log_chi2_kurtosis(10**6) == pytest.approx(3.0, abs=1e-4)
    draws = np.log(rng("test-fc", "kurt").chisquare(4, size=400_000))
    mc = np.mean((draws - draws.mean()) ** 4) / draws.var() ** 2
    assert log_chi2_kurtosis(4) == pytest.approx(mc, abs=0.05)


def test_spread_ratio_by_hand_and_its_error():
    t = np.array(
        [[1.0, 10.0], [3.0, 14.0], [2.0, 12.0]]
    )  # sample variances 1 and 4
    ratio, se = spread_ratio(t, [2.0, 1.0], kurtosis=3.0)
    assert ratio == pytest.approx(math.sqrt((1 / 4 + 4 / 1) / 2), rel=1e-14)
    assert se == pytest.approx(math.sqrt(2 / (4 * 3 * 2)), rel=1e-14)
    # the standard error describes the scatter of the ratio over ensembles of
    # normal draws
    g = rng("test-fc", "spread").standard_normal((400, 50, 2))
    ratios = [spread_ratio(x, [1.0, 1.0], 3.0)[0] for x in g]
    assert np.std(ratios) == pytest.approx(
        spread_ratio(g[0], [1.0, 1.0], 3.0)[1], rel=0.15
    )


@pytest.mark.parametrize(
    "times, sd, kurt, word",
    [
        ([[1.0, 2.0]], [1.0, 1.0], 3.0, "2 runs"),
        ([1.0, 2.0], [1.0], 3.0, "times"),
        ([[1.0, 2.0], [2.0, np.inf]], [1.0, 1.0], 3.0, "times"),
        ([[1.0, 2.0], [2.0, 3.0]], [1.0], 3.0, "shape"),
        ([[1.0, 2.0], [2.0, 3.0]], [1.0, 0.0], 3.0, "> 0"),
        ([[1.0, 2.0], [2.0, 3.0]], [1.0, 1.0], 0.5, "kurtosis"),
    ],
)
def test_spread_ratio_bad_input(times, sd, kurt, word):
    with pytest.raises(ValueError, match=word):
        spread_ratio(times, sd, kurt)
