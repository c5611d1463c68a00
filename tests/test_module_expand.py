"""expand on torch modules (Theorem 1): units named by parameter slices,
checked against closed forms.

Every expected structure matrix is derived here independently of
``nqf_lite.expansion.autograd``: by hand (Prop. 1 for the MLP, with the bias as
one more input), from the registry's closed forms (Props. 2, 5, 6: ``A_mha``,
``A_moe``, ``A_cnn``) mapped to the module's parameter layout by explicit index
arithmetic, or from central finite differences of the module itself.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import nqf_lite.expansion.models as ar
from nqf_lite import (
    ModuleUnits,
    NotSmoothError,
    NotSymmetricError,
    expand,
    expand_dataset,
    module_units,
)
from nqf_lite.expansion.autograd import truncation_error

K, H = 3, 6


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def mlp(bias: bool, act: nn.Module | None = None, V: int = 1) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(K, H, bias=bias),
        act or nn.Tanh(),
        nn.Linear(H, V, bias=bias),
    ).double()


class SumPool(nn.Module):
    """Global sum pooling over the last two axes (Prop. 6)."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z.sum(dim=(-2, -1))


class StackedMoE(nn.Module):
    """sum_i tanh(r_i . x) theta_i . x with the gates and experts stacked as
    rows (Prop. 5)."""

    def __init__(self, k: int, E: int) -> None:
        super().__init__()
        self.gate = nn.Linear(k, E, bias=False)
        self.experts = nn.Linear(k, E, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(self.gate(x)) * self.experts(x)).sum(-1)


class ListMoE(nn.Module):
    """The same mixture with an nn.ModuleList of experts."""

    def __init__(self, k: int, E: int) -> None:
        super().__init__()
        self.gate = nn.Linear(k, E, bias=False)
        self.experts = nn.ModuleList(
            nn.Linear(k, 1, bias=False) for _ in range(E)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (
            torch.tanh(self.gate(x)) * torch.cat([e(x) for e in self.experts])
        ).sum(-1)


class Attention(nn.Module):
    """nn.MultiheadAttention read at one query token x over the context X (D,
    N)."""

    def __init__(self, E: int, heads: int, bias: bool = False) -> None:
        super().__init__()
        self.att = nn.MultiheadAttention(E, heads, bias=bias)

    def forward(self, x: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        return self.att(x[None], X.T, X.T, need_weights=False)[0][0]


MHA_UNITS = [("att.in_proj_weight", 0, 3), ("att.out_proj.weight", 1)]


# ------------------------------------------------------------------ MLP: Prop.
# 1 by hand
@pytest.mark.parametrize("V", [1, 2])
def test_mlp_without_bias_is_proposition_1(V):
    net = mlp(bias=False, V=V)
    x = torch.randn(K, generator=_gen(1), dtype=torch.float64)
    e = expand(net, x)
    # unit i = (u_i, v_i): rows of 0.weight, columns of 2.weight; Prop. 1: A =
    # (1/2)[[0, x e_o^T], [e_o x^T, 0]]
    A = np.zeros((V, K + V, K + V))
    for o in range(V):
        A[o, :K, K + o] = A[o, K + o, :K] = x.numpy() / 2
    assert e.d == H and e.p == K + V and e.zgz
    np.testing.assert_allclose(e.A, A[0] if V == 1 else A, atol=1e-12)
    np.testing.assert_allclose(
        e.A, ar.A_mlp(x.numpy(), 1.0, None if V == 1 else V), atol=1e-12
    )


def test_mlp_with_biases_treats_the_hidden_bias_as_an_input_of_one():
    net = mlp(bias=True)
    x = torch.randn(K, generator=_gen(2), dtype=torch.float64)
    e = expand(net, x)
    assert module_units(net).units == [
        ("0.weight", 0, 1),
        ("0.bias", 0, 1),
        ("2.weight", 1, 1),
    ]
    # unit i = (u_i, b_i, v_i): v tanh(u.x + b) = v (u.x + b) + O(|w|^3), so A
    # = (1/2)[[0, (x, 1)], [(x, 1)^T, 0]]
    xt = np.append(x.numpy(), 1.0)
    A = np.zeros((K + 2, K + 2))
    A[: K + 1, K + 1] = A[K + 1, : K + 1] = xt / 2
    np.testing.assert_allclose(e.A, A, atol=1e-12)
    assert float(e.f0) == pytest.approx(
        float(net[2].bias.detach()), abs=1e-15
    )  # the shared output bias
    assert e.zgz


def test_sigmoid_mlp_has_the_linear_term_of_app_b1():
    net = mlp(bias=False, act=nn.Sigmoid())
    x = torch.randn(K, generator=_gen(3), dtype=torch.float64)
    e = expand(net, x)
    # sigmoid(0) = 1/2, sigmoid'(0) = 1/4: g = (1/2) e_v, A = (1/8)[[0, x],
    # [x^T, 0]]
    np.testing.assert_allclose(e.g, np.r_[np.zeros(K), 0.5], atol=1e-12)
    np.testing.assert_allclose(e.A, ar.A_mlp(x.numpy(), 0.25), atol=1e-12)
    assert float(e.f0) == 0.0 and not e.zgz


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16]
)
def test_any_floating_dtype_is_expanded_in_float64(dtype):
    net = mlp(bias=True).to(dtype)
    x = torch.tensor([0.5, -1.25, 2.0], dtype=dtype)  # exact in every dtype
    e = expand(net, x)
    xt = np.array([0.5, -1.25, 2.0, 1.0])
    assert e.A.dtype == e.g.dtype == e.f0.dtype == np.float64
    np.testing.assert_allclose(e.A[: K + 1, K + 1], xt / 2, atol=1e-15)
    assert float(e.f0) == float(net[2].bias.detach().double())
    assert (
        next(net.parameters()).dtype == dtype
    )  # the module itself is untouched


