"""The commuting error of a factored NQF: summed entry by entry when small
(round-off, as for the dense NQF), by the Gram route above the budget."""

import numpy as np
import pytest
from scipy.stats import ortho_group

import nqf_lite.design.modes as modes
from nqf_lite import expand_dataset
from nqf_lite.expansion.models import linear_expert, moe_module


def _moe(inputs):
    f = moe_module(4, linear_expert(4), "tanh")
    return expand_dataset(f, list(inputs), progress=False)


def _error(nqf):
    return modes.glv_modes(nqf, 0.1 * np.arange(1, 5)).commuting_error


def test_orthonormal_inputs_commute_to_round_off():
    X = ortho_group.rvs(4, random_state=3)
    nqf = _moe(X)
    assert getattr(nqf, "factored", False)
    assert _error(nqf) < 1e-13


def test_gram_route_resolves_down_to_its_floor(monkeypatch):
    X = ortho_group.rvs(4, random_state=3)
    monkeypatch.setattr(modes, "EXACT_OFF_ENTRIES", 0)
    assert _error(_moe(X)) < 1e-7  # the square root of round-off


@pytest.mark.parametrize("exact", [True, False])
def test_correlated_inputs_do_not_commute_on_either_route(exact, monkeypatch):
    X = ortho_group.rvs(4, random_state=3)
    X = (np.eye(4) + np.ones((4, 4)) / 4) @ X
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    if not exact:
        monkeypatch.setattr(modes, "EXACT_OFF_ENTRIES", 0)
    nqf = _moe(X)
    dense = modes.glv_modes(nqf.dense(), 0.1 * np.arange(1, 5))
    assert _error(nqf) == pytest.approx(dense.commuting_error, rel=1e-6)
    assert _error(nqf) > 0.1
