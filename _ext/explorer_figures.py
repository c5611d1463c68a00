"""Figures on the page: one numbered figure per cell, a text alternative, and a
link to the data.

myst-nb wraps *every* display output of a cell carrying ``mystnb.figure``
metadata in a figure node with the metadata's name.  An explorer cell
(:func:`nqf_lite.book.widgets.slider_explorer`) has two outputs, its static PNG
and then the slider widget, so the label would be defined twice and the widget
would be captioned as a second copy of the figure.  This extension keeps the
figure context for the first display output of a cell only; later outputs of
the same cell are rendered next to the figure, outside it.

Each figure's text alternative is written in the chapter, in the figure cell's
metadata (``mystnb.image.alt``), which myst-nb puts on the ``<img>``.  Each
figure shown by the chapters carries what it plots as CSV in its output's
metadata (``nqf_figure_data``, written by
:func:`nqf_lite.book.plotting.figure_data` in the kernel); this extension
writes that CSV next to the page's images and links it under the figure ("Data
of this figure (CSV)"), the full text alternative for a reader who cannot see
the plot and the numbers for one who wants them.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import myst_nb.core.render as nb_render
import myst_nb.sphinx_ as nb_sphinx
from docutils import nodes
from sphinx import addnodes

_ORIGINAL = nb_sphinx.create_figure_context
_RENDER_IMAGE = nb_render.NbElementRenderer.render_image
#: the output-metadata key of a figure's data
#: (nqf_lite.book.plotting.FIGURE_DATA_KEY)
DATA_KEY = "nqf_figure_data"
LINK_TEXT = "Data of this figure (CSV)"


def first_output_figure_context(
    renderer: Any, figure_options: dict | None, line: int
):
    """``create_figure_context`` for the first display output of the cell at
    ``line`` only."""
    if not isinstance(figure_options, dict):
        return _ORIGINAL(renderer, figure_options, line)
    seen = renderer.document.__dict__.setdefault("_nqf_figure_cells", set())
    if line in seen:
        return contextlib.nullcontext()
    seen.add(line)
    return _ORIGINAL(renderer, figure_options, line)


def figure_csv(output_metadata: dict) -> str | None:
    """The CSV a figure output carries: in its metadata, or in its image's
    metadata."""
    for where in (output_metadata, output_metadata.get("image/png", {})):
        data = where.get(DATA_KEY) if isinstance(where, dict) else None
        if isinstance(data, str) and data.count("\n") > 1:
            return data
    return None


def render_image_with_data(self: Any, data: Any) -> list[nodes.Element]:
    """myst-nb's image, followed by a link to the figure's data when its output
    carries it."""
    out = _RENDER_IMAGE(self, data)
    csv = figure_csv(data.output_metadata or {})
    figure = (data.cell_metadata or {}).get("mystnb", {}).get("figure", {})
    if (
        csv is None
        or not figure.get("name")
        or not getattr(self.renderer, "sphinx_env", None)
    ):
        return out
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", figure["name"])
    uri = self.write_file([f"{name}.csv"], csv.encode("utf-8"), overwrite=True)
    if not uri:
        return out
    link = addnodes.download_reference(
        "",
        "",
        nodes.inline("", LINK_TEXT),
        reftarget=uri,
        refdoc=self.renderer.sphinx_env.docname,
        refexplicit=True,
        reftype="download",
        refdomain="",
    )
    rows = csv.count("\n") - 1
    para = nodes.paragraph(
        "",
        "",
        link,
        nodes.inline(
            "",
            f" — {rows} rows: what is plotted, by panel and series, "
            "with the axis labels",
        ),
        classes=["figure-data"],
    )
    return out + [para]


def setup(app: Any) -> dict[str, Any]:
    nb_sphinx.create_figure_context = first_output_figure_context
    nb_render.NbElementRenderer.render_image = render_image_with_data
    return {"parallel_read_safe": True, "parallel_write_safe": True}
