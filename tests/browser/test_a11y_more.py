"""WCAG 2.1 AA on every page of the book (issue 25): the odd-numbered pages (see test_a11y.py)."""

from __future__ import annotations

import pytest
from _axe import WIDE, axe_source, check_page, page_report

from test_every_page import built_pages

pytestmark = pytest.mark.browser

PAGES = built_pages()[1::2]


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
