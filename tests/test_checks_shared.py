"""The validators shared by nqf_lite.dynamics, nqf_lite.deep and
nqf_lite.design (the part of nqf_lite._checks below its last banner): every
bad input is refused with an error naming the argument, and good input comes
back unchanged in value.  Also: the split modules keep every old public name
where it was."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from nqf_lite import _checks as C

NAN = float("nan")

BAD = [
    # (call, error, text the message must contain)
    (lambda: C.number("a", True), TypeError, "a must be a real number"),
    (lambda: C.number("a", 1j), TypeError, "a must be a real number"),
    (lambda: C.number("a", "1"), TypeError, "a must be a real number"),
    (lambda: C.number("a", [1.0]), TypeError, "a must be a real number"),
    (lambda: C.number("a", np.ones(2)), TypeError, "shape (2,)"),
    (lambda: C.number("a", NAN), ValueError, "a must be finite"),
    (lambda: C.number("a", torch.tensor(np.inf)), ValueError, "a must be"),
    (lambda: C.unit_interval("b", 1.0), ValueError, "b must lie in [0, 1)"),
    (lambda: C.unit_interval("b", -0.1), ValueError, "b must lie"),
    (lambda: C.unit_interval("b", NAN), ValueError, "b must lie"),
    (lambda: C.unit_interval("b", False), TypeError, "b must be a real"),
    (lambda: C.times("t", [1.0, 0.5]), ValueError, "t must be non-neg"),
    (lambda: C.times("t", [-1.0]), ValueError, "t must be non-negative"),
    (lambda: C.times("t", [[0.0]]), ValueError, "t must have 1 axes"),
    (
        lambda: C.nonempty_times("t", C.times("t", [])),
        ValueError,
        "t must hold at least one time",
    ),
    (lambda: C.matrix("M", np.ones((0, 2))), ValueError, "M must hold"),
    (lambda: C.matrix("M", np.ones(3)), ValueError, "M must have 2 axes"),
    (lambda: C.shaped("S", np.ones((2, 3)), (3, 2)), ValueError, "S must"),
    (
        lambda: C.broadcast("u and v", np.ones(2), np.ones(3)),
        ValueError,
        "u and v must broadcast together",
    ),
    (lambda: C.abundances("z0", [1.0, -1.0], 2), ValueError, "z0 must be"),
    (
        lambda: C.abundances("z0", [1.0], 2),
        ValueError,
        "z0 must be a vector of shape",
    ),
    (
        lambda: C.competition_diagonal([[1.0, 0.5], [0.5, 1.0]], 2),
        ValueError,
        "C must be diagonal",
    ),
    (lambda: C.competition_diagonal([1.0, -1.0], 2), ValueError, "C"),
    (
        lambda: C.glv_rates([1.0, 2.0], -np.ones(2)),
        ValueError,
        "C must be >= 0",
    ),
    (
        lambda: C.glv_rates(np.ones(3), np.eye(2)),
        ValueError,
        "competition matrix",
    ),
    (lambda: C.glv_system([1.0], np.eye(2)), ValueError, "C must have"),
    (lambda: C.nqf("model", object()), TypeError, "model must be an"),
    (lambda: C.sequence("Ws", np.ones(2)), TypeError, "Ws must be a list"),
    (lambda: C.sequence("Ws", "ab"), TypeError, "Ws must be a list"),
    (lambda: C.sequence("Ws", torch.ones(2)), TypeError, "Ws must be"),
    (lambda: C.torch_tensor("x", [1j]), TypeError, "x must be a real"),
    (lambda: C.torch_tensor("x", torch.ones(2) > 0), TypeError, "x must be"),
    (
        lambda: C.torch_tensor("x", torch.tensor([NAN])),
        ValueError,
        "x contains",
    ),
    (
        lambda: C.torch_tensor("x", [1.0], ndim_min=2),
        ValueError,
        "x must have",
    ),
    (lambda: C.model_input("x", [np.ones(1), [1j]]), TypeError, "x[1][0]"),
    (lambda: C.model_input("x", (np.array([NAN]),)), ValueError, "x[0]"),
    (lambda: C.model_input("x", torch.ones(1) > 0), TypeError, "x must"),
]


@pytest.mark.parametrize("call, error, text", BAD)
def test_bad_input_is_refused_naming_the_argument(call, error, text):
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)


def test_good_input_comes_back():
    assert C.number("a", np.float32(0.5)) == 0.5
    assert C.number("a", torch.tensor(2.0)) == 2.0
    assert C.unit_interval("b", 0) == 0.0
    np.testing.assert_array_equal(C.times("t", [0, 1, 1]), [0.0, 1.0, 1.0])
    assert C.competition_diagonal(np.diag([1.0, 2.0]), 2).tolist() == [1, 2]
    r, c = C.glv_rates([1.0, 2.0], np.diag([3.0, 4.0]))
    assert r.tolist() == [1.0, 2.0] and c.tolist() == [3.0, 4.0]
    assert C.sequence("Ws", (1, 2)) == [1, 2]
    W = torch.ones(2, 2, requires_grad=True)
    assert C.torch_tensor("W", W, differentiated=True) is W
    assert C.torch_tensor("W", [[1, 2]]).dtype == torch.float64
    C.model_input("x", [None, "text", np.ones(2)])  # the model's to read


OLD_NAMES = {
    "nqf_lite.dynamics.solvable": [
        "COMMUTE_RTOL", "DIAG_RTOL", "ISO_MAX_STEPS", "ISO_RANK_RTOL",
        "ISO_STEP_GROWTH", "glv_coefficients", "common_eigenbasis",
        "feature_trajectory", "switch_on_time", "switch_on_time_exact",
        "plateau_values", "excess_loss", "excess_loss_draws",
        "crossing_time", "glv_integrate", "gd_discrete_glv", "gd_nqf",
        "matrix_flow", "slaved_ratio", "slaved_moments",
        "proportional_samples_xi", "proportional_samples_W",
        "orthogonal_samples_xi", "orthogonal_samples_z",
        "isotropic_trajectory", "isotropic_logistic", "projector_logistic",
        "saxe_logistic",
    ],
    "nqf_lite.dynamics.scaling": [
        "LogLogFit", "fit_loglog_slope", "fit_loglog_slopes", "excess_loss",
    ],
    "nqf_lite.deep.deep_nqf": [
        "AttentionLayer", "DeepNQF", "FunctionLayer", "Layer",
        "LayerStructure", "LinearLayer", "MLPLayer", "ScaledLayer",
        "compress_deep", "deep_moments", "realize_deep",
        "structure_subspace",
    ],
    "nqf_lite.deep.higher_order": [
        "MAX_BYTES", "ADDITIVE_RTOL", "NeuralForm", "SymmetricExpansion",
        "gd_train", "partition_weight", "partitions", "theorem13",
    ],
    "nqf_lite.design.forecast": [
        "LearningForecast", "predict_learning", "stable_lr", "COMMUTE_WARN",
        "SMALL_START", "DEGENERATE_RTOL", "RATE_RTOL",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(OLD_NAMES))
def test_split_modules_keep_their_old_names(module):
    mod = importlib.import_module(module)
    missing = [n for n in OLD_NAMES[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lost {missing}"
    exported = set(getattr(mod, "__all__", []))
    unknown = [n for n in exported if not hasattr(mod, n)]
    assert not unknown, f"{module}.__all__ names {unknown} it lacks"


def test_deep_nqf_keeps_its_methods():
    from nqf_lite.deep.deep_nqf import DeepNQF

    for name in (
        "mlp", "mlp_weights", "hidden", "predict", "predict_W", "loss",
        "product", "product_W", "order_gradients", "grad_W", "gd_step",
        "closed_step", "train", "train_closed",
    ):  # fmt: skip
        assert callable(getattr(DeepNQF, name)), name


def test_weights_and_members_name_the_argument():
    from nqf_lite._checks import members, weights

    W = np.ones((3, 2))
    assert weights("W", W) is not None and weights("W", W, 3).shape == (3, 2)
    with pytest.raises(ValueError, match=r"W1 must have shape \(4, d\)"):
        weights("W1", W, 4)
    with pytest.raises(ValueError, match=r"Ws\[0\] must have shape \(p, d\)"):
        weights("Ws[0]", np.ones((3, 0)))
    with pytest.raises(ValueError, match="W must have 2 axes"):
        weights("W", np.ones(3))
    assert members("seeds", iter([1, 2])) == [1, 2]
    with pytest.raises(ValueError, match="seeds must hold at least one"):
        members("seeds", [])
