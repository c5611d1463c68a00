"""nqf_lite on real networks: one loss convention, the width, the start, clear
errors (issue 28)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import nqf_lite as nl
from nqf_lite import NQF, predict_learning
from nqf_lite.dynamics.projectors import span_coordinates


def _three_output_nqf():
    """m = 2 inputs, V = 3 outputs, orthogonal features: output o feeds mode o
    only."""
    m, V, p = 2, 3, 3
    s, t = np.array([1.0, 0.5]), np.array([0.9, 0.5, 0.3])
    A = np.zeros((m, V, p, p))
    for n in range(m):
        for o in range(V):
            A[n, o, o, o] = s[n]
    return NQF(A), s[:, None] * t[None, :]


def _half_crossing(z, level):
    """First (linearly interpolated) step at which z reaches level."""
    i = int(np.argmax(z >= level))
    return i - 1 + (level - z[i - 1]) / (z[i] - z[i - 1])


def test_forecast_switch_on_steps_match_training_with_three_outputs():
    nqf, y = _three_output_nqf()
    eps, lr = 1e-6, 0.05
    W0 = np.sqrt(eps) * np.eye(3)
    fc = predict_learning(nqf, y=y, W0=W0, lr=lr)
    # expected from training alone: NQF.train, half of each mode's final
    # abundance
    rec = nqf.train(W0, y, lr, 3000, record=("M",))
    z = np.einsum("tkk->tk", rec.M)
    measured = np.array(
        [_half_crossing(z[:, k], z[-1, k] / 2) for k in range(3)]
    )
    # the forecast leaves out the logistic's half-step lead (3/4 ln 2 steps,
    # Chapter 8): 1 step
    np.testing.assert_allclose(fc.switch_on_steps, measured, atol=1.0)
    # (a forecast that averaged over the outputs would be V = 3 times late:
    # 100+ steps off) the plateaus are the training loss of Eq. 26 (summed over
    # outputs): the start
    assert fc.plateaus[0] == pytest.approx(
        nqf.loss(np.zeros((3, 3)), None, y), rel=1e-12
    )


def test_forecast_of_a_module_with_three_outputs_matches_torch_training():
    torch.manual_seed(0)
    k, V = 3, 3
    net = nn.Sequential(
        nn.Linear(k, 4, bias=False), nn.Tanh(), nn.Linear(4, V, bias=False)
    ).double()
    X = np.sqrt(k) * np.eye(k)
    T = np.diag([0.6, 0.4, 0.2])
    Y = X @ T.T
    units = nl.module_units(net)
    W0 = 1e-3 * np.random.default_rng(1).standard_normal((units.p, units.d))
    units.assign(W0)
    lr = 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fc = predict_learning(net, list(X), Y, W0=W0, lr=lr)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    Xt, Yt = torch.tensor(X), torch.tensor(Y)
    losses = []
    for _ in range(int(1.5 * fc.switch_on_steps[fc.order[0]])):
        opt.zero_grad()
        loss = (
            ((net(Xt) - Yt) ** 2).sum(1).mean()
        )  # Eq. 26: sum over outputs, mean over inputs
        losses.append(loss.item())
        loss.backward()
        opt.step()
    # the first drop: the loss falls through the middle of its first step near
    # the forecast step
    L0, L1 = fc.plateaus[0], fc.plateaus[1]
    measured = _half_crossing(-np.array(losses), -(L0 + L1) / 2)
    assert measured == pytest.approx(fc.switch_on_steps[fc.order[0]], rel=0.1)


def _phase_retrieval(m=200, p=4, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, p))
    S = np.diag([1.0, 0.6, 0.3, 0.0])
    return (
        NQF(np.einsum("ai,aj->aij", a, a)),
        np.einsum("ai,ij,aj->a", a, S, a),
        rng,
    )


@pytest.mark.parametrize("d", [1, 2])
def test_width_below_the_modes_that_would_switch_on(d):
    nqf, y, rng = _phase_retrieval()
    lr = 0.002
    W0 = 1e-4 * rng.standard_normal((4, d))
    with pytest.warns(UserWarning, match=f"width d = {d}"):
        fc = predict_learning(nqf, y=y, W0=W0, lr=lr)
    assert fc.order.size == d and int(fc.switches_on.sum()) == d
    wide = predict_learning(
        nqf, y=y, W0=1e-4 * rng.standard_normal((4, 4)), lr=lr, warn=False
    )
    assert wide.order.size == 4
    # training at width d: M keeps rank d and the loss stalls far above the
    # full-width forecast
    W, _ = nqf.train(W0, y, lr, 4000)
    assert int(np.sum(np.linalg.eigvalsh(W @ W.T) > 1e-6)) == d
    W_wide, _ = nqf.train(1e-4 * rng.standard_normal((4, 4)), y, lr, 4000)
    assert nqf.loss_W(W_wide, y) < 1e-3
    assert nqf.loss_W(W, y) > 0.25


def test_commuting_data_ignore_the_width():
    nqf, y = _three_output_nqf()
    W0 = 1e-3 * np.ones((3, 1))  # width 1, every mode present
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fc = predict_learning(nqf, y=y, W0=W0, lr=0.05)
    assert fc.order.size == 3
    W, _ = nqf.train(
        W0, y, 0.05, 3000
    )  # Theorem 6: all three switch on at width 1
    assert nqf.loss_W(W, y) < 1e-8


def test_a_start_that_is_not_small_is_warned_about():
    nqf, y = _three_output_nqf()
    with pytest.warns(UserWarning, match=r"not small: z_k\(0\)/z_k\^inf"):
        predict_learning(nqf, y=y, eps=0.1, lr=0.05)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predict_learning(nqf, y=y, eps=1e-6, lr=0.05)
    assert not [w for w in caught if "not small" in str(w.message)], (
        "a small start was warned about"
    )


def test_an_unbalanced_start_is_warned_about():
    net = nn.Sequential(
        nn.Linear(2, 3, bias=False), nn.Tanh(), nn.Linear(3, 1, bias=False)
    ).double()
    X = np.sqrt(2) * np.eye(2)
    y = np.array([0.3, 0.2])
    units = nl.module_units(net)
    W0 = np.zeros((units.p, units.d))
    W0[:2] = 1e-3
    W0[2] = 2.0  # |a|^2 - |w|^2 = 4: the lambda = 4 start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            ValueError,
            match=r"not balanced: max_i \| \|w_in,i\|\^2 - \|w_out,i\|\^2 \| "
            r"= 4",
        ):
            predict_learning(net, list(X), y, W0=W0, lr=0.01)
    W0[2] = (
        # below half saturation, but the imbalance 0.09 is not small against
        # 0.51
        0.3
    )
    with pytest.warns(UserWarning, match=r"not balanced"):
        predict_learning(net, list(X), y, W0=W0, lr=0.01, warn=False)
    balanced = 1e-3 * np.ones((units.p, units.d))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predict_learning(net, list(X), y, W0=balanced, lr=0.01)
    assert not any("balanced" in str(w.message) for w in caught)


NET = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _meta_net():
    return nn.Sequential(
        nn.Linear(3, 4, device="meta"),
        nn.Tanh(),
        nn.Linear(4, 2, device="meta"),
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: nl.expand(NET, torch.ones(5)),
            r"x = tensor of shape \(5,\).*in_features = 3",
        ),
        (
            lambda: nl.expand(NET, torch.ones(3, dtype=torch.int64)),
            r"dtype torch.int64",
        ),
        (
            lambda: nl.expand(NET, torch.ones(3, device="meta")),
            r"x is on the meta device",
        ),
        (
            lambda: nl.expand(_meta_net(), torch.ones(3)),
            r"parameter '0.weight' .* meta device",
        ),
        (
            lambda: nl.module_units(_meta_net()),
            r"parameter '0.weight' .* meta device",
        ),
        (
            lambda: nl.expand_dataset(
                NET, [torch.ones(3), torch.ones(3), torch.ones(4)]
            ),
            r"^xs\[2\]: .*\(4,\)",
        ),
        (
            lambda: nl.expand_dataset(
                NET,
                [torch.ones(3), torch.ones(3), torch.ones(4)],
                factored=False,
            ),
            r"^xs\[2\]: the module cannot be evaluated on x = tensor of shape "
            r"\(4,\)",
        ),
        (
            lambda: nl.expand_dataset(
                NET, [torch.ones(3), torch.ones(3, device="meta")]
            ),
            r"^xs\[1\]: x is on the meta",
        ),
        (
            lambda: nl.expand(
                lambda W, x: (torch.as_tensor(x) @ W).sum(), np.ones(4), p=3
            ),
            r"f\(W, x\) failed for x",
        ),
        (
            lambda: predict_learning(
                NET, [torch.ones(5)] * 3, np.ones((3, 2)), eps=1e-6, lr=0.1
            ),
            r"xs\[0\]",
        ),
    ],
)
def test_torch_errors_become_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_span_coordinates_blames_M():
    with pytest.raises(ValueError, match=r"^M must have shape \(4, 4\)"):
        span_coordinates(np.eye(3), np.eye(4)[None])
