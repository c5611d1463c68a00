"""nqf_lite.experiments.deep_runs: the MLP runs of chapter 9.

Expected values come from hand cases and closed forms written out here with
numpy (the linearised blocks of Prop. 1, full-batch GD on a linear model),
never from the code under test.
"""

import numpy as np
import pytest
import torch

from nqf_lite.deep.deep_nqf import DeepNQF
from nqf_lite.experiments.deep_runs import (
    bound_between,
    loss_gaps,
    mean_se,
    mlp_depth_gap,
    mlp_ensemble,
    mlp_forward,
    mlp_task,
    pair,
    rel_gap,
    train_together,
)


def test_mlp_forward_by_hand():
    W1 = torch.tensor([[1.0, 2.0], [0.0, -1.0]], dtype=torch.float64)
    W2 = torch.tensor([[3.0, 1.0]], dtype=torch.float64)
    x = torch.tensor([[0.5, 0.25]], dtype=torch.float64)
    # W1 x = (1, -0.25)
    expected = 3 * np.tanh(1.0) + np.tanh(-0.25)
    assert float(mlp_forward([W1, W2], x)) == pytest.approx(expected)


def test_mlp_task_shapes_scales_and_order():
    X, Y, W = mlp_task([3, 4], (0.1, 0.4), depth=3, n_train=20, n_test=5)
    assert X.shape == (4, 25, 8) and Y.shape == (4, 25, 1)
    assert [w.shape for w in W] == [(4, 16, 8), (4, 16, 16), (4, 1, 16)]
    # variance-major: members 0, 1 at 0.1 and 2, 3 at 0.4, same seeds, so
    # the same data and weights scaled by sqrt(0.4 / 0.1) = 2
    assert torch.equal(X[:2], X[2:]) and torch.equal(Y[:2], Y[2:])
    for w in W:
        assert torch.allclose(w[2:], 2 * w[:2], rtol=1e-14, atol=0)
    # unit variance on the training inputs only
    assert np.allclose(Y[:, :20].std(dim=1).numpy(), 1.0, rtol=1e-12)
    _, Y_raw, _ = mlp_task([3], (0.1,), depth=3, unit=False, n_train=20)
    assert not np.isclose(float(Y_raw[0, :20].std()), 1.0)


def test_pair_is_the_linearised_block():
    # Prop. 1 at leading order (slope 1): the block V tanh(U x) is V U x
    gen = torch.Generator().manual_seed(0)
    U = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    V = torch.randn(2, 4, generator=gen, dtype=torch.float64)
    x = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    f = DeepNQF.mlp((3, 4, 2)).predict_W(x, [pair(U, V)])
    assert torch.allclose(f, x @ U.T @ V.T, rtol=1e-12, atol=1e-12)
    assert torch.equal(pair(U, V), DeepNQF.mlp_weights([U, V])[0])


def test_mlp_ensemble_nqfs_are_the_closed_forms_at_step_zero():
    (X, Y, W, C), models = mlp_ensemble([1, 2], 0.05, n_train=10, n_test=4)
    x = X.numpy()
    W1, W2, W3, W4 = (w.numpy() for w in W)
    T = np.swapaxes
    net = mlp_forward(W, X).numpy()
    # 2-layer NQF: W4 W3 tanh(W2 W1 x); 1-layer NQF: W4 W1 x, plus C(x)
    nqf2 = np.tanh(x @ T(W1, 1, 2) @ T(W2, 1, 2)) @ T(W3, 1, 2) @ T(W4, 1, 2)
    nqf1 = x @ T(W1, 1, 2) @ T(W4, 1, 2)
    P2, fwd2, off2 = models["nqf2"]
    P1, fwd1, off1 = models["nqf1"]
    assert off2 is None and models["model"][2] is None
    assert np.allclose(fwd2(P2, X).numpy(), nqf2, rtol=1e-12, atol=1e-14)
    assert np.allclose(fwd1(P1, X).numpy(), nqf1, rtol=1e-12, atol=1e-14)
    assert np.allclose(C.numpy(), net - nqf1, atol=1e-14)
    assert off1 is C


def _linear_problem():
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(3, 7, 2, generator=gen, dtype=torch.float64)
    Y = torch.randn(3, 7, 1, generator=gen, dtype=torch.float64)
    w0 = torch.randn(3, 2, 1, generator=gen, dtype=torch.float64)
    models = {"lin": ([w0], lambda P, x: x @ P[0], None)}
    return X, Y, w0, models


