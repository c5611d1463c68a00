"""Open every page of the built book in headless Chromium, as a reader would.

For each page in ``_toc.yml``: it loads (HTTP 200, a title), every image has
loaded, no cell output shows a traceback or an error name (unless the cell is
tagged ``shows-error``: it prints a caught exception on purpose), the math is
typeset by MathJax with no TeX error, nothing is fetched from outside the
machine, and our vendored scripts raise no JavaScript error.  Chapter notebooks
also need the Binder and Colab launch links, and their widgets must render and
respond to the slider. The ledger page must list claims, all passing, from
every chapter. Screenshots go to ``_build/screenshots/``.

Run after building the book: ``pytest tests/browser -m browser``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
from _support import settle

ROOT = Path(
    os.environ.get("NQF_BOOK_ROOT") or Path(__file__).resolve().parents[2]
).resolve()

pytestmark = pytest.mark.browser

LEDGER = "book/ledger"
ERROR_TEXT = re.compile(r"Traceback|\w*Error\b|ipykernel")
OUR_SCRIPTS = ("mathjax/", "jupyter-widgets/", "widgets-mathjax3.js")
SHOWS_ERROR = "shows-error"


def _load_toc_reader():
    spec = importlib.util.spec_from_file_location(
        "toc_notebooks", ROOT / "scripts" / "toc_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_pages() -> list[str]:
    """Every document of ``_toc.yml`` (root first), without extension (read by
    scripts/toc_notebooks.py)."""
    return _load_toc_reader().toc_documents(ROOT)


def is_notebook(doc: str) -> bool:
    return (ROOT / f"{doc}.ipynb").is_file()


PAGES = toc_pages()
CHAPTERS = [d for d in PAGES if is_notebook(d)]
#: chapters with an interactive explorer (their source calls slider_explorer)
EXPLORERS = [
    d
    for d in CHAPTERS
    if "slider_explorer(" in (ROOT / f"{d}.ipynb").read_text(encoding="utf-8")
]


def _open(page, site_url: str, doc: str, screenshots: Path):
    response = page.goto(f"{site_url}/{doc}.html", wait_until="load")
    assert response is not None and response.status == 200, (
        f"{doc}.html: HTTP {response and response.status}"
    )
    settle(page)
    return response


def _shoot(page, doc: str, screenshots: Path) -> None:
    page.evaluate(
        "() => { document.activeElement && document.activeElement.blur();"
        " window.scrollTo(0, 0); }"
    )
    page.screenshot(
        path=str(screenshots / f"{doc.replace('/', '__')}.png"), full_page=True
    )


def _wait_for_math(page) -> None:
    """Wait until MathJax 3 has finished its first typeset pass."""
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
        polling=200,
    )
    page.evaluate("() => MathJax.startup.promise.then(() => true)")


def _wait_for_images(page) -> None:
    page.wait_for_function(
        "() => Array.from(document.images).every(img => img.complete)",
        polling=200,
    )


def shoot(page, doc: str, screenshots: Path) -> None:
    _shoot(page, doc, screenshots)


def read_cleanly(page, doc: str) -> dict:
    """What a reader sees on a loaded page: title, math, images, cell outputs
    (waits for the math and the images)."""
    out = {
        "title": page.title(),
        "has_math": page.locator(".math").count() > 0,
    }
    if out["has_math"]:
        _wait_for_math(page)
        out["typeset"] = page.locator("mjx-container").count()
        out["untypeset"] = page.evaluate(
            "() => Array.from(document.querySelectorAll('.math'))"
            ".filter(el => !el.querySelector('mjx-container'))"
            ".map(el => el.textContent.slice(0, 80))"
        )
        out["tex_errors"] = page.evaluate(
            "() => Array.from(document.querySelectorAll('mjx-merror'))"
            ".map(el => el.getAttribute('data-mjx-error') || el.textContent)"
        )
    _wait_for_images(page)
    out["broken"] = page.evaluate(
        "() => Array.from(document.images)"
        ".filter(img => img.naturalWidth === 0)"
        ".map(img => img.getAttribute('src'))"
    )
    out["figures"] = page.locator(".cell_output img").count()
    # A cell tagged "shows-error" prints a caught exception on purpose.
    out["outputs"] = page.locator(
        f".cell:not(.tag_{SHOWS_ERROR}) .cell_output"
    ).all_inner_texts()
    out["tracebacks"] = page.locator(
        ".cell_output .output.traceback, .cell_output .output.error"
    ).count()
    return out


@pytest.mark.parametrize("doc", PAGES)
def test_page_reads_cleanly(wide, doc):
    if not (ROOT / "_build" / "html" / f"{doc}.html").is_file():
        pytest.fail(
            f"{doc} is in _toc.yml but _build/html/{doc}.html was not built"
        )
    visit = wide(doc)
    status = visit["status"]
    assert status == 200, f"{doc}.html: HTTP {status}"
    page = visit["clean"]
    title = page["title"]
    assert title.strip() and "404" not in title, f"{doc}: bad title {title!r}"

    if page["has_math"]:
        assert page["typeset"] > 0, f"{doc}: math present but not typeset"
        assert not page["untypeset"], (
            f"{doc}: math left untypeset: {page['untypeset'][:5]}"
        )
        assert not page["tex_errors"], (
            f"{doc}: TeX errors: {page['tex_errors'][:5]}"
        )

    assert not page["broken"], (
        f"{doc}: images that did not load: {page['broken']}"
    )
    if (
        doc in CHAPTERS
    ):  # every chapter draws figures: a page without one lost its plots
        assert page["figures"] >= 1, f"{doc}: no figure in any cell output"

    bad = [t[:200] for t in page["outputs"] if ERROR_TEXT.search(t)]
    assert not bad, (
        f"{doc}: error text in cell outputs "
        f"(tag the cell {SHOWS_ERROR!r} if intended): {bad[:3]}"
    )
    assert page["tracebacks"] == 0

    # the screenshot is written by the visit (_build/screenshots/)
    assert not visit["external"], (
        f"{doc}: requests leaving the machine: {visit['external'][:5]}"
    )
    ours = [
        str(e)
        for e in visit["uncaught"]
        if any(s in (e.stack or "") for s in OUR_SCRIPTS)
    ]
    assert not ours, (
        f"{doc}: JavaScript errors in the vendored scripts: {ours}"
    )


def launch_links(page, doc: str) -> dict:
    """The launch links of a chapter's loaded page and its article's text."""
    reader = f"editions/reader/{Path(doc).name}.ipynb"
    return {
        "binder": page.locator(
            f'a[href*="mybinder.org"][href*="{reader}"]'
        ).count(),
        "colab": page.locator(
            f'a[href*="colab.research.google.com"][href*="{reader}"]'
        ).count(),
        "sources": page.locator(
            f'a[href*="mybinder.org"][href*="{doc}.ipynb"], '
            f'a[href*="colab"][href*="{doc}.ipynb"]'
        ).count(),
        "article": page.locator("article").inner_text(),
    }


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_launch_buttons(wide, doc):
    """Colab and Binder open the chapter's reader edition, never its MyST
    source."""
    visit = wide(doc)
    assert visit["status"] == 200, f"{doc}.html: HTTP {visit['status']}"
    links = visit["launch"]
    reader = f"editions/reader/{Path(doc).name}.ipynb"
    assert links["binder"] >= 1, f"{doc}: no Binder launch link to {reader}"
    assert links["colab"] >= 1, f"{doc}: no Colab launch link to {reader}"
    assert links["sources"] == 0, f"{doc}: a launch link opens the MyST source"
    assert (ROOT / reader).is_file(), f"{reader} is not in the repository"
    # the first cell (install nqf_lite on Colab/Binder) is tagged remove-cell
    assert "%pip install" not in links["article"], (
        f"{doc}: install cell is shown"
    )


def test_explorers_exist():
    assert len(EXPLORERS) >= 2, (
        f"expected explorers in chapters 6 and 7, found {EXPLORERS}"
    )


@pytest.mark.parametrize("doc", EXPLORERS)
def test_chapter_widgets_render_and_respond(page, site_url, screenshots, doc):
    _open(page, site_url, doc, screenshots)
    views = page.locator(
        'script[type="application/vnd.jupyter.widget-view+json"]'
    ).count()
    assert views > 0, (
        f"{doc}: calls slider_explorer but the page has no widget output"
    )
    explorers = 0
    page.wait_for_selector(".jupyter-widgets", state="visible")
    assert page.locator(".jupyter-widgets").count() >= 1
    sliders = page.locator(".widget-slider")
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        slider.scroll_into_view_if_needed()
        assert slider.is_visible(), f"{doc}: slider {i} not visible"
        box = slider.locator(
            "xpath=ancestor::div[contains(@class,'widget-vbox')][1]"
        )
        images = box.locator(".widget-image")
        if images.count() == 0:  # not a slider_explorer
            continue
        explorers += 1
        before = images.first.get_attribute("src")
        readout = slider.locator(".widget-readout").inner_text()
        slider.locator(".noUi-handle").focus()
        page.keyboard.press("ArrowRight")
        if (
            slider.locator(".widget-readout").inner_text() == readout
        ):  # already at the end
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            "([el, src]) => { const img = el.querySelector('.widget-image');"
            " return img && img.getAttribute('src') !== src"
            " && img.naturalWidth > 0; }",
            arg=[box.element_handle(), before],
        )
    toggles = page.locator(".widget-toggle-buttons")
    for i in range(
        toggles.count()
    ):  # categories: the explorer's toggle buttons
        group = toggles.nth(i)
        group.scroll_into_view_if_needed()
        box = group.locator(
            "xpath=ancestor::div[contains(@class,'widget-vbox')][1]"
        )
        images = box.locator(".widget-image")
        if images.count() == 0:
            continue
        explorers += 1
        before = images.first.get_attribute("src")
        buttons = group.locator("button")
        assert buttons.count() >= 2, (
            f"{doc}: toggle explorer {i} has fewer than two choices"
        )
        unselected = group.locator("button:not(.mod-active)").first
        unselected.click()
        page.wait_for_function(
            "([el, src]) => { const img = el.querySelector('.widget-image');"
            " return img && img.getAttribute('src') !== src"
            " && img.naturalWidth > 0; }",
            arg=[box.element_handle(), before],
        )
    assert explorers >= 1, (
        f"{doc}: no explorer (slider or toggle buttons + images) rendered"
    )
    _shoot(page, f"{doc}__widgets", screenshots)


def ledger_state(page) -> dict:
    """The ledger's rows, summary and folds on its loaded page."""
    rows = page.locator(
        "table.claims-ledger tbody tr.claim-pass, "
        "table.claims-ledger tbody tr.claim-fail"
    )
    return {
        "rows": rows.count(),
        "summary": page.locator(".claims-ledger-summary").inner_text(),
        "failed": page.locator("table.claims-ledger tr.claim-fail").count(),
        # the rows sit in closed folds: read their text, not what is rendered
        "results": page.locator(
            "table.claims-ledger tbody tr.claim-pass td:last-child"
        ).evaluate_all("els => els.map(e => e.textContent)"),
        "groups": page.locator("details.claims-chapter-group").count(),
        "open": page.locator("details.claims-chapter-group[open]").count(),
        # each fold's first line links its chapter (static/book.js moves the
        # link out of the summary: a link inside a summary is a control inside
        # a control)
        "links": page.locator(
            "details.claims-chapter-group > p.claims-chapter-link a"
        ).evaluate_all("els => els.map(a => a.getAttribute('href'))"),
    }


def test_ledger_complete(wide):
    if LEDGER not in PAGES:
        pytest.fail(f"{LEDGER} is not in _toc.yml")
    visit = wide(LEDGER)
    assert visit["status"] == 200, f"{LEDGER}.html: HTTP {visit['status']}"
    ledger = visit["ledger"]
    assert ledger["rows"] > 0, "the ledger table has no claim rows"
    summary = ledger["summary"]
    assert "all pass" in summary, summary
    assert ledger["failed"] == 0
    results = ledger["results"]
    assert len(results) == ledger["rows"] and all(
        r.strip() == "pass" for r in results
    )
    assert ledger["groups"] >= len(CHAPTERS), (
        "the ledger is not folded by chapter"
    )
    assert ledger["open"] == 0, "a chapter fold is open (a failure?)"
    links = ledger["links"]
    silent = [
        d
        for d in CHAPTERS
        if not any(
            h and h.split("#")[0].endswith(f"{Path(d).name}.html")
            for h in links
        )
    ]
    assert not silent, f"chapters with no claim in the ledger: {silent}"
