"""The reader and student editions (_ext/editions.py): up to date, plain
Markdown, no solutions; their numbers are Sphinx's.

The editions are generated from the chapters and committed, because Colab
opens notebooks from the repository.  These tests regenerate them and
compare, scan them for MyST-only markup that Jupyter would show raw, and
check that a student edition holds no solution.  The renderer is tested on
small sources with the expected Markdown written out by hand; the numbers
on a small Sphinx project built here; the citations on a small BibTeX file.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import edition_numbers as N  # noqa: E402
import editions as E  # noqa: E402

BOOK = E.load_book(ROOT)
PAGES = [p.doc for p in E.chapters(BOOK)]
MD = BOOK.md


def _nb(doc: str, name: str) -> dict:
    path = E.edition_path(ROOT, doc, name)
    return json.loads(path.read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def _chapter_cells(doc: str) -> list[dict]:
    path = ROOT / f"{doc}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _name(doc: str) -> str:
    return Path(doc).name


# ------------------------------------------------------ the committed editions


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_edition_is_up_to_date(doc, name):
    path = E.edition_path(ROOT, doc, name)
    rel = path.relative_to(ROOT)
    assert path.is_file(), f"{rel} is missing: run scripts/editions.py"
    assert path.read_text(encoding="utf-8") == E.dumps(
        E.edition(BOOK, doc, name)
    ), f"{rel} is out of date with {doc}: run scripts/editions.py"


def test_no_edition_without_a_chapter():
    wanted = {E.edition_path(ROOT, d, n) for d in PAGES for n in E.EDITIONS}
    assert set((ROOT / E.EDITIONS_DIR).glob("*/*.ipynb")) == wanted


MYST_LEFTOVERS = re.compile(
    r"\{(glue|numref|eq|ref|cite|term|prf:ref|doc|math)[^}]*\}`"
    r"|\{(exercise|solution|admonition|prf:\w+)"
    r"|^\([\w\-]+\)=|^:(label|class|nonumber):|```\{",
    re.M,
)


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_edition_markdown_holds_no_myst_markup(doc, name):
    for cell in _nb(doc, name)["cells"]:
        if cell["cell_type"] == "markdown":
            m = MYST_LEFTOVERS.search(_src(cell))
            assert m is None, f"{name} of {doc}, {cell['id']}: {m.group(0)!r}"
            assert "??" not in _src(cell), f"{cell['id']}: unnumbered"


@pytest.mark.parametrize("name", E.EDITIONS)
@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_every_quoted_number_is_shown_by_the_setup_cell(doc, name):
    cells = _nb(doc, name)["cells"]
    setup = _src(cells[0])
    assert cells[0]["cell_type"] == "code" and "show_numbers(" in setup
    assert "%pip install" in setup and '"nqf_lite[book] @ git+' in setup
    quoted = {
        k
        for c in cells
        # the note explains ⟨name⟩
        if c["cell_type"] == "markdown" and c["id"] != "edition-note"
        for k in re.findall(r"⟨([\w\-]+)⟩", _src(c))
    }
    listed = set(re.findall(r"'([\w\-]+)': '", setup))
    assert quoted <= listed, f"quoted but not shown: {sorted(quoted - listed)}"


def _solution_code(doc: str) -> list[str]:
    """Lines of a chapter's solution cells long enough to be the solution's
    own (not a line its scaffold shows)."""
    cells = _chapter_cells(doc)
    given = {
        line.strip()
        for cell in cells
        if "scaffold" in _tags(cell)
        for line in _src(cell).splitlines()
    }
    return [
        line.strip()
        for cell in cells
        if "solution" in _tags(cell)
        for line in _src(cell).splitlines()
        if len(line.strip()) > 25
        and not line.strip().startswith("#")
        and not any(line.strip() in g for g in given)
    ]


def _directive_bodies(text: str, name: str) -> list[str]:
    """The bodies of every ``{name}`` directive of MyST ``text``, nested
    ones included (read with the book's markdown-it parser)."""
    out = []
    for tok in MD.parse(text):
        if tok.type in ("fence", "colon_fence") and tok.info[:1] == "{":
            if tok.info[1:].startswith(name + "}"):
                out.append(tok.content)
            out += _directive_bodies(tok.content, name)
    return out


def _pen_and_paper_solutions(doc: str) -> list[str]:
    return [
        line.strip()
        for cell in _chapter_cells(doc)
        if cell["cell_type"] == "markdown"
        for body in _directive_bodies(_src(cell), "solution")
        for line in body.splitlines()
        if len(line.strip()) > 40
    ]


def test_the_solution_finder_finds_solutions():
    found = [_pen_and_paper_solutions(d) for d in PAGES]
    assert sum(map(len, found)) > 20
    nested = (
        "````{admonition} x\n```{solution} e\n:class: c\n\nBody\n```\n````"
    )
    assert _directive_bodies(nested, "solution") == [":class: c\n\nBody\n"]


@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_student_edition_holds_no_solution(doc):
    cells = _nb(doc, "student")["cells"]
    text = "\n".join(_src(c) for c in cells)
    assert "Solution to Exercise" not in text
    assert "<summary><b>Solution" not in text
    assert not [c for c in cells if "solution" in _tags(c)]
    solutions = _solution_code(doc) + _pen_and_paper_solutions(doc)
    leaked = [line for line in solutions if line in text]
    assert not leaked, f"student edition of {doc} holds: {leaked[:2]}"


@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_student_edition_keeps_scaffolds_and_checks(doc):
    ids = {c["id"] for c in _nb(doc, "student")["cells"]}
    for cell in _chapter_cells(doc):
        if {"scaffold", "exercise-check"} & set(_tags(cell)):
            assert cell["id"] in ids, f"{doc}: {cell['id']} missing"


@pytest.mark.parametrize("doc", PAGES, ids=_name)
def test_reader_edition_folds_solutions_and_captions_figures(doc):
    by_id = {c["id"]: c for c in _nb(doc, "reader")["cells"]}
    for cell in _chapter_cells(doc):
        if "scaffold" in _tags(cell):
            assert cell["id"] not in by_id
        if "solution" in _tags(cell):
            folded = by_id[cell["id"]]
            assert folded["metadata"] == {
                "cellView": "form",
                "jupyter": {"source_hidden": True},
            }
            assert _src(folded).startswith("# @title Solution to Exercise ")
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        name = mystnb.get("figure", {}).get("name")
        if name:
            number = BOOK.labels[name.lower()].number
            caption = _src(by_id[f"{cell['id']}-caption"])
            assert caption.startswith(f"**Fig. {number}.** ")


def test_toc_lists_the_named_pages_in_order():
    docs = [_name(p.doc) for p in BOOK.pages]
    assert docs[0] == "welcome" and "index" in docs
    chapters = [_name(d) for d in PAGES]
    assert chapters[:4] == [
        "01_symmetry",
        "02_architectures",
        "03_real_networks",
        "03_real_networks_online_data",
    ]
    assert not [p for p in BOOK.pages if "api/nqf_lite" in p.doc]


def test_committed_numbers_number_the_chapters():
    first = {_name(p.doc): p.number for p in E.chapters(BOOK)}
    assert first["01_symmetry"] == "1" and first["11_design"] == "11"
    assert first["howto_own_layer"] is None
    assert first["03_real_networks_online_data"].startswith("3.")


# ------------------------------------------------------------- the renderer

NUMBERS = {
    "formats": {
        "figure": "Fig. %s",
        "section": "Section %s",
        "exercise": "Exercise %s",
        "equation": "Eq. ({number})",
    },
    "labels": {
        k: {"kind": kind, "number": n, "title": t, "doc": "x", "box": b}
        for k, kind, n, t, b in [
            ("eq-a", "equation", "4.3", "", ""),
            ("fig-a", "figure", "4.1", "A caption", ""),
            ("sec-a", "section", "4.2", "Weight decay", ""),
            ("ch-a", "section", "5", "Compression", ""),
            ("ex-ch4-a", "exercise", "4.1", "A title", ""),
            (
                "thm-a",
                "box",
                None,
                "Theorem 2 of the paper: closure",
                "theorem",
            ),
        ]
    },
    "sections": {"x": [["4", "Title"], ["4.2", "W"], ["4.2.1", "Sub"]]},
}


def _ctx(edition="reader", strict=True, numbers=NUMBERS) -> E.Chapter:
    book = E.Book(
        root=ROOT,
        pages=[E.Page("x", "4", ROOT / "x.ipynb")],
        numbers=numbers,
        citations={
            "k1": ("Ziyin et al.", "2026"),
            "k2": ("Saxe et al.", "2014"),
        },
        md=MD,
        strict=strict,
    )
    return E.Chapter(book, "x", edition)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("see {eq}`eq-a`", "see Eq. (4.3)"),
        (
            "{numref}`fig-a` and {numref}`Figure %s <fig-a>`",
            "Fig. 4.1 and Figure 4.1",
        ),
        ("{numref}`sec-a`, {numref}`eq-a`", "Section 4.2, Eq. (4.3)"),
        (
            "{ref}`sec-a`, {ref}`ch-a`, {ref}`the ledger <sec-a>`",
            "Section 4.2, *Weight decay*, Chapter 5, *Compression*, "
            "the ledger",
        ),
        ("by {prf:ref}`thm-a`", "by Theorem 2 of the paper"),
        # as the role plugin reads them: any ticks, over a line break
        (
            "{eq}``eq-a`` and {ref}`the\nledger <sec-a>`.",
            "Eq. (4.3) and the ledger.",
        ),
        (
            "{cite}`k1,k2` and {cite:t}`k1`",
            "(Ziyin et al., 2026; Saxe et al., 2014) and Ziyin et al. (2026)",
        ),
        ("a {term}`plateau` and {term}`ZGZ <zgz-term>`", "a plateau and ZGZ"),
        ("gap {glue:text}`ch4-gap:.1e`.", "gap ⟨ch4-gap⟩."),
        (
            "# Title\n(sec-a)=\n## Weight decay\n```python\n# a comment\n"
            "```\n### Sub",
            "# 4. Title\n## 4.2 Weight decay\n```python\n# a comment\n```\n"
            "### 4.2.1 Sub",
        ),
        ("$$\nx = 1\n$$ (eq-a)", "$$\nx = 1\n\\tag{4.3}\n$$"),
        ("$$ x = 1 $$ (eq-a)", "$$ x = 1 \\tag{4.3} $$"),
        # code is code: a role in a code span or block stays as written
        (
            "`{eq}`x`` {eq}`eq-a`\n```\n{eq}`eq-a`\n```",
            "`{eq}`x`` Eq. (4.3)\n```\n{eq}`eq-a`\n```",
        ),
        (
            "| a | {eq}`eq-a` |\n|---|---|\n| {eq}`eq-a` | {numref}`fig-a` |",
            "| a | Eq. (4.3) |\n|---|---|\n| Eq. (4.3) | Fig. 4.1 |",
        ),
        (
            "- one {eq}`eq-a`\n  two {eq}`eq-a`",
            "- one Eq. (4.3)\n  two Eq. (4.3)",
        ),
    ],
)
def test_roles_labels_and_equations(source, expected):
    assert _ctx().markdown(source) == expected


