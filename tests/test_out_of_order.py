"""out_of_order_probability against an independent quadrature (this book's
chi^2_d start), and its errors."""

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from nqf_lite.design.corrections import order_tally, out_of_order_probability

R, C, LR = np.array([1.0, 0.85]), np.array([1.0, 2.0]), 0.2


def _time(z0, r, c):
    # GD half-saturation time written out (Eq. 158 with the GD rate)
    rate = 2 / LR * np.log1p(LR * r / 2)
    return np.log((r / c - z0) / z0) / rate


def _exact(eps, d):
    """P(t_2 <= t_1) by quadrature over z_1, with z_2's threshold solved."""
    s = eps / d

    def integrand(u):  # u ~ chi^2_d, z_1 = s u
        t1 = _time(s * u, R[0], C[0])
        # t_2 decreases in z_2: t_2 <= t_1 iff z_2 >= z*
        zstar = optimize.brentq(
            lambda z: _time(z, R[1], C[1]) - t1, 1e-300, R[1] / C[1] / 2
        )
        return stats.chi2.pdf(u, d) * stats.chi2.sf(zstar / s, d)

    return integrate.quad(integrand, 0, np.inf, limit=200)[0]


@pytest.mark.parametrize("d", [2, 4, 16])
def test_matches_quadrature(d):
    eps, n = 1e-6, 400_000
    exact = _exact(eps, d)
    assert 1e-3 < exact < 0.5  # a case where the order really flips
    p, upper = out_of_order_probability(R, C, eps, LR, d, 7, n_draws=n)
    se = np.sqrt(exact * (1 - exact) / n)
    assert abs(p - exact) < 5 * se
    assert p < upper < p + 6 * se


def test_the_width_matters():
    # a wrong scale (eps instead of eps/d per neuron) would move p
    p4 = out_of_order_probability(R, C, 1e-6, LR, 4, 1, n_draws=100_000)[0]
    p64 = out_of_order_probability(R, C, 1e-6, LR, 64, 1, n_draws=100_000)
    assert p4 > 3 * p64[0]


def test_well_separated_modes_never_flip_and_the_bound_is_rule_of_three():
    p, upper = out_of_order_probability(
        [1.0, 0.3], [1.0, 1.0], 1e-6, LR, 64, 0, n_draws=10_000, level=0.95
    )
    assert p == 0.0
    assert upper == pytest.approx(1 - 0.05 ** (1 / 10_000), rel=1e-9)


def test_same_generator_same_answer():
    a = out_of_order_probability(R, C, 1e-6, LR, 4, 3, n_draws=1000)
    b = out_of_order_probability(
        R, C, 1e-6, LR, 4, np.random.default_rng(3), n_draws=1000
    )
    assert a == b


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(r=[1.0], C=[1.0]), ValueError, "at least 2 modes"),
        (dict(r=[1.0, -0.5]), ValueError, "r and C must be > 0"),
        (dict(eps=0.3), ValueError, "eps must be below half saturation"),
        (dict(lr=30.0), ValueError, "lr"),
        (dict(d=0), ValueError, "d"),
        (dict(rng=None), TypeError, "rng"),
        (dict(rng="x"), TypeError, "rng"),
        (dict(n_draws=0), ValueError, "n_draws"),
        (dict(level=1.5), ValueError, "level"),
        (dict(C=[1.0, 1.0, 1.0]), ValueError, "r and C"),
    ],
)
def test_bad_input(kwargs, err, match):
    args = dict(r=R, C=C, eps=1e-6, lr=LR, d=4, rng=0) | kwargs
    with pytest.raises(err, match=match):
        out_of_order_probability(**args)


# --------------------------------------------------------------- order_tally
def test_order_tally_counts_by_hand():
    times = np.array(
        [
            [1.0, 2.0, 3.0],  # in order, own order the same
            [1.0, 3.0, 2.0],  # out of order, as its own start says
            [2.0, 1.0, 3.0],  # out of order, its own start says otherwise
            [1.0, np.inf, 3.0],  # never switched on: out of every order
        ]
    )
    own = np.array(
        [[1.1, 2.1, 3.1], [1.0, 2.9, 2.1], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    )
    tally = order_tally(times, own, 0.0, 0.01)
    assert tally == (3, 0, 2)


def test_order_tally_bound_is_the_binomial_quantile():
    times = np.tile([1.0, 2.0], (1000, 1))
    assert order_tally(times, times, 1e-3, 0.01).bound == 4  # ppf(.99)
    assert order_tally(times, times, 0.0, 0.01).bound == 0
    assert order_tally(times, times, 0.5, 0.5).bound == 500


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.ones(3), np.ones(3), 0.1, 0.1), "times must have shape"),
        ((np.ones((2, 3)), np.ones((2, 2)), 0.1, 0.1), "own_times"),
        ((np.ones((2, 3)), np.ones((2, 3)), 1.5, 0.1), "p_upper"),
        ((np.ones((2, 3)), np.ones((2, 3)), 0.1, 0.0), "alpha"),
    ],
)
def test_order_tally_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        order_tally(*args)
