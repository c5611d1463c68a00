"""Fuzz: no silent answers from the models, deep NQFs, exact solutions,
scaling, momentum, higher orders and trainers.

Table-driven: every public function of these modules has one valid call below;
each argument in turn is replaced by a bad value (NaN, inf, a complex number or
array, a bool array, a string, ``None``, an empty array).  Every such call must
raise ``TypeError``/``ValueError`` whose message names the argument (complex
values must never be cast with a warning), or, for an empty array, return a
finite result.  Unstable step sizes must raise a divergence error, including
when the divergence happens on the last step.  Property tests (hypothesis)
cover the validators added for these modules.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nqf_lite.expansion.models  # noqa: F401  (registers every family)
from nqf_lite.deep import deep_nqf as DP
from nqf_lite.deep import higher_order as HO
from nqf_lite.dynamics import momentum as MO
from nqf_lite.dynamics import scaling as SC
from nqf_lite.dynamics import solvable as S
from nqf_lite.experiments import teacher
from nqf_lite.experiments import train as TR
from nqf_lite.expansion.models import attention as AT
from nqf_lite.expansion.models import blocks as BL
from nqf_lite.expansion.models import cnn as CN
from nqf_lite.expansion.models import fourier as FO
from nqf_lite.experiments import fourier as FX
from nqf_lite.expansion.models import mlp as ML
from nqf_lite.expansion.models import moe as MOE
from nqf_lite.expansion.models.base import MODELS, as_weights
from nqf_lite.expansion.form import NQF

F64 = torch.float64
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _r(*shape, seed=0):
    return np.random.default_rng([seed, *shape]).standard_normal(shape)


# ------------------------------------------------------------------ the table
# of valid calls
def _cases():
    t = np.linspace(0, 2, 5)
    r, C, z0 = (
        np.array([1.0, 0.5]),
        np.diag([2.0, 1.0]),
        np.array([0.01, 0.02]),
    )
    A = np.stack(
        [np.diag([1.0, 0.0]), np.diag([0.0, 1.0]), np.diag([0.5, 0.5])]
    )
    y3 = np.array([1.0, 0.5, -0.2])
    lam = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    M0 = np.array([[0.1, 0.02], [0.02, 0.05]])
    nqf = NQF(
        np.stack([np.eye(3), np.diag([1.0, 0, 0])]), g=0.1 * np.ones((2, 3))
    )
    W32 = 0.1 * np.arange(6.0).reshape(3, 2)
    Vel = 0.01 * np.ones((3, 2))
    _, psi = FO.fourier_features(16, 3)
    s3, a3, w3 = (
        np.array([1.0, 0.5, 0.3]),
        np.array([0.1, 0.2, 0.1]),
        np.array([0.1, -0.1, 0.2]),
    )
    x3, X34 = np.array([0.3, -1.0, 0.5]), _r(3, 4)
    form = HO.NeuralForm(np.zeros(2), [np.ones((2, 2)), np.ones((2, 2, 2))])
    model = DP.DeepNQF([DP.MLPLayer(3, 4), DP.MLPLayer(4, 2, act=torch.tanh)])
    gen = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(5, 3, generator=gen, dtype=F64),
        torch.randn(5, 2, generator=gen, dtype=F64),
    )
    Ws = [
        0.3 * torch.randn(7, 6, generator=gen, dtype=F64),
        0.3 * torch.randn(6, 5, generator=gen, dtype=F64),
    ]
    Ms, mus = DP.deep_moments(Ws)
    w52 = torch.ones(5, 2, dtype=F64)
    net = ML.TanhMLP(3, 4, V=2, sigma=0.1)
    cases = [
        (
            "feature_trajectory",
            S.feature_trajectory,
            dict(t=t, r=r, C=C, z0=z0),
        ),
        ("saxe_logistic", S.saxe_logistic, dict(t=t, tau=r, c=0.5, rho0=0.01)),
        ("switch_on_time", S.switch_on_time, dict(r=r, C=C, eps=1e-3)),
        (
            "switch_on_time_exact",
            S.switch_on_time_exact,
            dict(r=r, C=C, z0=z0, rho=0.5),
        ),
        ("excess_loss", S.excess_loss, dict(z=z0, r=r, C=C)),
        (
            "crossing_time",
            S.crossing_time,
            dict(t=t, x=np.linspace(0, 1, 5), level=0.5, rising=True),
        ),
        (
            "common_eigenbasis",
            S.common_eigenbasis,
            dict(A=A, rtol=1e-10, seed=0),
        ),
        (
            "glv_integrate",
            S.glv_integrate,
            dict(
                t=t,
                r=r,
                C=np.array([[2.0, 0.1], [0.1, 1.0]]),
                z0=z0,
                rtol=1e-8,
            ),
        ),
        (
            "gd_nqf",
            S.gd_nqf,
            dict(
                A=A,
                y=y3,
                W0=0.1 * np.ones((2, 3)),
                lr=0.01,
                n_steps=10,
                every=2,
            ),
        ),
        ("matrix_flow", S.matrix_flow, dict(t=t, A=A, y=y3, M0=M0, rtol=1e-8)),
        (
            "proportional_samples_xi",
            S.proportional_samples_xi,
            dict(t=t, lam=r, z0=z0, alpha=1.0, beta=0.5, rtol=1e-8),
        ),
        (
            "orthogonal_samples_xi",
            S.orthogonal_samples_xi,
            dict(t=t, lam=np.eye(2), y=r, z0=z0, rtol=1e-8),
        ),
        (
            "orthogonal_samples_z",
            S.orthogonal_samples_z,
            dict(xi=np.ones((5, 2)), lam=np.eye(2), z0=z0),
        ),
        (
            "isotropic_trajectory",
            S.isotropic_trajectory,
            dict(t=t, Y=np.array([[1.0, 0.2], [0.2, -0.3]]), c=0.5, M0=M0),
        ),
        ("glv_coefficients", S.glv_coefficients, dict(lam=lam, y=y3)),
        (
            "effective_slope",
            SC.effective_slope,
            dict(alpha1=1.5, alpha2=1.2, r=r, C=C, eps=1e-3),
        ),
        (
            "effective_slope_at_time",
            SC.effective_slope_at_time,
            dict(t=np.array([10.0, 100.0]), alpha1=1.5, alpha2=1.2, eps=1e-3),
        ),
        (
            "fit_loglog_slopes",
            SC.fit_loglog_slopes,
            dict(
                t=np.geomspace(1, 100, 30),
                L=np.stack([np.geomspace(1, 100, 30) ** -1.5] * 2, 1),
                windows=[(2.0, 50.0), (3.0, 40.0)],
                n=20,
            ),
        ),
        (
            "powerlaw_modes",
            SC.powerlaw_modes,
            dict(m=10, alpha1=1.5, alpha2=1.2),
        ),
        (
            "onehot_quadratic_gd",
            SC.onehot_quadratic_gd,
            dict(
                a=np.array([1.0, 0.5]),
                y=np.array([1.0, 0.3]),
                W0=0.01 * np.ones((2, 3)),
                lr=0.1,
                n_steps=10,
            ),
        ),
        (
            "MomentumState.from_W",
            MO.MomentumState.from_W,
            dict(W=W32, Vel=Vel),
        ),
        (
            "heavy_ball_step",
            MO.heavy_ball_step,
            dict(
                model=nqf,
                W=W32,
                Vel=Vel,
                y=np.array([1.0, -0.5]),
                lr=0.1,
                beta=0.9,
            ),
        ),
        (
            "adam_step",
            MO.adam_step,
            dict(
                model=nqf,
                W=W32,
                state=MO.AdamState.zeros_like(W32),
                y=np.array([1.0, -0.5]),
                lr=0.1,
            ),
        ),
        (
            "theorem13",
            HO.theorem13,
            dict(
                f=lambda W, x: (W[2] * torch.tanh(x @ W[:2])).sum(),
                x=torch.tensor([0.3, -0.2], dtype=F64),
                p=3,
                order=2,
                d=2,
                check=True,
            ),
        ),
        (
            "NeuralForm",
            HO.NeuralForm,
            dict(f0=np.zeros(2), T=[np.ones((2, 2)), np.ones((2, 2, 2))]),
        ),
        (
            "NeuralForm.train",
            form.train,
            dict(
                W0=0.1 * np.ones((2, 3)),
                y=np.array([0.1, 0.2]),
                lr=0.1,
                n_steps=5,
            ),
        ),
        (
            "descend",
            TR.descend,
            dict(
                W=np.ones(3),
                loss=lambda W: (W**2).sum(),
                lr=0.1,
                steps=5,
                name="gd",
            ),
        ),
        (
            "optimizer",
            TR.optimizer,
            dict(
                name="adam",
                params=[torch.zeros(2, requires_grad=True)],
                lr=0.1,
            ),
        ),
        (
            "teacher_map",
            teacher.teacher_map,
            dict(D_in=5, V=4, s=(1.0, 0.5), seed=0),
        ),
        (
            "teacher_task",
            teacher.teacher_task,
            dict(
                arch="mlp",
                sigma=0.01,
                m=30,
                token_scale=0.4,
                readout_scale=8.0,
            ),
        ),
        (
            "fourier_mlp",
            FO.fourier_mlp,
            dict(a=a3, W=w3, s=s3, psi=psi, scale=1.0),
        ),
        (
            "fourier_nqf_structure",
            FO.fourier_nqf_structure,
            dict(s=s3, psi=psi, scale=1.0),
        ),
        (
            "train_fourier",
            FX.train_fourier,
            dict(a0=a3, W0=w3, s=s3, psi=psi, y=psi @ s3, lr=0.1, n_steps=5),
        ),
        (
            "train_tanh_mlp",
            FX.train_tanh_mlp,
            dict(
                u0=a3,
                v0=w3,
                x=np.linspace(0, 1, 16),
                y=np.cos(np.linspace(0, 1, 16)),
                lr=0.1,
                n_steps=5,
            ),
        ),
        (
            "feedforward_blocks",
            BL.feedforward_blocks,
            dict(A=ML.A_mlp(x3, 1.0), atol=1e-12),
        ),
        (
            "representation",
            BL.representation,
            dict(W=_r(4, 2), C=np.ones((3, 1)), split=3),
        ),
        ("A_mlp", ML.A_mlp, dict(x=x3, dphi0=1.0)),
        (
            "coeffs_mean_field_mlp",
            ML.coeffs_mean_field_mlp,
            dict(x=x3, phi0=0.5, dphi0=0.25, drho0=0.5, ddrho0=0.25),
        ),
        ("A_cnn", CN.A_cnn, dict(X=_r(3, 4), kernel_shape=(2, 2), dphi0=1.0)),
        ("A_mha", AT.A_mha, dict(x=x3, X=X34, d_k=2, d_v=2)),
        (
            "mha_quartic",
            AT.mha_quartic,
            dict(W=_r(AT.mha_layout(3, 2, 2).p, 2), x=x3, X=X34, d_k=2, d_v=2),
        ),
        ("A_qk", AT.A_qk, dict(x=x3, X=X34, c=x3, d_k=2)),
        ("A_moe", MOE.A_moe, dict(x=x3, dpsi0=1.0, G=x3)),
        (
            "TanhMLP.apply_map",
            net.apply_map,
            dict(
                inputs=torch.randn(5, 3, dtype=F64),
                T=torch.ones(2, 3, dtype=F64),
            ),
        ),
        ("DeepNQF.hidden", model.hidden, dict(x=x, Ms=Ms, mus=mus)),
        (
            "DeepNQF.loss",
            model.loss,
            dict(x=x, y=y, Ms=Ms, mus=mus, weights=w52),
        ),
        (
            "DeepNQF.closed_step",
            model.closed_step,
            dict(x=x, y=y, Ms=Ms, mus=mus, widths=[6, 5], lr=0.1, weights=w52),
        ),
        (
            "DeepNQF.train",
            model.train,
            dict(x=x, y=y, Ws=Ws, lr=0.1, steps=2, weights=w52),
        ),
        (
            "DeepNQF.mlp",
            DP.DeepNQF.mlp,
            dict(dims=[3, 4, 2], act=torch.tanh, slope=1.0),
        ),
        (
            "structure_subspace",
            DP.structure_subspace,
            dict(layer=model.layers[0], h=x, rtol=1e-10),
        ),
        ("realize_deep", DP.realize_deep, dict(Ms=Ms, mus=mus, widths=[8, 8])),
        ("MLPLayer", DP.MLPLayer, dict(n_in=3, n_out=2, slope=1.0)),
    ]
    for name in sorted(MODELS):
        m = MODELS[name]
        W, xin = m.sample(np.random.default_rng(1))
        cases.append((f"{name}.native", m.native, dict(W=W, x=xin)))
        cases.append((f"{name}.structure", m.structure, dict(x=xin)))
    return cases


CASES = _cases()
HARD = ("nan", "inf", "complex", "bool", "str", "none")
#: (case, argument, kind) that are valid: theorem13 passes x to the user's f,
#: which decides what an empty, string or None input means (complex, bool and
#: non-finite arrays are still refused before f is called); act=None is
#: DeepNQF.mlp's deep linear network
EXEMPT = {
    ("theorem13", "x", "empty"),
    ("theorem13", "x", "str"),
    ("theorem13", "x", "none"),
    ("DeepNQF.mlp", "act", "none"),
}


def _bad_values(value):
    """(kind, bad value) pairs for one argument's valid value."""
    if (
        isinstance(value, torch.Tensor)
        and value.is_floating_point()
        and value.numel()
    ):
        nan = value.clone()
        nan.view(-1)[0] = float("nan")
        yield from [
            ("nan", nan),
            ("inf", value / 0.0),
            ("complex", value.to(torch.complex128) + 1j),
            ("bool", value > 0),
            ("empty", value[..., :0]),
        ]
    elif (
        isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.size
    ):
        nan = value.copy()
        nan.flat[0] = np.nan
        yield from [
            ("nan", nan),
            ("inf", np.where(nan != nan, np.inf, value)),
            ("complex", value + 1j),
            ("bool", value > 0),
            ("empty", np.zeros((0,) * value.ndim)),
        ]
    elif isinstance(value, (float, np.floating)):
        yield from [
            ("nan", float("nan")),
            ("inf", float("inf")),
            ("complex", complex(value, 1.0)),
            ("bool", True),
        ]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        yield from [
            ("nan", float("nan")),
            ("complex", 1 + 1j),
            ("bool", True),
            ("float", 1.5),
        ]
    elif (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, np.ndarray) for v in value)
    ):
        for i, part in enumerate(
            value
        ):  # inputs that are tuples of arrays: spoil one part at a time
            for kind, bad in _bad_values(part):
                yield (
                    kind,
                    tuple(bad if k == i else p for k, p in enumerate(value)),
                )
        return
    if not isinstance(value, (str, bool)) and value is not None:
        yield from [("str", "abc"), ("none", None)]


