"""Tests of nqf_lite.deep.deep_nqf: Definition 2, Theorem 14 (closure) and
Theorem 15 (compression) of App. B.4."""

import numpy as np
import pytest
import torch

from nqf_lite.expansion.models.attention import A_mha, mha_layout
from nqf_lite.deep.deep_nqf import (
    AttentionLayer,
    DeepNQF,
    FunctionLayer,
    Layer,
    LinearLayer,
    MLPLayer,
    ScaledLayer,
    compress_deep,
    deep_moments,
    realize_deep,
    structure_subspace,
)

F64 = torch.float64


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread avoids OpenMP oversubscription on a shared
    machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def subspace_layer(p, k, n_in, n_out, seed, linear=True):
    """A general layer (C, g, B, A all nonzero) whose g, A, B live in a fixed
    random k-dim subspace of R^p.

    The structure depends nonlinearly on the previous output h: A_k(h) = Q
    S_k(h) Q^T with S_k(h) = sum_j tanh(r_j . h) S_kj, and similarly for B and
    g.
    """
    gen = torch.Generator().manual_seed(seed)
    Q = torch.linalg.qr(torch.randn(p, k, generator=gen, dtype=F64))[0]
    R = torch.randn(3, n_in, generator=gen, dtype=F64) / np.sqrt(n_in)
    SA = torch.randn(n_out, 3, k, k, generator=gen, dtype=F64)
    SA = 0.5 * (SA + SA.transpose(-1, -2)) / k
    SB = torch.randn(n_out, 3, k, k, generator=gen, dtype=F64)
    SB = 0.05 * (SB + SB.transpose(-1, -2)) / k
    G = 0.1 * torch.randn(n_out, 3, k, generator=gen, dtype=F64)
    c = 0.1 * torch.randn(n_out, generator=gen, dtype=F64)

    def fn(h):
        z = torch.tanh(h @ R.T)  # (..., n, 3)
        A = Q @ torch.einsum("...nj,kjab->...nkab", z, SA) @ Q.T
        B = (
            Q @ torch.einsum("...nj,kjab->...nkab", z, SB) @ Q.T
            if linear
            else None
        )
        g = torch.einsum("...nj,kja->...nka", z, G) @ Q.T if linear else None
        C = torch.sin(z[..., :1]) * c
        return C, g, B, A

    return FunctionLayer(fn, p, n_in, n_out), Q


def general_model(seed=0, linear=True):
    """Three layers 4 -> 3 -> 2 -> 1 with neuron dims 7, 6, 5 and structure
    subspaces of dims 3, 2, 2."""
    specs = [(7, 3, 4, 3), (6, 2, 3, 2), (5, 2, 2, 1)]
    layers, bases = [], []
    for l, (p, k, n_in, n_out) in enumerate(specs):
        layer, Q = subspace_layer(p, k, n_in, n_out, seed + 10 * l, linear)
        layers.append(layer)
        bases.append(Q)
    return DeepNQF(layers), bases


def data(seed=0, n=6, n_in=4, n_out=1):
    gen = torch.Generator().manual_seed(seed + 100)
    return torch.randn(n, n_in, generator=gen, dtype=F64), torch.randn(
        n, n_out, generator=gen, dtype=F64
    )


def weights(model, widths, scale=0.3, seed=0):
    gen = torch.Generator().manual_seed(seed + 200)
    return [
        scale * torch.randn(layer.p, d, generator=gen, dtype=F64)
        for layer, d in zip(model.layers, widths)
    ]


# ------------------------------------------------------------------ Definition
# 2 (Eq. 219)
def test_mlp_layers_equal_the_linearised_deep_mlp():
    # two MLP blocks: f = W4 W3 tanh(W2 W1 x), written out by hand with neurons
    # w_i = (u_i, V_:i)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, 3, generator=gen, dtype=F64)
    W1, W2 = (
        torch.randn(4, 3, generator=gen, dtype=F64),
        torch.randn(2, 4, generator=gen, dtype=F64),
    )
    W3, W4 = (
        torch.randn(6, 2, generator=gen, dtype=F64),
        torch.randn(1, 6, generator=gen, dtype=F64),
    )
    model = DeepNQF([MLPLayer(3, 2), MLPLayer(2, 1, act=torch.tanh)])
    Ws = [torch.cat([W1.T, W2]), torch.cat([W3.T, W4])]
    expected = torch.tanh(x @ W1.T @ W2.T) @ W3.T @ W4.T
    assert torch.allclose(model.predict_W(x, Ws), expected, atol=1e-12)


def test_mlp_fast_forward_equals_structure_trace():
    layer = MLPLayer(3, 4, act=torch.tanh, slope=0.7)
    gen = torch.Generator().manual_seed(2)
    h = torch.randn(2, 5, 3, generator=gen, dtype=F64)
    W = torch.randn(2, 7, 9, generator=gen, dtype=F64)
    M, mu = W @ W.transpose(-1, -2), W.sum(-1)
    C, g, B, A = layer.structure(h)
    assert g is None and B is None and torch.all(C == 0)
    assert torch.equal(A, A.transpose(-1, -2))
    by_trace = torch.einsum("snkij,sij->snk", A, M)
    assert torch.allclose(layer.forward(h, M, mu), by_trace, atol=1e-12)
    assert torch.allclose(Layer.forward(layer, h, M, mu), by_trace, atol=1e-12)


