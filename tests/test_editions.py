"""The reader and student editions (_ext/editions.py): up to date, plain Markdown, no solutions.

The editions are generated from the chapters and committed, because Colab opens notebooks from
the repository.  These tests regenerate them and compare, scan them for MyST-only markup that
Jupyter would show raw, and check that a student edition holds no solution.  The renderer itself
is tested on small sources with the expected Markdown written out by hand.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import editions as E  # noqa: E402

BOOK = E.load_book(ROOT)
PAGES = E.chapters(BOOK)


def _nb(doc: str, name: str) -> dict:
    return json.loads(E.edition_path(ROOT, doc, name).read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def _chapter_cells(page) -> list[dict]:
    return json.loads(page.path.read_text(encoding="utf-8"))["cells"]


# ------------------------------------------------------------------------ the committed editions


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_edition_is_up_to_date(page, name):
    path = E.edition_path(ROOT, page.doc, name)
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run scripts/editions.py"
    assert path.read_text(encoding="utf-8") == E.dumps(E.edition(BOOK, page.doc, name)), (
        f"{path.relative_to(ROOT)} is out of date with {page.path.name}: run scripts/editions.py"
    )


def test_no_edition_without_a_chapter():
    wanted = {E.edition_path(ROOT, p.doc, n) for p in PAGES for n in E.EDITIONS}
    assert set((ROOT / E.EDITIONS_DIR).glob("*/*.ipynb")) == wanted


MYST_LEFTOVERS = re.compile(
    r"\{(glue|numref|eq|ref|cite|term|prf:ref|doc|math)[^}]*\}`|\{(exercise|solution|admonition|prf:\w+)"
    r"|^\([\w\-]+\)=|^:(label|class|nonumber):|```\{",
    re.M,
)


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_edition_markdown_holds_no_myst_markup(page, name):
    for cell in _nb(page.doc, name)["cells"]:
        if cell["cell_type"] == "markdown":
            m = MYST_LEFTOVERS.search(_src(cell))
            assert m is None, f"{name} edition of {page.doc}, cell {cell['id']}: {m.group(0)!r}"


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_every_quoted_number_is_shown_by_the_setup_cell(page, name):
    cells = _nb(page.doc, name)["cells"]
    setup = _src(cells[0])
    assert cells[0]["cell_type"] == "code" and "show_numbers(" in setup and "%pip install" in setup
    assert '"nqf_lite[book] @ git+' in setup
    quoted = {
        k
        for c in cells
        if c["cell_type"] == "markdown" and c["id"] != "edition-note"  # the note explains ⟨name⟩
        for k in re.findall(r"⟨([\w\-]+)⟩", _src(c))
    }
    listed = set(re.findall(r"'([\w\-]+)': '", setup))
    assert quoted <= listed, f"quoted but not shown: {sorted(quoted - listed)}"


def _solution_code(page) -> list[str]:
    """Lines of a chapter's solution cells long enough to be the solution's own (not in a scaffold)."""
    cells = _chapter_cells(page)
    given = {
        line.strip()
        for cell in cells
        if "scaffold" in cell.get("metadata", {}).get("tags", [])
        for line in _src(cell).splitlines()
    }
    return [
        line.strip()
        for cell in cells
        if "solution" in cell.get("metadata", {}).get("tags", [])
        for line in _src(cell).splitlines()
        if len(line.strip()) > 25 and not line.strip().startswith("#")
        and not any(line.strip() in g for g in given)  # a signature the scaffold shows is not a solution
    ]


def _pen_and_paper_solutions(page) -> list[str]:
    bodies = []
    for cell in _chapter_cells(page):
        if cell["cell_type"] != "markdown":
            continue
        for block in E._blocks(_src(cell)):
            for inner in E._walk(block):
                if inner.name == "solution":
                    bodies += [line.strip() for line in inner.body.splitlines() if len(line.strip()) > 40]
    return bodies


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_student_edition_holds_no_solution(page):
    cells = _nb(page.doc, "student")["cells"]
    text = "\n".join(_src(c) for c in cells)
    assert "Solution to Exercise" not in text and "<summary><b>Solution" not in text
    assert not [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
    leaked = [line for line in _solution_code(page) + _pen_and_paper_solutions(page) if line in text]
    assert not leaked, f"student edition of {page.doc} holds solution text: {leaked[:2]}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_student_edition_keeps_scaffolds_and_checks(page):
    chapter = _chapter_cells(page)
    cells = _nb(page.doc, "student")["cells"]
    ids = {c["id"] for c in cells}
    for cell in chapter:
        tags = cell.get("metadata", {}).get("tags", [])
        if "scaffold" in tags or "exercise-check" in tags:
            assert cell["id"] in ids, f"{page.doc}: cell {cell['id']} ({tags}) missing from the student edition"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p.doc).name)
def test_reader_edition_folds_solutions_and_captions_figures(page):
    cells = _nb(page.doc, "reader")["cells"]
    by_id = {c["id"]: c for c in cells}
    for cell in _chapter_cells(page):
        tags = cell.get("metadata", {}).get("tags", [])
        if "scaffold" in tags:
            assert cell["id"] not in by_id
        if "solution" in tags:
            folded = by_id[cell["id"]]
            assert folded["metadata"] == {"cellView": "form", "jupyter": {"source_hidden": True}}
            assert _src(folded).startswith("# @title Solution to Exercise ")
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if name:
            caption = by_id[f"{cell['id']}-caption"]
            assert _src(caption).startswith(f"**Fig. {BOOK.labels[name].number}.** ")


# ------------------------------------------------------------------------------- the renderer


def _ctx(edition="reader") -> E.Context:
    book = E.Book(pages=[E.Page("notebooks/04_x", "4", ROOT / "x.ipynb")])
    book.labels = {
        "eq-a": E.Target("equation", "4.3", "", "notebooks/04_x"),
        "fig-a": E.Target("figure", "4.1", "A caption", "notebooks/04_x"),
        "sec-a": E.Target("section", "4.2", "Weight decay", "notebooks/04_x"),
        "ch-a": E.Target("section", "5", "Compression", "notebooks/05_y"),
        "ex-ch4-a": E.Target("exercise", "4.1", "A title", "notebooks/04_x"),
        "thm-a": E.Target("box", None, "Theorem 2 of the paper: closure", "notebooks/04_x"),
    }
    book.citations = {"k1": ("Ziyin et al.", "2026"), "k2": ("Saxe et al.", "2014")}
    book.headings = {"notebooks/04_x": ["4", "4.2", "4.2.1"]}
    return E.Context(book, book.pages[0], edition)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("see {eq}`eq-a`", "see Eq. (4.3)"),
        ("{numref}`fig-a` and {numref}`Figure %s <fig-a>`", "Fig. 4.1 and Figure 4.1"),
        ("{numref}`sec-a`", "Section 4.2"),
        ("{ref}`sec-a`, {ref}`ch-a`, {ref}`the ledger <sec-a>`",
         "Section 4.2, *Weight decay*, Chapter 5, *Compression*, the ledger"),
        ("by {prf:ref}`thm-a`", "by Theorem 2 of the paper"),
        ("{cite}`k1,k2` and {cite:t}`k1`", "(Ziyin et al., 2026; Saxe et al., 2014) and Ziyin et al. (2026)"),
        ("a {term}`plateau` and {term}`ZGZ <zgz-term>`", "a plateau and ZGZ"),
        ("gap {glue:text}`ch4-gap:.1e`.", "gap ⟨ch4-gap⟩."),
        ("# Title\n(sec-a)=\n## Weight decay\n```python\n# a comment\n```\n### Sub", 
         "# 4. Title\n## 4.2 Weight decay\n```python\n# a comment\n```\n### 4.2.1 Sub"),
        ("$$\nx = 1\n$$ (eq-a)", "$$\nx = 1\n\\tag{4.3}\n$$"),
    ],
)
def test_roles_labels_and_equations(source, expected):
    ctx = _ctx()
    assert E.render_markdown(ctx, source) == expected


def test_glue_formats_are_collected_in_order_of_use():
    ctx = _ctx()
    E.render_markdown(ctx, "{glue:text}`b:.2f` then {glue:text}`a` then {glue:text}`b:.1e`")
    assert ctx.glued == {"b": ".2f", "a": ""}


def test_boxes_exercises_and_solutions():
    source = (
        "```{prf:theorem} Theorem 2 of the paper: closure\n:label: thm-a\n:nonumber:\n\nBody $x$.\n```\n\n"
        "```{exercise} A title\n:label: ex-ch4-a\n\nDo it.\n```\n\n"
        "````{solution} ex-ch4-a\n:class: dropdown\n\nLike this:\n```python\nx = 1\n```\n````\n\n"
        "```{admonition} How the tolerance is set\n:class: dropdown\n\nThree SE.\n```"
    )
    reader = E.render_markdown(_ctx("reader"), source)
    assert reader == (
        "---\n\n**Theorem 2 of the paper** — closure\n\nBody $x$.\n\n---\n\n"
        "---\n\n**Exercise 4.1** (A title)\n\nDo it.\n\n---\n\n"
        "<details>\n<summary><b>Solution to Exercise 4.1</b></summary>\n\nLike this:\n```python\nx = 1\n```\n\n"
        "</details>\n\n"
        "<details>\n<summary><b>How the tolerance is set</b></summary>\n\nThree SE.\n\n</details>"
    )
    student = E.render_markdown(_ctx("student"), source)
    assert "Like this" not in student and "Exercise 4.1" in student


@pytest.mark.parametrize(
    "source, match",
    [
        ("{numref}`nowhere`", "unknown label"),
        ("```{figure} x.png\n```", "no notebook rendering"),
        ("{doc}`a`", "no notebook rendering"),
        ("{cite}`nobody`", "unknown key"),
        ("```{admonition} open\nnever closed", "never closed"),
    ],
)
def test_what_the_editions_cannot_render_is_an_error(source, match):
    with pytest.raises(E.EditionError, match=match):
        E.render_markdown(_ctx(), source)


def test_numbering_mismatches_names_each_label():
    book = _ctx().book
    sphinx = {"eq-a": "4.3", "fig-a": "4.2", "sec-a": "4.2", "ch-a": "5"}
    bad = E.numbering_mismatches(book, sphinx)
    assert sorted(b.split(":")[0] for b in bad) == ["ex-ch4-a", "fig-a"]


def test_toc_numbers_chapters_across_parts():
    numbers = {Path(p.doc).name: p.number for p in BOOK.pages}
    assert numbers["welcome"] is None and numbers["01_symmetry"] == "1" and numbers["11_design"] == "11"