def _params():
    out = []
    for label, fn, kwargs in CASES:
        defaults = {
            k: p.default for k, p in inspect.signature(fn).parameters.items()
        }
        for name, value in kwargs.items():
            for kind, bad in _bad_values(value):
                if (
                    kind == "none"
                    and defaults.get(name, inspect.Parameter.empty) is None
                ):
                    continue  # None is this argument's documented default
                if (label, name, kind) in EXEMPT:
                    continue
                out.append(
                    pytest.param(
                        fn,
                        kwargs,
                        name,
                        kind,
                        bad,
                        id=f"{label}-{name}-{kind}",
                    )
                )
    return out


def _named(message: str, name: str) -> bool:
    aliases = {
        "inputs": ("x",),
        "T": ("T",),
        "kernel_shape": ("kernel",),
        "xi": ("xi",),
    }
    words = (name, name.split("_")[0], *aliases.get(name, ()))
    return any(w.lower() in message.lower() for w in words)


@pytest.mark.parametrize("fn, kwargs, name, kind, bad", _params())
def test_bad_argument_raises_a_clear_error(fn, kwargs, name, kind, bad):
    fn(**kwargs)  # the valid call works
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(**{**kwargs, name: bad})
        except (TypeError, ValueError) as exc:
            assert _named(str(exc), name), (
                f"{type(exc).__name__} does not name {name!r}: {exc}"
            )
            out = None
    casts = [
        str(w.message)
        for w in caught
        if "complex" in str(w.message).lower()
        or "cast" in str(w.message).lower()
    ]
    assert not casts, (
        f"a value was cast with a warning instead of refused: {casts}"
    )
    if out is not None:
        assert kind not in HARD, f"{name}={kind} was accepted"
        arrays = out if isinstance(out, (tuple, list)) else [out]
        for a in arrays:
            if isinstance(a, (np.ndarray, torch.Tensor, float)):
                assert np.all(
                    np.isfinite(
                        np.asarray(
                            a.detach() if isinstance(a, torch.Tensor) else a
                        )
                    )
                )


