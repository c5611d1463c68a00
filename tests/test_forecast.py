"""predict_learning from anything: a registry model's closed form, an NQF, a
torch module, W0 or per-mode eps.

Expected values are derived here: by hand (diagonal layers, whose modes are the
coordinates), from the autograd path of the same layer (the closed-form path
must agree with it), from the trace identity ``sum_k z_k = |W0|_F^2``, or from
gradient descent itself (the stable bound).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import nqf_lite.expansion.models as ar
from nqf_lite import NQF, expand_dataset, predict_learning
from nqf_lite.design.forecast import stable_lr


def quadratic_layer(S_of_x):
    def f(W, x):
        S = torch.as_tensor(S_of_x(x), dtype=torch.float64)
        return torch.einsum("pi,pq,qi->", W, S, W)

    return f


DIAG = quadratic_layer(np.diag)  # A(x) = diag(x)


def _diagonal_task(seed=0, m=6):
    """Diagonal layer on inputs with orthogonal columns: modes are the
    coordinates, C is diagonal."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((m, 3)))[0]
    X = Q * np.array([2.0, 1.5, 1.0])
    y = Q @ np.array([0.9, 0.5, 0.2])
    return X, y


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return predict_learning(*args, **kwargs)


# ------------------------------------------------------------------ registry
# models: closed form
def test_phase_retrieval_closed_form_is_fast_and_agrees_with_autograd():
    n, m = 6, 1200
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, n))
    u = rng.standard_normal(n)
    y = (a @ u) ** 2
    model = ar.sensing.PhaseRetrieval(n=n, name="test_phase_retrieval")
    t0 = time.perf_counter()
    fc = _quiet(model, list(a), y, eps=1e-8, lr=1e-3)
    assert time.perf_counter() - t0 < 1.0
    # hand: Y = (4/m) sum_mu y_mu a a^T and r = 2 eig(Y), decreasing (Theorem
    # 7)
    Y = 4.0 / m * (a.T * y) @ a
    np.testing.assert_allclose(
        fc.rates, 2 * np.sort(np.linalg.eigvalsh(Y))[::-1], rtol=1e-10
    )
    # the autograd path on the model's own forward gives the same forecast (on
    # fewer inputs)
    few = list(a[:12])
    fc_model = _quiet(model, few, y[:12], eps=1e-8, lr=1e-3)
    fc_auto = _quiet(
        lambda W, x: model.native(W, x), few, y[:12], n, eps=1e-8, lr=1e-3
    )
    np.testing.assert_allclose(
        fc_model.rates, fc_auto.rates, rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        fc_model.switch_on_steps, fc_auto.switch_on_steps, rtol=1e-8
    )


def test_diagonal_network_model_matches_hand_rates():
    X, y = _diagonal_task()
    model = ar.MODELS["diagonal_square"]  # A = Diag(x)/4, k = 4
    Xk = np.column_stack([X, np.zeros(len(X))])
    fc = _quiet(model, list(Xk), y, eps=1e-6, lr=0.05)
    r_hand = 8.0 / len(X) * (Xk / 4).T @ y
    np.testing.assert_allclose(np.sort(fc.rates), np.sort(r_hand), atol=1e-12)
    assert fc.switches_on.sum() == 3  # the empty coordinate never grows


def test_nqf_is_forecast_directly():
    X, y = _diagonal_task(2)
    nqf = expand_dataset(DIAG, list(X), 3)
    direct = predict_learning(
        NQF(np.stack([np.diag(x) for x in X])), y=y, eps=1e-6, lr=0.05
    )
    via_f = predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.05)
    for fc in (direct, predict_learning(nqf, y=y, eps=1e-6, lr=0.05)):
        np.testing.assert_allclose(fc.rates, via_f.rates, atol=1e-12)
        np.testing.assert_allclose(
            fc.switch_on_steps, via_f.switch_on_steps, rtol=1e-12
        )


