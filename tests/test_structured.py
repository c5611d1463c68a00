"""Factored coefficients (Proposition 1) agree with the dense autograd
expansion to round-off."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import nqf_lite as nl
from nqf_lite.expansion.factored import FactoredNQF


def _mlp(bias, V, act=nn.GELU):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(4, 5, bias=bias), act(), nn.Linear(5, V, bias=bias)
    ).double()


CASES = [
    (bias, V, act)
    for bias in (True, False)
    for V in (1, 3)
    for act in (nn.GELU, nn.Sigmoid)
]


@pytest.mark.parametrize("bias, V, act", CASES)
def test_factored_mlp_equals_dense_autograd(bias, V, act):
    net = _mlp(bias, V, act)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 4))
    if bias:
        with torch.no_grad():  # a non-zero output bias: f0
            net[2].bias.copy_(torch.tensor(rng.standard_normal(V)))
    fa = nl.expand_dataset(net, X)
    de = nl.expand_dataset(net, list(torch.tensor(X)), factored=False)
    assert isinstance(fa, FactoredNQF) and not isinstance(de, FactoredNQF)
    for name in ("A", "g", "B", "f0"):
        np.testing.assert_allclose(
            getattr(fa, name), getattr(de, name), atol=1e-13, err_msg=name
        )
    W = 0.1 * rng.standard_normal((fa.p, 5))
    y = rng.standard_normal(fa._lead)
    M, mu = nl.moments(W)
    np.testing.assert_allclose(
        fa.predict(M, mu), de.predict(M, mu), atol=1e-13
    )
    np.testing.assert_allclose(
        fa.predict(M, mu, batch=[1, 4]),
        de.predict(M, mu, batch=[1, 4]),
        atol=1e-13,
    )
    for a, b in zip(fa.vH(M, mu, y), de.vH(M, mu, y)):
        np.testing.assert_allclose(a, b, atol=1e-13)
    for a, b in zip(
        fa.vH(M, mu, y, batch=[0, 2, 3]), de.vH(M, mu, y, batch=[0, 2, 3])
    ):
        np.testing.assert_allclose(a, b, atol=1e-13)
    np.testing.assert_allclose(
        fa.gd_step(W, y, 0.1), de.gd_step(W, y, 0.1), atol=1e-13
    )
    for a, b in zip(
        fa.closed_step(M, mu, 5, y, 0.1), de.closed_step(M, mu, 5, y, 0.1)
    ):
        np.testing.assert_allclose(a, b, atol=1e-13)
    np.testing.assert_allclose(
        fa.train(W, y, 0.05, 20)[1], de.train(W, y, 0.05, 20)[1], atol=1e-12
    )
    np.testing.assert_allclose(
        fa.train_closed(M, mu, 5, y, 0.05, 20)[1],
        de.train_closed(M, mu, 5, y, 0.05, 20)[1],
        atol=1e-12,
    )
    assert nl.k_V(fa) == nl.k_V(de)
    s_fa, W_fa, lr_fa = nl.compress(fa, W, 0.1, width=3)
    s_de, W_de, lr_de = nl.compress(de, W, 0.1, width=3)
    assert isinstance(s_fa, FactoredNQF) and lr_fa == lr_de
    np.testing.assert_allclose(
        s_fa.predict_W(W_fa), s_de.predict_W(W_de), atol=1e-12
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f1 = nl.predict_learning(fa, y=y, W0=1e-3 * W, lr=0.01)
        f2 = nl.predict_learning(de, y=y, W0=1e-3 * W, lr=0.01)
    np.testing.assert_allclose(f1.rates, f2.rates, atol=1e-12)
    np.testing.assert_allclose(f1.competition, f2.competition, atol=1e-12)
    np.testing.assert_allclose(
        f1.commuting_error, f2.commuting_error, atol=1e-10
    )
    np.testing.assert_allclose(f1.plateaus, f2.plateaus, atol=1e-12)
    np.testing.assert_array_equal(f1.order, f2.order)
    np.testing.assert_allclose(
        f1.switch_on_steps[f1.order], f2.switch_on_steps[f2.order], rtol=1e-10
    )


def test_factored_prediction_is_the_network_to_second_order():
    """Independent of the package's expansion: f(eps W) - NQF(eps W) = O(eps^3)
    on the torch network."""
    net = _mlp(True, 3, nn.Tanh)
    X = np.random.default_rng(1).standard_normal((6, 4))
    fa = nl.expand_dataset(net, X)
    units = nl.module_units(net)
    W = np.random.default_rng(2).standard_normal((units.p, units.d))
    errs = []
    for e in (1e-2, 5e-3):
        units.assign(e * W)
        with torch.no_grad():
            real = net(torch.tensor(X)).numpy()
        errs.append(np.abs(real - fa.predict_W(e * W)).max())
    assert (
        np.log(errs[0] / errs[1]) / np.log(2) > 2.7
    )  # third order (tanh: fourth)


def test_factored_memory_is_the_inputs_and_dense_is_refused_when_too_big(
    monkeypatch,
):
    net = nn.Sequential(nn.Linear(30, 8), nn.Tanh(), nn.Linear(8, 4))
    X = np.random.default_rng(0).standard_normal((500, 30))
    fa = nl.expand_dataset(net, X, dtype=np.float32)
    assert (
        fa.nbytes
        <= 1.1 * (X.astype(np.float32).nbytes + 500 * 4 * 4 + 4 * 500 * 8)
        + 10_000
    )
    import nqf_lite.expansion.factored as st

    monkeypatch.setattr(st, "DENSE_MAX_BYTES", 1000)
    with pytest.raises(MemoryError, match="GiB"):
        fa.A  # noqa: B018


def test_float32_agrees_with_float64():
    net = nn.Sequential(nn.Linear(10, 6), nn.Tanh(), nn.Linear(6, 2))
    X = np.random.default_rng(0).standard_normal((50, 10))
    f64 = nl.expand_dataset(net, X)
    f32 = nl.expand_dataset(net, X, dtype=np.float32)
    W = 0.1 * np.random.default_rng(1).standard_normal((f64.p, 6))
    p64, p32 = f64.predict_W(W), f32.predict_W(W)
    assert p32.dtype == np.float64
    np.testing.assert_allclose(p32, p64, rtol=1e-5, atol=1e-6)
    assert np.abs(p32 - p64).max() > 0  # really computed in float32


def test_inputs_as_tensor_list_and_dataloader():
    from torch.utils.data import DataLoader, TensorDataset

    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    X = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(X, torch.zeros(10)), batch_size=4)
    ref = nl.expand_dataset(net, X.numpy())
    for xs in (X, list(X), loader):
        np.testing.assert_allclose(
            nl.expand_dataset(net, xs).A, ref.A, atol=1e-15
        )
    dense = nl.expand_dataset(net, loader, factored=False)
    np.testing.assert_allclose(dense.A, ref.A, atol=1e-13)


def test_factored_errors():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(nl.NotSmoothError, match="ReLU"):
        nl.expand_dataset(net, np.ones((2, 3)))
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"shape \(m, 3\)"):
        nl.expand_dataset(net, np.ones((2, 5)))
    with pytest.raises(
        ValueError, match=r"^xs\[1\]: x must have shape \(3,\)"
    ):
        nl.expand_dataset(net, [np.ones(3), np.ones(4)])
    with pytest.raises(ValueError, match=r"^xs\[1\]: x contains NaN"):
        nl.expand_dataset(net, np.array([[1.0, 2, 3], [np.nan, 1, 1]]))
    with pytest.raises(ValueError, match="factored=True"):
        nl.expand_dataset(
            nn.Sequential(
                nn.Linear(3, 4),
                nn.Tanh(),
                nn.Linear(4, 4),
                nn.Tanh(),
                nn.Linear(4, 1),
            ),
            np.ones((2, 3)),
            units=[("0.weight", 0), ("0.bias", 0), ("2.weight", 1)],
            factored=True,
            check=False,
        )
    with pytest.raises(TypeError, match="dtype"):
        nl.expand_dataset(net, np.ones((2, 3)), dtype=np.int64)


class _Experts(nn.Module):
    """sum_i tanh(r_i . x) (theta_i . x): no factored form is known to
    expand_dataset."""

    def __init__(self, k=3, n=4):
        super().__init__()
        torch.manual_seed(0)
        self.gate = nn.Linear(k, n, bias=False)
        self.experts = nn.Linear(k, n, bias=False)

    def forward(self, x):
        return (torch.tanh(self.gate(x)) * self.experts(x)).sum(-1)


SPEC = [("gate.weight", 0), ("experts.weight", 0)]


def test_hessian_in_chunks_equals_all_at_once():
    net = _Experts()
    x = torch.tensor([0.3, -1.2, 0.7])
    from nqf_lite.expansion.autograd import _chunk, module_units

    assert (
        _chunk(module_units(net, SPEC), 12, 1, 100_000) is not None
    )  # the budget forces chunks
    whole = nl.expand(net, x, units=SPEC)
    chunked = nl.expand(net, x, units=SPEC, max_bytes=100_000)
    for name in ("A", "g", "B", "f0"):
        np.testing.assert_allclose(
            getattr(chunked, name), getattr(whole, name), atol=1e-14
        )
    from nqf_lite.expansion.models import MODELS

    np.testing.assert_allclose(
        whole.A, MODELS["moe"].structure(x.numpy()).A, atol=1e-12
    )


def test_dense_data_set_beyond_the_budget_is_refused_up_front():
    net = _Experts()
    X = np.random.default_rng(0).standard_normal((50, 3))
    # 50 inputs x (2 p^2 + p + 1) float64 with p = 6: 31,000 bytes
    with pytest.raises(
        MemoryError,
        match=r"needs .* GiB .* more than max_bytes .* max_bytes=\d",
    ):
        nl.expand_dataset(net, X, units=SPEC, max_bytes=20_000)
    assert nl.expand_dataset(net, X, units=SPEC, max_bytes=40_000).m == 50


def test_progress_bar_on_request_and_off_in_the_book_build(
    capsys, monkeypatch
):
    net = _Experts()
    X = np.random.default_rng(0).standard_normal((5, 3))
    nl.expand_dataset(net, X, units=SPEC, progress=True)
    assert "expand_dataset" in capsys.readouterr().err
    from nqf_lite.expansion import dataset

    monkeypatch.setattr(dataset, "PROGRESS_MIN", 2)
    monkeypatch.setenv("NQF_CLAIMS_DIR", "/tmp/claims")
    nl.expand_dataset(net, X, units=SPEC)
    assert "expand_dataset" not in capsys.readouterr().err
    monkeypatch.delenv("NQF_CLAIMS_DIR")
    monkeypatch.setenv("NQF_PROGRESS", "0")
    nl.expand_dataset(net, X, units=SPEC)
    assert "expand_dataset" not in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress"):
        nl.expand_dataset(net, X, units=SPEC, progress="yes")
