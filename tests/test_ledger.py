"""Tests of the ledger's evidence columns (_ext/claims_ledger.py): seeds, spread, margin, tight claims.

Expected strings are written out by hand from the record, not computed by the code under test.
"""

import math
import sys
from pathlib import Path

import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import claims_ledger as cl  # noqa: E402


def _rec(key="k", passed=True, **kw):
    rec = dict(
        chapter="01_a", key=key, statement=f"statement {key}", source="Eq. 1",
        prediction="1", measured=1.0, criterion="|measured − 1| ≤ atol 0.1", passed=passed,
    )
    rec.update(kw)
    return rec


def _old(key="k"):
    """A record written before n_seeds/spread/margin existed."""
    return _rec(key)


@pytest.mark.parametrize(
    "margin, text",
    [(0.0, "0\u00a0%"), (0.374, "37\u00a0%"), (0.8, "80\u00a0%"), (0.95, "95\u00a0%"), (1.0, "100\u00a0%"),
     (math.inf, "∞"), (None, "—"), ("x", "—"), (math.nan, "—")],
)
def test_margin_text(margin, text):
    assert cl.margin_text(_rec(margin=margin)) == text


def test_margin_text_of_an_old_record():
    assert cl.margin_text(_old()) == "—"


@pytest.mark.parametrize(
    "margin, tight",
    [(None, False), (0.0, False), (0.5, False), (0.8, False), (0.8000001, True), (0.99, True),
     (math.inf, True), (math.nan, False), (True, False)],
)
def test_is_tight_above_eighty_percent(margin, tight):
    assert cl.is_tight(_rec(margin=margin)) is tight
    assert cl.is_tight(_old()) is False


def test_is_tight_threshold_argument():
    assert cl.is_tight(_rec(margin=0.6), threshold=0.5) is True
    assert cl.is_tight(_rec(margin=0.6), threshold=0.7) is False


def test_seeds_text():
    assert cl.seeds_text(_rec(n_seeds=5, spread=0.0123)) == "5 seeds, sd 0.0123"
    assert cl.seeds_text(_rec(n_seeds=8, spread=None)) == "8 seeds"
    assert cl.seeds_text(_rec(n_seeds=1, spread=None)) == "1 seed"
    assert cl.seeds_text(_old()) is None


def test_summary_counts_tight_claims():
    recs = [_rec("a", margin=0.1), _rec("b", margin=0.9), _rec("c", margin=0.85), _old("d")]
    assert cl.summary_text(recs) == (
        "4 predictions of the theory checked in 1 chapter: all pass. ⚠ 2 use more than 80% of their tolerance."
    )
    one = [_rec("a", margin=0.1), _rec("b", margin=0.81)]
    assert cl.summary_text(one) == (
        "2 predictions of the theory checked in 1 chapter: all pass. ⚠ 1 uses more than 80% of its tolerance."
    )
    assert cl.summary_text([_rec("a", margin=0.8), _old("b")]) == "2 predictions of the theory checked in 1 chapter: all pass."


def test_summary_does_not_count_failed_claims_as_tight():
    recs = [_rec("a", margin=0.9), _rec("b", passed=False, margin=3.0)]
    assert cl.summary_text(recs) == (
        "2 predictions of the theory checked in 1 chapter: 1 FAIL. ⚠ 1 uses more than 80% of its tolerance."
    )


def _rows(records):
    table = cl.ledger_table(records, lambda chapter: ("1. A", "a.html"))
    return list(table.next_node(nodes.tbody).children)[1:]  # skip the chapter row


def test_table_shows_seeds_spread_and_margin():
    (row,) = _rows([_rec(n_seeds=8, spread=0.25, margin=0.4)])
    cells = [e.astext() for e in row.children]
    assert cells == [
        "statement k\n\nk", "Eq. 1", "1", "1\n\n8 seeds, sd 0.25", "|measured − 1| ≤ atol 0.1", "40\u00a0%", "pass",
    ]
    assert row["classes"] == ["claim-pass"]


def test_table_flags_tight_claims_with_marker_and_class():
    loose, tight = _rows([_rec("a", margin=0.5), _rec("b", margin=0.93)])
    assert "claim-tight" not in loose["classes"]
    assert tight["classes"] == ["claim-pass", "claim-tight"]
    assert tight.children[5].astext() == "⚠\u00a093\u00a0%"


def test_table_renders_old_records():
    (row,) = _rows([_old()])
    cells = [e.astext() for e in row.children]
    assert cells[3] == "1" and cells[5] == "—" and cells[-1] == "pass"
    assert len(cells) == len(cl.HEADERS) == len(cl.WIDTHS)


def test_summary_counts_predictions_and_code_checks_apart():
    recs = [_rec("a"), _rec("b", kind="code"), _rec("c", kind="code"), _rec("d", chapter="02_b")]
    assert cl.summary_text(recs) == (
        "2 predictions of the theory and 2 checks of the code checked in 2 chapters: all pass."
    )
    assert cl.chapter_summary(recs[:3]) == "1 prediction, 2 checks of the code: all pass"


def test_sections_fold_each_chapter_and_separate_code_checks():
    recs = [_rec("a"), _rec("b", kind="code"), _rec("c", chapter="02_b", passed=False)]
    links = {"01_a": ("1. A <b>", "../notebooks/01_a.html")}
    out = cl.ledger_sections(recs, links.get)
    raws = [n.astext() for n in out if isinstance(n, nodes.raw)]
    assert raws[0] == ('<details class="claims-chapter-group"><summary><a href="../notebooks/01_a.html">'
                       "1. A &lt;b&gt;</a> — 1 prediction, 1 check of the code: all pass</summary>")
    assert raws[2].startswith('<details class="claims-chapter-group" open><summary>02_b — 1 prediction: 1 FAIL')
    tables = [n for n in out if isinstance(n, nodes.table)]
    keys = [[r.astext().split("\n")[-1] for r in t.next_node(nodes.tbody).children] for t in tables]
    assert len(tables) == 3 and [len(k) for k in keys] == [1, 1, 1]
    assert any("Checks of the code" in n.astext() for n in out if isinstance(n, nodes.paragraph))


@pytest.mark.parametrize(
    "change, word",
    [({"measured": "1.0"}, "measured"), ({"passed": "yes"}, "passed"), ({"chapter": 3}, "chapter"),
     ({"kind": "theory"}, "kind"), ({"passed": 1}, "passed")],
)
def test_malformed_records_are_named_with_file_and_line(tmp_path, change, word):
    import json

    rec = _rec(**change)
    (tmp_path / "01_a.jsonl").write_text(json.dumps(_rec(key="ok")) + "\n" + json.dumps(rec) + "\n")
    records, problems = cl.read_claims(tmp_path)
    assert [r["key"] for r in records] == ["ok"]
    assert len(problems) == 1 and problems[0].startswith("01_a.jsonl:2: malformed record") and word in problems[0]
