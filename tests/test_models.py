"""The six expansion models of Props. 1-6 as registered objects, and the
helpers that moved home.

Every model must honour the contract of :mod:`nqf_lite.expansion.models.base`:
``structure(x).A`` equals the autograd ``A`` of :func:`nqf_lite.expand`, and
``native(εW)`` minus the form falls like ``ε^remainder`` (Theorem 1).
"""

from __future__ import annotations

import pkgutil
import sys

import numpy as np
import pytest
import torch

import nqf_lite.expansion.models as ar
from nqf_lite import NQF, expand, moments, ntk_from_moments, random_nqf
from nqf_lite.expansion.form import frame_orthogonal_to_ones
from nqf_lite.dynamics.scaling import fit_loglog_slope
from nqf_lite.experiments.train import descend

MINE = {
    "mlp": "Prop. 1",
    "cnn": "Prop. 6",
    "mha": "Prop. 2",
    "qk": "Prop. 3",
    "logits": "Prop. 4",
    "moe": "Prop. 5",
}
EPS = np.logspace(-2.5, -1.0, 7)


def _form(s: ar.Structure, W: np.ndarray, eps: float) -> float:
    """``f0 + ε gᵀμ + ε² (μᵀBμ + Tr[M A])`` at ``εW``, written out
    independently of NQF."""
    M, mu = W @ W.T, W.sum(axis=1)
    g = 0.0 if s.g is None else float(s.g @ mu)
    B = 0.0 if s.B is None else float(mu @ s.B @ mu)
    return float(s.f0 + eps * g + eps**2 * (B + np.sum(M * s.A)))


def test_every_submodule_is_imported_and_registers():
    for info in pkgutil.iter_modules(ar.__path__):
        assert f"nqf_lite.expansion.models.{info.name}" in sys.modules
    assert set(MINE) <= set(ar.MODELS)
    with pytest.raises(ValueError, match="already registered"):
        ar.register(ar.TwoLayerMLP())


@pytest.mark.parametrize("name", sorted(MINE))
def test_model_metadata(name):
    model = ar.MODELS[name]
    assert model.name == name and model.title and MINE[name] in model.reference
    assert (
        model.exact is False
        and model.remainder == 4
        and model.neurons == "columns"
    )


@pytest.mark.parametrize("name", sorted(MINE))
def test_structure_equals_autograd_expansion(name):
    model = ar.MODELS[name]
    W, x = model.sample(np.random.default_rng(3))
    assert W.shape == (model.p, model.width)
    e = expand(model.native, x, model.p, d=W.shape[1])
    s = model.structure(x)
    assert s.A.shape == (model.p, model.p)
    assert np.max(np.abs(e.A - s.A)) <= 1e-10
    assert abs(float(e.f0) - s.f0) <= 1e-12  # f0 at the sampled width
    assert np.max(np.abs(e.g)) <= 1e-12 and np.max(np.abs(e.B)) <= 1e-12  # ZGZ


@pytest.mark.parametrize("name", sorted(MINE))
@pytest.mark.parametrize("seed", [0, 1])
def test_remainder_falls_with_the_predicted_power(name, seed):
    model = ar.MODELS[name]
    W, x = model.sample(np.random.default_rng(seed))
    s = model.structure(x)
    with torch.no_grad():
        err = [
            abs(float(model.native(e * W, x)) - _form(s, W, e)) for e in EPS
        ]
    slope = fit_loglog_slope(EPS, np.array(err), (EPS[0], EPS[-1])).slope
    assert abs(slope - model.remainder) < 0.15


@pytest.mark.parametrize("name", sorted(MINE))
def test_twin_is_the_stacked_structure(name):
    model = ar.MODELS[name]
    rng = np.random.default_rng(5)
    draws = [model.sample(rng) for _ in range(3)]
    twin = model.twin([x for _, x in draws])
    W = 1e-3 * draws[0][0]
    M, mu = moments(W)
    for n, (_, x) in enumerate(draws):
        s = model.structure(x)
        assert twin.predict(M, mu)[n] == pytest.approx(
            _form(s, W, 1.0), abs=1e-14
        )
        assert twin.predict(M, mu)[n] == pytest.approx(
            float(model.native(W, x)), abs=1e-9
        )


