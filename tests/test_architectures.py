"""Tests of nqf_lite.expansion.models: modules, closed-form A(x) (Props. 1-6),
Eqs. 17-19."""

from __future__ import annotations

import itertools
import math
import numpy as np
import pytest
import torch

import nqf_lite.expansion.models as ar
from nqf_lite import Expansion, NotSmoothError, expand
from nqf_lite.expansion.autograd import truncation_error
from nqf_lite.book.plotting import plot_structure
from nqf_lite.dynamics.scaling import fit_loglog_slope

TOL = 1e-12


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _slope(x, y) -> float:
    """Log-log slope over the whole (increasing) grid ``x``, by the package's
    one fitter."""
    return fit_loglog_slope(x, y, (x[0], x[-1])).slope


def _f(module, W, x) -> np.ndarray:
    return module(torch.as_tensor(W, dtype=torch.float64), x).detach().numpy()


# ----------------------------------------------------------------------------
# layouts
# ----------------------------------------------------------------------------


def test_layout_vec_is_column_major():
    L = ar.Layout((("a", ()), ("M", (2, 3)), ("b", (2,))))
    assert L.p == 1 + 6 + 2
    W = np.arange(L.p * 2, dtype=float).reshape(L.p, 2)
    blocks = L.unpack(W)
    # entry [r, c] of the 2x3 block sits at row 1 + r + 2c
    for r, c, i in itertools.product(range(2), range(3), range(2)):
        assert blocks["M"][i, r, c] == W[1 + r + 2 * c, i]
    assert blocks["a"].shape == (2,) and blocks["b"].shape == (2, 2)
    np.testing.assert_array_equal(L.pack(blocks), W)
    Wt = torch.as_tensor(W)
    np.testing.assert_array_equal(L.unpack(Wt)["M"].numpy(), blocks["M"])
    assert L.edges() == [(0, 1, "a"), (1, 7, "M"), (7, 9, "b")]


def test_layout_bad_inputs():
    with pytest.raises(ValueError, match="unique"):
        ar.Layout((("a", (2,)), ("a", (3,))))
    with pytest.raises(ValueError, match="shape"):
        ar.Layout((("a", (0,)),))
    L = ar.mlp_layout(3)
    with pytest.raises(ValueError, match=r"p=4"):
        L.unpack(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="keys"):
        L.pack({"u": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="block 'v'"):
        L.pack({"u": np.zeros((2, 3)), "v": np.zeros((3,))})


# ----------------------------------------------------------------------------
# module forward passes against independent NumPy implementations
# ----------------------------------------------------------------------------


def test_mlp_forward_and_permutation_symmetry():
    rng = _rng(0)
    k, d = 3, 5
    x = rng.normal(size=k)
    W = rng.normal(size=(k + 1, d))
    expected = sum(W[k, i] * np.tanh(W[:k, i] @ x) for i in range(d))
    f = ar.mlp_module(k, "tanh")
    assert abs(_f(f, W, x) - expected) < 1e-14
    perm = rng.permutation(d)
    assert abs(_f(f, W[:, perm], x) - expected) < 1e-14
    fv = ar.mlp_module(k, "gelu", V=2)
    Wv = rng.normal(size=(k + 2, d))

    def gelu(z):
        return 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))

    expected_v = Wv[k:] @ gelu(Wv[:k].T @ x)
    np.testing.assert_allclose(_f(fv, Wv, x), expected_v, atol=1e-14)


def test_mean_field_forward():
    rng = _rng(1)
    x, W = rng.normal(size=2), rng.normal(size=(3, 4))
    S = sum(W[2, i] / (1 + np.exp(-W[:2, i] @ x)) for i in range(4))
    expected = np.log1p(np.exp(S)) - np.log(2)
    assert abs(_f(ar.mean_field_mlp(2), W, x) - expected) < 1e-14