# ------------------------------------------------------------------ unstable
# step sizes
def _unstable():
    nqf = NQF(
        np.stack([np.eye(3), np.diag([1.0, 0, 0])]), g=0.1 * np.ones((2, 3))
    )
    W, Vel = np.ones((3, 2)), np.zeros((3, 2))
    _, psi = FO.fourier_features(16, 3)
    model = DP.DeepNQF.mlp([3, 4, 2])
    gen = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(5, 3, generator=gen, dtype=F64),
        torch.randn(5, 2, generator=gen, dtype=F64),
    )
    Ws = DP.DeepNQF.mlp_weights(
        [
            torch.randn(4, 3, generator=gen, dtype=F64),
            torch.randn(2, 4, generator=gen, dtype=F64),
        ]
    )
    form = HO.NeuralForm(np.zeros(2), [np.ones((2, 2)), np.ones((2, 2, 2))])
    A = np.stack([np.eye(2), np.diag([1.0, -1.0])])
    return [
        (
            "descend",
            lambda: TR.descend(np.ones(3), lambda W: (W**4).sum(), 1e3, 20),
        ),
        ("DeepNQF.train", lambda: model.train(x, y, Ws, 1e3, 20)),
        (
            "DeepNQF.train_closed",
            lambda: model.train_closed(
                x, y, *DP.deep_moments(Ws), [4], 1e3, 20
            ),
        ),
        (
            "heavy_ball_step",
            lambda: MO.heavy_ball_step(
                nqf, 1e150 * W, Vel, np.zeros(2), 1e300, 0.5
            ),
        ),
        (
            "heavy_ball_closed_step",
            lambda: MO.heavy_ball_closed_step(
                nqf,
                MO.MomentumState.from_W(1e150 * W, Vel),
                2,
                np.zeros(2),
                1e300,
                0.5,
            ),
        ),
        (
            "adam_step",
            lambda: MO.adam_step(
                nqf, W, MO.AdamState.zeros_like(W), np.zeros(2), 1e308
            ),
        ),
        ("gd_nqf", lambda: S.gd_nqf(A, np.ones(2), np.ones((2, 3)), 1e3, 20)),
        (
            "gd_discrete_glv",
            lambda: S.gd_discrete_glv(
                np.ones(2), np.eye(2), np.full(2, 0.5), 1e3, 20
            ),
        ),
        (
            "onehot_quadratic_gd",
            lambda: SC.onehot_quadratic_gd(
                np.ones(2), np.ones(2), np.ones((2, 2)), 1e3, 20, every=7
            ),
        ),
        (
            "train_fourier",
            lambda: FX.train_fourier(
                np.ones(3), np.ones(3), np.ones(3), psi, np.ones(16), 1e150, 20
            ),
        ),
        (
            "train_fourier_nqf",
            lambda: FX.train_fourier(
                np.ones(3),
                np.ones(3),
                np.ones(3),
                psi,
                np.ones(16),
                1e3,
                20,
                model="nqf",
            ),
        ),
        (
            "train_fourier_ensemble",
            lambda: FX.train_fourier_ensemble(
                np.ones((2, 3)),
                np.ones((2, 3)),
                np.ones(3),
                psi,
                np.ones(16),
                1e150,
                20,
            ),
        ),
        (
            "train_tanh_mlp",
            lambda: FX.train_tanh_mlp(
                np.ones(3),
                np.ones(3),
                np.linspace(0, 1, 16),
                np.ones(16),
                1e150,
                20,
            ),
        ),
        (
            "NeuralForm.train",
            lambda: form.train(np.ones((2, 3)), np.ones(2), 1e3, 20, every=7),
        ),
    ]


