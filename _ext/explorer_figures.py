"""One numbered figure per cell: an explorer's static image is the figure, its widget sits beside it.

myst-nb wraps *every* display output of a cell carrying ``mystnb.figure`` metadata in a figure
node with the metadata's name.  An explorer cell (:func:`nqf_lite.widgets.slider_explorer`)
has two outputs, its static PNG and then the slider widget, so the label would be defined twice
and the widget would be captioned as a second copy of the figure.  This extension keeps the
figure context for the first display output of a cell only; later outputs of the same cell are
rendered next to the figure, outside it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import myst_nb.sphinx_ as nb_sphinx

_ORIGINAL = nb_sphinx.create_figure_context


def first_output_figure_context(renderer: Any, figure_options: dict | None, line: int):
    """``create_figure_context`` for the first display output of the cell at ``line`` only."""
    if not isinstance(figure_options, dict):
        return _ORIGINAL(renderer, figure_options, line)
    seen = renderer.document.__dict__.setdefault("_nqf_figure_cells", set())
    if line in seen:
        return contextlib.nullcontext()
    seen.add(line)
    return _ORIGINAL(renderer, figure_options, line)


def setup(app: Any) -> dict[str, Any]:
    nb_sphinx.create_figure_context = first_output_figure_context
    return {"parallel_read_safe": True, "parallel_write_safe": True}
