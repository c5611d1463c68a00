"""Tests of nqf_lite.deep.general: Eqs. 224-225 written out, on deep NQFs with
g, B != 0 (Theorem 14)."""

import numpy as np
import pytest
import torch

from nqf_lite.deep.deep_nqf import (
    DeepNQF,
    FunctionLayer,
    LayerStructure,
    MLPLayer,
    deep_moments,
    realize_deep,
)
from nqf_lite.deep.general import (
    backprop_signals,
    order_gradients_by_structure,
    random_general_layer,
)

F64 = torch.float64


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def general_stack(seed=0, linear=True):
    rng = np.random.default_rng(seed)
    return DeepNQF(
        [
            random_general_layer(6, 4, 3, rng, linear=linear),
            random_general_layer(5, 3, 2, rng, linear=linear),
        ]
    )


def problem(seed=0, widths=(5, 8), n=7):
    rng = np.random.default_rng(seed + 50)
    x = torch.as_tensor(rng.standard_normal((n, 4)))
    y = torch.as_tensor(rng.standard_normal((n, 2)))
    Ws = [
        torch.as_tensor(0.4 * rng.standard_normal((p, d)))
        for p, d in zip((6, 5), widths)
    ]
    return x, y, Ws


def finite_difference_gradients(model, x, y, Ms, mus, eps=1e-6):
    """dL/dmu and H = G + G^T (G = dL/dM) by central differences of model.loss.

    M moves along symmetric directions (M stays a Gram matrix): along (e_i
    e_j^T + e_j e_i^T)/2 the loss changes at the rate (G_ij + G_ji)/2 = H_ij/2.
    """
    vs, Hs = [], []
    for l in range(model.L):

        def loss_at(M_l, mu_l, l=l):
            Ms2 = [M_l if j == l else M for j, M in enumerate(Ms)]
            mus2 = [mu_l if j == l else mu for j, mu in enumerate(mus)]
            return float(model.loss(x, y, Ms2, mus2))

        p = Ms[l].shape[0]
        v = torch.zeros(p, dtype=F64)
        G = torch.zeros(p, p, dtype=F64)
        for i in range(p):
            e = torch.zeros(p, dtype=F64)
            e[i] = eps
            v[i] = (
                loss_at(Ms[l], mus[l] + e) - loss_at(Ms[l], mus[l] - e)
            ) / (2 * eps)
            for j in range(p):
                E = torch.zeros(p, p, dtype=F64)
                E[i, j] += eps / 2
                E[j, i] += eps / 2
                G[i, j] = (
                    loss_at(Ms[l] + E, mus[l]) - loss_at(Ms[l] - E, mus[l])
                ) / eps
        vs.append(v)
        Hs.append(G)
    return vs, Hs


# ------------------------------------------------------------------ the test
# bed
def test_random_general_layer_has_every_term_and_symmetric_matrices():
    layer = general_stack().layers[0]
    h = torch.as_tensor(np.random.default_rng(1).standard_normal((5, 4)))
    C, g, B, A = layer.structure(h)
    assert (
        C.shape == (5, 3)
        and g.shape == (5, 3, 6)
        and B.shape == A.shape == (5, 3, 6, 6)
    )
    for T in (A, B):
        assert torch.equal(T, T.transpose(-1, -2))
    for T in (C, g, B, A):
        assert float(T.abs().max()) > 1e-3
    # the structure is a function of h: another h, another structure
    assert float((layer.structure(h + 1.0).A - A).abs().max()) > 1e-3


def test_random_general_layer_zgz_drops_g_and_B_and_is_reproducible():
    zgz = general_stack(linear=False).layers[0]
    h = torch.ones(2, 4, dtype=F64)
    _, g, B, A = zgz.structure(h)
    assert g is None and B is None
    again = general_stack(linear=False).layers[0]
    assert torch.equal(again.structure(h).A, A)


