"""The runners of the closure chapter (nqf_lite.experiments.closure).

Expected values come from an independent route: explicit weights against the
closed recursion, plain GD against momentum at beta = 0, a hand-built kernel,
and the exponent -alpha of Proposition 9.
"""

from __future__ import annotations

import numpy as np
import pytest

from nqf_lite import NQF, moments, ntk_from_moments, realize_moments
from nqf_lite.dynamics.compression import k_V
from nqf_lite.dynamics.scaling import fit_loglog_slope
from nqf_lite.experiments.closure import (
    adam_ensemble,
    adam_twins,
    closure_gap,
    general_task,
    heavy_ball_predictions,
    kernel_motion,
    momentum_gaps,
    ntk_autograd,
    ntk_change,
    rotation_fixing_ones,
    same_moments_gaps,
    twin_gap,
)


@pytest.fixture(scope="module")
def task():
    return general_task(3, 6, 8, 4, 20)


def test_general_task_draws_a_general_nqf(task):
    model, labels, batches, W = task
    assert (model.m, model.p, W.shape, labels.shape) == (6, 8, (8, 10), (6,))
    assert not model.zgz and k_V(model) == 4
    assert len(batches) == 20
    assert all(len(set(b)) == 2 and b.max() < 6 for b in batches)
    again = general_task(3, 6, 8, 4, 20)
    assert np.array_equal(again[3], W) and np.array_equal(again[1], labels)


def test_momentum_identity_and_beta_zero_is_gd(task):
    model, y, batches, W = task
    one_step, one_pred, drift = momentum_gaps(model, W, y, 0.01, 0.9, batches)
    assert one_step.shape == (20,) and max(one_step) < 1e-12
    assert max(one_pred) < 1e-12 and max(drift) < 1e-10
    # beta = 0: heavy ball is plain (S)GD, whose predictions model.train gives
    f = heavy_ball_predictions(model, W, y, 0.01, 0.0, batches)
    _, f_gd = model.train(W, y, 0.01, 20, batches=batches)
    np.testing.assert_allclose(f, f_gd, rtol=0, atol=1e-12)


def test_rotation_fixes_ones_and_is_orthogonal():
    O = rotation_fixing_ones(np.random.default_rng(1), 7)
    np.testing.assert_allclose(O @ O.T, np.eye(7), atol=1e-12)
    np.testing.assert_allclose(O @ np.ones(7), np.ones(7), atol=1e-12)


def test_twin_gap_of_gd_twins_and_of_a_frozen_pair(task):
    model, y, _, W = task
    O = rotation_fixing_ones(np.random.default_rng(2), W.shape[1])

    def gd(W, state):
        return model.gd_step(W, y, 0.01), None

    assert twin_gap(model, gd, W, W @ O, 5).max() < 1e-12
    # a step that does nothing: the gap stays the initial one
    initial = np.abs(model.predict_W(W) - model.predict_W(2 * W)).max()
    curve = twin_gap(model, lambda W, s: (W, s), W, 2 * W, 3)
    np.testing.assert_allclose(curve, initial, rtol=1e-15)


def test_adam_separates_rotated_twins_only(task):
    model, y, _, W = task
    rotated, permuted, gd = adam_twins(
        model, y, W, np.random.default_rng(4), 0.01, 0.01, 30
    )
    # entrywise updates commute with permutations, GD with any O (Thm 2)
    assert permuted.max() < 1e-12 and gd.max() < 1e-12
    assert rotated.max() > 1e-4 and rotated.shape == (30,)


def test_ntk_autograd_by_hand():
    # p = 1, d = 2: f = g mu + B mu^2 + A (w1^2 + w2^2), so
    # df/dw_i = g + 2 B mu + 2 A w_i
    A, g, B = np.array([0.3, -0.7]), np.array([0.5, 1.1]), np.array([0.2, 0])
    model = NQF(A.reshape(2, 1, 1), g=g.reshape(2, 1), B=B.reshape(2, 1, 1))
    w = np.array([0.4, -1.3])
    J = (g + 2 * B * w.sum())[:, None] + 2 * A[:, None] * w[None, :]
    np.testing.assert_allclose(
        ntk_autograd(model, w.reshape(1, 2)), J @ J.T, atol=1e-14
    )


