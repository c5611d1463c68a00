"""Property-based tests (hypothesis) of the core: closure (Thm 2), compression
(Thm 3), expand (Thm 1).

The examples are reproducible (the derandomised "book" profile of
``tests/conftest.py``). Each property compares two computations that share no
code path: two widths, the closed recursion against explicit weights, a
compressed twin against the full model, autograd against finite differences, a
vector model against its scalar outputs.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nqf_lite import NQF, compress, expand, k_V, moments, realize_moments
from nqf_lite.expansion.form import check_realizable

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

seeds = st.integers(0, 2**32 - 1)
outputs = st.sampled_from([None, 1, 3])


def _sym(rng, shape, scale):
    Z = rng.standard_normal(shape)
    return scale * (Z + np.swapaxes(Z, -1, -2)) / 2


def _model(rng, m, p, V, general, scale=0.2):
    lead = (m,) if V is None else (m, V)
    A = _sym(rng, lead + (p, p), scale)
    if not general:
        return NQF(A)
    return NQF(
        A,
        g=scale * rng.standard_normal(lead + (p,)),
        B=_sym(rng, lead + (p, p), scale / 2),
        f0=rng.standard_normal(lead),
    )


def _labels(rng, m, V):
    return rng.standard_normal((m,) if V is None else (m, V))


# -----------------------------------------------------------------------------
# Theorem 2
@SETTINGS
@given(
    seeds,
    st.integers(1, 5),
    st.integers(1, 6),
    st.integers(1, 8),
    outputs,
    st.integers(1, 30),
)
def test_closure_across_widths(seed, p, d1, extra, V, steps):
    """Two realisations of the same (M, mu) at widths d1 and d1 + extra predict
    alike after k steps (ZGZ)."""
    rng = np.random.default_rng(seed)
    m = 5
    model = _model(rng, m, p, V, general=False)
    y = _labels(rng, m, V)
    Wa = 0.3 * rng.standard_normal((p, d1))
    Wb = realize_moments(*moments(Wa), d1 + extra, rng=rng)
    for t in range(steps):
        batch = rng.choice(m, 2, replace=False) if t % 2 else None
        Wa, Wb = (
            model.gd_step(Wa, y, 0.05, batch=batch),
            model.gd_step(Wb, y, 0.05, batch=batch),
        )
    fa, fb = model.predict_W(Wa), model.predict_W(Wb)
    assert np.max(np.abs(fa - fb)) <= 1e-10 * (1 + np.max(np.abs(fa)))


@SETTINGS
@given(
    seeds,
    st.integers(1, 5),
    st.integers(1, 8),
    outputs,
    st.booleans(),
    st.integers(1, 30),
    st.sampled_from([0.0, 0.05]),
)
def test_closed_step_equals_gd_step(seed, p, d, V, general, steps, wd):
    rng = np.random.default_rng(seed)
    m = 6
    model = _model(rng, m, p, V, general)
    y = _labels(rng, m, V)
    W = 0.3 * rng.standard_normal((p, d))
    M, mu = moments(W)
    batches = [
        rng.choice(m, 3, replace=False) if t % 3 else None
        for t in range(steps)
    ]
    for batch in batches:
        W = model.gd_step(W, y, 0.03, batch=batch, weight_decay=wd)
        M, mu = model.closed_step(
            M, mu, d, y, 0.03, batch=batch, weight_decay=wd
        )
    scale = 1 + np.max(np.abs(W)) ** 2
    assert np.max(np.abs(M - W @ W.T)) <= 1e-11 * scale
    assert np.max(np.abs(mu - W.sum(1))) <= 1e-11 * scale
    (M_T, mu_T), preds = model.train_closed(*moments(W), d, y, 0.03, 0)
    assert np.array_equal(M_T, M_T.T) and preds.shape == (1,) + y.shape


@SETTINGS
@given(seeds, st.integers(2, 5), st.integers(1, 6))
def test_realisable_exactly_at_the_widths_that_hold_the_moments(seed, p, d):
    """Moments of a generic (p, d) layer are realisable at width d and above;
    below, only if d > p + 1."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((p, d))
    M, mu = moments(W)
    for width in (d, d + 1, 3 * d + 5):
        check_realizable(M, mu, width)
    if (
        d >= 2 and d - 1 <= p
    ):  # rank(M - mu mu^T/(d-1)) = d > d - 2: not realisable at width d - 1
        try:
            check_realizable(M, mu, d - 1)
        except ValueError as exc:
            assert "not realisable" in str(exc)
        else:
            raise AssertionError(
                f"moments of width {d} accepted at width {d - 1}"
            )


