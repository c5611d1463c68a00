"""Exactly solvable learning dynamics of the NQF (paper Sec. 5-6, App.
A.12-A.17, B.7).

Setting: ZGZ NQF ``f_n = Tr[M A_n]`` with loss
``L = (1/m) sum_n (f_n - y_n)^2`` trained by gradient flow ``W' = -H W``,
``H = (4/m) sum_n Delta_n A_n`` (Eq. 27), hence ``M' = -(H M + M H)`` (Eq. 28).
When the ``A_n = P Lambda_n P^T`` commute (Assumption 1), the mode abundances
``z_k = (P^T M P)_kk`` obey the generalised Lotka-Volterra (GLV) equation
``z_k' = z_k (r_k - (C z)_k)`` (Eq. 32) with

    r_k  = (8/m) sum_n lambda_{n,k} y_n,      C_kj = (8/m) sum_n lambda_{n,k}
    lambda_{n,j}   (Eq. 37).

This module holds the closed forms (Theorems 4-7, 16, Corollary 4, Proposition
7), switch-on times (Theorem 8) and reference integrators (GLV in log z, the
matrix flow Eq. 28, full-batch GD on W and its exact discrete GLV).

The module is a package of four parts, whose names are all re-exported here
(``from nqf_lite.dynamics.solvable import switch_on_time`` keeps working):

- :mod:`~nqf_lite.dynamics.solvable.glv`: the GLV coefficients, the common
  eigenbasis and the logistic closed forms (Eqs. 32-39, Theorems 4-6, 16);
- :mod:`~nqf_lite.dynamics.solvable.switch_on`: switch-on times, plateaus and
  the excess loss (Theorems 6-8, Eq. 43);
- :mod:`~nqf_lite.dynamics.solvable.integrators`: GLV, matrix-flow and
  gradient-descent integrators, Proposition 7;
- :mod:`~nqf_lite.dynamics.solvable.samples`: proportional, orthogonal and
  isotropic samples (Theorems 4, 5, 7).
"""

from nqf_lite._checks import DIAG_RTOL
from nqf_lite.dynamics.solvable.glv import (
    COMMUTE_RTOL,
    common_eigenbasis,
    feature_trajectory,
    glv_coefficients,
    projector_logistic,
    saxe_logistic,
)
from nqf_lite.dynamics.solvable.integrators import (
    gd_discrete_glv,
    gd_nqf,
    glv_integrate,
    matrix_flow,
    slaved_moments,
    slaved_ratio,
)
from nqf_lite.dynamics.solvable.samples import (
    ISO_MAX_STEPS,
    ISO_RANK_RTOL,
    ISO_STEP_GROWTH,
    isotropic_logistic,
    isotropic_trajectory,
    orthogonal_samples_xi,
    orthogonal_samples_z,
    proportional_samples_W,
    proportional_samples_xi,
)
from nqf_lite.dynamics.solvable.switch_on import (
    crossing_time,
    excess_loss,
    excess_loss_draws,
    plateau_values,
    switch_on_time,
    switch_on_time_exact,
)

__all__ = [
    "COMMUTE_RTOL",
    "DIAG_RTOL",
    "ISO_MAX_STEPS",
    "ISO_RANK_RTOL",
    "ISO_STEP_GROWTH",
    "common_eigenbasis",
    "crossing_time",
    "excess_loss",
    "excess_loss_draws",
    "feature_trajectory",
    "gd_discrete_glv",
    "gd_nqf",
    "glv_coefficients",
    "glv_integrate",
    "isotropic_logistic",
    "isotropic_trajectory",
    "matrix_flow",
    "orthogonal_samples_xi",
    "orthogonal_samples_z",
    "plateau_values",
    "projector_logistic",
    "proportional_samples_W",
    "proportional_samples_xi",
    "saxe_logistic",
    "slaved_moments",
    "slaved_ratio",
    "switch_on_time",
    "switch_on_time_exact",
]
