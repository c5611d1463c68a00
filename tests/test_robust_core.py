"""Hard to misuse: bad input to the core (expand, NQF, compress,
realize_moments) gets a clear error.

Each test names the argument it misuses; the expected behaviour is stated in
the test, never computed by the code under test.
"""

import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from nqf_lite import (
    NQF,
    NotSmoothError,
    compress,
    compression_residual,
    data_subspace,
    expand,
    expand_dataset,
    k_V,
)
from nqf_lite import moments, random_nqf, realize_moments
from nqf_lite.expansion.autograd import truncation_error
from nqf_lite.expansion.form import check_realizable, frame_orthogonal_to_ones

K = 4
X = torch.tensor([0.3, -1.2, 0.7, 2.0])


def readout(act):
    """sum_i v_i act(u_i . x) with neuron i = (u_i, v_i), a column of W (p = K
    + 1)."""
    return lambda W, x: (W[K] * act(x @ W[:K])).sum()


def normed(norm, eps):
    def f(W, x):
        z = x @ W[:K]
        return (W[K] * norm(z, (z.shape[0],), eps=eps)).sum()

    return f


# ------------------------------------------------------------------ expand:
# kinks of either parity
def test_odd_kink_is_refused():
    """v |u.x| is odd in W, so f(hW) + f(-hW) - 2 f(0) = 0: a central second
    difference sees nothing."""
    f = readout(torch.abs)
    W = torch.randn(K + 1, 3, generator=torch.Generator().manual_seed(0))
    assert (
        abs(float(f(W, X) + f(-W, X))) < 1e-12 and abs(float(f(W, X))) > 1e-2
    )  # odd, not zero
    with pytest.raises(NotSmoothError, match="not differentiable at W = 0"):
        expand(f, X, K + 1)


@pytest.mark.parametrize(
    "act",
    [
        torch.relu,
        torch.abs,
        lambda z: torch.relu(z) - 0.3 * torch.relu(-z),
        lambda z: z * torch.abs(z) + torch.abs(z),
    ],
    ids=["relu", "abs", "leaky", "abs-plus-square"],
)
def test_kinks_in_the_quadratic_term_are_refused(act):
    with pytest.raises(NotSmoothError, match="not differentiable"):
        expand(readout(act), X, K + 1)


def test_first_order_kink_is_refused():
    """f = sum_i |w_i . x|: the kink sits in the linear term (autograd's
    sign(0) = 0)."""
    with pytest.raises(NotSmoothError, match="first-order"):
        expand(lambda W, x: torch.abs(x @ W[:K]).sum(), X, K)


@pytest.mark.parametrize(
    "act",
    [
        torch.tanh,
        torch.sigmoid,
        F.gelu,
        F.softplus,
        lambda z: 5.0 * z**3 + z,
        lambda z: torch.tanh(30.0 * z),
    ],
    ids=["tanh", "sigmoid", "gelu", "softplus", "steep-cubic", "steep-tanh"],
)
def test_smooth_modules_are_accepted(act):
    e = expand(readout(act), X, K + 1)
    assert np.all(np.isfinite(e.A)) and np.any(e.A != 0)


def test_smooth_module_with_large_constant_is_accepted():
    e = expand(
        lambda W, x: (
            1e3 * W.shape[1]
            + (W[K] * torch.tanh(x @ W[:K])).sum()
            + (W**4).sum()
        ),
        X,
        K + 1,
    )
    assert float(e.f0) == 2e3


# -----------------------------------------------------------------------
# expand: non-finite input/output
@pytest.mark.parametrize(
    "x, where",
    [
        (torch.tensor([np.nan, 1.0, 0.0, 0.0]), "x contains NaN"),
        (torch.tensor([np.inf, 1.0, 0.0, 0.0]), "x contains NaN"),
        (np.array([0.0, -np.inf, 0.0, 1.0]), "x contains NaN"),
        ((X, torch.tensor([1.0, np.nan])), r"x\[1\] contains NaN"),
        ([X, float("nan")], r"x\[1\] contains NaN"),
    ],
)
def test_non_finite_input_is_refused(x, where):
    def f(W, x):
        first = x[0] if isinstance(x, (tuple, list)) else torch.as_tensor(x)
        return (W[K] * torch.tanh(first @ W[:K])).sum()

    with pytest.raises(ValueError, match=where):
        expand(f, x, K + 1)