def test_kernel_motion_against_explicit_weights(task):
    model, y, _, W = task
    M, mu = moments(W)
    W40 = realize_moments(M, mu, 40, rng=np.random.default_rng(0))
    W_T, _ = model.train(W40, y, 0.01, 15)
    T0, T = ntk_autograd(model, W40), ntk_autograd(model, W_T)
    expected = np.linalg.norm(T - T0) / np.linalg.norm(T0)
    assert kernel_motion(model, M, mu, 40, y, 0.01, 15) == pytest.approx(
        expected, rel=1e-9
    )
    # already at the targets: the kernel does not move
    f = model.predict(M, mu)
    assert kernel_motion(model, M, mu, 40, f, 0.01, 15) < 1e-14
    np.testing.assert_allclose(
        ntk_from_moments(model, M, mu, 40), T0, rtol=1e-10, atol=1e-12
    )


def test_ntk_change_falls_like_d_to_the_minus_alpha():
    widths = 10 ** np.arange(6, 10)
    change = ntk_change(5, 0.5, widths)
    window = (widths[0], widths[-1])
    slope = fit_loglog_slope(widths, change, window).slope
    assert slope == pytest.approx(-0.5, abs=0.05)


def test_closure_gap_is_round_off_only_from_the_true_moments(task):
    model, y, batches, W = task
    M, mu = moments(W)
    W30 = realize_moments(M, mu, 30, rng=np.random.default_rng(1))
    assert closure_gap(model, [W, W30], (M, mu), y, 0.01, 20, batches) < 1e-10
    # a wrong start (M doubled): the recursion no longer tracks the layer
    wrong = closure_gap(model, [W], (2 * M, mu), y, 0.01, 20, batches)
    assert wrong > 1e-3


def test_same_moments_gaps_vanish_without_steps_only():
    rngs = [np.random.default_rng(j) for j in range(2)]
    gaps = same_moments_gaps([3, 4], rngs, (6, 8, 4, 5), 0.01, 20)
    assert gaps.shape == (2,) and gaps.min() > 1e-6  # d v parts the widths
    # before any step the prediction depends on (M, mu) only (Eq. 20)
    rngs = [np.random.default_rng(j) for j in range(2)]
    at_start = same_moments_gaps([3, 4], rngs, (6, 8, 4, 5), 0.01, 0)
    assert at_start.max() < 1e-12


def test_adam_ensemble_stacks_the_members(task):
    model, y, _, _ = task
    rotated, permuted, gd = adam_ensemble(
        model, y, [5, 6, 7], (8, 10), 0.01, 0.01, 12
    )
    assert rotated.shape == permuted.shape == gd.shape == (3, 12)
    # member 1 by hand: its own generator draws W, then the twins
    r = np.random.default_rng(6)
    W = 0.1 * r.standard_normal((8, 10))
    hand = adam_twins(model, y, W, r, 0.01, 0.01, 12)
    np.testing.assert_array_equal(rotated[1], hand[0])
    assert permuted.max() < 1e-12 and gd.max() < 1e-12
    assert rotated.max() > 1e-5  # Adam parts W from W O


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="widths"):
        ntk_change(0, 0.5, [])
    with pytest.raises(ValueError, match="alpha"):
        ntk_change(0, -1.0, [10])
    with pytest.raises(ValueError, match="batch_size"):
        general_task(0, 3, 4, 2, 5, batch_size=4)
    with pytest.raises(ValueError, match="d"):
        rotation_fixing_ones(np.random.default_rng(0), 1)
    model = general_task(0, 6, 8, 4, 2)[0]
    with pytest.raises(ValueError, match="W"):
        ntk_autograd(model, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="lr_adam"):
        adam_twins(model, np.zeros(6), np.ones((8, 3)), None, 0.0, 0.1, 1)
    with pytest.raises(TypeError, match="model"):
        twin_gap("not an NQF", None, np.ones((2, 2)), np.ones((2, 2)), 1)
    with pytest.raises(ValueError, match="seeds"):
        adam_ensemble(model, np.zeros(6), [], (8, 3), 0.1, 0.1, 1)
    with pytest.raises(ValueError, match="rngs"):
        same_moments_gaps([1, 2], [None], (6, 8, 4, 5), 0.1, 1)
    with pytest.raises(ValueError, match="Ws"):
        closure_gap(model, [], (np.eye(8), np.zeros(8)), None, 0.1, 1, [])
