"""Deep and higher-order forms (App. B.4, Theorems 13-15).

- :mod:`~nqf_lite.deep.deep_nqf`: :class:`~nqf_lite.deep.deep_nqf.DeepNQF`,
  layers of quadratic forms (Definition 2, Eq. 219), whose names it
  re-exports from
- :mod:`~nqf_lite.deep.layers` (the layers and their structure),
  :mod:`~nqf_lite.deep.realisation` (moments, realisation and compression,
  Theorems 14-15), :mod:`~nqf_lite.deep.inputs` (its argument checks) and
  :mod:`~nqf_lite.deep.training` (gradients, steps and training, Eqs.
  220-225);
- :mod:`~nqf_lite.deep.general`: general layers and their backpropagated
  signals;
- :mod:`~nqf_lite.deep.higher_order`: the expansion beyond second order and
  the neural form of an additive module (Theorem 13), with the tensors of
  :mod:`~nqf_lite.deep.symmetric_expansion`.
"""

from nqf_lite.deep.deep_nqf import *
from nqf_lite.deep.deep_nqf import __all__ as _deep_nqf

__all__ = list(_deep_nqf)
