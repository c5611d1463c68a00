"""Tests of nqf_lite.dynamics.solvable: closed forms against independent
numerical integration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp
from scipy.stats import ortho_group

from nqf_lite.dynamics import solvable as S


def _ivp(rhs, t, y0, rtol=1e-12, atol=1e-14):
    sol = solve_ivp(
        rhs, (0, t[-1]), y0, method="DOP853", t_eval=t, rtol=rtol, atol=atol
    )
    assert sol.success
    return sol.y.T


def _commuting(m=4, p=5, seed=0):
    rng = np.random.default_rng(seed)
    P = ortho_group.rvs(p, random_state=seed)
    lam = rng.standard_normal((m, p))
    A = np.einsum("ik,nk,jk->nij", P, lam, P)
    return P, lam, A, rng.standard_normal(m)


def _W_flow(t, A, y, W0):
    """Gradient flow W' = -H W (Eq. 27) written out independently."""
    m, p, _ = A.shape
    d = W0.shape[1]

    def rhs(_s, w):
        W = w.reshape(p, d)
        M = W @ W.T
        delta = np.array([np.sum(M * A[n]) - y[n] for n in range(m)])
        H = 4.0 / m * sum(delta[n] * A[n] for n in range(m))
        return (-H @ W).ravel()

    return _ivp(rhs, t, W0.ravel()).reshape(t.size, p, d)


# -----------------------------------------------------------------------------
# GLV coefficients
def test_glv_coefficients_matches_sums():
    _, lam, _, y = _commuting()
    r, C = S.glv_coefficients(lam, y)
    m, p = lam.shape
    for k in range(p):
        assert r[k] == pytest.approx(
            8 / m * sum(lam[n, k] * y[n] for n in range(m)), rel=1e-13
        )
        for j in range(p):
            assert C[k, j] == pytest.approx(
                8 / m * sum(lam[n, k] * lam[n, j] for n in range(m)), rel=1e-13
            )
    assert np.all(np.linalg.eigvalsh(C) > -1e-12)


def test_glv_coefficients_bad_shapes():
    with pytest.raises(ValueError, match="y must be a vector of shape"):
        S.glv_coefficients(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="lam must have 2 axes"):
        S.glv_coefficients(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        S.glv_coefficients(np.full((2, 2), np.nan), np.ones(2))


# -----------------------------------------------------------------------------
# common eigenbasis
def test_common_eigenbasis_recovers_A():
    _, _, A, _ = _commuting()
    P, lam = S.common_eigenbasis(A)
    assert np.allclose(P.T @ P, np.eye(5), atol=1e-12)
    assert np.allclose(np.einsum("ik,nk,jk->nij", P, lam, P), A, atol=1e-12)


def test_common_eigenbasis_diagonal_gives_identity():
    lam = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, 2.0]])
    A = np.stack([np.diag(v) for v in lam])
    P, got = S.common_eigenbasis(A)
    assert np.array_equal(P, np.eye(3)) or np.allclose(
        P, np.eye(3), atol=1e-15
    )
    assert np.allclose(got, lam, atol=1e-15)


def test_common_eigenbasis_rejects_noncommuting():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((2, 4, 4))
    with pytest.raises(ValueError, match="commute"):
        S.common_eigenbasis(B + np.swapaxes(B, 1, 2))


def test_common_eigenbasis_rejects_bad_input():
    with pytest.raises(ValueError, match="symmetric"):
        S.common_eigenbasis(np.arange(8.0).reshape(2, 2, 2))
    with pytest.raises(ValueError, match="3 axes"):
        S.common_eigenbasis(np.eye(3))


# -----------------------------------------------------------------------------
# Theorem 6 logistic
@pytest.mark.parametrize("r", [1.3, 0.0, -0.7])
def test_feature_trajectory_vs_ode(r):
    t = np.linspace(0, 12, 50)
    c, z0 = 0.8, 0.05
    ref = _ivp(lambda _s, z: z * (r - c * z), t, [z0], atol=1e-16)[:, 0]
    got = S.feature_trajectory(t, [r], [c], [z0])[:, 0]
    assert np.allclose(got, ref, rtol=1e-10, atol=0)


def test_feature_trajectory_r_zero_closed_form_and_eq39():
    t = np.linspace(0, 5, 11)
    z = S.feature_trajectory(t, [0.0, 2.0], np.diag([3.0, 0.5]), [0.2, 0.01])
    assert np.allclose(z[:, 0], 0.2 / (1 + 3.0 * 0.2 * t), rtol=1e-14)
    eq39 = 2.0 * 0.01 / (0.5 * 0.01 + (2.0 - 0.5 * 0.01) * np.exp(-2.0 * t))
    assert np.allclose(z[:, 1], eq39, rtol=1e-13)


def test_feature_trajectory_tiny_eps_and_zero_init():
    t = np.array([0.0, 10.0, 1e4])
    z = S.feature_trajectory(
        t, [1.0, -1.0, 1.0], [1.0, 1.0, 1.0], [1e-300, 1e-300, 0.0]
    )
    assert np.all(np.isfinite(z))
    assert z[0, 0] == 1e-300 and z[-1, 0] == pytest.approx(1.0, rel=1e-14)
    assert np.all(z[:, 2] == 0)


