"""Interactive figures that still work in the static HTML book.

The book is executed once at build time and then served as plain HTML, with no
Python kernel behind it.  A slider whose callback redraws a matplotlib figure
would therefore be dead on the page.  :func:`slider_explorer` avoids Python
callbacks altogether: it renders the figure for every slider position up
front, stacks the PNG images, and ties the slider to the stack with a
JavaScript link (``ipywidgets.jslink``).  The widget state saved in the
executed notebook then carries everything the browser needs.

A reader without JavaScript (a PDF, a feed reader, a blocked script) sees no
widget at all.  So by default (``static=True``) the explorer first displays
its default view as a plain PNG image output of the same cell: that image is
the figure every reader sees, and the cell's myst-nb figure metadata
(``mystnb.figure``: caption and name) numbers and captions it.  In the HTML
book the widget takes the static image's place inside the figure once it is
drawn (``static/explorer-figure.js``), so each explorer is one figure.

The explorer runs wherever the chapter runs.  With ipywidgets 8 (the book's
build) the views sit in an ``ipywidgets.Stack`` linked in the browser.
ipywidgets 7 (Colab ships 7.7) has no ``Stack``: there the control swaps the
image of one ``ipywidgets.Image`` from Python, which needs the live kernel a
notebook has.  Without ipywidgets the static image is the whole explorer, and
one line says how to get the control.  ipywidgets and IPython are optional
dependencies of ``nqf_lite`` (the ``book`` extra); they are imported only when
an explorer is built.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from nqf_lite.book.plotting import FIGURE_DATA_KEY, figure_data

__all__ = ["CONTROLS", "slider_explorer"]

#: how the reader picks a view: a slider for an ordered parameter, toggle
#: buttons for categories
CONTROLS = ("slider", "toggle")
#: printed where ipywidgets is missing; the static image is then the whole
#: explorer
NO_WIDGETS = (
    "(This figure is interactive where ipywidgets is installed: "
    "%pip install ipywidgets, then run the cell again.)"
)


def _display(obj: Any) -> None:
    """IPython's ``display`` (IPython is optional: without it, nothing is
    shown)."""
    try:
        from IPython.display import display
    except ImportError:
        return
    display(obj)


def _show_png(png: bytes, data: str | None = None) -> None:
    """Display ``png`` as a plain image output (what readers without JavaScript
    see).

    ``data``, the figure's data as CSV
    (:func:`nqf_lite.book.plotting.figure_data`), goes into the
    image's output metadata, from where the book links it under the figure.
    """
    try:
        from IPython.display import Image
    except ImportError:
        return
    metadata = {FIGURE_DATA_KEY: data} if data else None
    _display(Image(data=png, format="png", metadata=metadata))


def _widgets() -> Any:
    """The ipywidgets module, or None when it is not installed."""
    try:
        import ipywidgets
    except ImportError:
        return None
    return ipywidgets


def _png(fig: Figure) -> bytes:
    """Return ``fig`` as PNG bytes at the figure's own dpi (as inline figures
    are shown) and close it.

    The book sizes figures for its text column (6.9 in at 100 dpi is 690 px);
    saving at ``savefig.dpi`` instead would make an explorer's images wider
    than the column, and the browser would shrink their text below the size of
    every other figure's.  A figure with a layout engine (the book's figures
    are constrained) already fills its canvas, so it is saved as it is; any
    other is cropped to its content (``bbox_inches="tight"``, which draws it
    twice).
    """
    buf = io.BytesIO()
    tight = "tight" if fig.get_layout_engine() is None else None
    try:
        fig.savefig(buf, format="png", bbox_inches=tight, dpi=fig.dpi)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _labels(values: Sequence[Any], fmt: str) -> list[str]:
    """Format every slider value with ``fmt`` (a ``str.format`` pattern)."""
    labels = []
    for v in values:
        try:
            labels.append(fmt.format(v))
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            raise ValueError(
                f"fmt={fmt!r} cannot format value {v!r}: {exc}"
            ) from exc
    return labels


def slider_explorer(
    render: Callable[[Any], Figure],
    values: Sequence[Any],
    *,
    description: str,
    fmt: str = "{:g}",
    index: int = 0,
    static: bool = True,
    control: str = "slider",
) -> Any:
    """A slider (or toggle buttons) that flips through pre-rendered figures,
    kernel-free.

    ``render(value)`` is called once per entry of ``values``; every figure is
    saved to PNG and closed.  With ipywidgets 8 the images sit in an
    :class:`ipywidgets.Stack` whose ``selected_index`` is linked in the browser
    (``jslink``) to the ``index`` of the control, so it works in the static
    HTML page as well as in a live notebook.  With ipywidgets 7 the control
    swaps the image of one :class:`ipywidgets.Image` from Python (a live
    kernel); without ipywidgets only the static image is shown, with a note.

    Parameters
    ----------
    render : callable
        ``render(value) -> matplotlib.figure.Figure``; a new figure per call.
    values : sequence
        The slider positions (at least one), in display order: a list, a
        tuple or a 1-D array.
    description : str
        Slider label, e.g. ``"lr"`` or ``"time t"``.
    fmt : str
        ``str.format`` pattern turning a value into its slider label.
    index : int
        Position shown first, ``0 <= index < len(values)``.
    static : bool, default True
        First display the view at ``index`` as a plain PNG image output
        (:class:`IPython.display.Image`, the same bytes as the widget's image
        at ``index``), then return the widget.  The image is what a reader
        without JavaScript sees, and what the cell's ``mystnb.figure``
        caption applies to; put the call in a figure cell
        (``{"mystnb": {"figure": {"caption": ..., "name": ...}}}``).  With
        ``False`` only the widget is returned.

    Returns
    -------
    ipywidgets.VBox
        ``children == (slider, stack)``; ``stack.children`` are the
        :class:`ipywidgets.Image` widgets, one per value.

    Raises
    ------
    TypeError
        If ``render`` is not callable, ``description``/``fmt`` are not strings,
        ``index`` is not an int, ``static`` is not a bool, or ``render`` does
        not return a Figure.
    ValueError
        If ``values`` is empty, ``index`` is out of range, ``fmt`` cannot
        format a value, or ``control`` is unknown.
    """
    if not callable(render):
        raise TypeError(
            f"render must be callable (value -> Figure), got {render!r}"
        )
    if not isinstance(description, str):
        raise TypeError(f"description must be a string, got {description!r}")
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a str.format pattern, got {fmt!r}")
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    if control not in CONTROLS:
        raise ValueError(f"control must be one of {CONTROLS}, got {control!r}")
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(
        values, Iterable
    ):
        raise TypeError(
            "values must be a sequence (list, tuple, 1-D array), got "
            f"{type(values).__name__}"
        )
    try:
        values = list(values)
    except TypeError as exc:  # a 0-d array is iterable in type only
        raise TypeError(
            "values must be a sequence (list, tuple, 1-D array), got "
            f"{values!r}"
        ) from exc
    if not values:
        raise ValueError(
            "values must hold at least one slider position, got an empty "
            "sequence"
        )
    if isinstance(index, bool) or not isinstance(index, Integral):
        raise TypeError(f"index must be an int, got {index!r}")
    index = int(index)
    if not 0 <= index < len(values):
        raise ValueError(
            f"index must satisfy 0 <= index < {len(values)}, got {index}"
        )
    labels = _labels(values, fmt)

    pngs = []
    data = None
    for i, v in enumerate(values):
        open_before = set(plt.get_fignums())
        fig = render(v)
        if not isinstance(fig, Figure):
            for num in (
                set(plt.get_fignums()) - open_before
            ):  # figures render left behind
                plt.close(num)
            raise TypeError(
                f"render({v!r}) must return a matplotlib Figure, got "
                f"{type(fig).__name__}"
            )
        if i == index:
            data = figure_data(fig)
        pngs.append(_png(fig))

    widgets = _widgets()
    if static or widgets is None:
        _show_png(pngs[index], data)
    if widgets is None:
        print(NO_WIDGETS)
        return None
    picker = _control(widgets, control, labels, index, description)
    if hasattr(
        widgets, "Stack"
    ):  # ipywidgets >= 8: linked in the browser, no kernel needed
        images = [_image(widgets, png) for png in pngs]
        views = widgets.Stack(images, selected_index=index)
        widgets.jslink((picker, "index"), (views, "selected_index"))
    else:  # ipywidgets 7: one image, swapped by the kernel
        views = _image(widgets, pngs[index])

        def show(change: dict) -> None:
            views.value = pngs[change["new"]]

        picker.observe(show, names="index")
    return widgets.VBox([picker, views])


def _image(widgets: Any, png: bytes) -> Any:
    # (no tooltip: the vendored html-manager 1.0.15 cannot draw an Image view
    # that has one; the book's static/book.js gives each view its text
    # alternative)
    return widgets.Image(
        value=png, format="png", layout=widgets.Layout(max_width="100%")
    )


def _control(
    widgets: Any, control: str, labels: list[str], index: int, description: str
) -> Any:
    """The slider or the toggle buttons, with ``index`` as the linked trait."""
    options = [(label, i) for i, label in enumerate(labels)]
    style = {"description_width": "initial"}
    if control == "toggle":
        return widgets.ToggleButtons(
            options=options, index=index, description=description, style=style
        )
    return widgets.SelectionSlider(
        options=options,
        index=index,
        description=description,
        continuous_update=True,
        style=style,
        layout=widgets.Layout(width="min(32rem, 100%)"),
    )
