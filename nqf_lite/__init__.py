"""nqf_lite: neural quadratic forms (Ziyin, Xu, Poggio, Chuang, arXiv
2608.13335).

Three layers; imports point down this list only:

- the library, grouped as the paper is:

  - :mod:`nqf_lite.expansion` -- the expansion and its models: the quadratic
    form :class:`NQF` and its order parameters ``(M, μ)`` (Theorem 1, Eq.
    20), ``expand`` by autograd, ``expand_dataset`` (dense or factored), the
    models of Props. 1-6 and Table 3 (:mod:`nqf_lite.expansion.models`);
  - :mod:`nqf_lite.dynamics` -- training closed on ``(M, μ)`` (Theorem 2),
    the twin (Theorem 3), momentum, the solvable cases (Theorems 4-7, 16)
    and power laws (Section 6);
  - :mod:`nqf_lite.deep` -- deep and higher-order forms (App. B.4,
    Theorem 13);
  - :mod:`nqf_lite.design` -- forecasts of learning before training
    (Section 9);

- :mod:`nqf_lite.experiments` -- tested runners of the paper's figures;
- :mod:`nqf_lite.book` -- the book's machinery: claims ledger, seeds, figure
  style, explorers, exercises, editions.

The names used most are re-exported here.
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
