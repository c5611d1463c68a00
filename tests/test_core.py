"""Tests of the core: expand (Thm 1, Eq. 20), NQF training (Thm 2) and
compression (Thm 3)."""

import numpy as np
import pytest
import torch

from nqf_lite import (
    NQF,
    NotSmoothError,
    NotSymmetricError,
    compress,
    data_subspace,
    expand,
    expand_dataset,
    k_V,
    moments,
    realize_moments,
)

# ----------------------------------------------------------------- modules
# used below
K = 4


def mlp(act):
    def f(W, x):
        return (W[K] * act(x @ W[:K])).sum()

    return f


def mlp_vec(n_out):
    def f(W, x):
        return W[K : K + n_out] @ torch.tanh(x @ W[:K])

    return f


def random_smooth_module(p, seed):
    """A random C^infinity symmetric module with g, B != 0: sum_i phi(w_i) +
    psi(mu)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(p, generator=g)
    S = torch.randn(p, p, generator=g)
    c = torch.randn(p, generator=g)
    T = torch.randn(p, p, generator=g)

    def f(W, x):
        per = torch.tanh(W.T @ a + x) * (W.T @ c) + torch.einsum(
            "id,ij,jd->d", W, S, W
        )
        mu = W.sum(1)
        return per.sum() + torch.sin(mu @ c + x) + torch.cos(mu @ T @ mu)

    return f


def hessian_fd(F, n, h=1e-4):
    """Central finite-difference Hessian of a scalar numpy function at 0."""
    E = np.eye(n) * h
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            H[i, j] = (
                F(E[i] + E[j])
                - F(E[i] - E[j])
                - F(-E[i] + E[j])
                + F(-E[i] - E[j])
            ) / (4 * h * h)
    return H


# -----------------------------------------------------------------------------
# moments
def test_moments_definition(rng):
    W = rng.standard_normal((3, 5))
    M, mu = moments(W)
    assert np.allclose(
        M, sum(np.outer(W[:, i], W[:, i]) for i in range(5)), atol=1e-14
    )
    assert np.allclose(
        mu, W[:, 0] + W[:, 1] + W[:, 2] + W[:, 3] + W[:, 4], atol=1e-14
    )


def test_moments_rejects_bad_input():
    with pytest.raises(ValueError, match="W must have 2 axes"):
        moments(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        moments(np.array([[1.0, np.nan]]))


# -----------------------------------------------------------------------------
# expand
def test_expand_tanh_mlp_matches_proposition_1():
    x = torch.tensor([0.3, -1.2, 0.7, 2.0])
    e = expand(mlp(torch.tanh), x, K + 1)
    A = np.zeros((K + 1, K + 1))
    A[:K, K] = A[K, :K] = x.numpy() / 2  # tanh'(0) = 1
    assert np.max(np.abs(e.A - A)) < 1e-12
    assert e.zgz and e.V is None and e.p == K + 1
    assert float(e.f0) == 0.0


def test_expand_sigmoid_has_linear_term():
    x = torch.tensor([0.3, -1.2, 0.7, 2.0])
    e = expand(mlp(torch.sigmoid), x, K + 1)
    g = np.zeros(K + 1)
    g[K] = 0.5  # sigma(0) on the readout
    assert np.max(np.abs(e.g - g)) < 1e-12
    assert (
        np.max(np.abs(e.A[:K, K] - x.numpy() / 8)) < 1e-12
    )  # sigmoid'(0) = 1/4
    assert not e.zgz
    assert "ZGZ violated" in str(e)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expand_against_finite_differences(seed):
    p, d = 3, 2
    f = random_smooth_module(p, seed)
    x = 0.4 * seed - 0.3
    e = expand(f, torch.tensor(x), p)

    def F(theta):
        return f(
            torch.as_tensor(theta).reshape(d, p).T, torch.tensor(x)
        ).item()

    H = hessian_fd(F, d * p)
    assert np.max(np.abs(H[:p, :p] / 2 - (e.A + e.B))) < 1e-6  # A_s = A + B
    assert np.max(np.abs(H[:p, p:] / 2 - e.B)) < 1e-6
    grad = np.array(
        [
            (F(np.eye(d * p)[i] * 1e-6) - F(-np.eye(d * p)[i] * 1e-6)) / 2e-6
            for i in range(p)
        ]
    )
    assert np.max(np.abs(grad - e.g)) < 1e-6
    assert abs(float(e.f0) - F(np.zeros(d * p))) < 1e-14


@pytest.mark.parametrize("seed", [0, 1])
def test_expansion_error_is_cubic(seed):
    p = 3
    f = random_smooth_module(p, seed)
    x = torch.tensor(0.2)
    e = expand(f, x, p, d=5)
    W = np.random.default_rng(seed).standard_normal((p, 5))
    errs = [
        abs(f(torch.as_tensor(h * W), x).item() - e.predict(h * W))
        for h in (1e-1, 1e-2)
    ]
    slope = np.log10(errs[0] / errs[1])
    assert 2.7 < slope < 3.3


def test_expand_constant_per_neuron_depends_on_width():
    """f(0) = d * phi(0) for an additive module: the expansion carries its
    width."""

    def f(W, x):
        return (torch.cos(W[0]) + W[0] * W[1] * x).sum()

    for d in (2, 3, 7):
        e = expand(f, torch.tensor(0.5), 2, d=d)
        assert e.d == d and abs(float(e.f0) - d) < 1e-14
        assert np.allclose(e.A, [[-0.5, 0.25], [0.25, 0.0]], atol=1e-14)
        W = 1e-3 * np.ones((2, d))
        assert (
            abs(e.predict(W) - f(torch.as_tensor(W), torch.tensor(0.5)).item())
            < 1e-11
        )
    with pytest.raises(ValueError, match="width this expansion was taken at"):
        e.predict(np.ones((2, 3)))


def test_expand_vector_output():
    x = torch.tensor([0.3, -1.2, 0.7, 2.0])
    e = expand(mlp_vec(3), x, K + 3)
    assert (
        e.A.shape == (3, K + 3, K + 3) and e.V == 3 and e.g.shape == (3, K + 3)
    )
    for o in range(3):
        A = np.zeros((K + 3, K + 3))
        A[:K, K + o] = A[K + o, :K] = x.numpy() / 2
        assert np.max(np.abs(e.A[o] - A)) < 1e-12


def test_expand_rejects_relu_at_origin():
    x = torch.tensor([0.3, -1.2, 0.7, 2.0])
    with pytest.raises(NotSmoothError, match="not differentiable at W = 0"):
        expand(mlp(torch.relu), x, K + 1)


def test_expand_rejects_non_symmetric_module():
    def f(W, x):  # neuron 0 is special
        return (W[:, 0] ** 2).sum() + (W[:, 1:] ** 2).sum() * 2

    with pytest.raises(NotSymmetricError, match="symmetric"):
        expand(f, None, 2)


def test_expand_rejects_symmetric_looking_hessian_but_asymmetric_function():
    def f(
        W,
        x,
        # equal derivatives at 0 but the first neuron enters a quartic term
        # alone
    ):
        return (W**2).sum() + W[0, 0] ** 4

    with pytest.raises(NotSymmetricError, match="permut"):
        expand(f, None, 2)


def test_expand_bad_arguments():
    f = mlp(torch.tanh)
    x = torch.zeros(K)
    with pytest.raises(TypeError, match="callable"):
        expand(3, x, K + 1)
    with pytest.raises(TypeError, match="p must be a positive integer"):
        expand(f, x, 2.5)
    with pytest.raises(ValueError, match="d must be >= 2"):
        expand(f, x, K + 1, d=1)
    with pytest.raises(TypeError, match="torch tensor"):
        expand(lambda W, x: 1.0, x, 2)
    with pytest.raises(ValueError, match="scalar or a \\(V,\\) vector"):
        expand(lambda W, x: W @ W.T, x, 2)


def test_expand_dataset_stacks():
    xs = [
        torch.randn(K, generator=torch.Generator().manual_seed(i))
        for i in range(4)
    ]
    model = expand_dataset(mlp(torch.tanh), xs, K + 1)
    assert model.A.shape == (4, K + 1, K + 1) and model.zgz
    assert np.allclose(model.A[2, :K, K], xs[2].numpy() / 2, atol=1e-14)


# --------------------------------------------------------------------------
# NQF basics
def random_model(rng, m=10, p=5, V=None, general=False, scale=0.3):
    shape = (m, p, p) if V is None else (m, V, p, p)
    A = rng.standard_normal(shape) * scale
    A = A + np.swapaxes(A, -1, -2)
    if not general:
        return NQF(A)
    B = rng.standard_normal(shape) * scale
    B = B + np.swapaxes(B, -1, -2)
    g = rng.standard_normal(shape[:-1]) * scale
    f0 = rng.standard_normal(shape[:-2])
    return NQF(A, g=g, B=B, f0=f0)


def test_predict_matches_neuron_sum(rng):
    model = random_model(rng, general=True)
    W = rng.standard_normal((5, 3))
    direct = [
        model.f0[n]
        + model.g[n] @ W.sum(1)
        + W.sum(1) @ model.B[n] @ W.sum(1)
        + sum(W[:, i] @ model.A[n] @ W[:, i] for i in range(3))
        for n in range(model.m)
    ]
    assert np.max(np.abs(model.predict_W(W) - direct)) < 1e-12


def test_gradient_matches_torch_autograd(rng):
    model = random_model(rng, V=2, general=True)
    y = rng.standard_normal((10, 2))
    W = rng.standard_normal((5, 4))
    batch = np.array([1, 4, 7])
    Wt = torch.tensor(W, requires_grad=True)
    mu = Wt.sum(1)
    A, B, g, f0 = (
        torch.tensor(a) for a in (model.A, model.B, model.g, model.f0)
    )
    f = (
        f0
        + g @ mu
        + torch.einsum("novij,i,j->nov".replace("v", ""), B, mu, mu)
        + torch.einsum("noij,ij->no", A, Wt @ Wt.T)
    )
    loss = ((f[batch] - torch.tensor(y)[batch]) ** 2).sum() / len(batch)
    loss.backward()
    assert (
        np.max(np.abs(model.grad_W(W, y, batch=batch) - Wt.grad.numpy()))
        < 1e-12
    )
    assert abs(model.loss_W(W, y, batch=batch) - loss.item()) < 1e-12


@pytest.mark.parametrize("V", [None, 3])
@pytest.mark.parametrize("general", [False, True])
def test_closed_step_equals_explicit_step(rng, V, general):
    model = random_model(rng, V=V, general=general, scale=0.1)
    y = rng.standard_normal((10,) if V is None else (10, V))
    W = 0.2 * rng.standard_normal((5, 7))
    M, mu = moments(W)
    for step in range(300):
        batch = rng.choice(10, 4, replace=False) if step % 2 else None
        W = model.gd_step(W, y, 0.05, batch=batch, weight_decay=0.01)
        M, mu = model.closed_step(
            M, mu, 7, y, 0.05, batch=batch, weight_decay=0.01
        )
    M_w, mu_w = moments(W)
    assert np.max(np.abs(M - M_w)) < 1e-10
    assert np.max(np.abs(mu - mu_w)) < 1e-10


@pytest.mark.parametrize("minibatch", [False, True])
def test_closure_across_widths_zgz(rng, minibatch):
    """Theorem 2: widths 3 and 40 from the same (M, mu) predict identically at
    every step."""
    model = random_model(rng, m=12, p=4, scale=0.2)
    y = rng.standard_normal(12)
    W0 = 0.1 * rng.standard_normal((4, 3))
    M0, mu0 = moments(W0)
    Wa, Wb = W0, realize_moments(M0, mu0, 40, rng=1)
    worst = 0.0
    for _ in range(400):
        batch = rng.choice(12, 5, replace=False) if minibatch else None
        Wa = model.gd_step(Wa, y, 0.05, batch=batch)
        Wb = model.gd_step(Wb, y, 0.05, batch=batch)
        worst = max(
            worst, np.max(np.abs(model.predict_W(Wa) - model.predict_W(Wb)))
        )
    assert worst < 1e-10
    assert model.loss_W(Wa, y) < 0.9 * model.loss_W(W0, y)  # it did learn


def test_general_nqf_width_matters_unless_rescaled(rng):
    """With g, B != 0 the width enters through d*v; Theorem 3's rescaling
    removes it."""
    model = random_model(rng, m=8, p=4, general=True, scale=0.1)
    y = rng.standard_normal(8)
    d, d2 = 30, 6
    naive = 0.1 * rng.standard_normal((4, d2))
    M, mu = moments(naive)
    Wa = realize_moments(M, mu, d, rng=2)  # same (M, mu), wider
    ratio = d / d2
    scaled = realize_moments(M * ratio, mu, d2, rng=2)  # M~ = (d/d') M
    scaled_model = NQF(model.A / ratio, g=model.g, B=model.B, f0=model.f0)
    gap_naive = gap_scaled = 0.0
    for _ in range(200):
        batch = rng.choice(8, 3, replace=False)
        Wa = model.gd_step(Wa, y, 0.005, batch=batch)
        naive = model.gd_step(naive, y, 0.005, batch=batch)
        scaled = scaled_model.gd_step(scaled, y, 0.005 * ratio, batch=batch)
        ref = model.predict_W(Wa)
        gap_naive = max(
            gap_naive, np.max(np.abs(ref - model.predict_W(naive)))
        )
        gap_scaled = max(
            gap_scaled, np.max(np.abs(ref - scaled_model.predict_W(scaled)))
        )
    assert gap_naive > 1e-2
    assert gap_scaled < 1e-10


def test_nqf_rejects_bad_input(rng):
    A = rng.standard_normal((3, 4, 4))
    with pytest.raises(ValueError, match="A must be symmetric"):
        NQF(A)
    A = A + np.swapaxes(A, -1, -2)
    with pytest.raises(ValueError, match="A must have 3 or 4 axes"):
        NQF(A[0])
    with pytest.raises(ValueError, match="A contains NaN"):
        NQF(np.where(A > 1, np.nan, A))
    with pytest.raises(ValueError, match="g must have shape"):
        NQF(A, g=np.zeros((3, 5)))
    with pytest.raises(TypeError, match="A must be a real numeric array"):
        NQF("not an array")
    model = NQF(A)
    W = rng.standard_normal((4, 2))
    with pytest.raises(ValueError, match="W must have shape \\(p=4, d\\)"):
        model.gd_step(rng.standard_normal((5, 2)), np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="lr must be finite and > 0"):
        model.gd_step(W, np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="lr must be finite and > 0"):
        model.closed_step(*moments(W), 2, np.zeros(3), -1.0)
    with pytest.raises(ValueError, match="d must be >= 1"):
        model.closed_step(*moments(W), 0, np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="y must have shape \\(3,\\)"):
        model.loss_W(W, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="y contains NaN"):
        model.loss_W(W, np.array([0.0, np.inf, 1.0]))
    with pytest.raises(ValueError, match="batch indices must lie in"):
        model.gd_step(W, np.zeros(3), 0.1, batch=np.array([0, 3]))
    with pytest.raises(TypeError, match="integer sample indices"):
        model.gd_step(W, np.zeros(3), 0.1, batch=np.array([0.5]))
    with pytest.raises(
        ValueError, match="weight_decay must be finite and >= 0"
    ):
        model.gd_step(W, np.zeros(3), 0.1, weight_decay=-1)


def test_vector_model_rejects_scalar_labels(rng):
    model = random_model(rng, m=3, p=4, V=2)
    with pytest.raises(ValueError, match="V = 2"):
        model.loss_W(rng.standard_normal((4, 2)), np.zeros(3))


# -----------------------------------------------------------------------
# realize_moments
def test_realize_moments_is_exact(rng):
    W = rng.standard_normal((5, 3))
    M, mu = moments(W)
    for d in (3, 4, 50):
        W2 = realize_moments(M, mu, d, rng=d)
        M2, mu2 = moments(W2)
        assert W2.shape == (5, d)
        assert (
            np.max(np.abs(M2 - M)) < 1e-12 and np.max(np.abs(mu2 - mu)) < 1e-12
        )


def test_realize_moments_rejects_impossible(rng):
    W = rng.standard_normal((5, 6))
    W -= W.mean(axis=1, keepdims=True)  # mu = 0, rank-5 M
    M, mu = moments(W)
    with pytest.raises(ValueError, match="needs width >= 6"):
        realize_moments(M, mu, 3)
    with pytest.raises(ValueError, match="positive semi-definite"):
        realize_moments(np.zeros((2, 2)), np.ones(2), 3)
    with pytest.raises(ValueError, match="mu must have shape"):
        realize_moments(M, np.ones(4), 8)


# -------------------------------------------------------------------------
# compression
def low_rank_model(rng, m=9, p=12, q=4, V=None, general=True):
    basis = np.linalg.qr(rng.standard_normal((p, q)))[0]
    lead = (m,) if V is None else (m, V)
    core = rng.standard_normal(lead + (q, q))
    A = (
        np.einsum(
            "ia,...ab,jb->...ij",
            basis,
            core + np.swapaxes(core, -1, -2),
            basis,
        )
        * 0.1
    )
    if not general:
        return NQF(A), basis
    core = rng.standard_normal(lead + (q, q))
    B = (
        np.einsum(
            "ia,...ab,jb->...ij",
            basis,
            core + np.swapaxes(core, -1, -2),
            basis,
        )
        * 0.05
    )
    g = rng.standard_normal(lead + (q,)) @ basis.T * 0.1
    return NQF(A, g=g, B=B, f0=rng.standard_normal(lead)), basis


def test_data_subspace_dimension(rng):
    model, basis = low_rank_model(rng)
    V = data_subspace(model)
    assert k_V(model) == 4 and V.shape == (12, 4)
    assert np.max(np.abs(V @ V.T - basis @ basis.T)) < 1e-10


@pytest.mark.parametrize("V", [None, 2])
@pytest.mark.parametrize("general", [False, True])
def test_compression_is_exact_for_hundreds_of_steps(rng, V, general):
    model, _ = low_rank_model(rng, V=V, general=general)
    y = rng.standard_normal((9,) if V is None else (9, V))
    lr = (
        2e-4 if general else 1e-2
    )  # the d*v term of Eq. 23 grows with the width
    W = 0.01 * rng.standard_normal((12, 1000))
    small, Ws, lr_s = compress(model, W, lr)
    assert Ws.shape == (12, 5) and np.isclose(lr_s, lr * 1000 / 5)
    loss0 = model.loss_W(W, y)
    worst = 0.0
    for step in range(300):
        batch = rng.choice(9, 4, replace=False) if step % 3 else None
        W = model.gd_step(W, y, lr, batch=batch)
        Ws = small.gd_step(Ws, y, lr_s, batch=batch)
        worst = max(
            worst, np.max(np.abs(model.predict_W(W) - small.predict_W(Ws)))
        )
    assert worst < 1e-10
    assert model.loss_W(W, y) < 0.9 * loss0  # it trained


def test_compression_not_preserved_off_the_data_span(rng):
    model, _ = low_rank_model(rng, general=False)
    y = rng.standard_normal(9)
    W = 0.3 * rng.standard_normal((12, 200))
    small, Ws, lr_s = compress(model, W, 0.01)
    A_test = rng.standard_normal((5, 12, 12))
    test, test_small = NQF(A_test + np.swapaxes(A_test, 1, 2)), None
    test_small = NQF(test.A * 5 / 200)
    for _ in range(100):
        W = model.gd_step(W, y, 0.01)
        Ws = small.gd_step(Ws, y, lr_s)
    assert np.max(np.abs(model.predict_W(W) - small.predict_W(Ws))) < 1e-10
    assert np.max(np.abs(test.predict_W(W) - test_small.predict_W(Ws))) > 1e-2


def test_compress_rejects_small_width(rng):
    model, _ = low_rank_model(rng)
    with pytest.raises(ValueError, match="nothing to compress"):
        compress(model, rng.standard_normal((12, 5)), 0.1)
    with pytest.raises(ValueError, match="lr must be finite and > 0"):
        compress(model, rng.standard_normal((12, 50)), 0.0)
    with pytest.raises(TypeError, match="model must be an NQF"):
        compress("model", rng.standard_normal((12, 50)), 0.1)


# ------------------------------------------------------ training loops
# (NQF.train, train_closed)
from nqf_lite import compression_residual, random_nqf  # noqa: E402


@pytest.mark.parametrize("V", [None, 2])
@pytest.mark.parametrize("general", [False, True])
def test_train_equals_loop_of_gd_step_and_closed_recursion(rng, V, general):
    model = random_model(rng, m=6, p=4, V=V, general=general, scale=0.1)
    y = rng.standard_normal((6,) if V is None else (6, V))
    W0 = 0.2 * rng.standard_normal((4, 5))
    steps, lr, wd = 40, 0.05, 0.01
    batches = [rng.choice(6, 3, replace=False) for _ in range(steps)]
    W_T, preds = model.train(
        W0, y, lr, steps, batches=batches, weight_decay=wd
    )
    # expected: an explicit loop of gd_step, predictions by the neuron sum of
    # Eq. 20
    W, expected = W0, []
    for t in range(steps + 1):
        mu = W.sum(1)
        expected.append(
            model.f0
            + model.g @ mu
            + np.einsum("...ij,i,j->...", model.B, mu, mu)
            + sum(
                np.einsum("...ij,i,j->...", model.A, W[:, i], W[:, i])
                for i in range(W.shape[1])
            )
        )
        if t < steps:
            W = model.gd_step(W, y, lr, batch=batches[t], weight_decay=wd)
    lead = (6,) if V is None else (6, V)
    assert preds.shape == (steps + 1,) + lead
    assert np.max(np.abs(W_T - W)) == 0.0
    assert np.max(np.abs(preds - np.array(expected))) < 1e-12
    (M_T, mu_T), preds_c = model.train_closed(
        *moments(W0), 5, y, lr, steps, batches=batches, weight_decay=wd
    )
    assert np.max(np.abs(preds_c - preds)) < 1e-10
    assert (
        np.max(np.abs(M_T - W_T @ W_T.T)) < 1e-10
        and np.max(np.abs(mu_T - W_T.sum(1))) < 1e-10
    )


def test_train_full_batch_and_zero_steps(rng):
    model = random_model(rng, m=5, p=3, scale=0.2)
    y = rng.standard_normal(5)
    W0 = 0.3 * rng.standard_normal((3, 4))
    W, preds = model.train(W0, y, 0.02, 0)
    assert preds.shape == (1, 5) and np.array_equal(W, W0)
    W, preds = model.train(W0, y, 0.02, 3, progress=False)
    W_loop = model.gd_step(
        model.gd_step(model.gd_step(W0, y, 0.02), y, 0.02), y, 0.02
    )
    assert np.array_equal(W, W_loop) and preds.shape == (4, 5)
    (M, mu), preds_c = model.train_closed(
        W0 @ W0.T, W0.sum(1), 4, y, 0.02, np.int64(3)
    )
    assert (
        np.max(np.abs(M - W_loop @ W_loop.T)) < 1e-12
        and np.max(np.abs(preds_c - preds)) < 1e-12
    )


def test_train_rejects_bad_input(rng):
    model = random_model(rng, m=5, p=3)
    y, W = rng.standard_normal(5), rng.standard_normal((3, 2))
    M, mu = moments(W)
    with pytest.raises(
        ValueError, match="steps must be a non-negative integer"
    ):
        model.train(W, y, 0.1, -1)
    with pytest.raises(
        TypeError, match="steps must be a non-negative integer"
    ):
        model.train(W, y, 0.1, 2.0)
    with pytest.raises(TypeError, match="steps"):
        model.train_closed(M, mu, 2, y, 0.1, True)
    with pytest.raises(
        ValueError,
        match=r"batches must hold one index array per step \(3\), got 2",
    ):
        model.train(W, y, 0.1, 3, batches=[np.array([0]), np.array([1])])
    with pytest.raises(
        ValueError, match=r"batches\[1\]: batch indices must lie in \[0, 5\)"
    ):
        model.train_closed(
            M, mu, 2, y, 0.1, 2, batches=[np.array([0]), np.array([7])]
        )
    with pytest.raises(TypeError, match="batches must be None or a sequence"):
        model.train(W, y, 0.1, 2, batches=5)
    with pytest.raises(ValueError, match="y must have shape"):
        model.train(W, y[:4], 0.1, 2)
    with pytest.raises(ValueError, match="lr"):
        model.train(W, y, -0.1, 2)
    with pytest.raises(ValueError, match="weight_decay"):
        model.train_closed(M, mu, 2, y, 0.1, 2, weight_decay=-1.0)
    with pytest.raises(ValueError, match="d must be >= 1"):
        model.train_closed(M, mu, 0, y, 0.1, 2)
    with pytest.raises(ValueError, match="W must have shape"):
        model.train(W.T, y, 0.1, 2)
    with pytest.raises(FloatingPointError, match="diverged"):
        model.train(100 * W, y, 10.0, 50)


# -----------------------------------------------------------------------------
# random_nqf
@pytest.mark.parametrize("V", [None, 2])
def test_random_nqf_shapes_symmetry_subspace(V):
    model = random_nqf(
        7,
        9,
        3,
        V,
        scale_A=0.5,
        scale_g=0.2,
        scale_B=0.05,
        scale_f0=0.1,
        seed=3,
    )
    lead = (7,) if V is None else (7, V)
    assert model.A.shape == lead + (9, 9) and model.B.shape == lead + (9, 9)
    assert (
        model.g.shape == lead + (9,)
        and model.f0.shape == lead
        and model.V == V
    )
    for X in (model.A, model.B):
        assert np.array_equal(X, np.swapaxes(X, -1, -2))
    assert k_V(model) == 3 and not model.zgz
    # A, B and g live in one 3-dim subspace: stacking them has rank 3
    stacked = np.concatenate(
        [
            model.A.reshape(-1, 9),
            model.B.reshape(-1, 9),
            model.g.reshape(-1, 9),
        ]
    )
    assert np.linalg.matrix_rank(stacked, tol=1e-10) == 3
    assert np.all(model.f0 != 0)


def test_random_nqf_defaults_and_determinism():
    a, b = random_nqf(4, 5, seed=11), random_nqf(4, 5, seed=11)
    assert np.array_equal(a.A, b.A) and a.zgz and not np.any(a.f0)
    assert k_V(a) == 5  # k = p by default
    assert not np.array_equal(a.A, random_nqf(4, 5, seed=12).A)
    assert (
        np.max(np.abs(random_nqf(4, 5, scale_A=2.0, seed=11).A - 2 * a.A))
        < 1e-12
    )
    # a Generator is used as given (and advanced)
    gen = np.random.default_rng(11)
    first, second = random_nqf(4, 5, seed=gen), random_nqf(4, 5, seed=gen)
    assert np.array_equal(first.A, a.A) and not np.array_equal(second.A, a.A)


def test_random_nqf_rejects_bad_input():
    with pytest.raises(ValueError, match="k must satisfy 1 <= k <= p = 4"):
        random_nqf(3, 4, 5)
    with pytest.raises(ValueError, match="m must be a positive integer"):
        random_nqf(0, 4)
    with pytest.raises(TypeError, match="p must be a positive integer"):
        random_nqf(3, 4.0)
    with pytest.raises(ValueError, match="V must be a positive integer"):
        random_nqf(3, 4, V=0)
    with pytest.raises(ValueError, match="scale_g must be finite and >= 0"):
        random_nqf(3, 4, scale_g=-1.0)
    with pytest.raises(
        TypeError, match="seed must be an int or a numpy Generator"
    ):
        random_nqf(3, 4, seed="zero")


# -----------------------------------------------------------
# compress(width=...), Corollary 3
def test_compress_full_width_is_theorem_3(rng):
    model, basis = low_rank_model(rng)  # k_V = 4
    W = 0.1 * rng.standard_normal((12, 30))
    small, Ws, lr_s = compress(model, W, 0.01)
    small5, Ws5, lr_s5 = compress(model, W, 0.01, width=5)
    assert (
        np.array_equal(Ws, Ws5)
        and lr_s == lr_s5
        and np.array_equal(small.A, small5.A)
    )
    # Theorem 3's initial moments, computed independently with the known basis
    P = basis @ basis.T
    M, mu = moments(W)
    assert np.max(np.abs(Ws5 @ Ws5.T - 30 / 5 * P @ M @ P)) < 1e-12
    assert np.max(np.abs(Ws5.sum(1) - P @ mu)) < 1e-12
    assert compression_residual(model, W, 5) < 1e-12


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_truncated_twin_initial_error_corollary_3(rng, width):
    model, basis = low_rank_model(rng)  # k_V = 4
    d = 30
    W = 0.1 * rng.standard_normal((12, d))
    small, Ws, lr_s = compress(model, W, 0.01, width=width)
    assert Ws.shape == (12, width) and np.isclose(lr_s, 0.01 * d / width)
    assert np.allclose(small.A, model.A * width / d, rtol=0, atol=1e-15)
    P = basis @ basis.T
    M, mu = moments(W)
    Ms, mus = moments(Ws)
    e0_measured = np.linalg.norm(width / d * Ms - P @ M @ P) + np.linalg.norm(
        mus - P @ mu
    )
    # Eckart-Young: the discarded eigenvalues of the projected covariance
    # (smallest first)
    lam = np.linalg.eigvalsh(basis.T @ (M - np.outer(mu, mu) / d) @ basis)
    e0_eig = np.sqrt(np.sum(lam[: 4 - (width - 1)] ** 2))
    e0 = compression_residual(model, W, width)
    assert (
        abs(e0 - e0_measured) < 1e-12
        and abs(e0 - e0_eig) < 1e-12
        and e0 > 1e-3
    )
    assert (
        np.max(np.abs(mus - P @ mu)) < 1e-12
    )  # the "+1" neuron carries the mean exactly


def test_truncated_twin_error_shrinks_with_width(rng):
    model, _ = low_rank_model(rng)
    W = 0.1 * rng.standard_normal((12, 30))
    e = [compression_residual(model, W, w) for w in range(1, 6)]
    assert all(a > b for a, b in zip(e, e[1:])) and e[-1] < 1e-12


def test_compress_width_rejects_bad_input(rng):
    model, _ = low_rank_model(rng)  # k_V = 4
    W = rng.standard_normal((12, 30))
    with pytest.raises(ValueError, match=r"1 <= width <= k_V \+ 1 = 5, got 0"):
        compress(model, W, 0.1, width=0)
    with pytest.raises(ValueError, match=r"1 <= width <= k_V \+ 1 = 5, got 6"):
        compress(model, W, 0.1, width=6)
    with pytest.raises(
        ValueError, match="smaller than the model's width d = 4"
    ):
        compress(model, W[:, :4], 0.1, width=4)
    with pytest.raises(TypeError, match="width must be None or an integer"):
        compress(model, W, 0.1, width=2.0)
    with pytest.raises(TypeError, match="width must be None or an integer"):
        compression_residual(model, W, True)
    with pytest.raises(TypeError, match="width must be an integer"):
        compression_residual(model, W, None)
    with pytest.raises(TypeError, match="model must be an NQF"):
        compression_residual("model", W, 2)


# ------------------------------------------ compression with g, A and B in
# DIFFERENT subspaces
def split_subspace_model(rng, m=9, p=12, V=None):
    """g in span(Q0, Q1), A in span(Q1, Q2, Q3), B in span(Q3, Q4, Q5): each
    has private directions.

    Returns the model and Q (p, 6); the data subspace of Theorem 3 is span(Q),
    k_V = 6.
    """
    Q = np.linalg.qr(rng.standard_normal((p, 6)))[0]
    lead = (m,) if V is None else (m, V)

    def sym_in(cols, scale):
        Z = rng.standard_normal(lead + (len(cols), len(cols)))
        return scale * np.einsum(
            "ia,...ab,jb->...ij",
            Q[:, cols],
            Z + np.swapaxes(Z, -1, -2),
            Q[:, cols],
        )

    g = 0.1 * rng.standard_normal(lead + (2,)) @ Q[:, [0, 1]].T
    return NQF(
        sym_in([1, 2, 3], 0.1),
        g=g,
        B=sym_in([3, 4, 5], 0.05),
        f0=rng.standard_normal(lead),
    ), Q


@pytest.mark.parametrize("V", [None, 2])
def test_data_subspace_is_the_union_of_the_g_A_B_subspaces(rng, V):
    model, Q = split_subspace_model(rng, V=V)
    basis = data_subspace(model)
    assert k_V(model) == 6 and basis.shape == (12, 6)
    assert np.max(np.abs(basis @ basis.T - Q @ Q.T)) < 1e-10


@pytest.mark.parametrize("V", [None, 2])
def test_compression_is_exact_with_g_A_B_in_different_subspaces(rng, V):
    model, Q = split_subspace_model(rng, V=V)
    y = rng.standard_normal((9,) if V is None else (9, V))
    d, lr = 30, 0.01
    W = 0.2 * rng.standard_normal((12, d))
    small, Ws, lr_s = compress(model, W, lr)
    assert Ws.shape == (12, 7)
    worst = 0.0
    for _ in range(200):
        batch = rng.choice(9, 4, replace=False)
        W = model.gd_step(W, y, lr, batch=batch)
        Ws = small.gd_step(Ws, y, lr_s, batch=batch)
        worst = max(
            worst, np.max(np.abs(model.predict_W(W) - small.predict_W(Ws)))
        )
    assert worst < 1e-10


@pytest.mark.parametrize(
    "drop", [0, 2, 4], ids=["g-direction", "A-direction", "B-direction"]
)
def test_a_twin_missing_one_private_direction_is_wrong(rng, drop):
    """The test above can fail: a twin built on span(Q) minus one private
    direction mispredicts at once."""
    model, Q = split_subspace_model(rng)
    d, d_small = 30, 6
    W = 0.2 * rng.standard_normal((12, d))
    P = np.delete(Q, drop, axis=1)
    P = P @ P.T
    M, mu = moments(W)
    Ws = realize_moments(d / d_small * P @ M @ P, P @ mu, d_small, rng=0)
    small = NQF(model.A * d_small / d, g=model.g, B=model.B, f0=model.f0)
    assert np.max(np.abs(model.predict_W(W) - small.predict_W(Ws))) > 1e-4


# ----------------------------------------------------------------- the
# symmetry tolerance is pinned
def test_symmetry_tolerance_is_tight(rng):
    """A relative asymmetry of 1e-9 is refused (SYM_RTOL = 1e-10), one of 1e-12
    is accepted."""
    A = rng.standard_normal((3, 4, 4))
    A = A + np.swapaxes(A, -1, -2)
    scale = np.max(np.abs(A))
    E = np.zeros_like(A)
    E[1, 0, 2] = scale
    with pytest.raises(ValueError, match="A must be symmetric"):
        NQF(A + 1e-9 * E)
    with pytest.raises(ValueError, match="B must be symmetric"):
        NQF(A, B=A + 1e-9 * E)
    with pytest.raises(ValueError, match="M must be symmetric"):
        realize_moments(A[0] @ A[0] + 1e-9 * E[1] * scale, np.zeros(4), 5)
    NQF(A + 1e-12 * E)  # rounding-level asymmetry is fine


# ------------------------------------------------------------ batch: equal to
# explicit sub-selection
@pytest.mark.parametrize("V", [None, 2])
def test_batch_equals_explicit_sub_selection(rng, V):
    model = random_model(rng, m=10, p=4, V=V, general=True, scale=0.2)
    y = rng.standard_normal((10,) if V is None else (10, V))
    W = 0.3 * rng.standard_normal((4, 6))
    M, mu = moments(W)
    b = np.array([7, 1, 4])
    sub = NQF(model.A[b], g=model.g[b], B=model.B[b], f0=model.f0[b])
    lr, wd = 0.05, 0.01
    pairs = [
        (model.predict(M, mu, batch=b), sub.predict(M, mu)),
        (model.loss(M, mu, y, batch=b), sub.loss(M, mu, y[b])),
        (model.grad_W(W, y, batch=b), sub.grad_W(W, y[b])),
        (
            model.gd_step(W, y, lr, batch=b, weight_decay=wd),
            sub.gd_step(W, y[b], lr, weight_decay=wd),
        ),
        (
            model.closed_step(M, mu, 6, y, lr, batch=b, weight_decay=wd)[0],
            sub.closed_step(M, mu, 6, y[b], lr, weight_decay=wd)[0],
        ),
        (
            model.closed_step(M, mu, 6, y, lr, batch=b)[1],
            sub.closed_step(M, mu, 6, y[b], lr)[1],
        ),
    ]
    for got, want in pairs:
        assert np.max(np.abs(np.asarray(got) - np.asarray(want))) < 1e-13
    for got, want in zip(model.vH(M, mu, y, batch=b), sub.vH(M, mu, y[b])):
        assert np.max(np.abs(got - want)) < 1e-13
    # and the batch matters: the full-batch step differs
    assert (
        np.max(
            np.abs(model.gd_step(W, y, lr) - model.gd_step(W, y, lr, batch=b))
        )
        > 1e-4
    )


def test_train_batches_equal_explicit_sub_selection(rng):
    model = random_model(rng, m=8, p=3, general=True, scale=0.2)
    y = rng.standard_normal(8)
    W0 = 0.3 * rng.standard_normal((3, 5))
    batches = [rng.choice(8, 3, replace=False) for _ in range(20)]
    W = W0
    for b in batches:
        W = NQF(
            model.A[b], g=model.g[b], B=model.B[b], f0=model.f0[b]
        ).gd_step(W, y[b], 0.05)
    W_T, _ = model.train(W0, y, 0.05, 20, batches=batches)
    (M_T, mu_T), _ = model.train_closed(
        *moments(W0), 5, y, 0.05, 20, batches=batches
    )
    assert np.max(np.abs(W_T - W)) < 1e-13
    assert (
        np.max(np.abs(M_T - W @ W.T)) < 1e-12
        and np.max(np.abs(mu_T - W.sum(1))) < 1e-12
    )


# ------------------------------------------------------- gradient: finite
# differences of the loss
def fd_gradient(loss, W, h=1e-6):
    G = np.zeros_like(W)
    for idx in np.ndindex(*W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        G[idx] = (loss(W + E) - loss(W - E)) / (2 * h)
    return G


@pytest.mark.parametrize("batch", [None, np.array([0, 3, 5])])
@pytest.mark.parametrize("general", [False, True])
def test_steps_follow_the_finite_difference_gradient_of_the_loss(
    rng, batch, general
):
    """gd_step, closed_step and grad_W against central differences of loss_W
    (no factor slips through)."""
    model = random_model(rng, m=6, p=3, V=2, general=general, scale=0.3)
    y = rng.standard_normal((6, 2))
    W = 0.5 * rng.standard_normal((3, 4))
    G = fd_gradient(lambda w: model.loss_W(w, y, batch=batch), W)
    scale = np.max(np.abs(G))
    assert scale > 1e-2
    assert np.max(np.abs(model.grad_W(W, y, batch=batch) - G)) < 1e-7 * scale
    lr, wd = 1e-2, 0.03
    W_new = model.gd_step(W, y, lr, batch=batch, weight_decay=wd)
    assert np.max(np.abs((W - W_new) / lr - (G + wd * W))) < 1e-7 * scale
    M_new, mu_new = model.closed_step(
        *moments(W), 4, y, lr, batch=batch, weight_decay=wd
    )
    W_fd = W - lr * (G + wd * W)
    assert (
        np.max(np.abs(M_new - W_fd @ W_fd.T)) < 1e-8
        and np.max(np.abs(mu_new - W_fd.sum(1))) < 1e-8
    )


# ----------------------------------------------------------------------- no
# progress bars anywhere
def test_training_loops_print_nothing_even_with_progress(rng, capsys):
    import inspect

    import nqf_lite.dynamics.training
    import nqf_lite.expansion.form
    import nqf_lite.experiments.pair
    import nqf_lite.experiments.train

    model = random_model(rng, m=4, p=3)
    W = 0.3 * rng.standard_normal((3, 4))
    model.train(W, np.zeros(4), 0.01, 5, progress=True)
    model.train_closed(*moments(W), 4, np.zeros(4), 0.01, 5, progress=True)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    for module in (
        nqf_lite.expansion.form,
        nqf_lite.dynamics.training,
        nqf_lite.experiments.train,
        nqf_lite.experiments.pair,
    ):
        assert "tqdm" not in inspect.getsource(module)
