"""Tests of nqf_lite.experiments.real_networks: the runners of chapter 3.

Every expected value comes by another route: the tanh MLP's remainder from
its closed form, the ensembles from plain torch loops or from
``train_ensemble`` on one member alone, the logit scale and the data from
hand cases.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nqf_lite.expansion import models as ar
from nqf_lite.experiments import real_networks as rn
from nqf_lite.experiments.ensemble import train_ensemble
from nqf_lite.experiments.teacher import teacher_task

DT = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", rn.TWIN_NAMES)
def test_each_twin_is_the_expansion_and_the_remainder_is_quartic(name):
    net, x = rn.twin_instance(name, 3, _gen(0))
    lams = np.logspace(-2.5, -1.5, 3)
    gap, err = rn.twin_remainder(net, x, lams)
    assert gap < 1e-12
    slopes = np.diff(np.log(err)) / np.diff(np.log(lams))
    assert np.all(np.abs(slopes - 4) < 0.1)


def test_the_mlp_remainder_matches_its_closed_form():
    # f(lW) - f_NQF(lW) = l sum_i v_i (tanh(l u_i.x) - l u_i.x), by hand
    net, x = rn.twin_instance("MLP", 5, _gen(1))
    U, V = net.U.detach().numpy(), net.W_out.detach().numpy()
    lams = np.array([0.5, 1.0, 2.0])
    _, err = rn.twin_remainder(net, x, lams)
    ux = U @ x.numpy()
    expected = [
        np.max(np.abs(lam * V @ (np.tanh(lam * ux) - lam * ux)))
        for lam in lams
    ]
    np.testing.assert_allclose(err, expected, rtol=1e-10)


def test_twin_instance_and_remainder_refuse_bad_input():
    with pytest.raises(ValueError, match="name"):
        rn.twin_instance("RNN", 0, _gen(0))
    net, x = rn.twin_instance("MLP", 0, _gen(0))
    with pytest.raises(ValueError, match="lams"):
        rn.twin_remainder(net, x, [0.1, -0.1])


def test_teacher_ensemble_members_train_as_if_alone():
    sigmas, members = (0.01, 0.2), (11, 12)
    out = rn.teacher_ensemble("mlp", sigmas, members, "gd", 0.1, 6, 24, (1.0,))
    assert list(out) == list(sigmas)
    net, X, Y = teacher_task("mlp", 0.2, m=24, s=(1.0,), seed=12)
    alone = train_ensemble(
        [net], lambda t: ((X[None],), Y[None]), "gd", 0.1, 6, 4, s=(1.0,)
    )
    h = out[0.2]
    assert h.members == 2
    np.testing.assert_allclose(h.loss["net"][1], alone.loss["net"][0])
    np.testing.assert_allclose(h.s["twin"][1], alone.s["twin"][0])
    with pytest.raises(ValueError, match="members"):
        rn.teacher_ensemble("mlp", sigmas, (), "gd", 0.1, 6, 8, (1.0,))


def test_gaussian_batches_draw_in_order():
    sample = rn.gaussian_batches(2, (3,), (4, 3))
    x, X = sample(_gen(7), 5)
    g = _gen(7)
    assert torch.equal(x, torch.randn(2, 5, 3, generator=g, dtype=DT))
    assert torch.equal(X, torch.randn(2, 5, 4, 3, generator=g, dtype=DT))
    with pytest.raises(ValueError, match="E"):
        rn.gaussian_batches(0, (3,))
    with pytest.raises(ValueError, match="shapes"):
        rn.gaussian_batches(2)


def test_online_ensemble_is_plain_online_gradient_descent():
    lr, steps, n_eval, batch = 0.05, 20, 16, 8
    student = ar.TanhMLP(4, 6, V=1, sigma=0.3, seed=1)
    teacher = ar.TanhMLP(4, 6, V=1, sigma=1.0, seed=2)
    h = rn.online_ensemble(
        [student],
        [teacher],
        rn.gaussian_batches(1, (4,)),
        lr,
        steps,
        _gen(3),
        _gen(4),
        n_eval,
        batch,
    )
    # the same by hand: one network, fresh batches, held-out loss
    U = student.U.detach().clone().requires_grad_(True)
    v = student.W_out.detach().clone().requires_grad_(True)
    Ut, vt = teacher.U.detach(), teacher.W_out.detach()
    g_batch = _gen(3)
    x_ev = torch.randn(1, n_eval, 4, generator=_gen(4), dtype=DT)[0]
    y_ev = torch.tanh(x_ev @ Ut.T) @ vt.T
    recorded = []
    for t in range(steps + 1):
        xb = torch.randn(1, batch, 4, generator=g_batch, dtype=DT)[0]
        yb = torch.tanh(xb @ Ut.T) @ vt.T
        if t % 10 == 0:
            with torch.no_grad():
                f_ev = torch.tanh(x_ev @ U.T) @ v.T
                recorded.append(float(((f_ev - y_ev) ** 2).mean()))
        loss = ((torch.tanh(xb @ U.T) @ v.T - yb) ** 2).mean()
        U.grad = v.grad = None
        loss.backward()
        with torch.no_grad():
            U -= lr * U.grad
            v -= lr * v.grad
    np.testing.assert_allclose(h.step, [0, 10, 20])
    np.testing.assert_allclose(h.loss["net"][0], recorded, rtol=1e-10)
    with pytest.raises(ValueError, match="teachers"):
        rn.online_ensemble(
            [student],
            [],
            rn.gaussian_batches(1, (4,)),
            lr,
            2,
            _gen(0),
            _gen(1),
        )


def test_logit_scale_hand_case():
    # one head, W_Q = W_K = I (d_k = D = 2): T = I / sqrt 2, |T|_F = 1;
    # a second head at twice the scale: |T|_F = 4; the mean over heads 2.5
    eye = torch.eye(2, dtype=DT)
    Q = torch.stack([eye, 2 * eye])[None]  # (E=1, heads=2, d_k, D)
    out = rn.logit_scale({"Q": Q, "K": Q.clone()})
    np.testing.assert_allclose(out.numpy(), [2.5])
    with pytest.raises(ValueError, match="W"):
        rn.logit_scale({"Q": Q})


def test_row_tokens_hand_case():
    imgs = torch.tensor([[[1.0, 2.0], [3.0, 6.0]]])
    x, X = rn.row_tokens(imgs)
    np.testing.assert_allclose(x.numpy(), [[2.0, 4.0]])
    np.testing.assert_allclose(X.numpy(), [[[-1.0, -2.0], [1.0, 2.0]]])
    with pytest.raises(ValueError, match="imgs"):
        rn.row_tokens(imgs[0])


def test_split_runs_hand_case():
    images = torch.arange(4.0)[:, None]  # four "images" of one pixel
    labels = torch.tensor([[1.0], [-1.0], [1.0], [-1.0]])
    splits = [torch.tensor([3, 0, 1, 2]), torch.tensor([1, 2, 0, 3])]
    shifted = [images, images + 10]
    train, test = rn.split_runs(lambda im: im, shifted, labels, splits, 3)
    np.testing.assert_allclose(
        train[0][0].numpy()[..., 0], [[3, 0, 1], [11, 12, 10]]
    )
    np.testing.assert_allclose(test[0][0].numpy()[..., 0], [[2], [13]])
    np.testing.assert_allclose(test[1].numpy()[..., 0], [[1], [-1]])
    with pytest.raises(ValueError, match="n_train"):
        rn.split_runs(lambda im: im, shifted, labels, splits, 4)
    with pytest.raises(ValueError, match="splits"):
        rn.split_runs(lambda im: im, shifted, labels, splits[:1], 3)


def test_fig6_models_have_the_papers_sizes():
    plain = ar.TanhMLP(20, 100, V=1, sigma=1.0, seed=4)
    teacher = rn.fig6_mlp(1.0, 4, readout=0.5)
    assert teacher.U.shape == (100, 20) and teacher.W_out.shape == (1, 100)
    assert torch.equal(teacher.U, plain.U)
    assert torch.equal(teacher.W_out, 0.5 * plain.W_out)
    assert torch.equal(rn.fig6_mlp(1.0, 4).W_out, plain.W_out)
    with pytest.raises(ValueError, match="readout"):
        rn.fig6_mlp(1.0, 4, readout=0.0)
    a, b = rn.fig6_qk(0.1, 1, 9), rn.fig6_qk(0.1, 2, 9)
    x = torch.randn(3, 16, generator=_gen(0), dtype=DT)
    X = torch.randn(3, 10, 16, generator=_gen(1), dtype=DT)
    assert a((x, X)).shape == (3, 1)
    # the readout is shared: with zero logits both give c^T xbar
    for net in (a, b):
        for w in net.parameters():
            w.data.zero_()
    assert torch.allclose(a((x, X)), b((x, X)))
