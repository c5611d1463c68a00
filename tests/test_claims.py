"""Tests of the claims ledger: nqf_lite.book.claims and the Sphinx extensions
in _ext/."""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from docutils import nodes

import nqf_lite.book.claims as claims_module
import nqf_lite.book.glue as glue_module
from nqf_lite.book.claims import CLAIMS_DIR_ENV, ClaimFailed, Claims, glue

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import api_docs  # noqa: E402
import claims_ledger as cl  # noqa: E402


@pytest.fixture
def claims_dir(tmp_path, monkeypatch):
    folder = tmp_path / "claims"
    monkeypatch.setenv(CLAIMS_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def no_claims_dir(monkeypatch):
    monkeypatch.delenv(CLAIMS_DIR_ENV, raising=False)


def _records(folder, chapter):
    lines = (folder / f"{chapter}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


# ----------------------------------------------------------------
# nqf_lite.book.claims


def test_expected_with_tolerances_passes_and_returns_measured(no_claims_dir):
    c = Claims("01_x")
    assert (
        c.check("k1", "one is one", 1.0 + 1e-13, expected=1.0, atol=1e-12)
        == 1.0 + 1e-13
    )
    assert c.check("k2", "rtol", 101.0, expected=100.0, rtol=0.01) == 101.0
    assert (
        c.check("k3", "both", 2.5, expected=2.0, atol=0.3, rtol=0.1) == 2.5
    )  # 0.5 <= 0.3 + 0.2
    assert [r.passed for r in c.records] == [True, True, True]


def test_bounds(no_claims_dir):
    c = Claims("01_x")
    c.check("lo", "small", 1e-9, at_most=1e-6)
    c.check("hi", "large", 3.0, at_least=3.0)
    assert c.records[0].criterion == "measured ≤ 1e-06"
    assert c.records[1].prediction == "≥ 3"


@pytest.mark.parametrize(
    "measured, kwargs",
    [
        (1.1, dict(expected=1.0, atol=0.05)),
        (103.0, dict(expected=100.0, rtol=0.02)),
        (2e-6, dict(at_most=1e-6)),
        (0.5, dict(at_least=1.0)),
        (math.nan, dict(at_most=1.0)),
        (math.nan, dict(at_least=1.0)),
        (math.inf, dict(at_least=1.0)),
    ],
)
def test_failed_claim_raises_and_is_recorded(claims_dir, measured, kwargs):
    c = Claims("02_y")
    with pytest.raises(ClaimFailed, match="02_y:bad"):
        c.check("bad", "fails", measured, **kwargs)
    (rec,) = _records(claims_dir, "02_y")
    assert rec["passed"] is False
    assert rec["key"] == "bad"


def test_claimfailed_is_an_assertion_error():
    assert issubclass(ClaimFailed, AssertionError)


def test_jsonl_written_when_env_set(claims_dir, monkeypatch):
    monkeypatch.setenv("NQF_SEED", "3")
    c = Claims("03_z")
    c.check("a", "first", 2.0, expected=2.0, atol=1e-12, source="Thm 1, Eq. 2")
    c.check("b", "second", 0.1, at_most=0.2, prediction="small")
    recs = _records(claims_dir, "03_z")
    assert [r["key"] for r in recs] == ["a", "b"]
    assert recs[0] == {
        "chapter": "03_z",
        "key": "a",
        "statement": "first",
        "source": "Thm 1, Eq. 2",
        "prediction": "2",
        "measured": 2.0,
        "criterion": "|measured − 2| ≤ atol 1e-12",
        "passed": True,
        "n_seeds": 1,
        "spread": None,
        "margin": 0.0,
        "kind": "prediction",
        "seed": 3,
        "extra": {},
    }
    assert recs[1]["prediction"] == "small"
    # a second Claims object of the same chapter appends
    Claims("03_z").check("c", "third", 1.0, at_least=0.0)
    assert len(_records(claims_dir, "03_z")) == 3


def test_nothing_written_without_env(tmp_path, no_claims_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Claims("04_w").check("a", "x", 1.0, at_most=2.0)
    assert list(tmp_path.iterdir()) == []


def test_numpy_scalars_are_accepted(no_claims_dir):
    np = pytest.importorskip("numpy")
    c = Claims("01_x")
    assert (
        c.check(
            "n", "numpy", np.float32(0.5), expected=np.array(0.5), atol=1e-7
        )
        == 0.5
    )


@pytest.mark.parametrize(
    "args, kwargs, exc",
    [
        (("bad key!", "s", 1.0), dict(at_most=2.0), ValueError),
        (("", "s", 1.0), dict(at_most=2.0), ValueError),
        ((3, "s", 1.0), dict(at_most=2.0), ValueError),
        (("k", "s", 1.0), dict(), ValueError),
        (("k", "s", 1.0), dict(at_most=2.0, at_least=0.0), ValueError),
        (("k", "s", 1.0), dict(expected=1.0, at_most=2.0), ValueError),
        (("k", "s", 1.0), dict(expected=1.0), ValueError),
        (("k", "s", "one"), dict(at_most=2.0), TypeError),
        (("k", "s", [1.0, 2.0]), dict(at_most=2.0), TypeError),
        (("k", "s", 1.0), dict(expected="x", atol=1.0), TypeError),
    ],
)
def test_bad_input(no_claims_dir, args, kwargs, exc):
    with pytest.raises(exc):
        Claims("01_x").check(*args, **kwargs)


def test_duplicate_key_and_bad_chapter(no_claims_dir):
    c = Claims("01_x")
    c.check("k", "s", 1.0, at_most=2.0)
    with pytest.raises(ValueError, match="twice"):
        c.check("k", "s", 1.0, at_most=2.0)
    with pytest.raises(ValueError, match="chapter"):
        Claims("")
    with pytest.raises(TypeError, match="chapter"):
        Claims(6)


@pytest.mark.parametrize(
    "name", ["../evil", "a/b", "..", "/abs", "a b", "x\\y", ".hidden"]
)
def test_chapter_name_cannot_leave_the_claims_folder(name, claims_dir):
    with pytest.raises(ValueError, match="chapter"):
        Claims(name)
    assert not any(claims_dir.parent.rglob("*.jsonl"))


@pytest.mark.parametrize(
    "criterion",
    [
        dict(at_most=math.inf),
        dict(at_least=-math.inf),
        dict(at_most=math.nan),
        dict(expected=1.0, atol=math.inf),
        dict(expected=1.0, atol=-0.1),
        dict(expected=1.0, rtol=math.nan),
        dict(expected=math.inf, atol=1.0),
        dict(expected=1.0, rtol=-1e-3),
    ],
)
def test_a_criterion_that_cannot_fail_is_rejected(criterion, no_claims_dir):
    with pytest.raises(
        ValueError, match="at_most|at_least|atol|rtol|expected"
    ):
        Claims("01_x").check("k", "s", 1.0, **criterion)


def test_kind_is_recorded_and_counted_apart(claims_dir):
    c = Claims("05_k")
    c.check("p", "a prediction", 1.0, at_most=2.0)
    c.check("c", "rows counted", 3.0, expected=3.0, atol=0, kind="code")
    assert [r["kind"] for r in _records(claims_dir, "05_k")] == [
        "prediction",
        "code",
    ]
    assert c.summary().startswith(
        "1 prediction checked, all pass (0 on ensembles of seeds), and 1 "
        "check of the code"
    )
    with pytest.raises(ValueError, match="kind"):
        c.check("z", "s", 1.0, at_most=2.0, kind="theory")


class _FakeShell:
    """Stands in for IPython: an execution counter and the post_run_cell
    event."""

    def __init__(self):
        self.execution_count = 1
        self.callbacks = []
        self.events = type(
            "E",
            (),
            {
                "callbacks": {"post_run_cell": self.callbacks},
                "register": lambda _, name, fn: self.callbacks.append(fn),
            },
        )()

    def run_cell(self):
        for fn in self.callbacks:
            fn(None)
        self.execution_count += 1


@pytest.fixture
def shell(monkeypatch):
    fake = _FakeShell()
    monkeypatch.setattr(glue_module, "ipython", lambda: fake)
    monkeypatch.setattr(glue_module, "_SHOWN", {})
    monkeypatch.setattr(glue_module, "_PENDING", {})
    return fake


def test_rerunning_a_cell_replaces_its_claim(shell, no_claims_dir):
    c = Claims("06_r")
    c.check("k", "s", 1.0, at_most=2.0)
    shell.run_cell()
    c.check("k", "s", 1.5, at_most=2.0)  # the same cell, run again
    assert [(r.key, r.measured) for r in c.records] == [("k", 1.5)]
    with pytest.raises(
        ValueError, match="twice"
    ):  # twice within one execution: a real duplicate
        c.check("k", "s", 1.0, at_most=2.0)


def test_rerun_in_the_book_build_is_a_duplicate(shell, claims_dir):
    c = Claims("06_b")
    c.check("k", "s", 1.0, at_most=2.0)
    shell.run_cell()
    with pytest.raises(ValueError, match="twice"):
        c.check("k", "s", 1.0, at_most=2.0)


def test_a_shell_started_between_two_checks_does_not_hide_a_duplicate(
    monkeypatch, no_claims_dir
):
    """Plain Python: the first check has no shell, an import starts one before
    the second."""
    fake = _FakeShell()
    shells = iter(
        [None]
    )  # the first look sees no shell, every later one sees `fake`
    monkeypatch.setattr(glue_module, "ipython", lambda: next(shells, fake))
    c = Claims("06_p")
    c.check("k", "s", 1.0, at_most=2.0)
    with pytest.raises(ValueError, match="twice"):
        c.check("k", "s", 1.5, at_most=2.0)
    assert [r.measured for r in c.records] == [1.0]


def test_duplicate_in_plain_python_with_myst_nb_is_an_error(tmp_path):
    """The issue's case, for real: importing myst_nb (first glue) starts an
    IPython shell."""
    import os
    import subprocess

    pytest.importorskip("myst_nb")
    script = (
        "from nqf_lite.book.claims import Claims\n"
        "c = Claims('01_x')\n"
        "c.check('k', 's', 1.0, at_most=2.0)\n"
        "try:\n"
        "    c.check('k', 's', 1.5, at_most=2.0)\n"
        "except ValueError as exc:\n"
        "    print('duplicate:', exc)\n"
        "print(len(c.records), c.records[0].measured)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != CLAIMS_DIR_ENV}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "duplicate: claim key 'k' is used twice" in out.stdout
    assert out.stdout.strip().endswith("1 1.0")


def test_identity_kind_and_seed_are_recorded(claims_dir, monkeypatch):
    monkeypatch.setenv("NQF_SEED", "7")
    c = Claims("05_i")
    c.check("p", "a prediction", 1.0, at_most=2.0, n_seeds=4)
    c.check(
        "i", "closed form = autograd", 1e-14, at_most=1e-12, kind="identity"
    )
    c.check("c", "rows counted", 3.0, expected=3.0, atol=0, kind="code")
    recs = _records(claims_dir, "05_i")
    assert [r["kind"] for r in recs] == ["prediction", "identity", "code"]
    assert [r["seed"] for r in recs] == [7, 7, 7]
    assert c.summary() == (
        "1 prediction checked, all pass (1 on ensembles of seeds), 1 identity "
        "checked by an "
        "independent route, and 1 check of the code; every claim is listed in "
        "the claims ledger."
    )


def test_show_numbers_prints_quoted_values_after_the_cell(
    shell, capsys, no_claims_dir
):
    claims_module.show_numbers({"ch-a": ".2f", "ch-b": ".1e"})
    glue("ch-a", np.float64(3.14159))
    glue("not-quoted", 7.0)
    Claims("07_s").check("ch-b", "s", 0.000123, at_most=1.0)
    assert capsys.readouterr().out == ""  # nothing before the cell ends
    shell.run_cell()
    assert (
        capsys.readouterr().out
        == "Numbers quoted in the text: ⟨ch-a⟩ = 3.14, ⟨ch-b⟩ = 1.2e-04\n"
    )
    shell.run_cell()
    assert capsys.readouterr().out == ""  # shown once
    with pytest.raises(TypeError, match="formats"):
        claims_module.show_numbers({"a": 3})


# ----------------------------------------------------------------
# _ext/claims_ledger.py


def _rec(chapter="01_a", key="k", passed=True, measured=1.0, **kw):
    rec = dict(
        chapter=chapter,
        key=key,
        statement=f"statement {key}",
        source="Eq. 1",
        prediction="1",
        measured=measured,
        criterion="|measured − 1| ≤ atol 0.1",
        passed=passed,
    )
    rec.update(kw)
    return rec


def _write(folder, chapter, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chapter}.jsonl").write_text(
        "".join(line + "\n" for line in lines)
    )


def test_read_claims_sorted_by_chapter_in_file_order(tmp_path):
    _write(
        tmp_path,
        "02_b",
        [json.dumps(_rec("02_b", "z")), json.dumps(_rec("02_b", "a"))],
    )
    _write(tmp_path, "01_a", [json.dumps(_rec("01_a", "m"))])
    records, problems = cl.read_claims(tmp_path)
    assert problems == []
    assert [(r["chapter"], r["key"]) for r in records] == [
        ("01_a", "m"),
        ("02_b", "z"),
        ("02_b", "a"),
    ]


def test_read_claims_repeated_key_keeps_last(tmp_path):
    _write(
        tmp_path,
        "01_a",
        [json.dumps(_rec(measured=1.0)), json.dumps(_rec(measured=2.0))],
    )
    records, _ = cl.read_claims(tmp_path)
    assert [r["measured"] for r in records] == [2.0]


def test_read_claims_reports_bad_lines(tmp_path):
    bad = _rec()
    del bad["criterion"]
    _write(
        tmp_path,
        "01_a",
        [
            "{not json",
            json.dumps(bad),
            "",
            json.dumps([1, 2]),
            json.dumps(_rec(key="ok")),
        ],
    )
    records, problems = cl.read_claims(tmp_path)
    assert [r["key"] for r in records] == ["ok"]
    assert len(problems) == 3
    assert "01_a.jsonl:1" in problems[0] and "JSON" in problems[0]
    assert "criterion" in problems[1]
    assert "01_a.jsonl:4" in problems[2]


def test_read_claims_missing_folder(tmp_path):
    records, problems = cl.read_claims(tmp_path / "nope")
    assert (
        records == []
        and len(problems) == 1
        and "does not exist" in problems[0]
    )


def test_ledger_problems():
    assert cl.ledger_problems([]) == [
        "the claims ledger is empty: no chapter recorded a claim"
    ]
    assert cl.ledger_problems([_rec(), _rec(key="b")]) == []
    (msg,) = cl.ledger_problems(
        [_rec(), _rec(key="b", passed=False, measured=3.5)]
    )
    assert "01_a:b FAILED" in msg and "3.5" in msg
    # anything but a literal True counts as a failure
    assert len(cl.ledger_problems([_rec(passed="true")])) == 1


def test_summary_text():
    assert (
        cl.summary_text([_rec(), _rec(key="b"), _rec("02_b")])
        == "3 predictions of the theory checked in 2 chapters: all pass."
    )
    assert (
        cl.summary_text([_rec()])
        == "1 prediction of the theory checked in 1 chapter: all pass."
    )
    assert (
        cl.summary_text([_rec(), _rec(key="b", passed=False)])
        == "2 predictions of the theory checked in 1 chapter: 1 FAIL."
    )


def test_ledger_table_groups_by_chapter_with_links_and_results():
    records = [
        _rec("01_a", "k1"),
        _rec("01_a", "k2"),
        _rec("09_gone", "k3", passed=False, measured=float("nan")),
    ]
    links = {"01_a": ("1. Chapter A", "../notebooks/01_a.html")}
    table = cl.ledger_table(records, links.get)
    assert isinstance(table, nodes.table)
    assert "claims-ledger" in table["classes"]
    head = table.next_node(nodes.thead)
    assert [e.astext() for e in head.findall(nodes.entry)] == list(cl.HEADERS)
    rows = list(table.next_node(nodes.tbody).children)
    assert [r["classes"] for r in rows] == [
        ["claims-chapter"],
        ["claim-pass"],
        ["claim-pass"],
        ["claims-chapter"],
        ["claim-fail"],
    ]
    # chapter rows: one cell spanning the table, linked when the page exists
    (cell,) = rows[0].children
    assert (
        cell["morecols"] == len(cl.HEADERS) - 1
        and cell.astext() == "1. Chapter A"
    )
    assert (
        rows[0].next_node(nodes.reference)["refuri"]
        == "../notebooks/01_a.html"
    )
    assert (
        rows[3].astext() == "09_gone"
        and rows[3].next_node(nodes.reference) is None
    )
    # claim rows
    cells = [e.astext() for e in rows[1].children]
    assert cells == [
        "statement k1\n\nk1",
        "Eq. 1",
        "1",
        "1",
        "|measured − 1| ≤ atol 0.1",
        "—",
        "pass",
    ]
    assert rows[1]["ids"] == ["claim-01-a-k1"]
    bad = [e.astext() for e in rows[4].children]
    assert bad[3] == "nan" and bad[-1] == "FAIL"


def test_ledger_table_empty_has_header_only():
    table = cl.ledger_table([], lambda chapter: None)
    assert len(table.next_node(nodes.tbody).children) == 0
    assert len(list(table.findall(nodes.row))) == 1


# ------------------------------------------------ the extension inside a real
# Sphinx build


def _sphinx_build(src: Path, out: Path):
    from sphinx.application import Sphinx

    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['claims_ledger']\n"
        "exclude_patterns = ['_build']\n"
    )
    (src / "index.rst").write_text(
        "Book\n====\n\n.. toctree::\n\n   notebooks/01_a\n   ledger\n"
    )
    (src / "notebooks").mkdir(exist_ok=True)
    (src / "notebooks" / "01_a.rst").write_text(
        "Chapter A\n=========\n\nText.\n"
    )
    (src / "ledger.rst").write_text("Ledger\n======\n\n.. claims-ledger::\n")
    app = Sphinx(
        str(src),
        str(src),
        str(out),
        str(out / ".doctrees"),
        "html",
        status=None,
        warning=None,
        freshenv=True,
        warningiserror=False,
    )
    app.build()
    return app


def test_extension_builds_table(tmp_path, claims_dir):
    Claims("01_a").check(
        "k1", "one", 1.0, expected=1.0, atol=1e-9, source="Eq. 3"
    )
    src = tmp_path / "src"
    src.mkdir()
    app = _sphinx_build(src, tmp_path / "out")
    html = (tmp_path / "out" / "ledger.html").read_text()
    assert app.statuscode == 0
    assert "1 prediction of the theory checked in 1 chapter: all pass." in html
    assert 'href="notebooks/01_a.html"' in html
    assert 'id="claim-01-a-k1"' in html


def test_extension_fails_build_on_failed_claim(tmp_path, claims_dir):
    with pytest.raises(ClaimFailed):
        Claims("01_a").check("k1", "one", 2.0, expected=1.0, atol=1e-9)
    src = tmp_path / "src"
    src.mkdir()
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match="01_a:k1 FAILED"):
        _sphinx_build(src, tmp_path / "out")
    assert "FAIL" in (tmp_path / "out" / "ledger.html").read_text()


def test_extension_fails_build_on_empty_ledger(tmp_path, claims_dir):
    claims_dir.mkdir()
    src = tmp_path / "src"
    src.mkdir()
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match="empty"):
        _sphinx_build(src, tmp_path / "out")


