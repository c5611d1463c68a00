"""The PDFs (scripts/build_pdf.py): one per chapter and one for the book, read back with pypdf.

Each chapter's PDF must have pages, embedded fonts (a PDF that relies on the reader's fonts shows
boxes or substitutes, MathJax's glyphs above all), at least as many images as the chapter has
figures, the chapter's title and numbered equations in its text, and no raw TeX or MyST markup.
The book's PDF holds every chapter, one bookmark each. Run after ``bash scripts/build_book.sh``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from test_every_page import HTML, ROOT

pytestmark = pytest.mark.browser

pypdf = pytest.importorskip("pypdf")

PDF = HTML / "pdf"
sys.path.insert(0, str(ROOT / "_ext"))
import editions  # noqa: E402  (the book's numbering: chapters, sub-pages, equations)

BOOK = editions.load_book(ROOT)
#: chapter pages (sub-pages included) and their numbers: "4", "3.5"
NUMBERS = {Path(p.doc).name: p.number for p in editions.chapters(BOOK) if p.number}
CHAPTERS = sorted(NUMBERS)
RAW = re.compile(r"\\(frac|begin|end|mathrm|mathbf|left|right|sqrt|top)\b|\$\$|\{(glue|numref|eq|ref|cite|prf:)")


def prose_text(reader) -> str:
    """The text of a PDF set in proportional fonts: code (monospace) is left out.

    Code may hold TeX on purpose (a matplotlib label such as ``"$\\sqrt{\\epsilon}$"``); the
    prose, the captions and the equations may not.
    """
    parts: list[str] = []

    def visit(text, cm, tm, font, size):
        name = str((font or {}).get("/BaseFont", ""))
        if not re.search(r"Mono|Code|Courier|Consol", name, re.I):
            parts.append(text)

    for page in reader.pages:
        page.extract_text(visitor_text=visit)
        parts.append("\n")
    return "".join(parts)


def _figures(chapter: str) -> int:
    cells = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text(encoding="utf-8"))["cells"]
    return sum(bool(c.get("metadata", {}).get("mystnb", {}).get("figure")) for c in cells)


def _fonts_and_images(reader) -> tuple[set[str], set[str], int]:
    embedded, missing, images = set(), set(), 0
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            font = font.get_object()
            name = str(font.get("/BaseFont", font.get("/Name", "?")))
            descriptor = font.get("/FontDescriptor")
            if descriptor is None and "/DescendantFonts" in font:
                descriptor = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
            if font.get("/Subtype") == "/Type3":
                embedded.add(name)  # glyphs drawn in the PDF itself
            elif descriptor is not None and any(k in descriptor.get_object() for k in ("/FontFile", "/FontFile2", "/FontFile3")):
                embedded.add(name)
            else:
                missing.add(name)
        xobjects = resources.get("/XObject") or {}
        images += sum(x.get_object().get("/Subtype") == "/Image" for x in xobjects.values())
    return embedded, missing, images


@pytest.fixture(scope="module")
def pdfs() -> dict[str, object]:
    if not (PDF / "book.pdf").is_file():
        pytest.fail(f"no PDFs in {PDF}: run `bash scripts/build_book.sh` (it prints them with Chromium)", pytrace=False)
    return {p.stem: pypdf.PdfReader(str(p)) for p in PDF.glob("*.pdf")}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_pdf(pdfs, chapter):
    assert chapter in pdfs, f"no {chapter}.pdf"
    reader = pdfs[chapter]
    assert len(reader.pages) >= 3, f"{chapter}.pdf has {len(reader.pages)} page(s)"
    embedded, missing, images = _fonts_and_images(reader)
    assert embedded and not missing, f"{chapter}.pdf: fonts not embedded: {sorted(missing)[:5]}"
    assert images >= _figures(chapter), f"{chapter}.pdf: {images} images for {_figures(chapter)} figures"
    text = prose_text(reader)
    number = NUMBERS[chapter]
    assert re.search(rf"(?<![\d.]){re.escape(number)}\.\s", text[:400]), (
        f"{chapter}.pdf does not open with its numbered title {number}."
    )
    equations = [t.number for t in BOOK.labels.values() if t.kind == "equation" and Path(t.doc).name == chapter]
    missing = [n for n in equations if f"({n})" not in text]
    assert not missing, f"{chapter}.pdf: equations not printed with their numbers: {missing[:5]}"
    raw = RAW.search(text)
    assert raw is None, f"{chapter}.pdf: raw markup {text[max(raw.start() - 30, 0):raw.end() + 30]!r}"


def test_book_pdf_holds_every_chapter_with_a_bookmark(pdfs):
    book = pdfs["book"]
    chapter_pages = sum(len(pdfs[c].pages) for c in CHAPTERS)
    assert len(CHAPTERS) >= 11
    assert len(book.pages) >= chapter_pages
    titles = [item.title for item in book.outline if not isinstance(item, list)]
    assert len(titles) >= len(CHAPTERS) + 1, titles
    assert all(t.strip() for t in titles)


def test_every_chapter_page_links_its_editions_and_pdf():
    for chapter in CHAPTERS:
        html = (HTML / "notebooks" / f"{chapter}.html").read_text(encoding="utf-8")
        for target in (f"editions/reader/{chapter}.ipynb", f"editions/student/{chapter}.ipynb", f"pdf/{chapter}.pdf"):
            assert f'href="../{target}"' in html, f"{chapter}.html does not link {target}"
            assert (HTML / target).is_file(), f"{target} is linked but not in the site"
    assert (HTML / "editions" / "student-notebooks.zip").is_file()
