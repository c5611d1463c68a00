"""Sphinx extension: emit each inline script of a page once.

Sphinx 7.4 registers a script added with ``app.add_js_file(None, body=...)``
after the builder started (as sphinx-thebe does at ``env-before-read-docs`` and
sphinx-togglebutton at ``builder-inited``; jupyter-book loads both) twice: once
directly with the file name ``None`` and once from the registry with ``''``.
The two copies differ only in that name, so both reach the page, and
sphinx-thebe's ``const THEBE_JS_URL = ...`` then throws ``SyntaxError:
Identifier 'THEBE_JS_URL' has already been declared`` on every page.  This
hook drops the second copy of any script (same name, ``None`` read as ``''``,
and same attributes) from the page context before the page is written.

It also gives the theme a colour mode: the pydata-sphinx-theme templates read
``default_mode`` from ``html_context``, where nothing sets it, so a reader's
first visit logs the console error "Got invalid theme mode: . Resetting to
auto."  The book's figures are drawn on white, so the default is ``light``
(a reader can still switch).
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def script_key(script: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What makes two scripts the same: the file name (``None`` as ``''``) and
    the attributes."""
    name = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {}) or {}
    return str(name), tuple(
        sorted((str(k), str(v)) for k, v in attributes.items())
    )


def unique_scripts(scripts: list[Any]) -> list[Any]:
    """``scripts`` without repeats (see :func:`script_key`), first occurrence
    kept, order kept."""
    seen: set = set()
    out = []
    for script in scripts:
        key = script_key(script)
        if key not in seen:
            seen.add(key)
            out.append(script)
    return out


def _dedupe(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = unique_scripts(
            scripts
        )  # in place: Sphinx restores this list after the page


def _aria_roles(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Valid ARIA in the page body (issue 25).

    docutils writes a citation list (the bibliography of sphinxcontrib-bibtex)
    as ``<div role="list">`` holding entries with ``role="doc-biblioentry"``, a
    role ARIA 1.2 deprecates; a list then has no ``listitem`` children.  Each
    entry becomes a list item.
    """
    body = context.get("body")
    if isinstance(body, str) and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace(
            'role="doc-biblioentry"', 'role="listitem"'
        )


DEFAULT_MODE = "light"


def _theme_mode(app: Sphinx, config: Any) -> None:
    if not config.html_context.get("default_mode"):
        config.html_context["default_mode"] = DEFAULT_MODE


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _theme_mode)
    app.connect("html-page-context", _dedupe, priority=900)
    app.connect(
        "html-page-context", _aria_roles
    )  # after every extension added its scripts
    return {
        "version": "1.0",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