def test_torch_module_is_forecast_like_its_function():
    k = 3
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(k, 5, bias=False), nn.Tanh(), nn.Linear(5, 1, bias=False)
    ).double()
    xs = list(np.eye(k))
    y = np.array([0.3, 0.2, 0.1])
    f = ar.mlp_module(k, "tanh")
    fc_net = _quiet(net, xs, y, eps=1e-6, lr=0.5)
    fc_f = _quiet(f, xs, y, f.p, eps=1e-6, lr=0.5)
    np.testing.assert_allclose(fc_net.rates, fc_f.rates, atol=1e-12)
    # Prop. 1 on orthonormal inputs: A(e_mu) has eigenvalues +-1/2 on (e_mu,
    # +-1)/sqrt 2 ... r for the mode of the top label: (8/m) (1/2) y_1 -- plus
    # the shared readout couples them
    W0 = np.random.default_rng(0).standard_normal((k + 1, 5)) * 1e-3
    fc_w = _quiet(net, xs, y, W0=W0, lr=0.5)
    np.testing.assert_allclose(
        fc_w.z0, ((fc_w.modes.T @ W0) ** 2).sum(1), rtol=1e-12
    )


# ------------------------------------------------------------------ the
# initial condition
def test_W0_gives_per_mode_abundances_and_the_exact_switch_on_times():
    X, y = _diagonal_task(3)
    rng = np.random.default_rng(4)
    W0 = 1e-3 * rng.standard_normal((3, 7))
    fc = predict_learning(DIAG, list(X), y, 3, W0=W0, lr=0.01)
    z0 = (W0**2).sum(axis=1)[
        np.argmax(np.abs(fc.modes), axis=0)
    ]  # modes are the coordinates
    np.testing.assert_allclose(fc.z0, z0, rtol=1e-12)
    assert fc.z0.sum() == pytest.approx(
        np.sum(W0**2), rel=1e-12
    )  # trace is basis free
    r, c = fc.rates, np.diag(fc.competition)
    np.testing.assert_allclose(
        fc.switch_on_times, np.log((r / c - z0) / z0) / r, rtol=1e-10
    )  # Eq. 39
    assert fc.eps is None
    same = predict_learning(
        DIAG, list(X), y, 3, eps=z0, lr=0.01
    )  # the same as per-mode eps
    np.testing.assert_allclose(
        same.switch_on_steps, fc.switch_on_steps, rtol=1e-12
    )


def test_a_growing_mode_missing_from_W0_never_switches_on_and_says_so():
    X, y = _diagonal_task(5)
    W0 = np.zeros((3, 2))
    W0[:2] = 1e-3 * np.random.default_rng(6).standard_normal(
        (2, 2)
    )  # coordinate 2 empty
    with pytest.warns(UserWarning, match="never switch on"):
        fc = predict_learning(DIAG, list(X), y, 3, W0=W0, lr=0.01)
    missing = int(
        np.argmax(np.abs(fc.modes[2]))
    )  # the mode that is coordinate 2
    assert not fc.switches_on[missing] and np.isinf(
        fc.switch_on_steps[missing]
    )
    assert (
        missing not in fc.order
        and fc.order.size == 2
        and fc.plateaus.size == 3
    )
    assert "never switch on" in str(fc) and f"[{missing}]" in str(fc)


def test_decaying_modes_are_marked_and_left_out_of_the_order():
    X, _ = _diagonal_task(7)
    Q = X / np.array([2.0, 1.5, 1.0])
    y = Q @ np.array(
        [0.9, -0.5, 0.2]
    )  # coordinate 1 has a negative rate: it decays
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # a decaying mode is no surprise: no warning
        fc = predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.01)
    r_hand = 8.0 / len(X) * X.T @ y  # (8/m) sum_mu x_mu,k y_mu
    decaying = int(np.argmax(np.abs(fc.modes[1])))
    assert (
        fc.rates[decaying] == pytest.approx(r_hand[1], abs=1e-12)
        and r_hand[1] < 0
    )
    assert not fc.switches_on[decaying] and np.isinf(
        fc.switch_on_times[decaying]
    )
    assert sorted(fc.order) == sorted(set(range(3)) - {decaying})
    assert fc.lr_max == pytest.approx(
        min(2 / r_hand.max(), 4 / -r_hand[1]), rel=1e-12
    )
    assert "never switch on" in str(fc)