def test_feature_trajectory_eps_to_zero_is_step():
    # z(tau ln(1/eps)) / z_inf -> 1(tau > 1/r): rescaled-time limit (Thm 8)
    r = np.array([1.0, 0.25])
    for tau, want in ((0.5, 0.0), (2.0, 1.0), (4.5, 1.0)):
        eps = 1e-200
        z = (
            S.feature_trajectory(
                [tau * np.log(1 / eps)], r, [1.0, 1.0], [eps, eps]
            )[0]
            / r
        )
        assert z[0] == pytest.approx(1.0 if tau > 1 else 0.0, abs=1e-20)
    z = (
        S.feature_trajectory(
            [2.0 * np.log(1e200)], r, [1.0, 1.0], [1e-200, 1e-200]
        )[0]
        / r
    )
    assert z[1] < 1e-50  # tau = 2 < 1/r_2 = 4: still unlearned


def test_feature_trajectory_rejects_coupled_and_bad_values():
    with pytest.raises(ValueError, match="glv_integrate"):
        S.feature_trajectory([0, 1], [1, 1], [[1, 0.2], [0.2, 1]], [0.1, 0.1])
    with pytest.raises(ValueError, match="z0 must be >= 0"):
        S.feature_trajectory([0, 1], [1], [1], [-0.1])
    with pytest.raises(ValueError, match="C must have shape"):
        S.feature_trajectory([0, 1], [1, 2], [1], [0.1, 0.1])
    with pytest.raises(ValueError, match="non-decreasing"):
        S.feature_trajectory([1, 0], [1], [1], [0.1])
    with pytest.raises(ValueError, match=">= 0"):
        S.feature_trajectory([0, 1], [1], [-1], [0.1])


def test_projector_and_saxe_logistic():
    t = np.linspace(0, 3, 13)
    ref = _ivp(
        lambda _s, z: (
            2 * z * (np.array([0.7, 0.0]) - np.array([1.5, 2.0]) * z)
        ),
        t,
        [1e-3, 0.4],
    )
    got = S.projector_logistic(t, [0.7, 0.0], [1.5, 2.0], [1e-3, 0.4])
    assert np.allclose(got, ref, rtol=1e-10)
    tau, c, rho0 = np.array([0.5, 0.125]), 0.25, 1e-4
    eq288 = (
        tau
        * rho0
        / (c * rho0 + (tau - c * rho0) * np.exp(-4 * tau * t[:, None]))
    )
    assert np.allclose(S.saxe_logistic(t, tau, c, rho0), eq288, rtol=1e-13)
    assert np.allclose(
        S.saxe_logistic(t, [0.0], [c], [0.3])[:, 0],
        0.3 / (1 + 4 * c * 0.3 * t),
        rtol=1e-14,
    )
    with pytest.raises(ValueError, match="kappa"):
        S.projector_logistic(t, [1.0], [-1.0], [0.1])
    with pytest.raises(ValueError, match="c must be"):
        S.saxe_logistic(t, [1.0], [-1.0], [0.1])


# -----------------------------------------------------------------------------
# switch-on times
def test_switch_on_time_formulas():
    r, C = np.array([1.0, 0.25, 0.0, -1.0]), np.array([2.0, 0.5, 1.0, 1.0])
    t = S.switch_on_time(r, C, 1e-6)
    assert t[0] == pytest.approx(np.log(1 / 2e-6), rel=1e-14)
    assert t[1] == pytest.approx(4 * np.log(0.5 / 1e-6), rel=1e-14)
    assert np.isinf(t[2]) and np.isinf(t[3])
    with pytest.raises(ValueError, match="eps"):
        S.switch_on_time(r, C, 0.0)


def test_switch_on_time_exact_vs_event():
    r, c, z0 = 0.6, 1.7, 1e-4
    for rho in (0.1, 0.5, 0.9):
        ev = lambda _s, z: z[0] - rho * r / c  # noqa: E731
        ev.terminal = True
        sol = solve_ivp(
            lambda _s, z: z * (r - c * z),
            (0, 200),
            [z0],
            events=ev,
            rtol=1e-12,
            atol=1e-16,
        )
        got = S.switch_on_time_exact([r], [c], [z0], rho=rho)[0]
        assert got == pytest.approx(sol.t_events[0][0], rel=1e-9)
    # width 10 % -> 90 % is ln(81)/r, independent of z0
    w = S.switch_on_time_exact([r], [c], [1e-9], 0.9) - S.switch_on_time_exact(
        [r], [c], [1e-9], 0.1
    )
    assert w[0] == pytest.approx(np.log(81) / r, rel=1e-12)


def test_switch_on_time_leading_order_limit_and_edges():
    r, C = np.array([1.0, 1 / 16]), np.ones(2)
    ratios = [
        S.switch_on_time_exact(r, C, [e, e])[1] / (np.log(1 / e) / r[1])
        for e in (1e-5, 1e-50, 1e-300)
    ]
    assert ratios[0] < ratios[1] < ratios[2] and abs(ratios[2] - 1) < 5e-3
    # exact -> leading-order formula: difference O(eps)
    e = 1e-12
    assert S.switch_on_time_exact(r, C, [e, e]) == pytest.approx(
        S.switch_on_time(r, C, e), abs=1e-9
    )
    out = S.switch_on_time_exact([-1.0, 0.0, 1.0], [1, 1, 1], [0.1, 0.1, 0.9])
    assert np.isinf(out[0]) and np.isinf(out[1]) and out[2] == 0.0
    with pytest.raises(ValueError, match="rho"):
        S.switch_on_time_exact([1.0], [1.0], [0.1], rho=1.0)
    with pytest.raises(ValueError, match="z0 must be > 0"):
        S.switch_on_time_exact([1.0], [1.0], [0.0])