def test_cnn_forward_matches_explicit_correlation():
    rng = _rng(2)
    X = rng.normal(size=(2, 5, 4))
    kh, kw, d = 2, 3, 3
    f = ar.cnn_module((kh, kw), channels=2, act="tanh")
    W = rng.normal(size=(f.p, d))
    total = 0.0
    for i in range(d):
        K = W[:-1, i].reshape(2, kh, kw)
        for r, c in itertools.product(range(5 - kh + 1), range(4 - kw + 1)):
            total += W[-1, i] * np.tanh(
                np.sum(K * X[:, r : r + kh, c : c + kw])
            )
    assert abs(_f(f, W, X) - total) < 1e-13
    P = ar.patches(X, (kh, kw))
    assert P.shape == ((5 - kh + 1) * (4 - kw + 1), 2 * kh * kw)
    np.testing.assert_array_equal(P[0], X[:, :kh, :kw].ravel())


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def test_mha_forward_matches_explicit_heads():
    rng = _rng(3)
    D, N, d_k, d_v, d = 4, 5, 2, 3, 3
    x, X = rng.normal(size=D), rng.normal(size=(D, N))
    for V in (None, 2):
        f = ar.mha(D, d_k, d_v, V)
        L = ar.mha_layout(D, d_k, d_v, V)
        heads = {n: rng.normal(size=(d, *s)) for n, s in L.blocks}
        W = L.pack(heads)
        out = 0.0
        for i in range(d):
            a = _softmax(
                X.T @ heads["W_K"][i].T @ heads["W_Q"][i] @ x / math.sqrt(d_k)
            )
            val = heads["W_V"][i] @ X @ a
            out = out + (
                heads["v"][i] @ val if V is None else heads["W_O"][i] @ val
            )
        np.testing.assert_allclose(_f(f, W, (x, X)), out, atol=1e-14)
        perm = rng.permutation(d)
        np.testing.assert_allclose(_f(f, W[:, perm], (x, X)), out, atol=1e-14)


def test_qk_and_logits_forward():
    rng = _rng(4)
    D, N, d_k = 3, 4, 2
    x, X, c = rng.normal(size=D), rng.normal(size=(D, N)), rng.normal(size=D)
    f = ar.qk_head(c, d_k)
    W = rng.normal(size=(f.p, 2))
    out = 0.0
    for i in range(2):
        WQ = W[: d_k * D, i].reshape(D, d_k).T
        WK = W[d_k * D :, i].reshape(D, d_k).T
        out += c @ X @ _softmax(X.T @ WK.T @ WQ @ x / math.sqrt(d_k))
    assert abs(_f(f, W, (x, X)) - out) < 1e-14
    WQ, WK = rng.normal(size=(d_k, D)), rng.normal(size=(d_k, D))
    Wl = np.concatenate([WQ.T, WK.T])  # column i = [q_i; k_i]
    expected = c @ X @ _softmax(X.T @ WK.T @ WQ @ x / math.sqrt(d_k))
    assert abs(_f(ar.logits_head(c, d_k), Wl, (x, X)) - expected) < 1e-14


def test_moe_forward():
    rng = _rng(5)
    k, d = 3, 4
    x = rng.normal(size=k)
    f = ar.moe_module(k, ar.linear_expert(k), gate="tanh")
    W = rng.normal(size=(2 * k, d))
    expected = sum(np.tanh(W[:k, i] @ x) * (W[k:, i] @ x) for i in range(d))
    assert abs(_f(f, W, x) - expected) < 1e-14
    fv = ar.moe_module(k, ar.linear_expert(k, V=2), gate="tanh")
    Wv = rng.normal(size=(k + 2 * k, d))
    exp_v = sum(
        np.tanh(Wv[:k, i] @ x) * (Wv[k:, i].reshape(k, 2).T @ x)
        for i in range(d)
    )
    np.testing.assert_allclose(_f(fv, Wv, x), exp_v, atol=1e-14)


# ----------------------------------------------------------------------------
# closed forms: hand-written small cases (independent of the code under test)
# ----------------------------------------------------------------------------


def test_A_mlp_by_hand():
    A = ar.A_mlp([1.0, 2.0], dphi0=1.0)
    np.testing.assert_array_equal(A, [[0, 0, 0.5], [0, 0, 1.0], [0.5, 1.0, 0]])
    Av = ar.A_mlp([1.0, 2.0], dphi0=2.0, V=2)
    assert Av.shape == (2, 4, 4)
    assert Av[1, 0, 3] == 1.0 and Av[1, 1, 3] == 2.0 and Av[1, 0, 2] == 0.0
    np.testing.assert_array_equal(ar.g_mlp([1.0, 2.0], 0.5), [0, 0, 0.5])
    np.testing.assert_array_equal(
        ar.g_mlp([1.0], 0.5, V=2), [[0, 0.5, 0], [0, 0, 0.5]]
    )


