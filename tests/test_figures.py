"""nqf_lite.book.figures: the figure pieces chapters 7 and 10 share."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nqf_lite.book.figures import (  # noqa: E402
    OPEN,
    plot_mean_sd,
    plot_members,
    shade_window,
)
from nqf_lite.book.plotting import COLORS  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_members_are_drawn_in_turn_and_labelled_once(ax):
    x = np.arange(4.0)
    net = np.arange(12.0).reshape(4, 3)
    twin = -net
    plot_members(
        ax,
        x,
        [(net, "network", {"color": "b"}), (twin, "twin", {"ls": "--"})],
    )
    assert len(ax.lines) == 6
    # member 0 of both series, then member 1, ...
    for j in range(3):
        np.testing.assert_array_equal(ax.lines[2 * j].get_ydata(), net[:, j])
        np.testing.assert_array_equal(
            ax.lines[2 * j + 1].get_ydata(), twin[:, j]
        )
    labels = [line.get_label() for line in ax.lines]
    assert labels[:2] == ["network", "twin"]
    assert all(lab.startswith("_") for lab in labels[2:])
    assert ax.lines[1].get_linestyle() == "--"


def test_members_use_the_named_axes_method(ax):
    x = np.geomspace(1.0, 10.0, 5)
    plot_members(ax, x, [(np.ones((5, 2)), None, {})], plot="loglog")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


@pytest.mark.parametrize(
    ("Y", "plot", "match"),
    [
        (np.ones((4, 2)), "bar", "plot must be one of"),
        (np.ones(4), "plot", r"series\[0\] must have shape"),
        (np.ones((3, 2)), "plot", r"series\[0\] must have shape"),
    ],
)
def test_members_reject_bad_input(ax, Y, plot, match):
    with pytest.raises(ValueError, match=match):
        plot_members(ax, np.arange(4.0), [(Y, None, {})], plot=plot)


def test_members_need_the_same_ensemble_in_every_series(ax):
    with pytest.raises(ValueError, match=r"series\[1\]"):
        plot_members(
            ax,
            np.arange(4.0),
            [(np.ones((4, 2)), None, {}), (np.ones((4, 3)), None, {})],
        )
    with pytest.raises(ValueError, match="at least one"):
        plot_members(ax, np.arange(4.0), [])


def test_mean_sd_draws_the_mean_and_the_sample_deviation(ax):
    samples = [np.array([1.0, 2.0, 3.0]), np.array([2.0, 6.0])]
    bars = plot_mean_sd(ax, [0.0, 1.0], samples, fmt="o")
    means = np.asarray(bars.lines[0].get_ydata(), dtype=float)
    np.testing.assert_allclose(means, [2.0, 4.0])
    # the bar spans mean +- s.d. with ddof=1: 1 and sqrt(8)
    (segments,) = bars.lines[2]
    spans = [seg[1, 1] - seg[0, 1] for seg in segments.get_segments()]
    np.testing.assert_allclose(spans, [2.0, 2 * np.sqrt(8.0)])
    assert len(bars.lines[1]) == 2  # caps: capsize defaults to 3


def test_mean_sd_rejects_bad_input(ax):
    with pytest.raises(ValueError, match="one sample per point of x"):
        plot_mean_sd(ax, [0.0, 1.0], [np.ones(3)])
    with pytest.raises(ValueError, match="at least two values"):
        plot_mean_sd(ax, [0.0], [np.ones(1)])


def test_window_is_shaded_in_the_accent_colour(ax):
    span = shade_window(ax, (2.0, 5.0), label="fit window")
    x0, x1 = span.get_x(), span.get_x() + span.get_width()
    assert (x0, x1) == (2.0, 5.0)
    assert span.get_label() == "fit window"
    assert matplotlib.colors.to_hex(span.get_facecolor()) == COLORS["accent"]
    assert span.get_alpha() == pytest.approx(0.15)


@pytest.mark.parametrize("window", [(5.0, 2.0), (1.0, np.inf), (1.0,)])
def test_window_must_be_increasing_and_finite(ax, window):
    with pytest.raises(ValueError, match="window must be"):
        shade_window(ax, window)


def test_open_markers_are_hollow():
    assert OPEN["mfc"] == "none" and OPEN["ms"] > 0
