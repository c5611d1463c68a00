"""The runners of chapter 10 (nqf_lite.experiments.limits), against hand
cases and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nqf_lite import random_nqf
from nqf_lite.book.seeding import seeds
from nqf_lite.deep.higher_order import theorem13
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments import limits as lx


def test_normal_draws_are_one_generator_per_seed():
    draws = lx.normal_draws(3, (2, 4), "test", "limits")
    assert draws.shape == (3, 2, 4)
    for j, s in enumerate(seeds(3, "test", "limits")):
        expected = np.random.default_rng(s).standard_normal((2, 4))
        np.testing.assert_array_equal(draws[j], expected)
    assert not np.allclose(draws[0], draws[1])


def _exp_layer(W, x):
    """exp(x . sum_i w_i) - 1: t -> f(tW) has coefficients s^k / k!."""
    return torch.exp(x @ W.sum(dim=1)) - 1.0


def test_taylor_coefficients_of_an_exponential():
    W = np.array([[0.3, -0.1], [0.2, 0.4]])
    x = torch.tensor([1.0, -0.5], dtype=torch.float64)
    s = float(x.numpy() @ W.sum(axis=1))
    coef = lx.taylor_coefficients(_exp_layer, W, x, 4)
    expected = [s**k / math.factorial(k) for k in range(1, 5)]
    np.testing.assert_allclose(coef, expected, rtol=1e-12)


def _square_of_sum(W, x):
    """(sum_i w_i)^2 with one parameter per unit (p = 1)."""
    return W.sum() ** 2


def test_partition_terms_of_a_square_by_hand():
    x = torch.zeros(1, dtype=torch.float64)
    e = theorem13(_square_of_sum, x, 1, 2, d=3)
    w = np.array([[0.5, -1.0, 2.0]])
    # (sum w)^2 = sum w_i^2 (one neuron) + sum_{i != j} w_i w_j (two)
    own = float((w**2).sum())
    np.testing.assert_allclose(lx.partition_term(e, (2,), w), own)
    cross = float(w.sum() ** 2 - own)
    np.testing.assert_allclose(lx.partition_term(e, (1, 1), w), cross)
    with pytest.raises(ValueError, match="lam"):
        lx.partition_term(e, (3,), w)


def test_series_remainders_fall_one_order_faster():
    W = np.array([[0.3, -0.1], [0.2, 0.4]])
    x = torch.tensor([1.0, -0.5], dtype=torch.float64)
    s = float(x.numpy() @ W.sum(axis=1))
    terms = [s**k / math.factorial(k) for k in range(1, 4)]
    eps = np.array([1e-2, 3e-2])
    rem = lx.series_remainders(_exp_layer, W, x, eps, terms)
    # the first term left out: (eps s)^(K+1) / (K+1)!
    lead = [(eps * s) ** (K + 1) / math.factorial(K + 1) for K in (1, 2, 3)]
    np.testing.assert_allclose(rem, np.abs(np.array(lead).T), rtol=0.05)
    with pytest.raises(ValueError, match="eps"):
        lx.series_remainders(_exp_layer, W, x, [-1e-3], terms)


def test_odd_fractions_of_relu_and_tanh():
    x = torch.tensor([0.7, -0.2, 0.4], dtype=torch.float64)
    W = torch.tensor(np.random.default_rng(1).standard_normal((4, 6)))
    relu = lambda W, x: (W[3] * torch.relu(x @ W[:3])).sum()  # noqa: E731
    tanh = lambda W, x: (W[3] * torch.tanh(x @ W[:3])).sum()  # noqa: E731
    # relu: f(hW) = h^2 a, f(-hW) = -h^2 b with a = sum v relu(z) and
    # b = sum v relu(-z): the scale h drops out
    z = x @ W[:3]
    a = float((W[3] * torch.relu(z)).sum())
    b = float((W[3] * torch.relu(-z)).sum())
    rho = abs(a + b) / (abs(a) + abs(b))
    fr = lx.odd_fractions(relu, W, x, [1e-3, 1.0])
    np.testing.assert_allclose(fr, [rho, rho], rtol=1e-9)
    # tanh is odd per unit: f(-W) = f(W) exactly (v tanh(u.x) is even)
    assert max(lx.odd_fractions(tanh, W, x, [1e-3, 1.0])) < 1e-12


def test_normed_layer_is_layer_norm_by_hand():
    rng = np.random.default_rng(2)
    W, x = rng.standard_normal((4, 5)), rng.standard_normal(3)
    z = x @ W[:3]
    ln = (z - z.mean()) / np.sqrt(z.var() + 1e-3)
    rms = z / np.sqrt((z**2).mean() + 1e-3)
    for kind, h in (("ln", ln), ("rms", rms)):
        f = lx.normed_layer(1e-3, kind, 3)
        got = float(f(torch.tensor(W), torch.tensor(x)))
        np.testing.assert_allclose(got, W[3] @ h, rtol=1e-12)
    with pytest.raises(ValueError, match="kind"):
        lx.normed_layer(1e-3, "batch", 3)
    with pytest.raises(ValueError, match="eps"):
        lx.normed_layer(-1.0, "ln", 3)


class _Zero:
    def predict(self, W):
        return 0.0


def test_nqf_error_of_a_zero_expansion_is_one():
    W = np.array([[0.5, -0.3]])
    x = torch.ones(1, dtype=torch.float64)
    err = lx.nqf_error(_square_of_sum, _Zero(), [W, 2 * W], x)
    np.testing.assert_array_equal(err, [1.0, 1.0])


def test_reflection_gaps_gd_keeps_m_adam_does_not():
    g = np.random.default_rng(3)
    model = random_nqf(12, 4, seed=g)
    y, W = g.standard_normal(12), 0.01 * g.standard_normal((4, 6))
    n = g.standard_normal(6)
    n = (n - n.mean()) / np.linalg.norm(n - n.mean())
    O = np.eye(6) - 2 * np.outer(n, n)
    gd, adam = lx.reflection_gaps(model, W, O, y, 0.01, 50)
    assert gd.shape == adam.shape == (50,)
    assert gd.max() < 1e-10 and adam.max() > 1e-2
    # O = I: the two runs are one run
    gd, adam = lx.reflection_gaps(model, W, np.eye(6), y, 0.01, 5)
    assert gd.max() == 0.0 and adam.max() == 0.0
    with pytest.raises(ValueError, match="O"):
        lx.reflection_gaps(model, W, np.eye(5), y, 0.01, 5)


def test_fourier_exponents_from_zero_stand_still():
    # from a = W = 0 nothing moves: the loss is (1/M) sum y^2 = c^2 sum b_k^2
    _, psi = fo.fourier_features(32, 4)
    zero = np.zeros((2, 4))
    R = lx.fourier_exponents(
        zero, zero, psi, 0.5, 1.5, 0.5, 1.0, 0.1, 40, (1.0, 3.0)
    )
    L0 = 0.25 * sum(k**-3.0 for k in range(1, 5))
    np.testing.assert_allclose(R["L_net"], L0, rtol=1e-12)
    np.testing.assert_allclose(R["L_nqf"], L0, rtol=1e-12)
    np.testing.assert_allclose(R["net"], 0.0, atol=1e-12)
    assert R["arg"].max() == 0.0 and R["a1"].max() == 0.0
    assert R["pred"] == pytest.approx((3.0 - 1) / (0.5 + 1.5))
    with pytest.raises(ValueError, match="window"):
        lx.fourier_exponents(
            zero, zero, psi, 0.5, 1.5, 0.5, 1.0, 0.1, 40, (3.0, 1.0)
        )


def test_escape_time_by_hand():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    L = np.array([[1.0, 2.0], [0.6, 1.5], [0.4, 1.2], [0.2, 1.1]])
    np.testing.assert_array_equal(lx.escape_time(t, L), [2.0, np.inf])
    with pytest.raises(ValueError, match="L"):
        lx.escape_time(t, L[:3])


def test_error_slopes_count_the_orders_left_out():
    x = torch.tensor([1.0, -0.5], dtype=torch.float64)
    s = lambda W: float(x.numpy() @ W.sum(axis=1))  # noqa: E731
    first = lambda W: s(W)  # noqa: E731
    second = lambda W: s(W) + s(W) ** 2 / 2  # noqa: E731
    Ws = np.random.default_rng(8).standard_normal((3, 2, 2))
    eps = np.array([1e-3, 2e-3, 4e-3])
    slopes = lx.error_slopes(_exp_layer, x, Ws, eps, first, second)
    assert slopes.shape == (3, 2)
    np.testing.assert_allclose(slopes, [[2.0, 3.0]] * 3, atol=0.02)
    with pytest.raises(ValueError, match="eps"):
        lx.error_slopes(_exp_layer, x, Ws, [1e-3], first)


def test_reflection_draw_is_reflection_gaps_on_its_draws():
    lr, n = 0.01, 20
    gd, adam = lx.reflection_draw(np.random.default_rng(5), lr, n)
    # the same draws by hand, in the documented order
    g = np.random.default_rng(5)
    model = random_nqf(20, 6, seed=g)
    y = g.standard_normal(20)
    W = 0.01 * g.standard_normal((6, 12))
    n_vec = g.standard_normal(12)
    n_vec = n_vec - n_vec.mean()
    n_vec = n_vec / np.linalg.norm(n_vec)
    O = np.eye(12) - 2 * np.outer(n_vec, n_vec)
    np.testing.assert_allclose(O @ O.T, np.eye(12), atol=1e-14)
    np.testing.assert_allclose(O @ np.ones(12), np.ones(12), atol=1e-14)
    gd_hand, adam_hand = lx.reflection_gaps(model, W, O, y, lr, n)
    np.testing.assert_allclose(gd, gd_hand, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(adam, adam_hand, rtol=1e-12)
    assert gd.max() < 1e-10 < 1e-3 < adam.max()  # Cor. 2 vs Adam
    with pytest.raises(ValueError, match="lr"):
        lx.reflection_draw(np.random.default_rng(5), -0.1, n)


def _tanh_data(seed=0, m=6, k=3):
    g = np.random.default_rng(seed)
    return g.standard_normal((m, k)), g.standard_normal(m)


def test_net_and_nqf_losses_start_from_the_hand_losses():
    X, y = _tanh_data()
    W0 = 0.3 * np.random.default_rng(1).standard_normal((2, 4, 5))
    t, L_net, L_nqf = lx.net_and_nqf_losses(X, y, W0, 0.05, 40, 10)
    np.testing.assert_allclose(t, [0.0, 0.5, 1.0, 1.5, 2.0])
    assert L_net.shape == L_nqf.shape == (5, 2)
    for j, W in enumerate(W0):
        U, v = W[:3], W[3]
        f_net = np.tanh(X @ U) @ v  # sum_i v_i tanh(u_i . x)
        f_nqf = (X @ U) @ v  # Prop. 1: tanh'(0) = 1, M = W W^T
        assert L_net[0, j] == pytest.approx(np.mean((f_net - y) ** 2))
        assert L_nqf[0, j] == pytest.approx(np.mean((f_nqf - y) ** 2))
    assert np.all(np.diff(L_nqf, axis=0) < 0)  # a small step descends
    with pytest.raises(ValueError, match="X"):
        lx.net_and_nqf_losses(X[0], y, W0, 0.05, 40, 10)


def _tanh_layer(W, x):
    return (W[3] * torch.tanh(x @ W[:3])).sum()


def test_hand_error_of_a_tanh_layer():
    x = torch.tensor([0.4, -0.7, 1.1], dtype=torch.float64)
    e = theorem13(_tanh_layer, x, 4, 4, d=3)
    W = np.random.default_rng(2).standard_normal((4, 3))
    z, v = x.numpy() @ W[:3], W[3]
    # tanh(z) = z - z^3/3 + ...: order 2 is v z, order 4 is -v z^3/3
    closed = {(2,): (v * z).sum(), (4,): -(v * z**3).sum() / 3}
    assert lx.hand_error(e, W, closed) < 1e-12
    wrong = {(2,): closed[(2,)], (4,): 2 * closed[(4,)]}
    assert lx.hand_error(e, W, wrong) > 0.1
    with pytest.raises(ValueError, match="closed"):
        lx.hand_error(e, W, {})


def test_remainder_orders_of_a_tanh_layer():
    x = torch.tensor([0.4, -0.7, 1.1], dtype=torch.float64)
    e = theorem13(_tanh_layer, x, 4, 4, d=3)
    W = np.random.default_rng(3).standard_normal((4, 3))
    eps = np.geomspace(0.02, 0.1, 5)
    err, slopes, slopes_ctrl, rem, rem_ctrl = lx.remainder_orders(
        _tanh_layer, e, e, W, x, eps
    )
    assert err < 1e-12
    # odd tanh: orders 1 and 3 vanish, so the remainders after K = 1..4
    # are O(eps^2), O(eps^4), O(eps^4), O(eps^6)
    np.testing.assert_allclose(slopes, [2, 4, 4, 6], atol=0.05)
    np.testing.assert_array_equal(slopes, slopes_ctrl)
    assert rem.shape == rem_ctrl.shape == (5, 4)
    low = theorem13(_tanh_layer, x, 4, 2, d=3)
    with pytest.raises(ValueError, match="e_ctrl"):
        lx.remainder_orders(_tanh_layer, e, low, W, x, eps)


def test_norm_errors_depend_on_sigma_over_sqrt_eps_only():
    x = torch.tensor([0.9, -1.2, 0.5], dtype=torch.float64)
    W = np.random.default_rng(4).standard_normal((3, 4, 6))
    for kind in ("ln", "rms"):
        small, large = (
            lx.norm_errors(eps, kind, x, 0.3 * np.sqrt(eps) * W)
            for eps in (1e-6, 1e-2)
        )
        assert small.shape == (3,)
        # h(c z) = h(z): the layer is a function of the weights over
        # sqrt(eps), so is its expansion
        np.testing.assert_allclose(small, large, rtol=1e-6)
    with pytest.raises(ValueError, match="Ws"):
        lx.norm_errors(1e-2, "ln", x, np.ones(4))


def test_plateau_runs_of_a_linear_model_by_hand():
    X, y = _tanh_data(6, m=8, k=3)
    X_t = torch.tensor(X)
    net = lambda W: (X_t @ W[..., 0, :3].unsqueeze(-1)).squeeze(-1)  # noqa
    W_unit = np.random.default_rng(7).standard_normal((2, 1, 3))
    runs = lx.plateau_runs(net, W_unit, y, 0.1, {0.5: 6, 2.0: 4}, {}, 2)
    for sig, n in ((0.5, 6), (2.0, 4)):
        w = sig * W_unit[:, 0, :]  # GD on (1/m)|Xw - y|^2 by hand
        L = []
        for step in range(n + 1):
            if step % 2 == 0:
                L.append(np.mean((w @ X.T - y) ** 2, axis=1))
            w = w - 0.1 * 2 / len(y) * (w @ X.T - y) @ X
        np.testing.assert_allclose(runs[sig]["net"], L, rtol=1e-10)
        np.testing.assert_allclose(runs[sig]["t"], 0.2 * np.arange(len(L)))
    with pytest.raises(ValueError, match="steps"):
        lx.plateau_runs(net, W_unit, y, 0.1, {}, {}, 2)
