"""Tests of nqf_lite.experiments.ensemble: vmapped ensembles of networks and
twins.

The reference is :func:`nqf_lite.experiments.pair.train_pair` (and
``train_pair_online``), which trains one network and its twin as two ordinary
torch modules, without vmap and with one optimizer each: every member of an
ensemble must follow it to round-off.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from nqf_lite.expansion import models as ar
from nqf_lite.experiments import pair as pr
from nqf_lite.experiments.ensemble import (
    EnsembleHistory,
    log_ratio,
    stack_inputs,
    stack_weights,
    train_ensemble,
)
from nqf_lite.book.plotting import TWIN_LINE, plot_band

DT = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _members(name: str, E: int = 3, sigma: float = 0.3):
    """E small networks of one kind, each with its own inputs (8 samples) and
    targets."""
    nets, inputs, targets = [], [], []
    for j in range(E):
        g = _gen(100 + j)
        if name == "mlp":
            net = ar.TanhMLP(4, 3, V=2, sigma=sigma, seed=j)
            x = torch.randn(8, 4, generator=g, dtype=DT)
        elif name == "cnn":
            net = ar.TanhCNN(
                (3, 4), (2, 2), channels=3, V=2, sigma=sigma, seed=j
            )
            x = torch.randn(8, 3, 4, generator=g, dtype=DT)
        elif name == "qk":  # one shared readout (a fixed buffer)
            net = ar.QKAttention(
                3, 2, heads=2, V=2, sigma=sigma, seed=j, readout_seed=9
            )
            x = (
                torch.randn(8, 3, generator=g, dtype=DT),
                torch.randn(8, 4, 3, generator=g, dtype=DT),
            )
        else:
            net = ar.MultiHeadAttention(
                3, 2, 2, heads=2, V=2, sigma=sigma, seed=j
            )
            x = (
                torch.randn(8, 3, generator=g, dtype=DT),
                torch.randn(8, 4, 3, generator=g, dtype=DT),
            )
        nets.append(net)
        inputs.append(x)
        targets.append(torch.randn(8, 2, generator=g, dtype=DT))
    return nets, inputs, targets


def _clone(net):
    out = type(net)(**net._config())
    out.load_state_dict(net.state_dict())
    return out


@pytest.mark.parametrize("name", ["mlp", "cnn", "qk", "mha"])
@pytest.mark.parametrize("opt", ["gd", "momentum", "adam"])
def test_every_member_follows_train_pair(name, opt):
    nets, inputs, targets = _members(name)
    data = (stack_inputs(inputs), torch.stack(targets))
    s = (1.0, 0.5)
    h = train_ensemble(
        nets, lambda t: data, opt, lr=0.05, steps=6, record_every=4, s=s
    )
    np.testing.assert_array_equal(h.step, [0, 4, 6])
    for j, net in enumerate(nets):
        ref = _clone(net)
        pair = pr.train_pair(
            ref,
            ref.twin(),
            inputs[j],
            targets[j],
            optimizer=opt,
            lr=0.05,
            steps=6,
            s=s,
        )
        keep = np.isin(pair.step, h.step)
        for role in ("net", "twin"):
            np.testing.assert_allclose(
                h.loss[role][j],
                getattr(pair, f"loss_{role}")[keep],
                rtol=1e-10,
            )
            np.testing.assert_allclose(
                h.s[role][j],
                getattr(pair, f"s_{role}")[keep],
                rtol=1e-9,
                atol=1e-12,
            )
    # the members really move and differ from each other
    assert np.all(h.loss["net"][:, -1] < h.loss["net"][:, 0])
    assert len(set(np.round(h.loss["net"][:, -1], 12))) == len(nets)


def test_online_evaluation_accuracy_and_probe_follow_the_reference():
    nets, _, _ = _members("mlp", E=2)
    teacher = ar.TanhMLP(4, 5, V=2, sigma=1.0, seed=42)
    g = _gen(3)
    batches = [torch.randn(2, 6, 4, generator=g, dtype=DT) for _ in range(5)]
    X_eval = torch.randn(2, 10, 4, generator=g, dtype=DT)
    with torch.no_grad():
        label = [teacher(b.reshape(-1, 4)).reshape(2, -1, 2) for b in batches]
        Y_eval = teacher(X_eval.reshape(-1, 4)).reshape(2, 10, 2)
    h = train_ensemble(
        nets,
        lambda t: ((batches[t],), label[t]),
        "gd",
        lr=0.1,
        steps=4,
        record_every=2,
        evaluate=((X_eval,), Y_eval),
        test=((X_eval,), Y_eval),
        probe=lambda W: W["U"][:, 0, :2],
    )
    assert h.probe.shape == (2, 3, 2) and h.members == 2
    for j, net in enumerate(nets):
        ref = _clone(net)
        np.testing.assert_array_equal(
            h.probe[j, 0], net.U.detach()[0, :2].numpy()
        )
        pair = pr.train_pair_online(
            ref,
            ref.twin(),
            lambda t, gen, j=j: (batches[t][j], label[t][j]),
            (X_eval[j], Y_eval[j]),
            lr=0.1,
            steps=4,
            record_every=2,
        )
        np.testing.assert_allclose(h.loss["net"][j], pair.loss_net, rtol=1e-10)
        np.testing.assert_allclose(
            h.loss["twin"][j], pair.loss_twin, rtol=1e-10
        )
        np.testing.assert_allclose(
            h.probe[j, -1], ref.U.detach()[0, :2].numpy(), rtol=1e-10
        )
        with (
            torch.no_grad()
        ):  # sign accuracy of the trained network, counted by hand
            hits = torch.sign(ref(X_eval[j])) == torch.sign(Y_eval[j])
        assert h.acc["net"][j, -1] == pytest.approx(
            hits.double().mean().item(), abs=1e-15
        )


def test_deviation_select_and_concat():
    step = np.array([0, 1])
    s_net = np.array(
        [[[1.0, 0.5], [0.9, 0.4]], [[0.2, 0.2], [0.3, 0.1]]]
    )  # (E=2, T=2, k=2)
    s_twin = np.array([[[1.0, 0.5], [1.0, 0.5]], [[0.2, 0.5], [0.3, 0.1]]])
    loss = {"net": np.ones((2, 2)), "twin": np.zeros((2, 2))}
    h = EnsembleHistory(step, loss, {"net": s_net, "twin": s_twin})
    np.testing.assert_allclose(h.deviation(), [0.1, 0.3])  # read off by hand
    first, second = h.select(slice(0, 1)), h.select([1])
    assert first.members == 1 and second.members == 1
    both = EnsembleHistory.concat([first, second])
    np.testing.assert_array_equal(both.s["net"], s_net)
    np.testing.assert_array_equal(both.loss["twin"], loss["twin"])
    assert both.acc is None and both.probe is None
    with pytest.raises(ValueError, match="s="):
        EnsembleHistory(step, loss).deviation()
    with pytest.raises(ValueError, match="different steps"):
        EnsembleHistory.concat(
            [first, EnsembleHistory(np.array([0, 2]), first.loss, first.s)]
        )
    with pytest.raises(ValueError, match="different quantities"):
        EnsembleHistory.concat([first, EnsembleHistory(step, first.loss)])


def test_recorded_steps_include_the_last():
    nets, inputs, targets = _members("mlp", E=2)
    data = (stack_inputs(inputs), torch.stack(targets))
    assert list(
        train_ensemble(nets, lambda t: data, steps=7, record_every=3).step
    ) == [0, 3, 6, 7]
    assert list(train_ensemble(nets, lambda t: data, steps=0).step) == [0]


def test_log_ratio_by_hand():
    # log a = (0, 1, 2): mean 1, sample variance 1; log b = (1, 3): mean 2,
    # variance 2
    g, se = log_ratio(np.exp([0.0, 1.0, 2.0]), np.exp([1.0, 3.0]))
    assert g == pytest.approx(-1.0, abs=1e-12)
    assert se == pytest.approx(math.sqrt(1 / 3 + 2 / 2), abs=1e-12)
    with pytest.raises(ValueError, match="a must"):
        log_ratio([1.0, -1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="b must"):
        log_ratio([1.0, 2.0], [1.0])


def test_stack_weights_and_inputs():
    nets, inputs, _ = _members("qk", E=2)
    W = stack_weights(nets)
    assert (
        set(W) == {"Q", "K"}
        and W["Q"].shape == (2, 2, 2, 3)
        and W["Q"].requires_grad
    )
    torch.testing.assert_close(W["K"][1], nets[1].K.detach())
    parts = stack_inputs(inputs)
    assert len(parts) == 2 and parts[1].shape == (2, 8, 4, 3)
    other = ar.QKAttention(
        3, 2, heads=2, V=2, sigma=0.3, seed=5, readout_seed=10
    )
    with pytest.raises(ValueError, match="buffer 'C'"):
        stack_weights([nets[0], other])
    with pytest.raises(ValueError, match="parameter shapes"):
        stack_weights([ar.TanhMLP(4, 3, V=2), ar.TanhMLP(4, 5, V=2)])
    with pytest.raises(TypeError, match="one architecture"):
        stack_weights([nets[0], ar.TanhMLP(4, 3, V=2)])
    with pytest.raises(TypeError, match="non-empty"):
        stack_weights([])
    with pytest.raises(TypeError, match="tuples"):
        stack_inputs([inputs[0], inputs[1][0]])


def test_bad_arguments_are_named():
    nets, inputs, targets = _members("mlp", E=2)
    data = (stack_inputs(inputs), torch.stack(targets))

    def draw(t):
        return data

    with pytest.raises(TypeError, match="twin"):
        train_ensemble([nets[0].twin()], draw)
    with pytest.raises(TypeError, match="draw"):
        train_ensemble(nets, data)
    with pytest.raises(ValueError, match="optimizer"):
        train_ensemble(nets, draw, "rmsprop")
    with pytest.raises(ValueError, match="lr"):
        train_ensemble(nets, draw, lr=0.0)
    with pytest.raises(ValueError, match="steps"):
        train_ensemble(nets, draw, steps=-1)
    with pytest.raises(ValueError, match="record_every"):
        train_ensemble(nets, draw, record_every=0)
    with pytest.raises(ValueError, match="s must"):
        train_ensemble(
            nets, draw, s=(1.0, 0.5, 0.25)
        )  # V = 2: at most two singular values
    with pytest.raises(TypeError, match="test"):
        train_ensemble(nets, draw, test=data[0])
    with pytest.raises(TypeError, match="probe"):
        train_ensemble(nets, draw, probe=3)
    with pytest.raises(FloatingPointError, match="diverged"):
        train_ensemble(nets, draw, lr=1e4, steps=50)


def test_plot_band_draws_mean_or_geometric_mean_and_range():
    x = np.arange(3.0)
    ys = np.array([[1.0, 2.0, 4.0], [4.0, 8.0, 16.0]])
    fig, ax = plt.subplots()
    plot_band(ax, x, ys, "red", label="net")
    plot_band(ax, x, ys, log=True, twin=True)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [2.5, 5.0, 10.0])
    np.testing.assert_allclose(
        ax.lines[1].get_ydata(), [2.0, 4.0, 8.0]
    )  # sqrt(1*4), ...
    assert (
        ax.lines[0].get_color() == "red" and ax.lines[0].get_label() == "net"
    )
    assert (
        ax.lines[1].get_linestyle() == TWIN_LINE["ls"]
        and ax.lines[1].get_color() == TWIN_LINE["color"]
    )
    with pytest.raises(ValueError, match="shape"):
        plot_band(ax, x, ys[:, :2])
    with pytest.raises(ValueError, match="positive"):
        plot_band(ax, x, -ys, log=True)
    plt.close(fig)