# -----------------------------------------------------------------------------
# Theorem 3
@SETTINGS
@given(
    seeds,
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(0, 2),
    outputs,
)
def test_compression_with_g_A_B_in_different_subspaces(
    seed, kg, kA, kB, shared, V
):
    """g, A and B each live in their own random subspace (sharing ``shared``
    directions with A)."""
    rng = np.random.default_rng(seed)
    p, m = 10, 6
    lead = (m,) if V is None else (m, V)
    Q = np.linalg.qr(rng.standard_normal((p, p)))[0]
    cols_A = list(range(kA))
    shared = min(shared, kA)
    cols_g = cols_A[:shared] + list(range(kA, kA + kg))
    cols_B = cols_A[kA - shared :] + list(range(kA + kg, kA + kg + kB))

    def sym_in(cols, scale):
        Z = rng.standard_normal(lead + (len(cols), len(cols)))
        return scale * np.einsum(
            "ia,...ab,jb->...ij",
            Q[:, cols],
            Z + np.swapaxes(Z, -1, -2),
            Q[:, cols],
        )

    g = 0.1 * rng.standard_normal(lead + (len(cols_g),)) @ Q[:, cols_g].T
    model = NQF(
        sym_in(cols_A, 0.1),
        g=g,
        B=sym_in(cols_B, 0.05),
        f0=rng.standard_normal(lead),
    )
    k = len(set(cols_A) | set(cols_g) | set(cols_B))
    assert k_V(model) == k
    d, lr = k + 6, 0.02
    y = _labels(rng, m, V)
    W = 0.3 * rng.standard_normal((p, d))
    small, Ws, lr_s = compress(model, W, lr)
    assert Ws.shape == (p, k + 1)
    for t in range(25):
        batch = rng.choice(m, 3, replace=False) if t % 2 else None
        W, Ws = (
            model.gd_step(W, y, lr, batch=batch),
            small.gd_step(Ws, y, lr_s, batch=batch),
        )
    f, fs = model.predict_W(W), small.predict_W(Ws)
    assert np.max(np.abs(f - fs)) <= 1e-10 * (1 + np.max(np.abs(f)))


# -----------------------------------------------------------------------------
# Theorem 1
def _random_module(seed: int, p: int, n_units: int):
    """A random smooth S_d-symmetric module: per-neuron polynomial and tanh
    units plus a smooth function of mu.

    f(W) = sum_i [ sum_u a_u tanh(b_u . w_i + c_u x) + (w_i . e)^2 (w_i . e') +
    q (w_i . e)^2 ]
           + s sin(mu . h + x) + r (mu . h)^2
    """
    gen = np.random.default_rng(seed)
    a, c = gen.standard_normal(n_units), gen.standard_normal(n_units)
    b = torch.tensor(gen.standard_normal((n_units, p)))
    e, e2, h = (torch.tensor(gen.standard_normal(p)) for _ in range(3))
    q, s, r = gen.standard_normal(3)
    a_t, c_t = torch.tensor(a), torch.tensor(c)

    def f(W, x):
        pre = b @ W + (c_t * x)[:, None]  # (units, d)
        per = (
            (a_t[:, None] * torch.tanh(pre)).sum(0)
            + (e @ W) ** 2 * (e2 @ W)
            + q * (e @ W) ** 2
        )
        mu = W.sum(1)
        return per.sum() + s * torch.sin(mu @ h + x) + r * (mu @ h) ** 2

    return f


def _fd_hessian(F, n, h=1e-4):
    H = np.zeros((n, n))
    E = np.eye(n) * h
    for i in range(n):
        for j in range(i, n):
            H[i, j] = H[j, i] = (
                F(E[i] + E[j])
                - F(E[i] - E[j])
                - F(E[j] - E[i])
                + F(-E[i] - E[j])
            ) / (4 * h * h)
    return H


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seeds, st.integers(1, 3), st.integers(1, 3), st.floats(-1.0, 1.0))
def test_expand_against_finite_differences(seed, p, n_units, x):
    f = _random_module(seed, p, n_units)
    e = expand(f, x, p)

    def F(theta):
        return float(f(torch.as_tensor(theta).reshape(2, p).T, x))

    n = 2 * p
    H = _fd_hessian(F, n)
    grad = np.array(
        [
            (F(np.eye(n)[i] * 1e-6) - F(-np.eye(n)[i] * 1e-6)) / 2e-6
            for i in range(n)
        ]
    )
    tol = 1e-5 * (1 + np.max(np.abs(H)))
    assert (
        np.max(np.abs(H[:p, :p] / 2 - (e.A + e.B))) < tol
    )  # diagonal block: A_s = A + B
    assert np.max(np.abs(H[:p, p:] / 2 - e.B)) < tol  # off-diagonal block: B
    assert np.max(np.abs(grad[:p] - e.g)) < 1e-6 * (1 + np.max(np.abs(grad)))
    assert abs(float(e.f0) - F(np.zeros(n))) < 1e-14


# -----------------------------------------------------------------------------
# broadcasting
@SETTINGS
@given(
    seeds,
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(2, 4),
    st.booleans(),
)
def test_vector_model_equals_its_scalar_outputs(seed, p, d, V, general):
    """An (m, V) model predicts, output by output, what the V scalar models
    predict."""
    rng = np.random.default_rng(seed)
    model = _model(rng, 4, p, V, general)
    W = rng.standard_normal((p, d))
    M, mu = moments(W)
    batch = np.array([3, 0, 3])
    full, part = model.predict(M, mu), model.predict(M, mu, batch=batch)
    assert full.shape == (4, V) and part.shape == (3, V)
    for o in range(V):
        scalar = NQF(
            model.A[:, o], g=model.g[:, o], B=model.B[:, o], f0=model.f0[:, o]
        )
        assert np.max(np.abs(full[:, o] - scalar.predict_W(W))) <= 1e-12 * (
            1 + np.max(np.abs(full))
        )
        assert np.max(np.abs(part[:, o] - full[batch, o])) <= 1e-14 * (
            1 + np.max(np.abs(full))
        )
