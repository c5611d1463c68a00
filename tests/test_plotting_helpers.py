"""The figure helpers shared by the chapters: plot_quantiles, plot_runs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nqf_lite.book.plotting import (  # noqa: E402
    COLORS,
    THEORY_LINE,
    plot_quantiles,
    plot_runs,
)


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def curves(members=7, points=5):
    return np.random.default_rng(3).standard_normal((members, points))


def test_quantiles_draw_median_and_band(ax):
    x, ys = np.arange(5.0), curves()
    plot_quantiles(ax, x, ys, q=(0.1, 0.9), label="errors", fmt="o-")
    (line,) = ax.lines
    np.testing.assert_array_equal(line.get_ydata(), np.median(ys, axis=0))
    assert line.get_label() == "errors" and line.get_marker() == "o"
    (band,) = ax.collections
    ys_band = band.get_paths()[0].vertices[:, 1]
    lo, hi = np.quantile(ys, [0.1, 0.9], axis=0)
    assert np.isclose(ys_band.min(), lo.min())
    assert np.isclose(ys_band.max(), hi.max())
    # the band lies strictly inside the range for these quantiles
    assert ys_band.max() < ys.max() and ys_band.min() > ys.min()


def test_quantiles_full_range_and_colour(ax):
    x, ys = np.arange(5.0), curves()
    plot_quantiles(ax, x, ys, q=(0, 1), color=COLORS["nqf"])
    ys_band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(ys_band.max(), ys.max())
    assert np.isclose(ys_band.min(), ys.min())
    assert matplotlib.colors.same_color(ax.lines[0].get_color(), COLORS["nqf"])


@pytest.mark.parametrize("q", [(0.9, 0.1), (-0.1, 0.5), (0.5, 1.5)])
def test_quantiles_reject_bad_q(ax, q):
    with pytest.raises(ValueError, match="q must"):
        plot_quantiles(ax, np.arange(5.0), curves(), q=q)


@pytest.mark.parametrize("helper", [plot_quantiles, plot_runs])
def test_helpers_reject_misshaped_curves(ax, helper):
    with pytest.raises(ValueError, match="ys must have shape"):
        helper(ax, np.arange(4.0), curves())
    with pytest.raises(ValueError, match="ys must have shape"):
        helper(ax, np.arange(5.0), np.arange(5.0))


def test_runs_one_line_per_member_one_label(ax):
    x, ys = np.arange(5.0), curves(members=4)
    plot_runs(ax, x, ys, label="runs", color="k", lw=0.5)
    assert len(ax.lines) == 4
    for line, y in zip(ax.lines, ys):
        np.testing.assert_array_equal(line.get_ydata(), y)
        assert line.get_linewidth() == 0.5
    labels = [line.get_label() for line in ax.lines]
    assert labels[0] == "runs"
    assert all(lab.startswith("_") for lab in labels[1:])
    handles, names = ax.get_legend_handles_labels()
    assert names == ["runs"]


def test_theory_line_is_dashed_theory_colour(ax):
    (line,) = ax.plot([0, 1], [0, 1], **THEORY_LINE)
    assert line.get_linestyle() == "--"
    assert matplotlib.colors.same_color(line.get_color(), COLORS["theory"])
