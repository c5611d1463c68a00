"""Claims checked as tables, and a log-log slope checked as a claim.

The methods :meth:`ClaimTables.table` and
:meth:`ClaimTables.slope` of the ledger: both record each
claim through :meth:`~nqf_lite.book.claims.Claims.check`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["CHECK_ARGS", "ClaimFailed", "ClaimTables", "as_float"]


#: the arguments of :meth:`~nqf_lite.book.claims.Claims.check`, the columns a
#: claims table may have
CHECK_ARGS = (
    "key",
    "statement",
    "measured",
    "expected",
    "atol",
    "rtol",
    "at_most",
    "at_least",
    "source",
    "prediction",
    "n_seeds",
    "spread",
    "kind",
)


class ClaimFailed(AssertionError):
    """Raised when a measured number disagrees with its prediction."""


def as_float(name: str, value: object) -> float:
    """``value`` as a float; a ``TypeError`` naming ``name`` otherwise."""
    try:
        out = float(np.asarray(value, dtype=float))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a real scalar, got {value!r}"
        ) from exc
    return out


class ClaimTables:
    """What :class:`~nqf_lite.book.claims.Claims` checks beyond one number."""

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[object]],
        words: Mapping[str, str] | None = None,
        **common: object,
    ) -> list[float]:
        """Check a table of claims: one row a claim, one record each.

        A chapter's claims after an experiment are a table, not a wall of
        calls: ``columns`` names the arguments of :meth:`check` that vary
        from row to row, ``common`` gives those shared by every row. Each row
        is checked as :meth:`check` would check it and keeps its own record
        in the ledger; every row is checked even when an earlier one fails,
        and one :class:`ClaimFailed` then names all the failed keys.

        Parameters
        ----------
        columns : sequence of str
            Names of :meth:`check`'s arguments, e.g.
            ``("key", "statement", "measured", "at_most")``;
            ``key``, ``statement`` and ``measured`` must be among ``columns``
            or ``common``.
        rows : iterable of sequences
            One sequence of values a claim, in the order of ``columns``.
        words : mapping of str to str, optional
            The claims in words, by key: each row's ``statement`` when
            neither ``columns`` nor ``common`` gives one. Lets a chapter state
            its claims in a block above the table of their numbers.
        **common
            Arguments of :meth:`check` shared by all rows (``source=``,
            ``kind=``, a tolerance). A row's own value wins.

        Returns
        -------
        list of float
            The measured values, in row order.

        Examples
        --------
        >>> claims.table(  # doctest: +SKIP
        ...     ("key", "statement", "measured"),
        ...     [("ch6-C", "C = I", err_C), ("ch6-r", "r recovered", err_r)],
        ...     at_most=1e-12, source="Eq. 37", kind="code")
        >>> WORDS = {"ch6-C": "C = I", "ch6-r": "r recovered"}
        >>> claims.table(  # doctest: +SKIP
        ...     ("key", "measured"), [("ch6-C", err_C), ("ch6-r", err_r)],
        ...     words=WORDS, at_most=1e-12, source="Eq. 37", kind="code")
        """
        columns = tuple(columns)
        allowed = set(CHECK_ARGS)
        unknown = [c for c in (*columns, *common) if c not in allowed]
        if unknown:
            raise ValueError(
                f"columns and common must name arguments of check "
                f"({', '.join(CHECK_ARGS)}), got {unknown}"
            )
        if len(set(columns)) != len(columns):
            raise ValueError(f"columns must not repeat a name, got {columns}")
        given = {*columns, *common, *(["statement"] if words else [])}
        missing = [
            c for c in ("key", "statement", "measured") if c not in given
        ]
        if missing:
            raise ValueError(f"columns or common must give {missing}")
        rows = [tuple(r) for r in rows]
        if not rows:
            raise ValueError("rows must hold at least one claim")
        for i, row in enumerate(rows):
            if len(row) != len(columns):
                raise ValueError(
                    f"rows[{i}] has {len(row)} values for {len(columns)} "
                    f"columns {columns}"
                )
        values, failures = [], []
        for row in rows:
            args = {**common, **dict(zip(columns, row))}
            key = args.pop("key")
            if "statement" in args:
                statement = args.pop("statement")
            elif key in words:
                statement = words[key]
            else:
                raise ValueError(f"words has no statement for the key {key!r}")
            measured = args.pop("measured")
            try:
                values.append(self.check(key, statement, measured, **args))
            except ClaimFailed as err:
                failures.append(str(err))
                values.append(float(measured))
        if failures:
            raise ClaimFailed("\n".join(failures))
        return values

    def slope(
        self,
        key: str,
        statement: str,
        x: object,
        y: object,
        *,
        expected: float,
        model_error: float,
        window: tuple[float, float] | None = None,
        source: str = "",
        kind: str = "prediction",
    ) -> np.ndarray:
        """Check the mean log-log slope of an ensemble of curves.

        The orders the paper predicts are exponents: the error of the
        quadratic form falls as ``eps^3`` (``eps^4`` with a per-unit Z2
        symmetry; Thm 1, Eqs. 2-3), attention's remainder as ``eps^4``
        (Prop. 2).  Each row ``y[j]`` is one member of an ensemble (a seed,
        a random draw) measured on the grid ``x``; its slope of ``log y``
        against ``log x`` is fitted on ``window`` by
        :func:`nqf_lite.dynamics.scaling.fit_loglog_slopes`.  The claim
        (one :meth:`check`) is the mean slope over the members, within
        three standard errors of the mean plus ``model_error``:

        ``|mean - expected| <= 3 sd / sqrt(n) + model_error``,

        recorded with ``n_seeds = n`` members and ``spread = sd`` (sample
        standard deviation, ``ddof=1``).

        Parameters
        ----------
        key, statement : str
            As for :meth:`check`.
        x : array_like, shape (T,)
            Strictly increasing positive grid (a weight scale, a time).
        y : array_like, shape (n, T)
            Positive values, one curve a row; ``n >= 2`` members (the
            tolerance needs their spread).
        expected : float
            The predicted exponent.
        model_error : float
            Bound (``>= 0``) on the bias of a slope fitted on a finite
            window, from the next order of the expansion.
        window : (float, float), optional
            The fit window inside ``[x[0], x[-1]]``; the whole grid when
            omitted.
        source, kind : str
            As for :meth:`check`.

        Returns
        -------
        ndarray, shape (n,)
            The fitted slope of every member (the claim is their mean).

        Raises
        ------
        ClaimFailed
            If the mean slope misses ``expected`` by more than the
            tolerance.
        ValueError
            If ``y`` is not a 2-D array of at least two rows matching
            ``x``, ``model_error`` is negative or not finite, or the data
            or window do not fit (see ``fit_loglog_slope``).
        """
        from nqf_lite.dynamics.scaling import fit_loglog_slopes

        t = np.asarray(x, dtype=float)
        if t.ndim != 1 or t.size < 2:
            raise ValueError(
                f"x must be a 1-D grid of >= 2 points, got shape {t.shape}"
            )
        curves = np.asarray(y, dtype=float)
        if curves.ndim != 2 or curves.shape[0] < 2:
            raise ValueError(
                "y must be 2-D, one curve a row, with >= 2 rows (the "
                f"tolerance needs a spread), got shape {curves.shape}"
            )
        if curves.shape[1] != t.size:
            raise ValueError(
                f"y must have one column per point of x ({t.size}), got "
                f"shape {curves.shape}"
            )
        me = as_float("model_error", model_error)
        if not (math.isfinite(me) and me >= 0):
            raise ValueError(
                f"model_error must be finite and >= 0, got {model_error!r}"
            )
        if window is None:
            window = (t[0], t[-1])
        slopes = fit_loglog_slopes(t, curves.T, window)
        spread = float(np.std(slopes, ddof=1))
        self.check(
            key,
            statement,
            float(np.mean(slopes)),
            expected=expected,
            atol=3 * spread / np.sqrt(len(slopes)) + me,
            source=source,
            n_seeds=len(slopes),
            spread=spread,
            kind=kind,
        )
        return slopes
