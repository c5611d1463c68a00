"""The expansion and its models (Theorem 1, Props. 1-6, Table 3).

- :mod:`~nqf_lite.expansion.form`: the quadratic form ``f(0) + μᵀg + Tr[WWᵀA]``
  of a data set, :class:`~nqf_lite.expansion.form.NQF` (Eq. 20) and its
  order parameters ``(M, μ)``;
- :mod:`~nqf_lite.expansion.autograd`: :func:`expand`, the structure matrix
  ``A(x)`` (and ``g``, ``B``) of any permutation-symmetric module by autograd;
- :mod:`~nqf_lite.expansion.factored`: the same coefficients kept in factored
  form, for networks at data-set scale;
- :mod:`~nqf_lite.expansion.models`: one object per model of the paper, with
  its forward, its closed-form ``A(x)`` and its twin (the registry ``MODELS``).
"""

from nqf_lite.expansion.autograd import *  # noqa: F403
from nqf_lite.expansion.autograd import __all__ as _autograd
from nqf_lite.expansion.factored import *  # noqa: F403
from nqf_lite.expansion.factored import __all__ as _factored
from nqf_lite.expansion.form import *  # noqa: F403
from nqf_lite.expansion.form import __all__ as _form

__all__ = [*_form, *_autograd, *_factored]
