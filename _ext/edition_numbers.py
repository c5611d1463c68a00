"""The numbers Sphinx gave the book, as the editions quote them.

:func:`collect` reads them from a built environment: sections from
``env.tocs`` and ``env.toc_secnumbers``, figures, equations and exercises
from ``env.toc_fignumbers``, labels from the ``std`` and ``math`` domains,
sphinx-exercise's registry and sphinx-proof's list.  They are committed as
``_ext/editions_numbers.json``: the editions are written, and checked,
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


def collect(env: Any, docs: list[str] | None = None) -> dict[str, Any]:
    """Every number and title the editions quote, from a built ``env``;
    ``docs``: only these pages (default: all)."""
    figs = env.toc_fignumbers
    sections = {}  # doc -> anchor -> [number, title], in page order
    for doc in sorted(d for d in docs or env.all_docs if d in env.tocs):
        secnumbers = env.toc_secnumbers.get(doc, {})
        sections[doc] = {
            ref["anchorname"]: [
                _number(secnumbers.get(ref["anchorname"])),
                _markdown(ref).strip(),
            ]
            for ref in env.tocs[doc].findall(nodes.reference)
        }
    labels: dict[str, dict] = {}

    def add(label, kind, doc, number, title="", box=""):
        if doc in sections:
            title = " ".join(title.split())
            labels[label] = dict(kind=kind, doc=doc, number=_number(number),
                                 title=title, box=box)  # fmt: skip

    for label, (doc, labelid, title) in env.domaindata["std"][
        "labels"
    ].items():
        if labelid in figs.get(doc, {}).get("figure", {}):
            add(label, "figure", doc, figs[doc]["figure"][labelid], title)
        elif doc in sections:
            node = env.get_doctree(doc).ids.get(labelid)
            if not isinstance(node, nodes.section):
                continue
            own = "#" + node["ids"][0]
            if isinstance(node.parent, nodes.document):
                own = ""  # the page title
            # the std domain's rule: a section without a number takes its
            # page's
            secnumbers = env.toc_secnumbers.get(doc, {})
            number = secnumbers.get(own if own in secnumbers else "")
            title = sections[doc].get(own, [None, title])[1]
            add(label, "section", doc, number, title)
    for label, (doc, _) in env.domaindata["math"]["objects"].items():
        node_id = nodes.make_id(f"equation-{label}")
        number = figs.get(doc, {}).get("displaymath", {}).get(node_id)
        add(label, "equation", doc, number)
    for label, entry in getattr(env, "sphinx_exercise_registry", {}).items():
        doc, title = entry["docname"], entry["node"].children[0].astext()
        if entry["type"] == "exercise":
            number = figs.get(doc, {}).get("exercise", {}).get(label)
            title = title.removeprefix("Exercise")
            add(label, "exercise", doc, number, title)
    box_titles = getattr(env, "nqf_box_titles", {})  # see paper_boxes
    for label, entry in getattr(env, "proof_list", {}).items():
        doc, kind = entry["docname"], entry["realtype"]
        number = figs.get(doc, {}).get(entry["countertype"], {}).get(label)
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


def dumps(numbers: dict[str, Any]) -> str:
    return json.dumps(numbers, indent=1, ensure_ascii=False) + "\n"


def load(path: Path = NUMBERS_FILE) -> dict[str, Any]:
    """The committed numbers; clear error when the file is missing."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: missing; build the book, or run scripts/editions.py"
            " --numbers-from _build/.doctrees/environment.pickle"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def from_pickle(path: Path, docs: list[str]) -> dict[str, Any]:
    """:func:`collect` on the environment a build pickled to ``path``."""
    with open(path, "rb") as f:
        env = pickle.load(f)
    env.doctreedir = str(Path(path).parent)
    return collect(env, docs)
