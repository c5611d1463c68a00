"""Coding exercises: every judge rejects its wrong answers; every exercise sits
in its chapter.

The solutions themselves run in the chapters (the teacher's edition), under
``NQF_EXERCISES_STRICT=1``: nbval and the book build fail when a solution does
not pass its check.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from nqf_lite.book.exercises import (
    EXERCISES,
    Exercise,
    ExerciseWrong,
    NotAnswered,
    EQUATIONS,
    SLIPS,
    STRICT_ENV,
    check,
    register,
)
from nqf_lite.book.exercises._judges import (
    call_student,
    compare_arrays,
    compare_number,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CHECK_CALL = re.compile(r"""check\(\s*["'](ex-ch\d+-[a-z0-9\-]+)["']""")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def coding_exercises(path: Path) -> list[tuple[str, list[dict]]]:
    """``(key, cells from the exercise box to its check cell)`` for each coding
    exercise."""
    cells = _cells(path)
    out = []
    for i, cell in enumerate(cells):
        if "exercise-check" not in _tags(cell):
            continue
        m = CHECK_CALL.search(_src(cell))
        assert m, (
            f"{path.name}: check cell {cell.get('id')} does not call "
            "check('ex-...', ...)"
        )
        key = m.group(1)
        start = next(
            (
                j
                for j in range(i, -1, -1)
                if cells[j]["cell_type"] == "markdown"
                and re.search(
                    rf":label: {re.escape(key)}\s", _src(cells[j]) + "\n"
                )
            ),
            None,
        )
        assert start is not None, (
            f"{path.name}: no exercise box labelled {key} before its check "
            "cell"
        )
        out.append((key, cells[start : i + 1]))
    return out


# -----------------------------------------------------------------------------
# the registry


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_every_wrong_answer_is_rejected_with_a_hint(key):
    exercise = EXERCISES[key]
    for answer, given, *_ in exercise.wrong:
        hint = exercise.judge(answer, **given)
        assert isinstance(hint, str) and hint.strip(), (
            f"{key}: judge accepted a wrong answer {answer!r}"
        )
        with pytest.raises(ExerciseWrong, match=re.escape(key)):
            check(key, answer, **given)


SLIPPED = [
    (k, i)
    for k, e in sorted(EXERCISES.items())
    for i, w in enumerate(e.wrong)
    if len(w) == 3
]


def test_the_common_slips_are_listed():
    """Each kind of slip (sign, factor 2, log base) is exercised by several
    exercises' wrong answers."""
    kinds = [EXERCISES[k].wrong[i][2] for k, i in SLIPPED]
    assert set(kinds) == set(SLIPS), kinds
    assert all(kinds.count(kind) >= 3 for kind in SLIPS), kinds


@pytest.mark.parametrize(("key", "index"), SLIPPED)
def test_every_listed_slip_gets_its_specific_hint(key, index):
    """A sign slip is told its sign, a missing 1/2 its factor, a log10 its
    base: never a generic hint."""
    answer, given, slip = EXERCISES[key].wrong[index]
    hint = EXERCISES[key].judge(answer, **given)
    assert isinstance(hint, str), f"{key}: the {slip} slip is accepted"
    assert any(phrase in hint for phrase in SLIPS[slip]), (
        f"{key}: the {slip} slip gets the hint {hint!r}"
    )
    assert "does not match" not in hint and "constant factor" not in hint, hint
    others = [
        p for kind, phrases in SLIPS.items() if kind != slip for p in phrases
    ]
    assert not any(p in hint for p in others), (
        f"{key}: the {slip} slip gets another slip's hint: {hint!r}"
    )


@pytest.mark.parametrize(
    ("ratio", "slip"),
    [
        (-1.0, "sign"),
        (2.0, "factor 2"),
        (0.5, "factor 2"),
        (1 / np.log(10), "log base"),
        (np.log(10), "log base"),
        (1 / np.log(2), "log base"),
    ],
)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_compare_arrays_names_each_common_slip(ratio, slip, shape):
    expected = (
        np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape) ** 1.5
    )
    hint = compare_arrays(ratio * expected, expected, what="x")
    assert any(p in hint for p in SLIPS[slip]), hint
    assert compare_arrays(1.7 * expected, expected, what="x") is not None


def _book():
    import sys

    sys.path.insert(0, str(ROOT / "_ext"))
    import editions

    return editions.load_book(ROOT)


def test_equations_are_cited_as_the_pages_number_them():
    """A note or a hint cites an equation by the number the reader sees (Eq.
    (4.4)), never the paper's."""
    book = _book()
    for label, number in EQUATIONS.items():
        assert (
            label in book.labels and book.labels[label].kind == "equation"
        ), f"no equation {label}"
        assert book.labels[label].number == number, (
            f"{label} is Eq. ({book.labels[label].number}) in the book, "
            f"EQUATIONS says ({number})"
        )
    paper_style = re.compile(
        r"\bEqs?\.\s*\d|\bEq\s*\d|\bProp\.\s*\d+\s*(?!of the "
        r"paper)|\bApp\.\s*[A-C]"
    )
    texts = [(k, e.task) for k, e in EXERCISES.items()]
    for key, exercise in EXERCISES.items():
        texts += [
            (key, exercise.judge(w[0], **w[1]) or "") for w in exercise.wrong
        ]
    for key, text in texts:
        assert not paper_style.search(text), (
            f"{key}: {text!r} cites the paper's numbering"
        )
    tasks = " ".join(e.task for e in EXERCISES.values())
    assert len(re.findall(r"Eqs?\. \(\d+\.\d+\)", tasks)) >= 6, (
        "the tasks cite the book's equations"
    )


def test_not_answered_note_cites_the_book_equation(capsys, monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    verdict = check("ex-ch4-closure", ...)
    assert not verdict
    assert "Eqs. (4.4)–(4.5)" in capsys.readouterr().out


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_every_exercise_is_in_its_chapter_with_scaffold_solution_and_check(
    key,
):
    chapter = EXERCISES[key].chapter
    # a chapter may span pages (a parent page and its sub-pages): the key lives
    # on exactly one
    paths = [p for p in CHAPTERS if int(p.name[:2]) == chapter]
    assert paths, f"{key}: no chapter {chapter}"
    homes = [p for p in paths if key in dict(coding_exercises(p))]
    assert len(homes) == 1, (
        f"{key}: check cells in {[p.name for p in homes]}, want one page of "
        f"chapter {chapter}"
    )
    block = dict(coding_exercises(homes[0]))[key]
    scaffold = [c for c in block if "scaffold" in _tags(c)]
    solution = [c for c in block if "solution" in _tags(c)]
    assert len(scaffold) == 1 and "remove-cell" in _tags(scaffold[0]), (
        f"{key}: one scaffold cell, tagged remove-cell"
    )
    assert "..." in _src(scaffold[0]), (
        f"{key}: the scaffold leaves the answer as ... for the student"
    )
    assert solution, f"{key}: no solution cell"
    text = "".join(_src(c) for c in block if c["cell_type"] == "markdown")
    assert "{solution-start}" in text and "{solution-end}" in text, (
        f"{key}: solution not folded"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_check_cell_names_a_registered_exercise(path):
    for key, _ in coding_exercises(path):
        assert key in EXERCISES, (
            f"{path.name}: check cell for unregistered exercise {key}"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_has_two_coding_exercises(path):
    assert len(coding_exercises(path)) >= 2, (
        f"{path.name}: fewer than two coding exercises"
    )


# -----------------------------------------------------------------------------
# check()


def _toy() -> Exercise:
    def judge(answer, x):
        return compare_arrays(answer, np.outer(x, x) / 2, what="A")

    return Exercise(
        "ex-ch99-toy",
        "A = x x^T / 2",
        judge,
        given=("x",),
        wrong=((np.eye(2), {"x": np.ones(2)}),),
    )


def test_check_right_wrong_and_unanswered(capsys, monkeypatch):
    monkeypatch.setitem(EXERCISES, "ex-ch99-toy", _toy())
    monkeypatch.delenv(STRICT_ENV, raising=False)
    x = np.array([1.0, 2.0])
    right = np.array([[0.5, 1.0], [1.0, 2.0]])  # written out by hand
    verdict = check("ex-ch99-toy", right, x=x)
    assert verdict and capsys.readouterr().out == "✓ ex-ch99-toy: correct.\n"
    with pytest.raises(ExerciseWrong, match="twice what it should be"):
        check("ex-ch99-toy", 2 * right, x=x)
    with pytest.raises(ExerciseWrong, match="constant factor"):
        check("ex-ch99-toy", 3 * right, x=x)
    with pytest.raises(ExerciseWrong, match="shape"):
        check("ex-ch99-toy", right[0], x=x)
    unanswered = check("ex-ch99-toy", ..., x=x)
    assert not unanswered and "not answered yet" in capsys.readouterr().out
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(NotAnswered):
        check("ex-ch99-toy", ..., x=x)


def test_check_names_missing_and_unknown_inputs_and_keys(monkeypatch):
    monkeypatch.setitem(EXERCISES, "ex-ch99-toy", _toy())
    with pytest.raises(TypeError, match="x=x"):
        check("ex-ch99-toy", np.eye(2))
    with pytest.raises(TypeError, match="unknown input"):
        check("ex-ch99-toy", np.eye(2), x=np.ones(2), y=1)
    with pytest.raises(KeyError, match="ex-ch99-toy"):
        check("ex-ch99-nope", 1)
    with pytest.raises(TypeError, match="key"):
        check(4, 1)


def test_exercise_definition_is_validated(monkeypatch):
    good = _toy()
    with pytest.raises(ValueError, match="key"):
        Exercise("ch4 closure", "t", good.judge, wrong=good.wrong)
    with pytest.raises(ValueError, match="wrong answer"):
        Exercise("ex-ch4-a", "t", good.judge)
    with pytest.raises(TypeError, match="judge"):
        Exercise("ex-ch4-a", "t", 3, wrong=good.wrong)
    monkeypatch.setitem(EXERCISES, "ex-ch99-toy", good)
    with pytest.raises(ValueError, match="twice"):
        register(good)


@pytest.mark.parametrize(
    "answer, hint",
    [
        (np.array([[1.0, 2.0], [3.0, 4.0]]).T, "transpose"),
        (-np.array([[1.0, 2.0], [3.0, 4.0]]), "sign"),
        (np.zeros(3), "shape"),
        ("abc", "array of numbers"),
        (np.array([[1.0, np.nan], [3.0, 4.0]]), "NaN"),
        (np.array([[1.0, 2.0], [3.0, 4.0]]) * (1 + 1j), "complex"),
        (np.array([[1.0, 2.0], [3.0, 5.0]]), "does not match"),
    ],
)
def test_compare_arrays_hints(answer, hint):
    expected = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert compare_arrays(expected.copy(), expected, what="A") is None
    assert hint in compare_arrays(answer, expected, what="A")


def test_compare_number_and_call_student():
    assert compare_number(2.0, 2.0, what="t") is None
    assert "one number" in compare_number([1.0, 2.0], 2.0, what="t")
    assert "factor" in compare_number(4.0, 2.0, what="t")
    value, hint = call_student(lambda a: a + 1, 1, what="f")
    assert (value, hint) == (2, None)
    value, hint = call_student(lambda a: 1 / 0, 1, what="f")
    assert value is None and "ZeroDivisionError" in hint
    assert "function" in call_student(3, what="f")[1]
