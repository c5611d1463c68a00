"""The expansion and its models (Theorem 1, Props. 1-6, Table 3).

- :mod:`~nqf_lite.expansion.order`: the order parameters ``(M, μ)`` of
  weights and the way back (realisability, Theorem 2);
- :mod:`~nqf_lite.expansion.form`: the quadratic form ``f(0) + μᵀg + Tr[WWᵀA]``
  of a data set, :class:`~nqf_lite.expansion.form.NQF` (Eq. 20) and its
  order parameters ``(M, μ)`` (its training lives in
  :mod:`nqf_lite.dynamics.training`);
- :mod:`~nqf_lite.expansion.taylor`: the coefficients of Theorem 1 at one
  input (:class:`~nqf_lite.expansion.taylor.Expansion`), the symmetry and
  smoothness it needs, and its remainder;
- :mod:`~nqf_lite.expansion.units`: the units (neurons, heads, experts,
  channels) of a ``torch.nn.Module`` as the columns of ``W``;
- :mod:`~nqf_lite.expansion.unit_spec`: which parameters one unit owns (the
  ``units`` argument), read and checked once;
- :mod:`~nqf_lite.expansion.autograd`: :func:`expand`, the structure matrix
  ``A(x)`` (and ``g``, ``B``) of any permutation-symmetric module by autograd;
- :mod:`~nqf_lite.expansion.dataset`: :func:`expand_dataset`, the NQF of a
  data set, factored when the structure is known, chunked within a memory
  budget;
- :mod:`~nqf_lite.expansion.factored`: the same coefficients kept in factored
  form, for networks at data-set scale, with the arithmetic of their terms in
  :mod:`~nqf_lite.expansion.factored_terms` and the terms of mixtures of
  experts, attention heads and registry models (Props. 2-5) in
  :mod:`~nqf_lite.expansion.factored_models`;
- :mod:`~nqf_lite.expansion.models`: one object per model of the paper, with
  its forward, its closed-form ``A(x)`` and its twin (the registry ``MODELS``).
"""

from nqf_lite.expansion.autograd import *  # noqa: F403
from nqf_lite.expansion.autograd import __all__ as _autograd
from nqf_lite.expansion.dataset import *  # noqa: F403
from nqf_lite.expansion.dataset import __all__ as _dataset
from nqf_lite.expansion.factored import *  # noqa: F403
from nqf_lite.expansion.factored import __all__ as _factored
from nqf_lite.expansion.form import *  # noqa: F403
from nqf_lite.expansion.form import __all__ as _form
from nqf_lite.expansion.taylor import *  # noqa: F403
from nqf_lite.expansion.taylor import __all__ as _taylor
from nqf_lite.expansion.units import *  # noqa: F403
from nqf_lite.expansion.units import __all__ as _units

__all__ = [*_form, *_taylor, *_units, *_autograd, *_dataset, *_factored]


def __getattr__(name: str) -> object:
    """``TrainingRecord`` moved to :mod:`nqf_lite.dynamics.training`."""
    if name == "TrainingRecord":
        from nqf_lite.dynamics.training import TrainingRecord

        return TrainingRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
