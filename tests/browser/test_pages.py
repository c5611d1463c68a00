"""Open every page of the built book in headless Chromium, as a reader would.

For each page in ``_toc.yml``: it loads (HTTP 200, a title), every image has
loaded, no cell output shows a traceback or an error name (unless the cell is
tagged ``shows-error``: it prints a caught exception on purpose), the math is typeset by MathJax with
no TeX error, nothing is fetched from outside the machine, and our vendored
scripts raise no JavaScript error.  Chapter notebooks also need the Binder and
Colab launch links, and their widgets must render and respond to the slider.
The ledger page must list claims, all passing, from every chapter.
Screenshots go to ``_build/screenshots/``.

Run after building the book: ``pytest tests/browser -m browser``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
from _support import settle

ROOT = Path(os.environ.get("NQF_BOOK_ROOT") or Path(__file__).resolve().parents[2]).resolve()

pytestmark = pytest.mark.browser

LEDGER = "book/ledger"
ERROR_TEXT = re.compile(r"Traceback|\w*Error\b|ipykernel")
OUR_SCRIPTS = ("mathjax/", "jupyter-widgets/", "widgets-mathjax3.js")
SHOWS_ERROR = "shows-error"


def _load_toc_reader():
    spec = importlib.util.spec_from_file_location("toc_notebooks", ROOT / "scripts" / "toc_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_pages() -> list[str]:
    """Every document of ``_toc.yml`` (root first), without extension (read by scripts/toc_notebooks.py)."""
    return _load_toc_reader().toc_documents(ROOT)


def is_notebook(doc: str) -> bool:
    return (ROOT / f"{doc}.ipynb").is_file()


PAGES = toc_pages()
CHAPTERS = [d for d in PAGES if is_notebook(d)]
#: chapters with an interactive explorer (their source calls slider_explorer)
EXPLORERS = [d for d in CHAPTERS if "slider_explorer(" in (ROOT / f"{d}.ipynb").read_text(encoding="utf-8")]


def _open(page, site_url: str, doc: str, screenshots: Path):
    response = page.goto(f"{site_url}/{doc}.html", wait_until="load")
    assert response is not None and response.status == 200, f"{doc}.html: HTTP {response and response.status}"
    settle(page)
    return response


def _shoot(page, doc: str, screenshots: Path) -> None:
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    page.screenshot(path=str(screenshots / f"{doc.replace('/', '__')}.png"), full_page=True)


def _wait_for_math(page) -> None:
    """Wait until MathJax 3 has finished its first typeset pass."""
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", polling=200)
    page.evaluate("() => MathJax.startup.promise.then(() => true)")


def _wait_for_images(page) -> None:
    page.wait_for_function(
        "() => Array.from(document.images).every(img => img.complete)", polling=200
    )


@pytest.mark.parametrize("doc", PAGES)
def test_page_reads_cleanly(page, site_url, screenshots, doc):
    if not (ROOT / "_build" / "html" / f"{doc}.html").is_file():
        pytest.fail(f"{doc} is in _toc.yml but _build/html/{doc}.html was not built")
    _open(page, site_url, doc, screenshots)
    title = page.title()
    assert title.strip() and "404" not in title, f"{doc}: bad title {title!r}"

    has_math = page.locator(".math").count() > 0
    if has_math:
        _wait_for_math(page)
        assert page.locator("mjx-container").count() > 0, f"{doc}: math present but not typeset"
        untypeset = page.evaluate(
            "() => Array.from(document.querySelectorAll('.math'))"
            ".filter(el => !el.querySelector('mjx-container')).map(el => el.textContent.slice(0, 80))"
        )
        assert not untypeset, f"{doc}: math left untypeset: {untypeset[:5]}"
        tex_errors = page.evaluate(
            "() => Array.from(document.querySelectorAll('mjx-merror'))"
            ".map(el => el.getAttribute('data-mjx-error') || el.textContent)"
        )
        assert not tex_errors, f"{doc}: TeX errors: {tex_errors[:5]}"

    _wait_for_images(page)
    broken = page.evaluate(
        "() => Array.from(document.images).filter(img => img.naturalWidth === 0)"
        ".map(img => img.getAttribute('src'))"
    )
    assert not broken, f"{doc}: images that did not load: {broken}"
    if doc in CHAPTERS:  # every chapter draws figures: a page without one lost its plots
        figures = page.locator(".cell_output img").count()
        assert figures >= 1, f"{doc}: no figure in any cell output"

    # A cell tagged "shows-error" prints a caught exception on purpose.
    outputs = page.locator(f".cell:not(.tag_{SHOWS_ERROR}) .cell_output").all_inner_texts()
    bad = [t[:200] for t in outputs if ERROR_TEXT.search(t)]
    assert not bad, f"{doc}: error text in cell outputs (tag the cell {SHOWS_ERROR!r} if intended): {bad[:3]}"
    assert page.locator(".cell_output .output.traceback, .cell_output .output.error").count() == 0

    _shoot(page, doc, screenshots)
    assert not page.external, f"{doc}: requests leaving the machine: {page.external[:5]}"
    ours = [str(e) for e in page.errors if any(s in (e.stack or "") for s in OUR_SCRIPTS)]
    assert not ours, f"{doc}: JavaScript errors in the vendored scripts: {ours}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_launch_buttons(page, site_url, screenshots, doc):
    """Colab and Binder open the chapter's reader edition, never its MyST source."""
    _open(page, site_url, doc, screenshots)
    reader = f"editions/reader/{Path(doc).name}.ipynb"
    binder = page.locator(f'a[href*="mybinder.org"][href*="{reader}"]')
    colab = page.locator(f'a[href*="colab.research.google.com"][href*="{reader}"]')
    assert binder.count() >= 1, f"{doc}: no Binder launch link to {reader}"
    assert colab.count() >= 1, f"{doc}: no Colab launch link to {reader}"
    sources = page.locator(f'a[href*="mybinder.org"][href*="{doc}.ipynb"], a[href*="colab"][href*="{doc}.ipynb"]')
    assert sources.count() == 0, f"{doc}: a launch link opens the MyST source"
    assert (ROOT / reader).is_file(), f"{reader} is not in the repository"
    # the first cell (install nqf_lite on Colab/Binder) is tagged remove-cell
    assert "%pip install" not in page.locator("article").inner_text(), f"{doc}: install cell is shown"