def test_scaled_layer_scales_only_A():
    model, _ = general_model()
    layer = model.layers[0]
    x, _ = data()
    M = torch.eye(7, dtype=F64)
    mu = torch.linspace(-1, 1, 7, dtype=F64)
    C, g, B, A = layer.structure(x)
    direct = (
        C
        + 0.25 * torch.einsum("nkij,ij->nk", A, M)
        + torch.einsum("nki,i->nk", g, mu)
        + torch.einsum("nkij,i,j->nk", B, mu, mu)
    )
    assert torch.allclose(
        ScaledLayer(layer, 0.25).forward(x, M, mu), direct, atol=1e-12
    )


def value_neurons(W_V, W_O):
    """Neurons (W_V[a, :], W_O[:, a]) of one head, one column per value channel
    a."""
    return torch.cat([W_V.T, W_O], dim=0)


def test_attention_layer_equals_prop2_closed_form():
    # one head w = vec(W_Q, W_K, W_V, W_O) of Eq. 8 (width 1) against the same
    # head split into value channels
    D, N, d_k, d_v, V = 3, 5, 2, 4, 2
    rng = np.random.default_rng(3)
    X = rng.standard_normal((D, N))  # A_mha convention: tokens are columns
    blocks = {
        "W_Q": rng.standard_normal((1, d_k, D)),
        "W_K": rng.standard_normal((1, d_k, D)),
        "W_V": rng.standard_normal((1, d_v, D)),
        "W_O": rng.standard_normal((1, V, d_v)),
    }
    w = mha_layout(D, d_k, d_v, V).pack(blocks)[:, 0]
    expected = np.einsum(
        "i,oij,j->o", w, A_mha(X[:, 0], X, d_k, d_v, V), w
    )  # Tr[w w^T A^(o)]
    layer = AttentionLayer(N, D, V, pooled=True)
    Wn = value_neurons(
        torch.as_tensor(blocks["W_V"][0]), torch.as_tensor(blocks["W_O"][0])
    )
    h = torch.as_tensor(
        X.T.reshape(1, N * D)
    )  # one input: tokens flattened token-major
    out = layer.forward(h, Wn @ Wn.T, Wn.sum(1))
    assert torch.allclose(out[0], torch.as_tensor(expected), atol=1e-12)
    # not pooled: the same value at every token
    every = (
        AttentionLayer(N, D, V).forward(h, Wn @ Wn.T, Wn.sum(1)).reshape(N, V)
    )
    assert torch.allclose(
        every, torch.as_tensor(expected).expand(N, V), atol=1e-12
    )


def test_attention_fast_forward_equals_structure_trace():
    gen = torch.Generator().manual_seed(4)
    for pooled in (False, True):
        layer = AttentionLayer(4, 3, 2, pooled=pooled)
        h = torch.randn(2, 5, 12, generator=gen, dtype=F64)
        W = torch.randn(2, 5, 7, generator=gen, dtype=F64)
        M, mu = W @ W.transpose(-1, -2), W.sum(-1)
        C, g, B, A = layer.structure(h)
        assert (
            g is None
            and B is None
            and torch.all(C == 0)
            and A.shape == (2, 5, layer.n_out, 5, 5)
        )
        assert torch.equal(A, A.transpose(-1, -2))
        assert torch.allclose(
            layer.forward(h, M, mu),
            torch.einsum("snkij,sij->snk", A, M),
            atol=1e-12,
        )


def softmax_attention_2layer(X, W_Q1, W_K1, W_V1, W_O1, W_Q2, W_K2, W_V2, v):
    """The real 2-layer single-head attention model, written out token by token
    (X: N x D)."""
    d_k = W_Q1.shape[0]
    att = torch.softmax(X @ W_Q1.T @ W_K1 @ X.T / d_k**0.5, dim=-1)
    H = att @ X @ W_V1.T @ W_O1.T
    a2 = torch.softmax(H @ W_K2.T @ (W_Q2 @ H[-1]) / d_k**0.5, dim=-1)
    return v @ W_V2 @ H.T @ a2


def test_two_attention_layers_are_softmax_attention_at_small_weights():
    # f(eps W) = eps^4 f_NQF + O(eps^6): the relative error falls 4x when eps
    # halves
    N, D = 6, 3
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(N, D, generator=gen, dtype=F64)
    shapes = [(2, D), (2, D), (4, D), (D, 4), (2, D), (2, D), (4, D), (4,)]
    P = [torch.randn(*s, generator=gen, dtype=F64) for s in shapes]
    model = DeepNQF(
        [AttentionLayer(N, D, D), AttentionLayer(N, D, 1, pooled=True)]
    )
    nqf = model.predict_W(
        X.reshape(1, N * D),
        [value_neurons(P[2], P[3]), value_neurons(P[6], P[7][None])],
    )[0, 0]
    assert torch.isclose(
        nqf, P[7] @ P[6] @ P[3] @ P[2] @ X.mean(0), atol=1e-12
    )
    errs = [
        abs(
            float(
                softmax_attention_2layer(X, *[e * p for p in P]) / e**4 - nqf
            )
        )
        / abs(float(nqf))
        for e in (0.04, 0.02)
    ]
    assert errs[0] < 0.05 and 3.5 < errs[0] / errs[1] < 4.5


# ------------------------------------------------------------------ gradients:
# independent checks
def test_explicit_gradient_matches_finite_differences():
    model, _ = general_model()
    x, y = data()
    Ws = weights(model, [3, 4, 2])
    grads = model.grad_W(x, y, Ws)
    h = 1e-6
    for l, (W, G) in enumerate(zip(Ws, grads)):
        for i, j in [(0, 0), (W.shape[0] - 1, W.shape[1] - 1), (2, 1)]:
            Wp = [w.clone() for w in Ws]
            Wm = [w.clone() for w in Ws]
            Wp[l][i, j] += h
            Wm[l][i, j] -= h
            fd = (
                model.loss(x, y, *deep_moments(Wp))
                - model.loss(x, y, *deep_moments(Wm))
            ) / (2 * h)
            assert abs(float(fd) - float(G[i, j])) < 1e-7 * max(
                1.0, abs(float(fd))
            ), (l, i, j)


