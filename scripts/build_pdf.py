#!/usr/bin/env python3
"""Print the built book to PDF: one file per chapter and one for the whole
book.

The PDF is the page itself, printed by headless Chromium (the browser the tests
already use), so it has exactly the page's figures, numbered equations
(MathJax) and theorem boxes. The print stylesheet (``static/book.css``,
``@media print``) drops the sidebars, buttons and widgets (an explorer prints
as its static figure); this script adds what only print needs (``PRINT_CSS``):
a code cell kept on one page when it is short, broken with its frame when it is
long, figures at their physical size.

- ``_build/html/pdf/<chapter>.pdf``: each page, printed alone. A link to
  another page of the book points to the published book (``repository.url`` of
  ``_config.yml``: ``https://github.com/<owner>/<repo>`` is published at
  ``https://<owner>.github.io/<repo>/``), never to the print server.
- ``_build/html/pdf/book.pdf``: the whole book printed in one pass from one
  HTML document made of the pages (``_build/html/_print/book.html``, removed
  afterwards): a title page (the paper's authors from ``book/references.bib``,
  the book's from ``_config.yml``, the version from ``pyproject.toml``, the
  date of the last commit), a table of contents with page numbers, the
  notation, glossary and course guide, every chapter, and the bibliography.
  Links between pages become links inside the PDF. The page numbers of the
  contents are read from a first printing (the named destinations Chromium
  writes for every link target; an untagged printing with placeholders of a
  fixed width, or the book-pdf-contents.json of the last build beside the
  site), then the book is printed again with them, until every entry lands on
  the page it names; the printings paginate alike, because the contents keep
  their length.

The book and the chapters print side by side, each in its own Chromium (the
machine's two cores).

Every PDF is tagged (a structure tree with headings, figures with their text
alternatives, and links), carries the document's language and title, and has
its headings as bookmarks. Pages have a running head (the book's title, the
chapter's) and page numbers.

Usage: ``.venv/bin/python scripts/build_pdf.py`` after ``jupyter-book build``.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import http.server
import os
import posixpath
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from pypdf import PdfReader

ROOT = Path(__file__).resolve().parents[1]
#: the built site (another one can be printed: NQF_BOOK_HTML=/path/to/html)
HTML = Path(os.environ.get("NQF_BOOK_HTML") or ROOT / "_build" / "html")
OUT = HTML / "pdf"
SCRATCH = HTML / "_print"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MARGIN = {"top": "17mm", "bottom": "16mm", "left": "15mm", "right": "15mm"}
#: print output images at this resolution or finer (a bitmap is shrunk to reach
#: it, never enlarged)
MIN_PPI = 200
#: how long the whole book may take to load, typeset and print (ms)
BOOK_TIMEOUT_MS = 900_000
#: a code frame taller than this (CSS px; a printed page holds about 1000) may
#: break across pages
LONG_PX = 600
sys.path.insert(0, str(ROOT / "scripts"))

from toc_notebooks import toc_documents  # noqa: E402

HEADER = (
    '<div style="font-size:7.5px;width:100%;margin:0 15mm;color:#555;'
    'display:flex;justify-content:space-between;font-family:sans-serif">'
    '<span>{left}</span><span class="title"></span></div>'
)
FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555;'
    'font-family:sans-serif">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)

#: what only print needs, added to every printed page (the site's own
#: stylesheet is left alone)
PRINT_CSS = """
@media print {
  html, body { background: #fff !important; }
  /* shadows would be printed as bitmaps: a flat page prints faster and
     smaller */
  * { box-shadow: none !important; text-shadow: none !important; }
  /* a code frame (a cell's input, a literal block, an output) is one piece
     when short; a long one breaks, and each piece keeps its frame. The
     outermost frame decides: what is inside never avoids a break on its own
     (a nested "avoid" pushes the code away from its empty frame). */
  div.cell_input, div[class*="highlight-"], div.highlight, pre,
  div.cell_output div.output {
    display: block !important;
    break-inside: avoid;
    -webkit-box-decoration-break: clone;
    box-decoration-break: clone;
  }
  div.cell_input *, div[class*="highlight-"] *, .print-long, .print-long * {
    break-inside: auto !important;
  }
  pre { orphans: 3; widows: 3; }
  /* a scrolling box cannot be split across pages: in print nothing scrolls,
     long lines wrap */
  pre, div.highlight, div.cell_input, div.cell_output, .scroll-cue {
    overflow: visible !important;
    max-height: none !important;
  }
  pre { white-space: pre-wrap !important; word-break: break-word; }
  button.toggle-button, .toggle-button { display: none !important; }
  figure, figure img, .math, mjx-container[display="true"] {
    break-inside: avoid;
  }
  figcaption { break-before: avoid; }
  h1, h2, h3, h4 { break-after: avoid; }
  p { orphans: 2; widows: 2; }
  a { color: #1a4d8f !important; text-decoration: none; }
  /* the book: each page of the site starts a new printed page */
  section.print-page { break-before: page; }
  section.print-page:first-of-type { break-before: auto; }
  .print-title-page { height: 240mm; display: flex; flex-direction: column;
    justify-content: center; text-align: center; break-after: page; }
  .print-title-page h1 { font-size: 30pt; margin: 0 0 6mm; border: none; }
  .print-title-page .subtitle { font-size: 16pt; color: #444;
    margin: 0 0 22mm; }
  .print-title-page p { font-size: 12pt; margin: 2mm 0; }
  .print-title-page .authors { font-size: 14pt; margin-top: 8mm; }
  .print-title-page .version { margin-top: 22mm; color: #444; }
  nav.print-toc { break-after: page; }
  nav.print-toc ol { list-style: none; padding: 0; margin: 0; }
  nav.print-toc li { display: flex; align-items: baseline; margin: 0.25em 0; }
  nav.print-toc li.toc-section { margin-left: 2em; font-size: 0.92em; }
  nav.print-toc li.toc-part { font-weight: 600; margin-top: 0.9em; }
  nav.print-toc li a { color: #111 !important; }
  nav.print-toc .toc-dots { flex: 1; border-bottom: 1px dotted #999;
    margin: 0 0.4em; }
  nav.print-toc .toc-page { font-variant-numeric: tabular-nums;
    min-width: 2.2em; text-align: right; }
}
"""

#: links: same page stays internal, another page of the site goes to the
#: published book
LINKS_JS = """
(published) => {
  let n = 0;
  for (const a of document.querySelectorAll('a[href]')) {
    const raw = a.getAttribute('href');
    if (raw.startsWith('#') || raw.startsWith('mailto:')) continue;
    const url = new URL(raw, location.href);
    if (url.origin !== location.origin) continue;
    if (url.pathname === location.pathname && url.hash) {
      a.setAttribute('href', url.hash);
      continue;
    }
    a.setAttribute('href', published + url.pathname.replace(/^\\/+/, '')
                           + url.search + url.hash);
    n += 1;
  }
  return n;
}
"""

#: long code cells may break (short ones stay whole); bitmaps printed at >=
#: MIN_PPI
LAYOUT_JS = """
([minPpi, longPx]) => {
  // paper cannot unfold: folded notes and solutions print open (an empty,
  // folded box is no use)
  for (const el of document.querySelectorAll('.toggle-hidden')) {
    el.classList.remove('toggle-hidden');
  }
  for (const el of document.querySelectorAll(
      'details.dropdown, div.dropdown details')) el.open = true;
  for (const el of document.querySelectorAll(
      'div.cell_input, div[class*="highlight-"], div.highlight, pre, '
      + 'div.cell_output div.output')) {
    if (el.getBoundingClientRect().height > longPx) {
      el.classList.add('print-long');
    }
  }
  // a figure is tagged as a group (/Div) holding the image (/Figure, with its
  // text alternative) and its caption: a <figure> would be a second /Figure,
  // one without a text alternative
  for (const f of document.querySelectorAll('figure')) {
    if (!f.hasAttribute('role')) f.setAttribute('role', 'group');
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.naturalWidth || img.src.endsWith('.svg')) continue;
    const shown = img.getBoundingClientRect().width;
    // CSS px at which the bitmap has minPpi
    const most = img.naturalWidth * 96 / minPpi;
    // shrink a bitmap a little to reach minPpi; never so much that its text
    // becomes too small
    if (shown > most && most >= 0.8 * shown) {
      img.style.width = most + 'px';
      img.style.height = 'auto';
    }
  }
}
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# ------------------------------------------------------------------ metadata


def config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def published_url(root: Path = ROOT) -> str:
    """The published book: ``https://github.com/<owner>/<repo>`` ->
    ``https://<owner>.github.io/<repo>/``."""
    url = config(root)["repository"]["url"].rstrip("/")
    m = re.fullmatch(r"https?://github\.com/([^/]+)/([^/]+?)(?:\.git)?", url)
    if not m:
        raise ValueError(
            f"_config.yml repository.url is not a GitHub repository: {url!r}"
        )
    return f"https://{m[1].lower()}.github.io/{m[2]}/"


def paper_authors(root: Path = ROOT) -> list[str]:
    """The paper's authors, first name first, from its entry in
    ``book/references.bib``."""
    bib = (root / "book" / "references.bib").read_text(encoding="utf-8")
    entry = re.search(r"@\w+\{ziyin2026nqf,(.*?)\n\}", bib, re.S)
    field = re.search(r"author\s*=\s*\{(.*?)\}\s*,?\s*$", entry[1], re.M)[1]
    names = [n.strip() for n in field.split(" and ")]
    return [
        " ".join(reversed([p.strip() for p in n.split(",", 1)]))
        if "," in n
        else n
        for n in names
    ]


def version(root: Path = ROOT) -> str:
    return tomllib.loads(
        (root / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]["version"]


def release_date(root: Path = ROOT) -> str:
    """The version's date in the changelog (``## 0.2.0 (2026-12-02)``; the
    changelog page says more)."""
    text = (root / "book" / "changelog.md").read_text(encoding="utf-8")
    m = re.search(
        rf"^##\s+{re.escape(version(root))}\s+\((\d{{4}}-\d{{2}}-\d{{2}})\)",
        text,
        re.M,
    )
    if m is None:
        raise ValueError(
            f"book/changelog.md has no heading for version {version(root)}"
        )
    return m[1]


def build_date(root: Path = ROOT) -> str:
    """The date of the last commit (the book's state), or today outside a
    repository."""
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%cs"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        ).stdout.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", out):
            return out
    except (OSError, subprocess.SubprocessError):
        pass
    return dt.date.today().isoformat()


def _names(names: list[str]) -> str:
    return (
        names[0]
        if len(names) == 1
        else ", ".join(names[:-1]) + " and " + names[-1]
    )


# ------------------------------------------------------------------ printing


def _ready(page, url: str) -> None:
    page.goto(url, wait_until="load")
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
    )
    page.evaluate("() => MathJax.startup.promise")
    page.wait_for_function(
        "() => Array.from(document.images).every(i => i.complete)"
    )
    page.emulate_media(media="print")
    page.add_style_tag(content=PRINT_CSS)
    page.evaluate(LAYOUT_JS, [MIN_PPI, LONG_PX])


def _pdf(page, path: Path, head: str, tagged: bool = True) -> None:
    """Print ``page`` to ``path``; ``tagged=False`` leaves out the structure
    tree and the bookmarks (a printing only measured for its page numbers: the
    layout is the same)."""
    page.pdf(
        path=str(path),
        format="A4",
        print_background=True,
        display_header_footer=True,
        header_template=HEADER.format(left=html.escape(head)),
        footer_template=FOOTER,
        margin=MARGIN,
        tagged=tagged,
        outline=tagged,
    )


def chapters() -> list[str]:
    """The pages printed one by one: the welcome page and every notebook page,
    in order."""
    docs = toc_documents(ROOT)
    return [d for d in docs if (ROOT / f"{d}.ipynb").is_file() or d == docs[0]]


def book_documents() -> list[str]:
    """The pages of book.pdf, in order: every page of the table of contents but
    the ledger and the API reference (long, and generated; they stay online),
    the bibliography last."""
    docs = [
        d
        for d in toc_documents(ROOT)
        if not d.startswith("book/api") and d != "book/ledger"
    ]
    return [d for d in docs if d != "book/bibliography"] + [
        "book/bibliography"
    ]


# ------------------------------------------------------ the one-document book


def _slug(doc: str) -> str:
    return Path(doc).name.replace("_", "-")


def _article(doc: str):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(
        (HTML / f"{doc}.html").read_text(encoding="utf-8"), "html.parser"
    )
    article = soup.find("article", class_="bd-article")
    if article is None:
        raise RuntimeError(f"{doc}.html has no <article class='bd-article'>")
    return soup, article


def _rewrite(doc: str, article, docs: set[str], published: str) -> None:
    """Make one page's article part of the book: its ids prefixed, its links
    internal or published."""
    slug = _slug(doc)
    for s in article.find_all(["script", "noscript"]):
        s.decompose()
    for el in article.find_all(id=True):
        el["id"] = f"{slug}--{el['id']}"
    for a in article.find_all("a", href=True):
        href = a["href"]
        parts = urlsplit(href)
        if parts.scheme or href.startswith(("mailto:", "//")):
            continue
        if not parts.path:  # "#frag" on the same page
            a["href"] = (
                f"#{slug}--{parts.fragment}" if parts.fragment else f"#{slug}"
            )
            continue
        target = posixpath.normpath(
            posixpath.join(posixpath.dirname(doc), parts.path)
        )
        target_doc = target[:-5] if target.endswith(".html") else None
        if target_doc in docs:
            a["href"] = (
                f"#{_slug(target_doc)}--{parts.fragment}"
                if parts.fragment
                else f"#{_slug(target_doc)}"
            )
        else:
            a["href"] = (
                published
                + target
                + (f"#{parts.fragment}" if parts.fragment else "")
            )
    for tag in article.find_all(
        ["img", "source"], src=True
    ):  # the book's HTML sits one folder deep too
        tag["src"] = tag["src"]


def _title_of(article) -> str:
    h1 = article.find("h1")
    text = h1.get_text(" ", strip=True) if h1 else ""
    return re.sub(r"\s*#\s*$", "", text).strip()


def _contents(
    entries: list[tuple[str, str, str]], pages: dict[str, int] | None
) -> str:
    """The table of contents: ``(kind, anchor, title)`` rows, with page numbers
    when known."""
    rows = []
    for kind, anchor, title in entries:
        number = str(pages.get(anchor, "")) if pages else "000"
        rows.append(
            f'<li class="toc-{kind}">'
            f'<a href="#{anchor}">{html.escape(title)}</a>'
            '<span class="toc-dots"></span>'
            f'<span class="toc-page">{number}</span></li>'
        )
    return (
        '<nav class="print-toc" id="contents" aria-label="Contents">'
        "<h1>Contents</h1><ol>" + "".join(rows) + "</ol></nav>"
    )


def book_html(published: str) -> tuple[str, list[tuple[str, str, str]], str]:
    """(the book as one HTML document with a placeholder for the contents, the
    contents' entries, title)."""
    cfg = config()
    docs = book_documents()
    docset = set(docs)
    template, _ = _article(docs[0])
    sections, entries = [], []
    for doc in docs:
        _, article = _article(doc)
        _rewrite(doc, article, docset, published)
        slug = _slug(doc)
        title = _title_of(article)
        entries.append(("chapter", slug, title))
        if re.match(r"notebooks/\d", doc):
            for h2 in article.find_all("h2"):
                section = h2.find_parent("section")
                if section is not None and section.get("id"):
                    entries.append(
                        (
                            "section",
                            section["id"],
                            re.sub(
                                r"\s*#\s*$", "", h2.get_text(" ", strip=True)
                            ),
                        )
                    )
        inner = "".join(str(c) for c in article.contents)
        sections.append(
            f'<section class="print-page" id="{slug}">{inner}</section>'
        )
    title = cfg["title"]
    main, _, sub = title.partition(":")
    paper = _names(paper_authors())
    front = (
        '<section class="print-title-page" id="title-page">'
        f"<h1>{html.escape(main)}</h1>"
        f'<p class="subtitle">{html.escape(sub.strip() or "")}</p>'
        f"<p>after the paper by {html.escape(paper)}</p>"
        "<p><em>Neural Quadratic Forms: A Unified Minimal Model for Sudden "
        "Learning and Scaling Laws</em>, "
        "arXiv:2608.13335 (2026)</p>"
        f'<p class="authors">{html.escape(cfg["author"])}</p>'
        f'<p class="version">Version {html.escape(version())} '
        f"(released {release_date()}), "
        f"built {build_date()}</p>"
        f'<p>Read and run online: <a href="{published}">{published}</a></p>'
        "</section>"
        "<!--CONTENTS-->"
    )
    article = template.find("article", class_="bd-article")
    article.clear()
    article.append(template.new_string("@@BODY@@"))
    for s in template.find_all("script"):
        src = s.get("src", "")
        if s.get("type", "").startswith("application/vnd.jupyter") or (
            "mathjax" not in src.lower() and "MathJax" not in (s.string or "")
        ):
            s.decompose()
    if template.title is not None:
        template.title.string = title
    document = str(template).replace("@@BODY@@", front + "".join(sections))
    return document, entries, title


def _destination_pages(path: Path) -> dict[str, int]:
    """Named destination -> page number (1-based) of a PDF Chromium printed."""
    reader = PdfReader(str(path))
    out = {}
    for name, dest in reader.named_destinations.items():
        try:
            out[str(name)[1:] if str(name).startswith("/") else str(name)] = (
                reader.get_destination_page_number(dest) + 1
            )
        except Exception:  # noqa: BLE001
            # a destination without a page is no entry of the contents
            continue
    return out


#: the contents' page numbers of the last book.pdf (a guess for the next
#: printing, checked by it)
PAGES_FILE = HTML.parent / "book-pdf-contents.json"


def _guess(entries: list[tuple[str, str, str]]) -> dict[str, int] | None:
    """The page numbers of the contents of the last printing, if it had every
    entry."""
    import json

    try:
        last = json.loads(PAGES_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    anchors = [a for _, a, _ in entries]
    if not isinstance(last, dict) or sorted(last) != sorted(anchors):
        return None
    if not all(isinstance(v, int) and v > 0 for v in last.values()):
        return None
    return last


def print_book(page, url: str, published: str) -> tuple[Path, int, int]:
    """Print the book: every printing from a freshly loaded document, until
    every entry of the contents lands on the page it names.

    The first printing is given the contents' page numbers of the last book.pdf
    (``book-pdf-contents.json`` beside the site), if it had the same entries;
    without them it is a measuring printing (placeholders of a fixed width, no
    tags) that learns where each entry lands.  Then the book is printed with
    those numbers, and again with where they landed, until nothing moves.
    Returns ``(path, pages, printings)``.
    """
    import json

    document, entries, title = book_html(published)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    path = OUT / "book.pdf"
    printings = 0

    def _print(pages: dict[str, int] | None) -> dict[str, int]:
        # a freshly loaded document each time: printing one page again and
        # again can lay it out differently (the last entries moved by one page,
        # back and forth)
        nonlocal printings
        (SCRATCH / "book.html").write_text(
            document.replace("<!--CONTENTS-->", _contents(entries, pages)),
            encoding="utf-8",
        )
        _ready(page, f"{url}/_print/book.html")
        _pdf(page, path, "", tagged=pages is not None)
        printings += 1
        return _destination_pages(path)

    pages = _guess(entries)
    if pages is None:
        first = _print(None)
        missing = [a for _, a, _ in entries if a not in first]
        if missing:
            raise RuntimeError(
                "book.pdf: no destination for the contents' entries "
                f"{missing[:5]}"
            )
        pages = {a: first[a] for _, a, _ in entries}
    # fill the numbers in and print again, until a printing lands every entry
    # where the contents say (a number can change the width of its line, and a
    # late page break moves what follows)
    for _ in range(4):
        landed = _print(pages)
        moved = [a for a in pages if landed.get(a) != pages[a]]
        if not moved:
            break
        missing = [a for a in pages if a not in landed]
        if missing:
            raise RuntimeError(
                "book.pdf: no destination for the contents' entries "
                f"{missing[:5]}"
            )
        pages = {a: landed[a] for a in pages}
    else:
        PAGES_FILE.unlink(missing_ok=True)
        raise RuntimeError(
            "book.pdf: the contents' page numbers still move after "
            f"{printings} printings: {moved[:5]}"
        )
    PAGES_FILE.write_text(
        json.dumps(pages, indent=0, sort_keys=True), encoding="utf-8"
    )
    shutil.rmtree(SCRATCH, ignore_errors=True)
    return path, len(PdfReader(str(path)).pages), printings


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def _browser(pw, timeout_ms: int = 120_000):
    browser = pw.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    page.set_default_timeout(timeout_ms)
    return browser, page


def print_chapters(url: str, published: str) -> None:
    """Each chapter printed alone (its own browser: the book prints beside
    it)."""
    from playwright.sync_api import sync_playwright

    book_title = config()["title"].split(":")[0]
    with sync_playwright() as pw:
        browser, page = _browser(pw)
        for doc in chapters():
            path = OUT / f"{Path(doc).name}.pdf"
            _ready(page, f"{url}/{doc}.html")
            page.evaluate(LINKS_JS, published)
            # the PDF's title (and the running head's right half) is the page's
            # own title
            page.evaluate(
                "() => { document.title = "
                "document.title.split(' — ')[0].trim(); }"
            )
            _pdf(page, path, book_title)
            print(
                f"[pdf] {_shown(path)}: "
                f"{len(PdfReader(str(path)).pages)} pages",
                flush=True,
            )
        browser.close()


def print_whole_book(url: str, published: str) -> None:
    from playwright.sync_api import sync_playwright

    t1 = time.perf_counter()
    with sync_playwright() as pw:
        # the whole book loads its images and typesets its math in one page,
        # beside the chapters' printing: give it time
        browser, page = _browser(pw, timeout_ms=BOOK_TIMEOUT_MS)
        path, n, printings = print_book(page, url, published)
        browser.close()
    print(
        f"[pdf] {_shown(path)}: {n} pages, "
        f"{printings} printings in {time.perf_counter() - t1:.0f} s",
        flush=True,
    )


def main() -> int:
    if not (HTML / "index.html").is_file():
        print(
            "[pdf] no built book in _build/html: run jupyter-book first",
            file=sys.stderr,
        )
        return 1
    if not CHROMIUM.exists():
        print(
            "[pdf] skipped: /usr/bin/chromium not found "
            "(sudo apt-get install chromium); "
            "the pages' PDF links stay empty",
            file=sys.stderr,
        )
        return 0
    from concurrent.futures import ThreadPoolExecutor

    OUT.mkdir(parents=True, exist_ok=True)
    published = published_url()
    server, url = _serve()
    t0 = time.perf_counter()
    try:
        # the chapters and the book print side by side, each in its own browser
        # (two cores)
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [
                pool.submit(print_whole_book, url, published),
                pool.submit(print_chapters, url, published),
            ]
            for job in jobs:
                job.result()
    finally:
        server.shutdown()
        shutil.rmtree(SCRATCH, ignore_errors=True)
    print(f"[pdf] all PDFs in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
