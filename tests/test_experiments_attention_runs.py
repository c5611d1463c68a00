"""nqf_lite.experiments.attention_runs: the attention half of chapter 9's
Fig. 8.

The network is checked against a token-by-token numpy transcription of its
formula (chapter 9, App. C), its NQFs against the closed forms of Prop. 2
(linear in the token average), the statistics against hand cases.
"""

import numpy as np
import pytest
import torch

from nqf_lite.experiments.attention_runs import (
    D_TOK,
    N_TOK,
    attention_forward,
    attention_models,
    attention_task,
    half_speed_gaps,
    log_contrast,
    logit_mean_square,
    on_slower_clock,
    ratio_lower,
)


def _softmax(z):
    z = np.asarray(z)
    e = np.exp(z - z.max())
    return e / e.sum()


def _by_hand(P, x):
    # one member, one sequence x (N, D): the formula, written token by token
    Q1, K1, V1, O1, Q2, K2, V2, v = (p.numpy() for p in P)
    Y = np.zeros_like(x)
    for t in range(N_TOK):
        att = _softmax(
            [x[t] @ Q1.T @ K1 @ x[u] / 8**0.5 for u in range(N_TOK)]
        )
        Y[t] = sum(att[u] * O1 @ V1 @ x[u] for u in range(N_TOK))
    att2 = _softmax([Y[u] @ K2.T @ Q2 @ Y[-1] / 8**0.5 for u in range(N_TOK)])
    return sum(att2[u] * v @ V2 @ Y[u] for u in range(N_TOK))


def _weights(seed, scale=0.5, members=1):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(D_TOK, D_TOK)] * 7 + [(D_TOK,)]
    return [
        scale * torch.randn(members, *s, generator=gen, dtype=torch.float64)
        for s in shapes
    ]


def test_attention_forward_matches_the_formula_token_by_token():
    P = _weights(0, members=2)
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(2, 3, N_TOK, D_TOK, generator=gen, dtype=torch.float64)
    f = attention_forward(P, X)
    assert f.shape == (2, 3, 1)
    for s in range(2):
        for i in range(3):
            expected = _by_hand([p[s] for p in P], X[s, i].numpy())
            assert float(f[s, i, 0]) == pytest.approx(expected, rel=1e-12)


def test_uniform_attention_reads_the_token_average():
    P = _weights(2)
    for i in (0, 1, 4, 5):  # queries and keys zero: uniform attention
        P[i] = torch.zeros_like(P[i])
    gen = torch.Generator().manual_seed(3)
    X = torch.randn(1, 4, N_TOK, D_TOK, generator=gen, dtype=torch.float64)
    _, _, V1, O1, _, _, V2, v = (p[0].numpy() for p in P)
    xbar = X[0].numpy().mean(1)
    expected = xbar @ V1.T @ O1.T @ V2.T @ v
    assert np.allclose(attention_forward(P, X)[0, :, 0].numpy(), expected)


def test_attention_task_teachers_and_scales():
    X, Y, W = attention_task([4, 5], (0.1, 0.4), False, n_train=30, n_test=6)
    assert X.shape == (4, 36, N_TOK, D_TOK) and Y.shape == (4, 36, 1)
    assert np.allclose(Y[:, :30].std(dim=1).numpy(), 1.0, rtol=1e-12)
    for w in W:  # same seeds, variance 0.4 = 4 x 0.1
        assert torch.allclose(w[2:], 2 * w[:2], rtol=1e-14, atol=0)
    # the token-average teacher is linear in the token average
    xbar = X[0].mean(1).numpy()
    coef, *_ = np.linalg.lstsq(xbar, Y[0].numpy(), rcond=None)
    assert np.abs(xbar @ coef - Y[0].numpy()).max() < 1e-10
    # the Gaussian teacher is not
    Xg, Yg, _ = attention_task([4], (0.1,), True, n_train=30, n_test=6)
    xbar = Xg[0].mean(1).numpy()
    coef, *_ = np.linalg.lstsq(xbar, Yg[0].numpy(), rcond=None)
    assert np.abs(xbar @ coef - Yg[0].numpy()).max() > 1e-2


