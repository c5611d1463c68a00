"""Each new claim of chapters 8 and 11 fails under its stated wrong
alternative.

The chapters' switch-on claims are re-run here on the logistic map of Eq. 24
(what an exactly solvable row follows, mode by mode) from random chi^2_d
starts, on small sizes, with the claim's own statistic and criterion
(``Claims.check``): the right prediction passes, the wrong alternative raises
``ClaimFailed``.  The row-9 two-term claim is re-run on the package's two-layer
MLP with a next Taylor term whose sign is flipped, or whose draws are shuffled.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import norm

from nqf_lite.expansion.models.base import MODELS
from nqf_lite.expansion.models.mlp import TwoLayerMLP
from nqf_lite.book.claims import ClaimFailed, Claims
from nqf_lite.design.corrections import (
    SATURATION_LEAD_STEPS,
    gd_growth_rate,
    gd_half_time_from,
    gd_switch_on_time,
    log_chi2_kurtosis,
    log_chi2_sd,
    spread_ratio,
)
from nqf_lite.book.seeding import rng
from nqf_lite.dynamics.solvable import crossing_time


@pytest.fixture(autouse=True)
def _no_ledger(monkeypatch):
    monkeypatch.delenv("NQF_CLAIMS_DIR", raising=False)


def map_runs(r, c, z0, lr, n_steps):
    """z_k(step) of the logistic map z <- z (1 + lr (r - c z)/2)^2, shape
    (steps + 1, runs, modes)."""
    z = np.empty((n_steps + 1,) + z0.shape)
    z[0] = z0
    for n in range(n_steps):
        z[n + 1] = z[n] * (1 + lr * (r - c * z[n]) / 2) ** 2
    return z


def half_times(z, r, c, lr):
    """Measured half-saturation times (flow time lr * step), linear
    interpolation, per run and mode."""
    t = lr * np.arange(z.shape[0])
    return np.array(
        [crossing_time(t, z[:, s], r / (2 * c)) for s in range(z.shape[1])]
    )


def chi2_starts(eps, d, shape, key):
    """z_k(0) = (eps/d) chi^2_d: the abundance of a mode under N(0, eps/d)
    weights of d neurons."""
    w = rng("test-discriminate", key).standard_normal(shape + (d,))
    return eps / d * (w**2).sum(-1)


# ------------------------------------------------ chapter 8: the (3/4) ln 2
# lead, paired on the start

R8, LR8, EPS8, D8 = np.array([1.0, 0.7, 0.45, 0.3]), 0.2, 1e-6, 64


def lead_statistic(predicted_lead, rate="gd", n_seeds=10):
    """ch8-lead's statistic: max_k |mean paired lead - predicted| / h_k (the
    claim: <= 1)."""
    c = np.ones_like(R8)
    z0 = chi2_starts(EPS8, D8, (n_seeds, R8.size), "lead")
    t = half_times(map_runs(R8, c, z0, LR8, 300), R8, c, LR8)
    if rate == "gd":
        t0 = gd_half_time_from(R8, c, z0, LR8, lead=False)
    else:
        t0 = np.log((R8 / c - z0) / z0) / R8
    lead = ((t0 - t) / LR8).mean(axis=0)
    return float(np.max(np.abs(lead - predicted_lead) / (LR8 * R8 / 2)))


def test_lead_claim_passes_with_the_lead():
    stat = lead_statistic(SATURATION_LEAD_STEPS)
    assert 0.0 <= stat < 1.0, stat
    Claims("99_t").check("lead", "lead", stat, at_most=1.0)


@pytest.mark.parametrize(
    "wrong",
    [
        dict(predicted_lead=0.0),
        dict(predicted_lead=-SATURATION_LEAD_STEPS),
        dict(predicted_lead=SATURATION_LEAD_STEPS, rate="flow"),
    ],
)
def test_lead_claim_fails_without_the_lead_or_with_the_flow_rate(wrong):
    with pytest.raises(ClaimFailed):
        Claims("99_t").check(
            "lead", "lead", lead_statistic(**wrong), at_most=1.0
        )


# ------------------------------------------------ chapter 11: the chi^2_d mean
# shift and the spread, d = 4

R11, C11, LR11, SIGMA2, D11 = (
    np.array([0.1, 0.06, 0.035, 0.02]),
    0.5,
    2.0,
    1e-7,
    4,
)
Q11 = norm.ppf(1 - 0.0027 / (2 * 18))  # the chapter's family-wise quantile


@pytest.fixture(scope="module")
def steps_d4():
    """Switch-on steps of 1000 runs of the map from sigma^2 chi^2_4 starts,
    shape (1000, 4)."""
    z0 = chi2_starts(D11 * SIGMA2, D11, (1000, R11.size), "chi2")
    c = np.full_like(R11, C11)
    n = int(
        1.8 * gd_switch_on_time(R11, c, D11 * SIGMA2, LR11, d=D11).max() / LR11
    )
    t = half_times(map_runs(R11, c, z0, LR11, n), R11, c, LR11) / LR11
    assert np.all(np.isfinite(t))
    return t


def used(steps, predicted):
    """ch11's statistic: max_k |mean - predicted| / (q SE_k), SE from the
    measured or chi^2 sd."""
    sd_chi2 = log_chi2_sd(D11) / (LR11 * gd_growth_rate(R11, LR11))
    se = np.maximum(steps.std(axis=0, ddof=1), sd_chi2) / np.sqrt(
        steps.shape[0]
    )
    return float(np.max(np.abs(steps.mean(axis=0) - predicted) / (Q11 * se)))


def test_chi2_claim_passes_with_the_shift_and_fails_without_it(steps_d4):
    c = np.full_like(R11, C11)
    right = gd_switch_on_time(R11, c, D11 * SIGMA2, LR11, d=D11) / LR11
    wrong = (
        gd_switch_on_time(R11, c, D11 * SIGMA2, LR11) / LR11
    )  # z_k(0) = d sigma^2: no chi^2 shift
    Claims("99_t").check("times", "times", used(steps_d4, right), at_most=1.0)
    with pytest.raises(ClaimFailed):
        Claims("99_t").check(
            "times", "times", used(steps_d4, wrong), at_most=1.0
        )
    # the chapter's control asserts the opposite of the same bound; it holds
    # for the wrong forecast
    Claims("99_t").check(
        "control", "control", used(steps_d4, wrong), at_least=1.0
    )


def test_spread_claim_passes_with_psi1_and_fails_with_the_naive_spread(
    steps_d4,
):
    rate = LR11 * gd_growth_rate(R11, LR11)
    kurt = log_chi2_kurtosis(D11)
    ratio, se = spread_ratio(steps_d4, log_chi2_sd(D11) / rate, kurt)
    Claims("99_t").check(
        "spread", "spread", ratio, expected=1.0, atol=Q11 * se
    )
    naive, se_naive = spread_ratio(steps_d4, np.sqrt(2 / D11) / rate, kurt)
    with pytest.raises(ClaimFailed):
        Claims("99_t").check(
            "spread", "spread", naive, expected=1.0, atol=Q11 * se_naive
        )
    no_spread = (
        steps_d4.mean(axis=0) + 0 * steps_d4
    )  # every seed at the mean: the uncorrected flow's picture
    with pytest.raises(ClaimFailed):
        Claims("99_t").check(
            "spread",
            "spread",
            spread_ratio(no_spread, log_chi2_sd(D11) / rate, kurt)[0],
            expected=1.0,
            atol=Q11 * se,
        )


# ------------------------------------------------ chapter 8: two Taylor terms
# of row 9, draw by draw

SQ = np.sqrt(2 * np.pi)
EPS_TWO = np.geomspace(1e-3, 1e-1, 9)[2]
POWER = {"gelu": 3, "tanh": 4}


def _terms(act, s, v):
    if act == "gelu":
        return (
            (v * s**2).sum(1) / SQ,
            -(v * s**4).sum(1) / (6 * SQ),
            (v * s**6).sum(1) / (40 * SQ),
        )
    return (
        -(v * s**3).sum(1) / 3,
        2 * (v * s**5).sum(1) / 15,
        -17 * (v * s**7).sum(1) / 315,
    )


def two_term_ratio(act, wrong=None, n_draws=4):
    """ch8-odd-two-terms' statistic for one activation: leftover of the two
    terms over the third."""
    model = TwoLayerMLP(act="gelu") if act == "gelu" else MODELS["mlp"]
    draws = [
        MODELS["mlp"].sample(rng("test-discriminate", "odd", j))
        for j in range(n_draws)
    ]
    s = np.array([W[:-1].T @ x for W, x in draws])
    v = np.array([W[-1] for W, x in draws])
    lead, nxt, third = _terms(act, s, v)
    if wrong == "flip":
        nxt = -nxt
    elif wrong == "shuffle":
        nxt = np.roll(nxt, 1)
    signed = []
    for W, x in draws:
        with torch.no_grad():
            f = float(
                np.ravel(
                    model.native(torch.as_tensor(EPS_TWO * W), x).numpy()
                )[0]
            )
        signed.append(
            (f - EPS_TWO**2 * np.sum(model.structure(x).A * (W @ W.T)))
            / EPS_TWO ** POWER[act]
        )
    left = np.abs(np.array(signed) - lead - EPS_TWO**2 * nxt).max()
    return float(left / (EPS_TWO**4 * np.abs(third).max()))


@pytest.mark.parametrize("act", ["gelu", "tanh"])
def test_two_terms_claim_discriminates_the_sign_and_the_draws(act):
    Claims("99_t").check(
        "two", "two", abs(two_term_ratio(act) - 1), at_most=0.5
    )
    for wrong in ("flip", "shuffle"):
        with pytest.raises(ClaimFailed):
            Claims("99_t").check(
                "two", "two", abs(two_term_ratio(act, wrong) - 1), at_most=0.5
            )