# -----------------------------------------------------------------------------
# losses
def _logistic_excess(t, r, c, z0):
    """sum_k c_k (z_k(t) - r_k/c_k)^2 / 8 along z' = z (r - c z), written out
    for r > 0."""
    e = np.exp(np.outer(t, r))
    z = z0 * e / (1 + c * z0 * (e - 1) / r)
    return (c * (z - r / c) ** 2).sum(axis=1) / 8


def test_excess_loss_draws_is_each_start_s_loss_curve():
    rng = np.random.default_rng(8)
    K, N = 300, 10  # 50 x 300 numbers per start: blocks of 4, 4 and 2 starts
    r, c = rng.uniform(0.5, 2.0, (2, K))
    z0 = 10.0 ** rng.uniform(-9, -2, (N, K))
    t = np.linspace(0, 40, 50)
    E = S.excess_loss_draws(t, r, c, z0)
    assert E.shape == (50, N)
    for j in range(N):
        np.testing.assert_allclose(
            E[:, j], _logistic_excess(t, r, c, z0[j]), rtol=1e-10
        )
    # the diagonal (K, K) form of C is accepted, and one start is a one-column
    # answer
    np.testing.assert_allclose(
        S.excess_loss_draws(t, r, np.diag(c), z0[3:4])[:, 0],
        E[:, 3],
        rtol=1e-15,
    )


def test_excess_loss_draws_bad_inputs():
    t, r = np.linspace(0, 1, 5), np.ones(3)
    with pytest.raises(ValueError, match="z0"):
        S.excess_loss_draws(
            t, r, r, np.ones(3)
        )  # one start must still be a row
    with pytest.raises(ValueError, match="z0"):
        S.excess_loss_draws(t, r, r, np.ones((2, 4)))  # K does not match r
    with pytest.raises(ValueError, match="z0 must be >= 0"):
        S.excess_loss_draws(t, r, r, -np.ones((2, 3)))
    with pytest.raises(ValueError, match="t must be"):
        S.excess_loss_draws(t[::-1], r, r, np.ones((2, 3)))
    with pytest.raises(ValueError, match="C"):
        S.excess_loss_draws(t, r, np.ones(4), np.ones((2, 3)))


def test_excess_loss_is_loss_minus_optimum():
    rng = np.random.default_rng(3)
    m = 6
    Q = ortho_group.rvs(m, random_state=3)
    lam = Q[:, :4] * np.array(
        [1.0, 2.0, 0.5, 1.5]
    )  # orthogonal columns -> diagonal C
    y = rng.standard_normal(m)
    r, C = S.glv_coefficients(lam, y)
    z = np.abs(rng.standard_normal((5, 4)))
    loss = ((z @ lam.T - y) ** 2).mean(axis=1)
    zinf = np.clip(r / np.diag(C), 0, None)
    lmin = ((zinf @ lam.T - y) ** 2).mean()
    assert np.allclose(
        S.excess_loss(z, r, C), loss - lmin, rtol=1e-12, atol=1e-14
    )
    V = S.plateau_values(r, C)
    assert S.excess_loss(np.zeros((1, 4)), r, C)[0] == pytest.approx(
        V.sum(), rel=1e-13
    )


def test_plateau_values_rejects_unbounded():
    with pytest.raises(ValueError, match="unbounded"):
        S.plateau_values([1.0], [0.0])


def test_crossing_time():
    t = np.linspace(0, 1, 11)
    x = np.stack([t**1, 1 - t], axis=1)
    assert S.crossing_time(t, x[:, 0], 0.55) == pytest.approx(0.55, abs=1e-14)
    assert S.crossing_time(t, x[:, 1], 0.25, rising=False) == pytest.approx(
        0.75, abs=1e-14
    )
    assert np.isinf(S.crossing_time(t, x, [2.0, 2.0])).all()
    with pytest.raises(ValueError, match="rows"):
        S.crossing_time(t, x[:5], 0.5)


# -----------------------------------------------------------------------------
# integrators
def test_glv_integrate_coupled_vs_direct_ode():
    C = np.array([[1, 0.3, 0.1], [0.3, 1, 0.2], [0.1, 0.2, 1]])
    r = C @ np.array([1.0, 0.5, 0.25])
    t = np.linspace(0, 40, 41)
    z0 = np.array([1e-3, 2e-3, 5e-4])
    ref = _ivp(lambda _s, z: z * (r - C @ z), t, z0, atol=1e-18)
    assert np.allclose(S.glv_integrate(t, r, C, z0), ref, rtol=1e-9)


