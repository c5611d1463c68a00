"""Tests of nqf_lite.dynamics.projectors (Theorem 16): every expected value is
derived independently.

Expected values come from explicit loops over samples (Eq. 252 written out),
from the target constants a data set was built with, from known special cases
(Theorem 6's orthogonal features, Theorem 7's isotropic samples), from a plain
ODE integration of W' = -H W, and from GD on W.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.stats import ortho_group

from nqf_lite.dynamics import projectors as pj
from nqf_lite.dynamics import solvable as S

RANKS, GAMMA, KAPPA = (
    [2, 3, 1, 2],
    [1.0, 0.5, 0.0, -0.25],
    [1.0, 0.5, 0.8, 0.6],
)


def _data(seed=0, noise=1.0, p=11, m=9):
    return pj.projector_data(
        RANKS,
        GAMMA,
        KAPPA,
        p=p,
        m=m,
        rng=np.random.default_rng(seed),
        noise=noise,
    )


def _K_loop(A, X):
    """K(X) of Eq. 252, one sample at a time."""
    m = A.shape[0]
    return sum(4.0 / m * np.trace(A[n] @ X) * A[n] for n in range(m))


def _Y_loop(A, y):
    m = A.shape[0]
    return sum(4.0 / m * y[n] * A[n] for n in range(m))


# -----------------------------------------------------------------------------
# Eq. 252
def test_covariance_and_label_matrix_equal_the_sums_of_eq252():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 4, 4))
    A = A + np.swapaxes(A, 1, 2)
    X = rng.standard_normal((4, 4))
    y = rng.standard_normal(5)
    assert np.allclose(
        pj.empirical_covariance(A, X), _K_loop(A, X), rtol=1e-13, atol=1e-13
    )
    stack = np.stack([X, X.T, np.eye(4)])
    got = pj.empirical_covariance(A, stack)
    assert got.shape == (3, 4, 4)
    assert np.allclose(got[2], _K_loop(A, np.eye(4)), rtol=1e-13, atol=1e-13)
    assert np.allclose(
        pj.label_matrix(A, y), _Y_loop(A, y), rtol=1e-13, atol=1e-13
    )


# -----------------------------------------------------------------------------
# the data builder
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_projector_data_satisfies_eqs_253_254_with_the_targets(seed):
    A, y, Pi = _data(seed)
    assert (
        A.shape == (9, 11, 11) and y.shape == (9,) and Pi.shape == (4, 11, 11)
    )
    assert np.allclose(A, np.swapaxes(A, 1, 2), atol=0)
    # projectors: symmetric, idempotent, mutually orthogonal, of the requested
    # ranks
    for a in range(4):
        assert np.isclose(np.trace(Pi[a]), RANKS[a], atol=1e-12)
        for b in range(4):
            want = Pi[a] if a == b else np.zeros((11, 11))
            assert np.allclose(Pi[a] @ Pi[b], want, atol=1e-12)
    Y = _Y_loop(A, y)
    for a in range(4):
        assert np.allclose(
            Y @ Pi[a] + Pi[a] @ Y, 2 * GAMMA[a] * Pi[a], atol=1e-12
        )
        for b in range(4):
            Kb = _K_loop(A, Pi[b])
            want = 2 * KAPPA[a] * Pi[a] if a == b else np.zeros((11, 11))
            assert np.allclose(Kb @ Pi[a] + Pi[a] @ Kb, want, atol=1e-12)


def test_projector_data_does_not_commute_unless_noise_is_zero():
    A = _data(noise=1.0).A
    comm = max(
        np.abs(A[i] @ A[j] - A[j] @ A[i]).max()
        for i in range(9)
        for j in range(9)
    )
    assert comm > 0.1 * np.abs(A).max() ** 2
    A0 = _data(noise=0.0).A
    comm0 = max(
        np.abs(A0[i] @ A0[j] - A0[j] @ A0[i]).max()
        for i in range(9)
        for j in range(9)
    )
    assert comm0 < 1e-12
    S.common_eigenbasis(A0)  # the noise-free data satisfy Assumption 1
    with pytest.raises(ValueError):
        S.common_eigenbasis(A)


def test_projector_data_is_reproducible_from_the_seed():
    a, b = _data(5), _data(5)
    assert all(np.array_equal(x, z) for x, z in zip(a, b))
    assert not np.allclose(a.A, _data(6).A)


# -----------------------------------------------------------------------------
# reading gamma, kappa
def test_coefficients_recover_the_targets():
    A, y, Pi = _data(4)
    got = pj.projector_coefficients(A, y, Pi)
    assert np.allclose(got.gamma, GAMMA, atol=1e-12)
    assert np.allclose(got.kappa, KAPPA, atol=1e-12)
    assert got.residual < 1e-12


def test_coefficients_flag_labels_that_break_eq253():
    A, y, Pi = _data(4)
    lam = np.einsum("nij,aji->na", A, Pi)
    v = np.random.default_rng(0).standard_normal(y.size)
    q, _ = np.linalg.qr(lam)
    v -= q @ (
        q.T @ v
    )  # orthogonal to every lambda_{., a}: the traces do not see it
    got = pj.projector_coefficients(A, y + v, Pi)
    assert np.allclose(got.gamma, GAMMA, atol=1e-12)
    assert got.residual > 0.1


def test_coefficients_of_orthogonal_features_are_half_of_eq37():
    """Theorem 6 as the rank-1 case: Pi_k = p_k p_k^T, gamma_k = r_k/2, kappa_k
    = C_kk/2."""
    rng = np.random.default_rng(1)
    m = p = 5
    Q = ortho_group.rvs(m, random_state=2)
    P = ortho_group.rvs(p, random_state=3)
    lam = 0.7 * Q.T  # lam[n, k]: orthogonal columns, so C is diagonal
    A = np.einsum("ik,nk,jk->nij", P, lam, P)
    y = rng.standard_normal(m)
    r = 8 / m * lam.T @ y  # Eq. 37 by hand
    C = 8 / m * lam.T @ lam
    Pi = np.einsum("ik,jk->kij", P, P)
    got = pj.projector_coefficients(A, y, Pi)
    assert np.allclose(got.gamma, r / 2, atol=1e-12)
    assert np.allclose(got.kappa, np.diag(C) / 2, atol=1e-12)
    assert got.residual < 1e-12


def test_coefficients_of_isotropic_samples_are_4c():
    """Theorem 7 (Assumption 2): K(X) = 4 c X, so kappa = 4c on any
    eigenprojector of Y."""
    p, c = 3, 0.5
    basis = []
    for i in range(p):
        for j in range(i, p):
            E = np.zeros((p, p))
            E[i, j] = E[j, i] = 1.0 if i == j else 1 / np.sqrt(2)
            basis.append(E)
    m = len(basis)
    A = np.sqrt(c * m) * np.stack(basis)
    y = np.random.default_rng(2).standard_normal(m)
    gam, vec = np.linalg.eigh(_Y_loop(A, y))
    Pi = np.einsum("ik,jk->kij", vec, vec)
    got = pj.projector_coefficients(A, y, Pi)
    assert np.allclose(got.kappa, 4 * c, atol=1e-12)
    assert np.allclose(got.gamma, gam, atol=1e-12)
    assert got.residual < 1e-12


# -----------------------------------------------------------------------------
# dynamics
def test_span_coordinates_separate_the_span_from_the_rest():
    Pi = _data(0).projectors
    z = np.array([0.3, 0.1, 2.0, 0.05])
    Q = np.eye(11) - Pi.sum(0)  # the complement of the span (rank 3)
    extra = 0.01 * Q @ np.ones((11, 11)) @ Q
    got, off = pj.span_coordinates(np.einsum("a,aij->ij", z, Pi) + extra, Pi)
    assert np.allclose(got, z, atol=1e-12)
    assert np.isclose(off, np.abs(extra).max(), rtol=1e-10)
    got_t, off_t = pj.span_coordinates(
        np.stack([np.einsum("a,aij->ij", z, Pi)] * 2), Pi
    )
    assert got_t.shape == (2, 4) and off_t.max() < 1e-12


def test_flow_of_W_stays_on_the_projectors_and_follows_eq256():
    """An independent ODE for W' = -H W (Eq. 27 written out) against Theorem
    16."""
    A, y, Pi = _data(7)
    z0 = np.array([1e-3, 2e-3, 0.4, 0.3])
    W0 = np.einsum("a,aij->ij", np.sqrt(z0), Pi)
    t = np.linspace(0, 8, 17)

    def rhs(_s, w):
        W = w.reshape(11, 11)
        M = W @ W.T
        H = sum(4.0 / 9 * (np.sum(M * A[n]) - y[n]) * A[n] for n in range(9))
        return (-H @ W).ravel()

    sol = solve_ivp(
        rhs,
        (0, t[-1]),
        W0.ravel(),
        method="DOP853",
        t_eval=t,
        rtol=1e-12,
        atol=1e-14,
    )
    W = sol.y.T.reshape(t.size, 11, 11)
    M = W @ np.swapaxes(W, 1, 2)
    z, off = pj.span_coordinates(M, Pi)
    assert off.max() < 1e-9
    assert np.allclose(
        z, S.projector_logistic(t, GAMMA, KAPPA, z0), rtol=1e-8, atol=1e-12
    )


def test_gd_map_equals_gd_on_W_and_one_step_by_hand():
    A, y, Pi = _data(8)
    z0 = np.array([1e-3, 0.2, 0.4, 0.3])
    W0 = np.einsum("a,aij->ij", np.sqrt(z0), Pi)
    lr, n = 0.05, 120
    _, M = S.gd_nqf(A, y, W0, lr, n)
    z_gd, off = pj.span_coordinates(M, Pi)
    got = pj.projector_gd_map(GAMMA, KAPPA, z0, lr, n)
    assert got.shape == (n + 1, 4)
    assert np.allclose(got, z_gd, rtol=1e-10, atol=1e-14) and off.max() < 1e-12
    one = (
        z0 * (1 + lr * (np.array(GAMMA) - np.array(KAPPA) * z0)) ** 2
    )  # by hand
    assert np.allclose(got[1], one, rtol=1e-15)
    # first order in lr: halving the step halves the gap to the flow
    t = lr * np.arange(n + 1)
    gap = np.abs(got - S.projector_logistic(t, GAMMA, KAPPA, z0)).max()
    half = pj.projector_gd_map(GAMMA, KAPPA, z0, lr / 2, 2 * n)[::2]
    gap2 = np.abs(half - S.projector_logistic(t, GAMMA, KAPPA, z0)).max()
    assert 1.8 < gap / gap2 < 2.2


# -----------------------------------------------------------------------------
# bad input
@pytest.mark.parametrize(
    "call, err, match",
    [
        (
            lambda: pj.projector_data([2, 0], [1, 1], [1, 1], 5, 4, 0),
            ValueError,
            "ranks",
        ),
        (
            lambda: pj.projector_data([2.0, 1.0], [1, 1], [1, 1], 5, 4, 0),
            TypeError,
            "ranks",
        ),
        (
            lambda: pj.projector_data([3, 3], [1, 1], [1, 1], 5, 4, 0),
            ValueError,
            "p = 5",
        ),
        (
            lambda: pj.projector_data([2, 2], [1, 1], [1, 0], 5, 4, 0),
            ValueError,
            "kappa",
        ),
        (
            lambda: pj.projector_data([2, 2], [1], [1, 1], 5, 4, 0),
            ValueError,
            "gamma",
        ),
        (
            lambda: pj.projector_data([2, 2], [1, 1], [1, 1], 5, 2, 0),
            ValueError,
            "m must",
        ),
        (
            lambda: pj.projector_data([2, 2], [1, 1], [1, 1], 5, 4, None),
            TypeError,
            "rng",
        ),
        (
            lambda: pj.projector_data(
                [2, 2], [1, 1], [1, 1], 5, 4, 0, noise=-1
            ),
            ValueError,
            "noise",
        ),
        (
            lambda: pj.projector_coefficients(
                np.ones((2, 3, 3)), [1, 2], np.ones((1, 3, 3))
            ),
            ValueError,
            "projectors",
        ),
        (
            lambda: pj.projector_coefficients(
                np.ones((2, 3, 3)), [1, 2, 3], np.eye(3)[None]
            ),
            ValueError,
            "y",
        ),
        (
            lambda: pj.projector_coefficients(
                np.ones((2, 3, 2)), [1, 2], np.eye(3)[None]
            ),
            ValueError,
            "A",
        ),
        (
            lambda: pj.projector_coefficients(
                np.ones((2, 3, 3)), [1, 2], np.eye(4)[None]
            ),
            ValueError,
            "projectors",
        ),
        (
            lambda: pj.empirical_covariance(np.ones((2, 3, 3)), np.ones(3)),
            ValueError,
            "X",
        ),
        (
            lambda: pj.empirical_covariance(np.ones((2, 3, 3)), "x"),
            TypeError,
            "X",
        ),
        (
            lambda: pj.span_coordinates(np.ones(3), np.eye(3)[None]),
            ValueError,
            "M",
        ),
        (
            lambda: pj.projector_gd_map([1.0], [-1.0], [0.1], 0.1, 3),
            ValueError,
            "kappa",
        ),
        (
            lambda: pj.projector_gd_map([1.0], [1.0], [-0.1], 0.1, 3),
            ValueError,
            "z0",
        ),
        (
            lambda: pj.projector_gd_map([1.0], [1.0], [0.1], 0.0, 3),
            ValueError,
            "lr",
        ),
        (
            lambda: pj.projector_gd_map([1.0], [1.0], [0.1], 0.1, 2.5),
            TypeError,
            "n_steps",
        ),
        (
            lambda: pj.projector_gd_map([1.0, 2.0], [1.0], [0.1, 0.1], 0.1, 3),
            ValueError,
            "kappa",
        ),
        (
            lambda: pj.projector_gd_map([50.0], [1e-9], [1.0], 1.0, 400),
            ValueError,
            "too large",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


# -----------------------------------------------------------------------------
# span_start
@pytest.mark.parametrize("d", [9, 15])
def test_span_start_realises_the_span_moment_matrix_in_random_directions(d):
    _, _, Pi = _data(seed=4)
    z0 = np.array([1e-3, 0.2, 0.0, 2.0])
    W = pj.span_start(z0, Pi, d, np.random.default_rng(1))
    assert W.shape == (11, d)
    expected = sum(
        z * P for z, P in zip(z0, Pi)
    )  # Eq. 255 at t = 0, summed by hand
    assert np.abs(W @ W.T - expected).max() < 1e-12
    # not the aligned start: no column is a multiple of a projector's column
    aligned = sum(np.sqrt(z) * P for z, P in zip(z0, Pi))
    cols = min(d, 11)
    assert np.abs(W[:, :cols] - aligned[:, :cols]).max() > 1e-2
    # another generator, another W, the same M
    W2 = pj.span_start(z0, Pi, d, np.random.default_rng(2))
    assert (
        np.abs(W2 - W).max() > 1e-2
        and np.abs(W2 @ W2.T - expected).max() < 1e-12
    )


def test_span_start_refuses_bad_input():
    _, _, Pi = _data()
    with pytest.raises(ValueError, match="d must"):
        pj.span_start([1.0, 1.0, 1.0, 1.0], Pi, 7, 0)
    with pytest.raises(ValueError, match="z0"):
        pj.span_start([1.0, -1.0, 1.0, 1.0], Pi, 9, 0)
    with pytest.raises(ValueError, match="z0"):
        pj.span_start([1.0, 1.0], Pi, 9, 0)
    with pytest.raises(TypeError, match="rng"):
        pj.span_start([1.0] * 4, Pi, 9, None)


# -----------------------------------------------------------------------------
# Corollary 4
def _linear_network_data(sigma, s, aligned=True, seed=0, n_out=3, n_in=4, n=6):
    """Scalar outputs of a teacher y = T_* x on inputs with covariance V
    diag(sigma) V^T."""
    g = np.random.default_rng(seed)
    V = ortho_group.rvs(n_in, random_state=g)
    X = (
        np.sqrt(n)
        * V
        @ np.diag(np.sqrt(sigma))
        @ ortho_group.rvs(n, random_state=g)[:n_in]
    )
    u = ortho_group.rvs(n_out, random_state=g)[:, : len(s)]
    v = (
        V[:, : len(s)]
        if aligned
        else ortho_group.rvs(n_in, random_state=g)[:, : len(s)]
    )
    Y = u @ np.diag(s) @ v.T @ X
    S, y = [], []
    for i in range(n):  # one sample per (input, output): S = e_o x^T
        for o in range(n_out):
            S.append(np.outer(np.eye(n_out)[o], X[:, i]))
            y.append(Y[o, i])
    return np.array(S), np.array(y), u.T, v.T


def test_linear_network_coefficients_beyond_whitened_inputs():
    sigma, s = np.array([0.5, 2.0, 1.3, 0.7]), np.array([1.5, 0.4])
    S, y, u, v = _linear_network_data(sigma, s)
    co = pj.linear_network_coefficients(S, y, u, v)
    # C(Q) = Q Sigma / n_out and T = T_* Sigma / n_out (derived in the chapter
    # by hand)
    assert np.allclose(co.tau, s * sigma[:2] / 3, atol=1e-12, rtol=0)
    assert np.allclose(co.c, sigma[:2] / 3, atol=1e-12, rtol=0)
    assert co.residual < 1e-12
    # whitened inputs: c = 1/n_out for every mode
    co_w = pj.linear_network_coefficients(*_linear_network_data(np.ones(4), s))
    assert np.allclose(co_w.c, 1 / 3, atol=1e-12) and np.allclose(
        co_w.tau, s / 3, atol=1e-12
    )


def test_linear_network_coefficients_flag_a_teacher_off_eigenvectors():
    sigma, s = np.array([0.5, 2.0, 1.3, 0.7]), np.array([1.5, 0.4])
    co = pj.linear_network_coefficients(
        *_linear_network_data(sigma, s, aligned=False)
    )
    assert co.residual > 1e-2  # Eqs. 267-268 fail: Corollary 4 does not apply


def test_linear_network_coefficients_refuse_bad_input():
    S, y, u, v = _linear_network_data(np.ones(4), np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match="u must"):
        pj.linear_network_coefficients(S, y, 2 * u, v)
    with pytest.raises(ValueError, match="v"):
        pj.linear_network_coefficients(S, y, u, v[:, :3])
    with pytest.raises(ValueError, match="y"):
        pj.linear_network_coefficients(S, y[:-1], u, v)
    with pytest.raises(ValueError, match="S"):
        pj.linear_network_coefficients(S[0], y, u, v)
