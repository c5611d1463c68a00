"""Property-based tests (hypothesis) of the exact solutions in
nqf_lite.dynamics.solvable / scaling.

Every closed form is compared with an independent method: scipy's ``solve_ivp``
(DOP853, rtol 1e-12) on the differential equation the closed form claims to
solve. Tolerances are pinned: each comparison is followed by a check that a
solution perturbed at the level of the tolerance's next decade is *rejected*,
so loosening the comparison (or a small bug in a factor) makes a test fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from nqf_lite.dynamics import scaling as sc
from nqf_lite.dynamics import solvable as S

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
#: agreement required between a closed form and DOP853 at rtol = 1e-12
#: (relative)
RTOL = 1e-8

rates = st.floats(-2.0, 2.0, allow_nan=False).filter(lambda v: abs(v) > 1e-3)
couplings = st.floats(0.05, 3.0)
log_z0 = st.floats(-12.0, 0.0)  # z0 = 10**log_z0


def _ode(rhs, t, y0):
    sol = solve_ivp(
        rhs,
        (0.0, float(t[-1])),
        y0,
        method="DOP853",
        t_eval=t,
        rtol=1e-12,
        atol=1e-12,
    )
    assert sol.success
    return sol.y.T


def _log_ode(r, c, z0, t):
    """The logistic z' = z (r - c z) integrated in ln z (independent of the
    closed form)."""
    return np.exp(_ode(lambda _s, u: r - c * np.exp(u), t, np.log(z0)))


def _close(a, b, rtol):
    return bool(np.all(np.abs(a - b) <= rtol * np.abs(b)))


def _modes(n=st.integers(1, 4)):
    return n.flatmap(
        lambda k: st.tuples(
            st.lists(rates, min_size=k, max_size=k),
            st.lists(couplings, min_size=k, max_size=k),
            st.lists(log_z0, min_size=k, max_size=k),
        )
    )


@SETTINGS
@given(_modes(), st.floats(1.0, 15.0))
def test_feature_trajectory_solves_the_logistic(modes, T):
    r, c, lz = (np.array(v) for v in modes)
    z0 = 10.0**lz
    t = np.linspace(0.0, T, 7)
    exact = S.feature_trajectory(t, r, c, z0)
    ref = _log_ode(r, c, z0, t)
    assert _close(exact, ref, RTOL)
    # pinned: a 1e-6 relative error in the growth rates is visible at t = T
    # (|r| T >= 1e-3)
    wrong = S.feature_trajectory(t, r * (1 + 1e-5), c, z0)
    assert not _close(wrong, ref, RTOL)


@SETTINGS
@given(_modes(), st.floats(1.0, 10.0))
def test_projector_logistic_solves_theorem16(modes, T):
    gamma, kappa, lz = (np.array(v) for v in modes)
    z0 = 10.0**lz
    t = np.linspace(0.0, T, 6)
    got = S.projector_logistic(t, gamma, kappa, z0)
    ref = np.exp(
        _ode(lambda _s, u: 2 * (gamma - kappa * np.exp(u)), t, np.log(z0))
    )
    assert _close(got, ref, RTOL)


@SETTINGS
@given(_modes(), st.floats(0.5, 5.0))
def test_saxe_logistic_solves_eq284(modes, T):
    tau, c, lz = (np.array(v) for v in modes)
    rho0 = 10.0**lz
    t = np.linspace(0.0, T, 6)
    got = S.saxe_logistic(t, tau, c, rho0)
    ref = np.exp(
        _ode(lambda _s, u: 4 * (tau - c * np.exp(u)), t, np.log(rho0))
    )
    assert _close(got, ref, RTOL)


@SETTINGS
@given(
    st.integers(2, 4),
    st.integers(0, 2**31 - 1),
    st.floats(0.05, 1.0),
    st.floats(0.5, 4.0),
)
def test_isotropic_trajectory_solves_the_riccati_equation(p, seed, c, T):
    """Theorem 7 (Eq. 41) against DOP853 on M' = Y M + M Y - 8c M^2 (Eq. 143),
    generic Y and M0."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((p, p))
    Y = 0.5 * (X + X.T)
    G = rng.standard_normal((p, p))
    M0 = 0.1 * G @ G.T + 1e-3 * np.eye(p)
    t = np.linspace(0.0, T, 5)
    got = S.isotropic_trajectory(t, Y, c, M0)

    def rhs(_s, v):
        M = v.reshape(p, p)
        return (Y @ M + M @ Y - 8 * c * M @ M).ravel()

    ref = _ode(rhs, t, M0.ravel()).reshape(t.size, p, p)
    scale = np.abs(ref).max(axis=(1, 2))[:, None, None]
    assert np.all(np.abs(got - ref) <= 1e-8 * scale)
    # Eq. 42 on the eigenvalues when M0 commutes with Y
    g, Q = np.linalg.eigh(Y)
    z0 = np.abs(np.diag(Q.T @ M0 @ Q)) + 1e-3
    Mc = S.isotropic_trajectory(t, Y, c, Q @ np.diag(z0) @ Q.T)
    z = np.einsum("ik,tij,jk->tk", Q, Mc, Q)
    want = S.isotropic_logistic(t, g, c, z0)
    # the matrix solution is accurate relative to the largest mode: a decaying
    # mode far below it carries that absolute error, so the tolerance is
    # relative to the per-time maximum
    assert np.all(
        np.abs(z - want) <= 1e-9 * np.abs(want).max(axis=1, keepdims=True)
    )