def test_order_gradients_match_finite_differences_and_eq230():
    model, _ = general_model()
    x, y = data()
    Ws = weights(
        model, [9, 8, 7]
    )  # widths above p: M is positive definite, so M +- h S stays PSD
    Ms, mus = deep_moments(Ws)
    vs, Hs = model.order_gradients(x, y, Ms, mus)
    h = 1e-6
    gen = torch.Generator().manual_seed(5)
    for l in range(model.L):
        # v = dL/dmu (Eq. 224): finite difference along a random direction
        e = torch.randn(model.layers[l].p, generator=gen, dtype=F64)
        up = [m.clone() for m in mus]
        dn = [m.clone() for m in mus]
        up[l] += h * e
        dn[l] -= h * e
        fd = (model.loss(x, y, Ms, up) - model.loss(x, y, Ms, dn)) / (2 * h)
        assert abs(float(fd) - float(vs[l] @ e)) < 1e-7
        # H: for symmetric S, dL(M + eps S)/deps = Tr[H S]/2 (Eq. 225)
        S = torch.randn(
            model.layers[l].p, model.layers[l].p, generator=gen, dtype=F64
        )
        S = S + S.T
        up = [m.clone() for m in Ms]
        dn = [m.clone() for m in Ms]
        up[l] += h * S
        dn[l] -= h * S
        fd = (model.loss(x, y, up, mus) - model.loss(x, y, dn, mus)) / (2 * h)
        assert abs(float(fd) - 0.5 * float(torch.sum(Hs[l] * S))) < 1e-7
        # Eq. 230: the explicit gradient factorises into v 1^T + H W
    grads = model.grad_W(x, y, Ws)
    for W, G, v, H in zip(Ws, grads, vs, Hs):
        assert torch.allclose(G, v[:, None] + H @ W, atol=1e-12)


# ------------------------------------------------------------------ Theorem 14
@pytest.mark.parametrize("sgd", [False, True])
def test_theorem14_different_widths_same_moments_same_outputs(sgd):
    # ZGZ layers (g = B = 0, C != 0): the width drops out, so widths (3, 4, 2)
    # and (9, 30, 17) agree
    model, _ = general_model(linear=False)
    x, y = data(n=8)
    Ws_a = weights(model, [3, 4, 2])
    Ms, mus = deep_moments(Ws_a)
    Ws_b = realize_deep(Ms, mus, [9, 30, 17], rng=3)
    Ms_b, mus_b = deep_moments(Ws_b)
    assert all(
        torch.allclose(a, b, atol=1e-12)
        for a, b in zip(Ms + mus, Ms_b + mus_b)
    )
    steps = 40
    rng = np.random.default_rng(0)
    batches = (
        [rng.choice(8, 3, replace=False) for _ in range(steps)]
        if sgd
        else None
    )
    _, out_a = model.train(
        x, y, Ws_a, [0.05, 0.08, 0.03], steps, batches=batches
    )
    _, out_b = model.train(
        x, y, Ws_b, [0.05, 0.08, 0.03], steps, batches=batches
    )
    assert torch.max(torch.abs(out_a[-1] - out_a[0])) > 1e-2  # it trains
    assert torch.max(torch.abs(out_a - out_b)) < 1e-10


def test_theorem14_width_enters_through_the_linear_part():
    # with g, B != 0 the term d v of Eq. 222 makes different widths part ways
    model, _ = general_model()
    x, y = data(n=8)
    Ws_a = weights(model, [3, 4, 2])
    Ws_b = realize_deep(*deep_moments(Ws_a), [9, 30, 17], rng=3)
    _, out_a = model.train(x, y, Ws_a, 0.05, 30)
    _, out_b = model.train(x, y, Ws_b, 0.05, 30)
    assert torch.max(torch.abs(out_a - out_b)) > 1e-4


def test_theorem14_general_equal_widths_different_weights():
    # g, B != 0: the width appears in d v; two different weight sets with equal
    # moments and widths agree
    model, _ = general_model()
    x, y = data(n=8)
    Ws_a = weights(model, [5, 6, 4])
    Ms, mus = deep_moments(Ws_a)
    Ws_b = realize_deep(Ms, mus, [5, 6, 4], rng=11)
    assert torch.max(torch.abs(Ws_a[0] - Ws_b[0])) > 1e-2
    _, out_a = model.train(x, y, Ws_a, 0.05, 40)
    _, out_b = model.train(x, y, Ws_b, 0.05, 40)
    assert torch.max(torch.abs(out_a - out_b)) < 1e-10


@pytest.mark.parametrize("sgd", [False, True])
def test_closed_recursion_equals_explicit_training(sgd):
    model, _ = general_model()
    x, y = data(n=8)
    widths = [3, 4, 2]
    Ws = weights(model, widths)
    Ms, mus = deep_moments(Ws)
    steps = 40
    rng = np.random.default_rng(1)
    batches = (
        [rng.choice(8, 4, replace=False) for _ in range(steps)]
        if sgd
        else None
    )
    lrs = [0.05, 0.08, 0.03]
    Ws_t, out = model.train(x, y, Ws, lrs, steps, batches=batches)
    (Ms_t, mus_t), out_c = model.train_closed(
        x, y, Ms, mus, widths, lrs, steps, batches=batches
    )
    assert torch.max(torch.abs(out[-1] - out[0])) > 1e-2
    assert torch.max(torch.abs(out - out_c)) < 1e-10
    Ms_e, mus_e = deep_moments(Ws_t)
    for a, b in zip(Ms_e + mus_e, Ms_t + mus_t):
        assert torch.max(torch.abs(a - b)) < 1e-10


