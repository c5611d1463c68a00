"""Every registered model at sizes other than its default (``MODELS.make``),
and its input validation.

For each model and two non-default sizes the closed form is checked against an
independent computation: for an exact model ``native(W, x)`` against ``f0 + gᵀμ
+ μᵀBμ + Tr[M A]`` with ``M = W Wᵀ`` and ``μ = W 1`` formed in NumPy (to
1e-12); for an expansion model ``structure(x).A`` (and ``g``, ``B``, ``f0``)
against torch autograd through
:func:`nqf_lite.expand`, which never sees
the closed form.  Then the misuse: unknown names, sizes out of range,
``sample(0)``, and inputs that ``native`` rejects must be rejected by
``structure`` in the same way (and vice versa).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nqf_lite.expansion.models  # noqa: F401  (registers every family)
from nqf_lite import expand
from nqf_lite.expansion.models.base import MODELS, Model, Registry

NAMES = sorted(MODELS)


def _shifted(model: Model, j: int) -> dict:
    """Every integer size (and pair of sizes) of ``model`` increased by
    ``j``."""
    out = {}
    for key, value in model.sizes.items():
        if isinstance(value, (bool, str, np.ndarray)) or value is None:
            continue
        if isinstance(value, (int, np.integer)):
            out[key] = int(value) + j
        elif isinstance(value, tuple) and all(
            isinstance(v, int) for v in value
        ):
            out[key] = tuple(v + j for v in value)
    return out


def _cols(model: Model):
    return lambda W, x: model.native(
        W if model.neurons == "columns" else W.T, x
    )


def _form(model: Model, W: np.ndarray, x: object) -> np.ndarray:
    s = model.structure(x)
    Wc = W if model.neurons == "columns" else W.T
    M, mu = Wc @ Wc.T, Wc.sum(axis=1)
    out = s.f0 + np.einsum("...ij,ij->...", s.A, M)
    if s.g is not None:
        out = out + s.g @ mu
    if s.B is not None:
        out = out + np.einsum("...ij,i,j->...", s.B, mu, mu)
    return out


def _native(model: Model, W: np.ndarray, x: object) -> np.ndarray:
    with torch.no_grad():
        return model.native(W, x).numpy()


# ------------------------------------------------------------------ models of
# any size
@pytest.mark.parametrize("j", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_every_model_at_other_sizes_keeps_its_closed_form(name, j):
    base = MODELS[name]
    sizes = _shifted(base, j)
    assert sizes, f"{name} has no integer size to change"
    model = MODELS.make(name, **sizes)
    assert (
        type(model) is type(base) and model.name == name and model is not base
    )
    assert all(model.sizes[k] == v for k, v in sizes.items())
    assert MODELS[name] is base  # the registry keeps the default instance
    rng = np.random.default_rng([11, j, len(name)])
    for _ in range(2):
        W, x = model.sample(rng)
        assert (
            W.shape[0] if model.neurons == "columns" else W.shape[1]
        ) == model.p
        if model.exact:
            f, q = _native(model, W, x), _form(model, W, x)
            assert np.max(np.abs(f - q)) <= 1e-12 * (1.0 + np.max(np.abs(f)))
        else:
            d = W.shape[1] if model.neurons == "columns" else W.shape[0]
            e = expand(_cols(model), x, model.p, d=d)
            s = model.structure(x)
            assert s.A.shape == e.A.shape == (model.p, model.p)
            np.testing.assert_allclose(s.A, e.A, rtol=0, atol=1e-10)
            np.testing.assert_allclose(
                0.0 if s.g is None else s.g, e.g, rtol=0, atol=1e-10
            )
            np.testing.assert_allclose(
                0.0 if s.B is None else s.B, e.B, rtol=0, atol=1e-10
            )
            assert abs(float(s.f0) - float(e.f0)) <= 1e-10


def test_sizes_change_the_parameter_count_as_the_layout_says():
    assert MODELS.make("mlp", k=7).p == 8  # [u (k); v (1)]
    assert MODELS.make("mha", D=4, d_k=3, d_v=2).p == 2 * 3 * 4 + 2 * 4 + 2
    assert MODELS.make("cnn", kernel=(3, 2)).p == 3 * 2 + 1
    assert MODELS.make("rectangular_sensing", n1=2, n2=5).p == 7
    assert MODELS.make("linear_attention", D=6).p == 6
    assert MODELS.make("mlp", width=5).sample(np.random.default_rng(0))[
        0
    ].shape == (4, 5)


def test_resized_keeps_the_other_sizes_and_the_activation():
    m = MODELS.make("mlp", k=5, act="erf")
    m2 = m.resized(width=4)
    assert (m2.k, m2.act, m2.width) == (5, "erf", 4)
    assert m2.remainder == 4 and not m2.exact
    assert (
        MODELS.make("mlp", act="gelu").remainder == 3
    )  # gelu is not odd: f(-W) != f(W)
    assert MODELS.make(
        "mlp", act="identity"
    ).exact  # linear in each factor: exactly its NQF


def test_default_readout_follows_the_token_dimension():
    m = MODELS.make("tied_query_key", D=5)
    np.testing.assert_array_equal(m.c, np.linspace(1.0, -1.0, 5))
    with pytest.raises(ValueError, match="c must have shape"):
        MODELS.make("tied_query_key", D=5, c=np.ones(3))


# ------------------------------------------------------------------ misuse of
# the registry
def test_registry_is_a_dict_that_names_the_valid_keys():
    assert isinstance(MODELS, Registry) and isinstance(MODELS, dict)
    with pytest.raises(KeyError, match="no model named 'mpl'.*'mlp'"):
        MODELS["mpl"]
    with pytest.raises(KeyError, match="registered models are"):
        MODELS.make("transformer", D=3)
    with pytest.raises(TypeError, match="name must be a model name"):
        MODELS.make(3)
    assert (
        MODELS.get("mpl") is None and "mlp" in MODELS
    )  # plain dict behaviour otherwise


@pytest.mark.parametrize("name", NAMES)
def test_bad_sizes_name_the_size_and_its_range(name):
    model = MODELS[name]
    for key, value in _shifted(model, 0).items():
        bad_int = (0, 0) if isinstance(value, tuple) else 0
        with pytest.raises(
            ValueError, match=rf"{key}(\[0\])? must be a positive integer"
        ):
            model.resized(**{key: bad_int})
        with pytest.raises(TypeError, match=key):
            model.resized(
                **{key: 1.5 if not isinstance(value, tuple) else (1.5, 2)}
            )
        with pytest.raises(TypeError, match=key):
            model.resized(
                **{key: True if not isinstance(value, tuple) else "ab"}
            )
    with pytest.raises(
        TypeError, match=r"has no size 'depth'; its sizes are \["
    ):
        model.resized(depth=2)


def test_cnn_kernel_must_fit_the_image():
    with pytest.raises(
        ValueError, match=r"kernel \(4, 2\) must fit inside image \(3, 4\)"
    ):
        MODELS.make("cnn", kernel=(4, 2))
    with pytest.raises(TypeError, match="image must be a pair"):
        MODELS.make("cnn", image=5)


def test_mlp_activation_is_checked():
    with pytest.raises(ValueError, match="act must be an activation name"):
        MODELS.make("mlp", act="swish")
    with pytest.raises(TypeError, match="act must be an activation name"):
        MODELS.make("mlp", act=torch.tanh)
    with pytest.raises(ValueError, match="differentiable at 0"):
        MODELS.make("mlp", act="relu")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "rng",
    [0, None, "seed", np.random.SeedSequence(0)],
    ids=["int", "None", "str", "SeedSequence"],
)
def test_sample_needs_a_generator(name, rng):
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        MODELS[name].sample(rng)


# ------------------------------------------------------------------ one
# validation for native and structure
def _mutations(x: object):
    """Inputs near a valid one: wrong sizes, wrong kinds, non-finite entries,
    also inside tuples."""
    if isinstance(x, np.ndarray):
        yield (
            np.append(x.ravel(), 1.0).reshape(-1)
            if x.ndim == 1
            else np.pad(x, ((0, 1), (0, 0)))
        )
        yield x[:-1] if x.shape[0] > 1 else np.zeros((0,) + x.shape[1:])
        yield x[None]
        yield np.where(np.arange(x.size).reshape(x.shape) == 0, np.nan, x)
        yield x + 1j
        yield x > 0
        yield "x"
        yield None
    elif isinstance(x, (tuple, list)):
        yield list(x)[:-1]
        yield tuple(x) + (x[0],)
        for i, part in enumerate(x):
            for bad in (
                _mutations(part)
                if isinstance(part, np.ndarray)
                else (
                    [-1, len(x) + 100, 1.5, True, None]
                    if isinstance(part, int)
                    else []
                )
            ):
                yield tuple(bad if k == i else p for k, p in enumerate(x))


def _outcome(fn, *args) -> str:
    try:
        fn(*args)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__
    return "ok"


@pytest.mark.parametrize("name", NAMES)
def test_structure_validates_x_exactly_as_native(name):
    model = MODELS[name]
    W, x = model.sample(np.random.default_rng(5))
    n_bad = 0
    for bad in _mutations(x):
        got_native = _outcome(model.native, W, bad)
        got_structure = _outcome(model.structure, bad)
        assert got_native == got_structure, (bad, got_native, got_structure)
        assert got_native == _outcome(model.check_input, bad)
        n_bad += got_native != "ok"
    assert n_bad >= 4  # the mutations do exercise the validation


def test_mlp_structure_refuses_the_input_native_refuses():
    """Before, structure(x) of a 3-input MLP accepted a 5-vector and built a
    twin of the wrong size."""
    model = MODELS["mlp"]
    with pytest.raises(
        ValueError, match=r"x must be a vector of shape \(3,\)"
    ):
        model.structure(np.ones(5))
    with pytest.raises(
        ValueError, match=r"x must be a vector of shape \(3,\)"
    ):
        model.twin([np.ones(3), np.ones(5)])
    with pytest.raises(TypeError, match="xs must be a list of inputs"):
        model.twin(np.float64(3.0))


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_validated_by_every_model(name):
    model = MODELS[name]
    W, x = model.sample(np.random.default_rng(2))
    bad_nan = W.copy()
    bad_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="W contains NaN or inf"):
        model.native(bad_nan, x)
    with pytest.raises(TypeError, match="W must be a real numeric"):
        model.native(W + 1j, x)
    with pytest.raises(TypeError, match="W must be a real numeric"):
        model.native(torch.as_tensor(W) > 0, x)
    with pytest.raises(ValueError, match="W must have shape"):
        model.native(W[:-1] if model.neurons == "columns" else W[:, :-1], x)
    # gradients flow through validated weights
    Wt = torch.tensor(W, requires_grad=True)
    (grad,) = torch.autograd.grad(model.native(Wt, x).sum(), Wt)
    assert grad.shape == Wt.shape and torch.isfinite(grad).all()