def test_glv_integrate_tiny_eps_vs_exact_logistic():
    r = np.array([1.0, 0.5, 0.25, 1 / 16])
    t = np.linspace(0, 16 * 75, 400)
    z0 = np.full(4, 1e-30)
    num = S.glv_integrate(t, r, np.eye(4), z0, method="DOP853")
    exact = (
        r * z0 / (z0 + (r - z0) * np.exp(-r * t[:, None]))
    )  # Eq. 39 typed out
    assert np.allclose(num, exact, rtol=1e-8, atol=0)


def test_glv_integrate_rejects_bad_input():
    with pytest.raises(ValueError, match="z0 must be > 0"):
        S.glv_integrate([0, 1], [1.0], [[1.0]], [0.0])
    with pytest.raises(ValueError, match="C must have shape"):
        S.glv_integrate([0, 1], [1.0, 1.0], [[1.0]], [0.1, 0.1])
    with pytest.raises(ValueError, match="at least one time"):
        S.glv_integrate([], [1.0, 0.5], [[1.0, 0.2], [0.2, 1.0]], [0.1, 0.1])


def test_gd_nqf_and_discrete_glv_agree():
    _, lam, A, y = _commuting(seed=2)
    rng = np.random.default_rng(5)
    P = np.linalg.eigh(A[0])[
        1
    ]  # any A_n with distinct eigenvalues gives the common basis
    lamP = np.einsum("ki,nkl,li->ni", P, A, P)
    W0 = 0.05 * rng.standard_normal((5, 3))
    lr, n = 0.01, 300
    t, M = S.gd_nqf(A, y, W0, lr, n, every=10)
    # independent loop (Eq. 21)
    W = W0.copy()
    for _ in range(n):
        Mc = W @ W.T
        delta = np.einsum("nij,ij->n", A, Mc) - y
        W = W - lr * np.einsum("n,nij->ij", delta, A) @ W
    assert np.allclose(M[-1], W @ W.T, rtol=1e-12, atol=1e-15)
    assert t[-1] == pytest.approx(lr * n) and M.shape == (31, 5, 5)
    r, C = S.glv_coefficients(lamP, y)
    z0 = np.diag(P.T @ W0 @ W0.T @ P)
    zd = S.gd_discrete_glv(r, C, z0, lr, n)[::10]
    zg = np.einsum("ki,tkl,li->ti", P, M, P)
    assert np.allclose(zd, zg, rtol=1e-11, atol=1e-15)


def test_gd_helpers_reject_bad_input():
    _, _, A, y = _commuting()
    with pytest.raises(ValueError, match="rows"):
        S.gd_nqf(A, y, np.ones((4, 2)), 0.1, 3)
    with pytest.raises(ValueError, match="n_steps"):
        S.gd_nqf(A, y, np.ones((5, 2)), 0.1, -1)
    with pytest.raises(ValueError, match="lr"):
        S.gd_discrete_glv([1.0], [[1.0]], [0.1], 0.0, 3)


def test_matrix_flow_vs_weight_flow():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, 4, 4))
    A, y = (
        0.5 * (B + np.swapaxes(B, 1, 2)),
        rng.standard_normal(3),
    )  # generic, non-commuting
    W0 = 0.1 * rng.standard_normal((4, 3))
    t = np.linspace(0, 2, 9)
    Wt = _W_flow(t, A, y, W0)
    assert np.allclose(
        S.matrix_flow(t, A, y, W0 @ W0.T),
        Wt @ np.swapaxes(Wt, 1, 2),
        rtol=1e-9,
        atol=1e-12,
    )


# -----------------------------------------------------------------------------
# Proposition 7
def test_slaved_ratio_conserved_by_gd_and_moments_match_flow():
    P, lam, A, y = _commuting(seed=6)
    rng = np.random.default_rng(1)
    W0 = 0.1 * rng.standard_normal((5, 5))
    _, M = S.gd_nqf(A, y, W0, 0.01, 400, every=100)
    ratio = S.slaved_ratio(M, P)
    # exact in GD; float64 round-off in M is amplified by 1/sqrt(z_i z_j) for
    # decaying modes
    assert np.abs(ratio - ratio[0]).max() < 1e-9
    assert np.abs(ratio).max() <= 1 + 1e-12
    # slaved_moments reconstructs the full flow from z(t) alone
    t = np.linspace(0, 1, 5)
    Mf = S.matrix_flow(t, A, y, W0 @ W0.T)
    z = np.einsum("ki,tkl,li->ti", P, Mf, P)
    assert np.allclose(
        S.slaved_moments(W0 @ W0.T, P, z), Mf, rtol=1e-9, atol=1e-12
    )
    with pytest.raises(ValueError, match="> 0"):
        S.slaved_ratio(np.zeros((5, 5)), P)