def test_closed_step_first_order_matches_eq222_by_hand():
    # one closed step of a single MLP layer against Eq. 222-223 written with v
    # = 0 and H from Eq. 225
    layer = MLPLayer(2, 1)
    model = DeepNQF([layer])
    x = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=F64)
    y = torch.tensor([[1.0], [0.0]], dtype=F64)
    W = torch.tensor([[0.1, 0.2], [0.3, -0.1], [0.2, 0.4]], dtype=F64)
    M, mu = W @ W.T, W.sum(1)
    f = x @ M[:2, 2:]  # (2, 1)
    lp = 2 * (f - y) / 2  # dL/df
    H = torch.zeros(3, 3, dtype=F64)
    for n in range(2):
        A = torch.zeros(3, 3, dtype=F64)
        A[:2, 2] = A[2, :2] = 0.5 * x[n]
        H += 2 * lp[n, 0] * A
    eta = 0.1
    M_hand = M - eta * (H @ M + M @ H) + eta**2 * H @ M @ H
    (Ms, mus) = model.closed_step(x, y, [M], [mu], [2], eta)
    assert torch.allclose(Ms[0], M_hand, atol=1e-14)
    assert torch.allclose(mus[0], mu - eta * H @ mu, atol=1e-14)


def test_batched_members_train_independently():
    model, _ = general_model()
    x, y = data(n=8)
    Ws1, Ws2 = (
        weights(model, [3, 4, 2], seed=0),
        weights(model, [3, 4, 2], seed=1),
    )
    stacked = [torch.stack([a, b]) for a, b in zip(Ws1, Ws2)]
    _, out = model.train(
        x.expand(2, -1, -1), y.expand(2, -1, -1), stacked, 0.05, 20
    )
    _, out1 = model.train(x, y, Ws1, 0.05, 20)
    _, out2 = model.train(x, y, Ws2, 0.05, 20)
    assert torch.max(torch.abs(out[:, 0] - out1)) < 1e-12
    assert torch.max(torch.abs(out[:, 1] - out2)) < 1e-12


# ------------------------------------------------------------------ Theorem 15
def test_structure_subspace_finds_the_planted_subspace():
    model, bases = general_model()
    x, _ = data(n=8)
    hs = model.hidden(x, *deep_moments(weights(model, [3, 4, 2])))
    inputs = [x] + hs[:-1]
    for layer, h, Q in zip(model.layers, inputs, bases):
        V = structure_subspace(layer, h)
        assert V.shape == Q.shape
        assert torch.allclose(V @ V.T, Q @ Q.T, atol=1e-10)


@pytest.mark.parametrize("sgd", [False, True])
def test_theorem15_compressed_model_trains_identically(sgd):
    model, bases = general_model()
    x, y = data(n=8)
    widths = [12, 10, 9]
    Ws = weights(model, widths, scale=0.15)
    lrs = [0.04, 0.05, 0.03]
    small, Ws_small, lrs_small = compress_deep(model, Ws, lrs, bases, rng=4)
    assert [W.shape[1] for W in Ws_small] == [Q.shape[1] + 1 for Q in bases]
    assert lrs_small == pytest.approx(
        [a * d / (Q.shape[1] + 1) for a, d, Q in zip(lrs, widths, bases)]
    )
    steps = 50
    rng = np.random.default_rng(2)
    batches = (
        [rng.choice(8, 4, replace=False) for _ in range(steps)]
        if sgd
        else None
    )
    _, out = model.train(x, y, Ws, lrs, steps, batches=batches)
    _, out_small = small.train(
        x, y, Ws_small, lrs_small, steps, batches=batches
    )
    assert torch.max(torch.abs(out[-1] - out[0])) > 1e-2
    assert torch.max(torch.abs(out - out_small)) < 1e-10


def test_theorem15_needs_the_rescaled_learning_rate():
    model, bases = general_model()
    x, y = data(n=8)
    Ws = weights(model, [12, 10, 9], scale=0.15)
    small, Ws_small, _ = compress_deep(model, Ws, 0.04, bases)
    _, out = model.train(x, y, Ws, 0.04, 40)
    _, out_small = small.train(
        x, y, Ws_small, 0.04, 40
    )  # forgot lr~ = (d/d') lr
    assert torch.max(torch.abs(out - out_small)) > 1e-4


