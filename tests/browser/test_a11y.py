"""WCAG 2.1 AA on every page of the book (issue 25), checked with axe-core.

Every page of the built book is checked at 1280 px and at 320 px (WCAG's reflow
width: 1280 px zoomed to 400 %), in the theme's light and dark colour modes, on
the page as its visit loaded it (tests/browser/_visit.py; the checks are
``check_loaded`` of tests/browser/_axe.py):

- axe-core (pinned in tests/browser/package.json, installed from the npm
  registry on first use) runs every rule tagged ``wcag2a``, ``wcag2aa``,
  ``wcag21a`` or ``wcag21aa``; any violation fails, named by rule, element,
  width, mode and page;
- at 320 px nothing may stick out of the viewport and the page may not scroll
  sideways (WCAG 1.4.10 Reflow): wide content scrolls inside its own box.

Each page is visited once, on the worker of its half of the pages
(conftest.py), where the other checks of the page read the same visit.
"""

from __future__ import annotations

import pytest
from _axe import page_report
from _visit import pages_of

from test_every_page import built_pages

pytestmark = pytest.mark.browser

PAGES = built_pages()


@pytest.mark.parametrize("doc", PAGES)
def test_wcag_aa(doc, wide):
    found = wide(doc)["a11y"]
    assert not found, page_report(doc, found)


def test_the_two_halves_cover_every_page():
    assert sorted(pages_of(0) + pages_of(1)) == built_pages()
    assert not set(pages_of(0)) & set(pages_of(1))
    assert len(PAGES) >= 60 or not built_pages()
