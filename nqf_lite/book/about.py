"""Which edition of the book a reader holds, and a problem report to paste.

The book's version is the version of this package (``pyproject.toml`` is its
one source).  Every notebook edition records the version it was written for;
:func:`edition` prints it in the notebook's first cell beside the version of
``nqf_lite`` that is installed, and :func:`report` prints what a problem
report needs (the page, the versions, the seed, the Python and the packages)
with the address of a new-issue form filled in with the same.

``report`` reads versions only: it imports neither IPython nor ipywidgets, and
works in plain Python, Jupyter and Colab alike.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import urllib.parse

__all__ = [
    "PACKAGES",
    "REPOSITORY",
    "edition",
    "environment",
    "issue_url",
    "report",
    "version",
]

#: the book's repository (``scripts/set_repository_url.py`` rewrites it with
#: ``repository.url`` of ``_config.yml``; a test checks that they agree)
REPOSITORY = "https://github.com/nqf-book/nqf-book"
#: the packages whose versions a problem report names
PACKAGES = ("torch", "numpy", "scipy", "matplotlib", "ipython", "ipywidgets")
#: the page :func:`edition` last opened (what :func:`report` names by default)
_current: dict[str, str] = {}


def version() -> str:
    """The version of ``nqf_lite`` that is installed (the book's version)."""
    try:
        return md.version("nqf_lite")
    except md.PackageNotFoundError:  # imported from a source tree
        return "unknown (not installed)"


def environment() -> dict[str, str]:
    """Python's version and those of :data:`PACKAGES` ("-" when missing)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    return out


def issue_url(title: str, body: str, labels: str = "") -> str:
    """The address of a new issue on :data:`REPOSITORY`, filled in.

    Parameters
    ----------
    title, body : str
        The issue's title and text (any characters; they are URL-encoded).
    labels : str, optional
        Comma-separated labels for the form ("" for none).

    Raises
    ------
    TypeError
        If an argument is not a string.
    """
    for name, value in (("title", title), ("body", body), ("labels", labels)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {value!r}")
    query = {"title": title, "body": body}
    if labels:
        query["labels"] = labels
    return f"{REPOSITORY}/issues/new?{urllib.parse.urlencode(query)}"


def _page(page: str | None) -> str:
    if page is None:
        return _current.get("page", "(say which page or notebook)")
    if not isinstance(page, str) or not page.strip():
        raise TypeError(f"page must be a non-empty string, got {page!r}")
    return page.strip()


def report(page: str | None = None, *, show: bool = True) -> str:
    """Print (and return) a problem report: page, versions, seed, packages.

    Parameters
    ----------
    page : str, optional
        The chapter or page concerned, e.g. ``"04_closure"``; by default
        the notebook whose first cell ran :func:`edition`.
    show : bool, default True
        Print the report; ``False`` only returns it.

    Returns
    -------
    str
        The report, ending with the address of a new-issue form that holds
        it (paste the report there, or follow the address).
    """
    page = _page(page)
    seed = os.environ.get("NQF_SEED", "0 (default)")
    env = environment()
    lines = [
        f"Page: {page}",
        f"Book and nqf_lite version: {version()}",
        f"NQF_SEED: {seed}",
        f"Platform: {platform.platform()}",
        *(f"{name}: {value}" for name, value in env.items()),
        "",
        "What happened (the cell, the error, what you expected):",
    ]
    body = "\n".join(lines)
    url = issue_url(f"[{page}] ", body, labels="reader-report")
    text = f"{body}\n\nReport it here: {url}"
    if show:
        print(text)
    return text


def edition(page: str, written_for: str) -> str:
    """Print the line a notebook edition opens with, and return it.

    Parameters
    ----------
    page : str
        The chapter's file stem, e.g. ``"04_closure"``.
    written_for : str
        The book version the notebook was written for.

    Returns
    -------
    str
        ``"Neural Quadratic Forms <written_for>, <page>; nqf_lite <v>
        installed ..."``, with a warning when the installed version differs.
    """
    page = _page(page)
    if not isinstance(written_for, str) or not written_for:
        raise TypeError(
            f"written_for must be a version string, got {written_for!r}"
        )
    _current["page"] = page
    have = version()
    line = (
        f"Neural Quadratic Forms {written_for}, {page}; "
        f"nqf_lite {have} installed; "
        "to report a problem: nqf_lite.book.about.report()"
    )
    if have != written_for:
        line += (
            f"\nNote: this notebook was written for version {written_for}, "
            f"and nqf_lite {have} is installed; if a cell fails, open the "
            "notebook of the same version from the book, or report it."
        )
    print(line)
    return line