def test_A_logits_by_hand():
    X = np.array([[1.0, -1.0], [0.0, 0.0]])  # Σ_X = diag(1, 0)
    A = ar.A_logits([0.0, 1.0], X, c=[1.0, 1.0], d_k=4)
    expected = np.zeros((4, 4))
    expected[1, 2] = expected[2, 1] = 1 / (2 * 2)  # x = e_2, u = e_1
    np.testing.assert_allclose(A, expected, atol=1e-15)


# ----------------------------------------------------------------------------
# closed forms against expand's autograd A (the source of truth)
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "act", ["tanh", "gelu", "sigmoid", "softplus0", "erf"]
)
@pytest.mark.parametrize("k,V", [(1, None), (4, None), (3, 2), (5, 3)])
def test_mlp_closed_form_matches_expand(act, k, V):
    _, phi0, dphi0 = ar.activation(act)
    x = _rng(10 + k).normal(size=k)
    f = ar.mlp_module(k, act, V)
    e = expand(f, x, f.p)
    assert np.abs(e.A - ar.A_mlp(x, dphi0, V)).max() <= TOL
    assert np.abs(e.g - ar.g_mlp(x, phi0, V)).max() <= TOL
    assert np.abs(e.B).max() <= TOL


@pytest.mark.parametrize("k", [2, 5])
def test_mean_field_closed_form_matches_expand(k):
    x = _rng(20 + k).normal(size=k)
    f = ar.mean_field_mlp(k, "sigmoid", "softplus0")
    e = expand(f, x, f.p)
    g, B, A = ar.coeffs_mean_field_mlp(
        x, phi0=0.5, dphi0=0.25, drho0=0.5, ddrho0=0.25
    )
    assert np.abs(B).max() > 0.01 and np.abs(g).max() > 0.1
    for got, want in ((e.g, g), (e.B, B), (e.A, A)):
        assert np.abs(got - want).max() <= TOL
    assert not e.zgz


@pytest.mark.parametrize(
    "shape,kernel,C,V",
    [
        ((5, 6), (3, 3), 1, None),
        ((4, 5), (2, 3), 2, None),
        ((4, 4), (2, 2), 1, 2),
    ],
)
def test_cnn_closed_form_matches_expand(shape, kernel, C, V):
    X = _rng(30).normal(size=shape if C == 1 else (C, *shape))
    f = ar.cnn_module(kernel, channels=C, act="gelu", V=V)
    e = expand(f, X, f.p)
    assert np.abs(e.A - ar.A_cnn(X, kernel, 0.5, V)).max() <= TOL


@pytest.mark.parametrize(
    "D,N,d_k,d_v,V", [(4, 5, 2, 3, None), (3, 2, 1, 2, None), (3, 4, 2, 2, 2)]
)
def test_mha_closed_form_matches_expand(D, N, d_k, d_v, V):
    rng = _rng(40 + D + N)
    x, X = rng.normal(size=D), rng.normal(size=(D, N))
    f = ar.mha(D, d_k, d_v, V)
    e = expand(f, (x, X), f.p)
    A = ar.A_mha(x, X, d_k, d_v, V)
    assert np.abs(e.A - A).max() <= TOL
    assert e.zgz
    # the query and key rows of A vanish (Prop. 2)
    assert np.all(A[..., : 2 * d_k * D, :] == 0)


@pytest.mark.parametrize("D,N,d_k", [(3, 4, 2), (4, 6, 1), (2, 3, 3)])
def test_qk_closed_form_matches_expand(D, N, d_k):
    rng = _rng(50 + D)
    x, X, c = rng.normal(size=D), rng.normal(size=(D, N)), rng.normal(size=D)
    f = ar.qk_head(c, d_k)
    e = expand(f, (x, X), f.p)
    assert np.abs(e.A - ar.A_qk(x, X, c, d_k)).max() <= TOL


@pytest.mark.parametrize("D,N,d_k", [(3, 4, 2), (4, 5, 3)])
def test_logits_closed_form_matches_expand(D, N, d_k):
    rng = _rng(60 + D)
    x, X, c = rng.normal(size=D), rng.normal(size=(D, N)), rng.normal(size=D)
    f = ar.logits_head(c, d_k)
    e = expand(f, (x, X), f.p)
    assert np.abs(e.A - ar.A_logits(x, X, c, d_k)).max() <= TOL