def test_extension_without_env_explains(tmp_path, no_claims_dir):
    src = tmp_path / "src"
    src.mkdir()
    app = _sphinx_build(src, tmp_path / "out")
    assert app.statuscode == 0
    assert (
        "generated by the book build"
        in (tmp_path / "out" / "ledger.html").read_text()
    )


# ----------------------------------------------------------------
# _ext/api_docs.py


@pytest.mark.parametrize(
    "line, expected",
    [
        ("ndarray, shape (|batch|,)", r"ndarray, shape (\|batch\|,)"),
        (
            "max |C_kj| <= tol * max |C_kk|.",
            r"max \|C_kj\| <= tol * max \|C_kk\|.",
        ),
        ("``2/|batch|`` and |x|", r"``2/|batch|`` and \|x\|"),
        (":math:`|x|` and |y|", r":math:`|x|` and \|y\|"),
        ("a | b | c", "a | b | c"),
        ("x || y", "x || y"),
        ("| table cell |", "| table cell |"),
        ("no bars at all", "no bars at all"),
    ],
)
def test_escape_bars(line, expected):
    assert api_docs.escape_bars(line) == expected


def test_defining_name_of_reexports():
    assert (
        api_docs.defining_name("nqf_lite.book.claims.Claims") is None
    )  # already the home
    assert (
        api_docs.defining_name("nqf_lite.book.widgets.slider_explorer") is None
    )
    assert api_docs.defining_name("nqf_lite.nothing_here") is None
    assert api_docs.defining_name("not_a_module.x") is None
    assert api_docs.defining_name("nqf_lite") is None
    assert (
        api_docs.defining_name("nqf_lite.expand")
        == "nqf_lite.expansion.autograd.expand"
    )
    assert (
        api_docs.defining_name("nqf_lite.NQF") == "nqf_lite.expansion.form.NQF"
    )
    # re-exports resolve to the defining submodule, whatever the package layout
    # calls it
    import importlib

    import nqf_lite

    for name in ("expand", "NQF"):
        full = api_docs.defining_name(f"nqf_lite.{name}")
        assert (
            full is not None
            and full.startswith("nqf_lite.")
            and full.endswith(f".{name}")
        ), full
        module, _, attr = full.rpartition(".")
        assert module != "nqf_lite" and getattr(
            importlib.import_module(module), attr
        ) is getattr(nqf_lite, name)


