"""The course guide as a teacher sees it: real tables (a row per page of every
chapter, a row per week), the prerequisite map as one figure, at 1280 px and on
a phone (390 px)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, SCREENSHOTS

pytestmark = pytest.mark.browser

sys.path.insert(0, str(ROOT / "scripts"))
import course_guide as cg  # noqa: E402

TABLES = """() => Array.from(document.querySelectorAll('main table'))
  .map(t => ({
  head: Array.from(t.querySelectorAll('thead th'))
    .map(c => c.textContent.trim()),
  rows: Array.from(t.querySelectorAll('tbody tr')).map(r =>
    Array.from(r.querySelectorAll('td')).map(c => c.textContent.trim())),
}))"""


@pytest.mark.parametrize("width", [1280, 390])
def test_course_guide_has_real_tables_and_one_map(browser, site_url, width):
    rows = cg.page_rows(ROOT)
    weeks = cg.plan(rows)
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(f"{site_url}/book/course_guide.html", wait_until="load")
        tables = page.evaluate(TABLES)
        assert len(tables) >= 2, (
            f"the course guide has {len(tables)} <table> elements"
        )
        chapters, plan = tables[0], tables[1]
        assert (
            chapters["head"][0] == "Chapter" and "Reading" in chapters["head"]
        )
        body = chapters["rows"][:-1]
        assert len(body) == len(rows), (
            f"{len(body)} rows for {len(rows)} pages"
        )
        for cells, r in zip(body, rows):
            assert cells[0].lstrip("↳ ").startswith(f"{r.number}. "), cells[0]
            assert cells[2] == f"{r.read} min"
        assert chapters["rows"][-1][0].startswith("All")
        assert [c[0] for c in plan["rows"][:-1]] == [
            str(w.number) for w in weeks
        ]
        assert any("3.5" in c[2] for c in plan["rows"]), (
            "chapter 3's second page is not in the plan"
        )
        text = page.inner_text("main")
        assert "|---" not in text and "| Chapter |" not in text, (
            "raw Markdown table text on the page"
        )
        figures = page.locator("main figure img").count()
        assert figures == 1, f"{figures} figures: the map should be one"
        natural, shown = page.evaluate(
            "() => { const i = document.querySelector('main figure img');"
            " return [i.naturalWidth, i.getBoundingClientRect().width]; }"
        )
        if width == 1280:
            assert shown >= 0.9 * natural, (
                f"the map is shrunk to {shown / natural:.0%}"
            )
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth"
            " - document.documentElement.clientWidth"
        )
        assert overflow <= 1, (
            f"the page scrolls sideways by {overflow} px at {width} px"
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(
            path=str(SCREENSHOTS / f"course_guide-{width}.png"), full_page=True
        )
    finally:
        page.close()
