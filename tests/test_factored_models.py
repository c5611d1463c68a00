"""Factored forms beyond the MLP: mixtures of experts, attention heads and
every registry model agree with the dense coefficients to float64 round-off,
in every NQF method; ``device=``; the closed recursion below the data's
rank."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import nqf_lite as nl
from nqf_lite.book.seeding import rng
from nqf_lite.expansion import models as mm
from nqf_lite.expansion.factored import FactoredNQF
from nqf_lite.expansion.factored_models import (
    FACTORED_MODELS,
    factored_twin,
    recognise,
)

#: float64 round-off of the sums a method takes over m <= 8 inputs of O(1)
#: coefficients (measured: 0 to 4e-15 over seeds); well below any modelling
#: error, well above nothing
ATOL = 1e-12


def _agree(fa, de, W, y, tag):
    """Every NQF method of ``fa`` (factored) equals that of ``de`` (dense)."""
    assert isinstance(fa, FactoredNQF), tag
    assert not isinstance(de, FactoredNQF), tag
    for name in ("A", "g", "B", "f0"):
        np.testing.assert_allclose(
            getattr(fa, name),
            getattr(de, name),
            atol=ATOL,
            err_msg=f"{tag}: {name}",
        )
    M, mu = nl.moments(W)
    d = W.shape[1]
    close = dict(atol=ATOL, err_msg=tag)
    # a step well inside stability: the summed spectral norms of the A's
    size = np.linalg.norm(de.A.reshape(-1, de.p, de.p), 2, axis=(1, 2)).sum()
    lr = 0.05 / (1.0 + size * (1.0 + np.abs(W).max()) ** 2)
    np.testing.assert_allclose(fa.predict(M, mu), de.predict(M, mu), **close)
    np.testing.assert_allclose(
        fa.predict(M, mu, batch=[0, 2]),
        de.predict(M, mu, batch=[0, 2]),
        **close,
    )
    for a, b in zip(fa.vH(M, mu, y), de.vH(M, mu, y)):
        np.testing.assert_allclose(a, b, **close)
    for a, b in zip(
        fa.vH(M, mu, y, batch=[1, 2]), de.vH(M, mu, y, batch=[1, 2])
    ):
        np.testing.assert_allclose(a, b, **close)
    np.testing.assert_allclose(
        fa.gd_step(W, y, lr), de.gd_step(W, y, lr), **close
    )
    for a, b in zip(
        fa.closed_step(M, mu, d, y, lr), de.closed_step(M, mu, d, y, lr)
    ):
        np.testing.assert_allclose(a, b, **close)
    np.testing.assert_allclose(
        fa.train(W, y, lr, 10)[1], de.train(W, y, lr, 10)[1], **close
    )
    np.testing.assert_allclose(
        fa.train_closed(M, mu, d, y, lr, 10)[1],
        de.train_closed(M, mu, d, y, lr, 10)[1],
        **close,
    )
    # the forecast's sums, against the dense arrays
    p = fa.p
    A = de.A.reshape(-1, p, p)
    P = np.linalg.qr(rng("t", "factored", tag, "P").standard_normal((p, p)))[0]
    lam = np.einsum("ki,nkl,li->ni", P, A, P)
    np.testing.assert_allclose(
        fa._gram_of_diagonals(P), lam.T @ lam, atol=1e-10, err_msg=tag
    )
    np.testing.assert_allclose(
        fa._frobenius2(), np.sum(A**2), rtol=1e-12, atol=1e-12, err_msg=tag
    )
    T = rng("t", "factored", tag, "T").standard_normal(fa._lead)
    np.testing.assert_allclose(
        fa._weighted_sum(T),
        np.einsum("n,nij->ij", T.reshape(-1), A),
        **close,
    )
    assert nl.k_V(fa) == nl.k_V(de), tag
    if d > nl.k_V(de) + 1:
        s_fa, W_fa, lr_fa = nl.compress(fa, W, lr)
        s_de, W_de, lr_de = nl.compress(de, W, lr)
        assert isinstance(s_fa, FactoredNQF) and lr_fa == lr_de
        np.testing.assert_allclose(
            s_fa.predict_W(W_fa), s_de.predict_W(W_de), **close
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f2 = nl.predict_learning(de, y=y, W0=1e-3 * W, lr=0.01)
        except ValueError as exc:  # e.g. no mode grows: both refuse
            with pytest.raises(ValueError, match=str(exc)[:30]):
                nl.predict_learning(fa, y=y, W0=1e-3 * W, lr=0.01)
            return
        f1 = nl.predict_learning(fa, y=y, W0=1e-3 * W, lr=0.01)
    np.testing.assert_allclose(f1.rates, f2.rates, atol=1e-9, err_msg=tag)
    np.testing.assert_allclose(f1.plateaus, f2.plateaus, atol=1e-9)


def _case(fa, de, tag, d=3):
    g = rng("t", "factored", tag)
    W = 0.3 * g.standard_normal((fa.p, d))
    y = g.standard_normal(fa._lead)
    _agree(fa, de, W, y, tag)


EXPERTS = {
    "linear": lambda k: mm.linear_expert(k),
    "linear, 2 outputs": lambda k: mm.linear_expert(k, 2),
    "tanh MLP": lambda k: mm.mlp_expert(k, 2),
}


@pytest.mark.parametrize("expert", sorted(EXPERTS))
def test_mixture_of_experts_factored_equals_dense(expert):
    k = 3
    module = mm.moe_module(k, EXPERTS[expert](k))
    assert recognise(module)[0] == "moe"
    X = rng("t", "moe", expert).standard_normal((6, k))
    fa = nl.expand_dataset(module, X)  # found without factored=True
    de = nl.expand_dataset(module, X, factored=False)
    assert fa.nbytes < 0.5 * de.A.nbytes
    _case(fa, de, f"moe {expert}")


def _pairs(tag, m=6, D=3, N=4):
    g = rng("t", "attention", tag)
    return [
        (g.standard_normal(D), g.standard_normal((D, N))) for _ in range(m)
    ]


ATTENTION = {
    "mha": lambda: mm.mha(3, 2, 2),
    "mha, 2 outputs": lambda: mm.mha(3, 2, 3, V=2),
    "qk": lambda: mm.qk_head([1.0, 0.5, -0.25], 2),
    "logits": lambda: mm.logits_head([1.0, 0.5, -0.25], 2),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_heads_factored_equal_dense(name):
    module = ATTENTION[name]()
    xs = _pairs(name)
    fa = nl.expand_dataset(module, xs)
    de = nl.expand_dataset(module, xs, factored=False)
    _case(fa, de, name)
    # f0 is f(0) at the expansion's width (d heads of qk: d c.x̄)
    a = nl.expand_dataset(module, xs, d=3)
    b = nl.expand_dataset(module, xs, d=3, factored=False)
    np.testing.assert_allclose(a.f0, b.f0, atol=ATOL)


def test_mha_acts_on_the_token_average_alone():
    """Prop. 2: two contexts with the same mean give the same coefficients."""
    module = mm.mha(3, 2, 2)
    (x, X), _ = _pairs("mean", m=2)
    Y = X - X.mean(axis=1, keepdims=True)  # zero mean, other tokens
    Y = Y[:, ::-1] * 2.0 + X.mean(axis=1, keepdims=True)
    fa = nl.expand_dataset(module, [(x, X), (x, Y)])
    np.testing.assert_allclose(fa.A[0], fa.A[1], atol=1e-15)
    assert len(fa.terms) == 2 and all(t.shared for t in fa.terms)


@pytest.mark.parametrize("name", sorted(mm.MODELS))
def test_every_registry_model_factored_equals_its_twin(name):
    model = mm.MODELS[name]
    g = rng("t", "registry", name)
    xs = [model.sample(g)[1] for _ in range(5)]
    fa = nl.expand_dataset(model, xs)
    de = nl.expand_dataset(model, xs, factored=False)
    np.testing.assert_allclose(de.A, model.twin(xs).A, atol=0)
    known = name in FACTORED_MODELS
    # the known forms hold the inputs; the generic route one term an
    # eigenvalue
    assert all(t.R.ndim == 3 for t in fa.terms) or known
    _case(fa, de, name, d=model.p + 2)


def test_factored_twin_errors_name_the_argument():
    model = mm.MODELS["moe"]
    with pytest.raises(TypeError, match="model must be a registry model"):
        factored_twin(nn.Linear(2, 2), [np.zeros(2)])
    with pytest.raises(ValueError, match="xs must hold at least one"):
        factored_twin(model, [])
    with pytest.raises(ValueError, match=r"xs\[1\]"):
        factored_twin(model, [np.zeros(3), np.zeros(4)])
    with pytest.raises(ValueError, match="p does not apply"):
        nl.expand_dataset(model, [np.zeros(3)], p=model.p + 1)
    with pytest.raises(ValueError, match="units does not apply"):
        nl.expand_dataset(model, [np.zeros(3)], units=[("w", 0)])
    module = mm.mha(3, 2, 2)
    with pytest.raises(TypeError, match=r"xs\[0\].*pair"):
        nl.expand_dataset(module, [np.zeros(3)], check=False)
    with pytest.raises(ValueError, match=r"xs\[1\].*context"):
        nl.expand_dataset(
            module, [(np.zeros(3), np.ones((3, 2))), (np.zeros(3), np.ones(3))]
        )
    with pytest.raises(ValueError, match="p = 5 does not match"):
        nl.expand_dataset(module, _pairs("p"), p=5)
    with pytest.raises(ValueError, match=r"xs\[0\].*NaN"):
        nl.expand_dataset(
            mm.moe_module(3, mm.linear_expert(3)),
            [np.array([0.0, np.nan, 1.0])],
            check=False,
        )


def test_a_kinked_gate_is_refused():
    module = mm.moe_module(3, mm.linear_expert(3), gate="relu")
    X = np.ones((2, 3))
    with pytest.raises(nl.NotSmoothError):
        nl.expand_dataset(module, X)
    with pytest.raises(nl.NotSmoothError, match="gate"):
        nl.expand_dataset(module, X, check=False)


def test_an_unknown_module_is_not_taken_for_a_known_one():
    assert recognise(mm.mlp_module(3)) is None
    assert recognise(lambda W, x: W.sum()) is None
    with pytest.raises(ValueError, match="factored=True"):
        nl.expand_dataset(mm.mlp_module(3), np.ones((2, 3)), factored=True)


# --------------------------------------------------------------- device=
def _mlp_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_device_cpu_gives_the_same_coefficients(device):
    X = rng("t", "device").standard_normal((7, 4))
    net = _mlp_net()
    ref = nl.expand_dataset(net, X)
    out = nl.expand_dataset(net, X, device=device)
    np.testing.assert_allclose(out.A, ref.A, atol=0)
    np.testing.assert_allclose(out._gram(0, 0), ref._gram(0, 0), atol=1e-13)
    assert out._gram(0, 0).dtype == np.float64
    xs = _pairs("device")
    for module in (mm.mha(3, 2, 2), mm.qk_head([1.0, 0.5, -0.25], 2)):
        a = nl.expand_dataset(module, xs, device=device)
        b = nl.expand_dataset(module, xs)
        np.testing.assert_allclose(a.A, b.A, atol=1e-15)
    dense = nl.expand_dataset(net, X[:2], factored=False, device=device)
    np.testing.assert_allclose(dense.A, ref.A[:2], atol=1e-13)


def test_a_bad_device_is_a_clear_error():
    X = np.ones((2, 4))
    with pytest.raises(ValueError, match="device must name a torch device"):
        nl.expand_dataset(_mlp_net(), X, device="gpu7")
    with pytest.raises(TypeError, match="device must be None"):
        nl.expand_dataset(_mlp_net(), X, device=3)
    with pytest.raises(ValueError, match="device"):
        nl.expand_dataset(_mlp_net(), X, device="meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            nl.expand_dataset(_mlp_net(), X, device="cuda")


# ------------------------------------------- train_closed below the rank
@pytest.mark.parametrize("d", [1, 2, 3])
def test_train_closed_below_the_data_rank_is_exact(d):
    """Width d < k_V + 1 (no Theorem 3 compression possible): the closed
    recursion is still Eq. 21 in moments, on factors as on dense arrays."""
    net = _mlp_net()
    g = rng("t", "below-rank", d)
    X = g.standard_normal((8, 4))
    fa = nl.expand_dataset(net, X)
    de = fa.dense()
    assert nl.k_V(fa) + 1 > d
    W = 0.3 * g.standard_normal((fa.p, d))
    y = g.standard_normal(fa._lead)
    M, mu = nl.moments(W)
    (Mf, muf), pf = fa.train_closed(M, mu, d, y, 0.02, 30)
    (Md, mud), pd = de.train_closed(M, mu, d, y, 0.02, 30)
    Wt, pw = fa.train(W, y, 0.02, 30)
    np.testing.assert_allclose(pf, pd, atol=ATOL)
    np.testing.assert_allclose(pf, pw, atol=1e-11)  # the explicit weights
    np.testing.assert_allclose(Mf, Wt @ Wt.T, atol=1e-11)
    # still realisable at width d: the centred moments have rank <= d - 1
    sv = np.linalg.svd(Mf - np.outer(muf, muf) / d, compute_uv=False)
    assert np.sum(sv > 1e-10 * np.abs(Mf).max()) <= d - 1
    # Theorem 3's twin (width k_V + 1 > d) is refused, naming the width
    with pytest.raises(ValueError, match=f"width d = {d} .*nothing to"):
        nl.compress(fa, W, 0.02)


def test_vector_linear_expert_shares_its_arrays_over_outputs():
    k, V, m = 4, 3, 50
    module = mm.moe_module(k, mm.linear_expert(k, V))
    X = rng("t", "moe-memory").standard_normal((m, k))
    fa = nl.expand_dataset(module, X)
    assert [t.output for t in fa.terms] == list(range(V))
    # L = psi'(0) x and R = x, once each (not V^2 k numbers an input)
    assert fa.nbytes <= 2 * X.nbytes + 8 * m * V + 8 * V * fa.p
    de = nl.expand_dataset(module, X[:5], factored=False)
    np.testing.assert_allclose(
        nl.expand_dataset(module, X[:5]).A, de.A, atol=ATOL
    )


def test_the_term_contract_names_what_is_wrong():
    from nqf_lite.expansion.factored import Term

    L, R = np.ones((2, 1)), np.ones((1, 1))
    with pytest.raises(ValueError, match=r"terms\[0\].output"):
        FactoredNQF([Term(L, [0], R, [1], output=2)], p=2, V=2)
    with pytest.raises(ValueError, match=r"terms\[0\]: L must be"):
        FactoredNQF([Term(L, [0], np.ones((2, 1)), [1], output=0)], 2, V=2)
    with pytest.raises(ValueError, match=r"terms\[1\]: L has 3 inputs"):
        FactoredNQF(
            [Term(L, [0], R, [1]), Term(np.ones((3, 1)), [0], R, [1])], p=2
        )
    with pytest.raises(ValueError, match=r"terms\[0\].rows_R must be"):
        FactoredNQF([Term(L, [0], R, [2])], p=2)
    with pytest.raises(TypeError, match="terms must be a sequence"):
        FactoredNQF(Term(L, [0], R, [1]), p=2)


@pytest.mark.parametrize("kinds", ["all", "shared R only"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_terms_of_every_kind_together_equal_their_dense_form(dtype, kinds):
    """Shared, per-input and one-output terms in one model, overlapping
    rows: every method against ``dense()`` (with shared ``R`` only, the
    forecast's sums come from the Gram matrices of the inputs)."""
    from nqf_lite.expansion.factored import Term

    g = rng("t", "kinds")
    m, V = 7, 2
    terms = [
        Term(
            g.standard_normal((m, 2)),
            [0, 1],
            g.standard_normal((V, 2)),
            [2, 3],
        ),
        Term(  # its L meets the first term's R, its R the first's L
            g.standard_normal((m, 2)),
            [2, 4],
            g.standard_normal((1, 1)),
            [0],
            1,
        ),
        Term(
            g.standard_normal((m, 1)),
            [3],
            g.standard_normal((m, 1, 2)),
            [1, 3],
            0,
        ),
        Term(
            g.standard_normal((m, 3)),
            [0, 2, 4],
            g.standard_normal((m, V, 1)),
            [4],
        ),
    ]
    if kinds != "all":
        terms = terms[:2]
    fa = FactoredNQF(terms, 5, V, g=g.standard_normal((V, 5)), dtype=dtype)
    assert fa._shared == (kinds != "all")
    if dtype == np.float32:  # float32 factors: the same model to 1e-6
        de = FactoredNQF(terms, 5, V, g=fa._g_out).dense()
        np.testing.assert_allclose(fa.A, de.A, atol=1e-6)
        return
    _case(fa, fa.dense(), f"kinds {kinds}", d=8)