def test_glue_formats_are_collected_in_order_of_use():
    ctx = _ctx()
    text = "{glue:text}`b:.2f` then {glue:text}`a` then {glue:text}`b:.1e`"
    ctx.markdown(text)
    assert ctx.glued == {"b": ".2f", "a": ""}


def test_boxes_exercises_and_solutions():
    source = (
        "```{prf:theorem} Theorem 2 of the paper: closure\n:label: thm-a\n"
        ":nonumber:\n\nBody $x$.\n```\n\n"
        "```{exercise} A title\n:label: ex-ch4-a\n\nDo it.\n```\n\n"
        "````{solution} ex-ch4-a\n:class: dropdown\n\nLike this:\n```python\n"
        "x = 1\n```\n````\n\n"
        ":::{admonition} How the tolerance is set\n:class: dropdown\n\n"
        "Three SE, {eq}`eq-a`.\n:::"
    )
    reader = _ctx("reader").markdown(source)
    assert reader == (
        "---\n\n**Theorem 2 of the paper** — closure\n\nBody $x$.\n\n---\n\n"
        "---\n\n**Exercise 4.1** (A title)\n\nDo it.\n\n---\n\n"
        "<details>\n<summary><b>Solution to Exercise 4.1</b></summary>\n\n"
        "Like this:\n```python\nx = 1\n```\n\n</details>\n\n"
        "<details>\n<summary><b>How the tolerance is set</b></summary>\n\n"
        "Three SE, Eq. (4.3).\n\n</details>"
    )
    student = _ctx("student").markdown(source)
    assert "Like this" not in student and "Exercise 4.1" in student