def test_non_finite_input_in_a_data_set_names_the_sample():
    xs = [X, torch.tensor([0.0, np.nan, 0.0, 0.0])]
    with pytest.raises(ValueError, match=r"xs\[1\]: x contains NaN"):
        expand_dataset(readout(torch.tanh), xs, K + 1)


def test_nan_module_output_is_refused():
    with pytest.raises(NotSmoothError, match="not finite"):
        expand(
            lambda W, x: (
                (W[K] * torch.tanh(x @ W[:K])).sum()
                + torch.log(torch.tensor(-1.0))
            ),
            X,
            K + 1,
        )


@pytest.mark.parametrize(
    "norm", [F.rms_norm, F.layer_norm], ids=["rmsnorm", "layernorm"]
)
def test_zero_over_zero_at_the_origin_is_not_smooth(norm):
    with pytest.raises(NotSmoothError, match="non-finite derivative at W = 0"):
        expand(normed(norm, 0.0), X, K + 1, d=4)
    with pytest.raises(NotSmoothError, match="non-finite derivative at W = 0"):
        expand(normed(norm, 0.0), X, K + 1, d=4, check=False)
    e = expand(
        normed(norm, 1e-4), X, K + 1, d=4, check=False
    )  # with eps the expansion exists
    assert np.all(np.isfinite(e.A))


def test_infinite_derivative_with_finite_value_is_not_smooth():
    """sqrt(|w|^2) is 0 at the origin but its gradient there is 0/0."""
    with pytest.raises(NotSmoothError, match="non-finite derivative at W = 0"):
        expand(
            lambda W, x: torch.sqrt((W**2).sum(0)).sum(), None, 3, check=False
        )


# ----------------------------------------------------------------------------
# expand: p and memory
def test_p_too_small_names_p():
    with pytest.raises(
        ValueError,
        match=r"check p = 4, the number of parameters of one neuron",
    ) as info:
        expand(readout(torch.tanh), X, K)  # the module reads row K = 4 of W
    assert isinstance(info.value.__cause__, IndexError)


def test_huge_p_is_refused_up_front_with_the_memory_it_needs():
    calls = []

    def f(W, x):
        calls.append(W.shape)
        return (W[0] * W[1]).sum()

    t0 = time.perf_counter()
    with pytest.raises(
        ValueError,
        match=r"would need 298\.02 GiB, more than max_bytes = 2\.00 GiB",
    ):
        expand(
            f, None, 100_000
        )  # d p = 2e5 weights: a Hessian of 4e10 float64 entries
    assert time.perf_counter() - t0 < 1.0 and calls == []


def test_max_bytes_counts_every_output():
    def f(W, x):
        return torch.stack([(W[0] * W[1]).sum(), (W[0] ** 2).sum(), W.sum()])

    n = 2 * 3  # d p
    assert expand(f, None, 3, max_bytes=8 * 3 * n * n).V == 3
    with pytest.raises(ValueError, match=r"\(3 output\(s\)\).*max_bytes"):
        expand(f, None, 3, max_bytes=8 * 3 * n * n - 1)
    with pytest.raises(
        TypeError, match="max_bytes must be a positive integer"
    ):
        expand(f, None, 3, max_bytes=1e9)


# -------------------------------------------------------------- torch tensors
# that require grad
def _grad_tensor(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=True)


def test_expand_and_truncation_error_accept_tensors_that_require_grad():
    f = readout(torch.tanh)
    plain = expand(f, X, K + 1)
    e = expand(f, X.clone().requires_grad_(True), K + 1)
    assert np.array_equal(e.A, plain.A)
    W = np.random.default_rng(0).standard_normal((K + 1, 2))
    eps = np.array([1e-2, 1e-1])
    ref = truncation_error(f, plain, X, W, eps)
    got = truncation_error(
        f,
        plain,
        X.clone().requires_grad_(True),
        _grad_tensor(W),
        _grad_tensor(eps),
    )
    assert np.array_equal(ref, got)
    assert e.predict(_grad_tensor(W)) == plain.predict(W)


