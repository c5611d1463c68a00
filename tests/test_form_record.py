"""NQF.train and NQF.train_closed with record=...: M, mu, W, losses and
predictions along the way.

The recorded moments are checked against moments computed here from the
recorded weights, the closed recursion against explicit weights (Theorem 2: two
code paths), and the losses against the predictions by the formula of Eq. 26
written out.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nqf_lite import NQF, TrainingRecord, moments, random_nqf

NAMES = ("pred", "loss", "M", "mu", "W")


def _setup(V=None, general=True, seed=0):
    model = random_nqf(
        6,
        4,
        V=V,
        scale_A=0.4,
        scale_g=0.3 if general else 0.0,
        scale_B=0.2 if general else 0.0,
        scale_f0=0.1,
        seed=seed,
    )
    rng = np.random.default_rng(seed + 1)
    W0 = 0.3 * rng.standard_normal((4, 5))
    y = rng.standard_normal((6,) if V is None else (6, V))
    return model, W0, y


@pytest.mark.parametrize("V", [None, 2])
def test_record_keeps_the_plain_results(V):
    model, W0, y = _setup(V)
    batches = [np.array([0, 2, 4]) if t % 2 else None for t in range(12)]
    W_T, preds = model.train(W0, y, 0.05, 12, batches=batches)
    rec = model.train(W0, y, 0.05, 12, batches=batches, record=NAMES)
    assert isinstance(rec, TrainingRecord)
    np.testing.assert_array_equal(rec.steps, np.arange(13))
    np.testing.assert_array_equal(rec.pred, preds)
    np.testing.assert_array_equal(rec.final, W_T)
    np.testing.assert_array_equal(rec.W[-1], W_T)
    for t in (0, 5, 12):
        M, mu = rec.W[t] @ rec.W[t].T, rec.W[t].sum(axis=1)  # moments by hand
        np.testing.assert_allclose(rec.M[t], M, atol=1e-14)
        np.testing.assert_allclose(rec.mu[t], mu, atol=1e-14)
        np.testing.assert_allclose(
            rec.pred[t], model.predict_W(rec.W[t]), atol=1e-14
        )
    loss = (
        ((rec.pred - y) ** 2).reshape(13, 6, -1).sum(axis=-1).mean(axis=1)
    )  # Eq. 26: sum over outputs
    np.testing.assert_allclose(rec.loss, loss, atol=1e-14)


def test_closed_record_equals_explicit_record():
    """Theorem 2: the closed recursion on (M, mu) follows the explicit weights
    step for step."""
    model, W0, y = _setup()
    rec = model.train(W0, y, 0.05, 30, record=("M", "mu", "loss"), every=7)
    closed = model.train_closed(
        *moments(W0), 5, y, 0.05, 30, record=("M", "mu", "loss"), every=7
    )
    np.testing.assert_array_equal(rec.steps, [0, 7, 14, 21, 28, 30])
    np.testing.assert_array_equal(closed.steps, rec.steps)
    np.testing.assert_allclose(closed.M, rec.M, atol=1e-12)
    np.testing.assert_allclose(closed.mu, rec.mu, atol=1e-12)
    np.testing.assert_allclose(closed.loss, rec.loss, atol=1e-12)
    (M_T, mu_T), _ = model.train_closed(*moments(W0), 5, y, 0.05, 30)
    np.testing.assert_array_equal(closed.final[0], M_T)
    np.testing.assert_array_equal(closed.final[1], mu_T)
    assert closed.pred is None and closed.W is None


def test_a_single_name_and_zero_steps():
    model, W0, y = _setup()
    rec = model.train(W0, y, 0.05, 0, record="loss")
    np.testing.assert_array_equal(rec.steps, [0])
    assert rec.loss.shape == (1,) and rec.M is None
    assert rec.loss[0] == pytest.approx(model.loss_W(W0, y), rel=1e-14)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (
            dict(record="X"),
            ValueError,
            r"unknown name 'X' for train; choose from",
        ),
        (dict(record=()), ValueError, "at least one"),
        (dict(record=[1]), TypeError, "names"),
        (dict(record=b"M"), TypeError, "record must be a name"),
        (dict(record=5), TypeError, "record must be a name"),
        (
            dict(record="M", every=0),
            ValueError,
            "every must be a positive integer",
        ),
        (
            dict(record="M", every=1.5),
            TypeError,
            "every must be a positive integer",
        ),
        (dict(every=2), ValueError, "every = 2 needs record"),
    ],
)
def test_bad_records_are_named(kwargs, err, match):
    model, W0, y = _setup()
    with pytest.raises(err, match=match):
        model.train(W0, y, 0.05, 3, **kwargs)


def test_train_closed_has_no_weights_to_record():
    model, W0, y = _setup()
    with pytest.raises(ValueError, match="train_closed has no weights"):
        model.train_closed(*moments(W0), 5, y, 0.05, 3, record=("M", "W"))


def test_empty_weights_are_refused():
    with pytest.raises(ValueError, match="at least one neuron"):
        moments(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="at least one"):
        NQF(np.zeros((2, 0, 3, 3)))


SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(
    st.sets(st.sampled_from(NAMES), min_size=1),
    st.integers(0, 12),
    st.integers(1, 5),
)
def test_recorded_fields_are_exactly_the_ones_asked_for(names, steps, every):
    model, W0, y = _setup(general=False, seed=3)
    rec = model.train(W0, y, 0.02, steps, record=sorted(names), every=every)
    expected = sorted(set(range(0, steps + 1, every)) | {steps})
    np.testing.assert_array_equal(rec.steps, expected)
    for name in NAMES:
        value = getattr(rec, name)
        assert (value is None) == (name not in names)
        if value is not None:
            assert value.shape[0] == len(expected)


@SETTINGS
@given(st.text(min_size=1, max_size=6).filter(lambda s: s not in NAMES))
def test_any_other_name_is_refused(name):
    model, W0, y = _setup(general=False, seed=4)
    with pytest.raises(ValueError, match="unknown name"):
        model.train(W0, y, 0.02, 2, record=("M", name))


@pytest.mark.parametrize(
    "name", ["gd_step", "closed_step", "train", "train_closed"]
)
def test_the_training_methods_have_their_functions_signatures(name):
    # NQF.train etc. forward to nqf_lite.dynamics.training: same arguments,
    # same defaults, so help(NQF.train) tells a reader what train takes
    import inspect

    from nqf_lite.dynamics import training

    method = inspect.signature(getattr(NQF, name)).parameters
    function = inspect.signature(getattr(training, name)).parameters

    def shape(params, skip):
        return [(p.name, p.kind, p.default) for p in params.values()][skip:]

    assert shape(method, 1) == shape(function, 1)
