"""Sphinx extension: make the API page (book/api.md) robust to docstring habits.

1. Docstrings write magnitudes as ``|batch|`` or ``max |C_kj|``;
   reStructuredText reads ``|name|`` as a substitution reference and fails the
   build (``Undefined substitution referenced``).  After napoleon has turned
   the NumPy sections into fields, this hook escapes such bars outside inline
   literals and roles (``:math:`|x|``` and ````|x|```` are left untouched).
2. Docstrings refer to re-exports such as :func:`nqf_lite.expand`, while the
   API page documents the defining module (``nqf_lite.structure.expand``).
   An unresolved ``nqf_lite.<name>`` reference is retried at the object's
   defining module, so ``-n`` still checks it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

#: Inline literals (````...````) and interpreted text / roles (```...```).
_PROTECTED = re.compile(r"``.+?``|(?::[\w:+-]+:)?`[^`]+`_{0,2}")
#: A bare substitution-like ``|text|``: no space just inside the bars.
_BARS = re.compile(r"(?<![\\|\w])\|(?=[^\s|])([^|`]*?[^\s|\\])\|(?![|\w])")


def escape_bars(line: str) -> str:
    """Escape ``|text|`` outside literals and roles in one docstring line."""
    out, pos = [], 0
    for m in _PROTECTED.finditer(line):
        out.append(_BARS.sub(r"\\|\1\\|", line[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_BARS.sub(r"\\|\1\\|", line[pos:]))
    return "".join(out)


def _process(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = [escape_bars(line) for line in lines]


def defining_name(target: str) -> str | None:
    """Full name ``pkg.module.obj`` of the object a re-export ``pkg.obj`` points to."""
    module, _, attr = target.rpartition(".")
    if not module or not attr:
        return None
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None
    home, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not home or not qualname or f"{home}.{qualname}" == target:
        return None
    return f"{home}.{qualname}"


def _resolve_reexport(app: Sphinx, env: Any, node: nodes.Element, contnode: nodes.Element) -> Any:
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("nqf_lite."):
        return None
    full = defining_name(target)
    if full is None:
        return None
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], full, node, contnode
    )


def setup(app: Sphinx) -> dict[str, Any]:
    # run after napoleon (priority 500) has turned the NumPy sections into fields
    app.connect("autodoc-process-docstring", _process, priority=600)
    app.connect("missing-reference", _resolve_reexport)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
