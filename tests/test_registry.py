"""Generic tests over every registered model (Table 3 and Props. 1-6).

The registry is filled at collection time by importing every submodule of
``nqf_lite.expansion.models`` (found with pkgutil), so a newly added family is
covered without editing this file.  Each model is checked against
independent computations: its own torch forward (``native``), torch autograd
(through :func:`nqf_lite.expand`, which never sees the closed form) and plain
NumPy algebra for ``M = W Wᵀ``.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import numpy as np
import pytest
import torch

import nqf_lite.expansion.models as arch
from nqf_lite import expand
from nqf_lite.expansion.models.base import MODELS, Model

for _info in pkgutil.iter_modules(arch.__path__):
    importlib.import_module(f"{arch.__name__}.{_info.name}")

NAMES = sorted(MODELS)
EXACT = [n for n in NAMES if MODELS[n].exact]
LEADING = [n for n in NAMES if not MODELS[n].exact]
DRAWS = 3


def _draws(name: str, n: int = DRAWS) -> list[tuple[np.ndarray, object]]:
    rng = np.random.default_rng([7, len(name), sum(map(ord, name))])
    return [MODELS[name].sample(rng) for _ in range(n)]


def _cols(model: Model):
    """The model as ``f(W, x)`` with neurons as columns, as :func:`expand`
    wants it."""
    return lambda W, x: model.native(
        W if model.neurons == "columns" else W.T, x
    )


def _f(model: Model, W: np.ndarray, x: object) -> np.ndarray:
    with torch.no_grad():
        return model.native(torch.as_tensor(W, dtype=torch.float64), x).numpy()


def _quadratic_form(
    model: Model, W: np.ndarray, x: object, scale: float = 1.0
) -> np.ndarray:
    """``f0 + gᵀμ + μᵀBμ + Tr[M A]`` at ``scale·W``, with M and μ from plain
    NumPy."""
    s = model.structure(x)
    Wc = scale * (W if model.neurons == "columns" else W.T)
    M, mu = Wc @ Wc.T, Wc.sum(axis=1)
    out = s.f0 + np.einsum("...ij,ij->...", s.A, M)
    if s.g is not None:
        out = out + s.g @ mu
    if s.B is not None:
        out = out + np.einsum("...ij,i,j->...", s.B, mu, mu)
    return out


def test_registry_is_populated_and_consistent():
    assert len(MODELS) >= 11
    for key, model in MODELS.items():
        assert model.name == key
    rows = [
        int(m.group(1))
        for m in (
            re.search(r"Table 3, row (\d+)", v.reference)
            for v in MODELS.values()
        )
        if m
    ]
    assert len(rows) == len(set(rows)), (
        f"two models cite the same Table 3 row: {sorted(rows)}"
    )
    assert all(1 <= r <= 16 for r in rows), rows


@pytest.mark.parametrize("name", NAMES)
def test_metadata(name):
    model = MODELS[name]
    assert re.fullmatch(r"[a-z][a-z0-9_]*", model.name)
    assert model.neurons in ("columns", "rows")
    assert isinstance(model.exact, bool)
    assert model.title.strip() and model.reference.strip()
    assert isinstance(model.p, int) and model.p >= 1
    W, _ = model.sample(np.random.default_rng(0))
    axis = 0 if model.neurons == "columns" else 1
    assert W.ndim == 2 and W.shape[axis] == model.p
    np.testing.assert_array_equal(model.columns(W), W if axis == 0 else W.T)


@pytest.mark.parametrize("name", EXACT)
def test_exact_models_are_their_quadratic_form(name):
    model = MODELS[name]
    for W, x in _draws(name):
        f = _f(model, W, x)
        q = _quadratic_form(model, W, x)
        assert np.max(np.abs(f - q)) <= 1e-12 * (1.0 + np.max(np.abs(f)))


@pytest.mark.parametrize("name", EXACT)
def test_exact_models_train_like_their_twin(name):
    """Torch GD on ``native`` and the twin's explicit GD (Eq. 21) give the same
    predictions."""
    model = MODELS[name]
    draws = _draws(name, 4)
    xs = [x for _, x in draws]
    W0 = 0.5 * draws[0][0]
    twin = model.twin(xs)
    y = np.random.default_rng(3).standard_normal(
        (len(xs),) + np.shape(twin.f0)[1:]
    )
    lr, steps = 0.01, 6
    _, preds_twin = twin.train(model.columns(W0), y, lr, steps)

    W = torch.tensor(W0, dtype=torch.float64, requires_grad=True)
    yt = torch.as_tensor(y)
    preds = []
    for t in range(steps + 1):
        out = torch.stack([model.native(W, x) for x in xs])
        preds.append(out.detach().numpy().copy())
        if t == steps:
            break
        loss = ((out - yt) ** 2).sum() / len(xs)
        (grad,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W -= lr * grad
    preds = np.array(preds)
    assert np.max(np.abs(preds[-1] - preds[0])) > 1e-4  # training moved
    np.testing.assert_allclose(preds, preds_twin, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", LEADING)
def test_leading_order_error_slope(name):
    """``|f(εW) − NQF(εW)| ∝ ε^k`` with k = 3 (Thm 1), or 4 when ``f(−W) =
    f(W)`` (Remark after Thm 1)."""
    model = MODELS[name]
    for W, x in _draws(name, 2):
        even = np.max(np.abs(_f(model, -W, x) - _f(model, W, x))) <= 1e-12 * (
            1 + np.max(np.abs(_f(model, W, x)))
        )
        order = 4 if even else 3
        eps = np.geomspace(1e-3, 1e-2, 5)
        err = np.array(
            [
                np.max(
                    np.abs(
                        _f(model, e * W, x) - _quadratic_form(model, W, x, e)
                    )
                )
                for e in eps
            ]
        )
        assert np.all(err > 0)
        slope = np.polyfit(np.log(eps), np.log(err), 1)[0]
        assert abs(slope - order) <= 0.2, (slope, order)
        # and the quadratic term is really there: dropping Tr[M A] leaves a
        # second-order error
        s = model.structure(x)
        if s.g is None and s.B is None:
            err2 = np.array(
                [np.max(np.abs(_f(model, e * W, x) - s.f0)) for e in eps]
            )
            assert abs(np.polyfit(np.log(eps), np.log(err2), 1)[0] - 2) <= 0.2


@pytest.mark.parametrize("name", NAMES)
def test_structure_matches_autograd(name):
    """The closed form ``(A, g, B)`` equals torch autograd's Taylor
    coefficients; ``f0 = f(0)``."""
    model = MODELS[name]
    for W, x in _draws(name, 2):
        s = model.structure(x)
        A = np.asarray(s.A)
        assert A.shape[-2:] == (model.p, model.p)
        np.testing.assert_array_equal(A, np.swapaxes(A, -1, -2))
        e = expand(_cols(model), x, model.p, d=2)
        np.testing.assert_allclose(A, e.A, rtol=0, atol=1e-10)
        g = np.zeros_like(e.g) if s.g is None else s.g
        B = np.zeros_like(e.B) if s.B is None else s.B
        np.testing.assert_allclose(g, e.g, rtol=0, atol=1e-10)
        np.testing.assert_allclose(B, e.B, rtol=0, atol=1e-10)
        # f0 is f(0) at the sampled width (it may grow with d, e.g. d·φ(0))
        np.testing.assert_allclose(
            s.f0, _f(model, np.zeros_like(W), x), rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("name", NAMES)
def test_native_is_permutation_symmetric(name):
    model = MODELS[name]
    W, x = _draws(name, 1)[0]
    axis = 1 if model.neurons == "columns" else 0
    perm = np.roll(np.arange(W.shape[axis]), 1)
    Wp = W[:, perm] if axis == 1 else W[perm]
    np.testing.assert_allclose(
        _f(model, Wp, x), _f(model, W, x), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize(
    "name", sorted(n for n in MODELS if not MODELS[n].exact)
)
def test_every_expansion_model_leaves_out_a_term_of_its_stated_order(name):
    """native(εW) minus its quadratic form falls like ε^remainder (Theorem 1),
    for every model."""
    import torch

    from nqf_lite.dynamics.scaling import fit_loglog_slope

    model = MODELS[name]
    eps = np.logspace(-2.5, -1, 7)
    slopes = []
    for seed in (0, 1):
        W, x = model.sample(np.random.default_rng(seed))
        s = model.structure(x)
        C = model.columns(W)
        M, mu = C @ C.T, C.sum(1)
        A = np.asarray(s.A, dtype=float)
        g = (
            np.zeros(A.shape[:-1])
            if s.g is None
            else np.asarray(s.g, dtype=float)
        )
        B = np.zeros(A.shape) if s.B is None else np.asarray(s.B, dtype=float)
        g, B = np.broadcast_to(g, A.shape[:-1]), np.broadcast_to(B, A.shape)
        err = []
        for e in eps:
            with torch.no_grad():
                out = np.asarray(
                    model.native(torch.as_tensor(e * W), x), dtype=float
                )
            quad = (
                np.asarray(s.f0)
                + e * (g @ mu)
                + e**2
                * (
                    np.einsum("...ij,i,j->...", B, mu, mu)
                    + np.einsum("...ij,ij->...", A, M)
                )
            )
            err.append(np.max(np.abs(out - quad)))
        slopes.append(
            fit_loglog_slope(eps, np.array(err), (eps[0], eps[-1])).slope
        )
    assert (
        min(slopes) > model.remainder - 0.15
        and max(slopes) < model.remainder + 0.15
    ), slopes
