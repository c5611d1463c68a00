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
        "4 claims checked in 1 chapter: all pass. ⚠ 2 use more than 80% of their tolerance."
    )
    one = [_rec("a", margin=0.1), _rec("b", margin=0.81)]
    assert cl.summary_text(one) == (
        "2 claims checked in 1 chapter: all pass. ⚠ 1 uses more than 80% of its tolerance."
    )
    assert cl.summary_text([_rec("a", margin=0.8), _old("b")]) == "2 claims checked in 1 chapter: all pass."


def test_summary_does_not_count_failed_claims_as_tight():
    recs = [_rec("a", margin=0.9), _rec("b", passed=False, margin=3.0)]
    assert cl.summary_text(recs) == (
        "2 claims checked in 1 chapter: 1 FAIL. ⚠ 1 uses more than 80% of its tolerance."
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