def test_nqf_methods_accept_tensors_that_require_grad(rng):
    model = random_nqf(6, 4, scale_g=0.3, scale_B=0.2, seed=1)
    y, W = rng.standard_normal(6), 0.3 * rng.standard_normal((4, 5))
    M, mu = moments(W)
    t = _grad_tensor
    assert np.array_equal(moments(t(W))[0], M)
    assert np.array_equal(
        NQF(t(model.A), g=t(model.g), B=t(model.B)).predict(M, mu),
        model.predict(M, mu),
    )
    assert np.array_equal(
        model.gd_step(t(W), t(y), 0.1), model.gd_step(W, y, 0.1)
    )
    assert np.array_equal(
        model.closed_step(t(M), t(mu), 5, t(y), 0.1)[0],
        model.closed_step(M, mu, 5, y, 0.1)[0],
    )
    assert np.array_equal(
        model.train(t(W), t(y), 0.1, 2)[1], model.train(W, y, 0.1, 2)[1]
    )
    assert np.array_equal(
        realize_moments(t(M), t(mu), 7), realize_moments(M, mu, 7)
    )
    lr = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    W_wide = 0.3 * rng.standard_normal((4, 12))
    assert np.array_equal(
        compress(model, t(W_wide), lr)[1], compress(model, W_wide, 0.1)[1]
    )
    assert k_V(model, rtol=torch.tensor(1e-10, requires_grad=True)) == k_V(
        model
    )


# -----------------------------------------------------------------------------
# rtol in (0, 1)
@pytest.mark.parametrize("rtol", [np.nan, np.inf, 1.0, 1.5, 0.0, -1e-3])
def test_rtol_outside_the_open_unit_interval_is_refused(rng, rtol):
    model = random_nqf(5, 6, 2, seed=2)
    W = rng.standard_normal((6, 10))
    for call in (
        lambda: k_V(model, rtol=rtol),
        lambda: data_subspace(model, rtol=rtol),
        lambda: compress(model, W, 0.1, rtol=rtol),
        lambda: compression_residual(model, W, 2, rtol=rtol),
    ):
        with pytest.raises(
            ValueError, match=r"rtol must be finite with 0 < rtol < 1"
        ):
            call()


@pytest.mark.parametrize("rtol", ["1e-10", None, True, np.ones(2)])
def test_rtol_of_the_wrong_type_is_refused(rtol):
    with pytest.raises(TypeError, match="rtol"):
        k_V(random_nqf(5, 6, 2, seed=2), rtol=rtol)


def test_rtol_inside_the_interval_sets_the_cut():
    """Singular values 1 and 1e-6 (plus exact zeros): the cut at rtol * largest
    decides k_V."""
    A = np.zeros((1, 3, 3))
    A[0, 0, 0], A[0, 1, 1] = 1.0, 1e-6
    model = NQF(A)
    assert (
        k_V(model, rtol=1e-8) == 2
        and k_V(model, rtol=1e-4) == 1
        and k_V(model, rtol=0.999) == 1
    )


# --------------------------------------------------- closed_step: only
# realisable (M, mu) at width d
def _state(rng, p=5, d=3):
    W = rng.standard_normal((p, d))
    return W, *moments(W)


def test_closed_step_refuses_a_non_symmetric_M(rng):
    model = random_nqf(6, 5, seed=3)
    _, M, mu = _state(rng, d=8)
    bad = M.copy()
    bad[0, 1] += 0.5
    with pytest.raises(ValueError, match="M must be symmetric"):
        model.closed_step(bad, mu, 8, np.zeros(6), 0.1)
    with pytest.raises(ValueError, match="M must be symmetric"):
        model.train_closed(bad, mu, 8, np.zeros(6), 0.1, 3)


