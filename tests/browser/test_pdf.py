"""The PDFs (scripts/build_pdf.py): one per chapter and one for the book, read
back with pypdf.

Each chapter's PDF must have pages, embedded fonts (a PDF that relies on the
reader's fonts shows boxes or substitutes, MathJax's glyphs above all), a
tagged figure for every figure of the chapter, the chapter's title and numbered
equations in its text, and no raw TeX or MyST markup. The book's PDF has a
title page, a table of contents whose page numbers are right, every chapter
(each a bookmark), the notation, glossary and bibliography pages, and only
links that work in a reader's hands (inside the PDF, or to the published book,
never to the print server). Every PDF is tagged (headings, figures with a text
alternative that is not a file name), has its language and title, draws no
empty code frame, and prints its bitmaps at 200 ppi or finer. Run after ``bash
scripts/build_book.sh``.
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
# the book's numbering: chapters, sub-pages, equations
import editions  # noqa: E402

BOOK = editions.load_book(ROOT)
#: chapter pages (sub-pages included) and their numbers: "4", "3.5"
NUMBERS = {
    Path(p.doc).name: p.number for p in editions.chapters(BOOK) if p.number
}
CHAPTERS = sorted(NUMBERS)
RAW = re.compile(
    r"\\(frac|begin|end|mathrm|mathbf|left|right|sqrt|top)\b|\$\$|\{(glue|numref|eq|ref|cite|prf:)"
)


def prose_text(reader) -> str:
    """The text of a PDF set in proportional fonts: code (monospace) is left
    out.

    Code may hold TeX on purpose (a matplotlib label such as
    ``"$\\sqrt{\\epsilon}$"``); the prose, the captions and the equations may
    not.
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
    cells = json.loads(
        (ROOT / "notebooks" / f"{chapter}.ipynb").read_text(encoding="utf-8")
    )["cells"]
    return sum(
        bool(c.get("metadata", {}).get("mystnb", {}).get("figure"))
        for c in cells
    )


def _fonts_and_images(reader) -> tuple[set[str], set[str], int]:
    embedded, missing, images = set(), set(), 0
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            font = font.get_object()
            name = str(font.get("/BaseFont", font.get("/Name", "?")))
            descriptor = font.get("/FontDescriptor")
            if descriptor is None and "/DescendantFonts" in font:
                descriptor = (
                    font["/DescendantFonts"][0]
                    .get_object()
                    .get("/FontDescriptor")
                )
            if font.get("/Subtype") == "/Type3":
                embedded.add(name)  # glyphs drawn in the PDF itself
            elif descriptor is not None and any(
                k in descriptor.get_object()
                for k in ("/FontFile", "/FontFile2", "/FontFile3")
            ):
                embedded.add(name)
            else:
                missing.add(name)
        xobjects = resources.get("/XObject") or {}
        images += sum(
            x.get_object().get("/Subtype") == "/Image"
            for x in xobjects.values()
        )
    return embedded, missing, images


sys.path.insert(0, str(ROOT / "scripts"))
import build_pdf  # noqa: E402  (the published address, the title page's facts)

PUBLISHED = build_pdf.published_url(ROOT)
BOOK_DOCS = build_pdf.book_documents()


def struct_elements(reader) -> list[dict]:
    """Every element of the PDF's structure tree (its tags), depth first."""
    root = reader.trailer["/Root"].get("/StructTreeRoot")
    if root is None:
        return []
    out, stack = [], [root.get_object()]
    while stack:
        node = stack.pop()
        kids = node.get("/K")
        if kids is None:
            continue
        kids = kids if isinstance(kids, list) else [kids]
        for kid in kids:
            kid = kid.get_object() if hasattr(kid, "get_object") else kid
            if isinstance(kid, dict) and "/S" in kid:
                out.append(kid)
                stack.append(kid)
    return out


