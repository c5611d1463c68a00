"""Every page of the built book says which edition it is and takes a reader's
report.

Read from the built HTML (``_build/html``) after the book build: each page ends
with the edition note (version and release date of ``pyproject.toml``/the
changelog, build date, commit, seed) and a *Report a problem* link whose
new-issue form names the page, the version and the seed; the changelog page
holds the errata and a BibTeX entry with the version.
"""

from __future__ import annotations

import os
import re
import tomllib
import urllib.parse
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = Path(
    os.environ.get("NQF_BOOK_ROOT") or Path(__file__).resolve().parents[2]
).resolve()
HTML = ROOT / "_build" / "html"
pytestmark = pytest.mark.browser

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"
]["version"]
REPOSITORY = yaml.safe_load(
    (ROOT / "_config.yml").read_text(encoding="utf-8")
)["repository"]["url"]
#: generated indexes (search, general index, module and theorem indexes) have
#: no page body to end
SKIP = {"genindex.html", "search.html", "py-modindex.html", "prf-prf.html"}


def _pages() -> list[Path]:
    if not (HTML / "index.html").is_file():
        return []
    return sorted(
        p
        for p in HTML.rglob("*.html")
        if p.name not in SKIP
        and not p.relative_to(HTML)
        .parts[0]
        .startswith(("_", "editions", "pdf"))
        and 'http-equiv="refresh"'
        not in p.read_text(encoding="utf-8", errors="replace")[:400].lower()
    )


PAGES = _pages()


def test_book_is_built_under_ci():
    assert PAGES or not os.environ.get("CI"), (
        "CI: build the book before the browser tests"
    )


@pytest.mark.skipif(
    not PAGES, reason="the book is not built (bash scripts/build_book.sh)"
)
@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(HTML)))
def test_page_names_its_edition_and_takes_a_report(path):
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    notes = soup.select("aside.nqf-edition")
    assert len(notes) == 1, f"{path.name}: {len(notes)} edition notes"
    text = notes[0].get_text(" ", strip=True)
    assert f"Version {VERSION} of the book" in text and re.search(
        r"built \d{4}-\d{2}-\d{2}", text
    ), text
    report = notes[0].select_one("a.nqf-report")
    assert report is not None, "no report link"
    url = urllib.parse.urlsplit(report["href"])
    assert (
        f"{url.scheme}://{url.netloc}{url.path}" == f"{REPOSITORY}/issues/new"
    )
    query = urllib.parse.parse_qs(url.query)
    page = path.relative_to(HTML).with_suffix("").as_posix()
    assert query["title"] == [f"[{page}] "], query["title"]
    body = query["body"][0]
    assert (
        f"Page: {page}" in body
        and f"Version: {VERSION}" in body
        and "Seed: NQF_SEED=" in body
    )
    links = {a.get_text(strip=True): a["href"] for a in notes[0].find_all("a")}
    assert (path.parent / links["Changelog and errata"]).resolve() == (
        HTML / "book" / "changelog.html"
    ).resolve()


@pytest.mark.skipif(
    not PAGES, reason="the book is not built (bash scripts/build_book.sh)"
)
def test_changelog_has_versions_errata_and_citation():
    soup = BeautifulSoup(
        (HTML / "book" / "changelog.html").read_text(encoding="utf-8"),
        "html.parser",
    )
    headings = [
        h.get_text(" ", strip=True) for h in soup.find_all(["h2", "h3"])
    ]
    assert any(h.startswith(f"{VERSION} (") for h in headings), headings
    assert any(h.startswith("Errata") for h in headings) and any(
        h.startswith("Cite this book") for h in headings
    )
    assert len(soup.select("section#errata table")) == 2, (
        "errata: the book's own and the paper's"
    )
    bibtex = soup.select_one("section#cite-this-book pre").get_text()
    assert "@book{nqfbook" in bibtex and f"version = {{{VERSION}}}" in bibtex