# ------------------------------------------------------------------ bad input
def test_bad_inputs_raise_clear_errors():
    model, bases = general_model()
    x, y = data()
    Ws = weights(model, [3, 4, 2])
    Ms, mus = deep_moments(Ws)
    with pytest.raises(ValueError, match="x must have shape"):
        model.predict(torch.zeros(5, 3, dtype=F64), Ms, mus)
    with pytest.raises(ValueError, match="y must have shape"):
        model.loss(x, torch.zeros(6, 2, dtype=F64), Ms, mus)
    with pytest.raises(
        ValueError, match="Ws must hold one weight matrix per layer"
    ):
        model.train(x, y, Ws[:2], 0.1, 3)
    with pytest.raises(ValueError, match=r"Ws\[1\] must have shape"):
        model.predict_W(x, [Ws[0], Ws[2], Ws[2]])
    with pytest.raises(TypeError, match="Ws must be a list"):
        model.predict_W(x, Ws[0])
    with pytest.raises(ValueError, match="lr must be finite and > 0"):
        model.gd_step(x, y, Ws, -0.1)
    with pytest.raises(
        ValueError, match="lr must be a number or one learning rate per layer"
    ):
        model.gd_step(x, y, Ws, [0.1, 0.1])
    with pytest.raises(
        ValueError, match="widths must hold one width per layer"
    ):
        model.closed_step(x, y, Ms, mus, [3, 4], 0.1)
    with pytest.raises(ValueError, match=r"widths\[0\] must be >= 1"):
        model.closed_step(x, y, Ms, mus, [0, 4, 2], 0.1)
    with pytest.raises(
        TypeError, match="steps must be a non-negative integer"
    ):
        model.train(x, y, Ws, 0.1, 2.5)
    with pytest.raises(ValueError, match=r"batches\[1\] indices must lie in"):
        model.train(x, y, Ws, 0.1, 2, batches=[[0, 1], [0, 9]])
    with pytest.raises(ValueError, match="contains NaN"):
        model.predict(x * float("nan"), Ms, mus)
    with pytest.raises(ValueError, match=r"Ms\[2\] must have shape"):
        model.predict(x, [Ms[0], Ms[1], Ms[0]], mus)
    with pytest.raises(
        ValueError, match=r"layers\[1\].n_in = 3 does not match"
    ):
        DeepNQF([MLPLayer(2, 4), MLPLayer(3, 1)])
    with pytest.raises(TypeError, match=r"layers\[0\] must be a Layer"):
        DeepNQF(["not a layer"])
    with pytest.raises(
        ValueError, match="layers must hold at least one Layer"
    ):
        DeepNQF([])
    with pytest.raises(
        ValueError, match=r"bases\[0\] must have orthonormal columns"
    ):
        compress_deep(
            model, weights(model, [12, 10, 9]), 0.1, [2 * bases[0]] + bases[1:]
        )
    with pytest.raises(
        ValueError, match="layer 0: width d = 3 is not larger than k"
    ):
        compress_deep(model, Ws, 0.1, bases)
    with pytest.raises(ValueError, match="layer 0: M - mu mu"):
        realize_deep([torch.eye(7, dtype=F64)] + Ms[1:], mus, [2, 4, 2])
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        model.train(x, 1e3 * y, Ws, 1e3, 50)
    with pytest.raises(
        ValueError,
        match=r"h must have shape \(\.\.\., n, 12\) \(4 tokens of 3\)",
    ):
        AttentionLayer(4, 3, 1).forward(
            torch.zeros(2, 10, dtype=F64),
            torch.eye(4, dtype=F64),
            torch.zeros(4, dtype=F64),
        )
    with pytest.raises(TypeError, match="pooled must be True or False"):
        AttentionLayer(4, 3, 1, pooled=1)
    with pytest.raises(TypeError, match="n_tokens must be a positive integer"):
        AttentionLayer(4.0, 3, 1)
    with pytest.raises(ValueError, match="structure_fn returned A of shape"):

        def wrong_shape(h):
            return (
                torch.zeros(h.shape[0], 1),
                None,
                None,
                torch.zeros(h.shape[0], 1, 2, 3),
            )

        bad = FunctionLayer(wrong_shape, 2, 4, 1)
        DeepNQF([bad]).predict(
            x, [torch.eye(2, dtype=F64)], [torch.zeros(2, dtype=F64)]
        )


# ------------------------------------------------------------------ per-output
# weights and masks
def linear_mlp(dims, seed=0, scale=0.5):
    """Plain weight matrices W_l (D_l x D_{l-1}) of a deep linear network."""
    gen = torch.Generator().manual_seed(seed)
    return [
        scale * torch.randn(dims[i + 1], dims[i], generator=gen, dtype=F64)
        for i in range(len(dims) - 1)
    ]


def test_weighted_loss_is_the_explicit_sum_over_entries():
    dims = [3, 4, 2]
    Wm = linear_mlp(dims)
    model = DeepNQF.mlp(dims, act=None)
    gen = torch.Generator().manual_seed(9)
    x, y = (
        torch.randn(5, 3, generator=gen, dtype=F64),
        torch.randn(5, 2, generator=gen, dtype=F64),
    )
    w = torch.rand(5, 2, generator=gen, dtype=F64)
    w[1, 0] = w[3, 1] = 0.0
    f = x @ Wm[0].T @ Wm[1].T  # the deep linear network by hand
    want = 0.0
    for n in range(5):
        for k in range(2):
            want += float(w[n, k]) * (float(f[n, k]) - float(y[n, k])) ** 2
    want /= 5
    Ms, mus = deep_moments(DeepNQF.mlp_weights(Wm))
    assert float(model.loss(x, y, Ms, mus, weights=w)) == pytest.approx(
        want, rel=1e-13
    )
    # one weight per output broadcasts over the inputs; all ones is the
    # unweighted loss
    per_output = torch.tensor([2.0, 0.5], dtype=F64)
    assert torch.isclose(
        model.loss(x, y, Ms, mus, weights=per_output),
        model.loss(x, y, Ms, mus, weights=per_output.expand(5, 2)),
        rtol=1e-14,
    )
    assert torch.equal(
        model.loss(x, y, Ms, mus, weights=torch.ones(5, 2, dtype=F64)),
        model.loss(x, y, Ms, mus),
    )


