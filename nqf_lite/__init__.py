"""nqf_lite: neural quadratic forms (Ziyin, Xu, Poggio, Chuang, arXiv
2608.13335).

Modules, one per idea of the paper, each importing only the ones above it:

- :mod:`nqf_lite.expansion.form` -- the order parameters ``(M, μ)``, the
  :class:`NQF` of a data set (Eq. 20), the NTK from ``(M, μ)`` (Prop. 8);
- :mod:`nqf_lite.dynamics.training` -- its explicit and closed training
  (Theorem 2, Eqs. 21-24) with a :class:`TrainingRecord` of ``M``, ``μ``,
  ``W``, losses or predictions;
- :mod:`nqf_lite.expansion.autograd` -- ``expand``: the structure matrix
  ``A(x)`` (and ``g``, ``B``) of any permutation-symmetric module by autograd
  (Theorem 1, Eq. 20): a function ``f(W, x)`` or a ``torch.nn.Module`` whose
  units (neurons, heads, experts, channels) ``module_units`` names
  (:mod:`nqf_lite.expansion.units`); the coefficients, the conditions of
  Theorem 1 and the remainder in :mod:`nqf_lite.expansion.taylor`;
  ``expand_dataset``, the NQF of a data set, in
  :mod:`nqf_lite.expansion.dataset`;
- :mod:`nqf_lite.dynamics.compression` -- the width-(k_V + 1) twin (Theorem 3);
- :mod:`nqf_lite.design.forecast` -- ``predict_learning``: the learning order,
  switch-on times and plateaus of a layer, a registry model or an NQF before
  training (Theorem 6, Eqs. 32-43);
- :mod:`nqf_lite.expansion.models` -- one object per model (Props. 1-6, Table
  3), one module per family;
- :mod:`nqf_lite.experiments.train` -- torch GD / momentum / Adam, and a
  network next to its twin;
- :mod:`nqf_lite.dynamics.momentum`, :mod:`nqf_lite.dynamics.solvable`,
  :mod:`nqf_lite.dynamics.scaling` -- momentum,
  the exact solutions (Theorems 4-7, 16), power laws (Section 6);
- :mod:`nqf_lite.book.claims`, :mod:`nqf_lite.book.seeding`,
  :mod:`nqf_lite.book.plotting`,
  :mod:`nqf_lite.book.widgets` -- the book's ledger, seeds, figure style and
  explorers.
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

try:
    __version__ = _version("nqf_lite")  # pyproject.toml is the one source
except _NotInstalled:  # imported from a source tree that is not installed
    __version__ = "unknown"

from nqf_lite import _compat

_compat.install()

from nqf_lite.dynamics.compression import (
    compress,
    compression_residual,
    data_subspace,
    k_V,
)
from nqf_lite.design.forecast import LearningForecast, predict_learning
from nqf_lite.dynamics.training import TrainingRecord
from nqf_lite.expansion.autograd import expand
from nqf_lite.expansion.dataset import expand_dataset
from nqf_lite.expansion.form import (
    NQF,
    moments,
    ntk_from_moments,
    random_nqf,
    realize_moments,
)
from nqf_lite.dynamics.scaling import effective_slope, scaling_exponent
from nqf_lite.dynamics.solvable import (
    feature_trajectory,
    glv_coefficients,
    switch_on_time,
)
from nqf_lite.expansion.factored import FactoredNQF
from nqf_lite.expansion.taylor import (
    Expansion,
    NotSmoothError,
    NotSymmetricError,
)
from nqf_lite.expansion.units import ModuleUnits, module_units

__all__ = [
    "NQF",
    "Expansion",
    "FactoredNQF",
    "LearningForecast",
    "ModuleUnits",
    "NotSmoothError",
    "NotSymmetricError",
    "TrainingRecord",
    "compress",
    "compression_residual",
    "data_subspace",
    "effective_slope",
    "expand",
    "expand_dataset",
    "feature_trajectory",
    "glv_coefficients",
    "k_V",
    "module_units",
    "moments",
    "ntk_from_moments",
    "predict_learning",
    "random_nqf",
    "realize_moments",
    "scaling_exponent",
    "switch_on_time",
]
