"""The runners of the compression chapter (nqf_lite.experiments.compression).

Expected values come from an independent route: the exact twin of Theorem 3
(gap 0), a hand-computed Jacobian, the eigenvalues of C_V by numpy, the order
sigma^4 of the tanh network's Taylor remainder, and a hand-made exponential.
"""

from __future__ import annotations

import numpy as np
import pytest

from nqf_lite import NQF, compress, data_subspace, moments, random_nqf
from nqf_lite.expansion.models import A_mlp
from nqf_lite.experiments.compression import (
    corollary3_twins,
    final_test_gap,
    growth_exponent,
    in_subspace,
    lipschitz_step,
    tanh_network_errors,
    train_with_twin,
)


def _tanh_task(seed, m=4, k=6, d=60, sigma=0.05):
    r = np.random.default_rng(seed)
    X, X_test = r.standard_normal((m, k)), r.standard_normal((2, k))
    y = X @ (0.6 * r.standard_normal(k) / np.sqrt(k))
    train, test = (
        NQF(np.stack([A_mlp(x, dphi0=1.0) for x in xs])) for xs in (X, X_test)
    )
    return X, y, train, test, sigma * r.standard_normal((k + 1, d))


def test_twin_agrees_on_training_inputs_only():
    X, y, train, test, W = _tanh_task(0)
    twin = compress(train, W, 0.05)
    gap_train, gap_test, history = train_with_twin(
        train, test, twin, W, y, 0.05, 40
    )
    assert gap_train < 1e-12 and gap_test > 1e-6
    # the history: the layer's own training run, first prediction
    _, f = train.train(W, y, 0.05, 40)
    np.testing.assert_allclose(history[:, 0], f[1:, 0], atol=1e-12)
    assert final_test_gap(train, test, W, y, 0.05, 40) > 1e-6


def test_in_subspace_predicts_like_the_model():
    model = random_nqf(5, 9, 3, scale_g=0.3, scale_B=0.1, seed=1)
    V = data_subspace(model)
    W = np.random.default_rng(2).standard_normal((9, 7))
    inner = in_subspace(model, V)
    np.testing.assert_allclose(
        inner.predict(*moments(V.T @ W)), model.predict_W(W), atol=1e-12
    )


def test_lipschitz_step_at_zero_by_hand():
    # ZGZ at M = 0, mu = 0: the step is dM -> (I - lr H) dM (I - lr H),
    # dmu -> (I - lr H) dmu with H = sum 2 l' A fixed, so the norm is
    # max(max |1 - lr h|^2, max |1 - lr h|) over the eigenvalues h of H
    r = np.random.default_rng(3)
    A = np.stack([(S + S.T) / 2 for S in r.standard_normal((3, 4, 4))])
    f0, y = r.standard_normal(3), r.standard_normal(3)
    model, lr = NQF(A, f0=f0), 0.1
    H = np.einsum("n,nij->ij", 2 * 2 * (f0 - y) / 3, A)
    s = np.abs(1 - lr * np.linalg.eigvalsh(H)).max()
    L = lipschitz_step(model, np.zeros((4, 4)), np.zeros(4), y, 10, lr)
    assert L == pytest.approx(max(s**2, s), rel=1e-6)


def test_corollary3_twins_initial_error_and_exact_twin():
    X, y, train, _, W = _tanh_task(4, sigma=0.01)
    member = corollary3_twins(train, W, y, 0.05, 10)
    d, twins = W.shape[1], member["twins"]
    kV = max(twins) - 1
    assert kV == 4 + 1  # rank(X) + 1 output
    # e0 by hand: d'/d times the norm of the discarded eigenvalues of C_V
    V = data_subspace(train)
    M_V, mu_V = moments(V.T @ W)
    for ds, (e0, e_t, f_pair) in twins.items():
        C = d / ds * (M_V - np.outer(mu_V, mu_V) / d)
        lam = np.linalg.eigvalsh(C)[::-1]
        expected = ds / d * np.sqrt(np.sum(lam[ds - 1 :] ** 2))
        assert e0 == pytest.approx(expected, rel=1e-8, abs=1e-15)
        assert e_t.shape == (11,) and f_pair.shape == (11, 2)
    # d' = k_V + 1: the twin is exact (Theorem 3)
    assert np.abs(np.diff(twins[kV + 1][2], axis=1)).max() < 1e-12
    assert np.isfinite(member["L"]) and member["L"] > 0


def test_tanh_network_error_is_of_order_sigma_to_the_fourth():
    X, y, train, _, W = _tanh_task(5)
    errors = [
        tanh_network_errors(train, X, y, s * W[None], 1e-3, 1)[0]
        for s in (1.0, 0.5)
    ]
    assert errors[0] / errors[1] == pytest.approx(16, rel=0.1)


def test_growth_exponent_of_an_exponential():
    t = np.arange(6)
    assert growth_exponent(2.0 * np.exp(0.1 * 3.0 * t), 0.1) == pytest.approx(
        3.0, rel=1e-12
    )


def test_bad_input_is_named():
    X, y, train, test, W = _tanh_task(0)
    with pytest.raises(ValueError, match="e_t"):
        growth_exponent([1.0], 0.1)
    with pytest.raises(ValueError, match="lr"):
        growth_exponent([1.0, 2.0], -0.1)
    with pytest.raises(ValueError, match="W"):
        final_test_gap(train, test, W[:3], y, 0.05, 5)
    with pytest.raises(ValueError, match="W_init"):
        tanh_network_errors(train, X, y, W[None, :3], 0.05, 1)
    with pytest.raises(ValueError, match="V"):
        in_subspace(train, np.eye(3))
    with pytest.raises(TypeError, match="model"):
        lipschitz_step("model", np.eye(2), np.zeros(2), y, 3, 0.1)