def _cells(*cells):
    from nbformat.v4 import new_code_cell, new_markdown_cell

    return [
        new_markdown_cell(src, id=f"c{i}")
        if kind == "md"
        else new_code_cell(src, id=f"c{i}", metadata={"tags": kind.split()})
        for i, (kind, src) in enumerate(cells)
    ]


def test_a_gated_solution_is_folded_for_readers_and_removed_for_students():
    cells = _cells(
        ("md", "Do {eq}`eq-a`."),
        ("scaffold", "x = ...  # your code"),
        ("md", "```{solution-start} ex-ch4-a\n```"),
        ("", "x = 1"),
        ("md", "```{solution-end}\n```"),
        ("", "check(x)"),
    )
    reader = _ctx("reader").cells(cells)
    assert [(c.id, c.source.split("\n")[0]) for c in reader] == [
        ("c0", "Do Eq. (4.3)."),
        ("c2", "**Solution to Exercise 4.1**: the code below is folded; "
               "open it to read it."),
        ("c3", "# @title Solution to Exercise 4.1"),
        ("c5", "check(x)"),
    ]  # fmt: skip
    student = _ctx("student").cells(cells)
    assert [c.source for c in student] == [
        "Do Eq. (4.3).",
        "x = ...  # your code",
        "check(x)",
    ]
    with pytest.raises(E.EditionError, match="Exercise 4.1 not ended"):
        _ctx("reader").cells(cells[:4])
    with pytest.raises(E.EditionError, match="c0 is not gated"):
        _ctx("reader").cells(_cells(("solution", "x = 1")))


