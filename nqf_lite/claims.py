"""The claims ledger: every quantitative statement a chapter checks.

A chapter creates one :class:`Claims` object and calls :meth:`Claims.check` for
each prediction it measures.  ``check`` asserts the claim (so an executed
notebook fails, and with it nbval and the book build, when the science breaks),
glues the measured value for the prose (``{glue:text}`key`:.3g``), and, when the
environment variable ``NQF_CLAIMS_DIR`` names a folder, appends a JSON record
that the book's ledger page collects at build time.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Claim", "ClaimFailed", "Claims", "CLAIMS_DIR_ENV", "glue"]

CLAIMS_DIR_ENV = "NQF_CLAIMS_DIR"


class ClaimFailed(AssertionError):
    """Raised when a measured number disagrees with its prediction."""


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
    extra: dict = field(default_factory=dict)


def _as_float(name: str, value: object) -> float:
    try:
        out = float(np.asarray(value, dtype=float))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real scalar, got {value!r}") from exc
    return out


def glue(key: str, value: object, display: bool = False) -> None:
    """Glue ``value`` under ``key`` for the prose (``{glue:text}`key`:.3g``).

    A thin wrapper of ``myst_nb.glue`` that turns numpy scalars into Python
    numbers (so format specs work) and does nothing where myst-nb is not
    installed (Colab, Binder), so chapters run anywhere.
    """
    if isinstance(value, np.generic):
        value = value.item()
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # a bare kernel: there is no page to glue into
        return
    _myst_glue(key, value, display=display)


def _n_seeds(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"n_seeds must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"n_seeds must be >= 1, got {value!r}")
    return int(value)


def _margin(m, expected, atol, rtol, at_most, at_least) -> float | None:
    """Fraction of the tolerance the measurement uses (0 = on target, 1 = at the edge).

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


class Claims:
    """The ledger of one chapter.

    Parameters
    ----------
    chapter : str
        The chapter's document name under ``notebooks/`` without extension,
        e.g. ``"01_symmetry"``; the ledger links the claim to that page.
    """

    def __init__(self, chapter: str) -> None:
        if not isinstance(chapter, str) or not chapter:
            raise TypeError(f"chapter must be a non-empty string, got {chapter!r}")
        self.chapter = chapter
        self.records: list[Claim] = []

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
    ) -> float:
        """Assert one quantitative claim, record it and glue the measurement.

        Exactly one criterion is given: ``expected`` with ``atol`` and/or
        ``rtol`` (``|measured - expected| <= atol + rtol*|expected|``), or an
        upper bound ``at_most``, or a lower bound ``at_least``.

        Parameters
        ----------
        key : str
            Unique glue key, also the ledger's anchor (letters, digits, ``-_``).
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

        Returns
        -------
        float
            ``measured``, so the call can sit inside an expression.

        Raises
        ------
        ClaimFailed
            If the criterion is not met (or the measurement is NaN).
        """
        if not isinstance(key, str) or not key.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"key must be letters, digits, '-' or '_', got {key!r}")
        if any(c.key == key for c in self.records):
            raise ValueError(f"claim key {key!r} is used twice in chapter {self.chapter!r}")
        m = _as_float("measured", measured)
        modes = [expected is not None, at_most is not None, at_least is not None]
        if sum(modes) != 1:
            raise ValueError("give exactly one of expected=, at_most=, at_least=")
        if expected is not None:
            e = _as_float("expected", expected)
            if atol is None and rtol is None:
                raise ValueError("expected= needs atol= and/or rtol=")
            tol = (atol or 0.0) + (rtol or 0.0) * abs(e)
            passed = abs(m - e) <= tol
            parts = [f"atol {atol:.3g}"] if atol is not None else []
            parts += [f"rtol {rtol:.3g}"] if rtol is not None else []
            criterion = f"|measured − {e:.4g}| ≤ " + " + ".join(parts)
            pred = prediction or f"{e:.4g}"
        elif at_most is not None:
            b = _as_float("at_most", at_most)
            passed = m <= b
            criterion = f"measured ≤ {b:.3g}"
            pred = prediction or f"≤ {b:.3g}"
        else:
            b = _as_float("at_least", at_least)
            passed = m >= b
            criterion = f"measured ≥ {b:.3g}"
            pred = prediction or f"≥ {b:.3g}"
        passed = bool(passed) and math.isfinite(m)
        n = _n_seeds(n_seeds)
        sp = None if spread is None else _as_float("spread", spread)
        if sp is not None and not (math.isfinite(sp) and sp >= 0):
            raise ValueError(f"spread must be finite and >= 0, got {spread!r}")
        margin = _margin(m, expected, atol, rtol, at_most, at_least)
        claim = Claim(self.chapter, key, statement, source, pred, m, criterion, passed, n, sp, margin)
        self.records.append(claim)
        self._write(claim)
        glue(key, m)
        if not passed:
            raise ClaimFailed(
                f"[{self.chapter}:{key}] {statement}: measured {m:.6g}, "
                f"criterion {criterion} not met"
            )
        return m

    def summary(self) -> str:
        """Check that the chapter recorded claims and that all passed; return one line.

        The closing cell of a chapter calls this instead of counting claims by
        hand.  It raises :class:`ClaimFailed` when no claim was recorded or any
        failed, and returns e.g. ``"18 claims checked, all pass; see the claims
        ledger."`` for the reader.
        """
        if not self.records:
            raise ClaimFailed(f"chapter {self.chapter!r} recorded no claim")
        failed = [c.key for c in self.records if not c.passed]
        if failed:
            raise ClaimFailed(f"chapter {self.chapter!r}: claims failed: {', '.join(failed)}")
        ens = sum(c.n_seeds > 1 for c in self.records)
        n = len(self.records)
        return (
            f"{n} claim{'s' if n != 1 else ''} checked, all pass "
            f"({ens} on ensembles of seeds); every claim is listed in the claims ledger."
        )

    def _write(self, claim: Claim) -> None:
        folder = os.environ.get(CLAIMS_DIR_ENV)
        if not folder:
            return
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        with open(path / f"{self.chapter}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(claim)) + "\n")
