"""One numbering for theorem-like boxes: the paper's.

The book's chapters restate results of the paper (Ziyin, Xu, Poggio, Chuang
2026) in sphinx-proof boxes.  Sphinx would number those boxes book-wide
("Theorem 3"), next to a title that names the paper's number ("Theorem 13 of
the paper"): two numberings for one statement. So every theorem-like box of the
book is unnumbered (``:nonumber:``) and its title carries the
number, in one of two forms:

- ``<Kind> <N> of the paper: <name>`` (or without ``: <name>``), e.g.
  ``Theorem 2 of the paper: closure of SGD on the moments``;
- ``<name> (this book)`` for a statement the book proves itself.

This extension

- warns (an error under ``-W``) on a numbered box, or on a title in neither
  form;
- renders the box title as ``Theorem 2 of the paper`` followed by the name (not
  sphinx-proof's ``Theorem (Theorem 2 of the paper: ...)``);
- makes a ``{prf:ref}`` without explicit text show the box's number or name
  (``Theorem 2 of the paper``, or ``Proposition “<name>”``) instead of the bare
  word ``Theorem`` that sphinx-proof gives an unnumbered box.
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: sphinx-proof directive types whose boxes state results (proofs and
#: algorithms are not boxes of this kind: a proof follows its statement, an
#: algorithm is a listing)
KINDS = (
    "theorem",
    "lemma",
    "definition",
    "remark",
    "conjecture",
    "corollary",
    "criterion",
    "example",
    "property",
    "observation",
    "proposition",
    "assumption",
    "axiom",
)
PAPER_TITLE = re.compile(
    r"^(?P<head>(?P<kind>[A-Z][a-z]+\.?) (?P<num>[A-Z]?\d+[a-z]?) of the "
    r"paper)(?:: (?P<name>.+))?$",
    re.S,
)
BOOK_TITLE = re.compile(r"^(?P<name>.+) \(this book\)$", re.S)


def parse_title(kind: str, title: str) -> tuple[str, str]:
    """``(reference text, name)`` of a box of type ``kind`` titled ``title``.

    The head may name another kind than the directive (a ``prf:definition`` box
    can state the paper's Assumption 1): the box shows the head, so the reader
    sees the paper's name.

    Raises
    ------
    ValueError
        If the title is in neither accepted form.
    """
    title = " ".join(title.split())
    if title.startswith("(") and title.endswith(
        ")"
    ):  # sphinx-proof stores "(title)"
        title = title[1:-1]
    m = PAPER_TITLE.match(title)
    if m:
        return m["head"], m["name"] or ""
    m = BOOK_TITLE.match(title)
    if m:
        return f"{kind.title()} “{m['name']}”", m["name"]
    raise ValueError(
        f"title {title!r}: write '<Kind> <N> of the paper: <name>' or '<name> "
        "(this book)'"
    )


def _check_boxes(app: Sphinx, doctree: nodes.document) -> None:
    """Warn on a numbered box or a title in neither form (while reading, with
    the source line)."""
    docname = app.env.docname
    for node in doctree.findall(nodes.Element):
        realtype = node.get("realtype")
        if realtype not in KINDS or "label" not in node.attributes:
            continue
        where = (app.env.doc2path(docname), node.line)
        if type(node).__name__ != "unenumerable_node":
            logger.warning(
                "prf:%s %r is numbered book-wide: add ':nonumber:' and put "
                "the paper's number in its title",
                realtype,
                node.get("label"),
                location=where,
            )
        try:
            parse_title(realtype, node.get("title", ""))
        except ValueError as exc:
            logger.warning(
                "prf:%s %r: %s",
                realtype,
                node.get("label"),
                exc,
                location=where,
            )


def _reference_texts(
    app: Sphinx, doctree: nodes.document, docname: str
) -> None:
    """Give every bare ``{prf:ref}`` to a box its number or name."""
    proofs = getattr(app.env, "proof_list", {})
    titles = app.env.nqf_box_titles
    for ref in doctree.findall(nodes.reference):
        target = ref.get("refid") or (ref.get("refuri", "").rpartition("#")[2])
        info = proofs.get(target)
        if not info or info["realtype"] not in KINDS or target not in titles:
            continue
        if ref.astext().strip().lower() == info["realtype"]:
            text, _ = parse_title(info["realtype"], titles[target][1])
            ref.children = [nodes.Text(text)]


def _collect_titles(app: Sphinx, doctree: nodes.document) -> None:
    store = app.env.nqf_box_titles
    for node in doctree.findall(nodes.Element):
        if node.get("realtype") in KINDS and node.get("label"):
            store[node["label"]] = (app.env.docname, node.get("title", ""))


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    store = getattr(env, "nqf_box_titles", {})
    for label in [k for k, (doc, _) in store.items() if doc == docname]:
        del store[label]


def _init_env(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if not hasattr(env, "nqf_box_titles"):
        env.nqf_box_titles = {}


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    env.nqf_box_titles.update(getattr(other, "nqf_box_titles", {}))


#: sphinx-proof's HTML for an unnumbered box title: the kind, then the title in
#: parentheses
BOX_TITLE = re.compile(
    r'<p class="admonition-title" id="(?P<id>[^"]+)"><span '
    r'class="caption-number">(?P<kind>[^<]*?) </span>'
    r"\s*\((?P<title>.*?)\)</p>",
    re.S,
)


def _box_titles(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Rewrite each box title: ``Theorem 2 of the paper`` in bold, then the
    name."""
    body = context.get("body")
    if not body:
        return

    def render(m: re.Match) -> str:
        kind = m["kind"].strip().lower()
        plain = re.sub(r"<[^>]+>", "", m["title"])
        try:
            head, _ = parse_title(kind, html.unescape(plain))
        except ValueError:
            return m.group(0)  # warned about while reading
        pm = PAPER_TITLE.match(" ".join(html.unescape(plain).split()))
        if pm:
            # keep the name's markup (math): drop the head and ': ' from the
            # HTML title
            name_html = (
                m["title"].split(":", 1)[1].strip()
                if ":" in m["title"]
                else ""
            )
            label = head
        else:
            name_html = re.sub(r"\s*\(this book\)\s*$", "", m["title"])
            label = f"{m['kind'].strip()} (this book)"
        tail = (
            f' <span class="box-name">{name_html}</span>' if name_html else ""
        )
        return (
            f'<p class="admonition-title" id="{m["id"]}"><span '
            'class="caption-number">'
            f"{html.escape(label)}</span>{tail}</p>"
        )

    context["body"] = BOX_TITLE.sub(render, body)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-merge-info", _merge)
    app.connect("env-purge-doc", _purge)
    app.connect("doctree-read", _collect_titles)
    app.connect("doctree-read", _check_boxes)
    app.connect("doctree-resolved", _reference_texts)
    app.connect("html-page-context", _box_titles)
    return {
        "version": "1.0",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
        "env_version": 1,
    }
