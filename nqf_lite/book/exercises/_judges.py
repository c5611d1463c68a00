"""Building blocks of the judges: compare a student's answer with the
package's, with hints.

Each function returns ``None`` when the answer is right and otherwise a hint
that says what is off (the shape, a constant factor, the sign, a transpose),
never what the answer should be.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_floats",
    "call_student",
    "close",
    "compare_arrays",
    "compare_number",
]

#: factors by which a scalar answer is most often off (a missing 1/2, a doubled
#: term)
SIMPLE_FACTORS = (2.0, 0.5, 4.0, 0.25)
#: the common slips by a constant factor, as (answer / right answer, hint); a
#: hint is completed with the name of the answer. The book's logarithms are
#: natural logarithms throughout.
FACTOR_SLIPS = (
    (
        2.0,
        "is twice what it should be: a factor 1/2 is missing (the 1/2 of a "
        "Taylor term, of a "
        "quadratic form, or of a symmetrised matrix?).",
    ),
    (
        0.5,
        "is half what it should be: a factor 2 is missing (the derivative of "
        "a square, or both "
        "orders of a product?).",
    ),
    (4.0, "is four times what it should be: two factors 1/2 are missing."),
    (0.25, "is a quarter of what it should be: two factors 2 are missing."),
    (
        1 / np.log(10),
        "is off by the factor 1/ln 10: a base-10 logarithm (np.log10) where "
        "the "
        "formula has the natural logarithm ln (np.log).",
    ),
    (
        np.log(10),
        "is off by the factor ln 10: the formula's logarithm is the natural "
        "logarithm "
        "(np.log), but a base-10 logarithm enters somewhere else, e.g. on the "
        "other axis.",
    ),
    (
        1 / np.log(2),
        "is off by the factor 1/ln 2: a base-2 logarithm (np.log2) where the "
        "formula has "
        "the natural logarithm ln (np.log).",
    ),
    (
        np.log(2),
        "is off by the factor ln 2: the formula's logarithm is the natural "
        "logarithm "
        "(np.log), but a base-2 logarithm enters somewhere else.",
    ),
)


def factor_hint(what: str, ratio: float) -> str | None:
    """The hint for an answer that is ``ratio`` times the right one, when the
    ratio is a common slip."""
    for factor, hint in FACTOR_SLIPS:
        if np.isclose(ratio, factor, rtol=1e-6):
            return f"{what} {hint}"
    return None


def _as_real_array(
    answer: Any, what: str
) -> tuple[np.ndarray | None, str | None]:
    try:
        a = np.asarray(
            answer.detach().numpy() if hasattr(answer, "detach") else answer
        )
    # a broad except on purpose: any object may come in; say what was expected
    except Exception:
        return (
            None,
            f"{what} should be an array of numbers, got "
            f"{type(answer).__name__}.",
        )
    if a.dtype == object or not (
        np.issubdtype(a.dtype, np.number) or a.dtype == bool
    ):
        return (
            None,
            f"{what} should be an array of numbers, got "
            f"{type(answer).__name__}.",
        )
    if np.iscomplexobj(a):
        return None, f"{what} should be real; yours has complex entries."
    a = a.astype(float)
    if not np.all(np.isfinite(a)):
        return None, f"{what} has NaN or infinite entries."
    return a, None


def as_floats(answer: Any, ndim: int | None = None) -> np.ndarray | None:
    """``answer`` (an array, a tensor, a list) as a finite float array, else
    ``None``.

    With ``ndim``, an array with another number of axes, or an empty one, is
    ``None`` too.
    """
    try:
        out = np.asarray(
            answer.detach().numpy() if hasattr(answer, "detach") else answer
        )
        out = out.astype(float)
    except (TypeError, ValueError):
        return None
    if ndim is not None and (out.ndim != ndim or out.size == 0):
        return None
    return out if np.all(np.isfinite(out)) else None


def close(
    answer: Any, expected: Any, *, rtol: float = 1e-9, atol: float = 1e-12
) -> bool:
    """True when ``answer`` is an array of the shape of ``expected`` and equal
    to it to ``rtol``/``atol``."""
    expected = np.asarray(expected, dtype=float)
    a = as_floats(answer)
    return (
        a is not None
        and a.shape == expected.shape
        and bool(np.allclose(a, expected, rtol=rtol, atol=atol))
    )


def compare_arrays(
    answer: Any,
    expected: np.ndarray,
    *,
    what: str,
    rtol: float = 1e-7,
    atol: float = 1e-10,
) -> str | None:
    """``None`` when ``answer`` equals ``expected`` to ``rtol``/``atol``, else
    a hint.

    The hint names a shape mismatch, a transpose, a wrong sign, or a constant
    factor (the most common slips: a missing 1/2 or a factor of the width),
    without giving the value.
    """
    expected = np.asarray(expected, dtype=float)
    a, hint = _as_real_array(answer, what)
    if hint:
        return hint
    if a.shape != expected.shape:
        return (
            f"{what} should have shape {expected.shape}, yours has shape "
            f"{a.shape}."
        )
    if np.allclose(a, expected, rtol=rtol, atol=atol):
        return None
    if (
        a.ndim == 2
        and a.shape[0] == a.shape[1]
        and np.allclose(a.T, expected, rtol=rtol, atol=atol)
    ):
        return f"{what} is the transpose of what it should be."
    if np.allclose(-a, expected, rtol=rtol, atol=atol):
        return (
            f"{what} has the wrong sign: a minus sign is dropped or doubled "
            "somewhere."
        )
    scale = np.vdot(a, expected) / max(np.vdot(a, a), 1e-300)
    if scale != 0 and np.allclose(scale * a, expected, rtol=rtol, atol=atol):
        hint = factor_hint(what, 1.0 / scale)
        if hint:
            return hint
        if a.size > 1:
            return (
                f"{what} is off by a constant factor: check the constants (a "
                "1/2, a 2, a width d)."
            )
    return (
        f"{what} does not match: check the formula term by term on a small "
        "case."
    )


def compare_number(
    answer: Any,
    expected: float,
    *,
    what: str,
    rtol: float = 1e-7,
    atol: float = 0.0,
) -> str | None:
    """``None`` when the scalar ``answer`` equals ``expected`` to
    ``rtol``/``atol``, else a hint."""
    a, hint = _as_real_array(answer, what)
    if hint:
        return hint
    if a.size != 1:
        return f"{what} should be one number, yours has shape {a.shape}."
    return compare_arrays(
        a.reshape(()), np.asarray(expected), what=what, rtol=rtol, atol=atol
    )


def call_student(fn: Any, *args: Any, what: str) -> tuple[Any, str | None]:
    """Call the student's function ``fn(*args)``: ``(value, None)``, or
    ``(None, hint)``.

    A student's function may raise anything; the hint reports the error instead
    of letting it escape from the judge.
    """
    if not callable(fn):
        return None, f"{what} should be a function, got {type(fn).__name__}."
    try:
        return fn(*args), None
    # a broad except on purpose: report the student's error as a hint
    except Exception as exc:
        return None, f"calling {what} raised {type(exc).__name__}: {exc}"
