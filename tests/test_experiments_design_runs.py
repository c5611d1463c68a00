"""nqf_lite.experiments.design_runs: forecasts tested by training.

Expected values come from hand cases: the MoE's rates on orthonormal inputs
(``r_k = y_k``, ``C_kk = 1/2`` for a tanh gate, Prop. 5, Eq. 14), the
spread of ``ln chi2_d`` (``sqrt(psi'(d/2))``), phase retrieval's first mode
(the top eigenvector of ``Y = (4/m) sum_a y_a a a^T``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import polygamma
from scipy.stats import ortho_group
from torch import nn

from nqf_lite import expand_dataset, module_units, predict_learning
from nqf_lite.experiments import design_runs as dr

Y = 0.1 * np.array([1.0, 0.6, 0.35, 0.2])


def test_switch_on_se_by_hand():
    r, lr, d = np.array([0.1, 0.05]), 2.0, 4
    r_gd = 2 / lr * np.log1p(lr * r / 2)  # the GD rate, per unit of time
    floor = np.sqrt(polygamma(1, d / 2)) / (lr * r_gd)  # in steps
    flat = np.array([[10.0, 20.0], [10.0, 20.0], [10.0, 20.0]])
    np.testing.assert_allclose(
        dr.switch_on_se(r, flat, d, lr), floor / np.sqrt(3)
    )
    wide = np.array([[0.0, 20.0], [100.0, 20.0]])  # sd 70.7 > the floor
    se = dr.switch_on_se(r, wide, d, lr)
    assert se[0] == pytest.approx(np.std([0.0, 100.0], ddof=1) / np.sqrt(2))


def test_switch_on_se_bad_input():
    with pytest.raises(ValueError, match="meas"):
        dr.switch_on_se([0.1], [[1.0]], 4, 0.1)
    with pytest.raises(ValueError, match="lr"):
        dr.switch_on_se([0.1], [[1.0], [2.0]], 4, -0.1)
    with pytest.raises(ValueError, match="d"):
        dr.switch_on_se([0.1], [[1.0], [2.0]], 0, 0.1)


def test_moe_run_rates_by_hand_and_switch_on():
    X = ortho_group.rvs(4, random_state=np.random.default_rng(0))
    run = dr.moe_run("tanh", 16, [1, 2, 3], X, Y, 1e-7, 2.0)
    # Eq. 14 by hand: on the mode (x, x)/sqrt 2, r = y and C = 1/2
    np.testing.assert_allclose(run.r, Y, atol=1e-10)
    np.testing.assert_allclose(run.C, 0.5, atol=1e-10)
    assert run.meas.shape == (3, 4) and run.z.shape[:2] == (run.n + 1, 3)
    # the forecast time of Eq. 43, ln(1/eps)/r in steps, to leading order
    eps = 16 * 1e-7
    t43 = np.log((Y / 0.5 - eps) / eps) / Y / 2.0
    np.testing.assert_allclose(run.meas.mean(0), t43, rtol=0.15)
    assert (np.abs(run.meas.mean(0) - run.pred) < 4 * run.se + 2).all()


def test_moe_run_bad_input():
    X = np.eye(4)
    with pytest.raises(ValueError, match="seeds"):
        dr.moe_run("tanh", 4, [1], X, Y, 1e-7, 2.0)
    with pytest.raises(ValueError, match="sigma2"):
        dr.moe_run("tanh", 4, [1, 2], X, Y, 0.0, 2.0)
    with pytest.raises(ValueError, match="stretch"):
        dr.moe_run("tanh", 4, [1, 2], X, Y, 1e-7, 2.0, stretch=-1.0)


def test_phase_retrieval_run_follows_the_top_eigenvector():
    n_meas = 400
    run = dr.phase_retrieval_run(7, n_meas, 4, 1e-4, 0.005)
    fc, z, loss, t_on, overlap = run  # a tuple, in this order
    # the same draws by hand: measurements, then the signal
    g = np.random.default_rng(7)
    a = g.standard_normal((n_meas, 4))
    U = np.linalg.qr(g.standard_normal((4, 2)))[0]
    signal = U @ np.diag([1.0, 0.3]) @ U.T
    y = np.einsum("ai,ij,aj->a", a, signal, a)
    top = np.linalg.eigh(4 / n_meas * (a.T * y) @ a)[1][:, -1]
    assert abs(fc.modes[:, fc.order[0]] @ top) == pytest.approx(1, abs=1e-8)
    assert np.isfinite(t_on) and z[0] < 0.01 and z.max() > 0.5
    assert overlap > 0.99 and loss[-1] < loss[0]


def test_phase_retrieval_run_bad_input():
    with pytest.raises(ValueError, match="n_meas"):
        dr.phase_retrieval_run(0, 0, 4, 1e-4, 0.005)
    with pytest.raises(ValueError, match="sigma"):
        dr.phase_retrieval_run(0, 10, 4, -1.0, 0.005)


def test_load_images_digits():
    X, labels, name = dr.load_images(mnist=False)
    assert name == "digits" and X.shape == (1797, 784)
    assert X.min() >= 0 and X.max() <= 1 + 1e-12
    assert set(np.unique(labels)) == set(range(10))
    with pytest.raises(TypeError, match="mnist"):
        dr.load_images(mnist="yes")


def test_forecast_order_and_closed_switch_on():
    X = ortho_group.rvs(4, random_state=np.random.default_rng(0))
    run = dr.moe_run("tanh", 16, [1, 2, 3], X, Y, 1e-7, 2.0)
    p, p_up, tally = dr.forecast_order(
        run, 1e-7, 2.0, np.random.default_rng(0), 0.01
    )
    assert 0 <= p <= p_up <= 1
    # the rates 0.1, 0.06, 0.035, 0.02 are far apart: no seed flips them
    assert tally.out_of_order == 0 and tally.off_own_order == 0
    with pytest.raises(ValueError, match="sigma2"):
        dr.forecast_order(run, 0.0, 2.0, np.random.default_rng(0), 0.01)
    # a tanh layer's own NQF, trained exactly: its first mode switches on
    # where the forecast (Eq. 39 with the GD-step correction) says, up to
    # the logistic's lead of (3/4) ln 2 = 0.52 steps and a bend of the
    # non-commuting data
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    layer = layer.double()
    units = module_units(layer)
    nqf = expand_dataset(layer, torch.as_tensor(np.eye(4)))
    y = np.array([0.3, 0.2, 0.1, 0.05])
    W0 = 1e-3 * np.random.default_rng(1).standard_normal((units.p, units.d))
    fc = predict_learning(nqf, y=y, W0=W0, lr=0.2, warn=False)
    first = fc.order[0]
    t = dr.closed_switch_on(nqf, fc, W0, y, 0.2, 400, first)
    assert abs(t - fc.switch_on_steps[first]) < 1.0
    with pytest.raises(ValueError, match="W0"):
        dr.closed_switch_on(nqf, fc, W0[0], y, 0.2, 400, first)
