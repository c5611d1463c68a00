"""Sphinx extension: which edition a page belongs to, how to cite it, how to
report a problem.

- Every HTML page ends with a note: the book's version and release date, the
  build's date, commit and seed, and links to the changelog, to *Cite this
  book* and to a new-issue form filled in with the page, the version, the
  commit and the seed.
- ``{nqf-edition}`` writes the same facts as a paragraph (the changelog page).
- ``{nqf-cite}`` writes the book's BibTeX entry, with its version and year.

The facts come from :mod:`book_meta` (``pyproject.toml`` for the version, the
changelog for its date, ``_config.yml`` for the repository).
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

import book_meta

AUTHORS = "The nqf_lite authors"
TITLE = "Neural Quadratic Forms: an executable book"


def bibtex(e: book_meta.Edition) -> str:
    """The book's BibTeX entry."""
    year = e.released[:4]
    return (
        "@book{nqfbook,\n"
        f"  title   = {{{{{TITLE}}}}},\n"
        f"  author  = {{{{{AUTHORS}}}}},\n"
        f"  year    = {{{year}}},\n"
        f"  version = {{{e.version}}},\n"
        f"  url     = {{{e.published}}},\n"
        "  note    = {After L. Ziyin, Y. Xu, T. Poggio and I. Chuang, "
        "Neural Quadratic Forms, arXiv:2608.13335 (2026)}\n"
        "}"
    )


def edition_sentence(e: book_meta.Edition) -> str:
    return (
        f"Version {e.version} of the book (released {e.released}), built "
        f"{e.built} from commit "
        f"{e.commit} at seed NQF_SEED={e.seed}."
    )


class EditionDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        e = book_meta.edition()
        return [
            nodes.paragraph(
                text=edition_sentence(e), classes=["nqf-edition-line"]
            )
        ]


class CiteDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        text = bibtex(book_meta.edition())
        block = nodes.literal_block(text, text, language="bibtex")
        return [block]


def _relative(pagename: str, target: str) -> str:
    return "../" * pagename.count("/") + target


def report_url(e: book_meta.Edition, pagename: str, title: str) -> str:
    """A new-issue form filled in with the page, the version, the commit and
    the seed."""
    body = (
        f"Page: {pagename} ({title})\n"
        f"Address: {e.published}{pagename}.html\n"
        f"Version: {e.version} (released {e.released}), built {e.built}, "
        f"commit {e.commit}\n"
        f"Seed: NQF_SEED={e.seed}\n\n"
        "What is wrong (a sentence, a number, a figure, a cell that fails), "
        "and what you expected:\n"
    )
    return e.issue_url(f"[{pagename}] ", body, labels="reader-report")


def _footer(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    if "body" not in context or pagename in {
        "genindex",
        "search",
        "py-modindex",
    }:
        return
    e = book_meta.edition()
    title = re.sub(r"<[^>]+>", "", context.get("title", pagename))
    changelog = _relative(pagename, "book/changelog.html")
    note = (
        '<aside class="nqf-edition" aria-label="Edition of this page">'
        f"<p>{html.escape(edition_sentence(e))} "
        f'<a href="{changelog}">Changelog and errata</a> · '
        f'<a href="{changelog}#cite-this-book">Cite this book</a> · '
        '<a class="nqf-report" '
        f'href="{html.escape(report_url(e, pagename, title))}" '
        'rel="noopener">Report a problem with this page</a></p></aside>'
    )
    context["body"] = context["body"] + note


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("nqf-edition", EditionDirective)
    app.add_directive("nqf-cite", CiteDirective)
    app.add_css_file("edition.css")
    app.connect("html-page-context", _footer)
    return {
        "version": "1.0",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
