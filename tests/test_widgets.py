"""Tests of nqf_lite.book.widgets.slider_explorer: structure, kernel-free
linking, bad input."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from ipywidgets.embed import embed_data

from nqf_lite.book.widgets import slider_explorer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _line(a):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0.0, 1.0], [0.0, a])
    return fig


@pytest.fixture(autouse=True)
def _no_open_figures():
    plt.close("all")
    yield
    plt.close("all")


def test_structure_one_png_per_value():
    values = [0.5, 1.0, 2.0]
    box = slider_explorer(_line, values, description="slope")
    assert isinstance(box, widgets.VBox)
    slider, stack = box.children
    assert isinstance(slider, widgets.SelectionSlider)
    assert isinstance(stack, widgets.Stack)
    assert len(stack.children) == 3
    for image in stack.children:
        assert isinstance(image, widgets.Image)
        assert image.format == "png"
        assert bytes(image.value).startswith(PNG_MAGIC)
    assert slider.description == "slope"
    assert [label for label, _ in slider.options] == ["0.5", "1", "2"]
    assert slider.index == 0 and stack.selected_index == 0


def test_initial_index_and_format():
    box = slider_explorer(
        _line,
        np.array([1.0, 2.0, 3.0]),
        description="a",
        fmt="{:.2f}",
        index=2,
    )
    slider, stack = box.children
    assert slider.index == 2 and stack.selected_index == 2
    assert slider.label == "3.00"


def test_render_called_once_per_value_in_order_and_figures_closed():
    seen = []

    def render(v):
        seen.append(v)
        return _line(v)

    slider_explorer(render, [3, 1, 2], description="v")
    assert seen == [3, 1, 2]
    assert plt.get_fignums() == []


def test_distinct_values_give_distinct_images():
    box = slider_explorer(_line, [1.0, -1.0], description="a")
    first, second = (img.value for img in box.children[1].children)
    assert first != second


def test_single_value_is_allowed():
    box = slider_explorer(_line, [1.0], description="a")
    assert len(box.children[1].children) == 1


def test_slider_and_stack_are_linked_in_the_browser():
    """The embedded state holds a LinkModel slider.index ->
    stack.selected_index.

    That model is what makes the slider work in the static HTML page: the
    widget manager in the browser applies the link, no kernel involved.
    """
    box = slider_explorer(_line, [1.0, 2.0], description="a")
    slider, stack = box.children
    state = embed_data(views=[box])["manager_state"]["state"]
    links = [
        s["state"] for s in state.values() if s["model_name"] == "LinkModel"
    ]
    wanted = {
        "source": [f"IPY_MODEL_{slider.model_id}", "index"],
        "target": [f"IPY_MODEL_{stack.model_id}", "selected_index"],
    }
    assert any(
        {k: list(link[k]) for k in ("source", "target")} == wanted
        for link in links
    )
    assert state[stack.model_id]["model_name"] == "StackModel"


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(render="not callable", values=[1.0]), TypeError, "render"),
        (dict(values=[]), ValueError, "values"),
        (dict(values="abc"), TypeError, "values"),
        (dict(values=5), TypeError, "values"),
        (dict(values=np.float64(1.0)), TypeError, "values"),
        (dict(values=np.array(1.0)), TypeError, "values"),
        (dict(values={1.0: "a"}), TypeError, "values"),
        (dict(values=[1.0], description=3), TypeError, "description"),
        (dict(values=[1.0], fmt=None), TypeError, "fmt"),
        (dict(values=[1.0], fmt="{:d}"), ValueError, "fmt"),
        (dict(values=[1.0, 2.0], index=2), ValueError, "index"),
        (dict(values=[1.0, 2.0], index=-1), ValueError, "index"),
        (dict(values=[1.0, 2.0], index=1.0), TypeError, "index"),
        (dict(values=[1.0, 2.0], index=True), TypeError, "index"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = dict(render=_line, values=[1.0, 2.0], description="a") | kwargs
    with pytest.raises(exc, match=match):
        slider_explorer(args.pop("render"), args.pop("values"), **args)
    assert plt.get_fignums() == []


def test_numpy_integer_index():
    box = slider_explorer(
        _line, [1.0, 2.0], description="a", index=np.int64(1)
    )
    assert box.children[0].index == 1


def test_render_must_return_a_figure():
    keep = plt.figure()  # the caller's own figure survives the error

    def render(v):
        _line(v)  # opens a figure but returns the axes' list instead
        return [v]

    with pytest.raises(TypeError, match="Figure"):
        slider_explorer(render, [1.0, 2.0], description="a")
    assert plt.get_fignums() == [keep.number]


def test_description_is_keyword_only():
    with pytest.raises(TypeError):
        slider_explorer(_line, [1.0], "a")  # type: ignore[misc]


# ------------------------------------------------------------- static figure
# (no JavaScript)
def _png_bytes(fig):
    """PNG of a figure, rendered independently of slider_explorer (same savefig
    settings)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


