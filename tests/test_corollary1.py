"""Corollary 1 (many outputs): the criterion of chapter 1's claim
``ch1-cor1-order`` accepts ZGZ layers and rejects a layer that breaks ZGZ."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from nqf_lite import expand, module_units

#: chapter 1's criterion: the fitted order of the remainder is at least this
ORDER_BOUND = 3 - 0.05
EPS = np.geomspace(1e-3, 1e-2, 5)


def _order(act: nn.Module, seed: int) -> float:
    """Fitted order of F(eps G) - F(0) - sum_i A[eps g_i, eps g_i] for a
    random 3-output layer (computed here by hand from the coefficients)."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 5), act, nn.Linear(5, 3)).double()
    x = torch.randn(4, dtype=torch.float64)
    units, e = module_units(net), expand(net, x)
    G = np.random.default_rng(seed).normal(size=units.weights().shape)
    errors = []
    for s in EPS:
        units.assign(s * G)
        with torch.no_grad():
            F = net(x).numpy()
        quad = [sum(w @ e.A[m] @ w for w in (s * G).T) for m in range(3)]
        errors.append(np.abs(F - e.f0 - np.array(quad)).max())
    return float(np.polyfit(np.log(EPS), np.log(errors), 1)[0])


@pytest.mark.parametrize("act", [nn.Tanh(), nn.GELU()], ids=["tanh", "gelu"])
def test_zgz_layers_meet_the_order_of_corollary_1(act):
    assert min(_order(act, s) for s in range(3)) >= ORDER_BOUND


def test_a_layer_that_breaks_zgz_fails_the_criterion():
    # the sigmoid readout gets the gradient sigma(0) = 1/2 at a zero neuron:
    # the linear term Corollary 1 leaves out makes the remainder O(eps)
    orders = [_order(nn.Sigmoid(), s) for s in range(3)]
    assert max(orders) < ORDER_BOUND
    assert np.allclose(orders, 1.0, atol=0.05)