def test_attention_nqfs_are_linear_in_the_token_average():
    P = _weights(6, scale=0.3, members=2)
    gen = torch.Generator().manual_seed(7)
    X = torch.randn(2, 5, N_TOK, D_TOK, generator=gen, dtype=torch.float64)
    models = attention_models(P, X)
    _, _, V1, O1, _, _, V2, v = (p.numpy() for p in P)
    xbar = X.numpy().mean(2)  # (S, n, D)
    T = np.swapaxes
    # Eq. (eq-ch9-attn-nqf): v^T W_V2 W_O1 W_V1 xbar and v^T W_V1 xbar
    nqf2 = xbar @ T(V1, 1, 2) @ T(O1, 1, 2) @ T(V2, 1, 2) @ v[:, :, None]
    nqf1 = xbar @ T(V1, 1, 2) @ v[:, :, None]
    P2, fwd2, _ = models["nqf2"]
    P1, fwd1, C = models["nqf1"]
    assert np.allclose(fwd2(P2, X).numpy(), nqf2, rtol=1e-12, atol=1e-14)
    assert np.allclose(fwd1(P1, X).numpy(), nqf1, rtol=1e-12, atol=1e-14)
    net = attention_forward(P, X).numpy()
    assert np.allclose((fwd1(P1, X) + C).numpy(), net, atol=1e-14)


def test_logit_mean_square_by_hand():
    P = _weights(8, members=1)
    gen = torch.Generator().manual_seed(9)
    X = torch.randn(1, 4, N_TOK, D_TOK, generator=gen, dtype=torch.float64)
    QK = P[0][0].numpy().T @ P[1][0].numpy() / 8**0.5
    x = X[0, :3].numpy()  # the first three are "training" inputs
    logits = [
        x[i, t] @ QK @ x[i, u]
        for i in range(3)
        for t in range(N_TOK)
        for u in range(N_TOK)
        if t != u
    ]
    got = logit_mean_square(X, P, n_train=3)
    assert got == pytest.approx([np.mean(np.square(logits))], rel=1e-12)


def test_statistics_by_hand():
    curve = np.array([4.0, 2.0, 0.0])[:, None, None]
    # read at steps 0, 0.5, 1
    assert on_slower_clock(curve)[:, 0, 0] == pytest.approx([4.0, 3.0, 2.0])
    zero = np.zeros((3, 2, 5, 1))
    f = {"model": zero, "nqf2": zero + 1.0, "nqf1": zero + 2.0}
    f["nqf1"][0] = 0.0  # step zero is not counted
    assert log_contrast(f) == pytest.approx(np.log([2.0, 2.0]))
    logs = np.log([1.2, 1.5, 1.1])
    se = logs.std(ddof=1) / np.sqrt(3)
    assert ratio_lower(logs) == pytest.approx(np.exp(logs.mean() - 3 * se))


def test_half_speed_gaps_by_hand():
    # one member, one training input, targets 0: losses are squared outputs
    f = {
        "model": np.array([2.0, 2**0.5, 0.0]).reshape(3, 1, 1, 1),
        "nqf2": np.full((3, 1, 1, 1), 2.0),
    }
    Y = torch.zeros(1, 2, 1, dtype=torch.float64)
    g2, g_half = half_speed_gaps(f, Y, n_train=1)
    # network loss (4, 2, 0), mean 2; the NQF's (4, 4, 4): |diff| (0, 2, 4);
    # at half speed (4, 3, 2): |diff| (0, 1, 2)
    assert g2 == pytest.approx([1.0]) and g_half == pytest.approx([0.5])
    with pytest.raises(ValueError, match="nqf2"):
        half_speed_gaps({"model": f["model"]}, Y, n_train=1)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="seed_list"):
        attention_task([], (0.1,), False)
    with pytest.raises(ValueError, match="variances"):
        attention_task([1], (0.0,), False)
    with pytest.raises(ValueError, match="factor"):
        on_slower_clock(np.ones((3, 1, 1)), factor=0.0)
    with pytest.raises(ValueError, match="nqf1"):
        log_contrast({"model": np.zeros((2, 1, 1, 1))})
