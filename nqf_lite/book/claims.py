"""The claims ledger: every quantitative statement a chapter checks.

A chapter creates one :class:`Claims` object and calls :meth:`Claims.check` for
each prediction it measures.  ``check`` asserts the claim (so an executed
notebook fails, and with it nbval and the book build, when the science breaks),
glues the measured value for the prose (``{glue:text}`key`:.3g``), and, when
the environment variable ``NQF_CLAIMS_DIR`` names a folder, appends a JSON
record that the book's ledger page collects at build time.

Three kinds of claim are told apart: a *prediction* of the theory (the
default: a measured number the theory predicts, with a tolerance set by
seeds, model error or round-off), an *identity* (an exact equality of the
theory, such as a closed-form structure matrix against autograd, checked by an
independent route to round-off), and a check of the *code* (bookkeeping, or a
property true by construction, such as "the data commute" for data built to
commute).  The ledger counts them separately, so its count of predictions is
honest.

Cells can be re-run.  Checking a key again in a later cell execution replaces
the earlier record (a student re-running a cell).  Within one execution of a
cell, in plain Python (no cells: the whole script is one execution, whether or
not an IPython shell was started on the way), and anywhere in the book build
(``NQF_CLAIMS_DIR`` set, where every cell runs once), a key used twice is an
error.

A notebook read outside the book (the reader editions a launch button opens)
cannot show glued numbers in its text; :func:`show_numbers` makes every glued
value that the text quotes appear under the cell that computes it instead.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from nqf_lite.book.claim_tables import (
    CHECK_ARGS,
    ClaimFailed,
    ClaimTables,
    as_float,
)
from nqf_lite.book.glue import execution, glue, show_numbers

__all__ = [
    "Claim",
    "ClaimFailed",
    "Claims",
    "CHECK_ARGS",
    "CLAIMS_DIR_ENV",
    "KINDS",
    "glue",
    "show_numbers",
]

CLAIMS_DIR_ENV = "NQF_CLAIMS_DIR"
#: what a claim is: a prediction of the theory, an exact identity checked by an
#: independent route, or a check of the code (true by construction)
KINDS = ("prediction", "identity", "code")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")


@dataclass(frozen=True)
class Claim:
    """One checked statement (a row of the ledger)."""

    chapter: str
    key: str
    statement: str
    source: str
    prediction: str
    measured: float
    criterion: str
    passed: bool
    n_seeds: int = 1
    spread: float | None = None
    margin: float | None = None
    kind: str = "prediction"
    seed: int | None = None
    extra: dict = field(default_factory=dict)


def _finite_bound(name: str, value: object) -> float:
    b = as_float(name, value)
    if not math.isfinite(b):
        raise ValueError(
            f"{name} must be finite (a bound that cannot fail checks "
            f"nothing), got {value!r}"
        )
    return b


def _n_seeds(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"n_seeds must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"n_seeds must be >= 1, got {value!r}")
    return int(value)


def _margin(m, expected, atol, rtol, at_most, at_least) -> float | None:
    """Fraction of the tolerance the measurement uses (0 = on target, 1 = at
    the edge).

    For ``expected``: ``|m - e| / tol``.  For a positive bound ``b``: ``m / b``
    (``at_most``) or ``b / m`` (``at_least``).  ``None`` when that ratio has no
    meaning (a bound or measurement that is zero or negative).
    """
    if not math.isfinite(m):
        return None
    if expected is not None:
        e = float(expected)
        tol = (atol or 0.0) + (rtol or 0.0) * abs(e)
        return abs(m - e) / tol if tol > 0 else (0.0 if m == e else math.inf)
    if at_most is not None:
        b = float(at_most)
        if b > 0 and m >= 0:
            return m / b
        return None
    b = float(at_least)
    if b > 0 and m > 0:
        return b / m
    return None


class Claims(ClaimTables):
    """The ledger of one chapter.

    :meth:`check` asserts one claim; :meth:`~.ClaimTables.table` (a table of
    claims) and :meth:`~.ClaimTables.slope` (a log-log slope) come from
    :class:`~nqf_lite.book.claim_tables.ClaimTables`.

    Parameters
    ----------
    chapter : str
        The chapter's document name under ``notebooks/`` without extension,
        e.g. ``"01_symmetry"``; the ledger links the claim to that page.
    """

    def __init__(self, chapter: str) -> None:
        if not isinstance(chapter, str):
            raise TypeError(f"chapter must be a string, got {chapter!r}")
        if not _NAME.match(chapter):
            raise ValueError(
                "chapter must be a file name of letters, digits, '-' and '_' "
                "(it names the "
                f"ledger file in the claims folder), got {chapter!r}"
            )
        self.chapter = chapter
        self.records: list[Claim] = []
        self._executions: dict[
            str, object
        ] = {}  # key -> cell execution that checked it

    def check(
        self,
        key: str,
        statement: str,
        measured: float,
        *,
        expected: float | None = None,
        atol: float | None = None,
        rtol: float | None = None,
        at_most: float | None = None,
        at_least: float | None = None,
        source: str = "",
        prediction: str | None = None,
        n_seeds: int = 1,
        spread: float | None = None,
        kind: str = "prediction",
    ) -> float:
        """Assert one quantitative claim, record it and glue the measurement.

        Exactly one criterion is given: ``expected`` with ``atol`` and/or
        ``rtol`` (``|measured - expected| <= atol + rtol*|expected|``), or an
        upper bound ``at_most``, or a lower bound ``at_least``.

        Parameters
        ----------
        key : str
            Unique glue key, also the ledger's anchor (letters, digits,
            ``-_``).
        statement : str
            The claim in words, e.g. ``"tanh MLP: |f - NQF| = O(eps^4)"``.
        measured : float
            The number the notebook measured.
        expected, atol, rtol, at_most, at_least : float, optional
            The criterion (see above).
        source : str
            Where the paper states it (``"Thm 1, Eq. 2"``).
        prediction : str, optional
            How the prediction reads in the ledger; built from the criterion
            when omitted.
        n_seeds : int
            How many independent draws (seeds) the measurement summarises; 1
            for a deterministic quantity or an identity.
        spread : float, optional
            The measured seed-to-seed spread (standard deviation over the
            ensemble) behind ``measured``; shown in the ledger.
        kind : {"prediction", "identity", "code"}
            ``"prediction"``: the theory predicts a measured value (dynamics,
            ensembles, rates, orders of convergence).  ``"identity"``: an
            exact equality of the theory (a closed form, an algebraic
            identity) checked by an independent route, to round-off.
            ``"code"``: a check of the code or of the set-up, true by
            construction (a row count, a flag, data built to commute do
            commute).  The ledger lists the three kinds apart.

        Returns
        -------
        float
            ``measured``, so the call can sit inside an expression.

        Raises
        ------
        ClaimFailed
            If the criterion is not met (or the measurement is NaN).
        ValueError
            If a tolerance or bound is NaN or infinite, ``atol``/``rtol`` is
            negative, ``kind`` is unknown, or ``key`` was already checked in
            the same cell execution (in the book build: anywhere in the
            chapter).
        """
        if not isinstance(key, str) or not _NAME.match(key):
            raise ValueError(
                f"key must be letters, digits, '-' or '_', got {key!r}"
            )
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self._forget_rerun(key)
        m = as_float("measured", measured)
        modes = [
            expected is not None,
            at_most is not None,
            at_least is not None,
        ]
        if sum(modes) != 1:
            raise ValueError(
                "give exactly one of expected=, at_most=, at_least="
            )
        if expected is None and (atol is not None or rtol is not None):
            raise ValueError(
                "atol= and rtol= are tolerances of expected=; a bound "
                "(at_most=, at_least=) takes none"
            )
        for name, value in (("atol", atol), ("rtol", rtol)):
            if value is not None and not (
                math.isfinite(as_float(name, value)) and value >= 0
            ):
                raise ValueError(
                    f"{name} must be finite and >= 0, got {value!r}"
                )
        if expected is not None:
            e = as_float("expected", expected)
            if not math.isfinite(e):
                raise ValueError(f"expected must be finite, got {expected!r}")
            if atol is None and rtol is None:
                raise ValueError("expected= needs atol= and/or rtol=")
            tol = (atol or 0.0) + (rtol or 0.0) * abs(e)
            passed = abs(m - e) <= tol
            parts = [f"atol {atol:.3g}"] if atol is not None else []
            parts += [f"rtol {rtol:.3g}"] if rtol is not None else []
            criterion = f"|measured − {e:.4g}| ≤ " + " + ".join(parts)
            pred = prediction or f"{e:.4g}"
        elif at_most is not None:
            b = _finite_bound("at_most", at_most)
            passed = m <= b
            criterion = f"measured ≤ {b:.3g}"
            pred = prediction or f"≤ {b:.3g}"
        else:
            b = _finite_bound("at_least", at_least)
            passed = m >= b
            criterion = f"measured ≥ {b:.3g}"
            pred = prediction or f"≥ {b:.3g}"
        passed = bool(passed) and math.isfinite(m)
        n = _n_seeds(n_seeds)
        sp = None if spread is None else as_float("spread", spread)
        if sp is not None and not (math.isfinite(sp) and sp >= 0):
            raise ValueError(f"spread must be finite and >= 0, got {spread!r}")
        margin = _margin(m, expected, atol, rtol, at_most, at_least)
        from nqf_lite.book.seeding import (
            base_seed,
        )  # the seed a reader needs to reproduce the claim

        claim = Claim(
            self.chapter,
            key,
            statement,
            source,
            pred,
            m,
            criterion,
            passed,
            n,
            sp,
            margin,
            kind,
            base_seed(),
        )
        self.records.append(claim)
        self._executions[key] = execution()
        self._write(claim)
        glue(key, m)
        if not passed:
            raise ClaimFailed(
                f"[{self.chapter}:{key}] {statement}: measured {m:.6g}, "
                f"criterion {criterion} not met"
            )
        return m

    def _forget_rerun(self, key: str) -> None:
        """Drop the record of ``key`` when a later cell execution checks it
        again.

        Raises ``ValueError`` when ``key`` was checked in this same execution,
        or anywhere in a book build (``NQF_CLAIMS_DIR`` set: each cell runs
        once there, so a repeat is a duplicate key, not a re-run).
        """
        if key not in self._executions:
            execution()  # watch the shell (if any) from the first check on
            return
        if (
            os.environ.get(CLAIMS_DIR_ENV)
            or self._executions[key] == execution()
        ):
            raise ValueError(
                f"claim key {key!r} is used twice in chapter {self.chapter!r}"
            )
        self.records = [c for c in self.records if c.key != key]
        del self._executions[key]

    def summary(self) -> str:
        """Check that the chapter recorded claims and that all passed; return
        one line.

        The closing cell of a chapter calls this instead of counting claims by
        hand. It raises :class:`ClaimFailed` when no claim was recorded or any
        failed, and returns e.g.
        ``"18 claims checked, all pass; see the claims ledger."`` for the
        reader.
        """
        if not self.records:
            raise ClaimFailed(f"chapter {self.chapter!r} recorded no claim")
        failed = [c.key for c in self.records if not c.passed]
        if failed:
            raise ClaimFailed(
                f"chapter {self.chapter!r}: claims failed: {', '.join(failed)}"
            )
        ens = sum(
            c.n_seeds > 1 for c in self.records if c.kind == "prediction"
        )
        code = sum(c.kind == "code" for c in self.records)
        ident = sum(c.kind == "identity" for c in self.records)
        n = len(self.records) - code - ident
        text = (
            f"{n} prediction{'s' if n != 1 else ''} checked, all pass "
            f"({ens} on ensembles of seeds)"
        )
        if ident:
            text += (
                f", {ident} identit{'ies' if ident != 1 else 'y'} checked by "
                "an independent route"
            )
        if code:
            text += f", and {code} check{'s' if code != 1 else ''} of the code"
        return text + "; every claim is listed in the claims ledger."

    def _write(self, claim: Claim) -> None:
        folder = os.environ.get(CLAIMS_DIR_ENV)
        if not folder:
            return
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        with open(path / f"{self.chapter}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(claim)) + "\n")
