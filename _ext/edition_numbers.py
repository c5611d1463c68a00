"""The numbers Sphinx gave the book, as the editions quote them.

:func:`collect` reads them from a built environment: sections from
``env.tocs`` and ``env.toc_secnumbers``, figures, equations, exercises and
boxes from ``env.toc_fignumbers``, labels from the ``std`` and ``math``
domains, sphinx-exercise's registry and sphinx-proof's list.  They are
committed as ``_ext/editions_numbers.json``: the editions are written, and
checked, without a build.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from docutils import nodes

NUMBERS_FILE = Path(__file__).resolve().parent / "editions_numbers.json"


def _markdown(node: nodes.Node) -> str:
    """A title node as Markdown: its math between ``$``, its code in ticks."""
    if isinstance(node, nodes.math):
        return f"${node.astext()}$"
    if isinstance(node, nodes.literal):
        return f"`{node.astext()}`"
    if isinstance(node, nodes.Text):
        return str(node)
    return "".join(_markdown(child) for child in node.children)


def collect(env: Any, docs: list[str]) -> dict[str, Any]:
    """Every number and title the editions quote, from a built ``env``, for
    the pages ``docs``."""
    docs = sorted(d for d in docs if d in env.tocs)
    secnumbers = {doc: env.toc_secnumbers.get(doc, {}) for doc in docs}
    sections = {}  # doc -> anchor -> [number, title], in page order
    for doc in docs:
        sections[doc] = anchors = {}
        for ref in env.tocs[doc].findall(nodes.reference):
            anchor, title = ref["anchorname"], _markdown(ref).strip()
            anchors[anchor] = [_number(secnumbers[doc].get(anchor)), title]
    labels: dict[str, dict] = {}

    def add(label, kind, doc, number, title="", box=""):
        if doc in sections:
            title = " ".join(title.split())
            labels[label] = dict(kind=kind, doc=doc, number=_number(number),
                                 title=title, box=box)  # fmt: skip

    def fig(doc: str, kind: str, key: str) -> tuple | None:
        return env.toc_fignumbers.get(doc, {}).get(kind, {}).get(key)

    std = env.domaindata["std"]["labels"]
    for label, (doc, labelid, title) in std.items():
        if number := fig(doc, "figure", labelid):
            add(label, "figure", doc, number, title)
        elif doc in sections:
            node = env.get_doctree(doc).ids.get(labelid)
            if not isinstance(node, nodes.section):
                continue
            page = isinstance(node.parent, nodes.document)  # its title
            own = "" if page else "#" + node["ids"][0]
            # the std domain's rule: an unnumbered section takes its page's
            number = secnumbers[doc].get(own, secnumbers[doc].get(""))
            title = sections[doc].get(own, [None, title])[1]
            add(label, "section", doc, number, title)
    for label, (doc, _) in env.domaindata["math"]["objects"].items():
        key = nodes.make_id(f"equation-{label}")
        add(label, "equation", doc, fig(doc, "displaymath", key))
    for label, entry in getattr(env, "sphinx_exercise_registry", {}).items():
        doc, title = entry["docname"], entry["node"].children[0].astext()
        if entry["type"] == "exercise":
            number = fig(doc, "exercise", label)
            add(label, "exercise", doc, number, title.removeprefix("Exercise"))
    box_titles = getattr(env, "nqf_box_titles", {})  # see paper_boxes
    for label, entry in getattr(env, "proof_list", {}).items():
        doc, kind = entry["docname"], entry["realtype"]
        number = fig(doc, entry["countertype"], label)
        title = box_titles.get(label, (doc, "()"))[1].strip()[1:-1]
        add(label, "box", doc, number, title, kind)
    formats = env.config.numfig_format
    return {
        "formats": {
            **{k: formats[k] for k in ("figure", "section", "exercise")},
            "equation": env.config.math_eqref_format,
        },
        "labels": dict(sorted(labels.items())),
        "sections": {d: list(s.values()) for d, s in sections.items()},
    }


def _number(numbers: tuple | None) -> str | None:
    return ".".join(map(str, numbers)) if numbers else None


def dumps(numbers: dict[str, Any]) -> str:
    return json.dumps(numbers, indent=1, ensure_ascii=False) + "\n"


def save(numbers: dict[str, Any], path: Path = NUMBERS_FILE) -> bool:
    """Write ``numbers`` to the committed file; True if they changed."""
    old = path.read_text("utf-8") if path.is_file() else ""
    path.write_text(dumps(numbers), encoding="utf-8")
    return dumps(numbers) != old


def load(path: Path = NUMBERS_FILE) -> dict[str, Any]:
    """The committed numbers (build the book, or run ``scripts/editions.py
    --numbers-from``, if the file is missing)."""
    return json.loads(path.read_text(encoding="utf-8"))


def from_pickle(path: Path, docs: list[str]) -> dict[str, Any]:
    """:func:`collect` on the environment a build pickled to ``path``."""
    with open(path, "rb") as f:
        env = pickle.load(f)
    env.doctreedir = str(Path(path).parent)
    return collect(env, docs)
