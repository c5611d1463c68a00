"""Checks that hold on every page of the built book (issue 11.8), each its own
test.

The survey reads what the visit of each HTML page of ``_build/html`` recorded
(tests/browser/_visit.py: each page opened once in headless Chromium at 1280 x
900 px, as a reader on a laptop, after MathJax and the images).  Each test,
once for each half of the pages, fails with the list of offending pages and
elements:

- no raw TeX (``$...$``, ``\\frac``, ``\\begin``, ...) in the visible text
  outside typeset math and code;
- no display equation wider than its column (its MathJax container scrolls);
- no JavaScript error (uncaught exceptions and console errors);
- every output image of a code cell sits in a numbered, captioned figure
  (``<figure>`` with a ``<figcaption>`` reading "Fig. N"), explorer frames
  excepted;
- every explorer (ipywidgets output) has a static image in a neighbouring cell
  of its own, so the printed page and a reader without JavaScript see the
  figure;
- no progress-bar text (tqdm's ``42%|####``, ``it/s``) and no progress widget;
- no code cell that scrolls sideways (code fits the column);
- no reference that renders as a bare word ("Theorem", "Proposition", "Fig.")
  without its number or name, and no theorem-like box numbered by the book
  (every box carries the paper's number, in its title, or says it is the book's
  own);
- every explorer shows one image (its widget replaces the static image inside
  the figure).

A second survey (test_phone.py) opens every page at 390 x 800 px (a phone) and
checks that nothing is cut: the page never scrolls sideways, and every box
wider than its column (an equation, a table, code) scrolls inside itself with a
visible cue; and that a tap on a chapter's figure shows it at full size.

Run after building the book: ``pytest tests/browser -m browser``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(
    os.environ.get("NQF_BOOK_ROOT") or Path(__file__).resolve().parents[2]
).resolve()
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1280, "height": 900}
#: TeX that should have been typeset: $...$ pairs, \( \[, and common control
#: words
RAW_TEX = re.compile(
    r"(?<![\\$\w])\$(?=\S)[^$\n]{1,200}?(?<=\S)\$(?!\w)"
    r"|\$\$|\\\(|\\\["
    r"|\\(?:frac|tfrac|dfrac|begin|end|left|right|mathrm|mathbf|mathcal|mathbb|operatorname|text|sqrt|sum"
    r"|prod|int|partial|nabla|infty|approx|propto|cdot|times|top|leq?|geq?|ln|log|exp|alpha|beta|gamma"
    r"|delta|epsilon|varepsilon|eta|theta|lambda|mu|sigma|tau|Delta|Lambda|Sigma)(?![a-zA-Z])"
)
#: tqdm and friends: "42%|####  |", "3.2it/s", "1.5s/it"; progress widgets in
#: the widget state
PROGRESS = re.compile(
    r"\d+%\|[^|\n]{0,80}\||\d(?:\.\d+)?\s?(?:it/s|s/it)\b|(?:Float|Int)ProgressModel"
)
SCRIPT = re.compile(
    r"<script\b(?![^>]*application/vnd\.jupyter\.widget)[^>]*>.*?</script>",
    re.S | re.I,
)


def built_pages() -> list[str]:
    """Every HTML page of the build (relative path without ``.html``), the
    redirect ``index.html`` excepted."""
    if not HTML.is_dir():
        return []
    skip = {
        "_static",
        "_sources",
        "_images",
        "_sphinx_design_static",
        "_panels_static",
    }
    pages = [
        str(p.relative_to(HTML).with_suffix(""))
        for p in HTML.rglob("*.html")
        if not skip & set(p.relative_to(HTML).parts)
    ]
    return sorted(p for p in pages if p != "index")


#: Everything one page needs measured, in one pass after MathJax and the images
#: are done.
MEASURE = r"""
() => {
  const ours = el => el.closest(
    '.jupyter-widgets, .widget-image, [class*="widget-"]');
  // reveal collapsed content (dropdown solutions, hidden cells) so that it
  // can be measured
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden')
    .forEach(e => e.classList.remove('toggle-hidden'));

  // 1. visible text outside typeset math and code
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('mjx-container, script, style, pre, code, kbd, '
    + 'textarea, .highlight, .MathJax, '
    + 'mjx-assistive-mml, noscript, svg').forEach(e => e.remove());
  const text = clone.textContent.replace(/\s+/g, ' ');

  // 2. display equations wider than their box
  const wide = [];
  const doc = window.MathJax && MathJax.startup && MathJax.startup.document;
  if (doc && doc.math) {
    for (const item of doc.math) {
      const box = item.typesetRoot;
      if (!item.display || !box || !box.isConnected) continue;
      if (box.scrollWidth > box.clientWidth + 1) {
        wide.push(`${box.scrollWidth} px in ${box.clientWidth} px: `
          + `${String(item.math).trim().slice(0, 90)}`);
      }
    }
  }

  // 3. output images of code cells outside a numbered, captioned figure
  const cellLabel = el => {
    const cell = el.closest('.cell');
    const cells = Array.from(document.querySelectorAll('.cell'));
    let heading = null;
    for (const h of document.querySelectorAll('h1, h2, h3')) {
      if (h.compareDocumentPosition(el)
          & Node.DOCUMENT_POSITION_FOLLOWING) heading = h;
    }
    const where = heading
      ? heading.textContent.replace(/[#¶]/g, '').trim().slice(0, 50)
      : 'top';
    return `cell ${cell ? cells.indexOf(cell) + 1 : '?'} (under "${where}")`;
  };
  const unfigured = [];
  for (const img of document.querySelectorAll(
      '.cell_output img, .output img')) {
    if (ours(img)) continue;
    const fig = img.closest('figure');
    const cap = fig && fig.querySelector('figcaption');
    if (!cap || !/\bFig(ure)?\.?\s*\d+/.test(cap.textContent)) {
      const src = (img.getAttribute('src') || '').split('/').pop();
      unfigured.push(`${cellLabel(img)}: ${src.slice(0, 40)}`
        + (fig ? (cap ? ' (caption without a number)'
                      : ' (figure without caption)') : ''));
    }
  }

  // 4. explorers (widget views) without a static image in the same cell,
  //    inside a numbered figure
  const cells = Array.from(document.querySelectorAll('.cell'));
  const hasStatic = cell => cell && Array.from(
      cell.querySelectorAll('.cell_output figure img'))
    .some(i => !ours(i));
  // a progress bar is not an explorer (test_no_progress_bars reports those)
  const onlyProgress = cell => cell.querySelector(
      '.widget-hprogress, .widget-vprogress, .progress')
    && !cell.querySelector('.widget-slider, .widget-image, '
                           + '.widget-dropdown, .widget-toggle-buttons');
  const bare = [];
  const seen = new Set();
  for (const view of document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"]')) {
    const cell = view.closest('.cell');
    const i = cells.indexOf(cell);
    if (i < 0) { bare.push(`widget outside a cell`); continue; }
    if (seen.has(cell) || onlyProgress(cell)) continue;
    seen.add(cell);
    if (!hasStatic(cell)) bare.push(cellLabel(view));
  }
  // 5. output figures the browser shrinks: their text ends up smaller than
  //    the house 9 pt at 100 dpi
  const shrunk = [];
  for (const img of document.querySelectorAll('.cell_output figure img')) {
    // an explorer's static image is hidden once its widget is drawn in its
    // place (static/book.js)
    if (ours(img) || !img.naturalWidth
        || img.closest('figure.explorer-live')) continue;
    const scale = img.getBoundingClientRect().width / img.naturalWidth;
    if (scale < 0.9) {
      shrunk.push(`${cellLabel(img)}: ${img.naturalWidth} px shown at `
        + `${Math.round(100 * scale)} %`);
    }
  }
  // 6. references that show a bare word: sphinx-proof's unnumbered boxes, a
  //    numref without number
  const BARE = new RegExp('^(Theorem|Proposition|Definition|Corollary|Lemma'
    + '|Assumption|Property|Remark|Exercise|Fig\\.?|Figure|Section|Eq\\.?'
    + '|Equation|Table)\\s*$');
  const bareRefs = Array.from(document.querySelectorAll('main a.reference'))
    // API links name a class, e.g. Exercise
    .filter(a => !a.querySelector('code, span.pre') && !a.closest('dl.py'))
    .map(a => a.textContent.trim())
    .filter(t => t === '' || BARE.test(t));
  // 7. theorem-like boxes: the title carries the paper's number ("... of the
  //    paper") or "(this book)", and no book-wide number ("Theorem 3")
  const boxes = [];
  for (const title of document.querySelectorAll(
      'div.proof > p.admonition-title')) {
    const head = (title.querySelector('.caption-number') || title)
      .textContent.trim();
    if (!/ of the paper$| \(this book\)$/.test(head)) {
      boxes.push(title.textContent.trim().slice(0, 90));
    }
  }
  // 8. code cells that scroll sideways
  const scrolling = [];
  for (const pre of document.querySelectorAll('div.cell div.highlight pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const line = pre.textContent.split('\n')
        .reduce((a, b) => (b.length > a.length ? b : a), '');
      scrolling.push(`${cellLabel(pre)}: ${pre.scrollWidth} px in `
        + `${pre.clientWidth} px: ${line.trim().slice(0, 60)}`);
    }
  }
  // 9. explorers: one visible image per figure once the widget is live
  const twice = [];
  for (const fig of document.querySelectorAll('figure')) {
    if (!fig.querySelector('.widget-subarea, .jupyter-widgets')) continue;
    const shown = Array.from(fig.querySelectorAll('img'))
      .filter(i => i.getBoundingClientRect().width > 0);
    if (shown.length !== 1) {
      twice.push(`${cellLabel(fig)}: ${shown.length} images shown`);
    }
  }
  return {text, wide, unfigured, bare, shrunk, bareRefs, boxes, scrolling,
          twice};
}
"""


#: mark the folds MEASURE opens, so that they can be closed again after it
MARK_FOLDS = """() => {
  document.querySelectorAll('details:not([open])')
    .forEach(d => { d.dataset.surveyClosed = '1'; });
  document.querySelectorAll('.toggle-hidden')
    .forEach(e => { e.dataset.surveyHidden = '1'; });
  // an open fold keeps its attribute's value (open="open" stays so)
  document.querySelectorAll('details[open]')
    .forEach(d => { d.dataset.surveyOpen = d.getAttribute('open'); });
}"""
#: close the folds MEASURE opened: the page is again as loaded (axe-core checks
#: it next)
RESTORE_FOLDS = """() => {
  document.querySelectorAll('[data-survey-closed]').forEach(d => {
    d.open = false; delete d.dataset.surveyClosed; });
  document.querySelectorAll('[data-survey-hidden]').forEach(e => {
    e.classList.add('toggle-hidden'); delete e.dataset.surveyHidden; });
  document.querySelectorAll('[data-survey-open]').forEach(d => {
    d.setAttribute('open', d.dataset.surveyOpen);
    delete d.dataset.surveyOpen; });
}"""


def measure(tab) -> dict:
    """MEASURE on a loaded page (MathJax done, images complete, explorers
    drawn), folds restored."""
    tab.evaluate(MARK_FOLDS)
    try:
        return tab.evaluate(MEASURE)
    finally:
        tab.evaluate(RESTORE_FOLDS)


#: the two halves of the pages, each visited on one worker (conftest.py,
#: _visit.py)
HALVES = [0, 1]


@pytest.fixture
def survey(wide, half) -> dict[str, dict]:
    """``{page: measurements}`` of one half of the pages, each page opened once
    (its visit)."""
    from _visit import pages_of

    pages = built_pages()
    if not pages:
        pytest.fail(
            f"no built book in {HTML}: run `bash scripts/build_book.sh` first",
            pytrace=False,
        )
    results: dict[str, dict] = {}
    for doc in pages_of(half):
        visit = wide(doc)
        data = dict(visit["survey"])
        data["errors"] = visit["survey_errors"]
        data["html"] = (HTML / f"{doc}.html").read_text(encoding="utf-8")
        results[doc] = data
    return results


def _report(found: dict[str, list[str]], what: str) -> str:
    lines = [f"{len(found)} page(s) with {what}:"]
    for doc, items in sorted(found.items()):
        lines.append(f"  {doc}.html ({len(items)}):")
        lines += [f"    - {item}" for item in items[:8]]
        if len(items) > 8:
            lines.append(f"    ... and {len(items) - 8} more")
    return "\n".join(lines)


def raw_tex(text: str) -> list[str]:
    """Snippets of ``text`` around each piece of raw TeX."""
    return [
        text[max(m.start() - 25, 0) : m.end() + 25].strip()
        for m in RAW_TEX.finditer(text)
    ]


def progress_text(html: str) -> list[str]:
    """Progress-bar text in a page's HTML (scripts other than widget state
    ignored)."""
    body = SCRIPT.sub("", html)
    return [
        body[max(m.start() - 20, 0) : m.end() + 10].strip()
        for m in PROGRESS.finditer(body)
    ]


@pytest.mark.parametrize("half", HALVES)
def test_no_raw_tex_in_visible_text(survey):
    found = {
        doc: hits
        for doc, data in survey.items()
        if (hits := raw_tex(data["text"]))
    }
    assert not found, _report(
        found, "raw TeX in the visible text (outside typeset math and code)"
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_display_equation_wider_than_its_column(survey):
    found = {doc: data["wide"] for doc, data in survey.items() if data["wide"]}
    assert not found, _report(
        found,
        f"display equations wider than the column at {VIEWPORT['width']} px "
        "(split them with aligned / line breaks)",
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_javascript_errors(survey):
    found = {
        doc: data["errors"] for doc, data in survey.items() if data["errors"]
    }
    assert not found, _report(found, "JavaScript errors")


@pytest.mark.parametrize("half", HALVES)
def test_every_output_image_is_a_numbered_captioned_figure(survey):
    found = {
        doc: data["unfigured"]
        for doc, data in survey.items()
        if data["unfigured"]
    }
    assert not found, _report(
        found,
        "output images outside a numbered, captioned figure "
        '(cell metadata {"mystnb": {"figure": '
        '{"caption": ..., "name": ...}}})',
    )


@pytest.mark.parametrize("half", HALVES)
def test_every_explorer_has_a_static_image_in_its_own_cell(survey):
    found = {doc: data["bare"] for doc, data in survey.items() if data["bare"]}
    assert not found, _report(
        found,
        "explorers (widgets) without their static figure in the same cell "
        "(slider_explorer(static=True) in a cell with mystnb figure metadata)",
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_figure_is_shrunk_to_fit_the_column(survey):
    found = {
        doc: data["shrunk"] for doc, data in survey.items() if data["shrunk"]
    }
    assert not found, _report(
        found,
        "figures wider than the column, shrunk below 90 % (their text below "
        "9 px): draw them at most 6.9 in wide at 100 dpi",
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_progress_bars(survey):
    found = {
        doc: hits
        for doc, data in survey.items()
        if (hits := progress_text(data["html"]))
    }
    assert not found, _report(
        found, "progress-bar output (tqdm text or progress widgets)"
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_code_cell_scrolls_sideways(survey):
    found = {
        doc: data["scrolling"]
        for doc, data in survey.items()
        if data["scrolling"]
    }
    assert not found, _report(
        found,
        f"code cells wider than the column at {VIEWPORT['width']} px "
        "(ruff format, lines <= 79 characters)",
    )


@pytest.mark.parametrize("half", HALVES)
def test_no_bare_reference(survey):
    found = {
        doc: data["bareRefs"]
        for doc, data in survey.items()
        if data["bareRefs"]
    }
    assert not found, _report(
        found, "references that read as a bare word (no number, no name)"
    )


@pytest.mark.parametrize("half", HALVES)
def test_boxes_carry_the_papers_number_not_the_books(survey):
    found = {
        doc: data["boxes"] for doc, data in survey.items() if data["boxes"]
    }
    assert not found, _report(
        found,
        "theorem-like boxes without the paper's number in their title "
        "or numbered by the book (_ext/paper_boxes.py)",
    )


@pytest.mark.parametrize("half", HALVES)
def test_every_explorer_shows_one_image(survey):
    found = {
        doc: data["twice"] for doc, data in survey.items() if data["twice"]
    }
    assert not found, _report(
        found, "explorers showing their static image and the widget's frame"
    )
    # over every page of the book (the other half's pages are read from their
    # files)
    live = sum(
        (HTML / f"{doc}.html")
        .read_text(encoding="utf-8")
        .count("application/vnd.jupyter.widget-view+json")
        for doc in built_pages()
    )
    assert live >= 2, "no explorer found in the built pages"


def test_survey_covers_every_page_of_the_toc():
    """The survey sees the chapters, the prose pages and the generated API
    pages: its two halves together are every built page."""
    from _visit import pages_of

    pages = set(pages_of(0)) | set(pages_of(1))
    assert sorted(pages_of(0) + pages_of(1)) == built_pages()
    want = {
        "book/welcome",
        "book/ledger",
        "book/glossary",
        "book/notation",
        "book/api/index",
    }
    want |= {
        str(p.relative_to(ROOT).with_suffix(""))
        for p in (ROOT / "notebooks").glob("*.ipynb")
    }
    missing = sorted(want - pages)
    assert not missing, f"pages not built: {missing}"
    assert any(p.startswith("book/api/nqf_lite.") for p in pages), (
        "no generated API page was built"
    )


@pytest.mark.parametrize(
    "text, hits",
    [
        ("the form $f_x(W)$ is", 1),
        ("a \\frac{1}{2} here", 1),
        ("\\begin{aligned}", 1),
        ("\\(x\\)", 1),
        ("costs 5 $ and 6 $ each", 0),
        ("US$ 5", 0),
        ("plain text, no math", 0),
        ("a\\alpha", 1),
    ],
)
def test_raw_tex_detector(text, hits):
    assert len(raw_tex(text)) == hits


@pytest.mark.parametrize(
    "html, hits",
    [
        ("<pre>100%|██████████| 50/50 [00:01<00:00, 42.1it/s]</pre>", 1),
        ("<pre>3.5 s/it</pre>", 1),
        (
            '<script type="application/vnd.jupyter.widget-state+json">'
            '{"FloatProgressModel"}</script>',
            1,
        ),
        ("<p>accuracy 93% | loss</p>", 0),
        ("<script>var a = '5it/s';</script>", 0),
    ],
)
def test_progress_detector(html, hits):
    assert bool(progress_text(html)) == bool(hits)