@pytest.fixture
def shown(monkeypatch):
    """Every object slider_explorer hands to IPython's display()."""
    import nqf_lite.book.widgets as W

    seen = []
    monkeypatch.setattr(W, "_display", seen.append)
    return seen


@pytest.mark.parametrize("index", [0, 2])
def test_static_png_of_the_default_view_is_displayed_first(shown, index):
    from IPython.display import Image

    values = [0.5, 1.0, 2.0]
    box = slider_explorer(_line, values, description="slope", index=index)
    assert len(shown) == 1 and isinstance(shown[0], Image)
    assert shown[0].format == "png"
    data = shown[0].data
    assert data.startswith(PNG_MAGIC)
    assert data == _png_bytes(
        _line(values[index])
    )  # the default view, rendered independently
    assert data == bytes(box.children[1].children[index].value)
    others = [_png_bytes(_line(v)) for i, v in enumerate(values) if i != index]
    assert all(data != other for other in others)
    assert plt.get_fignums() == []


def test_static_false_displays_nothing(shown):
    box = slider_explorer(_line, [1.0, 2.0], description="a", static=False)
    assert shown == [] and isinstance(box, widgets.VBox)


def test_static_is_shown_before_the_widget_is_returned(shown):
    order = []

    def render(v):
        order.append(("render", len(shown)))
        return _line(v)

    slider_explorer(render, [1.0, 2.0], description="a")
    assert order == [("render", 0), ("render", 0)] and len(shown) == 1


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_static_must_be_bool(shown, bad):
    with pytest.raises(TypeError, match="static"):
        slider_explorer(_line, [1.0], description="a", static=bad)
    assert shown == []


def test_images_are_saved_at_the_figure_dpi_like_inline_figures(shown):
    """A 6.9-in figure at 100 dpi fits the 688-px column; savefig.dpi must not
    enlarge it."""
    import io

    from PIL import Image

    def wide(_):
        fig, ax = plt.subplots(figsize=(6.9, 2.0), dpi=100)
        ax.plot([0.0, 1.0])
        return fig

    with plt.rc_context({"savefig.dpi": 150}):
        box = slider_explorer(wide, [1], description="v")
    width = Image.open(io.BytesIO(box.children[1].children[0].value)).size[0]
    assert 500 <= width <= 700  # at savefig.dpi = 150 it would be about 900 px
    assert Image.open(io.BytesIO(shown[0].data)).size[0] == width


@pytest.mark.parametrize("constrained", [True, False])
def test_constrained_figures_keep_their_canvas_others_are_cropped(
    shown, constrained
):
    """A constrained figure already fills its canvas: saved as it is, 6.9 in x
    100 dpi = 690 px.
    Without a layout engine the margins are cropped (bbox_inches="tight")."""
    import io

    from PIL import Image

    def fig_of(_):
        fig, ax = plt.subplots(
            figsize=(6.9, 2.0), dpi=100, constrained_layout=constrained
        )
        ax.plot([0.0, 1.0])
        return fig

    box = slider_explorer(fig_of, [1], description="v")
    size = Image.open(io.BytesIO(box.children[1].children[0].value)).size
    if constrained:
        assert size == (690, 200)
    else:
        assert size[0] < 690 and size[1] < 200


def test_toggle_buttons_for_categories_link_index_in_the_browser():
    box = slider_explorer(
        _line,
        [1.0, 2.0, 3.0],
        description="model",
        fmt="{:g}",
        control="toggle",
        index=1,
    )
    picker, stack = box.children
    assert isinstance(picker, widgets.ToggleButtons) and isinstance(
        stack, widgets.Stack
    )
    assert picker.index == 1 and stack.selected_index == 1
    assert [label for label, _ in picker.options] == ["1", "2", "3"]
    state = embed_data(views=[box])["manager_state"]["state"]
    link = [m for m in state.values() if m["model_name"] == "LinkModel"]
    assert link, "no jslink in the embedded state"
    ends = {
        tuple(v)
        for v in (link[-1]["state"]["source"], link[-1]["state"]["target"])
    }
    assert {e[1] for e in ends} == {"index", "selected_index"}
    with pytest.raises(ValueError, match="control"):
        slider_explorer(_line, [1.0], description="a", control="dropdown")


class _Ipywidgets7:
    """ipywidgets as version 7 has it: everything but Stack."""

    def __getattr__(self, name):
        if name == "Stack":
            raise AttributeError(name)
        return getattr(widgets, name)