# ------------------------------------------------------------------ the
# learning rate
def test_unstable_lr_warns_with_the_bound():
    X, y = _diagonal_task(8)
    fc = predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.01)
    bound = 2.0 / fc.rates.max()  # all rates positive here
    assert fc.lr_max == pytest.approx(bound, rel=1e-12)
    with pytest.warns(
        UserWarning,
        match=rf"lr = {1.01 * bound:.4g} is outside .* below {bound:.4g}",
    ):
        predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=1.01 * bound)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predict_learning(DIAG, list(X), y, 3, eps=1e-6, lr=0.99 * bound)


def test_stable_lr_counts_decaying_modes():
    assert stable_lr([1.0, -3.0]) == pytest.approx(4 / 3)
    assert stable_lr([4.0, -1.0]) == pytest.approx(0.5)
    assert stable_lr([0.0]) == np.inf
    with pytest.raises(ValueError, match="rates must hold"):
        stable_lr([])
    with pytest.raises(TypeError, match="complex"):
        stable_lr([1j])


SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(
    st.floats(0.2, 3.0),
    st.floats(0.3, 2.0),
    st.sampled_from([0.8, 0.95, 1.05, 1.3]),
)
def test_gradient_descent_converges_exactly_below_the_bound(lam, y1, factor):
    """One mode, two samples: GD on w (f = lam w^2) settles at z* below 2/r and
    never above it."""
    lams, ys = np.array([lam, 0.5 * lam]), np.array([y1, 0.3 * y1])
    nqf = NQF(lams[:, None, None])
    fc = _quiet(nqf, y=ys, eps=1e-6, lr=0.01)
    lr = factor * fc.lr_max
    w = 0.5 * np.sqrt(fc.saturation[0])
    for _ in range(
        4000
    ):  # L = (1/2) sum_n (lam_n w^2 - y_n)^2, written out by hand
        w -= (
            lr
            * float(np.sum(2.0 * (lams * w * w - ys) * 2.0 * lams * w))
            / 2.0
        )
        if not abs(w) < 1e6:
            break
    settled = abs(w * w - fc.saturation[0]) <= 1e-6 * fc.saturation[0]
    assert settled == (factor < 1)


# ------------------------------------------------------------------ validation
X6, Y6 = _diagonal_task()


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (
            dict(W0=np.ones((3, 2))),
            TypeError,
            "give the initial condition once",
        ),
        (dict(eps=None), TypeError, "give the initial condition once"),
        (
            dict(eps=None, W0=np.ones((4, 2))),
            ValueError,
            r"W0 must have shape \(p=3, d\)",
        ),
        (
            dict(eps=None, W0=np.ones((3, 2)) * 1j),
            TypeError,
            "W0 must be a real numeric array",
        ),
        (
            dict(eps=[1e-6, 1e-6]),
            ValueError,
            r"one value per mode, shape \(3,\)",
        ),
        (dict(eps=[1e-6, -1e-6, 1e-6]), ValueError, "eps must be >= 0"),
        (dict(eps=np.zeros(3)), ValueError, "no growing mode starts with z_k"),
        (dict(eps=1e-6 + 0j), TypeError, "eps must be a positive number"),
        (dict(lr=1j), TypeError, "lr must be a positive number"),
        (dict(lr=np.nan), ValueError, "lr must be finite"),
        (dict(y=Y6 + 0j), TypeError, "y must be a real numeric array"),
        (dict(y=None), TypeError, "y .* is required"),
        (dict(xs=None), TypeError, "xs must be a sequence"),
        (
            dict(units=[("a", 0)]),
            ValueError,
            "units applies to a torch.nn.Module",
        ),
    ],
)
def test_bad_arguments_are_named(kwargs, err, match):
    args = dict(f=DIAG, xs=list(X6), y=Y6, p=3, eps=1e-6, lr=0.01)
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(err, match=match):
            predict_learning(
                args.pop("f"),
                args.pop("xs"),
                args.pop("y"),
                args.pop("p"),
                **args,
            )