def test_closed_step_refuses_an_indefinite_M(rng):
    model = random_nqf(6, 5, seed=3)
    M = np.diag([1.0, 1.0, 1.0, 1.0, -0.5])
    for d in (2, 10):
        with pytest.raises(
            ValueError,
            match=rf"not realisable by any width-{d} weights.*positive "
            r"semi-definite",
        ):
            model.closed_step(M, np.zeros(5), d, np.zeros(6), 0.1)


def test_closed_step_refuses_rank_above_the_width(rng):
    """M PSD of rank 4 with mu = 0 needs 4 neurons orthogonal to 1, i.e. width
    >= 5."""
    model = random_nqf(6, 5, seed=3)
    M, mu = np.diag([1.0, 2.0, 3.0, 4.0, 0.0]), np.zeros(5)
    with pytest.raises(
        ValueError, match=r"has rank 4 > d - 1 = 2.*width d >= 5"
    ):
        model.closed_step(M, mu, 3, np.zeros(6), 0.1)
    with pytest.raises(ValueError, match=r"rank 5 > d - 1 = 2"):
        model.train_closed(np.eye(5), np.zeros(5), 3, np.zeros(6), 0.1, 2)
    model.closed_step(M, mu, 5, np.zeros(6), 0.1)  # width 5 realises it


def test_closed_step_refuses_mu_inconsistent_with_M(rng):
    """M = I is realisable, but not with mu = 3 * 1 at width 2: |mu|^2 / d =
    22.5 > 1."""
    model = random_nqf(6, 5, seed=3)
    with pytest.raises(
        ValueError, match="M - mu mu\\^T/d must be positive semi-definite"
    ):
        model.closed_step(np.eye(5), 3 * np.ones(5), 2, np.zeros(6), 0.1)
    model.closed_step(np.eye(5), np.ones(5) / 10, 8, np.zeros(6), 0.1)


def test_trusted_skips_the_realisability_check(rng):
    model = random_nqf(6, 5, seed=3)
    M = np.diag([1.0, 1.0, 1.0, 1.0, -0.5])
    out, _ = model.closed_step(
        M, np.zeros(5), 10, np.zeros(6), 0.1, trusted=True
    )
    assert out.shape == (5, 5)


def test_realisable_states_stay_accepted_for_hundreds_of_steps(rng):
    """Width 2 < p = 5: M - mu mu^T/d is singular; every step re-checks it and
    must not flag rounding."""
    model = random_nqf(8, 5, scale_g=0.2, scale_B=0.1, seed=4)
    y = rng.standard_normal(8)
    W, M, mu = _state(rng, d=2)
    W = 0.3 * W
    M, mu = moments(W)
    for t in range(300):
        batch = rng.choice(8, 3, replace=False) if t % 2 else None
        M, mu = model.closed_step(M, mu, 2, y, 0.05, batch=batch)
        W = model.gd_step(W, y, 0.05, batch=batch)
    assert np.max(np.abs(M - W @ W.T)) < 1e-10


@pytest.mark.parametrize(
    "bad, exc",
    [
        ("abc", TypeError),
        (1.5, TypeError),
        (True, TypeError),
        (-1, ValueError),
    ],
)
def test_rng_is_validated_by_name(bad, exc):
    M, mu = moments(np.random.default_rng(0).standard_normal((3, 4)))
    with pytest.raises(exc, match="rng"):
        realize_moments(M, mu, 5, rng=bad)
    with pytest.raises(exc, match="rng"):
        frame_orthogonal_to_ones(5, rng=bad)


def test_rng_accepts_seed_generator_and_seed_sequence():
    M, mu = moments(np.random.default_rng(0).standard_normal((3, 4)))
    a = realize_moments(M, mu, 6, rng=7)
    b = realize_moments(M, mu, 6, rng=np.random.default_rng(7))
    c = realize_moments(M, mu, 6, rng=np.random.SeedSequence(7))
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert np.max(np.abs(a @ a.T - M)) < 1e-12


def test_check_realizable_directly():
    W = np.random.default_rng(1).standard_normal((4, 6))
    M, mu = moments(W)
    check_realizable(M, mu, 6)
    check_realizable(M, mu, 60)
    with pytest.raises(ValueError, match="rank 4 > d - 1 = 3"):
        check_realizable(M, mu, 4)