def test_torch_network_twins_equal_the_registered_closed_forms():
    """The batched networks' twin forwards are the closed forms A_mlp and
    A_cnn."""
    gen = torch.Generator().manual_seed(2)
    net = ar.TanhMLP(3, 4, V=1, sigma=0.5, seed=1)
    xs = torch.randn(5, 3, generator=gen)
    model = ar.TwoLayerMLP(k=3)
    want = model.twin(list(xs.numpy())).predict_W(net.units().numpy())
    assert (
        np.max(np.abs(net.twin()(xs).detach().numpy()[:, 0] - want)) <= 1e-12
    )

    cnn = ar.TanhCNN((3, 4), (2, 2), channels=3, V=1, sigma=0.5, seed=1)
    imgs = torch.randn(4, 3, 4, generator=gen)
    cmodel = ar.SingleLayerCNN(image=(3, 4), kernel=(2, 2))
    want = cmodel.twin(list(imgs.numpy())).predict_W(cnn.units().numpy())
    assert (
        np.max(np.abs(cnn.twin()(imgs).detach().numpy()[:, 0] - want)) <= 1e-12
    )


def test_twin_of_a_twin_is_refused():
    net = ar.TanhMLP(3, 2)
    with pytest.raises(TypeError, match="already a twin"):
        net.twin().twin()


def test_mlp_model_rejects_nonzero_phi0():
    with pytest.raises(ValueError, match="φ\\(0\\) = 0"):
        ar.TwoLayerMLP(act="sigmoid")


# ------------------------------------------------------------------ form.py
# helpers
@pytest.mark.parametrize("general", [False, True])
def test_ntk_from_moments_equals_autograd_kernel(general):
    model = random_nqf(
        6, 4, scale_g=0.7 * general, scale_B=0.5 * general, seed=3
    )
    W = np.random.default_rng(1).standard_normal((4, 9))
    A, B, g = (torch.tensor(a) for a in (model.A, model.B, model.g))

    def f(Wt):
        mu = Wt.sum(dim=1)
        return (
            g @ mu
            + torch.einsum("nij,i,j->n", B, mu, mu)
            + torch.einsum("nij,ik,jk->n", A, Wt, Wt)
        )

    J = (
        torch.autograd.functional.jacobian(f, torch.tensor(W))
        .reshape(model.m, -1)
        .numpy()
    )
    theta = ntk_from_moments(model, *moments(W), 9)
    assert np.max(np.abs(theta - J @ J.T)) <= 1e-12 * np.max(np.abs(J @ J.T))


def test_ntk_from_moments_bad_input():
    model = random_nqf(3, 2, seed=0)
    with pytest.raises(TypeError, match="nqf must be an NQF"):
        ntk_from_moments("x", np.eye(2), np.zeros(2), 3)
    with pytest.raises(ValueError, match="scalar output"):
        ntk_from_moments(
            random_nqf(3, 2, V=2, seed=0), np.eye(2), np.zeros(2), 3
        )
    with pytest.raises(ValueError, match="M must have shape"):
        ntk_from_moments(model, np.eye(3), np.zeros(2), 3)
    with pytest.raises(TypeError, match="d must be a positive integer"):
        ntk_from_moments(model, np.eye(2), np.zeros(2), 2.5)


@pytest.mark.parametrize("rng", [None, 4])
def test_frame_orthogonal_to_ones(rng):
    F = frame_orthogonal_to_ones(6, rng)
    assert F.shape == (6, 5)
    assert np.allclose(F.T @ F, np.eye(5), atol=1e-13)
    assert np.max(np.abs(F.T @ np.ones(6))) <= 1e-13
    with pytest.raises(ValueError, match="d must be >= 1"):
        frame_orthogonal_to_ones(0)


def test_rotation_in_the_frame_keeps_the_moments():
    """``W O`` with ``O = 11ᵀ/d + F R Fᵀ`` has the moments of ``W`` (Theorem
    2's symmetry)."""
    rng = np.random.default_rng(8)
    d = 7
    F = frame_orthogonal_to_ones(d, rng)
    R = np.linalg.qr(rng.standard_normal((d - 1, d - 1)))[0]
    O = np.ones((d, d)) / d + F @ R @ F.T
    W = rng.standard_normal((3, d))
    for a, b in zip(moments(W @ O), moments(W)):
        assert np.max(np.abs(a - b)) <= 1e-12
    assert np.max(np.abs(O - np.eye(d))) > 0.1  # not the identity