def test_module_matches_finite_differences_of_the_module_itself():
    """A from central differences of net(x) in the weights of two hidden units,
    set by hand."""
    net = mlp(bias=True, act=nn.Softplus(), V=2)
    x = torch.randn(K, generator=_gen(4), dtype=torch.float64)
    e = expand(net, x)
    p = K + 1 + 2

    def F(theta):
        with torch.no_grad():
            w1, b1, w2 = (
                torch.zeros_like(t)
                for t in (net[0].weight, net[0].bias, net[2].weight)
            )
            for i in range(
                2
                # unit i = (row i of 0.weight, entry i of 0.bias, column i of
                # 2.weight)
            ):
                col = torch.as_tensor(theta[i * p : (i + 1) * p])
                w1[i], b1[i], w2[:, i] = col[:K], col[K], col[K + 1 :]
            out = torch.func.functional_call(
                net, {"0.weight": w1, "0.bias": b1, "2.weight": w2}, (x,)
            )
        return out.numpy()

    h, n = 1e-4, 2 * p
    E = np.eye(n) * h
    Hs = np.array(
        [
            [
                (
                    F(E[a] + E[b])
                    - F(E[a] - E[b])
                    - F(-E[a] + E[b])
                    + F(-E[a] - E[b])
                )
                / (4 * h * h)
                for b in range(n)
            ]
            for a in range(n)
        ]
    )  # (n, n, V)
    H11, H12 = Hs[:p, :p], Hs[:p, p:]
    B = np.moveaxis((H12 + np.swapaxes(H12, 0, 1)) / 4, -1, 0)
    A = np.moveaxis((H11 + np.swapaxes(H11, 0, 1)) / 4, -1, 0) - B
    np.testing.assert_allclose(e.A, A, atol=1e-6)
    np.testing.assert_allclose(e.B, B, atol=1e-6)
    g = np.array([(F(E[a]) - F(-E[a])) / (2 * h) for a in range(p)]).T
    np.testing.assert_allclose(e.g, g, atol=1e-7)


