"""Model-specific tests of the Table 3 rows (sensing, diagonal, bilinear, ssl
families).

Expected values come from independent NumPy loops or closed forms written here,
never from the ``structure`` method under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nqf_lite.expansion.models.base import MODELS
from nqf_lite.expansion.models.bilinear import (
    BilinearSequence,
    TiedQueryKey,
    WordContext,
    context_covariance,
)
from nqf_lite.expansion.models.diagonal import (
    DiagonalSquare,
    DiagonalTwoFactor,
)
from nqf_lite.expansion.models.sensing import (
    MatrixCompletion,
    PhaseRetrieval,
    PSDSensing,
    QuadraticNetwork,
    RectangularSensing,
)
from nqf_lite.expansion.models.ssl import LinearSSL

OURS = [
    "psd_sensing",
    "rectangular_sensing",
    "matrix_completion",
    "word_context",
    "quadratic_network",
    "phase_retrieval",
    "diagonal_square",
    "diagonal_two_factor",
    "tied_query_key",
    "bilinear_sequence",
    "linear_ssl",
]


def _f(model, W, x) -> float:
    with torch.no_grad():
        return float(model.native(torch.as_tensor(W, dtype=torch.float64), x))


def test_all_eleven_registered_with_table3_rows():
    rows = {
        name: int(MODELS[name].reference.split("row ")[1].split(";")[0])
        for name in OURS
    }
    assert rows == {
        "psd_sensing": 1,
        "rectangular_sensing": 2,
        "matrix_completion": 3,
        "word_context": 4,
        "quadratic_network": 5,
        "phase_retrieval": 6,
        "diagonal_square": 7,
        "diagonal_two_factor": 8,
        "tied_query_key": 14,
        "bilinear_sequence": 15,
        "linear_ssl": 16,
    }
    assert {n for n in OURS if MODELS[n].neurons == "rows"} == {
        "tied_query_key",
        "linear_ssl",
    }
    assert [n for n in OURS if not MODELS[n].exact] == ["tied_query_key"]


# ----------------------------------------------------------------------------
# sensing


def test_psd_sensing_keeps_only_the_symmetric_part(rng):
    model = PSDSensing(n=4)
    W = rng.standard_normal((4, 3))
    S = rng.standard_normal((4, 4))
    loop = sum(
        S[a, b] * sum(W[a, i] * W[b, i] for i in range(3))
        for a in range(4)
        for b in range(4)
    )
    assert _f(model, W, S) == pytest.approx(loop, abs=1e-12)
    K = S - S.T  # antisymmetric: invisible to a PSD factorisation
    assert _f(model, W, K) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(model.structure(K).A, np.zeros((4, 4)))
    Ssym = S + S.T
    np.testing.assert_allclose(model.structure(Ssym).A, Ssym, atol=1e-15)


def test_rectangular_sensing_is_trace_of_UtSV(rng):
    model = RectangularSensing(n1=2, n2=3)
    U, V = rng.standard_normal((2, 4)), rng.standard_normal((3, 4))
    S = rng.standard_normal((2, 3))
    assert _f(model, np.vstack([U, V]), S) == pytest.approx(
        np.trace(U.T @ S @ V), abs=1e-12
    )
    A = model.structure(S).A
    expected = np.zeros((5, 5))
    expected[:2, 2:], expected[2:, :2] = S / 2, S.T / 2
    np.testing.assert_array_equal(A, expected)


@pytest.mark.parametrize("cls", [MatrixCompletion, WordContext])
def test_entry_models_read_one_entry_of_UVt(cls, rng):
    model = cls(3, 4)
    U, V = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    W = np.vstack([U, V])
    R = U @ V.T
    for i in range(3):
        for j in range(4):
            assert _f(model, W, (i, j)) == pytest.approx(R[i, j], abs=1e-12)
    A = model.structure((2, 1)).A
    nz = np.argwhere(A != 0)
    assert sorted(map(tuple, nz)) == [(2, 3 + 1), (3 + 1, 2)]
    assert A[2, 4] == 0.5


@pytest.mark.parametrize("cls", [QuadraticNetwork, PhaseRetrieval])
def test_rank_one_models(cls, rng):
    model = cls(4)
    W = rng.standard_normal((4, 3))
    a = rng.standard_normal(4)
    assert _f(model, W, a) == pytest.approx(
        sum((W[:, r] @ a) ** 2 for r in range(3)), abs=1e-12
    )
    A = model.structure(a).A
    ev = np.linalg.eigvalsh(A)
    assert ev[-1] == pytest.approx(a @ a, rel=1e-12)
    np.testing.assert_allclose(ev[:-1], 0.0, atol=1e-12)
    # a sign flip of any neuron is invisible (per-neuron Z2 symmetry)
    W2 = W.copy()
    W2[:, 1] *= -1
    assert _f(model, W2, a) == pytest.approx(_f(model, W, a), abs=1e-12)


# ----------------------------------------------------------------------------
# diagonal


def test_diagonal_square_regression_vector(rng):
    model = DiagonalSquare(k=5)
    U = rng.standard_normal((5, 2))
    x = rng.standard_normal(5)
    beta = (U**2).sum(axis=1) / 4
    assert _f(model, U, x) == pytest.approx(beta @ x, abs=1e-12)
    np.testing.assert_array_equal(model.structure(x).A, np.diag(x) / 4)


def test_diagonal_two_factor_eigenvalues(rng):
    model = DiagonalTwoFactor(k=3)
    U, V = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    x = np.array([0.7, -1.3, 2.0])
    assert _f(model, np.vstack([U, V]), x) == pytest.approx(
        ((U * V).sum(axis=1)) @ x, abs=1e-12
    )
    ev = np.linalg.eigvalsh(model.structure(x).A)
    np.testing.assert_allclose(
        ev, np.sort(np.concatenate([x / 2, -x / 2])), atol=1e-12
    )
    # the u ± v rotation diagonalises A for every input: the A(x) of all inputs
    # commute
    A1, A2 = model.structure(x).A, model.structure(rng.standard_normal(3)).A
    np.testing.assert_allclose(A1 @ A2, A2 @ A1, atol=1e-12)


# ----------------------------------------------------------------------------
# bilinear


def test_bilinear_sequence_matches_low_rank_form(rng):
    model = BilinearSequence(D=3)
    U, V = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    xs, xt = rng.standard_normal(3), rng.standard_normal(3)
    assert _f(model, np.vstack([U, V]), (xs, xt)) == pytest.approx(
        xs @ U @ V.T @ xt, abs=1e-12
    )
    # swapping the tokens is swapping the factors
    assert _f(model, np.vstack([V, U]), (xt, xs)) == pytest.approx(
        xs @ U @ V.T @ xt, abs=1e-12
    )


def test_context_covariance_is_biased_sample_covariance(rng):
    X = rng.standard_normal((3, 6))
    np.testing.assert_allclose(
        context_covariance(X), np.cov(X, bias=True), atol=1e-14
    )


def test_tied_query_key_leading_order(rng):
    model = TiedQueryKey(D=3, d_k=2, c=np.array([0.5, -1.0, 2.0]))
    q, X = rng.standard_normal(3), rng.standard_normal((3, 5))
    W = rng.standard_normal((2, 3))
    # f(0) = c^T (mean token): uniform attention
    assert _f(model, np.zeros((2, 3)), (q, X)) == pytest.approx(
        model.c @ X.mean(axis=1), abs=1e-14
    )
    # second derivative along the ray: (f(hW) + f(-hW) - 2 f(0)) / (2 h^2) ->
    # u^T W^T W q / sqrt(d_k)
    u = np.cov(X, bias=True) @ model.c
    target = u @ W.T @ W @ q / math.sqrt(2)
    h = 1e-3
    f0 = _f(model, np.zeros((2, 3)), (q, X))
    curv = (_f(model, h * W, (q, X)) + _f(model, -h * W, (q, X)) - 2 * f0) / (
        2 * h * h
    )
    assert curv == pytest.approx(target, rel=1e-5)
    # the scale: A is proportional to 1/sqrt(d_k)
    A2 = model.structure((q, X)).A
    A8 = TiedQueryKey(D=3, d_k=8, c=model.c).structure((q, X)).A
    np.testing.assert_allclose(A8, A2 / 2, atol=1e-14)
    # not an identity: at O(1) weights the softmax saturates
    s = model.structure((q, X))
    assert (
        abs(_f(model, 3 * W, (q, X)) - s.f0 - np.sum(s.A * (9 * W.T @ W)))
        > 1e-3
    )


def test_tied_query_key_single_token_context_is_trivial(rng):
    model = TiedQueryKey(D=3, d_k=2)
    q, X = rng.standard_normal(3), rng.standard_normal((3, 1))
    W = rng.standard_normal((2, 3))
    assert _f(model, W, (q, X)) == pytest.approx(model.c @ X[:, 0], abs=1e-14)
    np.testing.assert_allclose(model.structure((q, X)).A, 0.0, atol=1e-15)


# ----------------------------------------------------------------------------
# ssl


def test_linear_ssl(rng):
    model = LinearSSL(D=4)
    W = rng.standard_normal((3, 4))
    x, chi = rng.standard_normal(4), rng.standard_normal(4)
    assert _f(model, W, (x, chi)) == pytest.approx(
        sum((W[i] @ (x - chi)) ** 2 for i in range(3)), abs=1e-12
    )
    assert _f(model, W, (x, x)) == 0.0
    np.testing.assert_allclose(
        model.structure((x, chi)).A, np.outer(x - chi, x - chi), atol=1e-15
    )
    assert model.columns(W).shape == (4, 3)


# ----------------------------------------------------------------------------
# samples and bad input


@pytest.mark.parametrize("name", OURS)
def test_sample_is_small_and_accepted(name):
    model = MODELS[name]
    W, x = model.sample(np.random.default_rng(1))
    assert W.size <= 64 and min(W.shape) >= 2
    assert np.isfinite(_f(model, W, x))


@pytest.mark.parametrize("name", OURS)
def test_wrong_weight_shape_names_W(name):
    model = MODELS[name]
    W, x = model.sample(np.random.default_rng(2))
    bad = (
        W.T
        if W.shape[0] != W.shape[1]
        else np.zeros((W.shape[0] + 1, W.shape[1] + 1))
    )
    with pytest.raises(ValueError, match=r"W must have shape"):
        model.native(torch.as_tensor(bad), x)
    with pytest.raises(ValueError, match=r"W must have shape"):
        model.native(torch.zeros(model.p), x)


@pytest.mark.parametrize(
    ("model", "x", "match", "err"),
    [
        (
            PSDSensing(n=3),
            np.zeros((3, 2)),
            r"sensing matrix S\) must have shape \(3, 3\)",
            ValueError,
        ),
        (
            RectangularSensing(2, 3),
            np.zeros((3, 2)),
            r"must have shape \(2, 3\)",
            ValueError,
        ),
        (
            MatrixCompletion(2, 3),
            (2, 0),
            r"i must be an index in \[0, 2\)",
            ValueError,
        ),
        (
            MatrixCompletion(2, 3),
            (0, -1),
            r"j must be a non-negative integer",
            ValueError,
        ),
        (
            MatrixCompletion(2, 3),
            5,
            r"x \(the entry \(i, j\)\) must be a pair",
            TypeError,
        ),
        (
            WordContext(2, 3),
            (0, 1.5),
            r"context must be a non-negative integer",
            TypeError,
        ),
        (
            QuadraticNetwork(3),
            np.zeros(4),
            r"x must have shape \(3,\)",
            ValueError,
        ),
        (PhaseRetrieval(3), np.array([1.0, np.nan, 0.0]), r"NaN", ValueError),
        (
            DiagonalSquare(3),
            np.zeros((3, 1)),
            r"x must have 1 axes",
            ValueError,
        ),
        (
            DiagonalTwoFactor(3),
            np.zeros(6),
            r"x must have shape \(3,\)",
            ValueError,
        ),
        (
            BilinearSequence(3),
            (np.zeros(3), np.zeros(2)),
            r"x_t must have shape \(3,\)",
            ValueError,
        ),
        (
            TiedQueryKey(3, 2),
            (np.zeros(3), np.zeros((2, 4))),
            r"X \(the context\) must have shape \(3, N\)",
            ValueError,
        ),
        (TiedQueryKey(3, 2), np.zeros(3), r"must be a pair", TypeError),
        (
            LinearSSL(3),
            (np.zeros(3), np.zeros(4)),
            r"second view\) must have shape \(3,\)",
            ValueError,
        ),
    ],
)
def test_bad_inputs_name_the_argument(model, x, match, err):
    with pytest.raises(err, match=match):
        model.structure(x)
    W = (
        np.zeros((model.p, 2))
        if model.neurons == "columns"
        else np.zeros((2, model.p))
    )
    with pytest.raises(err, match=match):
        model.native(torch.as_tensor(W), x)


@pytest.mark.parametrize(
    ("factory", "err", "match"),
    [
        (
            lambda: PSDSensing(n=0),
            ValueError,
            r"^n must be a positive integer",
        ),
        (
            lambda: PSDSensing(n=2.5),
            TypeError,
            r"^n must be a positive integer",
        ),
        (lambda: RectangularSensing(n1=2, n2=0), ValueError, r"^n2 must"),
        (lambda: DiagonalSquare(k=True), TypeError, r"^k must"),
        (lambda: TiedQueryKey(D=3, d_k=0), ValueError, r"^d_k must"),
        (
            lambda: TiedQueryKey(D=3, c=np.ones(2)),
            ValueError,
            r"^c must have shape \(3,\)",
        ),
        (lambda: LinearSSL(D=-1), ValueError, r"^D must"),
    ],
)
def test_bad_sizes(factory, err, match):
    with pytest.raises(err, match=match):
        factory()