def test_train_together_is_full_batch_gd_per_member():
    X, Y, w0, models = _linear_problem()
    hist = train_together(models, X, Y, "gd", 0.1, 4, 2, n_test=2, n_train=5)
    assert hist["lin"].shape == (3, 2, 3)  # records at steps 0, 2, 4
    # by hand: each member's own GD on its mean squared error
    x, y, w = X.numpy(), Y.numpy(), w0.numpy().copy()
    train, test = [], []
    for t in range(5):
        r = x @ w - y
        if t % 2 == 0:
            train.append((r[:, :5] ** 2).mean((1, 2)))
            test.append((r[:, 5:] ** 2).mean((1, 2)))
        grad = 2 / 5 * np.swapaxes(x[:, :5], 1, 2) @ r[:, :5]
        w = w - 0.1 * grad
    assert np.allclose(hist["lin"][:, 0], train, rtol=1e-12)
    assert np.allclose(hist["lin"][:, 1, :2], np.array(test)[:, :2])
    assert np.isnan(hist["lin"][:, 1, 2]).all()  # beyond n_test


def test_train_together_records_outputs_and_offsets():
    X, Y, w0, models = _linear_problem()
    offset = torch.ones(3, 7, 1, dtype=torch.float64)
    models["shifted"] = ([w0], models["lin"][1], offset)
    out = train_together(
        models, X, Y, "adam", 0.01, 0, 1, outputs=True, n_train=5
    )
    f = (X @ w0).numpy()[None, :, :5]
    assert np.allclose(out["lin"], f) and np.allclose(out["shifted"], f + 1)


def test_rel_gap_mean_se_and_bound_between_by_hand():
    ref = np.array([1.0, 2.0, 3.0])[:, None, None]
    other = np.ones((3, 1, 1))
    # mean |difference| = 1, mean reference loss = 2
    assert rel_gap(ref, other) == pytest.approx([0.5])
    m, se = mean_se(np.array([1.0, 2.0, 3.0, 4.0]))
    assert (m, se) == pytest.approx((2.5, np.sqrt(5 / 3) / 2))
    # logs (0, 2) and (4, 8): means 1 and 6, spreads sqrt 2 and 2 sqrt 2
    bound = bound_between(np.exp([0.0, 2.0]), np.exp([4.0, 8.0]))
    assert bound == pytest.approx(np.exp(8 / 3))


def test_mlp_depth_gap_at_step_zero_by_hand():
    gap = mlp_depth_gap([9], (0.2,), 2, steps=0)
    X, Y, (W1, W2) = mlp_task([9], (0.2,), depth=2, unit=False)
    x, y = X[0, :200].numpy(), Y[0, :200].numpy()
    W1, W2 = W1[0].numpy(), W2[0].numpy()
    net = ((np.tanh(x @ W1.T) @ W2.T - y) ** 2).mean()
    nqf = ((x @ W1.T @ W2.T - y) ** 2).mean()  # the linearised block
    assert gap.shape == (1, 1)
    assert gap[0, 0] == pytest.approx(float(abs(net - nqf) / net), rel=1e-10)


def test_loss_gaps_over_a_grid_by_hand():
    # curves (records, 2, S = 1); gap = mean |other - ref| / mean ref
    ref = np.array([4.0, 2.0]).reshape(2, 1, 1)
    runs = {
        ("gd", 1): {"model": ref, "a": ref + 1.0, "b": 2 * ref},
        ("gd", 0): {"model": ref, "a": ref, "b": ref / 2},
    }
    gaps = loss_gaps(runs, ("a", "b"))
    assert list(gaps) == [
        ("gd", "a", 1),
        ("gd", "a", 0),
        ("gd", "b", 1),
        ("gd", "b", 0),
    ]
    expected = [1 / 3, 0.0, 1.0, 0.5]  # |diff| means 1, 0, 3, 1.5 over 3
    assert [float(g[0]) for g in gaps.values()] == pytest.approx(expected)
    with pytest.raises(ValueError, match="must hold"):
        loss_gaps(runs, ("c",))
    with pytest.raises(ValueError, match="runs"):
        loss_gaps({}, ("a",))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="seed_list"):
        mlp_task([], (0.1,), depth=2)
    with pytest.raises(ValueError, match="variances"):
        mlp_task([1], (-0.1,), depth=2)
    with pytest.raises(ValueError, match="depth"):
        mlp_depth_gap([1], (0.1,), 3)
    X, Y, _, models = _linear_problem()
    with pytest.raises(ValueError, match="n_test"):
        train_together(models, X, Y, "gd", 0.1, 1, 1, n_test=4, n_train=5)
    with pytest.raises(ValueError, match="models"):
        train_together({}, X, Y, "gd", 0.1, 1, 1)
    with pytest.raises(ValueError, match="low"):
        bound_between([1.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="values"):
        mean_se([1.0])