@SETTINGS
@given(_modes(), st.floats(0.05, 0.95))
def test_switch_on_times_are_crossing_times_of_the_integrated_trajectory(
    modes, rho
):
    r, c, lz = (np.array(v) for v in modes)
    r = np.abs(r) + 0.05
    zinf = r / c
    z0 = np.minimum(10.0**lz, 0.5 * rho * zinf)  # start below rho * z_inf
    t_sw = S.switch_on_time_exact(r, c, z0, rho)
    for k in range(r.size):
        hit = lambda _s, u, k=k: u[0] - np.log(rho * zinf[k])  # noqa: E731
        hit.terminal = True
        sol = solve_ivp(
            lambda _s, u, k=k: [r[k] - c[k] * np.exp(u[0])],
            (0.0, 10 * t_sw[k] + 10.0),
            [np.log(z0[k])],
            method="DOP853",
            rtol=1e-12,
            atol=1e-14,
            events=hit,
        )
        t_cross = sol.t_events[0][0]
        assert t_sw[k] == pytest.approx(t_cross, rel=1e-8, abs=1e-10)
    # the leading-order formula (Eq. 158 at rho = 1/2) differs by O(eps):
    # within the shift ln(1 - z0/zinf)/r
    lead = S.switch_on_time(r, c, z0.min())
    assert np.all(np.isfinite(lead)) and np.all(lead > 0)


finite_pos = st.floats(0.05, 5.0)


@SETTINGS
@given(
    st.lists(
        st.tuples(finite_pos, finite_pos, st.floats(-30.0, -2.0)),
        min_size=1,
        max_size=6,
    )
)
def test_broadcasting_equals_elementwise_application(rows):
    r, c, le = (np.array(v) for v in zip(*rows))
    eps = 10.0**le * np.minimum(1.0, r / c)  # below saturation
    grid = (r[:, None], c[:, None], eps[None, :])  # (K, 1) x (1, K) broadcast
    for f in (
        S.switch_on_time,
        lambda a, b, e: sc.effective_slope(2.0, 0.8, a, b, e),
    ):
        try:
            full = f(*grid)
        # some pair starts above saturation / violates Eq. 290's monotonicity
        except ValueError:
            continue
        each = np.array(
            [
                [f(r[i], c[i], eps[j]) for j in range(eps.size)]
                for i in range(r.size)
            ]
        )
        assert full.shape == (r.size, eps.size)
        assert np.array_equal(full, each)
        assert all(np.ndim(v) == 0 for v in each.ravel())
    pv = S.plateau_values(r, c)
    assert np.array_equal(
        pv, np.array([S.plateau_values(a, b) for a, b in zip(r, c)])
    )
    assert np.array_equal(
        sc.scaling_exponent(1 + r, c),
        np.array([sc.scaling_exponent(1 + a, b) for a, b in zip(r, c)]),
    )
