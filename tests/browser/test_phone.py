"""Every page on a phone (390 x 800 px): nothing cut, wide boxes scroll with a
cue, figures enlarge.

A page must never scroll sideways as a whole. A box wider than its column (a
display equation, a table, a code block) must scroll inside itself and carry
the visible cue that static/book.js adds (class ``scroll-cue``: a shaded right
edge and a "scroll sideways" label). A figure drawn for the 688-px column is
shown at about half size on a phone, its 9-pt text near 6 px; a tap must open
it at full size (text at 100 %). Run after building the book: ``pytest
tests/browser -m browser``.
"""

from __future__ import annotations

import pytest
from test_every_page import HTML, _report, built_pages

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 800}

#: block-level things that may be wider than the column; each must scroll with
#: a cue, or wrap
CUT = r"""
() => {
  const out = {page: null, uncued: [], cut: []};
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth + 1) {
    out.page = `${root.scrollWidth} px in ${window.innerWidth} px`;
  }
  const main = document.querySelector('main') || document.body;
  const right = main.getBoundingClientRect().right;
  const scrolls = el => ['auto', 'scroll'].includes(
    getComputedStyle(el).overflowX);
  const inScroller = el => {
    for (let p = el.parentElement; p && p !== main; p = p.parentElement) {
      if (scrolls(p)) return true;
    }
    return false;
  };
  const name = el => `${el.tagName.toLowerCase()}.`
    + `${[...el.classList].slice(0, 2).join('.')}: `
    + el.textContent.trim().replace(/\s+/g, ' ').slice(0, 60);
  for (const el of main.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (getComputedStyle(el).visibility === 'hidden') continue;
    // MathJax's hidden copy for screen readers
    if (el.closest('mjx-assistive-mml')) continue;
    if (el.scrollWidth > el.clientWidth + 1 && scrolls(el)
        && el.clientWidth > 0) {
      const cued = el.classList.contains('scroll-cue')
        && getComputedStyle(el).boxShadow !== 'none';
      if (!cued) {
        out.uncued.push(
          `${name(el)} (${el.scrollWidth} px in ${el.clientWidth} px)`);
      }
    } else if (r.right > right + 3 && !inScroller(el)
               && !el.closest('.bd-sidebar-secondary, .figure-zoom')) {
      // (3 px: a glyph's overhang past its box is not a cut)
      out.cut.push(`${name(el)} (ends at ${Math.round(r.right)} px, `
        + `column ends at ${Math.round(right)} px)`);
    }
  }
  out.uncued = [...new Set(out.uncued)];
  out.cut = [...new Set(out.cut)].slice(0, 20);
  return out;
}
"""


def tap_first_figure(tab) -> tuple[float, float]:
    """On a loaded phone page: the first figure's shown scale, then its scale
    once tapped."""
    img = tab.locator("main figure img").first
    img.scroll_into_view_if_needed()
    shown = img.evaluate(
        "i => i.getBoundingClientRect().width / i.naturalWidth"
    )
    img.tap()
    big = tab.locator("div.figure-zoom img")
    big.wait_for(state="visible")
    scale = big.evaluate(
        "i => i.getBoundingClientRect().width / i.naturalWidth"
    )
    tab.locator("div.figure-zoom").tap()
    tab.locator("div.figure-zoom").wait_for(state="detached")
    return shown, scale


#: the two halves of the pages, each visited on one worker (conftest.py,
#: _visit.py)
HALVES = [0, 1]


@pytest.fixture
def phone_survey(phone, half) -> dict[str, dict]:
    """``{page: what is cut}`` of one half of the pages, each page opened once
    on a phone."""
    from _visit import pages_of

    if not built_pages():
        pytest.fail(f"no built book in {HTML}", pytrace=False)
    return {doc: phone(doc)["cut"] for doc in pages_of(half)}


@pytest.mark.parametrize("half", HALVES)
def test_no_page_scrolls_sideways_on_a_phone(phone_survey):
    found = {doc: [d["page"]] for doc, d in phone_survey.items() if d["page"]}
    assert not found, _report(
        found, f"pages wider than a {PHONE['width']}-px phone"
    )


@pytest.mark.parametrize("half", HALVES)
def test_wide_boxes_scroll_with_a_cue_on_a_phone(phone_survey):
    found = {
        doc: d["uncued"] for doc, d in phone_survey.items() if d["uncued"]
    }
    assert not found, _report(
        found, "boxes that scroll sideways without a visible cue"
    )


@pytest.mark.parametrize("half", HALVES)
def test_nothing_is_cut_on_a_phone(phone_survey):
    found = {doc: d["cut"] for doc, d in phone_survey.items() if d["cut"]}
    assert not found, _report(
        found, "content running past the column without scrolling"
    )


@pytest.mark.parametrize("half", HALVES)
def test_a_tap_shows_a_figure_at_full_size(phone, half):
    from _visit import pages_of

    assert [d for d in built_pages() if d.startswith("notebooks/")], (
        "no chapter pages built"
    )
    for doc in [d for d in pages_of(half) if d.startswith("notebooks/")]:
        shown, scale = phone(doc)["tap"]
        # figures are drawn at 100 dpi with 9-pt text (12.5 px): at full size
        # it stays >= 8 px
        assert shown < 0.9 and scale == pytest.approx(1.0, abs=0.01), (
            doc,
            shown,
            scale,
        )