# -----------------------------------------------------------------------------
# Theorem 4
def test_proportional_samples_vs_flow_and_integral():
    rng = np.random.default_rng(7)
    p, m = 4, 3
    P = ortho_group.rvs(p, random_state=7)
    lam = np.array([1.0, 0.5, -0.3, 0.0])
    A1 = P @ np.diag(lam) @ P.T
    cn, y = np.array([1.0, -0.5, 2.0]), rng.standard_normal(m)
    A = cn[:, None, None] * A1
    alpha, beta = 4 / m * (cn**2).sum(), 4 / m * (cn * y).sum()
    W0 = 0.2 * rng.standard_normal((p, 2))
    z0 = np.diag(P.T @ W0 @ W0.T @ P)
    t = np.linspace(0, 3, 7)
    xi = S.proportional_samples_xi(t, lam, z0, alpha, beta)
    for ti, x in zip(t[1:], xi[1:]):  # implicit integral Eq. 34
        val = quad(
            lambda s: (
                1 / (alpha * np.sum(lam * z0 * np.exp(-2 * lam * s)) - beta)
            ),
            0,
            x,
            epsabs=1e-13,
            epsrel=1e-12,
        )[0]
        assert val == pytest.approx(ti, rel=1e-9)
    Wt = S.proportional_samples_W(xi, P, lam, W0)
    assert np.allclose(Wt, _W_flow(t, A, y, W0), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        S.proportional_samples_xi(t, lam, z0, 0.0, beta)


# -----------------------------------------------------------------------------
# Theorem 5
def test_orthogonal_samples_vs_flow():
    m, K = 3, 2
    lam = np.zeros((m, m * K))
    for n in range(m):
        lam[n, n * K : (n + 1) * K] = [1.0, 2.0]
    y = np.array([1.0, -0.5, 0.25])
    A = np.einsum("nk,kl->nkl", lam, np.eye(m * K))
    rng = np.random.default_rng(8)
    W0 = 0.05 * rng.standard_normal((m * K, 4))
    z0 = np.diag(W0 @ W0.T)
    t = np.linspace(0, 20, 11)
    xi = S.orthogonal_samples_xi(t, lam, y, z0)
    z = S.orthogonal_samples_z(xi, lam, z0)
    Wt = _W_flow(t, A, y, W0)
    zf = np.einsum("tkd,tkd->tk", Wt, Wt)
    assert np.allclose(z, zf, rtol=1e-8, atol=1e-14)
    with pytest.raises(ValueError, match="orthogonal samples"):
        S.orthogonal_samples_xi(t, np.ones((2, 3)), [1, 1], np.ones(3))


# -----------------------------------------------------------------------------
# Theorem 7
@pytest.mark.parametrize("singular", [False, True])
def test_isotropic_trajectory_vs_riccati(singular):
    p, c = 3, 0.7
    rng = np.random.default_rng(9)
    Q = ortho_group.rvs(p, random_state=9)
    g = np.array([0.8, 0.0, -0.4]) if singular else np.array([0.8, 0.3, -0.4])
    Y = Q @ np.diag(g) @ Q.T
    B = rng.standard_normal((p, p))
    M0 = 0.05 * B @ B.T
    t = np.linspace(0, 6, 13)
    ref = _ivp(
        lambda _s, v: (
            Y @ v.reshape(p, p)
            + v.reshape(p, p) @ Y
            - 8 * c * v.reshape(p, p) @ v.reshape(p, p)
        ).ravel(),
        t,
        M0.ravel(),
    ).reshape(-1, p, p)
    assert np.allclose(
        S.isotropic_trajectory(t, Y, c, M0), ref, rtol=1e-9, atol=1e-12
    )


def test_isotropic_rejects_bad_input():
    with pytest.raises(ValueError, match="c must"):
        S.isotropic_trajectory([0, 1], np.eye(2), -1.0, np.eye(2))
    with pytest.raises(ValueError, match="symmetric"):
        S.isotropic_trajectory(
            [0, 1], np.array([[0, 1.0], [0, 0]]), 1.0, np.eye(2)
        )


# -----------------------------------------------------------------------------
# numpy conventions, refusals
def test_switch_on_time_broadcasts_like_numpy():
    # scalar in, scalar out: (1/r) ln(r/(C eps)) by hand
    t = S.switch_on_time(0.5, 1.0, 1e-5)
    assert np.ndim(t) == 0 and t == pytest.approx(
        np.log(0.5 / 1e-5) / 0.5, rel=1e-14
    )
    r = np.array([[1.0, 0.5], [0.25, 2.0]])
    eps = np.array([1e-6, 1e-3])
    got = S.switch_on_time(r, 2.0, eps)
    assert got.shape == (2, 2)
    assert np.allclose(got, np.log(r / (2.0 * eps)) / r, rtol=1e-14)
    # elementwise application equals the array call
    each = [
        [S.switch_on_time(r[i, j], 2.0, eps[j]) for j in range(2)]
        for i in range(2)
    ]
    assert np.array_equal(got, np.array(each))
    # switch_on_time_exact and plateau_values too
    assert np.ndim(S.switch_on_time_exact(1.0, 2.0, 1e-4)) == 0
    assert S.plateau_values(2.0, 0.5) == pytest.approx(
        4.0 / (8 * 0.5), rel=1e-15
    )


def test_switch_on_time_refuses_eps_above_saturation():
    # r/C = 0.5: eps = 0.6 starts above saturation (the formula would give t <
    # 0)
    with pytest.raises(ValueError, match="eps"):
        S.switch_on_time([1.0, 0.5], [1.0, 1.0], 0.6)
    with pytest.raises(ValueError, match="eps"):
        S.switch_on_time(
            0.5, 1.0, 0.5
        )  # exactly at saturation: t = 0 is no switch-on


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: S.switch_on_time(True, 1.0, 1e-3), "r"),
        (lambda: S.switch_on_time(1.0, "1.0", 1e-3), "C"),
        (lambda: S.switch_on_time(1.0, 1.0, 1e-3 + 0j), "eps"),
        (lambda: S.switch_on_time(np.array([1.0 + 1j]), 1.0, 1e-3), "r"),
        (
            lambda: S.feature_trajectory(
                [0, 1], [1.0], [1.0], np.array([1e-3 + 0j])
            ),
            "z0",
        ),
        (lambda: S.gd_nqf(np.ones((1, 1, 1)), [1.0], [[0.1]], True, 3), "lr"),
        (lambda: S.gd_nqf(np.ones((1, 1, 1)), [1.0], [[0.1]], "0.1", 3), "lr"),
        (
            lambda: S.gd_discrete_glv(
                [1.0], [[1.0]], [0.1], np.float64(0.1) + 0j, 3
            ),
            "lr",
        ),
        (
            lambda: S.glv_integrate([0, 1], [1.0], [[1.0]], [0.1], rtol=True),
            "rtol",
        ),
        (lambda: S.isotropic_logistic([0, 1], [1.0], "0.5", [0.1]), "c"),
        (lambda: S.glv_coefficients(np.array([[True, False]]), [1.0]), "lam"),
    ],
)
def test_bool_str_complex_are_type_errors(call, name):
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        call()