# ------------------------------------------------------------------ attention:
# Prop. 2
def _mha_permutation(E: int, hd: int) -> np.ndarray:
    """Index of each entry of the module's unit column in the registry's head
    layout (mha_layout)."""
    sl = ar.mha_layout(E, hd, hd, E).slices()
    perm = []
    for block in (
        "W_Q",
        "W_K",
        "W_V",
    ):  # module: rows h*hd + a of each block, C order (a, b)
        perm += [
            sl[block].start + a + hd * b for a in range(hd) for b in range(E)
        ]
    perm += [
        sl["W_O"].start + o + E * a for o in range(E) for a in range(hd)
    ]  # out_proj columns, C order (o, a)
    return np.array(perm)


@pytest.mark.parametrize("E, heads, N", [(4, 2, 5), (6, 3, 4)])
def test_multi_head_attention_heads_are_units(E, heads, N):
    torch.manual_seed(1)
    block = Attention(E, heads).double()
    x = torch.randn(E, generator=_gen(5), dtype=torch.float64)
    X = torch.randn(E, N, generator=_gen(6), dtype=torch.float64)
    e = expand(block, (x, X), units=MHA_UNITS, d=heads)
    hd = E // heads
    perm = _mha_permutation(E, hd)
    A = ar.A_mha(x.numpy(), X.numpy(), hd, hd, V=E)[:, perm][:, :, perm]
    assert e.d == heads and e.p == 4 * hd * E and e.V == E
    np.testing.assert_allclose(e.A, A, atol=1e-12)
    assert np.abs(A).max() > 0.1 and e.zgz


def test_attention_without_d_splits_heads_and_is_refused():
    block = Attention(4, 2).double()
    x, X = (
        torch.ones(4, dtype=torch.float64),
        torch.randn(4, 5, generator=_gen(7), dtype=torch.float64),
    )
    with pytest.raises(NotSymmetricError, match="attention head"):
        expand(
            block, (x, X), units=MHA_UNITS
        )  # one unit per row of a head: not a symmetry


def test_attention_bias_left_out_is_named_even_when_it_is_zero():
    block = Attention(
        4, 2, bias=True
    ).double()  # nn.MultiheadAttention starts in_proj_bias at 0
    assert float(block.att.in_proj_bias.detach().abs().max()) == 0.0
    x, X = (
        torch.ones(4, dtype=torch.float64),
        torch.randn(4, 5, generator=_gen(8), dtype=torch.float64),
    )
    with pytest.raises(ValueError, match="leaves out 'att.in_proj_bias'"):
        expand(block, (x, X), units=MHA_UNITS, d=2)
    e = expand(
        block, (x, X), units=MHA_UNITS + [("att.in_proj_bias", 0, 3)], d=2
    )
    assert e.p == 4 * 2 * 4 + 3 * 2


# ------------------------------------------------------------------ mixture of
# experts: Prop. 5
@pytest.mark.parametrize(
    "cls, units",
    [
        (StackedMoE, [("gate.weight", 0), ("experts.weight", 0)]),
        (ListMoE, [("gate.weight", 0), ("experts.*.weight", None)]),
    ],
)
def test_mixture_of_experts_experts_are_units(cls, units):
    torch.manual_seed(2)
    moe = cls(K, 5).double()
    xs = [
        torch.randn(K, generator=_gen(10 + i), dtype=torch.float64)
        for i in range(3)
    ]
    nqf = expand_dataset(moe, xs, units=units)
    # unit i = (r_i, theta_i); Eq. 14 with psi'(0) = 1 and G = x; the
    # registry's twin stacks the same closed form
    twin = ar.MixtureOfExperts(K).twin([x.numpy() for x in xs])
    np.testing.assert_allclose(nqf.A, twin.A, atol=1e-12)
    for n, x in enumerate(xs):
        A = np.zeros((2 * K, 2 * K))
        A[:K, K:] = A[K:, :K] = np.outer(x, x) / 2
        np.testing.assert_allclose(nqf.A[n], A, atol=1e-12)


def test_module_list_units_round_trip_the_experts():
    moe = ListMoE(K, 4).double()
    u = module_units(moe, [("gate.weight", 0), ("experts.*.weight", None)])
    W = u.weights()
    for i in range(4):
        np.testing.assert_array_equal(
            W[:K, i], moe.gate.weight[i].detach().numpy()
        )
        np.testing.assert_array_equal(
            W[K:, i], moe.experts[i].weight[0].detach().numpy()
        )


