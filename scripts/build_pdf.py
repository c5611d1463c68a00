#!/usr/bin/env python3
"""Print the built book to PDF: one file per chapter and one for the whole book.

The PDF is the page itself, printed by headless Chromium (the browser the tests already use), so
it has exactly the page's figures, numbered equations (MathJax) and theorem boxes. The print
stylesheet (``static/book.css``, ``@media print``) drops the sidebars, buttons and widgets (an
explorer prints as its static figure). Writes ``_build/html/pdf/<chapter>.pdf`` and
``_build/html/pdf/book.pdf`` (with one bookmark per chapter), which every chapter page links.

Usage: ``.venv/bin/python scripts/build_pdf.py`` after ``jupyter-book build``.
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
import time
from pathlib import Path

from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
OUT = HTML / "pdf"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
sys.path.insert(0, str(ROOT / "scripts"))

from toc_notebooks import toc_documents  # noqa: E402

FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555">'
    '<span class="title"></span> · <span class="pageNumber"></span>/<span class="totalPages"></span></div>'
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(HTML)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _print(page, url: str, path: Path) -> None:
    page.goto(url, wait_until="load")
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    page.wait_for_function("() => Array.from(document.images).every(i => i.complete)")
    page.emulate_media(media="print")
    page.pdf(
        path=str(path), format="A4", print_background=True, display_header_footer=True,
        header_template="<span></span>", footer_template=FOOTER,
        margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"},
    )


def chapters() -> list[str]:
    """The pages of the book PDF: the welcome page and every notebook page, in order."""
    docs = toc_documents(ROOT)
    return [d for d in docs if (ROOT / f"{d}.ipynb").is_file() or d == docs[0]]


def main() -> int:
    if not (HTML / "index.html").is_file():
        print("[pdf] no built book in _build/html: run jupyter-book first", file=sys.stderr)
        return 1
    if not CHROMIUM.exists():
        print("[pdf] skipped: /usr/bin/chromium not found (sudo apt-get install chromium); "
              "the pages' PDF links stay empty", file=sys.stderr)
        return 0
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    server, url = _serve()
    t0 = time.perf_counter()
    book = PdfWriter()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.set_default_timeout(60_000)
            for doc in chapters():
                path = OUT / f"{Path(doc).name}.pdf"
                _print(page, f"{url}/{doc}.html", path)
                reader = PdfReader(str(path))
                start = len(book.pages)
                book.append(reader)
                title = page.title().split(" — ")[0]
                book.add_outline_item(title, start)
                print(f"[pdf] {path.relative_to(ROOT)}: {len(reader.pages)} pages", flush=True)
            browser.close()
    finally:
        server.shutdown()
    book.add_metadata({"/Title": "Neural Quadratic Forms: an executable book"})
    with open(OUT / "book.pdf", "wb") as fh:
        book.write(fh)
    print(f"[pdf] {(OUT / 'book.pdf').relative_to(ROOT)}: {len(book.pages)} pages in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
