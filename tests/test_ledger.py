"""Tests of the ledger's evidence columns (_ext/claims_ledger.py): seeds,
spread, margin, tight claims.

Expected strings are written out by hand from the record, not computed by the
code under test.
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
        chapter="01_a",
        key=key,
        statement=f"statement {key}",
        source="Eq. 1",
        prediction="1",
        measured=1.0,
        criterion="|measured − 1| ≤ atol 0.1",
        passed=passed,
    )
    rec.update(kw)
    return rec


def _old(key="k"):
    """A record written before n_seeds/spread/margin existed."""
    return _rec(key)


@pytest.mark.parametrize(
    "margin, text",
    [
        (0.0, "0\u00a0%"),
        (0.374, "37\u00a0%"),
        (0.8, "80\u00a0%"),
        (0.95, "95\u00a0%"),
        (1.0, "100\u00a0%"),
        (math.inf, "∞"),
        (None, "—"),
        ("x", "—"),
        (math.nan, "—"),
    ],
)
def test_margin_text(margin, text):
    assert cl.margin_text(_rec(margin=margin)) == text


def test_margin_text_of_an_old_record():
    assert cl.margin_text(_old()) == "—"


@pytest.mark.parametrize(
    "margin, tight",
    [
        (None, False),
        (0.0, False),
        (0.5, False),
        (0.8, False),
        (0.8000001, True),
        (0.99, True),
        (math.inf, True),
        (math.nan, False),
        (True, False),
    ],
)
def test_is_tight_above_eighty_percent(margin, tight):
    assert cl.is_tight(_rec(margin=margin)) is tight
    assert cl.is_tight(_old()) is False


def test_is_tight_threshold_argument():
    assert cl.is_tight(_rec(margin=0.6), threshold=0.5) is True
    assert cl.is_tight(_rec(margin=0.6), threshold=0.7) is False


def test_seeds_text():
    assert (
        cl.seeds_text(_rec(n_seeds=5, spread=0.0123)) == "5 seeds, sd 0.0123"
    )
    assert cl.seeds_text(_rec(n_seeds=8, spread=None)) == "8 seeds"
    assert cl.seeds_text(_rec(n_seeds=1, spread=None)) == "1 seed"
    assert cl.seeds_text(_old()) is None


def test_summary_counts_tight_claims():
    recs = [
        _rec("a", margin=0.1),
        _rec("b", margin=0.9),
        _rec("c", margin=0.85),
        _old("d"),
    ]
    assert cl.summary_text(recs) == (
        "4 predictions of the theory checked in 1 chapter: all pass. ⚠ 2 use "
        "more than 80% of their tolerance."
    )
    one = [_rec("a", margin=0.1), _rec("b", margin=0.81)]
    assert cl.summary_text(one) == (
        "2 predictions of the theory checked in 1 chapter: all pass. ⚠ 1 uses "
        "more than 80% of its tolerance."
    )
    assert (
        cl.summary_text([_rec("a", margin=0.8), _old("b")])
        == "2 predictions of the theory checked in 1 chapter: all pass."
    )


def test_summary_does_not_count_failed_claims_as_tight():
    recs = [_rec("a", margin=0.9), _rec("b", passed=False, margin=3.0)]
    assert cl.summary_text(recs) == (
        "2 predictions of the theory checked in 1 chapter: 1 FAIL. ⚠ 1 uses "
        "more than 80% of its tolerance."
    )


def _rows(records, report=None):
    table = cl.ledger_table(
        records, lambda chapter: ("1. A", "a.html"), report=report
    )
    return list(table.next_node(nodes.tbody).children)[
        1:
    ]  # skip the chapter row


def test_table_shows_seeds_spread_and_margin():
    (row,) = _rows([_rec(n_seeds=8, spread=0.25, margin=0.4)])
    cells = [e.astext() for e in row.children]
    assert cells == [
        "statement k\n\nk",
        "Eq. 1",
        "1",
        "1\n\n8 seeds, sd 0.25",
        "|measured − 1| ≤ atol 0.1",
        "40\u00a0%",
        "pass",
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
    recs = [
        _rec("a"),
        _rec("b", kind="code"),
        _rec("c", kind="code"),
        _rec("d", chapter="02_b"),
    ]
    assert cl.summary_text(recs) == (
        "2 predictions of the theory and 2 checks of the code checked in 2 "
        "chapters: all pass."
    )
    assert (
        cl.chapter_summary(recs[:3])
        == "1 prediction and 2 checks of the code: all pass"
    )


def test_sections_fold_each_chapter_and_separate_code_checks():
    recs = [
        _rec("a"),
        _rec("b", kind="code"),
        _rec("c", chapter="02_b", passed=False),
    ]
    links = {"01_a": ("1. A <b>", "../notebooks/01_a.html")}
    out = cl.ledger_sections(recs, links.get)
    raws = [n.astext() for n in out if isinstance(n, nodes.raw)]
    assert raws[0] == (
        '<details class="claims-chapter-group"><summary><a '
        'href="../notebooks/01_a.html">'
        "1. A &lt;b&gt;</a> — 1 prediction and 1 check of the code: all "
        "pass</summary>"
    )
    assert raws[2].startswith(
        '<details class="claims-chapter-group" open><summary>02_b — 1 '
        "prediction: 1 FAIL"
    )
    tables = [n for n in out if isinstance(n, nodes.table)]
    keys = [
        [r.astext().split("\n")[-1] for r in t.next_node(nodes.tbody).children]
        for t in tables
    ]
    assert len(tables) == 3 and [len(k) for k in keys] == [1, 1, 1]
    assert any(
        "Checks of the code" in n.astext()
        for n in out
        if isinstance(n, nodes.paragraph)
    )


@pytest.mark.parametrize(
    "change, word",
    [
        ({"measured": "1.0"}, "measured"),
        ({"passed": "yes"}, "passed"),
        ({"chapter": 3}, "chapter"),
        ({"kind": "theory"}, "kind"),
        ({"passed": 1}, "passed"),
    ],
)
def test_malformed_records_are_named_with_file_and_line(
    tmp_path, change, word
):
    import json

    rec = _rec(**change)
    (tmp_path / "01_a.jsonl").write_text(
        json.dumps(_rec(key="ok")) + "\n" + json.dumps(rec) + "\n"
    )
    records, problems = cl.read_claims(tmp_path)
    assert [r["key"] for r in records] == ["ok"]
    assert (
        len(problems) == 1
        and problems[0].startswith("01_a.jsonl:2: malformed record")
        and word in problems[0]
    )


# ---------------------------------------------------------------- three kinds,
# the book's results, reports


def test_summary_counts_identities_apart():
    recs = [
        _rec("a"),
        _rec("b", kind="identity"),
        _rec("c", kind="identity"),
        _rec("d", kind="code"),
        _rec("e", chapter="02_b"),
    ]
    assert cl.summary_text(recs) == (
        "2 predictions of the theory, 2 identities and 1 check of the code "
        "checked in 2 chapters: all pass."
    )
    assert (
        cl.chapter_summary(recs[:2]) == "1 prediction and 1 identity: all pass"
    )
    assert (
        cl.chapter_summary(recs[:4])
        == "1 prediction, 2 identities and 1 check of the code: all pass"
    )


def test_sections_put_identities_in_their_own_table():
    recs = [_rec("a"), _rec("i", kind="identity"), _rec("c", kind="code")]
    out = cl.ledger_sections(recs, lambda ch: None)
    tables = [n for n in out if isinstance(n, nodes.table)]
    ids = [
        [row["ids"][0] for row in t.next_node(nodes.tbody).children]
        for t in tables
    ]
    assert ids == [["claim-01-a-a"], ["claim-01-a-i"], ["claim-01-a-c"]]
    words = [n.astext() for n in out if isinstance(n, nodes.paragraph)]
    assert words == [
        "Identities (exact, checked by an independent route to round-off):",
        "Checks of the code (true by construction):",
    ]


def test_book_results_are_listed_and_marked():
    recs = [
        _rec("a", source="Thm 8, Eq. 158"),
        _rec("b", source="this book: the GD step; Eq. 24"),
        _rec("c", chapter="02_b", source="This book (beyond the paper)"),
    ]
    assert [cl.is_book_result(r) for r in recs] == [False, True, True]
    (fold,) = cl.book_results(recs, {"01_a": ("1. A", "a.html")}.get)
    text = fold.astext()
    assert text.startswith(
        '<details class="claims-book-results"><summary>Source: this book — 2 '
        "claims"
    )
    assert '<a href="#claim-01-a-b"><code>b</code></a> (1. A)' in text
    assert (
        '<a href="#claim-02-b-c"><code>c</code></a> (02_b)' in text
        and "claim-01-a-a" not in text
    )
    assert cl.book_results(recs[:1], lambda ch: None) == []
    row_a, row_b = _rows(recs[:2])
    assert "claim-book-result" not in row_a.children[1]["classes"]
    assert "claim-book-result" in row_b.children[1]["classes"]


def test_report_url_prefills_an_issue():
    from urllib.parse import parse_qs, urlsplit

    rec = _rec(
        "ch8-x",
        measured=0.25,
        criterion="measured ≤ 1",
        n_seeds=24,
        seed=2,
        statement="a & b",
    )
    url = cl.report_url(rec, "https://github.com/o/r/")
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == (
        "https",
        "github.com",
        "/o/r/issues/new",
    )
    q = parse_qs(parts.query)
    assert q["title"] == ["Claim ch8-x (01_a)"] and q["labels"] == ["claim"]
    (body,) = q["body"]
    assert "Claim `ch8-x` of chapter `01_a`: a & b" in body
    assert (
        "- measured: 0.25" in body
        and "- criterion (tolerance): measured ≤ 1" in body
    )
    assert "- seeds: 24; base seed NQF_SEED = 2" in body
    assert (
        " " not in parts.query and "a%20%26%20b" in parts.query
    )  # the & of the text is encoded
    assert (
        "NQF_SEED = unknown"
        in parse_qs(urlsplit(cl.report_url(_old(), "https://x/y")).query)[
            "body"
        ][0]
    )


def test_table_links_each_claim_to_its_report():
    (row,) = _rows(
        [_rec("k")], report=lambda r: f"https://x/issues/new?title={r['key']}"
    )
    refs = list(row.children[0].findall(nodes.reference))
    assert [(r.astext(), r["refuri"]) for r in refs] == [
        ("report", "https://x/issues/new?title=k")
    ]
    assert (
        row.children[-1].astext() == "pass"
    )  # the result stays the last cell