def test_margin_and_ensemble_fields(claims_dir):
    c = Claims("04_w")
    c.check("e", "near", 1.5, expected=1.0, atol=1.0, n_seeds=5, spread=0.2)
    c.check("hi", "below", 0.9, at_most=1.0)
    c.check("lo", "above", 4.0, at_least=2.0)
    recs = {r["key"]: r for r in _records(claims_dir, "04_w")}
    assert recs["e"]["margin"] == pytest.approx(0.5, abs=1e-15)
    assert (recs["e"]["n_seeds"], recs["e"]["spread"]) == (5, 0.2)
    assert recs["hi"]["margin"] == pytest.approx(0.9, abs=1e-15)
    assert recs["lo"]["margin"] == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_seeds": 0},
        {"n_seeds": 2.0},
        {"spread": -1.0},
        {"spread": float("nan")},
    ],
)
def test_bad_ensemble_fields_are_refused(kwargs):
    with pytest.raises((TypeError, ValueError), match="n_seeds|spread"):
        Claims("05_v").check("k", "s", 1.0, at_most=2.0, **kwargs)


def test_summary_checks_records():
    c = Claims("06_u")
    with pytest.raises(ClaimFailed, match="no claim"):
        c.summary()
    c.check("a", "s", 1.0, at_most=2.0, n_seeds=3)
    line = c.summary()
    assert line.startswith("1 prediction checked, all pass (1 on ensembles")