# ------------------------------------------------------------------
# train.descend
def test_descend_gd_on_a_quadratic_has_the_closed_form():
    T = np.array([[1.0, -2.0], [0.5, 3.0]])
    W0 = np.zeros((2, 2))
    seen = []
    W = descend(
        W0,
        lambda W: 0.5 * ((W - torch.tensor(T)) ** 2).sum(),
        0.1,
        20,
        callback=lambda t, W: seen.append(t),
    )
    assert np.allclose(W, T + 0.9**20 * (W0 - T), atol=1e-14)
    assert seen == list(range(1, 21)) and np.all(W0 == 0)


def test_descend_momentum_is_the_heavy_ball_recursion():
    T = np.array([2.0, -1.0])
    W = descend(
        np.zeros(2),
        lambda W: 0.5 * ((W - torch.tensor(T)) ** 2).sum(),
        0.05,
        15,
        name="momentum",
    )
    w, buf = np.zeros(2), np.zeros(2)
    for t in range(15):
        grad = w - T
        buf = grad if t == 0 else 0.9 * buf + grad
        w = w - 0.05 * buf
    assert np.allclose(W, w, atol=1e-14)


def test_descend_bad_input_and_divergence():
    loss = lambda W: (W**2).sum()  # noqa: E731
    with pytest.raises(ValueError, match=r"the optimizer\) must be one of"):
        descend(np.ones(2), loss, 0.1, 3, name="sgd")
    with pytest.raises(ValueError, match="lr"):
        descend(np.ones(2), loss, -0.1, 3)
    with pytest.raises(TypeError, match="loss must be callable"):
        descend(np.ones(2), 3.0, 0.1, 3)
    with pytest.raises(FloatingPointError, match="diverged"):
        descend(np.ones(2), lambda W: (W**4).sum() * 1e300, 1e300, 50)


def test_descend_reports_divergence_on_the_last_step():
    """One step whose update is finite but whose loss at the new weights is
    not, and one whose update overflows."""
    with pytest.raises(
        FloatingPointError, match=r"at step 1 \(the last\) \(non-finite loss"
    ):
        descend(
            np.zeros(1), lambda W: -torch.exp(W).sum(), 1000.0, 1
        )  # W: 0 -> 1000, loss -e^1000
    with pytest.raises(
        FloatingPointError, match="at step 1 .*non-finite weights"
    ):
        descend(
            np.full(1, 1e308), lambda W: -W.sum(), 1e308, 1
        )  # loss -1e308, then W = inf
    W = descend(
        np.zeros(1), lambda W: -torch.exp(W).sum(), 1.0, 1
    )  # a finite last step passes
    assert W == pytest.approx([1.0])


def test_descend_refuses_inputs_that_are_not_real_weights_and_losses():
    loss = lambda W: (W**2).sum()  # noqa: E731
    with pytest.raises(
        TypeError, match="W must be a real numeric array, got a complex array"
    ):
        descend(np.ones(2) + 1j, loss, 0.1, 3)
    with pytest.raises(
        TypeError, match="W must be a real numeric array, got a bool array"
    ):
        descend(np.ones(2, dtype=bool), loss, 0.1, 3)
    with pytest.raises(ValueError, match="W contains NaN"):
        descend(np.array([1.0, np.nan]), loss, 0.1, 3)
    with pytest.raises(ValueError, match="W must hold at least one weight"):
        descend(np.zeros(0), loss, 0.1, 3)
    with pytest.raises(
        TypeError,
        match=r"loss\(W\) must return a real scalar tensor, got float",
    ):
        descend(np.ones(2), lambda W: 1.0, 0.1, 3)
    with pytest.raises(
        TypeError,
        match=r"loss\(W\) must return a real scalar tensor, got a "
        r"torch.float64 tensor of shape \(2,\)",
    ):
        descend(np.ones(2), lambda W: W**2, 0.1, 3)
    with pytest.raises(TypeError, match=r"lr must be a positive number"):
        descend(np.ones(2), loss, True, 3)


def test_nqf_is_importable_from_its_one_home():
    assert NQF.__module__ == "nqf_lite.expansion.form"
    assert expand.__module__ == "nqf_lite.expansion.autograd"
