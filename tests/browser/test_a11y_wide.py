"""WCAG 2.1 AA on every page at 1280 px, light and dark mode (issue 25), checked with axe-core.

axe-core (pinned in tests/browser/package.json, installed from the npm registry on first use) runs
every WCAG 2.0 / 2.1 level A and AA rule on every page of the built book, once in the light and
once in the dark colour mode of the theme; any violation fails, named by rule, element and page.
The narrow-screen half (320 px, WCAG's reflow width) is test_a11y_narrow.py.
"""

from __future__ import annotations

import pytest
from _axe import axe_source, open_page, run_axe, set_mode

from test_every_page import built_pages

pytestmark = pytest.mark.browser

WIDE = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def wide_context(browser):
    context = browser.new_context(viewport=WIDE)
    yield context
    context.close()


@pytest.fixture(scope="module")
def axe_js() -> str:
    return axe_source()


@pytest.mark.parametrize("doc", built_pages())
def test_axe_1280(doc, wide_context, site_url, axe_js):
    tab = open_page(wide_context, site_url, doc)
    try:
        found = {}
        for mode in ("light", "dark"):
            set_mode(tab, mode)
            found[mode] = run_axe(tab, axe_js)
    finally:
        tab.close()
    lines = [f"{mode}: {v}" for mode, vs in found.items() for v in vs]
    assert not lines, (f"{doc}.html at 1280 px: {len(lines)} WCAG 2.1 A/AA violation(s) (axe-core):\n  "
                       + "\n  ".join(lines[:40]))