def links(reader) -> list[tuple[int, dict]]:
    """``(page index, link annotation)`` of every link of the PDF."""
    out = []
    for i, page in enumerate(reader.pages):
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Link":
                out.append((i, annot))
    return out


def _uri(annot) -> str | None:
    action = annot.get("/A")
    action = action.get_object() if action is not None else None
    return (
        str(action["/URI"])
        if action is not None and "/URI" in action
        else None
    )


@pytest.fixture(scope="module")
def pdfs() -> dict[str, object]:
    if not (PDF / "book.pdf").is_file():
        pytest.fail(
            f"no PDFs in {PDF}: run `bash scripts/build_book.sh` "
            "(it prints them with Chromium)",
            pytrace=False,
        )
    return {p.stem: pypdf.PdfReader(str(p)) for p in PDF.glob("*.pdf")}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_pdf(pdfs, chapter):
    assert chapter in pdfs, f"no {chapter}.pdf"
    reader = pdfs[chapter]
    assert len(reader.pages) >= 3, (
        f"{chapter}.pdf has {len(reader.pages)} page(s)"
    )
    embedded, missing, images = _fonts_and_images(reader)
    assert embedded and not missing, (
        f"{chapter}.pdf: fonts not embedded: {sorted(missing)[:5]}"
    )
    figures = [e for e in struct_elements(reader) if e.get("/S") == "/Figure"]
    assert len(figures) >= _figures(chapter), (
        f"{chapter}.pdf: {len(figures)} tagged figures for {_figures(chapter)}"
    )
    text = prose_text(reader)
    number = NUMBERS[chapter]
    assert re.search(rf"(?<![\d.]){re.escape(number)}\.\s", text[:400]), (
        f"{chapter}.pdf does not open with its numbered title {number}."
    )
    equations = [
        t.number
        for t in BOOK.labels.values()
        if t.kind == "equation" and Path(t.doc).name == chapter
    ]
    missing = [n for n in equations if f"({n})" not in text]
    assert not missing, (
        f"{chapter}.pdf: equations not printed with their numbers: "
        f"{missing[:5]}"
    )
    raw = RAW.search(text)
    assert raw is None, (
        f"{chapter}.pdf: raw markup "
        f"{text[max(raw.start() - 30, 0) : raw.end() + 30]!r}"
    )


def test_book_pdf_holds_every_chapter_with_a_bookmark(pdfs):
    book = pdfs["book"]
    chapter_pages = sum(len(pdfs[c].pages) for c in CHAPTERS)
    assert len(CHAPTERS) >= 11
    assert len(book.pages) >= chapter_pages
    titles = [
        item.title for item in book.outline if not isinstance(item, list)
    ]
    assert len(titles) >= len(CHAPTERS) + 1, titles
    assert all(t.strip() for t in titles)


def test_every_chapter_page_links_its_editions_and_pdf():
    for chapter in CHAPTERS:
        html = (HTML / "notebooks" / f"{chapter}.html").read_text(
            encoding="utf-8"
        )
        for target in (
            f"editions/reader/{chapter}.ipynb",
            f"editions/student/{chapter}.ipynb",
            f"pdf/{chapter}.pdf",
        ):
            assert f'href="../{target}"' in html, (
                f"{chapter}.html does not link {target}"
            )
            assert (HTML / target).is_file(), (
                f"{target} is linked but not in the site"
            )
    assert (HTML / "editions" / "student-notebooks.zip").is_file()