@pytest.mark.parametrize(
    "label, run", _unstable(), ids=[c[0] for c in _unstable()]
)
def test_unstable_step_sizes_are_reported(label, run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(
            (FloatingPointError, ValueError),
            match=r"(?i)diverged|lower|too large",
        ):
            run()


@pytest.mark.parametrize("every", [1, 3])
def test_divergence_on_the_last_step_is_reported(every):
    """Only the last update overflows: the trainers that return the final
    weights must say so."""
    with pytest.raises(
        ValueError, match="diverged"
    ):  # one step: finite loss before it, u = inf after it
        FX.train_tanh_mlp(
            np.full(3, 0.1),
            np.full(3, 1e150),
            np.linspace(0, 1, 16),
            np.ones(16),
            1e9,
            1,
        )
    with pytest.raises(FloatingPointError, match="last step"):
        HO.gd_train(
            lambda W: (
                -(W**2).sum((-2, -1))[..., None]
                * torch.ones(2, dtype=F64)
                * 1e-300
            ),
            np.full((1, 1), 1e153),
            np.zeros(2),
            1e300,
            1,
            every=every + 1,
        )


# ------------------------------------------------------------------ property
# tests of the new validators
finite = st.floats(-1e3, 1e3, allow_nan=False)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_as_weights_accepts_finite_real_arrays_and_names_every_bad_entry(
    p, d, data
):
    W = np.array(
        data.draw(st.lists(finite, min_size=p * d, max_size=p * d))
    ).reshape(p, d)
    out = as_weights(W, p, "columns", "m")
    assert out.dtype == F64 and torch.equal(out, torch.as_tensor(W))
    assert as_weights(torch.as_tensor(W).T, p, "rows", "m").shape == (d, p)
    i, j = data.draw(st.integers(0, p - 1)), data.draw(st.integers(0, d - 1))
    bad = W.copy()
    bad[i, j] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    with pytest.raises(ValueError, match="W contains NaN or inf"):
        as_weights(bad, p, "columns", "m")
    with pytest.raises(TypeError, match="W must be a real numeric"):
        as_weights(W.astype(complex), p, "columns", "m")
    with pytest.raises(
        ValueError, match=rf"W must have shape \(p={p + 1}, d\)"
    ):
        as_weights(W, p + 1, "columns", "m")


@SETTINGS
@given(st.sampled_from(sorted(MODELS)), st.data())
def test_make_accepts_every_size_in_range_and_refuses_every_size_out_of_it(
    name, data
):
    base = MODELS[name]
    sizes = {}
    for key, value in base.sizes.items():
        if isinstance(value, int) and not isinstance(value, bool):
            sizes[key] = data.draw(st.integers(1, 4), label=key)
    if name == "cnn":
        kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
        sizes.update(
            kernel=(kh, kw),
            image=(
                kh + data.draw(st.integers(0, 2)),
                kw + data.draw(st.integers(0, 2)),
            ),
        )
    model = MODELS.make(name, **sizes)
    W, x = model.sample(np.random.default_rng(0))
    s = model.structure(x)
    assert s.A.shape[-2:] == (model.p, model.p) and np.array_equal(
        s.A, np.swapaxes(s.A, -1, -2)
    )
    if model.exact:
        Wc = model.columns(W)
        q = s.f0 + np.einsum("...ij,ij->...", s.A, Wc @ Wc.T)
        assert np.allclose(
            model.native(W, x).detach().numpy(), q, rtol=1e-12, atol=1e-12
        )
    key = data.draw(st.sampled_from(sorted(sizes)))
    bad = data.draw(st.integers(-3, 0))
    with pytest.raises(ValueError, match=key):
        MODELS.make(
            name, **{key: (bad, 1) if isinstance(sizes[key], tuple) else bad}
        )


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_deep_order_parameters_take_gram_matrices_refuse_indefinite(
    p, d, seed
):
    layer = DP.LinearLayer(p, 1)
    model = DP.DeepNQF([layer])
    rng = np.random.default_rng(seed)
    W = torch.as_tensor(rng.standard_normal((p, d)))
    M, mu = W @ W.T, W.sum(1)
    x = torch.as_tensor(rng.standard_normal((2, p)))
    model.predict(x, [M], [mu])  # any Gram matrix is accepted
    model.closed_step(
        x, torch.zeros(2, 1, dtype=F64), [M], [mu], [d], 0.01
    )  # and realisable at its width
    v = torch.as_tensor(rng.standard_normal(p))
    indefinite = M - (float(torch.linalg.eigvalsh(M)[-1]) + 1.0) * torch.outer(
        v, v
    ) / float(v @ v)
    with pytest.raises(
        ValueError, match=r"Ms\[0\] must be positive semi-definite"
    ):
        model.predict(x, [indefinite], [mu])


@SETTINGS
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.floats(1e-8, 1e3),
    st.integers(0, 2**31 - 1),
)
def test_isotropic_factor_has_the_rank_of_the_start(p, r, scale, seed):
    rng = np.random.default_rng(seed)
    F = scale * rng.standard_normal((p, min(r, p)))
    G = S.samples.psd_factor("M0", F @ F.T)
    assert G.shape == (p, np.linalg.matrix_rank(F))
    np.testing.assert_allclose(
        G @ G.T, F @ F.T, rtol=0, atol=1e-12 * scale**2 * p
    )
