"""Tests of nqf_lite.design.forecast.predict_learning against hand-derived GLV
coefficients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.stats import ortho_group

from nqf_lite.design.forecast import predict_learning


def quadratic_layer(S_of_x):
    """``f(W, x) = sum_i w_i^T S(x) w_i``: a ZGZ layer with A(x) = S(x)
    exactly."""

    def f(W, x):
        S = torch.as_tensor(S_of_x(x), dtype=torch.float64)
        return torch.einsum("pi,pq,qi->", W, S, W)

    return f


DIAG = quadratic_layer(
    np.diag
)  # A(x) = diag(x): the diagonal network of Table 1 (times 4)


def _orthogonal_features(m=6, p=3, seed=0):
    """Diagonal data whose columns are orthogonal (C diagonal): Theorem 6 holds
    exactly."""
    Q = ortho_group.rvs(m, random_state=seed)[:, :p]
    X = Q * np.array([2.0, 1.5, 1.0])  # x_mu = row mu, columns orthogonal
    y = Q @ np.array([0.9, 0.5, 0.2])
    return X, y


def test_diagonal_layer_matches_hand_values():
    X, y = _orthogonal_features()
    m, p = X.shape
    fc = predict_learning(DIAG, list(X), y, p, eps=1e-6, lr=0.05)
    # hand: lambda_{mu,k} = x_{mu,k}; r_k = (8/m) sum_mu x_mu,k y_mu; C = (8/m)
    # X^T X
    r_hand = 8.0 / m * X.T @ y
    C_hand = 8.0 / m * X.T @ X
    perm = np.argsort(-r_hand)
    np.testing.assert_allclose(fc.rates, r_hand[perm], atol=1e-10)
    np.testing.assert_allclose(
        fc.competition, C_hand[np.ix_(perm, perm)], atol=1e-10
    )
    np.testing.assert_allclose(
        np.abs(fc.modes), np.eye(p)[:, perm], atol=1e-10
    )
    assert (
        fc.commuting_error <= 1e-12
        and fc.commuting
        and fc.zgz
        and fc.coupling <= 1e-12
    )
    # switch-on: half of r/C, Eq. 39 solved by hand
    c = np.diag(C_hand)[perm]
    r = r_hand[perm]
    t_hand = np.log((r / c - 1e-6) / 1e-6) / r
    np.testing.assert_allclose(fc.switch_on_times, t_hand, rtol=1e-10)
    np.testing.assert_array_equal(fc.order, np.argsort(t_hand))
    # plateaus: L0 = mean(y^2), drops r^2/(8 C_kk)
    drops = r**2 / (8 * c)
    expected = np.mean(y**2) - np.concatenate(
        [[0.0], np.cumsum(drops[np.argsort(t_hand)])]
    )
    np.testing.assert_allclose(fc.plateaus, expected, atol=1e-10)
    # after every mode, the loss is the least-squares residual of y on the
    # columns of X
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    assert abs(fc.plateaus[-1] - np.mean((X @ beta - y) ** 2)) <= 1e-10


def test_switch_on_agrees_with_integrated_glv():
    X, y = _orthogonal_features(seed=3)
    m, p = X.shape
    eps = 1e-8
    fc = predict_learning(DIAG, list(X), y, p, eps=eps, lr=1e-3)
    lam = X @ np.abs(fc.modes)  # rows: eigenvalues on the forecast's modes
    r, C = 8 / m * lam.T @ y, 8 / m * lam.T @ lam
    zinf = r / np.diag(C)

    def half(k):
        def rhs(_t, u):
            return r - C @ np.exp(u)

        ev = lambda _t, u: u[k] - np.log(zinf[k] / 2)  # noqa: E731
        ev.terminal, ev.direction = True, 1
        sol = solve_ivp(
            rhs,
            (0, 1e4),
            np.full(p, np.log(eps)),
            events=ev,
            rtol=1e-12,
            atol=1e-12,
            method="DOP853",
        )
        return sol.t_events[0][0]

    t_int = np.array([half(k) for k in range(p)])
    np.testing.assert_allclose(fc.switch_on_times, t_int, rtol=1e-7)


def test_switch_on_steps_agree_with_gradient_descent():
    X, y = _orthogonal_features(seed=5)
    m, p = X.shape
    eps, lr = 1e-6, 0.1
    fc = predict_learning(DIAG, list(X), y, p, eps=eps, lr=lr)
    # GD on W (one neuron per mode along the forecast's modes, z_k(0) = eps)
    # written out by hand
    W = np.sqrt(eps) * fc.modes.copy()
    zinf = fc.rates / np.diag(fc.competition)
    crossed = np.full(p, np.nan)
    for step in range(1, 4000):
        f = np.einsum("pi,mp,pi->m", W, X, W)
        grad = (2 / m) * np.einsum("m,mp,pi->pi", f - y, X, W) * 2
        W = W - lr * grad
        z = ((fc.modes.T @ W) ** 2).sum(axis=1)
        crossed = np.where(np.isnan(crossed) & (z >= zinf / 2), step, crossed)
    assert np.all(
        np.abs(crossed - fc.switch_on_steps) <= 0.02 * fc.switch_on_steps + 1
    )


def test_plateaus_of_competing_modes_are_glv_fixed_points():
    # diagonal (commuting) data with correlated columns: C is not diagonal
    rng = np.random.default_rng(8)
    X = np.abs(rng.standard_normal((8, 3))) + 0.2
    y = X @ np.array([0.5, 0.3, 0.2]) + 0.05 * rng.standard_normal(8)
    fc = predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.01)
    assert fc.coupling > 0.1 and fc.commuting_error <= 1e-12
    k1 = fc.order[0]
    r1, c1 = fc.rates[k1], fc.competition[k1, k1]
    assert (
        abs(fc.plateaus[1] - (np.mean(y**2) - r1**2 / (8 * c1))) <= 1e-10
    )  # one mode: Theorem 6 drop
    # final plateau: loss at the end of a long GLV run (written out
    # independently)
    lam = X @ np.abs(fc.modes)
    r, C = 8 / 8 * lam.T @ y, 8 / 8 * lam.T @ lam
    sol = solve_ivp(
        lambda _t, u: r - C @ np.exp(u),
        (0, 4e3),
        np.full(3, np.log(1e-6)),
        rtol=1e-11,
        atol=1e-12,
        method="LSODA",
    )
    z = np.exp(sol.y[:, -1])
    assert abs(fc.plateaus[-1] - np.mean((lam @ z - y) ** 2)) <= 1e-8


def test_commuting_error_zero_for_rotated_data_with_degenerate_rates():
    p, m = 4, 5
    Q = ortho_group.rvs(p, random_state=1)
    rng = np.random.default_rng(2)
    lam = rng.standard_normal((m, p))
    # choose labels so that r_1 = r_2: Y is degenerate and its eigenbasis alone
    # is ambiguous
    y = np.linalg.lstsq(lam.T, np.array([1.0, 1.0, 0.5, -0.3]), rcond=None)[0]
    A = [Q @ np.diag(l) @ Q.T for l in lam]
    fc = predict_learning(
        quadratic_layer(lambda a: a), A, y, p, eps=1e-6, lr=0.01
    )
    assert fc.commuting_error <= 1e-9
    np.testing.assert_allclose(
        np.sort(fc.rates)[::-1][:2], [8 / m, 8 / m], rtol=1e-9
    )


def test_commuting_error_large_for_non_commuting_data():
    rng = np.random.default_rng(4)
    xs = list(rng.standard_normal((6, 3)))
    y = np.abs(rng.standard_normal(6))
    with pytest.warns(UserWarning, match="do not commute"):
        fc = predict_learning(
            quadratic_layer(lambda x: np.outer(x, x)),
            xs,
            y,
            3,
            eps=1e-6,
            lr=0.01,
        )
    assert fc.commuting_error >= 0.1 and not fc.commuting
    # the rates are still the early-time ones: r_k = 2 x eigenvalue of Y =
    # (4/m) sum y x x^T
    Y = 4 / 6 * sum(yy * np.outer(x, x) for x, yy in zip(xs, y))
    np.testing.assert_allclose(
        fc.rates, 2 * np.sort(np.linalg.eigvalsh(Y))[::-1], atol=1e-10
    )


def test_f0_is_subtracted_and_vector_outputs_flatten():
    # f = sum_k x_k (w_k^2 summed over neurons) per output o, plus an offset
    # c_o: V = 2 outputs
    def f(W, x):
        x = torch.as_tensor(x, dtype=torch.float64)
        q = (W**2).sum(axis=1) @ x
        return torch.stack([q + 1.0, 2.0 * q - 0.5])

    X, y1 = _orthogonal_features(seed=7)
    Y = np.stack([y1 + 1.0, 2 * y1 - 0.5], axis=1)
    fc = predict_learning(f, list(X), Y, 3, eps=1e-6, lr=0.01)
    np.testing.assert_allclose(fc.f0, np.tile([1.0, -0.5], len(X)), atol=1e-12)
    m = len(
        X
        # Eq. 26: the loss sums over the V = 2 outputs and averages over the m
        # inputs
    )
    lam = np.repeat(X, 2, axis=0) * np.tile([1.0, 2.0], len(X))[:, None]
    tgt = np.stack([y1, 2 * y1], axis=1).ravel()
    r_hand = np.sort(8 / m * lam.T @ tgt)[::-1]
    np.testing.assert_allclose(fc.rates, r_hand, atol=1e-10)


def test_plot_and_abundances():
    import matplotlib

    matplotlib.use("Agg")
    X, y = _orthogonal_features()
    fc = predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.05)
    steps, loss = fc.staircase()
    assert steps.size == loss.size == fc.plateaus.size + 1
    assert fc.plot() is not None
    W = np.random.default_rng(0).standard_normal((3, 5))
    np.testing.assert_allclose(
        fc.abundances(W).sum(), np.trace(W @ W.T), rtol=1e-12
    )
    with pytest.raises(ValueError, match="W must have shape"):
        fc.abundances(np.ones((4, 2)))


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(f=3), TypeError, "f must be callable"),
        (dict(xs=[]), ValueError, "xs must hold at least one"),
        (dict(xs=5), TypeError, "xs must be a sequence"),
        (dict(y=np.ones(5)), ValueError, "y must have shape"),
        (dict(y=np.full(6, np.nan)), ValueError, "y contains NaN"),
        (dict(eps=0.0), ValueError, "eps must be finite and > 0"),
        (dict(eps="a"), TypeError, "eps must be a positive number"),
        (dict(lr=-1.0), ValueError, "lr must be finite and > 0"),
        (dict(eps=10.0), ValueError, "eps = 10 is not small"),
        (
            dict(y=-np.ones(6)),
            ValueError,
            "no mode has a positive growth rate",
        ),
        (dict(p=0), ValueError, "p must be >= 1"),
    ],
)
def test_bad_inputs(kwargs, err, match):
    """Each bad argument raises an error that names it."""
    X, y = _orthogonal_features()
    args = dict(f=DIAG, xs=list(np.abs(X)), y=np.abs(y), p=3, eps=1e-6, lr=0.1)
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(err, match=match):
            predict_learning(
                args.pop("f"),
                args.pop("xs"),
                args.pop("y"),
                args.pop("p"),
                **args,
            )


def test_relu_layer_is_rejected():
    from nqf_lite import NotSmoothError

    def relu(W, x):
        return (torch.relu(torch.as_tensor(x) @ W[:-1]) * W[-1]).sum()

    with pytest.raises(NotSmoothError):
        predict_learning(relu, [np.ones(2)], [1.0], 3, eps=1e-6, lr=0.1)
