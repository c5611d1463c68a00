"""Coding exercises that check themselves.

Each chapter of the book ends with exercises.  In a *coding* exercise the
student writes a few lines (a structure matrix, a switch-on time, an exponent)
and hands the result to
:func:`check`, which compares it with what the package computes and answers
right or wrong, with a hint that points at the idea, never at the solution::

    from nqf_lite.book.exercises import check
    A = ...                       # the student's answer
    check("ex-ch2-quadratic", A)  # ✓ correct, or an ExerciseWrong error with a
    hint

The judges live in this subpackage, one module per chapter (``ch01``, ``ch02``,
...); every
module of the subpackage is imported here, so its exercises are registered.
Each
:class:`Exercise` also lists wrong answers that its judge must reject: the unit
tests check that, and the book build runs every solution through :func:`check`,
so every exercise is known to be solvable and every judge known to reject a
wrong answer.

An answer left as ``...`` (the student's scaffold, untouched) is "not answered
yet": a note, not an error, so a student edition can be run from top to bottom.
The book build sets ``NQF_EXERCISES_STRICT=1``, under which an unanswered
exercise is an error too.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EXERCISES",
    "Exercise",
    "ExerciseWrong",
    "NotAnswered",
    "STRICT_ENV",
    "Verdict",
    "check",
    "eq",
    "register",
]

#: environment variable: when "1", an unanswered exercise raises (the book
#: build and the tests)
STRICT_ENV = "NQF_EXERCISES_STRICT"
_KEY = re.compile(r"^ex-ch\d{1,2}-[a-z0-9][a-z0-9\-]*$")

#: a judge: ``judge(answer, **given) -> None`` when right, else a hint (never
#: the solution)
Judge = Callable[..., "str | None"]


#: the common slips a judge recognises, with the words its hint must contain
#: (one of them)
SLIPS: dict[str, tuple[str, ...]] = {
    "sign": ("wrong sign",),
    "factor 2": ("twice what it should be", "half what it should be"),
    "log base": ("natural logarithm",),
}

#: the numbers the book's pages give the equations the exercises cite (label ->
#: number). A note or a hint speaks the reader's language: "Eq. (4.4)" as the
#: page shows it, not the paper's numbering. tests/test_exercises.py checks
#: every entry against the chapters' own numbering.
EQUATIONS: dict[str, str] = {
    "eq-ch1-general": "1.6",
    "eq-ch4-dmu": "4.4",
    "eq-ch4-dM": "4.5",
    "eq-ch4-ntk": "4.9",
    "eq-ch6-switch-on": "6.5",
    "eq-ch6-thm16-constants": "6.12",
    "eq-ch7-keff": "7.4",
    "eq-ch7-fourier-modes": "7.8",
    "eq-ch8-tstar": "8.5",
    "eq-ch9-dmu": "9.6",
    "eq-ch9-dM": "9.7",
}


def eq(*labels: str) -> str:
    """``"Eq. (4.4)"`` or ``"Eqs. (4.4)–(4.5)"``: equations as the book's pages
    number them."""
    numbers = [f"({EQUATIONS[label]})" for label in labels]
    if len(numbers) == 1:
        return f"Eq. {numbers[0]}"
    return "Eqs. " + (
        "–".join(numbers) if len(numbers) == 2 else ", ".join(numbers)
    )


class ExerciseWrong(AssertionError):
    """The answer to an exercise is wrong; the message carries a hint."""


class NotAnswered(AssertionError):
    """An exercise was left unanswered under ``NQF_EXERCISES_STRICT=1``."""


@dataclass(frozen=True)
class Exercise:
    """One coding exercise: its key, its judge, and answers the judge must
    reject.

    Parameters
    ----------
    key : str
        ``"ex-ch<N>-<name>"``, the label of the exercise box in chapter N.
    task : str
        What the student computes, in one line (shown by :func:`check` when
        unanswered).
    judge : callable
        ``judge(answer, **given) -> str | None``: ``None`` when ``answer`` is
        right, else a hint.  It never raises on a wrong answer of the right
        kind; an answer of the wrong kind (shape, type) gets a hint that says
        so.
    given : tuple of str
        The names of the inputs :func:`check` must receive along with the
        answer (the data of the student's notebook, e.g. ``X``), in
        ``check(key, answer, X=X)``; empty when the exercise fixes its own
        data.
    wrong : tuple of (answer, dict) or (answer, dict, slip)
        Wrong answers with the inputs to judge them on; the unit tests assert
        that the judge rejects each one.  At least one.  ``slip`` names a
        common slip (a key of :data:`SLIPS`: ``"sign"``, ``"factor 2"``, ``"log
        base"``) whose specific hint the judge must give.
    """

    key: str
    task: str
    judge: Judge
    given: tuple[str, ...] = ()
    wrong: tuple[tuple[Any, Mapping[str, Any]], ...] = field(
        default=(), repr=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise ValueError(
                "key must look like 'ex-ch4-name' (lower case), got "
                f"{self.key!r}"
            )
        if not isinstance(self.task, str) or not self.task.strip():
            raise ValueError(
                f"task must be a non-empty sentence, got {self.task!r}"
            )
        if not callable(self.judge):
            raise TypeError(f"judge must be callable, got {self.judge!r}")
        if not isinstance(self.given, tuple) or not all(
            isinstance(g, str) for g in self.given
        ):
            raise TypeError(
                f"given must be a tuple of input names, got {self.given!r}"
            )
        if not self.wrong:
            raise ValueError(
                f"{self.key}: list at least one wrong answer the judge must "
                "reject"
            )
        for answer_given in self.wrong:
            if not (
                isinstance(answer_given, tuple)
                and len(answer_given) in (2, 3)
                and isinstance(answer_given[1], Mapping)
            ):
                raise TypeError(
                    f"{self.key}: each wrong entry is (answer, given dict[, "
                    f"slip]), got {answer_given!r}"
                )
            if len(answer_given) == 3 and answer_given[2] not in SLIPS:
                raise ValueError(
                    f"{self.key}: a slip is one of {sorted(SLIPS)}, got "
                    f"{answer_given[2]!r}"
                )

    @property
    def slips(self) -> list[tuple[Any, Mapping[str, Any], str]]:
        """The wrong answers that are a common slip (sign, factor 2, log base):
        ``(answer, given, slip)``.

        Each must get the slip's own hint, not a generic one (the unit tests
        check it).
        """
        return [w for w in self.wrong if len(w) == 3]

    @property
    def chapter(self) -> int:
        """The chapter number, read from the key."""
        return int(self.key.split("-")[1][2:])


#: every registered exercise, by key
EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to :data:`EXERCISES` (a key is registered once)."""
    if not isinstance(exercise, Exercise):
        raise TypeError(
            f"register takes an Exercise, got {type(exercise).__name__}"
        )
    if exercise.key in EXERCISES:
        raise ValueError(f"exercise {exercise.key!r} is registered twice")
    EXERCISES[exercise.key] = exercise
    return exercise


@dataclass(frozen=True)
class Verdict:
    """What :func:`check` found: truthy when the answer is right."""

    key: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Show nothing as a cell's value: :func:`check` has printed the
        verdict already."""


def _unanswered(answer: Any) -> bool:
    """True for the untouched scaffold: ``...``, or a tuple/list/dict holding
    ``...``."""
    if answer is Ellipsis:
        return True
    if isinstance(answer, (tuple, list)):
        return any(a is Ellipsis for a in answer)
    if isinstance(answer, dict):
        return any(a is Ellipsis for a in answer.values())
    return False


def _lookup(key: object) -> Exercise:
    if not isinstance(key, str):
        raise TypeError(
            "key must be an exercise key such as 'ex-ch4-closure', got "
            f"{key!r}"
        )
    try:
        return EXERCISES[key]
    except KeyError:
        near = sorted(
            k for k in EXERCISES if k.split("-")[:2] == key.split("-")[:2]
        )
        hint = (
            f" Exercises of that chapter: {', '.join(near)}." if near else ""
        )
        raise KeyError(f"no exercise {key!r}.{hint}") from None


def check(key: str, answer: Any, **given: Any) -> Verdict:
    """Judge the answer to exercise ``key``.

    Parameters
    ----------
    key : str
        The exercise, e.g. ``"ex-ch4-closure"`` (the label of its box).
    answer : object
        The student's answer: a number, an array, a function, ... as the
        exercise asks. ``...`` means "not answered yet".
    **given
        The inputs the exercise is judged on, when it names some
        (``Exercise.given``).

    Returns
    -------
    Verdict
        Truthy when right; it prints as ``✓ <key>: correct.``.  An unanswered
        exercise gives a falsy verdict with a note (unless
        ``NQF_EXERCISES_STRICT=1``).

    Raises
    ------
    ExerciseWrong
        When the answer is wrong: the message carries the judge's hint.
    NotAnswered
        When the answer is ``...`` and ``NQF_EXERCISES_STRICT=1``.
    KeyError
        For an unknown key (the message lists the chapter's exercises).
    TypeError
        When an input the exercise needs is missing or an unknown one is
        passed.
    """
    exercise = _lookup(key)
    missing = [g for g in exercise.given if g not in given]
    extra = sorted(set(given) - set(exercise.given))
    if missing or extra:
        raise TypeError(
            f"{key} is judged on {', '.join(exercise.given) or 'no inputs'}: "
            + (
                f"pass {', '.join(f'{g}={g}' for g in missing)}"
                if missing
                else ""
            )
            + ("; " if missing and extra else "")
            + (f"unknown input(s) {', '.join(extra)}" if extra else "")
        )
    if _unanswered(answer):
        note = (
            f"… {key}: not answered yet ({exercise.task}). Replace the ... "
            "and run this cell again."
        )
        if os.environ.get(STRICT_ENV) == "1":
            raise NotAnswered(note)
        print(note)
        return Verdict(key, False, note)
    hint = exercise.judge(answer, **given)
    if hint is not None:
        raise ExerciseWrong(f"✗ {key}: not yet. {hint}")
    verdict = Verdict(key, True, f"✓ {key}: correct.")
    print(verdict.message)
    return verdict


def _register_chapters() -> None:
    """Import every module of this subpackage (``ch01``, ...): each registers
    its exercises."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_register_chapters()
