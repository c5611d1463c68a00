"""Forecasting and design (Section 9, Theorem 6).

- :mod:`~nqf_lite.design.forecast`: :func:`predict_learning`, the learning
  order, switch-on times and plateaus of a layer before training, built from
  :mod:`~nqf_lite.design.layer_inputs` (what it reads from the layer),
  :mod:`~nqf_lite.design.modes` (the basis of modes, GLV coefficients and
  plateaus), :mod:`~nqf_lite.design.learning_forecast` (the
  :class:`LearningForecast` it returns) and
  :mod:`~nqf_lite.design.forecast_warnings` (when its assumptions fail);
- :mod:`~nqf_lite.design.corrections`: this book's corrections of the
  switch-on time for gradient descent and random starts.
"""

from nqf_lite.design.forecast import *
from nqf_lite.design.forecast import __all__ as _forecast

__all__ = list(_forecast)