def test_nqf_and_model_arguments_are_checked():
    nqf = expand_dataset(DIAG, list(X6), 3)
    with pytest.raises(
        ValueError, match="xs must be left out when f is an NQF"
    ):
        predict_learning(nqf, list(X6), Y6, eps=1e-6, lr=0.01)
    with pytest.raises(ValueError, match="p must be left out"):
        predict_learning(nqf, y=Y6, p=3, eps=1e-6, lr=0.01)
    model = ar.MODELS["diagonal_square"]
    with pytest.raises(
        ValueError, match="p = 3 does not match the model 'diagonal_square'"
    ):
        predict_learning(model, [np.ones(4)], [1.0], 3, eps=1e-6, lr=0.01)
    with pytest.raises(
        ValueError, match="d must be left out for a registry model"
    ):
        predict_learning(model, [np.ones(4)], [1.0], d=2, eps=1e-6, lr=0.01)
    with pytest.raises(ValueError, match="x must have shape"):
        predict_learning(model, [np.ones(3)], [1.0], eps=1e-6, lr=0.01)


def test_forecast_methods_validate_their_arguments():
    fc = predict_learning(DIAG, list(X6), Y6, 3, eps=1e-6, lr=0.01)
    with pytest.raises(ValueError, match="t_max must be finite and > 0"):
        fc.staircase(-1.0)
    with pytest.raises(TypeError, match="W must be a real numeric array"):
        fc.abundances(np.ones((3, 2)) * 1j)
    with pytest.raises(ValueError, match="W contains NaN"):
        fc.abundances(np.full((3, 2), np.nan))
    np.testing.assert_allclose(
        fc.saturation, fc.rates / np.diag(fc.competition), rtol=1e-12
    )


@SETTINGS
@given(st.integers(0, 2**31), st.integers(1, 5), st.integers(1, 6))
def test_abundances_from_W0_add_up_to_its_norm(seed, p, d):
    """z_k(0) = p_k^T W0 W0^T p_k over an orthonormal basis of modes: sum_k z_k
    = |W0|_F^2, and each is >= 0."""
    rng = np.random.default_rng(seed)
    nqf = NQF(
        np.stack(
            [np.diag(v) for v in np.abs(rng.standard_normal((4, p))) + 0.1]
        )
    )
    W0 = 1e-3 * rng.standard_normal((p, d))
    fc = _quiet(nqf, y=np.ones(4), W0=W0, lr=1e-3)
    assert np.all(fc.z0 >= 0)
    assert fc.z0.sum() == pytest.approx(np.sum(W0**2), rel=1e-10)
    np.testing.assert_allclose(fc.abundances(W0), fc.z0, rtol=1e-10)


@SETTINGS
@given(st.sampled_from([np.nan, np.inf, -np.inf]), st.integers(0, 2))
def test_non_finite_initial_conditions_are_refused(bad, where):
    eps = np.full(3, 1e-6)
    eps[where] = bad
    with pytest.raises(ValueError, match="eps contains NaN or inf"):
        predict_learning(DIAG, list(X6), Y6, 3, eps=eps, lr=0.01)
    W0 = np.full((3, 2), 1e-3)
    W0[where, 1] = bad
    with pytest.raises(ValueError, match="W0 contains NaN or inf"):
        predict_learning(DIAG, list(X6), Y6, 3, W0=W0, lr=0.01)