def test_matrix_completion_trains_on_the_observed_entries_only():
    """f(e_i) = row i of (V U)^T; GD on (U, V) by hand over the observed
    entries, against DeepNQF.train."""
    n, m, r, lr, steps = 5, 4, 3, 0.2, 25
    gen = torch.Generator().manual_seed(3)
    Y = torch.randn(n, m, generator=gen, dtype=F64)
    mask = (torch.rand(n, m, generator=gen) < 0.6).to(F64)
    U, V = (
        0.3 * torch.randn(r, n, generator=gen, dtype=F64),
        0.3 * torch.randn(m, r, generator=gen, dtype=F64),
    )
    x = torch.eye(n, dtype=F64)
    model = DeepNQF.mlp([n, r, m], act=None)
    _, out = model.train(
        x, Y, DeepNQF.mlp_weights([U, V]), lr, steps, weights=mask
    )
    for t in range(steps + 1):
        F = U.T @ V.T  # F[i, k] = f_k(e_i)
        assert torch.allclose(out[t], F, atol=1e-12), t
        R = mask * (F - Y)  # residuals on the observed entries only
        gU, gV = (2 / n) * V.T @ R.T, (2 / n) * R.T @ U.T
        U, V = U - lr * gU, V - lr * gV
    assert float(((out[-1] - out[0]) * mask).abs().max()) > 1e-2
    # the targets of unobserved entries never enter
    Y2 = torch.where(mask > 0, Y, torch.full_like(Y, 1e3))
    _, out2 = model.train(
        x,
        Y2,
        DeepNQF.mlp_weights(linear_mlp([n, r, m], seed=4)),
        lr,
        5,
        weights=mask,
    )
    _, out1 = model.train(
        x,
        Y,
        DeepNQF.mlp_weights(linear_mlp([n, r, m], seed=4)),
        lr,
        5,
        weights=mask,
    )
    assert torch.equal(out1, out2)


def test_weights_follow_the_minibatches_and_the_closed_recursion():
    model = DeepNQF.mlp([3, 4, 2], act=None)
    gen = torch.Generator().manual_seed(8)
    x, y = (
        torch.randn(6, 3, generator=gen, dtype=F64),
        torch.randn(6, 2, generator=gen, dtype=F64),
    )
    w = torch.rand(6, 2, generator=gen, dtype=F64)
    Ws = DeepNQF.mlp_weights(linear_mlp([3, 4, 2], seed=2))
    batches = [[0, 2, 5], [1, 3], [4, 0]]
    _, out = model.train(x, y, Ws, 0.1, 3, batches=batches, weights=w)
    W_hand = Ws
    for b in batches:
        W_hand = model.gd_step(x[b], y[b], W_hand, 0.1, weights=w[b])
    assert torch.allclose(out[-1], model.predict_W(x, W_hand), atol=1e-13)
    Ms, mus = deep_moments(Ws)
    _, out_closed = model.train_closed(
        x, y, Ms, mus, [4], 0.1, 3, batches=batches, weights=w
    )
    assert torch.max(torch.abs(out - out_closed)) < 1e-12


def test_bad_weights_raise_clear_errors():
    model = DeepNQF.mlp([3, 4, 2], act=None)
    x, y = torch.zeros(5, 3, dtype=F64), torch.zeros(5, 2, dtype=F64)
    Ms, mus = deep_moments(DeepNQF.mlp_weights(linear_mlp([3, 4, 2])))
    with pytest.raises(ValueError, match=r"weights must be >= 0"):
        model.loss(x, y, Ms, mus, weights=-torch.ones(5, 2, dtype=F64))
    with pytest.raises(ValueError, match="weights are all zero"):
        model.loss(x, y, Ms, mus, weights=torch.zeros(5, 2, dtype=F64))
    with pytest.raises(
        ValueError, match=r"weights must broadcast to y's shape \(5, 2\)"
    ):
        model.loss(x, y, Ms, mus, weights=torch.ones(5, 3, dtype=F64))
    with pytest.raises(ValueError, match="weights contains NaN.*weight 0"):
        model.loss(
            x, y, Ms, mus, weights=torch.tensor([1.0, float("nan")], dtype=F64)
        )
    with pytest.raises(TypeError, match="weights must be a real numeric"):
        model.loss(
            x, y, Ms, mus, weights=torch.ones(5, 2, dtype=torch.complex128)
        )
    with pytest.raises(ValueError, match="y contains NaN"):
        model.loss(
            x, y * float("nan"), Ms, mus, weights=torch.ones(5, 2, dtype=F64)
        )


# ------------------------------------------------------------------ any depth:
# LinearLayer and DeepNQF.mlp
def test_linear_layer_is_exactly_linear_in_its_weights():
    layer = LinearLayer(3, 2, act=torch.tanh)
    gen = torch.Generator().manual_seed(6)
    h = torch.randn(4, 3, generator=gen, dtype=F64)
    W = torch.randn(
        6, 5, generator=gen, dtype=F64
    )  # 5 neurons, each a vec'd 2 x 3 matrix
    V = sum(
        W[:, i].reshape(3, 2).T for i in range(5)
    )  # column-major vec: entry k + 2 j is V[k, j]
    M, mu = W @ W.T, W.sum(1)
    assert torch.allclose(
        layer.forward(h, M, mu), torch.tanh(h) @ V.T, atol=1e-13
    )
    C, g, B, A = layer.structure(h)
    assert B is None and torch.all(C == 0) and torch.all(A == 0)
    assert torch.allclose(
        Layer.forward(layer, h, M, mu), torch.tanh(h) @ V.T, atol=1e-13
    )


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_mlp_stack_of_any_depth_is_the_blockwise_linearised_network(depth):
    """Pairs (W1, W2), (W3, W4), ... linearised inside (act'(0) = 1), tanh
    between blocks, a last unpaired W_L exact."""
    dims = [3, 4, 5, 4, 3, 2][: depth + 1]
    Ws = linear_mlp(dims, seed=depth)
    gen = torch.Generator().manual_seed(10 + depth)
    x = torch.randn(6, 3, generator=gen, dtype=F64)
    a, first = x, True
    for j in range(0, depth - 1, 2):  # blocks by hand
        a = (a if first else torch.tanh(a)) @ Ws[j].T @ Ws[j + 1].T
        first = False
    if depth % 2:
        a = (a if first else torch.tanh(a)) @ Ws[-1].T
    model = DeepNQF.mlp(dims)
    assert model.L == (depth + 1) // 2
    assert isinstance(model.layers[-1], LinearLayer if depth % 2 else MLPLayer)
    assert torch.allclose(
        model.predict_W(x, DeepNQF.mlp_weights(Ws)), a, atol=1e-12
    )