@pytest.mark.parametrize(
    "source, match",
    [
        ("{numref}`nowhere`", "unknown label"),
        ("```{figure} x.png\n```", "directive {figure} has no rendering"),
        ("{doc}`a`", "role {doc} has no rendering"),
        ("{cite}`nobody`", "unknown 'nobody'"),
        ("{eq}`thm-a`", "unnumbered"),
        ("# A\n## B\n## C\n### D", "more headings than the built page"),
    ],
)
def test_what_the_editions_cannot_render_is_an_error(source, match):
    with pytest.raises(E.EditionError, match=match):
        _ctx().markdown(source)


def test_a_label_the_numbers_do_not_know_yet_is_marked_when_not_strict():
    ctx = _ctx(strict=False)
    assert ctx.markdown("{eq}`eq-new`") == "Eq. (??)"
    assert ctx.book.missing == {"eq-new"}


# ------------------------------------------------------- citations by pybtex


def test_citations_are_read_by_pybtex(tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text(
        "@article{one, author = {Cl{\\'e}ment, Jacot}, year = 2018,"
        " title = {T}}\n"
        '@book{two, author = "Landau, Lev D. and Lifshitz, Evgeny M.",\n'
        "  year = {1980}, title = {S}}\n"
        "@misc{three, author = {von Oswald, Johannes and Niklasson, E."
        " and Randazzo, E.}, year = {2023}}\n",
        encoding="utf-8",
    )
    cites = E.citations([bib])
    assert cites == {
        "one": ("Clément", "2018"),
        "two": ("Landau and Lifshitz", "1980"),
        "three": ("von Oswald et al.", "2023"),
    }
    ctx = _ctx()
    ctx.book.citations = cites
    text = ctx.markdown("{cite:t}`two` and {cite}`three,one`")
    assert text == (
        "Landau and Lifshitz (1980) and "
        "(von Oswald et al., 2023; Clément, 2018)"
    )


def test_the_book_cites_what_its_bibliography_holds():
    assert BOOK.citations["ziyin2026nqf"] == ("Ziyin et al.", "2026")


# --------------------------------------------- numbers from a Sphinx build

FIXTURE = {
    "index.md": "# Book\n\n```{toctree}\n:numbered:\n\none\ntwo\n```\n",
    "one.md": (
        "(ch-one)=\n# One\n\n## First\n\n(sec-b)=\n## Second $x$\n\n"
        "```{figure} pic.png\n:name: fig-a\n\nA.\n```\n\n"
        "$$\nx = 1\n$$ (eq-a)\n\n$$\ny = 2\n$$ (eq-b)\n"
    ),
    "two.md": (
        "# Two\n\n```{figure} pic.png\n:name: fig-b\n\nB.\n```\n\n"
        "```{exercise} Try\n:label: ex-two\n\nDo.\n```\n\n"
        "```{prf:theorem} Theorem 9 of the paper: nine\n:label: thm-nine\n"
        ":nonumber:\n\nT.\n```\n\n$$\nz = 3\n$$ (eq-c)\n"
    ),
}


@pytest.fixture(scope="module")
def built_env(tmp_path_factory):
    """A small book built by Sphinx with the book's numbering settings."""
    from sphinx.application import Sphinx

    src = tmp_path_factory.mktemp("src")
    for name, text in FIXTURE.items():
        (src / name).write_text(text, encoding="utf-8")
    (src / "pic.png").write_bytes(b"")
    (src / "conf.py").write_text(
        "extensions = ['myst_parser', 'sphinx_exercise', 'sphinx_proof']\n"
        "myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence']\n"
        "numfig = True\nmath_numfig = True\n"
        "math_eqref_format = 'Eq. ({number})'\n",
        encoding="utf-8",
    )
    out = tmp_path_factory.mktemp("out")
    app = Sphinx(
        str(src), str(src), str(out / "html"), str(out / "doctrees"),
        "html", status=None, warning=None, freshenv=True,
    )  # fmt: skip
    app.build()
    return app.env


def test_numbers_are_read_from_the_sphinx_environment(built_env):
    numbers = N.collect(built_env, ["index", "one", "two"])
    labels = {k: v["number"] for k, v in numbers["labels"].items()}
    assert {k: labels[k] for k in ("ch-one", "sec-b", "fig-a", "fig-b")} == {
        "ch-one": "1",
        "sec-b": "1.2",
        "fig-a": "1.1",
        "fig-b": "2.1",
    }
    assert [labels[k] for k in ("eq-a", "eq-b", "eq-c")] == [
        "1.1",
        "1.2",
        "2.1",
    ]
    assert labels["ex-two"] == "2.1" and labels["thm-nine"] is None
    assert numbers["labels"]["sec-b"]["title"] == "Second $x$"
    assert numbers["sections"]["one"] == [
        ["1", "One"],
        ["1.1", "First"],
        ["1.2", "Second $x$"],
    ]
    assert numbers["formats"]["equation"] == "Eq. ({number})"
    assert N.collect(built_env, ["one"])["labels"].keys() == {
        "ch-one", "sec-b", "fig-a", "eq-a", "eq-b",
    }  # fmt: skip


def test_an_edition_quotes_the_sphinx_numbers(built_env):
    numbers = json.loads(
        N.dumps(N.collect(built_env, ["index", "one", "two"]))
    )
    numbers["sections"] = {
        d: [tuple(s) for s in v] for d, v in numbers["sections"].items()
    }
    ctx = _ctx(numbers=numbers)
    ctx.doc = "one"
    text = (
        "# One\n## First\nSee {numref}`fig-b`, {eq}`eq-c`, {ref}`sec-b`.\n"
        "## Second $x$\n"
    )
    assert ctx.markdown(text) == (
        "# 1. One\n## 1.1 First\n"
        "See Fig. 2.1, Eq. (2.1), Section 1.2, *Second $x$*.\n"
        "## 1.2 Second $x$"
    )


# ------------------------------------------------------------ the HTML page


def test_launch_buttons_open_the_reader_edition_and_downloads_offer_all():
    app = type("App", (), {"srcdir": str(ROOT)})()
    launch = "https://colab.research.google.com/x/notebooks/04_closure.ipynb"
    context = {
        "header_buttons": [
            {"label": "launch-buttons", "buttons": [{"url": launch}, {}]},
            {"label": "download-buttons", "buttons": []},
        ],
        "body": "<h1>Title</h1><p>text</p>",
    }
    E._launch_and_downloads(app, "notebooks/04_closure", "", context, None)
    launch_group, downloads = context["header_buttons"]
    assert launch_group["buttons"] == [
        {"url": launch.replace("notebooks/04", "editions/reader/04")},
        {},
    ]
    assert [b["url"] for b in downloads["buttons"]] == [
        "../editions/reader/04_closure.ipynb",
        "../editions/student/04_closure.ipynb",
        "../pdf/04_closure.pdf",
        "../pdf/book.pdf",
    ]
    assert context["body"].startswith('<h1>Title</h1><p class="chapter-ed')
    assert (
        'href="../editions/student/04_closure.ipynb" download>'
        in (context["body"])
    )
    page = {"body": "<h1>T</h1>"}  # a page without a notebook: untouched
    E._launch_and_downloads(app, "book/glossary", "", page, None)
    assert page == {"body": "<h1>T</h1>"}