# ------------------------------------------------------------------ Eqs.
# 224-225
def test_v_and_H_of_a_constant_one_layer_nqf_by_hand():
    # one layer, one input, constant structure: f = g.mu + mu^T B mu + Tr[M A]
    g = torch.tensor([1.0, -2.0], dtype=F64)
    B = torch.tensor([[1.0, 0.5], [0.5, 0.0]], dtype=F64)
    A = torch.tensor([[0.0, 1.0], [1.0, 3.0]], dtype=F64)

    def fn(h):
        n = h.shape[0]
        return LayerStructure(
            torch.zeros(n, 1, dtype=F64),
            g.expand(n, 1, 2),
            B.expand(n, 1, 2, 2),
            A.expand(n, 1, 2, 2),
        )

    model = DeepNQF([FunctionLayer(fn, p=2, n_in=1, n_out=1)])
    mu = torch.tensor([0.5, 1.0], dtype=F64)
    M = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=F64)
    # f = (0.5 - 2) + (0.25 + 0.5) + (0 + 3) = 2.25; y = 1; n = 1: dL/df = 2 (f
    # - y) = 2.5
    vs, Hs = order_gradients_by_structure(
        model, torch.zeros(1, 1), torch.ones(1, 1), [M], [mu]
    )
    # v = 2.5 (g + 2 B mu) = 2.5 ([1, -2] + 2 [1.0, 0.25]) = 2.5 [3, -1.5]
    assert torch.allclose(
        vs[0], torch.tensor([7.5, -3.75], dtype=F64), atol=1e-14
    )
    assert torch.allclose(Hs[0], 5.0 * A, atol=1e-14)


@pytest.mark.parametrize("linear", [True, False])
def test_v_and_H_equal_finite_differences_of_the_loss(linear):
    model = general_stack(seed=2, linear=linear)
    x, y, Ws = problem(
        seed=2, widths=(9, 9)
    )  # full-rank M: a small symmetric step keeps it PSD
    Ms, mus = deep_moments(Ws)
    vs, Hs = order_gradients_by_structure(model, x, y, Ms, mus)
    fd_vs, fd_Hs = finite_difference_gradients(model, x, y, Ms, mus)
    for v, fv, H, fH in zip(vs, fd_vs, Hs, fd_Hs):
        assert torch.allclose(v, fv, atol=1e-7)
        assert torch.allclose(H, fH, atol=1e-7)
    if linear:
        assert all(float(v.abs().max()) > 1e-3 for v in vs)
    else:
        assert all(float(v.abs().max()) == 0 for v in vs)


def test_backprop_signals_of_an_mlp_stack_by_hand():
    # f = W4 W3 tanh(W2 W1 x) written as two MLP blocks: dL/dh1 = (1 -
    # tanh^2(h1)) * (dL/df (W4 W3))
    rng = np.random.default_rng(3)
    x = torch.as_tensor(rng.standard_normal((5, 3)))
    y = torch.as_tensor(rng.standard_normal((5, 1)))
    W1, W2 = (
        torch.as_tensor(rng.standard_normal((4, 3))),
        torch.as_tensor(rng.standard_normal((2, 4))),
    )
    W3, W4 = (
        torch.as_tensor(rng.standard_normal((6, 2))),
        torch.as_tensor(rng.standard_normal((1, 6))),
    )
    model = DeepNQF([MLPLayer(3, 2), MLPLayer(2, 1, act=torch.tanh)])
    Ms, mus = deep_moments([torch.cat([W1.T, W2]), torch.cat([W3.T, W4])])
    hs, deltas = backprop_signals(model, x, y, Ms, mus)
    h1 = x @ W1.T @ W2.T
    f = torch.tanh(h1) @ W3.T @ W4.T
    dfd = 2 * (f - y) / 5
    assert torch.allclose(hs[1], h1, atol=1e-12) and torch.allclose(
        hs[2], f, atol=1e-12
    )
    assert torch.allclose(deltas[1], dfd, atol=1e-12)
    assert torch.allclose(
        deltas[0], (1 - torch.tanh(h1) ** 2) * (dfd @ W4 @ W3), atol=1e-12
    )


# ------------------------------------------------------------------ Theorem 14
# with g, B != 0
def closed_update(M, mu, v, H, d, lr):
    """Eqs. 222-223 for one layer, written out here."""
    dmu = -lr * (d * v + H @ mu)
    dM = -lr * (
        torch.outer(v, mu) + torch.outer(mu, v) + H @ M + M @ H
    ) + lr**2 * (
        d * torch.outer(v, v)
        + torch.outer(v, mu) @ H
        + torch.outer(H @ mu, v)
        + H @ M @ H
    )
    return M + dM, mu + dmu


