"""Transitional: ``solvable``, ``momentum`` and ``tests/test_momentum.py`` still import from here.

Delete this file once they import from :mod:`nqf_lite.form` (the one home of these names).
"""

from .form import NQF, random_nqf, realize_moments

__all__ = ["NQF", "random_nqf", "realize_moments"]