def test_ipywidgets_7_swaps_one_image_from_the_kernel(monkeypatch):
    import nqf_lite.book.widgets as W

    monkeypatch.setattr(W, "_widgets", lambda: _Ipywidgets7())
    values = [0.5, 1.0, 2.0]
    box = slider_explorer(_line, values, description="slope", static=False)
    picker, image = box.children
    assert isinstance(image, widgets.Image)
    assert bytes(image.value) == _png_bytes(_line(0.5))
    picker.index = 2  # what moving the slider does in a live notebook
    assert bytes(image.value) == _png_bytes(_line(2.0))


def test_without_ipywidgets_the_static_image_is_the_explorer(
    monkeypatch, shown, capsys
):
    import nqf_lite.book.widgets as W

    monkeypatch.setattr(W, "_widgets", lambda: None)
    out = slider_explorer(_line, [1.0, 2.0], description="a", static=False)
    assert (
        out is None
        and len(shown) == 1
        and shown[0].data == _png_bytes(_line(1.0))
    )
    assert capsys.readouterr().out.strip() == W.NO_WIDGETS


def test_import_nqf_lite_does_not_import_widgets_or_ipython():
    import subprocess
    import sys

    code = (
        "import sys, nqf_lite, nqf_lite.book.claims, nqf_lite.book.widgets; "
        "print(sorted(m for m in ('ipywidgets', 'IPython') if m in "
        "sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------- accessibility
# (issue 25)
def test_frames_carry_no_tooltip():
    # the vendored html-manager (1.0.15) fails to draw an Image view with a
    # tooltip
    box = slider_explorer(_line, [0.5, 2.0], description="slope", static=False)
    assert all(
        not getattr(im, "tooltip", None) for im in box.children[1].children
    )


def test_static_image_carries_the_default_views_data(shown):
    from nqf_lite.book.plotting import FIGURE_DATA_KEY

    slider_explorer(_line, [0.5, 3.0], description="slope", index=1)
    csv_text = shown[0].metadata[FIGURE_DATA_KEY]
    rows = [r.split(",") for r in csv_text.strip().split("\n")]
    assert rows[0][:5] == [
        "panel",
        "panel title",
        "x axis",
        "y axis",
        "series",
    ]
    assert [r[5:7] for r in rows[1:]] == [
        ["0", "0"],
        ["1", "3"],
    ]  # the line of view 1, not view 0


def test_figure_data_lists_every_plotted_point_with_its_axis_labels():
    import csv
    import io

    from nqf_lite.book.plotting import figure_data

    fig, (ax, ax2) = plt.subplots(1, 2)
    ax.plot([1.0, 2.0, 3.0], [0.5, 0.25, 0.125], label="loss")
    ax.axhline(0.2)
    ax.fill_between([1.0, 2.0], [0.0, 0.0], [1.0, 1.0])
    ax.set(xlabel="step", ylabel="loss [nats]", title="training")
    im = ax2.imshow(np.array([[1.0, 2.0], [3.0, 4.0]]))
    ax2.scatter([5.0], [6.0])
    fig.colorbar(im)
    rows = list(csv.DictReader(io.StringIO(figure_data(fig))))
    line = [r for r in rows if r["series"] == "loss"]
    assert [(float(r["x"]), float(r["y"])) for r in line] == [
        (1, 0.5),
        (2, 0.25),
        (3, 0.125),
    ]
    assert {
        (r["panel"], r["panel title"], r["x axis"], r["y axis"]) for r in line
    } == {("1", "training", "step", "loss [nats]")}
    guide = [r for r in rows if r["series"] == "line 2"]
    assert [(r["x"], float(r["y"])) for r in guide] == [
        ("", 0.2)
    ]  # spans the panel: no x
    band = [
        (float(r["x"]), float(r["y"])) for r in rows if r["series"] == "band 1"
    ]
    assert {(1, 0), (2, 0), (1, 1), (2, 1)} <= set(band)
    image = [
        (int(r["x"]), int(r["y"]), float(r["value"]))
        for r in rows
        if r["series"] == "image 1"
    ]
    assert image == [(0, 0, 1.0), (1, 0, 2.0), (0, 1, 3.0), (1, 1, 4.0)]
    assert [
        (float(r["x"]), float(r["y"]))
        for r in rows
        if r["series"] == "points 1"
    ] == [(5, 6)]
    assert {r["panel"] for r in rows} == {
        "1",
        "2",
    }  # the colour bar is not a panel


def test_figure_data_rejects_what_is_not_a_figure():
    from nqf_lite.book.plotting import figure_data

    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        figure_data(plt.subplots()[1])