def test_torch_tensor_with_grad_is_detached():
    torch = pytest.importorskip("torch")
    r = torch.tensor([1.0, 0.5], dtype=torch.float64, requires_grad=True)
    got = S.switch_on_time(r, [1.0, 1.0], 1e-4)
    assert np.allclose(
        got,
        np.log(np.array([1.0, 0.5]) / 1e-4) / np.array([1.0, 0.5]),
        rtol=1e-14,
    )


def test_excess_loss_refuses_negative_abundances():
    with pytest.raises(ValueError, match=r"\bz\b"):
        S.excess_loss([[0.1, -0.2]], [1.0, 1.0], [1.0, 1.0])
    # a single state gives a scalar: V_k (1 - z/zinf)^2 summed by hand
    e = S.excess_loss([0.5, 0.0], [1.0, 2.0], [1.0, 1.0])
    assert np.ndim(e) == 0 and e == pytest.approx(
        1 / 8 * 0.25 + 4 / 8, rel=1e-14
    )


def test_glv_coefficients_without_samples():
    with pytest.raises(ValueError, match="lam"):
        S.glv_coefficients(np.zeros((0, 3)), np.zeros(0))


def test_glv_integrate_checks_C():
    t = [0.0, 1.0]
    with pytest.raises(ValueError, match="C must be positive semi-definite"):
        S.glv_integrate(
            t,
            [1.0, 1.0],
            [[1.0, 0.0], [0.0, -1.0]],
            [0.1, 0.1],
            method="DOP853",
        )
    with pytest.raises(
        ValueError, match="C must be positive semi-definite"
    ):  # eigenvalues -1, 3
        S.glv_integrate(t, [1.0, 1.0], [[1.0, 2.0], [2.0, 1.0]], [0.1, 0.1])
    with pytest.raises(ValueError, match="C must be symmetric"):
        S.glv_integrate(t, [1.0, 1.0], [[1.0, 0.5], [0.0, 1.0]], [0.1, 0.1])
    with pytest.raises(TypeError, match="method"):
        S.glv_integrate(
            t, [1.0, 1.0], [[1.0, 0.1], [0.1, 1.0]], [0.1, 0.1], method=3
        )


def test_gd_nqf_diverging_lr_is_an_error():
    A = np.ones((1, 1, 1))
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="lr"):
        S.gd_nqf(A, [3.0], [[1.0]], 10.0, 200)


# -----------------------------------------------------------------------------
# speed path is exact
def test_gd_nqf_equals_the_nqf_gd_step_recursion():
    from nqf_lite import NQF

    rng = np.random.default_rng(11)
    B = rng.standard_normal((6, 4, 4))
    A = 0.5 * (B + np.swapaxes(B, 1, 2))  # generic (non-commuting) structure
    y = rng.standard_normal(6)
    W0 = 0.1 * rng.standard_normal((4, 7))
    lr, n = 0.02, 200
    _, M = S.gd_nqf(A, y, W0, lr, n)
    model, W = NQF(A), W0.copy()
    for s in range(1, n + 1):
        W = model.gd_step(W, y, lr)
        assert np.max(np.abs(M[s] - W @ W.T)) <= 1e-12 * max(
            1.0, np.abs(M[s]).max()
        )


