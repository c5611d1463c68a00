"""nqf_lite: neural quadratic forms (Ziyin, Xu, Poggio, Chuang, arXiv 2608.13335).

Modules, one per idea:

- :mod:`nqf_lite.structure` -- ``expand``: the structure matrix A(x) (and g, B) of any
  permutation-symmetric torch module by autograd (Theorem 1, Eq. 20);
- :mod:`nqf_lite.dynamics` -- the :class:`NQF` of a data set, explicit and closed (M, mu)
  training (Theorem 2, Eqs. 23-24);
- :mod:`nqf_lite.compression` -- the width-(k_V + 1) twin (Theorem 3);
- :mod:`nqf_lite.architectures` -- closed-form A(x) of Propositions 1-6 and the modules behind them;
- :mod:`nqf_lite.networks` -- torch networks and their NQF twins, trained side by side;
- :mod:`nqf_lite.momentum` -- heavy-ball momentum and its closed state, Adam as the counter-example;
- :mod:`nqf_lite.solvable` -- Lotka-Volterra reduction and the exact solutions (Theorems 4-7, 16);
- :mod:`nqf_lite.scaling` -- power-law merging of switch-ons (Section 6, Eq. 292);
- :mod:`nqf_lite.widgets` -- explorers that work in static HTML;
- :mod:`nqf_lite.claims` -- the ledger of checked claims;
- :mod:`nqf_lite.plotting` -- the book's figure style.
"""

from .compression import compress, compression_residual, data_subspace, k_V
from .dynamics import NQF, random_nqf, realize_moments
from .scaling import effective_slope, scaling_exponent
from .solvable import feature_trajectory, glv_coefficients, switch_on_time
from .structure import Expansion, NotSmoothError, NotSymmetricError, expand, expand_dataset, moments

__all__ = [
    "Expansion",
    "NQF",
    "NotSmoothError",
    "NotSymmetricError",
    "compress",
    "compression_residual",
    "data_subspace",
    "effective_slope",
    "expand",
    "expand_dataset",
    "feature_trajectory",
    "glv_coefficients",
    "k_V",
    "moments",
    "random_nqf",
    "realize_moments",
    "scaling_exponent",
    "switch_on_time",
]

__version__ = "0.1.0"