def test_explorers_exist():
    assert len(EXPLORERS) >= 2, f"expected explorers in chapters 6 and 7, found {EXPLORERS}"


@pytest.mark.parametrize("doc", EXPLORERS)
def test_chapter_widgets_render_and_respond(page, site_url, screenshots, doc):
    _open(page, site_url, doc, screenshots)
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    assert views > 0, f"{doc}: calls slider_explorer but the page has no widget output"
    explorers = 0
    page.wait_for_selector(".jupyter-widgets", state="visible")
    assert page.locator(".jupyter-widgets").count() >= 1
    sliders = page.locator(".widget-slider")
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        slider.scroll_into_view_if_needed()
        assert slider.is_visible(), f"{doc}: slider {i} not visible"
        box = slider.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
        images = box.locator(".widget-image")
        if images.count() == 0:  # not a slider_explorer
            continue
        explorers += 1
        before = images.first.get_attribute("src")
        readout = slider.locator(".widget-readout").inner_text()
        slider.locator(".noUi-handle").focus()
        page.keyboard.press("ArrowRight")
        if slider.locator(".widget-readout").inner_text() == readout:  # already at the end
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            "([el, src]) => { const img = el.querySelector('.widget-image');"
            " return img && img.getAttribute('src') !== src && img.naturalWidth > 0; }",
            arg=[box.element_handle(), before],
        )
    toggles = page.locator(".widget-toggle-buttons")
    for i in range(toggles.count()):  # categories: the explorer's toggle buttons
        group = toggles.nth(i)
        group.scroll_into_view_if_needed()
        box = group.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
        images = box.locator(".widget-image")
        if images.count() == 0:
            continue
        explorers += 1
        before = images.first.get_attribute("src")
        buttons = group.locator("button")
        assert buttons.count() >= 2, f"{doc}: toggle explorer {i} has fewer than two choices"
        unselected = group.locator("button:not(.mod-active)").first
        unselected.click()
        page.wait_for_function(
            "([el, src]) => { const img = el.querySelector('.widget-image');"
            " return img && img.getAttribute('src') !== src && img.naturalWidth > 0; }",
            arg=[box.element_handle(), before],
        )
    assert explorers >= 1, f"{doc}: no explorer (slider or toggle buttons + images) rendered"
    _shoot(page, f"{doc}__widgets", screenshots)


def test_ledger_complete(page, site_url, screenshots):
    if LEDGER not in PAGES:
        pytest.fail(f"{LEDGER} is not in _toc.yml")
    _open(page, site_url, LEDGER, screenshots)
    rows = page.locator("table.claims-ledger tbody tr.claim-pass, table.claims-ledger tbody tr.claim-fail")
    assert rows.count() > 0, "the ledger table has no claim rows"
    summary = page.locator(".claims-ledger-summary").inner_text()
    assert "all pass" in summary, summary
    assert page.locator("table.claims-ledger tr.claim-fail").count() == 0
    # the rows sit in closed folds: read their text, not what is rendered
    results = page.locator("table.claims-ledger tbody tr.claim-pass td:last-child").evaluate_all(
        "els => els.map(e => e.textContent)"
    )
    assert len(results) == rows.count() and all(r.strip() == "pass" for r in results)
    groups = page.locator("details.claims-chapter-group")
    assert groups.count() >= len(CHAPTERS), "the ledger is not folded by chapter"
    assert page.locator("details.claims-chapter-group[open]").count() == 0, "a chapter fold is open (a failure?)"
    # each fold's first line links its chapter (static/book.js moves the link out of the summary:
    # a link inside a summary is a control inside a control)
    links = page.locator("details.claims-chapter-group > p.claims-chapter-link a").evaluate_all(
        "els => els.map(a => a.getAttribute('href'))"
    )
    silent = [d for d in CHAPTERS if not any(h and h.split("#")[0].endswith(f"{Path(d).name}.html") for h in links)]
    assert not silent, f"chapters with no claim in the ledger: {silent}"
    _shoot(page, LEDGER, screenshots)