@pytest.mark.parametrize(
    "k,V,gate", [(3, None, "tanh"), (4, None, "gelu"), (3, 2, "tanh")]
)
def test_moe_closed_form_matches_expand(k, V, gate):
    x = _rng(70 + k).normal(size=k)
    f = ar.moe_module(k, ar.linear_expert(k, V), gate=gate)
    e = expand(f, x, f.p)
    assert (
        np.abs(
            e.A - ar.A_moe(x, ar.activation(gate)[2], ar.G_linear(x, V))
        ).max()
        <= TOL
    )


def test_moe_with_zgz_expert_has_zero_A():
    x = _rng(80).normal(size=3)
    f = ar.moe_module(3, ar.mlp_expert(3, hidden=4))
    e = expand(f, x, f.p)
    assert np.abs(e.A).max() == 0.0


# ----------------------------------------------------------------------------
# feed-forward form (Eqs. 17-19)
# ----------------------------------------------------------------------------


def test_feedforward_blocks_mlp_and_mha():
    x = np.array([1.0, -2.0, 3.0])
    C, split = ar.feedforward_blocks(ar.A_mlp(x, 0.5))
    assert split == 3
    np.testing.assert_allclose(C, 0.5 * x[:, None])
    rng = _rng(90)
    Xc = rng.normal(size=(3, 4))
    A = ar.A_mha(x, Xc, 2, 2)
    C, split = ar.feedforward_blocks(A)
    assert split == 2 * 2 * 3 + 2 * 3
    Cv, split_v = ar.feedforward_blocks(ar.A_mlp(x, 1.0, V=2))
    assert split_v == 3 and Cv.shape == (2, 3, 2)


def test_representation_reproduces_quadratic_form():
    rng = _rng(91)
    k, d = 4, 6
    x, W = rng.normal(size=k), rng.normal(size=(k + 1, d))
    A = ar.A_mlp(x, 1.0)
    C, split = ar.feedforward_blocks(A)
    h = ar.representation(W, C, split)
    np.testing.assert_allclose(
        h[:, 0], W[:k].T @ x, atol=1e-14
    )  # pre-activations
    quad = np.trace(W @ W.T @ A)
    assert abs(np.sum(h * W[split:].T) - quad) < 1e-12


def test_feedforward_bad_inputs():
    a = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="no feed-forward"):
        ar.feedforward_blocks(np.outer(a, a))  # phase retrieval, A = a aᵀ
    with pytest.raises(ValueError, match="symmetric"):
        ar.feedforward_blocks(np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="split=1"):
        ar.feedforward_blocks(ar.A_mlp(a, 1.0), split=1)
    with pytest.raises(ValueError, match="split must"):
        ar.feedforward_blocks(ar.A_mlp(a, 1.0), split=4)
    with pytest.raises(ValueError, match="shape"):
        ar.feedforward_blocks(np.zeros(3))
    with pytest.raises(ValueError, match="C must"):
        ar.representation(np.zeros((4, 2)), np.zeros((2, 1)), 3)


# ----------------------------------------------------------------------------
# truncation order
# ----------------------------------------------------------------------------


EPS = np.logspace(-2.5, -0.5, 9)


@pytest.mark.parametrize(
    "act,slope", [("tanh", 4.0), ("gelu", 3.0), ("sigmoid", 4.0)]
)
def test_truncation_slopes_mlp(act, slope):
    rng = _rng(100)
    x = rng.normal(size=4)
    f = ar.mlp_module(4, act)
    e = expand(f, x, f.p, d=8)
    err = truncation_error(f, e, x, rng.normal(size=(f.p, 8)), EPS)
    assert abs(_slope(EPS, err) - slope) < 0.15


def test_truncation_quadratic_form_is_exact_for_identity():
    rng = _rng(101)
    x = rng.normal(size=3)
    f = ar.mlp_module(3, "identity", V=2)
    e = expand(f, x, f.p, d=4)
    err = truncation_error(f, e, x, rng.normal(size=(f.p, 4)), EPS)
    assert err.max() < 1e-14


def test_mha_quartic_term_lifts_residual_to_order_six():
    rng = _rng(102)
    D, N, d_k, d_v = 4, 5, 2, 3
    x, X = rng.normal(size=D), rng.normal(size=(D, N))
    f = ar.mha(D, d_k, d_v)
    e = expand(f, (x, X), f.p, d=3)
    W = rng.normal(size=(f.p, 3))
    err4 = truncation_error(f, e, (x, X), W, EPS)
    err6 = truncation_error(
        f,
        e,
        (x, X),
        W,
        EPS,
        correction=lambda We: ar.mha_quartic(We, x, X, d_k, d_v),
    )
    assert abs(_slope(EPS, err4) - 4) < 0.15
    assert abs(_slope(EPS, err6) - 6) < 0.15