@pytest.mark.parametrize("name", ["book", *CHAPTERS])
def test_every_link_works_in_a_readers_hands(pdfs, name):
    """No link to the print server: a link is internal, or to the published
    book, or elsewhere on the web."""
    reader = pdfs[name]
    found = links(reader)
    assert found, f"{name}.pdf has no links"
    dead = [
        u
        for _, a in found
        if (u := _uri(a))
        and re.match(r"https?://(127\.0\.0\.1|localhost)|file:", u)
    ]
    assert not dead, (
        f"{name}.pdf: {len(dead)} links to the print server, e.g. {dead[:3]}"
    )
    internal = [a for _, a in found if _uri(a) is None]
    assert internal, f"{name}.pdf: no link inside the PDF"
    if name == "book":
        # a page that is in the book is linked inside the book, not on the web
        inside = [
            u
            for _, a in found
            if (u := _uri(a))
            and any(u.startswith(f"{PUBLISHED}{d}.html") for d in BOOK_DOCS)
        ]
        assert not inside, (
            f"book.pdf links its own pages on the web: {inside[:3]}"
        )
        assert len(internal) > 0.5 * len(found), (
            f"book.pdf: {len(internal)} internal links of {len(found)}"
        )
    else:
        ours = [
            u for _, a in found if (u := _uri(a)) and u.startswith(PUBLISHED)
        ]
        assert ours, f"{name}.pdf: no link to the published book {PUBLISHED}"


def _page_text(reader, i: int) -> str:
    return " ".join(reader.pages[i].extract_text().split())


def test_book_pdf_opens_with_a_title_page_and_contents_with_right_page_numbers(
    pdfs,
):
    book = pdfs["book"]
    title = _page_text(book, 0)
    cfg = build_pdf.config(ROOT)
    for part in (
        cfg["title"].split(":")[0],
        "after the paper by Liu Ziyin, Yizhou Xu, Tomaso Poggio and "
        "Isaac Chuang",
        cfg["author"],
        f"Version {build_pdf.version(ROOT)}",
    ):
        assert part in title, f"the title page lacks {part!r}: {title[:300]!r}"
    assert re.search(r"\d{4}-\d{2}-\d{2}", title), "the title page has no date"
    # the contents: an entry for every page of the book, each a link, printed
    # with the page it leads to
    entries = contents_entries(book)
    assert len(entries) >= len(BOOK_DOCS), (
        f"the contents have {len(entries)} entries for {len(BOOK_DOCS)} pages"
    )
    wrong = [
        (text, printed, target)
        for text, printed, target in entries
        if printed != target
    ]
    assert not wrong, (
        "contents entries whose printed page is not where they lead: "
        f"{wrong[:5]}"
    )
    text = " ".join(t for t, _, _ in entries)
    for p in editions.chapters(BOOK):
        if p.number:
            assert f"{p.number}. " in text, (
                f"the contents have no entry for {p.number}"
            )


def _destination_page(reader, annot) -> int | None:
    dest = annot.get("/Dest")
    action = annot.get("/A")
    if dest is None and action is not None:
        dest = action.get_object().get("/D")
    if dest is None:
        return None
    dest = dest.get_object() if hasattr(dest, "get_object") else dest
    if isinstance(dest, (str, bytes)) or not isinstance(dest, list):
        named = reader.named_destinations.get(str(dest))
        return (
            None
            if named is None
            else reader.get_destination_page_number(named) + 1
        )
    page = dest[0].get_object()
    return next(
        i + 1
        for i, p in enumerate(reader.pages)
        if p.get_object().indirect_reference == page.indirect_reference
        or p.get_object() == page
    )


def contents_entries(
    reader, first: int = 1, last: int = 6
) -> list[tuple[str, int, int | None]]:
    """``(entry text, page number printed on its line, page its link leads
    to)`` of the contents pages."""
    out: list[tuple[str, int, int | None]] = []
    for i in range(first, min(last, len(reader.pages))):
        starts = [target for _, _, target in out if target]
        if starts and i + 1 >= min(
            starts
        ):  # the contents end where the first page they list begins
            break
        page = reader.pages[i]
        pieces = []

        def visit(text, cm, tm, font, size):
            if text.strip():
                y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
                pieces.append((x, y, text.strip()))

        page.extract_text(visitor_text=visit)
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") != "/Link" or _uri(annot):
                continue
            x0, y0, x1, y1 = (float(v) for v in annot["/Rect"])
            lo, hi = min(y0, y1) - 3, max(y0, y1) + 3
            line = [t for x, y, t in sorted(pieces) if lo <= y <= hi]
            numbers = (
                re.findall(r"\d+", " ".join(line).split()[-1]) if line else []
            )
            if not numbers:
                continue
            out.append(
                (
                    " ".join(line),
                    int(numbers[-1]),
                    _destination_page(reader, annot),
                )
            )
    return out


