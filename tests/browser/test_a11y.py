"""WCAG 2.1 AA on every page of the book (issue 25), checked with axe-core, first half of the pages.

Every page of the built book is opened once in headless Chromium and checked at 1280 px and at
320 px (WCAG's reflow width: 1280 px zoomed to 400 %), in the theme's light and dark colour modes
(tests/browser/_axe.py, ``check_page``):

- axe-core (pinned in tests/browser/package.json, installed from the npm registry on first use)
  runs every rule tagged ``wcag2a``, ``wcag2aa``, ``wcag21a`` or ``wcag21aa``; any violation fails,
  named by rule, element, width, mode and page;
- at 320 px nothing may stick out of the viewport and the page may not scroll sideways (WCAG
  1.4.10 Reflow): wide content scrolls inside its own box.

The pages are split between this file and test_a11y_more.py so that the two workers of the test
command share them.
"""

from __future__ import annotations

import pytest
from _axe import WIDE, axe_source, check_page, page_report

from test_every_page import built_pages

pytestmark = pytest.mark.browser

#: this file checks the even-numbered pages, test_a11y_more.py the odd-numbered ones
PAGES = built_pages()[0::2]


@pytest.fixture(scope="module")
def a11y_context(browser):
    context = browser.new_context(viewport=WIDE)
    yield context
    context.close()


@pytest.fixture(scope="module")
def axe_js() -> str:
    return axe_source()


@pytest.mark.parametrize("doc", PAGES)
def test_wcag_aa(doc, a11y_context, site_url, axe_js):
    found = check_page(a11y_context, site_url, doc, axe_js)
    assert not found, page_report(doc, found)


def test_the_two_halves_cover_every_page():
    from test_a11y_more import PAGES as MORE

    assert sorted(PAGES + MORE) == built_pages()
    assert len(PAGES) + len(MORE) >= 60 or not built_pages()