# ------------------------------------------------------------------
# convolution: Prop. 6
@pytest.mark.parametrize("c_in", [1, 2])
def test_convolution_channels_are_units(c_in):
    torch.manual_seed(3)
    net = nn.Sequential(
        nn.Conv2d(c_in, 4, (2, 3), bias=False),
        nn.Tanh(),
        SumPool(),
        nn.Linear(4, 1, bias=False),
    )
    img = torch.randn(c_in, 4, 5, generator=_gen(11), dtype=torch.float64)
    e = expand(net.double(), img)
    # unit i = (filter i flattened (channel, row, col), readout i): the MLP's A
    # with x = sum of patches
    np.testing.assert_allclose(
        e.A, ar.A_cnn(img.numpy(), (2, 3), 1.0), atol=1e-12
    )
    patches = sum(
        img[:, a : a + 2, b : b + 3].reshape(-1)
        for a in range(3)
        for b in range(3)
    ).numpy()
    np.testing.assert_allclose(e.A[:-1, -1], patches / 2, atol=1e-12)


# ------------------------------------------------------------------ units as
# W, and back
def test_weights_and_assign_follow_the_parameter_slices():
    net = mlp(bias=True)
    u = module_units(net)
    W = u.weights()
    np.testing.assert_array_equal(W[:K], net[0].weight.detach().numpy().T)
    np.testing.assert_array_equal(W[K], net[0].bias.detach().numpy())
    np.testing.assert_array_equal(W[K + 1], net[2].weight.detach().numpy()[0])
    new = np.arange(u.p * u.d, dtype=float).reshape(u.p, u.d)
    u.assign(new)
    np.testing.assert_array_equal(net[0].weight.detach().numpy(), new[:K].T)
    np.testing.assert_array_equal(
        net[2].weight.detach().numpy()[0], new[K + 1]
    )
    x = torch.randn(K, generator=_gen(12), dtype=torch.float64)
    assert float(u(new, x)) == pytest.approx(
        float(net(x).detach()), abs=1e-12
    )  # f(W, x) is the module's forward


def test_attention_weights_are_the_heads_slices():
    block = Attention(4, 2).double()
    u = module_units(block, MHA_UNITS, d=2)
    W = u.weights()
    ipw, opw = (
        block.att.in_proj_weight.detach().numpy(),
        block.att.out_proj.weight.detach().numpy(),
    )
    for h in range(2):
        q, k, v = (ipw[j * 4 + 2 * h : j * 4 + 2 * h + 2] for j in range(3))
        expected = np.concatenate(
            [
                q.ravel(),
                k.ravel(),
                v.ravel(),
                opw[:, 2 * h : 2 * h + 2].ravel(),
            ]
        )
        np.testing.assert_array_equal(W[:, h], expected)


def test_truncation_error_of_a_module_is_quartic_for_tanh():
    net = mlp(bias=False)
    x = torch.randn(K, generator=_gen(13), dtype=torch.float64)
    e = expand(net, x)
    W = np.random.default_rng(0).standard_normal((e.p, e.d))
    err = truncation_error(net, e, x, W, [1e-1, 1e-2])
    assert (
        0.5e-4 < err[1] / err[0] < 2e-4
    )  # odd activation: the remainder is O(eps^4) (Thm 1)


def test_training_flags_are_restored_and_dropout_is_off():
    net = (
        nn.Sequential(
            nn.Linear(K, H), nn.Tanh(), nn.Dropout(0.5), nn.Linear(H, 1)
        )
        .double()
        .train()
    )
    e = expand(
        net, torch.ones(K, dtype=torch.float64)
    )  # dropout would break the symmetry check
    assert net.training and net[2].training
    np.testing.assert_allclose(e.A[: K + 1, K + 1], 0.5, atol=1e-12)


