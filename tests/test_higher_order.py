"""Tests of nqf_lite.deep.higher_order: Theorem 13 (Eqs. 200-203) and the
neural cubic form."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
import torch

from nqf_lite import NotSmoothError, NotSymmetricError, expand
from nqf_lite.deep.higher_order import (
    NeuralForm,
    gd_train,
    partition_weight,
    partitions,
    theorem13,
)

P = 3


def exp_module(seed):
    """f(W) = exp(sum_i a.w_i + w_i^T Q w_i): symmetric, not additive, every
    partition non-zero."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(P, generator=g, dtype=torch.float64)
    Q = torch.randn(P, P, generator=g, dtype=torch.float64)
    Q = (Q + Q.T) / 2

    def f(W, x):
        return torch.exp((W.T @ a).sum() + torch.einsum("id,ij,jd->", W, Q, W))

    return f, a.numpy(), Q.numpy()


def mlp(act, k):
    def f(W, x):
        return (W[k] * act(x @ W[:k])).sum()

    return f


# -----------------------------------------------------------------
# combinatorics
def test_partitions_counts_and_order():
    assert partitions(3) == [(3,), (2, 1), (1, 1, 1)]
    # partition numbers p(1..7) = 1, 2, 3, 5, 7, 11, 15
    assert [len(partitions(k)) for k in range(1, 8)] == [1, 2, 3, 5, 7, 11, 15]


def test_partition_weight_counts_index_sequences():
    # sum over ordered distinct tuples of k!/prod c! sequences each / k!  ->
    # brute force count
    d, k = 4, 4
    for lam in partitions(k):
        counted = sum(
            sorted(Counter(seq).values(), reverse=True) == list(lam)
            for seq in itertools.product(range(d), repeat=k)
        )
        n_tuples = math.perm(d, len(lam))
        # every sequence is produced by exactly one unordered assignment;
        # C_lambda/k! = weight
        assert counted / math.factorial(k) == pytest.approx(
            partition_weight(lam) * n_tuples
        )


# ----------------------------------------------------------------- closed
# forms
def test_exp_module_closed_forms():
    f, a, Q = exp_module(1)
    e = theorem13(f, None, P, 3, d=4)
    sym_aQ = (
        np.einsum("a,bc->abc", a, Q)
        + np.einsum("b,ac->abc", a, Q)
        + np.einsum("c,ab->abc", a, Q)
    ) / 3
    closed = {
        (1,): a,
        (2,): Q + np.outer(a, a) / 2,
        (1, 1): np.outer(a, a) / 2,
        (3,): sym_aQ + np.einsum("a,b,c->abc", a, a, a) / 6,
        (2, 1): np.einsum("bc,e->bce", Q, a)
        + np.einsum("b,c,e->bce", a, a, a) / 2,
        (1, 1, 1): np.einsum("a,b,c->abc", a, a, a) / 6,
    }
    assert set(e.tensors) == set(closed)
    for lam, T in closed.items():
        np.testing.assert_allclose(
            e.tensors[lam], T, atol=1e-12, err_msg=str(lam)
        )
    assert e.f0 == pytest.approx(1.0, abs=1e-15)


def test_tanh_mlp_quartic_term_from_third_derivative():
    # v tanh(u.x) = v (u.x) - v (u.x)^3 / 3 + ...: tanh'''(0) = -2 gives the
    # order-4 tensor
    k = 2
    x = torch.tensor([0.7, -1.3], dtype=torch.float64)
    e = theorem13(mlp(torch.tanh, k), x, k + 1, 4, d=2)
    xn = x.numpy()
    T4 = e.tensors[(4,)]
    w = np.array([0.3, -0.5, 0.9])
    value = np.einsum("abcd,a,b,c,d->", T4, w, w, w, w)
    assert value == pytest.approx(-2 / 6 * w[2] * (w[:2] @ xn) ** 3, rel=1e-12)
    assert (
        np.abs(e.tensors[(3,)]).max() < 1e-14
    )  # tanh''(0) = 0: no cubic term
    A = np.zeros((3, 3))
    A[:2, 2] = A[2, :2] = xn / 2  # Prop. 1, tanh'(0) = 1
    np.testing.assert_allclose(e.tensors[(2,)], A, atol=1e-14)
    assert e.cross_size() < 1e-14  # additive module


