"""nqf_lite.experiments.atlas: each model against its NQF, staged learning.

Expected values come from hand cases: phase retrieval's output is
``|W^T a|^2``, a tanh network's remainder is ``-eps^4 sum v s^3 / 3``, the
planted rates are those of Eq. 37 on orthonormal data, a power law has the
slope of its exponent.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from nqf_lite.expansion.models import MODELS
from nqf_lite.expansion.models.mlp import TwoLayerMLP
from nqf_lite.experiments import atlas

PR_RATES = np.array([1.0, 0.6, 0.35])


def test_phase_retrieval_is_its_quadratic_form_by_hand():
    model = MODELS["phase_retrieval"]
    W, a = model.sample(np.random.default_rng(0))
    by_hand = np.sum((a @ W) ** 2)  # y = a^T W W^T a
    assert np.isclose(atlas.native(model, W, a), by_hand, rtol=1e-12)
    assert np.isclose(atlas.quadratic_form(model, W, a), by_hand, rtol=1e-12)
    assert np.isclose(
        atlas.quadratic_form(model, W, a, scale=0.5), by_hand / 4, rtol=1e-12
    )
    assert atlas.remainder_gap(model, W, a, 0.3) < 1e-12


def test_coefficient_gap_is_round_off_for_a_closed_form():
    for name in ("phase_retrieval", "psd_sensing", "mlp"):
        model = MODELS[name]
        W, x = model.sample(np.random.default_rng(1))
        assert atlas.coefficient_gap(model, W, x) < 1e-10


def test_signed_remainder_of_tanh_is_the_cubic_taylor_term():
    model = MODELS["mlp"]  # neurons as columns: rows u (k), last row v
    W, x = model.sample(np.random.default_rng(2))
    s, v = W[:-1].T @ x, W[-1]
    eps = np.array([1e-2, 2e-2])
    by_hand = -(eps**4) * np.sum(v * s**3) / 3  # tanh u = u - u^3/3 + ...
    got = atlas.signed_remainder(model, W, x, eps)
    np.testing.assert_allclose(got, by_hand, rtol=5e-3)


def test_remainder_slope_of_a_power_law():
    eps = np.geomspace(1e-3, 1.0, 13)
    err = 2.0 * eps**3
    assert atlas.remainder_slope(eps, err) == pytest.approx(3.0, abs=1e-9)
    err[:4] = 1e-17  # round-off at the smallest scales is skipped
    assert atlas.remainder_slope(eps, err) == pytest.approx(3.0, abs=1e-9)


def test_remainder_slope_bad_input():
    eps = np.geomspace(1e-3, 1.0, 6)
    with pytest.raises(ValueError, match="above round-off"):
        atlas.remainder_slope(eps, np.full(6, 1e-16))
    with pytest.raises(ValueError, match="eps and err"):
        atlas.remainder_slope(eps, eps[:5])
    with pytest.raises(ValueError, match="n"):
        atlas.remainder_slope(eps, eps, n=1)


@pytest.mark.parametrize(
    "name, rates",
    [
        ("psd_sensing", np.array([1.0, 0.7, 0.45, 0.3])),
        ("phase_retrieval", PR_RATES),
        ("diagonal_square", np.array([1.0, 0.65, 0.42, 0.3])),
    ],
)
def test_staged_data_plants_the_rates(name, rates):
    g = np.random.default_rng(3)
    xs, y = atlas.staged_data(name, rates, g)
    pred = atlas.staged_prediction(MODELS[name], xs, y, 1e-6, 0.2, 64)
    assert pred["comm"] < 1e-12  # Assumption 1 by construction
    r = np.sort(pred["r"])[::-1][: len(rates)]
    np.testing.assert_allclose(r, rates, atol=1e-12)


def test_phase_retrieval_targets_by_hand():
    # orthonormal a_mu: A = a a^T has eigenvalue 1 on a_mu, so Eq. 37 gives
    # r_mu = (8/m) y_mu with m = 3: y = 3 r / 8
    xs, y = atlas.staged_data("phase_retrieval", PR_RATES, 0)
    gram = np.array(xs) @ np.array(xs).T
    np.testing.assert_allclose(gram, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(y, 3 * PR_RATES / 8)


def test_staged_run_switches_on_near_the_corrected_time():
    runs = [
        atlas.staged_run("phase_retrieval", PR_RATES, s, 1e-6, 64, 0.2, 280)
        for s in (3, 4)
    ]
    run = runs[0]
    np.testing.assert_allclose(run["r_k"], PR_RATES, atol=1e-12)
    # unseen direction: r = 0, and z stays where it started
    dead = run["z"][:, run["dead"]]
    assert np.abs(dead / dead[0] - 1).max() < 1e-10
    # the flow time of Eq. 158 by hand: C_kk = (8/m) 1 = 8/3 on orthonormal
    # measurements; the GD corrections are a few per cent here
    c = 8 / 3
    t_flow = np.log((run["r_k"] / c - 1e-6) / 1e-6) / run["r_k"]
    np.testing.assert_allclose(run["t_meas"], t_flow, rtol=0.1)
    res = atlas.compare_switch_on(
        runs, 1e-6, 0.2, 64, 3.0, np.random.default_rng(5), 0.001
    )
    t_meas = np.array([m["t_meas"] for m in runs])
    np.testing.assert_allclose(res["t_mean"], t_meas.mean(axis=0))
    gap = np.abs(t_meas.mean(axis=0) - run["t_gd"][run["live"]])
    np.testing.assert_allclose(res["used"], gap / (3.0 * res["se"]))
    assert res["used"].max() < 1.0


def test_staged_bad_input():
    with pytest.raises(ValueError, match="name"):
        atlas.staged_data("mlp", PR_RATES, np.random.default_rng(0))
    with pytest.raises(ValueError, match="eps"):
        atlas.staged_run("phase_retrieval", PR_RATES, 0, -1.0, 8, 0.2, 5)
    with pytest.raises(ValueError, match="width"):
        atlas.staged_run("phase_retrieval", PR_RATES, 0, 1e-6, 0, 0.2, 5)
    with pytest.raises(ValueError, match="two runs"):
        atlas.compare_switch_on([{}], 1e-6, 0.2, 8, 3.0, None, 0.01)


def test_remainder_sweep_of_phase_retrieval_by_hand():
    model = MODELS["phase_retrieval"]
    draws = [model.sample(np.random.default_rng(k)) for k in range(2)]
    sweep, pairs = atlas.remainder_sweep(model, draws, [0.1, 1.0])
    by_hand = [np.sum((a @ W) ** 2) for W, a in draws]  # exact row: y = NQF
    assert sweep.shape == (2, 2) and sweep.max() < 1e-12
    assert np.allclose(pairs, np.array([by_hand, by_hand]).T, rtol=1e-12)
    with pytest.raises(ValueError, match="eps_grid"):
        atlas.remainder_sweep(model, draws, [[0.1, np.nan]])


def test_table3_row_and_registry_row():
    cited = SimpleNamespace(reference="[3, 7]; Table 3, row 12")
    assert atlas.table3_row(cited) == 12
    assert atlas.table3_row(SimpleNamespace(reference="Prop. 4")) is None
    mlp = MODELS["mlp"]
    W, x = mlp.sample(np.random.default_rng(0))
    row = atlas.registry_row(mlp, x)
    assert row[0] == 9 and row[1] == mlp.title  # the tanh MLP is row 9
    # A of a 2-layer MLP couples u and v only: feed-forward, rank 2
    assert row[4:8] == [mlp.p, "leading order", "feed-forward (Eq. 17)", 2]


def test_structure_class_hand_cases():
    assert atlas.structure_class(np.diag([1.0, 2.0, 0.0])) == (
        "diagonal, PSD",
        2,
    )
    ff = np.zeros((4, 4))
    ff[:2, 2:] = ff[2:, :2] = np.eye(2)  # u meets v only: Eq. 17
    assert atlas.structure_class(ff) == ("feed-forward (Eq. 17)", 4)
    assert atlas.structure_class(np.ones((3, 3))) == ("PSD", 1)
    assert atlas.structure_class([[1.0, 2.0], [2.0, 1.0]]) == (
        "indefinite",
        2,
    )
    # several outputs: the first
    assert atlas.structure_class(np.stack([np.eye(2), -np.ones((2, 2))]))[0]
    with pytest.raises(ValueError, match="A must be"):
        atlas.structure_class(np.ones((2, 3)))


def test_is_even_tanh_but_not_gelu():
    tanh, gelu = MODELS["mlp"], TwoLayerMLP(act="gelu")
    draws = [tanh.sample(np.random.default_rng(k)) for k in range(3)]
    assert atlas.is_even(tanh, draws)  # v tanh(u.x) is even in (u, v)
    assert not atlas.is_even(gelu, draws)
    with pytest.raises(ValueError, match="tol"):
        atlas.is_even(tanh, draws, tol=-1.0)