def test_odd_depth_stack_is_the_small_weight_limit_of_the_tanh_mlp():
    """Depth 3: f = W3 tanh(W2 tanh(W1 x)) and its stack W3 tanh(W2 W1 x)
    differ by O(eps^5) (f ~ eps^3)."""
    Ws = linear_mlp([3, 4, 5, 2], seed=1, scale=1.0)
    x = torch.randn(
        4, 3, generator=torch.Generator().manual_seed(2), dtype=F64
    )
    model = DeepNQF.mlp([3, 4, 5, 2])
    eps = np.geomspace(0.01, 0.04, 4)
    err = []
    for e in eps:
        W1, W2, W3 = (e * W for W in Ws)
        real = torch.tanh(torch.tanh(x @ W1.T) @ W2.T) @ W3.T
        err.append(
            float(
                (real - model.predict_W(x, DeepNQF.mlp_weights([W1, W2, W3])))
                .abs()
                .max()
            )
        )
    slope = np.polyfit(np.log(eps), np.log(err), 1)[0]
    assert abs(slope - 5.0) < 0.15


def test_mlp_stack_closed_recursion_with_linear_layer_equals_training():
    model = DeepNQF.mlp(
        [3, 4, 5, 2]
    )  # a block and a LinearLayer (g != 0: the width enters via d v)
    Wm = linear_mlp([3, 4, 5, 2], seed=5, scale=0.4)
    Ws = DeepNQF.mlp_weights(Wm[:2]) + [
        torch.stack([Wm[2].T.reshape(-1) / 3] * 3, dim=1)
    ]  # the last as 3 neurons
    gen = torch.Generator().manual_seed(4)
    x, y = (
        torch.randn(7, 3, generator=gen, dtype=F64),
        torch.randn(7, 2, generator=gen, dtype=F64),
    )
    _, out = model.train(x, y, Ws, 0.05, 30)
    (Ms, mus), out_closed = model.train_closed(
        x, y, *deep_moments(Ws), [4, 3], 0.05, 30
    )
    assert torch.max(torch.abs(out - out_closed)) < 1e-11
    assert torch.max(torch.abs(out[-1] - out[0])) > 1e-2


def test_mlp_constructor_and_weights_bad_input():
    with pytest.raises(
        ValueError, match=r"dims\[1\] must be a positive integer"
    ):
        DeepNQF.mlp([3, 0, 2])
    with pytest.raises(
        ValueError,
        match="dims must hold the input size and at least one layer",
    ):
        DeepNQF.mlp([3])
    with pytest.raises(TypeError, match="act must be callable"):
        DeepNQF.mlp([3, 2], act="tanh")
    with pytest.raises(
        ValueError, match=r"Ws\[1\] has 5 columns but Ws\[0\] has 4 rows"
    ):
        DeepNQF.mlp_weights(
            [torch.zeros(4, 3, dtype=F64), torch.zeros(2, 5, dtype=F64)]
        )
    with pytest.raises(TypeError, match="slope must be a real number"):
        MLPLayer(3, 2, slope=True)
    with pytest.raises(ValueError, match="slope must be finite"):
        MLPLayer(3, 2, slope=float("nan"))


# ------------------------------------------------------------------ end-to-end
# product of a deep linear stack
@pytest.mark.parametrize(
    "dims", [[3, 4, 2], [3, 5, 4, 2], [3, 5, 4, 6, 2], [2, 3, 4, 3, 5, 2]]
)
def test_product_is_the_product_of_the_weight_matrices(dims):
    Ws = linear_mlp(dims, seed=len(dims))
    want = Ws[0]
    for W in Ws[1:]:
        want = W @ want  # W_L ... W_1 by explicit matmuls
    model = DeepNQF.mlp(dims, act=None)
    T = model.product_W(DeepNQF.mlp_weights(Ws))
    assert T.shape == (dims[-1], dims[0])
    assert torch.allclose(T, want, atol=1e-12)
    x = torch.randn(
        5, dims[0], generator=torch.Generator().manual_seed(1), dtype=F64
    )
    assert torch.allclose(
        model.predict_W(x, DeepNQF.mlp_weights(Ws)), x @ T.T, atol=1e-12
    )
    assert torch.allclose(
        model.product(*deep_moments(DeepNQF.mlp_weights(Ws))), T, atol=1e-14
    )


def test_product_of_attention_and_scaled_layers():
    model = DeepNQF(
        [
            AttentionLayer(3, 2, 2),
            ScaledLayer(AttentionLayer(3, 2, 1, pooled=True), 0.5),
        ]
    )
    gen = torch.Generator().manual_seed(2)
    Ws = [
        torch.randn(4, 3, generator=gen, dtype=F64),
        torch.randn(3, 2, generator=gen, dtype=F64),
    ]
    h = torch.randn(5, 6, generator=gen, dtype=F64)
    T = model.product_W(Ws)
    assert T.shape == (1, 6)
    assert torch.allclose(model.predict_W(h, Ws), h @ T.T, atol=1e-12)