def test_gelu_cubic_term():
    # GELU''(0) = 2 phi(0) = 2/sqrt(2 pi): order-3 term v (u.x)^2 / sqrt(2 pi)
    k = 2
    x = torch.tensor([0.4, 1.1], dtype=torch.float64)
    e = theorem13(mlp(torch.nn.functional.gelu, k), x, k + 1, 3, d=2)
    w = np.array([-0.2, 0.6, 1.5])
    value = np.einsum("abc,a,b,c->", e.tensors[(3,)], w, w, w)
    assert value == pytest.approx(
        w[2] * (w[:2] @ x.numpy()) ** 2 / math.sqrt(2 * math.pi), rel=1e-12
    )


# ----------------------------------------------------------------- independent
# paths
def test_second_order_matches_expand():
    f, _, _ = exp_module(2)
    e = theorem13(f, None, P, 2, d=2)
    ex = expand(f, None, P, d=2)
    np.testing.assert_allclose(
        e.tensors[(2,)] - e.tensors[(1, 1)], ex.A, atol=1e-12
    )
    np.testing.assert_allclose(e.tensors[(1, 1)], ex.B, atol=1e-12)
    np.testing.assert_allclose(e.tensors[(1,)], ex.g, atol=1e-12)


def test_third_order_against_finite_differences():
    f, _, _ = exp_module(3)
    d = 3
    e = theorem13(f, None, P, 3, d=d)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((P, d))
    Wt = torch.tensor(W)
    h = 2e-3
    # the cubic coefficient of t -> f(tW) by a 4-point central stencil
    vals = {s: float(f(s * h * Wt, None)) for s in (-2, -1, 1, 2)}
    c3 = (vals[2] - 2 * vals[1] + 2 * vals[-1] - vals[-2]) / (2 * h**3) / 6
    assert e.term(W, 3) == pytest.approx(c3, rel=2e-4)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_truncation_error_slope(K):
    f, _, _ = exp_module(4)
    d = 3
    e = theorem13(f, None, P, K, d=d)
    W = np.random.default_rng(1).standard_normal((P, d))
    eps = np.array([1e-2, 2e-2, 4e-2])
    err = [
        abs(float(f(torch.tensor(s * W), None)) - e.predict(s * W))
        for s in eps
    ]
    slope = np.polyfit(np.log(eps), np.log(err), 1)[0]
    assert slope == pytest.approx(K + 1, abs=0.1)


def test_neural_form_matches_module_and_nqf():
    k, d = 2, 5
    f = mlp(torch.nn.functional.gelu, k)
    xs = [
        torch.tensor(v)
        for v in np.random.default_rng(2).standard_normal((6, k))
    ]
    form = NeuralForm.from_module(f, xs, k + 1, 3, d=d)
    W = np.random.default_rng(3).standard_normal((k + 1, d))

    def err(s):
        exact = np.array([float(f(torch.tensor(s * W), x)) for x in xs])
        return np.abs(form.predict(s * W) - exact).max()

    # GELU'''(0) = 0, so the cubic form is exact to O(|W|^5): halving W divides
    # the error by 32
    assert np.log2(err(2e-2) / err(1e-2)) == pytest.approx(5, abs=0.15)
    nqf = form.truncate(2)
    A = np.stack([expand(f, x, k + 1, d=d).A for x in xs])
    np.testing.assert_allclose(
        nqf.predict(W), np.einsum("nij,ij->n", A, W @ W.T), atol=1e-15
    )


