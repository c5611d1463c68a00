"""The runners of chapter 6 (nqf_lite.experiments.sudden_learning), against
hand cases and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from nqf_lite.dynamics import projectors as pj
from nqf_lite.dynamics import solvable as S
from nqf_lite.experiments import sudden_learning as sl


def test_abundances_read_a_diagonal_trajectory():
    P = ortho_group.rvs(3, random_state=np.random.default_rng(0))
    z = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, 4.0]])
    M = np.stack([P @ np.diag(zt) @ P.T for zt in z])
    np.testing.assert_allclose(sl.abundances(M, P), z, atol=1e-12)
    with pytest.raises(ValueError, match="M"):
        sl.abundances(M[:, :2], P)


def test_mode_error_by_hand():
    z_ref = np.array([[1.0, 10.0], [2.0, 20.0]])
    z = z_ref + np.array([[0.1, 0.0], [0.0, 1.0]])
    # mode 1: 0.1 / 2, mode 2: 1 / 20
    assert sl.mode_error(z, z_ref) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="match"):
        sl.mode_error(z[:1], z_ref)


def test_rescaled_run_of_one_logistic_mode():
    # r = C = 1, z(0) = eps: z(t) = 1 / (1 + (1/eps - 1) e^-t), so
    # z = q at t = ln((1 - eps) q / (eps (1 - q))), in tau = t / ln(1/eps)
    eps, tau = 1e-6, np.linspace(0.0, 3.0, 30_001)
    run = sl.rescaled_run([1.0], [[1.0]], eps, tau)
    L = np.log(1 / eps)
    t_q = lambda q: np.log((1 - eps) * q / (eps * (1 - q))) / L  # noqa: E731
    np.testing.assert_allclose(run["t_half"], [t_q(0.5)], rtol=1e-5)
    np.testing.assert_allclose(run["width"], [t_q(0.9) - t_q(0.1)], rtol=1e-4)
    np.testing.assert_allclose(run["width"], [np.log(81) / L], rtol=1e-4)
    # excess loss of one mode: V (1 - z)^2 with V = r^2 / (8 C) (Eq. 163)
    np.testing.assert_allclose(run["E"][-1], 0.0, atol=1e-9)
    with pytest.raises(ValueError, match="eps"):
        sl.rescaled_run([1.0], [[1.0]], 0.0, tau)


def test_isotropic_structures_meet_assumption_2():
    p, c = 3, 0.5
    A = sl.isotropic_structures(p, c)
    m = p * (p + 1) // 2
    assert A.shape == (m, p, p)
    second = np.einsum("nij,nkl->ijkl", A, A) / m
    d = np.eye(p)
    expected = np.zeros((p,) * 4)
    for i, j, k, l in np.ndindex(*(p,) * 4):
        expected[i, j, k, l] = c / 2 * (d[i, k] * d[j, l] + d[i, l] * d[j, k])
    np.testing.assert_allclose(second, expected, atol=1e-14)
    with pytest.raises(ValueError, match="c"):
        sl.isotropic_structures(p, -1.0)


def _projector_problem():
    ranks = np.array([2, 1])
    g = np.random.default_rng(4)
    A, y, Pi = pj.projector_data(
        ranks, np.array([1.0, 0.5]), np.array([1.0, 0.8]), p=5, m=6, rng=g
    )
    return ranks, A, y, Pi


def test_projector_gd_follows_the_flow_closed_form():
    ranks, A, y, Pi = _projector_problem()
    z0 = np.array([1e-3, 1e-2])
    W0 = np.einsum("a,aij->ij", np.sqrt(z0), Pi)
    t = np.linspace(0.0, 4.0, 41)
    z_gd, z_map, off = sl.projector_gd(A, y, Pi, z0, W0, 1e-3, 4000, 100)
    assert off < 1e-10
    np.testing.assert_allclose(z_gd, z_map, rtol=1e-9)
    # gradient-flow limit: the logistic of Eqs. 256-257 with the constants
    # the data were built with
    flow = S.projector_logistic(t, [1.0, 0.5], [1.0, 0.8], z0)
    assert sl.mode_error(z_gd, flow) < 1e-2
    with pytest.raises(ValueError, match="every"):
        sl.projector_gd(A, y, Pi, z0, W0, 1e-3, 4000, 0)


def test_thm16_draw_holds_in_the_span_and_fails_off_it():
    ranks = np.array([2, 3, 2, 2])
    t = np.linspace(0.0, 20.0, 201)
    out = sl.thm16_draw(np.random.default_rng(5), ranks, t, 16)
    assert out["flow"] < 1e-8 and out["gd"] < 1e-10
    assert out["ctrl"] > 1e-4


def test_linear_gd_singular_values_follow_saxe():
    # whitened inputs, aligned start: Eq. 288's logistic (Cor. 4)
    g = np.random.default_rng(6)
    n_in, n_out, n_x = 4, 2, 6
    X = np.sqrt(n_x) * ortho_group.rvs(n_x, random_state=g)[:n_in]
    U_t = ortho_group.rvs(n_out, random_state=g)
    V_t = ortho_group.rvs(n_in, random_state=g)[:, :2]
    s = np.array([1.2, 0.6])
    R = np.eye(3)[:, :2]
    U0, V0 = (np.sqrt(1e-3) * T @ R.T for T in (U_t, V_t))
    sv = sl.linear_gd_singular_values(
        U0, V0, X, U_t @ np.diag(s) @ V_t.T @ X, 1e-3, 12_000, 200
    )
    t = 1e-3 * 200 * np.arange(len(sv))
    rho = S.saxe_logistic(t, s / n_out, 1 / n_out, 1e-3)
    assert sv.shape == (61, 2)
    assert np.abs(sv - rho).max() < 5e-3
    with pytest.raises(ValueError, match="shapes"):
        sl.linear_gd_singular_values(U0, V0, X[:3], X, 1e-3, 10, 1)


def test_cor4_problem_meets_its_conditions():
    pb = sl.cor4_problem(np.random.default_rng(7), 5, 3, 4, 8)
    # Sigma = X X^T / n has the teacher's right singular vectors as
    # eigenvectors, with eigenvalues sig
    Sigma = pb["X"] @ pb["X"].T / 8
    np.testing.assert_allclose(
        Sigma @ pb["v"], pb["v"] * pb["sig"], atol=1e-12
    )
    Y = pb["u"][:, :3] @ np.diag(pb["s"]) @ pb["v"].T @ pb["X"]
    np.testing.assert_allclose(pb["Y"], Y, atol=1e-12)
    row = sl.cor4_draw(pb, (0.01, 0.005), 10.0)
    assert row["cond"] < 1e-12
    assert row[0.01]["map"] < 1e-10 and row[0.005]["map"] < 1e-10
    ratio = row[0.01]["gap"] / row[0.005]["gap"]
    assert abs(ratio / 2 - 1) < 0.1  # first order in lr
    with pytest.raises(ValueError, match="n_records"):
        sl.cor4_draw(pb, (0.01,), 10.0, n_records=0)


def test_unseen_label_shift_keeps_the_traces_and_breaks_the_condition():
    ranks, A, y, Pi = _projector_problem()
    dy = sl.unseen_label_shift(A, y, Pi, np.random.default_rng(9))
    assert np.linalg.norm(dy) == pytest.approx(np.linalg.norm(y))
    # Tr[A_n Pi_a] / rank_a, column by column: dy is orthogonal to each
    lam = np.array(
        [[np.trace(An @ P) / k for P, k in zip(Pi, ranks)] for An in A]
    )
    np.testing.assert_allclose(lam.T @ dy, 0.0, atol=1e-12)
    before = pj.projector_coefficients(A, y, Pi)
    after = pj.projector_coefficients(A, y + dy, Pi)
    np.testing.assert_allclose(after.gamma, before.gamma, atol=1e-12)
    assert before.residual < 1e-12 < after.residual
    with pytest.raises(ValueError, match="y"):
        sl.unseen_label_shift(A, y[:-1], Pi, np.random.default_rng(9))


def test_proportional_run_starts_from_its_draws_and_follows_the_flow():
    t = np.linspace(0.0, 4.0, 41)
    P, lam, M, M_flow = sl.proportional_run(np.random.default_rng(3), t)
    g = np.random.default_rng(3)  # the documented draws, by hand
    np.testing.assert_allclose(P, ortho_group.rvs(4, random_state=g))
    W0 = 0.05 * g.standard_normal((4, 3))
    np.testing.assert_allclose(M[0], W0 @ W0.T, atol=1e-15)
    np.testing.assert_array_equal(lam, [1.0, 0.5, 0.25, -0.5])
    # the closed form (Eqs. 33-34) against the integrated flow
    assert np.abs(M - M_flow).max() / np.abs(M_flow).max() < 1e-7
    with pytest.raises(ValueError, match="t"):
        sl.proportional_run(np.random.default_rng(3), t[:, None])


def test_isotropic_run_logistic_eigenvalues_saturate_at_gamma_over_4c():
    A = sl.isotropic_structures(2, 0.5)
    t = np.linspace(0.0, 30.0, 301)
    out = sl.isotropic_run(np.random.default_rng(4), t, A, 0.5)
    g = np.random.default_rng(4)
    y = g.standard_normal(len(A))
    Y = 4 / len(A) * np.einsum("n,nij->ij", y, A)
    Y = Y / np.abs(np.linalg.eigvalsh(Y)).max()
    np.testing.assert_allclose(out["gamma"], np.linalg.eigvalsh(Y))
    B = g.standard_normal((2, 2))
    np.testing.assert_allclose(out["M"][0], 1e-3 * B @ B.T, atol=1e-15)
    z0 = 1e-3 * g.uniform(0.5, 2.0, 2)
    np.testing.assert_allclose(out["z42"][0], z0)
    # Eq. 42: a mode with gamma > 0 saturates at gamma / (4c), one with
    # gamma < 0 dies out
    for k, gam in enumerate(out["gamma"]):
        ceiling = max(gam, 0.0) / (4 * 0.5)
        assert out["z42_flow"][-1, k] == pytest.approx(ceiling, abs=1e-6)
    err = np.abs(out["M"] - out["M_flow"]).max() / np.abs(out["M"]).max()
    assert err < 1e-7
    with pytest.raises(ValueError, match="c"):
        sl.isotropic_run(np.random.default_rng(4), t, A, -0.5)


def test_saxe_problem_is_whitened_with_the_teacher_s_singular_values():
    s = np.array([1.5, 0.75, 0.375])
    X, Y, U0, V0 = sl.saxe_problem(np.random.default_rng(5), s, 5, 4, 8, 1e-4)
    np.testing.assert_allclose(X @ X.T / 8, np.eye(5), atol=1e-12)
    # Y X^T / n = U_t diag(s) V_t^T: its singular values are s
    sv = np.linalg.svd(Y @ X.T / 8, compute_uv=False)
    np.testing.assert_allclose(sv, s, atol=1e-12)
    # balanced, aligned start: U0 V0^T has singular values rho0
    sv0 = np.linalg.svd(U0 @ V0.T, compute_uv=False)
    np.testing.assert_allclose(sv0, [1e-4] * 3, atol=1e-16)
    np.testing.assert_allclose(U0.T @ U0, V0.T @ V0, atol=1e-16)
    with pytest.raises(ValueError, match="hidden"):
        sl.saxe_problem(np.random.default_rng(5), s, 5, 2, 8, 1e-4)


def test_orthogonal_samples_run_of_one_sample_by_hand():
    lam, y, eps = np.array([[1.0, 2.0]]), np.array([0.5]), 1e-4
    t, res_gd, res_th = sl.orthogonal_samples_run(lam, y, eps, 0.01, 3000)
    # at t = 0: Delta = sum_k lam_k eps - y
    assert res_gd[0, 0] == pytest.approx(3 * eps - 0.5, rel=1e-12)
    assert res_th[0, 0] == pytest.approx(3 * eps - 0.5, rel=1e-9)
    assert abs(res_gd[-1, 0]) < 1e-6 and abs(res_th[-1, 0]) < 1e-6
    # the faster mode (rate 8 * 2 * 0.5 = 8) halves the residual near
    # ln(1/eps)/8 = 1.15; GD follows the ODE
    half = t[np.argmax(res_gd[:, 0] ** 2 < 0.25**2)]
    assert 0.8 < half < 1.2
    assert np.abs(res_gd - res_th).max() < 0.05
    with pytest.raises(ValueError, match="y"):
        sl.orthogonal_samples_run(lam, np.ones(2), eps, 0.01, 10)


def test_projector_gd_run_records_on_the_grid_and_meets_the_flow():
    ranks, A, y, Pi = _projector_problem()
    z0 = np.array([1e-3, 1e-2])
    W0 = np.einsum("a,aij->ij", np.sqrt(z0), Pi)
    t = np.linspace(0.0, 4.0, 41)
    # the logistic of Eqs. 256-257 with the constants the data were built
    # with, not read off by the code
    z_th = S.projector_logistic(t, [1.0, 0.5], [1.0, 0.8], z0)
    out = sl.projector_gd_run(A, y, Pi, z0, W0, 1e-3, t, z_th)
    assert out["z"].shape == (41, 2)
    np.testing.assert_allclose(out["z"][0], z0, rtol=1e-12)
    assert out["map_err"] < 1e-9 and out["off"] < 1e-10
    assert out["gap"] < 1e-2 * np.abs(z_th).max()
    with pytest.raises(ValueError, match="z_th"):
        sl.projector_gd_run(A, y, Pi, z0, W0, 1e-3, t, z_th[:-1])


def test_saxe_gd_ends_at_t_end_on_the_logistic():
    s = np.array([1.5, 0.75, 0.375])
    X, Y, U0, V0 = sl.saxe_problem(np.random.default_rng(8), s, 5, 4, 8, 1e-4)
    t, sv = sl.saxe_gd(U0, V0, X, Y, 0.01, 24.0, 600)
    np.testing.assert_allclose(t, 0.04 * np.arange(601))  # every 4 steps
    # Eq. 288, whitened inputs: tau_a = s_a / n_out, c_a = 1 / n_out
    rho = S.saxe_logistic(t, s / 3, 1 / 3, 1e-4)
    assert np.abs(sv - rho).max() < 0.05
    # the two faster modes have saturated at s_a by t = 24
    np.testing.assert_allclose(sv[-1, :2], s[:2], rtol=1e-3)
    with pytest.raises(ValueError, match="records"):
        sl.saxe_gd(U0, V0, X, Y, 0.01, 24.0, 0)