# ----------------------------------------------------------------
# _ext/html_assets.py


def test_unique_scripts_drops_the_second_copy_of_an_inline_script():
    import html_assets
    from sphinx.builders.html._assets import _JavaScript

    body = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript("_static/a.js"),
        _JavaScript(None, body=body),
        _JavaScript("_static/b.js", **{"async": "async"}),
        _JavaScript("", body=body),  # the registry's copy of the same script
        _JavaScript("", body="var other = 1"),
        "_static/a.js",  # a plain string names the same file
    ]
    kept = html_assets.unique_scripts(scripts)
    assert [html_assets.script_key(s) for s in kept] == [
        ("_static/a.js", ()),
        ("", (("body", body),)),
        ("_static/b.js", (("async", "async"),)),
        ("", (("body", "var other = 1"),)),
    ]
    assert kept[1] is scripts[1]  # the first occurrence is kept


# ----------------------------------------------------------------
# _ext/api_docs.py: one page per module


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package ``fakepkg`` with public, private and nested modules on
    sys.path."""
    root = tmp_path / "src" / "fakepkg"
    (root / "sub").mkdir(parents=True)
    (root / "_hidden").mkdir()
    for rel in (
        "__init__.py",
        "alpha.py",
        "_private.py",
        "sub/__init__.py",
        "sub/beta.py",
        "sub/_gamma.py",
        "_hidden/__init__.py",
        "_hidden/delta.py",
    ):
        (root / rel).write_text('"""Doc."""\n')
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    yield "fakepkg"
    for name in [
        m for m in sys.modules if m == "fakepkg" or m.startswith("fakepkg.")
    ]:
        del sys.modules[name]


def test_public_modules_skips_private_names(fake_package):
    assert api_docs.public_modules(fake_package) == [
        "fakepkg.alpha",
        "fakepkg.sub",
        "fakepkg.sub.beta",
    ]


def test_public_modules_refuses_a_plain_module():
    with pytest.raises(TypeError, match="package"):
        api_docs.public_modules("json.decoder")


def test_module_page_is_a_labelled_automodule_page():
    text = api_docs.module_page("nqf_lite.dynamics.solvable")
    assert text.splitlines()[:3] == [
        api_docs.GENERATED,
        "(api-nqf-lite-dynamics-solvable)=",
        "# `nqf_lite.dynamics.solvable`",
    ]
    assert ".. automodule:: nqf_lite.dynamics.solvable\n   :members:" in text


def test_write_api_pages_follows_the_package(fake_package, tmp_path):
    book = tmp_path / "book_src"
    (book / "book" / "api").mkdir(parents=True)
    index = book / "book" / "api" / "index.md"
    index.write_text("# API\n")
    stale = book / "book" / "api" / "fakepkg.renamed.md"
    stale.write_text(api_docs.module_page("fakepkg.renamed"))
    mine = book / "book" / "api" / "fakepkg.handwritten.md"
    mine.write_text("# written by hand\n")  # not generated: never deleted
    assert api_docs.write_api_pages(book, fake_package) == [
        "fakepkg.alpha",
        "fakepkg.sub",
        "fakepkg.sub.beta",
    ]
    pages = sorted(p.name for p in (book / "book" / "api").iterdir())
    assert pages == [
        "fakepkg.alpha.md",
        "fakepkg.handwritten.md",
        "fakepkg.sub.beta.md",
        "fakepkg.sub.md",
        "index.md",
    ]
    assert (
        book / "book" / "api" / "fakepkg.sub.beta.md"
    ).read_text() == api_docs.module_page("fakepkg.sub.beta")
    # unchanged pages are not rewritten (Sphinx would re-read them)
    before = (book / "book" / "api" / "fakepkg.alpha.md").stat().st_mtime_ns
    api_docs.write_api_pages(book, fake_package)
    assert (
        book / "book" / "api" / "fakepkg.alpha.md"
    ).stat().st_mtime_ns == before


def test_table_checks_every_row_and_records_each(tmp_path, monkeypatch):
    monkeypatch.setenv("NQF_CLAIMS_DIR", str(tmp_path))
    c = Claims("tbl")
    with pytest.raises(ClaimFailed) as err:
        c.table(
            ("key", "statement", "measured", "at_most"),
            [
                ("t-a", "A", 0.1, 1.0),
                ("t-b", "B", 2.0, 1.0),
                ("t-c", "C", 3.0, 1.0),
            ],
            source="Eq. 1",
            kind="code",
        )
    # the failure names both failed keys, and the row after the first failure
    # is recorded
    assert "t-b" in str(err.value) and "t-c" in str(err.value)
    assert [r.key for r in c.records] == ["t-a", "t-b", "t-c"]
    assert [r.passed for r in c.records] == [True, False, False]
    assert {r.source for r in c.records} == {"Eq. 1"}
    lines = (tmp_path / "tbl.jsonl").read_text().splitlines()
    assert len(lines) == 3


def test_table_row_value_wins_over_common():
    c = Claims("tbl2")
    got = c.table(
        ("key", "statement", "measured", "kind"),
        [("u-a", "A", 0.5, "identity"), ("u-b", "B", 0.25, "code")],
        at_most=1.0,
        kind="prediction",
    )
    assert got == [0.5, 0.25]
    assert [r.kind for r in c.records] == ["identity", "code"]


@pytest.mark.parametrize(
    "columns, rows, common, match",
    [
        (("key", "statement"), [("a", "A")], {}, "measured"),
        (
            ("key", "statement", "measured", "tol"),
            [("a", "A", 1, 1)],
            {},
            "tol",
        ),
        (("key", "key", "measured"), [("a", "b", 1)], {}, "repeat"),
        (("key", "statement", "measured"), [("a", "A")], {}, r"rows\[0\]"),
        (("key", "statement", "measured"), [], {}, "at least one"),
    ],
)
def test_table_rejects_bad_layout(columns, rows, common, match):
    with pytest.raises(ValueError, match=match):
        Claims("tbl3").table(columns, rows, at_most=1.0, **common)


def test_a_subpackage_page_documents_no_reexport():
    # nqf_lite.expansion re-exports NQF from nqf_lite.expansion.form: one
    # description only, or every reference to NQF has two targets
    for module in ("nqf_lite.expansion", "nqf_lite.expansion.form"):
        assert ":ignore-module-all:" in api_docs.module_page(module)


@pytest.mark.parametrize("bound", ["at_most", "at_least"])
@pytest.mark.parametrize("tol", ["atol", "rtol"])
def test_a_tolerance_without_expected_is_refused(bound, tol):
    with pytest.raises(ValueError, match="tolerances of expected"):
        Claims("tol").check("k", "s", 0.5, **{bound: 1.0, tol: 0.1})


def test_table_takes_the_statements_from_words_by_key():
    c = Claims("tbl4")
    words = {"w-a": "the first in words", "w-b": "the second in words"}
    c.table(
        ("key", "measured"),
        [("w-b", 0.5), ("w-a", 0.25)],
        words=words,
        at_most=1.0,
    )
    assert [(r.key, r.statement) for r in c.records] == [
        ("w-b", "the second in words"),
        ("w-a", "the first in words"),
    ]
    # a row's own statement wins over words
    c.table(
        ("key", "statement", "measured"),
        [("w-c", "its own", 0.1)],
        words=words,
        at_most=1.0,
    )
    assert c.records[-1].statement == "its own"


def test_table_names_a_key_missing_from_words():
    with pytest.raises(ValueError, match="words has no statement.*w-c"):
        Claims("tbl5").table(
            ("key", "measured"), [("w-c", 0.5)], words={"w-a": "A"}, at_most=1
        )