def test_relu_is_not_smooth_but_homogeneous():
    rng = _rng(103)
    x = rng.normal(size=3)
    f = ar.mlp_module(3, "relu")
    with pytest.raises(NotSmoothError):
        expand(f, x, f.p)
    W = rng.normal(size=(4, 5))
    stand_in = Expansion(
        f0=np.array(0.0),
        g=np.zeros(4),
        A=ar.A_mlp(x, 0.5),
        B=np.zeros((4, 4)),
        d=5,
    )
    err = truncation_error(f, stand_in, x, W, EPS)
    assert abs(_slope(EPS, err) - 2.0) < 1e-6


def test_truncation_error_bad_inputs():
    f = ar.mlp_module(2)
    e = expand(f, np.ones(2), f.p)
    with pytest.raises(ValueError, match="eps_grid"):
        truncation_error(f, e, np.ones(2), np.ones((3, 2)), [0.1, -1.0])
    with pytest.raises(ValueError, match="does not match"):
        truncation_error(f, e, np.ones(2), np.ones((4, 2)), EPS)
    with pytest.raises(TypeError, match="Expansion"):
        truncation_error(f, {"A": e.A}, np.ones(2), np.ones((3, 2)), EPS)


# ----------------------------------------------------------------------------
# bad inputs of factories and closed forms
# ----------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="activation"):
        ar.mlp_module(3, "swish")
    with pytest.raises(ValueError, match="k must"):
        ar.mlp_module(0)
    with pytest.raises(ValueError, match="V must"):
        ar.mlp_module(3, V=0)
    with pytest.raises(ValueError, match=r"x must have shape \(3,\)"):
        ar.mlp_module(3)(torch.zeros(4, 2, dtype=torch.float64), np.ones(2))
    with pytest.raises(ValueError, match=r"p=4"):
        ar.mlp_module(3)(torch.zeros(5, 2, dtype=torch.float64), np.ones(3))
    with pytest.raises(ValueError, match="x must be a vector"):
        ar.A_mlp(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="dphi0 must be finite"):
        ar.A_mlp(np.ones(2), float("nan"))
    with pytest.raises(TypeError, match="dphi0"):
        ar.A_mlp(np.ones(2), "one")
    with pytest.raises(ValueError, match="larger than the image"):
        ar.A_cnn(np.ones((2, 2)), (3, 3), 1.0)
    with pytest.raises(ValueError, match="kernel_shape must"):
        ar.patches(np.ones((3, 3)), 2)
    with pytest.raises(
        ValueError, match=r"X must be a token matrix of shape \(3, N\)"
    ):
        ar.A_mha(np.ones(3), np.ones((2, 4)), 1, 1)
    with pytest.raises(ValueError, match="d_k"):
        ar.A_qk(np.ones(2), np.ones((2, 3)), np.ones(2), 0)
    with pytest.raises(
        ValueError, match=r"c must be a vector of shape \(2,\)"
    ):
        ar.A_logits(np.ones(2), np.ones((2, 3)), np.ones(3), 2)
    with pytest.raises(TypeError, match="pair"):
        ar.mha(2, 1, 1)(torch.zeros(7, 1, dtype=torch.float64), np.ones(2))
    with pytest.raises(ValueError, match="ψ\\(0\\) = 0"):
        ar.moe_module(2, ar.linear_expert(2), gate="sigmoid")
    with pytest.raises(TypeError, match="Expert"):
        ar.moe_module(2, "linear")
    with pytest.raises(ValueError, match="G must"):
        ar.A_moe(np.ones(2), 1.0, np.ones((1, 2, 2)))


def test_plot_structure_marks_blocks():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    layout = ar.mha_layout(2, 1, 2)
    A = ar.A_mha(np.ones(2), np.ones((2, 3)), 1, 2)
    im = plot_structure(ax, A, layout, title="attention")
    assert im.get_array().shape == (layout.p, layout.p)
    assert [t.get_text() for t in ax.get_xticklabels()] == layout.names
    assert len(ax.lines) == 2 * (len(layout.names) - 1)
    with pytest.raises(ValueError, match="A must have shape"):
        plot_structure(ax, np.zeros((3, 3)), layout)
    plt.close(fig)