def test_recursion_of_eqs_224_225_equals_gd_at_its_width_only():
    model = general_stack(seed=4)
    x, y, Ws = problem(seed=4, widths=(5, 8))
    lr, steps = 0.05, 20
    Ms, mus = deep_moments(Ws)
    wide = realize_deep(Ms, mus, [11, 13], rng=0)
    Ms_wide, mus_wide = deep_moments(wide)
    assert all(
        torch.allclose(a, b, atol=1e-12)
        for a, b in zip(Ms + mus, Ms_wide + mus_wide)
    )
    for _ in range(steps):
        vs, Hs = order_gradients_by_structure(model, x, y, Ms, mus)
        new = [
            closed_update(M, mu, v, H, W.shape[1], lr)
            for M, mu, v, H, W in zip(Ms, mus, vs, Hs, Ws)
        ]
        Ms, mus = [a for a, _ in new], [b for _, b in new]
        Ws = model.gd_step(x, y, Ws, lr)
        wide = model.gd_step(x, y, wide, lr)
    out = model.predict_W(x, Ws)
    assert torch.allclose(model.predict(x, Ms, mus), out, atol=1e-10)
    # the width enters through d v: same initial (M, mu), other widths, other
    # outputs
    assert float((model.predict_W(x, wide) - out).abs().max()) > 1e-3


def test_zgz_stack_forgets_the_width():
    model = general_stack(seed=5, linear=False)
    x, y, Ws = problem(seed=5)
    Ms, mus = deep_moments(Ws)
    wide = realize_deep(Ms, mus, [11, 13], rng=1)
    _, out = model.train(x, y, Ws, 0.05, 20)
    _, out_wide = model.train(x, y, wide, 0.05, 20)
    assert float((out - out_wide).abs().max()) < 1e-10
    assert float((out[-1] - out[0]).abs().max()) > 1e-2


# ------------------------------------------------------------------ bad input
def test_bad_inputs_name_the_argument():
    model = general_stack()
    x, y, Ws = problem()
    Ms, mus = deep_moments(Ws)
    with pytest.raises(TypeError, match="model"):
        order_gradients_by_structure("stack", x, y, Ms, mus)
    with pytest.raises(ValueError, match="x must"):
        order_gradients_by_structure(model, x[:, :3], y, Ms, mus)
    with pytest.raises(ValueError, match="y must"):
        backprop_signals(model, x, y[:3], Ms, mus)
    with pytest.raises(ValueError, match="Ms must"):
        backprop_signals(model, x, y, Ms[:1], mus)
    with pytest.raises(ValueError, match=r"mus\[1\]"):
        backprop_signals(model, x, y, Ms, [mus[0], mus[1][:2]])
    with pytest.raises(ValueError, match="NaN"):
        backprop_signals(model, x * float("nan"), y, Ms, mus)
    with pytest.raises(TypeError, match="rng"):
        random_general_layer(3, 2, 1, rng=0)
    with pytest.raises(ValueError, match="p"):
        random_general_layer(0, 2, 1, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="linear"):
        random_general_layer(
            3, 2, 1, rng=np.random.default_rng(0), linear="yes"
        )


# ------------------------------------------------------------------ rank=
# (Theorem 15's test bed)
def test_random_general_layer_rank_confines_the_structure_to_a_subspace():
    layer = random_general_layer(8, 4, 3, np.random.default_rng(5), rank=3)
    h = torch.as_tensor(np.random.default_rng(6).standard_normal((7, 4)))
    _, g, B, A = layer.structure(h)
    # every column of every g_k, A_k, B_k, stacked by hand, spans 3 dimensions
    # of R^8
    cols = [g[n, k][:, None] for n in range(7) for k in range(3)]
    cols += [A[n, k] for n in range(7) for k in range(3)] + [
        B[n, k] for n in range(7) for k in range(3)
    ]
    s = np.linalg.svd(torch.cat(cols, dim=1).numpy(), compute_uv=False)
    assert s[2] > 1e-3 * s[0] and s[3] < 1e-12 * s[0]
    for T in (A, B):
        assert torch.equal(T, T.transpose(-1, -2))
    # the default (rank = p) is unconstrained: all 8 dimensions
    full = (
        random_general_layer(8, 4, 3, np.random.default_rng(5)).structure(h).A
    )
    s_full = np.linalg.svd(
        full.reshape(-1, 8, 8).transpose(0, 1).reshape(8, -1).numpy(),
        compute_uv=False,
    )
    assert s_full[-1] > 1e-6 * s_full[0]


def test_random_general_layer_rank_is_checked():
    with pytest.raises(ValueError, match="rank"):
        random_general_layer(4, 2, 1, np.random.default_rng(0), rank=5)
    with pytest.raises((TypeError, ValueError), match="rank"):
        random_general_layer(4, 2, 1, np.random.default_rng(0), rank=0)
