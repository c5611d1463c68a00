"""The book's table of contents read once: every document of _toc.yml, and its
notebooks.

Run as a script it prints the notebooks listed in _toc.yml, one path per line
(the test command feeds them to nbval).  The browser test imports
:func:`toc_documents` from here, so the TOC is parsed in one place.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _glob_docs(root: Path, pattern: str) -> list[str]:
    return sorted(
        str(p.relative_to(root).with_suffix(""))
        for ext in (".md", ".ipynb")
        for p in root.glob(pattern + ext)
    )


def _entries(root: Path, node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["file"]] if "file" in node else []
        found += _glob_docs(root, node["glob"]) if "glob" in node else []
        return found + [
            d for value in node.values() for d in _entries(root, value)
        ]
    if isinstance(node, list):
        return [d for item in node for d in _entries(root, item)]
    return []


def toc_documents(root: Path = ROOT) -> list[str]:
    """Every document of ``_toc.yml`` (root first, ``glob:`` entries expanded),
    without extension."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs = [
        toc["root"],
        *_entries(root, toc.get("parts", toc.get("chapters", []))),
    ]
    return [
        str(Path(d).with_suffix(""))
        if Path(d).suffix in {".md", ".ipynb"}
        else d
        for d in docs
    ]


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """The notebooks among :func:`toc_documents`, as paths relative to
    ``root``."""
    return [
        f"{d}.ipynb"
        for d in toc_documents(root)
        if (root / f"{d}.ipynb").is_file()
    ]


if __name__ == "__main__":
    print("\n".join(toc_notebooks()))
