"""nqf_lite.experiments.train.descend_many: descent on several tensors."""

import numpy as np
import pytest
import torch

from nqf_lite.experiments.train import Descent, descend, descend_many

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal(4)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal(5)


def two_layer_loss(P):
    """A loss coupling two tensors: mean (x A B - y)^2 (not separable)."""
    f = torch.tensor(X) @ P["A"] @ P["B"]
    return ((f - torch.tensor(Y)) ** 2).mean()


def by_hand(lr, steps, momentum=False):
    """The paper's Eq. 21 (and the heavy ball) written out with autograd."""
    a = torch.tensor(A, requires_grad=True)
    b = torch.tensor(B, requires_grad=True)
    bufs, losses = [None, None], []
    for t in range(steps):
        loss = two_layer_loss({"A": a, "B": b})
        losses.append(float(loss.detach()))
        grads = torch.autograd.grad(loss, (a, b))
        with torch.no_grad():
            for i, (p, g) in enumerate(zip((a, b), grads)):
                if momentum:
                    bufs[i] = g.clone() if t == 0 else 0.9 * bufs[i] + g
                    g = bufs[i]
                p -= lr * g
    return a.detach().numpy(), b.detach().numpy(), losses


@pytest.mark.parametrize("name", ["gd", "momentum"])
def test_agrees_with_a_hand_written_loop(name):
    run = descend_many(
        {"A": A, "B": B},
        two_layer_loss,
        0.05,
        30,
        name=name,
        record=lambda P: two_layer_loss(P),
    )
    a, b, losses = by_hand(0.05, 30, momentum=name == "momentum")
    assert isinstance(run, Descent)
    assert set(run.params) == {"A", "B"}
    # torch's SGD rounds W + (-lr) g once: equal to round-off, not bitwise
    assert np.allclose(run.params["A"], a, rtol=1e-12, atol=1e-14)
    assert np.allclose(run.params["B"], b, rtol=1e-12, atol=1e-14)
    assert np.allclose(run.history[:-1], losses, rtol=1e-12, atol=0)
    assert run.history[-1] < 0.5 * run.history[0]  # it descends
    assert np.array_equal(run.step, np.arange(31))


def test_a_wrong_learning_rate_gives_another_trajectory():
    kwargs = dict(record=two_layer_loss)
    ref = descend_many({"A": A, "B": B}, two_layer_loss, 0.05, 30, **kwargs)
    off = descend_many({"A": A, "B": B}, two_layer_loss, 0.051, 30, **kwargs)
    assert np.abs(ref.history - off.history)[1:].min() > 1e-6
    assert np.abs(ref.params["A"] - off.params["A"]).max() > 1e-4


def test_momentum_is_not_gd():
    gd = descend_many(
        [A, B], lambda P: two_layer_loss(dict(A=P[0], B=P[1])), 0.05, 20
    )
    mom = descend_many(
        [A, B],
        lambda P: two_layer_loss(dict(A=P[0], B=P[1])),
        0.05,
        20,
        name="momentum",
    )
    assert np.abs(gd.params[0] - mom.params[0]).max() > 1e-3


def test_one_tensor_descends_exactly_as_descend():
    """The same optimizer as descend (torch's SGD / Adam): bit for bit."""
    T = torch.tensor(A)
    loss = lambda W: ((W - T) ** 4).sum()  # noqa: E731
    for name in ("gd", "momentum", "adam"):
        W = descend(np.zeros((3, 4)), loss, 0.01, 25, name=name)
        run = descend_many(np.zeros((3, 4)), loss, 0.01, 25, name=name)
        assert run.history is None and isinstance(run.params, np.ndarray)
        assert np.array_equal(run.params, W)
        assert np.abs(W - A).max() < np.abs(A).max()  # it moved towards A


def test_nested_containers_records_and_every():
    params = {"net": [A, B], "twin": (A.copy(),)}
    seen = []

    def loss(P):
        seen.append((type(P["net"]), type(P["twin"])))
        return (
            two_layer_loss(dict(A=P["net"][0], B=P["net"][1]))
            + (P["twin"][0] ** 2).sum()
        )

    run = descend_many(
        params,
        loss,
        0.01,
        7,
        record=lambda P: {"a": P["twin"][0].sum(), "b": P["net"][1]},
        every=3,
    )
    assert seen[0] == (list, tuple)
    assert np.array_equal(run.step, [0, 3, 6, 7])
    assert run.history["a"].shape == (4,) and run.history["b"].shape == (4, 4)
    assert np.array_equal(run.history["b"][0], B)
    assert np.allclose(run.params["twin"][0], A * 0.98**7, rtol=1e-13)
    assert np.array_equal(params["net"][0], A)  # the caller's are unchanged


def test_no_steps_records_the_start():
    run = descend_many(
        [A], lambda P: (P[0] ** 2).sum(), 0.1, 0, record=lambda P: P[0]
    )
    assert np.array_equal(run.step, [0])
    assert np.array_equal(run.history[0], A)
    assert np.array_equal(run.params[0], A)


def test_bad_input_raises_naming_the_argument():
    loss = lambda P: (P[0] ** 2).sum()  # noqa: E731
    with pytest.raises(TypeError, match="loss must be callable"):
        descend_many([A], 3.0, 0.1, 3)
    with pytest.raises(TypeError, match="record must be callable"):
        descend_many([A], loss, 0.1, 3, record=5)
    with pytest.raises(ValueError, match="lr"):
        descend_many([A], loss, -0.1, 3)
    with pytest.raises(ValueError, match="steps"):
        descend_many([A], loss, 0.1, -1)
    with pytest.raises(ValueError, match="every"):
        descend_many([A], loss, 0.1, 3, every=0)
    with pytest.raises(ValueError, match=r"the optimizer\) must be one of"):
        descend_many([A], loss, 0.1, 3, name="sgd")
    with pytest.raises(ValueError, match="at least one tensor"):
        descend_many([], loss, 0.1, 3)
    with pytest.raises(TypeError, match=r"params\['b'\]\[1\]"):
        descend_many({"a": [A], "b": [A, "x"]}, loss, 0.1, 3)
    with pytest.raises(ValueError, match=r"params\[0\] contains NaN"):
        descend_many([np.array([np.nan])], loss, 0.1, 3)
    with pytest.raises(TypeError, match=r"loss\(params\) must return"):
        descend_many([A], lambda P: P[0], 0.1, 3)


def test_divergence_is_reported():
    with pytest.raises(FloatingPointError, match="diverged"):
        descend_many(
            [np.ones(2)], lambda P: (P[0] ** 4).sum() * 1e300, 1e300, 50
        )
