"""Tests of Claims.slope: a log-log slope of an ensemble, checked as a
claim."""

import json

import numpy as np
import pytest

from nqf_lite.book.claims import CLAIMS_DIR_ENV, ClaimFailed, Claims

EPS = np.logspace(-3, 0, 13)


@pytest.fixture
def no_claims_dir(monkeypatch):
    monkeypatch.delenv(CLAIMS_DIR_ENV, raising=False)


def _curves(exponents, x=EPS):
    """Power laws c_j x^a_j, one row per exponent."""
    return np.array([(1 + j) * x**a for j, a in enumerate(exponents)])


def test_right_slope_passes_and_returns_every_member(no_claims_dir):
    c = Claims("01_x")
    slopes = c.slope(
        "s",
        "cubic",
        EPS,
        _curves([3.0, 3.02, 2.98]),
        expected=3.0,
        model_error=0.05,
    )
    assert slopes == pytest.approx([3.0, 3.02, 2.98], abs=1e-9)
    (rec,) = c.records
    assert rec.passed and rec.n_seeds == 3
    assert rec.measured == pytest.approx(3.0, abs=1e-9)
    assert rec.spread == pytest.approx(np.std([3.0, 3.02, 2.98], ddof=1))


def test_wrong_slope_fails(no_claims_dir):
    c = Claims("01_x")
    with pytest.raises(ClaimFailed, match="quartic"):
        c.slope(
            "s",
            "quartic",
            EPS,
            _curves([3.0, 3.0, 3.0]),
            expected=4.0,
            model_error=0.05,
        )
    assert not c.records[0].passed


def test_tolerance_is_three_standard_errors_plus_model_error(
    no_claims_dir,
):
    members = [2.0, 2.2, 2.4, 2.6]  # mean 2.3, sd 0.258, se 0.129
    atol = 3 * np.std(members, ddof=1) / 2 + 0.05
    c = Claims("01_x")
    c.slope(
        "in",
        "inside",
        EPS,
        _curves(members),
        expected=2.3 + 0.99 * atol,
        model_error=0.05,
    )
    with pytest.raises(ClaimFailed):
        c.slope(
            "out",
            "outside",
            EPS,
            _curves(members),
            expected=2.3 + 1.01 * atol,
            model_error=0.05,
        )
    assert c.records[0].criterion.endswith(f"atol {atol:.3g}")


def test_window_selects_the_fitted_range(no_claims_dir):
    # slope 2 below eps = 0.01, slope 4 above: the window decides
    y = np.array(
        [
            np.where(EPS < 1e-2, EPS**2, 1e-4 * (EPS / 1e-2) ** 4) * (1 + j)
            for j in range(3)
        ]
    )
    c = Claims("01_x")
    low = c.slope(
        "lo",
        "low",
        EPS,
        y,
        expected=2.0,
        model_error=1e-6,
        window=(1e-3, 1e-2),
    )
    high = c.slope(
        "hi",
        "high",
        EPS,
        y,
        expected=4.0,
        model_error=1e-6,
        window=(1e-2, 1.0),
    )
    assert low == pytest.approx(2.0) and high == pytest.approx(4.0)


def test_record_matches_a_hand_written_check(tmp_path, monkeypatch):
    monkeypatch.setenv(CLAIMS_DIR_ENV, str(tmp_path))
    y = _curves([1.9, 2.05, 2.1, 1.97])
    from nqf_lite.dynamics.scaling import fit_loglog_slope

    s = np.array(
        [fit_loglog_slope(EPS, r, (EPS[0], EPS[-1])).slope for r in y]
    )
    sd = float(np.std(s, ddof=1))
    Claims("01_a").check(
        "k",
        "st",
        float(np.mean(s)),
        expected=2.0,
        atol=3 * sd / np.sqrt(len(s)) + 0.05,
        source="Eq. 2",
        n_seeds=4,
        spread=sd,
    )
    Claims("01_b").slope(
        "k", "st", EPS, y, expected=2.0, model_error=0.05, source="Eq. 2"
    )
    a, b = (json.loads((tmp_path / f"01_{n}.jsonl").read_text()) for n in "ab")
    a.pop("chapter"), b.pop("chapter")
    assert a == b


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(y=np.ones((1, 13))), "y"),
        (dict(y=np.ones(13)), "y"),
        (dict(y=np.ones((3, 12))), "y"),
        (dict(x=np.ones((2, 13))), "x"),
        (dict(model_error=-0.1), "model_error"),
        (dict(model_error=np.inf), "model_error"),
        (dict(window=(1e-5, 1.0)), "window"),
    ],
)
def test_bad_input_raises_naming_the_argument(no_claims_dir, kwargs, name):
    args = dict(x=EPS, y=_curves([3.0, 3.0]), expected=3.0, model_error=0.05)
    args.update(kwargs)
    x, y = args.pop("x"), args.pop("y")
    with pytest.raises(ValueError, match=name):
        Claims("01_x").slope("k", "st", x, y, **args)
    with pytest.raises(TypeError, match="model_error"):
        Claims("01_x").slope(
            "k",
            "st",
            EPS,
            _curves([3.0, 3.0]),
            expected=3.0,
            model_error="big",
        )
