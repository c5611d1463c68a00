"""Forecasting and design (Section 9, Theorem 6).

- :mod:`~nqf_lite.design.forecast`: :func:`predict_learning`, the learning
  order, switch-on times and plateaus of a layer before training;
- :mod:`~nqf_lite.design.corrections`: this book's corrections of the
  switch-on time for gradient descent and random starts.
"""

from nqf_lite.design.forecast import *
from nqf_lite.design.forecast import __all__ as _forecast

__all__ = list(_forecast)