def test_neural_form_training_reduces_loss_and_matches_manual_gd():
    form = NeuralForm(
        np.zeros(2), [np.zeros((2, 1)), np.array([[[1.0]], [[2.0]]])]
    )
    t, L, W = form.train(
        np.array([[0.5]]), np.array([1.0, 1.0]), lr=0.1, n_steps=1
    )
    # f_n = c_n w^2, L = mean (c_n w^2 - 1)^2, dL/dw = mean 4 c_n w (c_n w^2 -
    # 1)
    w = 0.5
    grad = np.mean([4 * c * w * (c * w * w - 1) for c in (1.0, 2.0)])
    assert W[0, 0] == pytest.approx(w - 0.1 * grad, rel=1e-12)
    assert L[0] == pytest.approx(
        np.mean([(c * w * w - 1) ** 2 for c in (1.0, 2.0)]), rel=1e-12
    )
    assert t.tolist() == [0.0, 0.1]
    # a batch of two members descends two independent losses
    _, L2, W2 = form.train(
        np.array([[[0.5]], [[0.3]]]), np.array([1.0, 1.0]), lr=0.1, n_steps=1
    )
    _, _, Wb = form.train(
        np.array([[0.3]]), np.array([1.0, 1.0]), lr=0.1, n_steps=1
    )
    assert W2[0, 0, 0] == pytest.approx(W[0, 0], rel=1e-14) and W2[
        1, 0, 0
    ] == pytest.approx(Wb[0, 0], rel=1e-14)


# ----------------------------------------------------------------- bad inputs
def test_relu_is_not_smooth():
    x = torch.tensor([0.5, -0.3], dtype=torch.float64)
    with pytest.raises(NotSmoothError):
        theorem13(mlp(torch.relu, 2), x, 3, 3)


def test_nan_derivative_is_not_smooth():
    def f(
        W, x
    ):  # RMS normalisation across the width without epsilon: 0/0 at W = 0
        z = W[0]
        return (W[1] * z / torch.sqrt((z * z).mean())).sum()

    with pytest.raises(NotSmoothError, match="not finite"):
        theorem13(f, None, 2, 2, check=False)


def test_not_symmetric():
    def f(W, x):
        return W[0, 0] * W[1, 0] + torch.tanh(W[0, 1])

    with pytest.raises(NotSymmetricError):
        theorem13(f, None, 2, 2)


def test_not_additive_is_refused_by_neural_form():
    f, _, _ = exp_module(5)
    with pytest.raises(ValueError, match="additive"):
        NeuralForm.from_module(f, [None], P, 3, d=3)


def test_refuses_huge_tensors_with_memory():
    f, _, _ = exp_module(6)
    with pytest.raises(ValueError, match="MiB"):
        theorem13(f, None, P, 3, d=3, max_bytes=1000)


def test_bad_arguments():
    f, _, _ = exp_module(7)
    with pytest.raises(TypeError, match="order"):
        theorem13(f, None, P, 2.0)
    with pytest.raises(ValueError, match="order"):
        theorem13(f, None, P, 0)
    with pytest.raises(TypeError, match="f must be callable"):
        theorem13("f", None, P, 2)
    with pytest.raises(ValueError, match="W must have shape"):
        theorem13(f, None, P, 2, d=2).predict(np.zeros((P, 3)))
    with pytest.raises(ValueError, match="order must be <="):
        theorem13(f, None, P, 2, d=2).predict(np.zeros((P, 2)), order=3)
    with pytest.raises(ValueError, match="T\\[1\\] must have shape"):
        NeuralForm(np.zeros(2), [np.zeros((2, 3)), np.zeros((2, 3, 4))])
    with pytest.raises(ValueError, match="lr"):
        gd_train(
            lambda W: W.sum(0),
            np.zeros((1, 2)),
            np.zeros(2),
            lr=-1.0,
            n_steps=3,
        )
    with pytest.raises(ValueError, match="partition|part"):
        partition_weight([2, 0])
