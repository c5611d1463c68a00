"""Tests of nqf_lite.experiments.architectures: chapter 2's experiments.

The expected values come by hand: the tanh perceptron's truncation error
from its closed form, the feed-forward invariance from a block matrix built
here (exact zeros), and a non-invariant mixing as the control.
"""

from __future__ import annotations

import numpy as np
import pytest

from nqf_lite.expansion import models as ar
from nqf_lite.experiments.architectures import (
    feedforward_invariance,
    feedforward_split,
    truncation_errors,
)


def test_truncation_errors_of_the_perceptron_by_hand():
    # f(eps W) = sum_i eps v_i tanh(eps u_i.x), its NQF eps^2 sum_i v_i u_i.x
    k, width = 3, 4
    module = ar.mlp_module(k, "tanh")
    eps = np.array([0.1, 0.3, 1.0])
    rngs = [np.random.default_rng(s) for s in (1, 2)]
    errs = truncation_errors(
        module, lambda r: r.normal(size=k), width, eps, rngs
    )
    assert errs.shape == (2, 3)
    for row, seed in zip(errs, (1, 2)):
        r = np.random.default_rng(seed)
        x, W = r.normal(size=k), r.normal(size=(k + 1, width))
        ux, v = W[:k].T @ x, W[k]
        expected = [abs(e * v @ (np.tanh(e * ux) - e * ux)) for e in eps]
        np.testing.assert_allclose(row, expected, rtol=1e-9)


def test_truncation_errors_pass_the_inputs_to_the_correction():
    k = 3
    module = ar.mlp_module(k, "tanh")
    eps = np.array([0.1, 0.2])
    rngs = [np.random.default_rng(0)]
    seen = []

    def correction(We, x):
        seen.append(x)
        return 0.0

    plain = truncation_errors(module, lambda r: r.normal(size=k), 2, eps, rngs)
    rngs = [np.random.default_rng(0)]
    same = truncation_errors(
        module, lambda r: r.normal(size=k), 2, eps, rngs, correction
    )
    np.testing.assert_allclose(same, plain)
    np.testing.assert_allclose(
        seen[0], np.random.default_rng(0).normal(size=k)
    )


def test_truncation_errors_refuse_bad_input():
    module = ar.mlp_module(3, "tanh")
    with pytest.raises(ValueError, match="width"):
        truncation_errors(module, np.ones, 0, [0.1], [np.random.default_rng()])
    with pytest.raises(ValueError, match="rngs"):
        truncation_errors(module, np.ones, 2, [0.1], [])


def _feedforward(seed=0, n1=3, n2=2, d=4):
    r = np.random.default_rng(seed)
    C = r.normal(size=(n1, n2))
    A = 0.5 * np.block([[np.zeros((n1, n1)), C], [C.T, np.zeros((n2, n2))]])
    return (
        A,
        r.normal(size=(n1 + n2, d)),
        np.eye(d) + 0.3 * r.normal(size=(d, d)),
    )


def test_feedforward_invariance_is_exact_and_moves_the_moments():
    A, W, G = _feedforward()
    invariance, moved, readout = feedforward_invariance(A, W, G)
    assert invariance < 1e-12 and readout < 1e-12
    assert moved > 1e-2


def test_feedforward_invariance_control_a_mixing_of_one_block_fails():
    # mixing only Z1 (G on Z1, identity on Z2) changes Z2 Z1^T: the NQF moves
    A, W, G = _feedforward(1)
    n1 = 3
    W_bad = np.vstack([W[:n1] @ G, W[n1:]])
    quad, quad_bad = np.sum(A * (W @ W.T)), np.sum(A * (W_bad @ W_bad.T))
    assert abs(quad_bad - quad) > 1e-3
    # and the function's own measure agrees with the hand-computed quad
    _, _, readout = feedforward_invariance(A, W, G)
    assert readout < 1e-12 * max(1.0, abs(quad))


def test_feedforward_invariance_refuses_bad_input():
    A, W, G = _feedforward()
    with pytest.raises(ValueError, match="G"):
        feedforward_invariance(A, W, G[:2, :2])
    with pytest.raises(ValueError):
        feedforward_invariance(np.ones((5, 5)), W, G)  # no feed-forward form


def test_feedforward_split_of_hand_built_matrices():
    C = np.arange(1.0, 7.0).reshape(3, 2)  # Z1: 3 rows, Z2: 2 rows
    A = 0.5 * np.block([[np.zeros((3, 3)), C], [C.T, np.zeros((2, 2))]])
    assert feedforward_split(A) == 3
    # the perceptron: u (k entries) against the readout v (Prop. 1)
    assert feedforward_split(ar.A_mlp(np.array([1.0, -2.0, 0.5]), 1.0)) == 3
    # phase retrieval: A = a a^T has nonzero diagonal blocks (Table 3)
    a = np.array([1.0, 2.0, -1.0, 0.5])
    assert feedforward_split(np.outer(a, a)) is None


def test_feedforward_split_refuses_what_is_not_a_structure_matrix():
    with pytest.raises(ValueError, match="A must be symmetric"):
        feedforward_split(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="A must have shape"):
        feedforward_split(np.zeros(4))
