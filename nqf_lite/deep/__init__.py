"""Deep and higher-order forms (App. B.4, Theorem 13).

- :mod:`~nqf_lite.deep.deep_nqf`: :class:`~nqf_lite.deep.deep_nqf.DeepNQF`,
  layers of quadratic forms and their compression;
- :mod:`~nqf_lite.deep.general`: general layers and their backpropagated
  signals;
- :mod:`~nqf_lite.deep.higher_order`: the expansion beyond second order
  (Theorem 13).
"""

from nqf_lite.deep.deep_nqf import *
from nqf_lite.deep.deep_nqf import __all__ as _deep_nqf

__all__ = list(_deep_nqf)