def test_book_pdf_has_notation_glossary_and_a_resolved_bibliography(pdfs):
    book = pdfs["book"]
    import unicodedata

    text = " ".join(
        " ".join(page.extract_text().split()) for page in book.pages
    )
    text = unicodedata.normalize("NFKC", text)  # ligatures (fi, ff) as letters
    for heading in (
        "Notation and symbols",
        "Glossary",
        "Bibliography",
        "Course guide",
    ):
        assert heading in text, f"book.pdf has no {heading!r}"
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    titles = re.findall(r"^\s*title\s*=\s*\{(.*?)\},?\s*$", bib, re.M)
    assert len(titles) >= 10
    lower = text.lower()
    missing = [
        t
        for t in titles
        if " ".join(t.replace("{", "").replace("}", "").split()[:4]).lower()
        not in lower
    ]
    assert not missing, f"the bibliography of book.pdf lacks {missing[:3]}"
    assert not re.search(r"\[\?\?|\?\?\]|citation not found", text, re.I), (
        "an unresolved citation"
    )
    # every citation link lands inside the book (the bibliography is in it)
    bib_web = [
        u for _, a in links(book) if (u := _uri(a)) and "bibliography" in u
    ]
    assert not bib_web, f"citations link the web: {bib_web[:3]}"


@pytest.mark.parametrize("name", ["book", *CHAPTERS])
def test_pdf_is_tagged_with_language_title_headings_and_described_figures(
    pdfs, name
):
    reader = pdfs[name]
    catalog = reader.trailer["/Root"]
    assert "/StructTreeRoot" in catalog, f"{name}.pdf is not tagged"
    assert catalog.get("/MarkInfo", {}).get("/Marked"), (
        f"{name}.pdf: /MarkInfo /Marked is not true"
    )
    assert str(catalog.get("/Lang", "")).startswith("en"), (
        f"{name}.pdf has no document language"
    )
    assert str((reader.metadata or {}).get("/Title", "")).strip(), (
        f"{name}.pdf has no title"
    )
    elements = struct_elements(reader)
    kinds = {str(e.get("/S")) for e in elements}
    assert "/H1" in kinds and "/H2" in kinds, (
        f"{name}.pdf: headings are not tagged ({sorted(kinds)[:12]})"
    )
    figures = [e for e in elements if e.get("/S") == "/Figure"]
    assert figures, f"{name}.pdf has no tagged figure"
    bad = [
        str(e.get("/Alt", ""))
        for e in figures
        if not str(e.get("/Alt", "")).strip()
        or re.search(
            r"\.(png|svg|jpe?g|gif)\b|_images/|^[0-9a-f]{16,}",
            str(e.get("/Alt", "")),
        )
    ]
    assert not bad, (
        f"{name}.pdf: {len(bad)} of {len(figures)} figures have no text "
        f"alternative or a file name: {bad[:3]}"
    )
    outline = reader.outline
    assert outline, f"{name}.pdf has no bookmarks"


def _rendered(path: Path, dpi: int = 36):
    """The pages of a PDF as grey-level arrays (pdftoppm), one per page."""
    import subprocess
    import tempfile

    import numpy as np
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["pdftoppm", "-gray", "-r", str(dpi), str(path), f"{tmp}/p"],
            check=True,
        )
        files = sorted(
            Path(tmp).glob("p-*.pgm"), key=lambda f: int(f.stem.split("-")[1])
        )
        return [np.asarray(Image.open(f), dtype=np.int16) for f in files]