# -----------------------------------------------------------------------------
# numerical range
@pytest.mark.parametrize("eps", [1e-1, 1e-5, 1e-15, 1e-30])
def test_glv_machinery_is_finite_and_exact_from_1e_1_to_1e_30(eps):
    """Diagonal GLV over 1e5 GD steps: the discrete recursion, the exact
    logistic and the
    log-space integrator stay finite and agree, down to eps = 1e-30."""
    r = np.array([1.0, 0.5, 0.2, -0.3])
    C = np.diag([1.0, 2.0, 0.5, 1.0])
    z0 = np.full(4, eps)
    lr, n = 1e-3, 100_000
    zd = S.gd_discrete_glv(r, C, z0, lr, n)[::10_000]
    t = lr * np.arange(0, n + 1, 10_000)
    zt = S.feature_trajectory(t, r, C, z0)
    zi = S.glv_integrate(t, r, C, z0, method="DOP853", rtol=1e-11)
    for z in (zd, zt, zi):
        assert np.all(np.isfinite(z)) and np.all(z >= 0)
    grow = r > 0
    # exact logistic vs log-space integration: relative 1e-8 on growing modes
    assert np.allclose(zi[:, grow], zt[:, grow], rtol=1e-8, atol=0)
    # GD with lr = 1e-3 vs gradient flow: O(lr) relative error per unit of (r
    # t); here < 5 %
    late = zt[-1, grow]
    assert np.allclose(zd[-1, grow], late, rtol=5e-2)
    # the decaying mode (r = -0.3, C = 1) is eps e^{rt}/(1 + eps (1 -
    # e^{rt})/0.3): tiny, exact, never 0 or NaN
    decay = (
        eps
        * np.exp(-0.3 * t[-1])
        / (1 + eps * (1 - np.exp(-0.3 * t[-1])) / 0.3)
    )
    assert zt[-1, 3] == pytest.approx(decay, rel=1e-12, abs=0)
    assert zi[-1, 3] == pytest.approx(decay, rel=1e-8, abs=0)
    # switch-on times are finite and positive (eps below saturation)
    ts = S.switch_on_time_exact(r, C, z0)
    assert np.all(np.isfinite(ts[grow])) and np.all(ts[grow] > 0)


# -----------------------------------------------------------------------------
# Theorem 7, Eq. 42
def test_isotropic_logistic_eq42_against_eq41_and_an_ode():
    """Eq. 42 by hand, Eq. 41 (matrix Riccati solution) and DOP853 on Eq. 143
    agree."""
    p, c = 4, 0.3
    Q = ortho_group.rvs(p, random_state=4)
    gamma = np.array([1.2, 0.4, 0.0, -0.5])
    z0 = np.array([1e-3, 2e-2, 0.1, 0.3])
    Y = Q @ np.diag(gamma) @ Q.T
    M0 = Q @ np.diag(z0) @ Q.T
    t = np.linspace(0, 6, 13)
    got = S.isotropic_logistic(t, gamma, c, z0)
    # Eq. 42 written out (gamma != 0) and the gamma = 0 branch
    by_hand = np.empty_like(got)
    for k, g in enumerate(gamma):
        if g != 0:
            by_hand[:, k] = (
                g
                * z0[k]
                / (4 * c * z0[k] + (g - 4 * c * z0[k]) * np.exp(-2 * g * t))
            )
        else:
            by_hand[:, k] = z0[k] / (1 + 8 * c * z0[k] * t)
    assert np.allclose(got, by_hand, rtol=1e-13, atol=0)
    # Eq. 41: eigenvalues of the matrix solution in the basis Q
    M41 = S.isotropic_trajectory(t, Y, c, M0)
    assert np.allclose(
        np.einsum("ik,tij,jk->tk", Q, M41, Q), got, rtol=1e-10, atol=1e-14
    )
    # M' = Y M + M Y - 8 c M^2 (Eq. 143) integrated numerically
    sol = _ivp(
        lambda _s, v: (
            Y @ v.reshape(p, p)
            + v.reshape(p, p) @ Y
            - 8 * c * v.reshape(p, p) @ v.reshape(p, p)
        ).ravel(),
        t,
        M0.ravel(),
    )
    Mn = sol.reshape(t.size, p, p)
    assert np.allclose(
        np.einsum("ik,tij,jk->tk", Q, Mn, Q), got, rtol=1e-9, atol=1e-13
    )
    # a wrong factor (4c instead of 8c in C) is detected
    assert not np.allclose(
        S.feature_trajectory(t, 2 * gamma, np.full(p, 4 * c), z0),
        got,
        rtol=1e-3,
    )


# -----------------------------------------------------------------------------
# Theorem 7 at any time and rank
def _isotropic_data(p=3, c=0.5, seed=0):
    """A_a = sqrt(c m) E_a over an orthonormal basis E_a of the symmetric
    matrices: Assumption 2 holds exactly."""
    basis = []
    for i in range(p):
        for j in range(i, p):
            E = np.zeros((p, p))
            E[i, j] = E[j, i] = 1.0 if i == j else 1 / np.sqrt(2)
            basis.append(E)
    m = len(basis)
    A = np.sqrt(c * m) * np.stack(basis)
    y = np.random.default_rng(seed).standard_normal(m)
    Y = 4 / m * np.einsum("n,nij->ij", y, A)
    scale = np.abs(
        np.linalg.eigvalsh(Y)
    ).max()  # labels scaled so that max |gamma| = 1
    return A, y / scale, Y / scale


def _explicit_gd(A, y, W0, lr, n_steps, every):
    """Full-batch GD on the weights, W <- W - lr H W with H = (4/m) sum_n (Tr[M
    A_n] - y_n) A_n (Eq. 27)."""
    m = A.shape[0]
    W, out = W0.copy(), [W0 @ W0.T]
    for s in range(1, n_steps + 1):
        delta = np.einsum("nij,ij->n", A, W @ W.T) - y
        W = W - lr * (4.0 / m) * np.einsum("n,nij->ij", delta, A) @ W
        if s % every == 0:
            out.append(W @ W.T)
    return np.array(out)