def test_module_expansion_equals_the_function_expansion():
    net = mlp(bias=False)
    x = torch.randn(K, generator=_gen(14), dtype=torch.float64)
    f = ar.mlp_module(K, "tanh")
    np.testing.assert_allclose(
        expand(net, x).A, expand(f, x, f.p).A, atol=1e-12
    )


# ------------------------------------------------------------------ errors
class Skewed(nn.Module):
    """Unit 0 is weighted twice: not symmetric."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(K, 4, bias=False)
        self.register_buffer("scale", torch.tensor([2.0, 1.0, 1.0, 1.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.scale * torch.tanh(self.lin(x)) ** 2).sum()


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(K, 4, bias=False)

    def forward(self, x: torch.Tensor):
        return self.lin(x), self.lin(x)


X0 = torch.tensor([0.3, -1.0, 0.8], dtype=torch.float64)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (
            lambda: expand(Skewed().double(), X0, units=[("lin.weight", 0)]),
            NotSymmetricError,
            "not symmetric",
        ),
        (
            lambda: expand(
                mlp(True), X0, units=[("0.weight", 0), ("2.weight", 1)]
            ),
            NotSymmetricError,
            "a bias too",
        ),
        (
            lambda: expand(
                mlp(False), X0, units=[("0.weight", 0), ("2.weight", 0)]
            ),
            ValueError,
            "sizes do not match.*'2.weight' gives 1 along dim 0",
        ),
        (
            lambda: expand(
                mlp(False), X0, units=[("0.weight", 0), ("0.weight", 0)]
            ),
            ValueError,
            "again",
        ),
        (
            lambda: expand(mlp(False), X0, units=[("0.wieght", 0)]),
            ValueError,
            "no parameter '0.wieght'.*0.weight",
        ),
        (
            lambda: expand(mlp(False), X0, units=[("0.weight", 2)]),
            ValueError,
            "dim = 2 is not an axis",
        ),
        (
            lambda: expand(mlp(False), X0, units=[("0.weight", 0.0)]),
            TypeError,
            "dim must be",
        ),
        (
            lambda: expand(mlp(False), X0, units=[("0.weight", 0, 4)]),
            ValueError,
            "blocks = 4",
        ),
        (
            lambda: expand(mlp(False), X0, units="0.weight"),
            TypeError,
            "list of",
        ),
        (lambda: expand(mlp(False), X0, units=[]), ValueError, "at least one"),
        (
            lambda: expand(mlp(False), X0, units=[("0.weight",)]),
            TypeError,
            "pair",
        ),
        (
            lambda: expand(
                mlp(False), X0, units=[("0.weight", 0), ("2.weight", 1)], d=4
            ),
            ValueError,
            "do not split into d = 4",
        ),
        (
            lambda: expand(
                ListMoE(K, 3).double(),
                X0,
                units=[("gate.weight", 0), ("experts.*.weight", 0)],
            ),
            ValueError,
            "None",
        ),
        (
            lambda: expand(StackedMoE(K, 3).double(), X0),
            ValueError,
            "units is required for a StackedMoE",
        ),
        (
            lambda: expand(mlp(False), X0, p=7),
            ValueError,
            "p = 7 does not match",
        ),
        (
            lambda: expand(lambda W, x: W.sum(), X0, 2, units=[("a", 0)]),
            ValueError,
            "nn.Module f only",
        ),
        (lambda: expand(lambda W, x: W.sum(), X0), TypeError, "p is required"),
        (
            lambda: expand(Pair().double(), X0, units=[("lin.weight", 0)]),
            TypeError,
            "one tensor",
        ),
        (
            lambda: expand(mlp(False), X0.to(torch.complex128)),
            TypeError,
            "x must be real",
        ),
        (
            lambda: expand(mlp(False), X0.numpy() + 0j),
            TypeError,
            "x must be real",
        ),
        (
            lambda: expand(mlp(False, act=nn.ReLU()), X0),
            NotSmoothError,
            "not differentiable",
        ),
        (
            lambda: expand(
                nn.Sequential(
                    nn.Linear(K, 1), nn.Tanh(), nn.Linear(1, 1)
                ).double(),
                X0,
            ),
            ValueError,
            "d >= 2",
        ),
        (
            lambda: expand(mlp(False), torch.tensor([np.nan, 0.0, 0.0])),
            ValueError,
            "x contains NaN",
        ),
        (
            lambda: expand_dataset(mlp(False), [X0, X0.to(torch.complex128)]),
            TypeError,
            r"xs\[1\]: x must be real",
        ),
        (lambda: expand(mlp(False), X0, seed=-1), ValueError, "seed"),
        (lambda: module_units(3), TypeError, "nn.Module"),
        (
            lambda: module_units(mlp(False)).assign(np.ones((2, 2))),
            ValueError,
            "W must have shape",
        ),
        (
            lambda: module_units(mlp(False))(np.ones((K + 1, H)) * 1j, X0),
            TypeError,
            "complex",
        ),
    ],
)
def test_bad_modules_and_units_are_named(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_complex_parameters_are_refused():
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", UserWarning
        )  # torch: complex modules are experimental
        net = mlp(False).to(torch.complex128)
    with pytest.raises(TypeError, match="real floating point"):
        module_units(net)


def test_wildcard_numbering_must_be_contiguous():
    moe = ListMoE(K, 2).double()
    holes = nn.ModuleDict(
        {
            "gate": moe.gate,
            "experts": nn.ModuleDict(
                {"0": moe.experts[0], "2": moe.experts[1]}
            ),
        }
    )
    with pytest.raises(
        ValueError, match=r"numbered 0, 1, 2, \.\.\., got \[0, 2\]"
    ):
        module_units(holes, [("experts.*.weight", None)])


# ------------------------------------------------------------------ properties
# of the layout
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class Holder(nn.Module):
    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.w = nn.Parameter(
            torch.arange(float(np.prod(shape)), dtype=torch.float64).reshape(
                shape
            )
        )


@SETTINGS
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3),
    st.integers(0, 2),
    st.integers(1, 3),
    st.integers(2, 4),
    st.integers(1, 2),
)
def test_unit_slices_match_numpy_indexing(
    sizes, dim_seed, blocks, d, per_unit
):
    """Unit i owns, in every block b, the indices b*d*s + i*s + (0..s-1) along
    dim; W round-trips."""
    dim = dim_seed % (len(sizes) + 1)
    shape = tuple(sizes[:dim]) + (blocks * d * per_unit,) + tuple(sizes[dim:])
    mod = Holder(shape)
    u = module_units(mod, [("w", dim, blocks)], d=d)
    assert (u.p, u.d) == (int(np.prod(shape)) // d, d)
    W = u.weights()
    arr = mod.w.detach().numpy()
    for i in range(d):
        idx = [
            b * d * per_unit + i * per_unit + j
            for b in range(blocks)
            for j in range(per_unit)
        ]
        np.testing.assert_array_equal(
            W[:, i], np.take(arr, idx, axis=dim).ravel()
        )
    fresh = np.random.default_rng(d).standard_normal(W.shape)
    u.assign(fresh)
    np.testing.assert_array_equal(u.weights(), fresh)


@SETTINGS
@given(st.integers(2, 9), st.integers(2, 9))
def test_entries_with_different_unit_counts_are_refused(n1, n2):
    mod = nn.Module()
    mod.a = nn.Parameter(torch.zeros(n1, 2))
    mod.b = nn.Parameter(torch.zeros(3, n2))
    if n1 == n2:
        assert module_units(mod, [("a", 0), ("b", 1)]).d == n1
    else:
        with pytest.raises(
            ValueError,
            match=f"'a' gives {n1} along dim 0, 'b' gives {n2} along dim 1",
        ):
            module_units(mod, [("a", 0), ("b", 1)])


def test_module_units_repr_names_the_entries():
    text = repr(module_units(mlp(True)))
    assert "d = 6 units of p = 5" in text and "0.bias" in text
    assert isinstance(module_units(mlp(True)), ModuleUnits)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expand(module_units(mlp(True)), X0)  # a ModuleUnits is accepted as f