def empty_frames(
    pages, dpi: int = 36, min_pt: float = 60.0
) -> list[tuple[int, float]]:
    """``(page, height in pt)`` of every tinted box (a code frame, a note) with
    nothing in it for at least ``min_pt``: rows across which one light grey
    spans over half the text width and nothing is drawn."""
    import numpy as np

    out = []
    min_rows = int(min_pt / 72 * dpi)
    for k, img in enumerate(pages):
        h, w = img.shape
        x0, x1 = int(0.2 * w), int(0.8 * w)  # the middle of the text column
        band = img[:, x0:x1]
        level = np.median(band, axis=1)
        flat = (
            (band.max(axis=1) - band.min(axis=1) <= 3)
            & (level >= 200)
            & (level <= 250)
        )
        run = 0
        for y in range(h + 1):
            if (
                y < h
                and flat[y]
                and (run == 0 or abs(level[y] - level[y - 1]) <= 2)
            ):
                run += 1
                continue
            if run >= min_rows:
                out.append((k + 1, round(run * 72 / dpi)))
            run = 1 if y < h and flat[y] else 0
    return out


def test_the_empty_frame_detector_finds_an_empty_frame():
    import numpy as np

    page = np.full((400, 300), 255, dtype=np.int16)
    page[100:200, 20:280] = (
        240  # a grey box 100 px = 200 pt tall at 36 dpi, empty
    )
    page[250:280, 20:280] = 240
    page[260:262, 60:200] = 20  # a line of code in the second box
    assert empty_frames([page]) == [(1, 200)]


@pytest.mark.parametrize("name", ["book", *CHAPTERS])
def test_no_code_frame_is_printed_empty(pdfs, name):
    found = empty_frames(_rendered(PDF / f"{name}.pdf"))
    assert not found, (
        f"{name}.pdf: empty tinted frames (page, pt tall): {found[:8]}"
    )


def image_resolutions(path: Path) -> list[tuple[int, int, float]]:
    """``(page, width px, ppi)`` of every image drawn in the PDF (pdfimages
    -list), masks left out."""
    import subprocess

    out = subprocess.run(
        ["pdfimages", "-list", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines()[2:]:
        f = line.split()
        if len(f) >= 14 and f[2] == "image":
            rows.append(
                (int(f[0]), int(f[3]), min(float(f[12]), float(f[13])))
            )
    return rows


def _explorers(chapter: str) -> int:
    """Explorer figures of a chapter (nqf_lite.book.widgets.slider_explorer):
    their static frame is a bitmap."""
    path = ROOT / "notebooks" / f"{chapter}.ipynb"
    if not path.is_file():
        return 0
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(
        c["cell_type"] == "code" and "slider_explorer(" in "".join(c["source"])
        for c in cells
    )


@pytest.mark.parametrize("name", ["book", *CHAPTERS])
def test_figures_are_vector_or_at_least_200_ppi(pdfs, name):
    """A figure is drawn as vector graphics (the build draws figures as SVG),
    or its bitmap is placed at 200 ppi or finer. The one exception is an
    explorer's static frame, a PNG that nqf_lite.book.widgets draws at the
    figure's
    100 dpi: at most one coarse bitmap per explorer."""
    coarse = [
        (page, ppi)
        for page, width, ppi in image_resolutions(PDF / f"{name}.pdf")
        if width >= 64 and ppi < 199.5
    ]
    explorers = (
        sum(_explorers(c) for c in CHAPTERS)
        if name == "book"
        else _explorers(name)
    )
    assert len(coarse) <= explorers, (
        f"{name}.pdf: {len(coarse)} bitmaps under 200 ppi (page, ppi) "
        f"for {explorers} explorer frames: {coarse[:8]}"
    )
