"""The course guide's numbers (scripts/course_guide.py): every page counted,
plans that add up, a prerequisite map whose boxes never overlap and whose
arrows never cross a
box."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import course_guide as cg  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return cg.page_rows(ROOT)


def test_every_page_of_every_chapter_is_counted(rows):
    from toc_notebooks import toc_notebooks

    numbered = [
        Path(nb).stem
        for nb in toc_notebooks(ROOT)
        if Path(nb).stem[:2].isdigit()
    ]
    assert [Path(r.doc).name for r in rows] == numbered
    times = json.loads((ROOT / "benchmarks" / "chapters.json").read_text())
    by = {Path(r.doc).name: r for r in rows}
    second = by["03_real_networks_online_data"]
    assert second.number == "3.5" and second.chapter == 3
    assert second.run == times["03_real_networks_online_data"]["wall_s"]
    assert second.peak == times["03_real_networks_online_data"]["peak_mb"]
    assert (
        second.read > 0
        and second.figures > 0
        and second.claims > 0
        and second.coding
    )
    assert "3" in second.needs


def test_the_tables_have_a_row_per_page_and_totals_that_add_up(rows):
    table = cg.chapter_table(rows).splitlines()
    body = table[2:-1]
    assert len(body) == len(rows)
    for line, r in zip(body, rows):
        assert f"{r.number}. " in line and f"| {r.read} min |" in line
    total = cg.totals(rows)
    assert f"**{total['read']} min**" in table[-1]
    assert total["read"] == sum(r.read for r in rows)
    assert total["coding"] == 33 == sum(len(r.coding) for r in rows)


def test_the_plan_covers_every_page_once_and_adds_up(rows):
    weeks = cg.plan(rows)
    pages = [p.number for w in weeks for p in w.pages]
    assert sorted(pages) == sorted(r.number for r in rows) and len(
        pages
    ) == len(set(pages))
    assert sum(w.read for w in weeks) == sum(r.read for r in rows)
    assert sum(w.run for w in weeks) == pytest.approx(
        sum(r.run for r in rows), abs=1e-9
    )
    week_of_3 = [w for w in weeks if 3 in w.chapters][0]
    assert {"3", "3.5"} <= {p.number for p in week_of_3.pages}
    assert sum(m for _, m in cg.LECTURE) == cg.LECTURE_MINUTES
    # a plan that leaves out a page, or reads a page before what it needs, is
    # refused
    with pytest.raises(AssertionError, match="covers pages"):
        cg.plan(rows, weeks=[w for w in cg.WEEKS if 3 not in w[1]])
    reordered = list(cg.WEEKS)
    reordered[0], reordered[2] = reordered[2], reordered[0]
    with pytest.raises(AssertionError, match="needs"):
        cg.plan(rows, weeks=reordered)


def test_the_map_has_no_overlapping_boxes_and_no_arrow_through_a_box(rows):
    lay = cg.layout(rows)
    assert set(lay.boxes) == {r.number for r in rows}
    assert cg.collisions(lay) == []
    # rows are depths: every arrow goes down, from a row above to a row below
    for a, b, pts in lay.arrows:
        assert lay.depth[a] < lay.depth[b]
        assert pts[0][1] > pts[-1][1]
    # every prerequisite is an arrow or implied by a chain of arrows
    reach = {r.number: set() for r in rows}
    edges = {(a, b) for a, b, _ in lay.arrows}
    for r in sorted(rows, key=lambda r: lay.depth[r.number]):
        for a, b in edges:
            if b == r.number:
                reach[b] |= {a} | reach[a]
    for r in rows:
        assert set(r.needs) <= reach[r.number], (
            r.number,
            r.needs,
            reach[r.number],
        )
    # the figure fits the page's column (about 7 inches) without being shrunk
    assert lay.width <= 6.9


def test_the_collision_check_can_fail(rows):
    lay = cg.layout(rows)
    a, b = list(lay.boxes.values())[:2]
    b.x, b.y = a.x + 0.1, a.y  # push one box onto another
    assert any("overlap" in c for c in cg.collisions(lay))
    lay = cg.layout(rows)
    src, dst, pts = lay.arrows[0]
    other = next(v for k, v in lay.boxes.items() if k not in (src, dst))
    mid = ((pts[0][0] + pts[-1][0]) / 2, (pts[0][1] + pts[-1][1]) / 2)
    other.x, other.y = mid
    assert any("crosses" in c for c in cg.collisions(lay))