@pytest.mark.parametrize("d", [1, 2])
def test_isotropic_trajectory_rank_deficient_start_against_gd(
    d,
):
    """Width d < p: e^{2 gamma t} reaches e^{100} within the run, where Eq. 41
    evaluated directly broke down."""
    c = 0.5
    A, y, Y = _isotropic_data(c=c)
    W0 = 0.03 * np.random.default_rng(d).standard_normal((3, d))
    t_end, every = 50.0, 500
    errs = []
    for lr in (2e-3, 1e-3):
        n = int(round(t_end / lr))
        M_gd = _explicit_gd(A, y, W0, lr, n, every * int(round(2e-3 / lr)))
        t = np.linspace(0.0, t_end, M_gd.shape[0])
        M = S.isotropic_trajectory(t, Y, c, W0 @ W0.T)
        assert np.all(np.isfinite(M))
        errs.append(np.abs(M - M_gd).max() / np.abs(M_gd).max())
    assert errs[1] < 5e-3  # GD approaches the flow as lr -> 0 ...
    assert (
        1.6 < errs[0] / errs[1] < 2.4
    )  # ... at first order: the gap is GD's, not the closed form's
    # and against the gradient flow on W itself (DOP853), which keeps rank d
    # exactly
    t = np.linspace(0.0, t_end, 11)
    W_flow = _W_flow(t, A, y, W0)
    M_flow = W_flow @ np.swapaxes(W_flow, 1, 2)
    M = S.isotropic_trajectory(t, Y, c, W0 @ W0.T)
    assert np.abs(M - M_flow).max() <= 1e-8 * np.abs(M_flow).max()
    assert np.all(np.linalg.matrix_rank(M, tol=1e-9 * np.abs(M).max()) <= d)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_isotropic_trajectory_reaches_its_finite_limit_at_huge_times(d):
    """At t = 1e3/gamma and beyond, M is sum over the top-d positive modes of
    gamma_k/(4c) q_k q_k^T."""
    c = 0.7
    _, _, Y = _isotropic_data(p=4, c=c, seed=3)
    g, Q = np.linalg.eigh(Y)
    W0 = 1e-3 * np.random.default_rng(d).standard_normal((4, d))
    top = [k for k in np.argsort(g)[::-1][: min(d, 4)] if g[k] > 0]
    want = sum(g[k] / (4 * c) * np.outer(Q[:, k], Q[:, k]) for k in top)
    gmax = g.max()
    for t_end in (1e3 / gmax, 1e6 / gmax):
        M = S.isotropic_trajectory([0.0, 40.0 / gmax, t_end], Y, c, W0 @ W0.T)
        assert np.all(np.isfinite(M))
        np.testing.assert_allclose(M[-1], want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(M[0], W0 @ W0.T, rtol=0, atol=1e-18)


def test_isotropic_trajectory_is_a_flow_and_handles_every_sign_of_gamma():
    """Evaluating the times together or one by one gives the same M (the steps
    are exact); Y with
    gamma = 0 and gamma < 0 modes and a full-rank start still match the ODE."""
    c = 0.3
    p = 3
    Q = ortho_group.rvs(p, random_state=4)
    Y = Q @ np.diag([1.0, 0.0, -0.6]) @ Q.T
    B = np.random.default_rng(4).standard_normal((p, p))
    M0 = 0.02 * B @ B.T
    t = np.array([0.0, 0.3, 7.9, 8.0, 25.0, 60.0])
    together = S.isotropic_trajectory(t, Y, c, M0)
    for k, tk in enumerate(t):
        np.testing.assert_allclose(
            S.isotropic_trajectory([tk], Y, c, M0)[0],
            together[k],
            rtol=0,
            atol=1e-13,
        )
    ref = _ivp(
        lambda _s, v: (
            Y @ v.reshape(p, p)
            + v.reshape(p, p) @ Y
            - 8 * c * v.reshape(p, p) @ v.reshape(p, p)
        ).ravel(),
        t,
        M0.ravel(),
    ).reshape(-1, p, p)
    assert np.abs(together - ref).max() <= 1e-8 * np.abs(ref).max()


def test_isotropic_trajectory_refuses_bad_starts():
    Y = np.diag([1.0, -1.0])
    with pytest.raises(
        ValueError,
        match="M0 must be positive semi-definite.*smallest eigenvalue",
    ):
        S.isotropic_trajectory([0, 1], Y, 1.0, np.diag([1.0, -0.5]))
    with pytest.raises(ValueError, match="M0 must be symmetric"):
        S.isotropic_trajectory(
            [0, 1], Y, 1.0, np.array([[1.0, 0.5], [0.0, 1.0]])
        )
    with pytest.raises(ValueError, match="Y must be a non-empty square"):
        S.isotropic_trajectory([0, 1], np.ones((2, 3)), 1.0, np.eye(2))
    with pytest.raises(
        ValueError, match="t must be non-negative and non-decreasing"
    ):
        S.isotropic_trajectory([1.0, 0.5], Y, 1.0, np.eye(2))
    assert S.isotropic_trajectory([], Y, 1.0, np.eye(2)).shape == (0, 2, 2)
    assert np.all(
        S.isotropic_trajectory([0, 5], Y, 1.0, np.zeros((2, 2))) == 0
    )  # M0 = 0 stays 0
