"""The numbers Sphinx gave the book, as the editions quote them.

:func:`collect` reads them from a built Sphinx environment: section
numbers from ``env.toc_secnumbers`` (with the rule of Sphinx's ``std``
domain), figures, equations and exercises from ``env.toc_fignumbers``, the
labels from the ``std`` and ``math`` domains, the exercises from
sphinx-exercise's registry and the boxes from sphinx-proof's list.  The
result is committed as ``_ext/editions_numbers.json``
(:data:`NUMBERS_FILE`), so that the editions can be written, and checked,
without a build.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from docutils import nodes

NUMBERS_FILE = Path(__file__).resolve().parent / "editions_numbers.json"


def _number(numbers: tuple | None) -> str | None:
    return ".".join(map(str, numbers)) if numbers else None


def _markdown(node: nodes.Node) -> str:
    """A title node as Markdown: its math between ``$``, its code in ticks."""
    if isinstance(node, nodes.math):
        return f"${node.astext()}$"
    if isinstance(node, nodes.literal):
        return f"`{node.astext()}`"
    if isinstance(node, nodes.Text):
        return str(node)
    return "".join(_markdown(child) for child in node.children)


def _sections(env: Any, doc: str) -> dict[str, tuple[str | None, str]]:
    """``anchor -> (number, title)`` of a page's sections, in page order."""
    secnumbers = env.toc_secnumbers.get(doc, {})
    return {
        ref["anchorname"]: (
            _number(secnumbers.get(ref["anchorname"])),
            _markdown(ref).strip(),
        )
        for ref in env.tocs[doc].findall(nodes.reference)
    }


def collect(env: Any, docs: list[str] | None = None) -> dict[str, Any]:
    """Every number and title the editions quote, from a built ``env``.

    ``docs`` (default: every page) limits them to the pages the table of
    contents lists by name (not the generated API pages).
    """
    figs = env.toc_fignumbers
    docs = sorted(d for d in docs or env.all_docs if d in env.tocs)
    sections = {d: _sections(env, d) for d in docs}
    labels: dict[str, dict] = {}

    def add(label, kind, doc, number, title, box=""):
        if doc not in sections:
            return
        labels[label] = {
            "kind": kind,
            "doc": doc,
            "number": number,
            "title": " ".join(title.split()),
            "box": box,
        }

    for label, (doc, labelid, title) in env.domaindata["std"][
        "labels"
    ].items():
        if doc not in sections:
            continue
        if labelid in figs.get(doc, {}).get("figure", {}):
            number = _number(figs[doc]["figure"][labelid])
            add(label, "figure", doc, number, title)
            continue
        node = env.get_doctree(doc).ids.get(labelid)
        if isinstance(node, nodes.section):
            # the std domain's rule: a section without a number of its
            # own takes its page's
            own = "#" + node["ids"][0]
            if isinstance(node.parent, nodes.document):
                own = ""
            secnumbers = env.toc_secnumbers.get(doc, {})
            number = secnumbers.get(own if own in secnumbers else "")
            title = sections[doc].get(own, (None, title))[1]
            add(label, "section", doc, _number(number), title)
    for label, (doc, _) in env.domaindata["math"]["objects"].items():
        node_id = nodes.make_id(f"equation-{label}")
        number = figs.get(doc, {}).get("displaymath", {}).get(node_id)
        add(label, "equation", doc, _number(number), "")
    registry = getattr(env, "sphinx_exercise_registry", {})
    for label, entry in registry.items():
        if entry["type"] == "exercise":
            doc = entry["docname"]
            number = figs.get(doc, {}).get("exercise", {}).get(label)
            title = entry["node"].children[0].astext()
            title = title.removeprefix("Exercise").strip()
            add(label, "exercise", doc, _number(number), title)
    box_titles = getattr(env, "nqf_box_titles", {})
    for label, entry in getattr(env, "proof_list", {}).items():
        doc, kind = entry["docname"], entry["realtype"]
        number = figs.get(doc, {}).get(entry["countertype"], {}).get(label)
        title = box_titles.get(label, (doc, ""))[1].strip()
        if title.startswith("(") and title.endswith(")"):  # as stored
            title = title[1:-1]
        add(label, "box", doc, _number(number), title, kind)
    formats = env.config.numfig_format
    return {
        "formats": {
            **{k: formats[k] for k in ("figure", "section", "exercise")},
            "equation": env.config.math_eqref_format,
        },
        "labels": dict(sorted(labels.items())),
        "sections": {d: list(s.values()) for d, s in sections.items()},
    }


def dumps(numbers: dict[str, Any]) -> str:
    return json.dumps(numbers, indent=1, ensure_ascii=False) + "\n"


def load(path: Path = NUMBERS_FILE) -> dict[str, Any]:
    """The committed numbers; clear error when the file is missing."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: missing; build the book, or run scripts/editions.py"
            " --numbers-from _build/.doctrees/environment.pickle"
        )
    numbers = json.loads(path.read_text(encoding="utf-8"))
    # JSON has lists, the sections are pairs
    numbers["sections"] = {
        d: [tuple(s) for s in v] for d, v in numbers["sections"].items()
    }
    return numbers


def from_pickle(path: Path, docs: list[str]) -> dict[str, Any]:
    """:func:`collect` on the environment a build pickled to ``path``."""
    with open(path, "rb") as f:
        env = pickle.load(f)
    env.doctreedir = str(Path(path).parent)
    return collect(env, docs)
