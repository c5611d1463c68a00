"""nqf_lite: neural quadratic forms (Ziyin, Xu, Poggio, Chuang, arXiv 2608.13335).

Modules, one per idea:

- :mod:`nqf_lite.structure` -- ``expand``: the structure matrix A(x) (and g, B) of any
  permutation-symmetric torch module by autograd (Theorem 1, Eq. 20);
- :mod:`nqf_lite.dynamics` -- the :class:`NQF` of a data set, explicit and closed (M, mu)
  training (Theorem 2, Eqs. 23-24);
- :mod:`nqf_lite.compression` -- the width-(k_V + 1) twin (Theorem 3);
- :mod:`nqf_lite.claims` -- the ledger of checked claims;
- :mod:`nqf_lite.plotting` -- the book's figure style.
"""

from .compression import compress, compression_residual, data_subspace, k_V
from .dynamics import NQF, random_nqf, realize_moments
from .structure import Expansion, NotSmoothError, NotSymmetricError, expand, expand_dataset, moments

__all__ = [
    "Expansion",
    "NQF",
    "NotSmoothError",
    "NotSymmetricError",
    "compress",
    "compression_residual",
    "data_subspace",
    "expand",
    "expand_dataset",
    "k_V",
    "moments",
    "random_nqf",
    "realize_moments",
]

__version__ = "0.1.0"
