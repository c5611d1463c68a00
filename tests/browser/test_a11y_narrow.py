"""WCAG 2.1 AA on every page at 320 px (WCAG's reflow width), light and dark mode (issue 25).

At 320 CSS px (1280 px zoomed to 400 %) a page must read without scrolling sideways (success
criterion 1.4.10, Reflow): nothing may stick out of the viewport, and content that cannot wrap (a
wide equation, a table, code) scrolls inside its own box.  axe-core then runs every WCAG 2.0 / 2.1
A and AA rule at this width, in the light and the dark colour mode.
"""

from __future__ import annotations

import pytest
from _axe import axe_source, open_page, run_axe, set_mode

from test_every_page import built_pages

pytestmark = pytest.mark.browser

NARROW = {"width": 320, "height": 640}

#: visible elements that end right of the viewport (or start left of it) outside a box that scrolls
STICK_OUT = r"""
() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width + 1) {
    out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in ${width} px`);
  }
  const clips = el => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const clipped = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) if (clips(p)) return true;
    return false;
  };
  const name = el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}`
    + `${[...el.classList].slice(0, 2).map(c => '.' + c).join('')}`;
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('mjx-assistive-mml, .figure-zoom, script, style')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.position === 'fixed' && el.closest('dialog:not([open])')) continue;
    if ((r.right > width + 1 || r.left < -1) && !clipped(el)) {
      out.push(`${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} px: `
        + el.textContent.trim().replace(/\s+/g, ' ').slice(0, 50));
    }
  }
  return [...new Set(out)].slice(0, 30);
}
"""


@pytest.fixture(scope="module")
def narrow_context(browser):
    context = browser.new_context(viewport=NARROW)
    yield context
    context.close()


@pytest.fixture(scope="module")
def axe_js() -> str:
    return axe_source()


@pytest.mark.parametrize("doc", built_pages())
def test_reflow_and_axe_320(doc, narrow_context, site_url, axe_js):
    tab = open_page(narrow_context, site_url, doc)
    try:
        sticking = tab.evaluate(STICK_OUT)
        found = {}
        for mode in ("light", "dark"):
            set_mode(tab, mode)
            found[mode] = run_axe(tab, axe_js)
    finally:
        tab.close()
    assert not sticking, (f"{doc}.html at 320 px: content sticks out of the viewport (WCAG 1.4.10 "
                          "Reflow; wide content must scroll in its own box):\n  " + "\n  ".join(sticking))
    lines = [f"{mode}: {v}" for mode, vs in found.items() for v in vs]
    assert not lines, (f"{doc}.html at 320 px: {len(lines)} WCAG 2.1 A/AA violation(s) (axe-core):\n  "
                       + "\n  ".join(lines[:40]))
