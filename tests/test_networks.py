"""Tests of the batched torch networks of nqf_lite.expansion.models, their NQF
twins and nqf_lite.experiments.train."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nqf_lite import expand
from nqf_lite.expansion import models as ar
from nqf_lite.experiments import pair, teacher

DT = torch.float64


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _small(name: str, sigma: float = 0.3, units: int = 2, V: int = 2):
    """A small network of each kind and a batch of 5 inputs."""
    g = _gen(7)
    if name == "mlp":
        return ar.TanhMLP(3, units, V=V, sigma=sigma, seed=1), torch.randn(
            5, 3, generator=g, dtype=DT
        )
    if name == "cnn":
        return ar.TanhCNN(
            (3, 4), (2, 2), channels=units, V=V, sigma=sigma, seed=1
        ), torch.randn(5, 3, 4, generator=g, dtype=DT)
    x, X = (
        torch.randn(5, 3, generator=g, dtype=DT),
        torch.randn(5, 4, 3, generator=g, dtype=DT),
    )
    if name == "qk":
        return ar.QKAttention(3, 2, heads=units, V=V, sigma=sigma, seed=1), (
            x,
            X,
        )
    return ar.MultiHeadAttention(
        3, 2, 2, heads=units, V=V, sigma=sigma, seed=1
    ), (x, X)


def _one(inputs, n: int):
    return (
        tuple(t[n] for t in inputs) if isinstance(inputs, tuple) else inputs[n]
    )


KINDS = ("mlp", "cnn", "qk", "mha")


# -----------------------------------------------------------------------------
# shapes and twins
@pytest.mark.parametrize("kind", KINDS)
def test_shapes_and_identical_initial_weights(kind):
    net, X = _small(kind)
    twin = net.twin()
    assert net(X).shape == (5, 2) and twin(X).shape == (5, 2)
    assert net(X).dtype == DT
    sd_net, sd_twin = net.state_dict(), twin.state_dict()
    assert sd_net.keys() == sd_twin.keys()
    for key in sd_net:
        assert torch.equal(sd_net[key], sd_twin[key])
    # a copy, not shared storage
    with torch.no_grad():
        next(twin.parameters()).add_(1.0)
    assert not torch.equal(next(net.parameters()), next(twin.parameters()))


@pytest.mark.parametrize("kind", KINDS)
def test_twin_equals_autograd_expansion(kind):
    net, X = _small(kind)
    W = net.units()
    assert W.shape[1] == 2
    for n in range(3):
        x = _one(X, n)
        e = expand(net.unit_function(), x, W.shape[0])
        assert e.zgz
        np.testing.assert_allclose(
            net.twin()(X)[n].detach().numpy(),
            e.predict(W.numpy()),
            rtol=0,
            atol=1e-12,
        )


@pytest.mark.parametrize("kind", KINDS)
def test_unit_function_reproduces_forward(kind):
    net, X = _small(kind)
    f = net.unit_function()
    for n in range(2):
        np.testing.assert_allclose(
            f(net.units(), _one(X, n)).detach().numpy(),
            net(X)[n].detach().numpy(),
            rtol=0,
            atol=1e-14,
        )


@pytest.mark.parametrize("kind", KINDS)
def test_network_minus_twin_is_quartic(kind):
    net, X = _small(kind, sigma=1.0)
    f, ft = net.unit_function(), net.twin().unit_function()
    W, x = net.units(), _one(X, 0)
    errs = [
        float(torch.max(torch.abs(f(lam * W, x) - ft(lam * W, x))))
        for lam in (1e-2, 1e-3)
    ]
    # O(|W|^4): a factor 10 in the weights is a factor 1e4 in the gap
    assert 10**3.8 < errs[0] / errs[1] < 10**4.2
    assert errs[1] < 1e-9


def test_mlp_twin_closed_form():
    net, X = _small("mlp")
    U, V = net.U.detach().numpy(), net.W_out.detach().numpy()
    expected = X.numpy() @ U.T @ V.T  # tanh'(0) = 1
    np.testing.assert_allclose(
        net.twin()(X).detach().numpy(), expected, rtol=0, atol=1e-15
    )
    np.testing.assert_allclose(
        net(X).detach().numpy(),
        np.tanh(X.numpy() @ U.T) @ V.T,
        rtol=0,
        atol=1e-15,
    )


def test_cnn_twin_closed_form():
    net, X = _small("cnn")
    K, V = net.K.detach().numpy(), net.W_out.detach().numpy()
    Xn = X.numpy()
    patches = [
        Xn[:, i : i + 2, j : j + 2].reshape(5, -1)
        for i in range(2)
        for j in range(3)
    ]
    psum = sum(patches)
    Kf = K.reshape(K.shape[0], -1)
    np.testing.assert_allclose(
        net.twin()(X).detach().numpy(), psum @ Kf.T @ V.T, rtol=0, atol=1e-14
    )
    full = sum(np.tanh(p @ Kf.T) for p in patches) @ V.T
    np.testing.assert_allclose(
        net(X).detach().numpy(), full, rtol=0, atol=1e-14
    )


def test_qk_twin_closed_form():
    net, (x, X) = _small("qk", units=3)
    Q, K, C = net.Q.detach().numpy(), net.K.detach().numpy(), net.C.numpy()
    out = []
    for n in range(5):
        Xn = X[n].numpy().T  # (D, N)
        xbar = Xn.mean(axis=1)
        Sig = Xn @ Xn.T / Xn.shape[1] - np.outer(xbar, xbar)
        T = sum(K[h].T @ Q[h] for h in range(3)) / math.sqrt(2)
        out.append(3 * C.T @ xbar + C.T @ Sig @ T @ x[n].numpy())
    np.testing.assert_allclose(
        net.twin()((x, X)).detach().numpy(), np.array(out), rtol=0, atol=1e-14
    )


def test_mha_twin_closed_form_and_frozen_query_key():
    net, (x, X) = _small("mha", units=3)
    E = sum(
        net.W_O[h].detach().numpy() @ net.W_V[h].detach().numpy()
        for h in range(3)
    )
    xbar = X.numpy().mean(axis=1)
    twin = net.twin()
    np.testing.assert_allclose(
        twin((x, X)).detach().numpy(), xbar @ E.T, rtol=0, atol=1e-15
    )
    Y = torch.randn(5, 2, generator=_gen(3), dtype=DT)
    for opt in ("gd", "adam"):
        net = _small("mha", units=3)[0]
        twin = net.twin()
        Q0, K0, V0 = (
            twin.Q.detach().clone(),
            twin.K.detach().clone(),
            twin.W_V.detach().clone(),
        )
        pair.train_pair(net, twin, (x, X), Y, optimizer=opt, lr=0.05, steps=3)
        assert torch.equal(twin.Q, Q0) and torch.equal(twin.K, K0)
        assert not torch.equal(twin.W_V, V0) and not torch.equal(net.Q, Q0)


@pytest.mark.parametrize("kind", KINDS)
def test_apply_map_equals_twin_at_its_effective_map(kind):
    net, X = _small(kind)
    twin = net.twin()
    np.testing.assert_allclose(
        net.apply_map(X, twin.effective_map().detach()).numpy(),
        twin(X).detach().numpy(),
        rtol=0,
        atol=1e-14,
    )


# -----------------------------------------------------------------------------
# data and teacher
def test_whitened_gaussian_is_exact():
    X = ar.whitened_gaussian(50, 4, seed=3)
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-14)
    np.testing.assert_allclose(X.T @ X / 50, np.eye(4), atol=1e-12)
    np.testing.assert_array_equal(X, ar.whitened_gaussian(50, 4, seed=3))


def test_teacher_map_singular_values():
    T = teacher.teacher_map(20, 8, seed=4)
    assert T.shape == (8, 20)
    sv = np.linalg.svd(T, compute_uv=False)
    np.testing.assert_allclose(sv[:4], [1, 0.5, 0.25, 0.125], atol=1e-13)
    np.testing.assert_allclose(sv[4:], 0, atol=1e-13)


def test_effective_inputs_are_whitened():
    cnn = ar.TanhCNN((5, 7), (4, 5), channels=3, V=2)
    imgs = cnn.sample_inputs(100, seed=2)
    psum = np.stack(
        [
            sum(
                imgs[n, i : i + 4, j : j + 5].numpy().ravel()
                for i in range(2)
                for j in range(3)
            )
            for n in range(100)
        ]
    )
    np.testing.assert_allclose(psum.T @ psum / 100, np.eye(20), atol=1e-10)
    mha = ar.MultiHeadAttention(6, 2, 2, heads=2, V=2)
    _, X = mha.sample_inputs(40, 5, seed=2)
    xbar = X.numpy().mean(axis=1)
    np.testing.assert_allclose(xbar.T @ xbar / 40, np.eye(6), atol=1e-12)


@pytest.mark.parametrize("arch", teacher.ARCHITECTURES)
def test_teacher_task_targets_are_reachable(arch):
    net, X, Y = teacher.teacher_task(arch, 0.01, m=30)
    assert Y.shape == (30, 8)
    twin = net.twin()
    T = teacher.teacher_map(20, 20 if arch == "qk" else 8, seed=2)
    # put the teacher into the twin by hand: first layer = Q^T, readout = P
    # diag(s)
    with torch.no_grad():
        P, s, Qt = np.linalg.svd(T)
        k = 4
        left, right = (
            torch.as_tensor(P[:, :k] * s[:k]),
            torch.as_tensor(Qt[:k]),
        )
        if arch == "mlp":
            twin.U.zero_()
            twin.W_out.zero_()
            twin.U[:k] = right
            twin.W_out[:, :k] = left
        elif arch == "cnn":
            twin.K.zero_()
            twin.W_out.zero_()
            twin.K.view(64, -1)[:k] = right
            twin.W_out[:, :k] = left
        elif arch == "mha":
            twin.W_V.zero_()
            twin.W_O.zero_()
            twin.W_V[0, :k] = right
            twin.W_O[0, :, :k] = left
        else:  # T = K^T Q / sqrt(d_k)
            twin.K.zero_()
            twin.Q.zero_()
            twin.K[0, :k] = left.T * math.sqrt(8)
            twin.Q[0, :k] = right
    np.testing.assert_allclose(
        twin(X).detach().numpy(), Y.numpy(), rtol=0, atol=1e-12
    )


# -----------------------------------------------------------------------------
# trainer
def test_train_pair_records_and_first_gd_step():
    net, X = _small("mlp")
    twin = net.twin()
    Y = torch.randn(5, 2, generator=_gen(1), dtype=DT)
    U0, V0 = twin.U.detach().numpy().copy(), twin.W_out.detach().numpy().copy()
    h = pair.train_pair(
        net, twin, X, Y, optimizer="gd", lr=0.1, steps=1, s=(1.0, 0.5)
    )
    Xn, Yn = X.numpy(), Y.numpy()
    R = Xn @ U0.T @ V0.T - Yn
    assert h.loss_twin[0] == pytest.approx(
        np.mean(np.sum(R**2, axis=1)), abs=1e-15
    )
    # dL/dU = (2/m) V^T R^T X, dL/dV = (2/m) R^T X U^T
    np.testing.assert_allclose(
        twin.U.detach().numpy(), U0 - 0.1 * 2 / 5 * V0.T @ R.T @ Xn, atol=1e-15
    )
    np.testing.assert_allclose(
        twin.W_out.detach().numpy(),
        V0 - 0.1 * 2 / 5 * R.T @ Xn @ U0.T,
        atol=1e-15,
    )
    assert h.step.tolist() == [0, 1]
    assert h.s_net.shape == (2, 2) and h.gap.shape == (2,)
    sv0 = np.linalg.svd(V0 @ U0, compute_uv=False)[:2] / np.array([1.0, 0.5])
    np.testing.assert_allclose(h.s_twin[0], sv0, atol=1e-14)
    assert h.acc_net is None


def test_train_pair_is_deterministic_with_minibatches():
    outs = []
    for _ in range(2):
        net, X, Y = teacher.teacher_task("mlp", 0.05, m=40, seed=3)
        outs.append(
            pair.train_pair(
                net,
                net.twin(),
                X,
                Y,
                optimizer="momentum",
                lr=0.05,
                steps=5,
                batch=8,
                seed=5,
            )
        )
    np.testing.assert_array_equal(outs[0].loss_net, outs[1].loss_net)
    np.testing.assert_array_equal(outs[0].s_twin, outs[1].s_twin)
    net_a, net_b = ar.TanhMLP(4, 3, seed=9), ar.TanhMLP(4, 3, seed=9)
    assert torch.equal(net_a.U, net_b.U)
    assert not torch.equal(net_a.U, ar.TanhMLP(4, 3, seed=10).U)


def test_train_pair_online_and_test_accuracy():
    net, X = _small("mlp", V=1)
    Y = torch.sign(X[:, :1])

    def sample(t, gen):
        x = torch.randn(4, 3, generator=gen, dtype=DT)
        return x, torch.sign(x[:, :1])

    h = pair.train_pair_online(
        net, net.twin(), sample, (X, Y), lr=0.1, steps=4, record_every=2
    )
    assert h.step.tolist() == [0, 2, 4]
    h2 = pair.train_pair(
        net, net.twin(), X, Y, optimizer="adam", lr=0.01, steps=2, test=(X, Y)
    )
    assert h2.acc_net.shape == (3,) and np.all(
        (0 <= h2.acc_net) & (h2.acc_net <= 1)
    )


def test_divergence_is_reported():
    net, X = _small("mlp", sigma=1.0)
    Y = 100 * torch.ones(5, 2, dtype=DT)
    with pytest.raises(FloatingPointError, match="lr"):
        pair.train_pair(net, net.twin(), X, Y, lr=1e3, steps=50)


# -----------------------------------------------------------------------------
# bad inputs
def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="sigma"):
        ar.TanhMLP(3, 2, sigma=-1.0)
    with pytest.raises(TypeError, match="hidden"):
        ar.TanhMLP(3, 2.5)
    with pytest.raises(ValueError, match="kernel"):
        ar.TanhCNN((3, 3), (4, 2))
    with pytest.raises(TypeError, match="image"):
        ar.TanhCNN(5, (2, 2))
    with pytest.raises(TypeError, match="seed"):
        ar.QKAttention(3, 2, seed=1.5)
    with pytest.raises(ValueError, match="heads"):
        ar.MultiHeadAttention(3, 2, 2, heads=0)


def test_bad_network_inputs():
    net, X = _small("mlp")
    with pytest.raises(ValueError, match="x"):
        net(torch.zeros(5, 4, dtype=DT))
    with pytest.raises(TypeError, match="x"):
        net([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="NaN"):
        net(torch.full((2, 3), float("nan"), dtype=DT))
    att, _ = _small("mha")
    with pytest.raises(TypeError, match=r"\(x, X\)"):
        att(torch.zeros(5, 3, dtype=DT))
    with pytest.raises(ValueError, match="same number of samples"):
        att((torch.zeros(5, 3, dtype=DT), torch.zeros(4, 4, 3, dtype=DT)))


def test_bad_trainer_arguments():
    net, X = _small("mlp")
    Y = torch.zeros(5, 2, dtype=DT)
    with pytest.raises(ValueError, match="optimizer"):
        pair.train_pair(net, net.twin(), X, Y, optimizer="rmsprop")
    with pytest.raises(ValueError, match="lr"):
        pair.train_pair(net, net.twin(), X, Y, lr=0.0)
    with pytest.raises(ValueError, match="steps"):
        pair.train_pair(net, net.twin(), X, Y, steps=0)
    with pytest.raises(ValueError, match="batch"):
        pair.train_pair(net, net.twin(), X, Y, batch=6)
    with pytest.raises(ValueError, match="Y"):
        pair.train_pair(net, net.twin(), X, torch.zeros(5, 3, dtype=DT))
    with pytest.raises(ValueError, match="s must"):
        pair.train_pair(net, net.twin(), X, Y, s=(1.0, -1.0))
    other = ar.TanhMLP(3, 2, V=2, sigma=0.3, seed=2).twin()
    with pytest.raises(ValueError, match="identical weights"):
        pair.train_pair(net, other, X, Y)
    with pytest.raises(TypeError, match="twin"):
        pair.train_pair(net, net, X, Y)
    cnn, _ = _small("cnn")
    with pytest.raises(TypeError, match="twin"):
        pair.train_pair(net, cnn.twin(), X, Y)
    with pytest.raises(TypeError, match="sample"):
        pair.train_pair_online(net, net.twin(), "not callable", (X, Y))


def test_bad_data_arguments():
    with pytest.raises(ValueError, match="m must exceed D"):
        ar.whitened_gaussian(3, 4)
    with pytest.raises(ValueError, match="s has 3 values"):
        teacher.teacher_map(2, 5, s=(1.0, 0.5, 0.2))
    with pytest.raises(ValueError, match="positive"):
        teacher.teacher_map(4, 4, s=(1.0, 0.0))
    with pytest.raises(ValueError, match="arch"):
        teacher.teacher_task("rnn", 0.01)


def test_pair_history_deviations():
    h = pair.PairHistory(
        step=np.array([0, 1]),
        loss_net=np.array([1.0, 0.1]),
        loss_twin=np.array([1.0, 0.01]),
        s_net=np.array([[0.1, 0.2], [1.0, 0.9]]),
        s_twin=np.array([[0.1, 0.2], [1.0, 0.5]]),
        gap=np.zeros(2),
    )
    assert h.s_deviation == pytest.approx(0.4)
    assert h.log_loss_deviation == pytest.approx(1.0)