def test_product_refuses_layers_that_are_not_linear():
    Ws = DeepNQF.mlp_weights(linear_mlp([3, 4, 2, 3, 1]))
    with pytest.raises(
        TypeError, match=r"layers\[1\]: this MLPLayer applies act to its input"
    ):
        DeepNQF.mlp([3, 4, 2, 3, 1]).product_W(Ws)
    general, _ = general_model()
    with pytest.raises(
        TypeError, match=r"layers\[0\]: FunctionLayer is not linear"
    ):
        general.product_W(weights(general, [3, 4, 2]))


@pytest.mark.parametrize("sgd", [False, True])
def test_deep_linear_closed_dynamics_equal_explicit_gd_on_the_matrices(sgd):
    """f = W4 W3 W2 W1 x: plain GD on the four matrices (autograd on a
    hand-written loss) vs Thm 14's recursion."""
    dims, lr, steps = [3, 4, 5, 4, 2], 0.05, 40
    Wm = [
        W.clone().requires_grad_(True)
        for W in linear_mlp(dims, seed=7, scale=0.6)
    ]
    gen = torch.Generator().manual_seed(7)
    x, y = (
        torch.randn(8, 3, generator=gen, dtype=F64),
        torch.randn(8, 2, generator=gen, dtype=F64),
    )
    rng = np.random.default_rng(1)
    batches = (
        [rng.choice(8, 5, replace=False) for _ in range(steps)]
        if sgd
        else [np.arange(8)] * steps
    )
    model = DeepNQF.mlp(dims, act=None)
    Ms, mus = deep_moments(DeepNQF.mlp_weights([W.detach() for W in Wm]))
    (_, _), out_closed = model.train_closed(
        x, y, Ms, mus, [4, 4], lr, steps, batches=batches if sgd else None
    )
    for t in range(steps + 1):
        with torch.no_grad():
            f = x @ Wm[0].T @ Wm[1].T @ Wm[2].T @ Wm[3].T
        assert torch.max(torch.abs(f - out_closed[t])) < 1e-10, t
        if t == steps:
            break
        b = batches[t]
        fb = x[b] @ Wm[0].T @ Wm[1].T @ Wm[2].T @ Wm[3].T
        grads = torch.autograd.grad(((fb - y[b]) ** 2).sum() / len(b), Wm)
        with torch.no_grad():
            for W, G in zip(Wm, grads):
                W -= lr * G
    assert torch.max(torch.abs(out_closed[-1] - out_closed[0])) > 1e-2


# ------------------------------------------------------------------ validated
# order parameters
def test_order_parameters_must_be_symmetric_psd_and_realisable():
    model = DeepNQF.mlp([3, 4, 2], act=None)
    W = DeepNQF.mlp_weights(linear_mlp([3, 4, 2]))[0]  # (5, 4): width 4
    M, mu = W @ W.T, W.sum(1)
    x, y = torch.zeros(2, 3, dtype=F64), torch.zeros(2, 2, dtype=F64)
    skew = M.clone()
    skew[0, 1] += 1e-3
    with pytest.raises(ValueError, match=r"Ms\[0\] must be symmetric"):
        model.predict(x, [skew], [mu])
    with pytest.raises(
        ValueError, match=r"Ms\[0\] must be positive semi-definite"
    ):
        model.predict(x, [M - 10 * torch.eye(5, dtype=F64)], [mu])
    with pytest.raises(
        ValueError, match=r"layer 0: .*not realisable by any width-2 weights"
    ):
        model.closed_step(
            x, y, [M], [mu], [2], 0.1
        )  # M - mu mu^T/d has rank 3 > d - 1
    with pytest.raises(
        ValueError, match=r"layer 0: .*not realisable by any width-4 weights"
    ):
        model.train_closed(
            x, y, [M], [mu + 5.0], [4], 0.1, 2
        )  # mu inconsistent with M
    with pytest.raises(
        ValueError, match="rtol must be finite with 0 < rtol < 1"
    ):
        structure_subspace(model.layers[0], x, rtol=float("nan"))
    with pytest.raises(ValueError, match="rtol must be finite"):
        structure_subspace(model.layers[0], x, rtol=float("inf"))


def test_result_does_not_depend_on_the_perturbed_triangle():
    model = DeepNQF.mlp([3, 4, 2], act=None)
    W = DeepNQF.mlp_weights(linear_mlp([3, 4, 2]))[0]
    M, mu = W @ W.T, W.sum(1)
    M = 0.5 * (M + M.T)
    gen = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(4, 3, generator=gen, dtype=F64),
        torch.randn(4, 2, generator=gen, dtype=F64),
    )
    delta = 1e-12 * float(
        M.abs().max()
    )  # below the symmetry tolerance: accepted, then symmetrised
    upper, lower, both = M.clone(), M.clone(), M.clone()
    upper[0, 4] += (
        delta  # (0, 4) is in the u-V block that MLPLayer.forward reads
    )
    lower[4, 0] += delta
    both[0, 4] += delta / 2
    both[4, 0] += delta / 2
    preds = [model.predict(x, [A], [mu]) for A in (upper, lower, both)]
    assert torch.equal(preds[0], preds[1]) and torch.equal(preds[0], preds[2])
    steps = [
        model.closed_step(x, y, [A], [mu], [4], 0.1)[0][0]
        for A in (upper, lower)
    ]
    assert torch.equal(steps[0], steps[1])
    assert not torch.equal(
        model.predict(x, [M], [mu]), preds[0]
    )  # the perturbation is seen, from either side
