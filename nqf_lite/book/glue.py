"""Numbers for the prose: glue a value, show the quoted ones in a notebook.

:func:`glue` gives a measured value to the page (``{glue:text}`key`:.3g``);
:func:`show_numbers` makes a notebook outside the book (the reader editions)
print, under each cell, the values its text quotes; :func:`execution` tells
one cell execution from the next (the claims ledger uses it to tell a re-run
from a duplicate key).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["execution", "glue", "ipython", "show_numbers"]


#: formats of the glued values a reader edition's text quotes
#: (:func:`show_numbers`)
_SHOWN: dict[str, str] = {}
#: values glued during the current cell execution, shown after it
_PENDING: dict[str, object] = {}


def show_numbers(formats: Mapping[str, str]) -> None:
    """Show, under each cell, the glued values that the notebook's text quotes.

    The book's pages print glued numbers inside the prose.  A notebook opened
    in Jupyter, JupyterLab or Colab cannot: its text shows ``⟨key⟩`` instead.
    A reader edition calls this once in its first cell, with the format of
    every quoted key; from then on, each cell that glues one of them ends with
    one line, ``Numbers quoted in the text: ⟨key⟩ = value, ...``.

    Parameters
    ----------
    formats : mapping of str to str
        ``{key: format spec}``, e.g. ``{"ch4-gap-M0": ".1e"}``; the spec
        follows ``format()`` (an empty string for ``str``).

    Raises
    ------
    TypeError
        If ``formats`` is not a mapping of strings to strings.
    """
    if not isinstance(formats, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in formats.items()
    ):
        raise TypeError(
            "formats must map keys (str) to format specs (str), got "
            f"{formats!r}"
        )
    _SHOWN.clear()
    _SHOWN.update(formats)
    ip = ipython()
    if (
        ip is not None
        and _flush_numbers not in ip.events.callbacks["post_run_cell"]
    ):
        ip.events.register("post_run_cell", _flush_numbers)


def ipython():
    """The running IPython shell, or None (plain Python; IPython is
    optional)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _formatted(value: object, spec: str) -> str:
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def _flush_numbers(*_: object) -> None:
    """Print the values glued by the cell that just ran (those the text
    quotes)."""
    if not _PENDING:
        return
    parts = [
        f"⟨{k}⟩ = {_formatted(v, _SHOWN[k])}" for k, v in _PENDING.items()
    ]
    _PENDING.clear()
    print("Numbers quoted in the text: " + ", ".join(parts))


def glue(key: str, value: object, display: bool = False) -> None:
    """Glue ``value`` under ``key`` for the prose (``{glue:text}`key`:.3g``).

    A thin wrapper of ``myst_nb.glue`` that turns numpy scalars into Python
    numbers (so format specs work) and does nothing where myst-nb is not
    installed (Colab, Binder), so chapters run anywhere.  After
    :func:`show_numbers`, a value the text quotes is printed under its cell.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if key in _SHOWN:
        _PENDING[key] = value
        if ipython() is None:  # plain Python: no cell boundary to wait for
            _flush_numbers()
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # a bare kernel: there is no page to glue into
        return
    _myst_glue(key, value, display=display)


#: cells that have finished running since the first claim was checked
_CELLS_RUN = [0]


def _count_cell(*_: object) -> None:
    _CELLS_RUN[0] += 1


def execution() -> int:
    """An id of the cell execution running now: the cells finished since a
    shell was first seen.

    It counts IPython's ``post_run_cell`` events itself, rather than reading
    the shell's execution count, so that it changes only when a cell ends.  In
    plain Python no cell ever ends, so the id stays the same, also when an
    import (myst-nb) starts an IPython shell between two checks: a key checked
    twice is then a duplicate, as it is without IPython.
    """
    ip = ipython()
    if (
        ip is not None
        and _count_cell not in ip.events.callbacks["post_run_cell"]
    ):
        ip.events.register("post_run_cell", _count_cell)
    return _CELLS_RUN[0]
