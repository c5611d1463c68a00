"""Power laws from crowded switch-ons (paper Sec. 6, App. A.17 Thms 9-11, App.
C).

When the modes of an NQF switch on one by one (Theorem 6/8) and their growth
rates and loss drops follow power laws in the mode index,

.. math::

    \\zeta_k = r_k \\propto k^{-\\alpha_2}, \\qquad V_k = r_k^2/(8 C_{kk})
    \\propto k^{-\\alpha_1},

the excess loss in rescaled time ``tau = t/ln(1/eps)`` tends to the staircase
``E(tau) = sum_k V_k 1(tau < 1/r_k)`` (Eq. 168), whose envelope is
``tau^{-(alpha_1 - 1)/alpha_2}`` (Eq. 46/161).  This module holds the exponents
(Eqs. 46, 49, 292, 295), the width exponent of the NTK drift (Prop. 9), the
staircase, the log-log slope fitter, the data of Fig. 3 (right) and the one-hot
quadratic network (App. C, Eq. 299).  The Fourier MLP of Eq. 50 lives in
:mod:`nqf_lite.expansion.models.fourier`.

``excess_loss`` (Eq. 163) lives in :mod:`nqf_lite.dynamics.solvable` and the
log-log slope fitter in :mod:`nqf_lite.dynamics.loglog`; both are re-exported
here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nqf_lite._checks import (
    as_array,
    broadcast,
    glv_rates,
    integer,
    nonnegative,
    number,
    positive,
    vector,
)
from nqf_lite.dynamics.loglog import (
    LogLogFit,
    fit_loglog_slope,
    fit_loglog_slopes,
)
from nqf_lite.dynamics.solvable.switch_on import excess_loss

__all__ = [
    "LogLogFit",
    "PowerLawModes",
    "effective_slope",
    "effective_slope_at_time",
    "excess_loss",
    "fit_loglog_slope",
    "fit_loglog_slopes",
    "is_lazy",
    "ntk_drift_exponent",
    "onehot_quadratic_gd",
    "powerlaw_modes",
    "samplewise_exponent",
    "scaling_exponent",
    "staircase_loss",
]


# -----------------------------------------------------------------------------
# exponents
def _exponents(
    alpha1: object, alpha2: object, low1: float, what1: str
) -> tuple[np.ndarray, np.ndarray]:
    a1 = as_array("alpha1", alpha1)
    a2 = as_array("alpha2", alpha2)
    if np.any(a1 <= low1):
        raise ValueError(
            f"alpha1 must be > {low1:g} ({what1}), got {a1.min():g}"
        )
    if np.any(a2 <= 0):
        raise ValueError(f"alpha2 must be > 0, got {a2.min():g}")
    return broadcast("alpha1 and alpha2", a1, a2)


def scaling_exponent(alpha1: object, alpha2: object) -> np.ndarray:
    """Feature-wise loss exponent ``(alpha_1 - 1)/alpha_2`` (Eq. 46, Theorem 9
    Eq. 161).

    Arguments broadcast like numpy ufuncs (scalars in, scalar out).

    Parameters
    ----------
    alpha1 : array_like
        Decay exponent of the loss drops, ``V_k ∝ k^{-alpha1}``; must exceed 1
        so that the initial excess loss ``sum_k V_k`` is finite.
    alpha2 : array_like
        Decay exponent of the growth rates, ``zeta_k ∝ k^{-alpha2}``, ``> 0``.

    Returns
    -------
    float or ndarray
        The exponent ``a`` of ``E(tau) = Theta(tau^{-a})``.
    """
    a1, a2 = _exponents(
        alpha1, alpha2, 1.0, "finite initial loss sum_k k^-alpha1"
    )
    return ((a1 - 1.0) / a2)[()]


def samplewise_exponent(gamma1: object, gamma2: object) -> np.ndarray:
    """Sample-wise loss exponent ``(2 gamma_1 - 1)/gamma_2`` (Eq. 49, Theorem
    11 Eq. 187).

    Arguments broadcast like numpy ufuncs.

    Parameters
    ----------
    gamma1 : array_like
        Label decay ``y_n ∝ n^{-gamma1}``, ``> 1/2`` (finite ``sum_n y_n^2``).
    gamma2 : array_like
        Rate decay ``zeta_n ∝ n^{-gamma2}``, ``> 0``.

    Returns
    -------
    float or ndarray
    """
    g1 = as_array("gamma1", gamma1)
    g2 = as_array("gamma2", gamma2)
    if np.any(g1 <= 0.5):
        raise ValueError(
            f"gamma1 must be > 1/2 (finite sum_n y_n^2), got {g1.min():g}"
        )
    if np.any(g2 <= 0):
        raise ValueError(f"gamma2 must be > 0, got {g2.min():g}")
    return ((2.0 * g1 - 1.0) / g2)[()]


def effective_slope(
    alpha1: float,
    alpha2: float,
    r: object,
    C: object,
    eps: object,
    beta0: float = 0.0,
    k: object = None,
) -> np.ndarray:
    """Finite-initialisation local exponent of mode k (App. C, Eqs. 290-292).

    With ``t_k = (1/r_k) ln(z_k^inf / z_k(0))`` (Eq. 290),
    ``z_k^inf = r_k/C_kk`` and ``z_k(0) = eps k^{-beta0}``,

    .. math::

        k_\\mathrm{eff}(k) = \\frac{\\alpha_1 - 1}
            {\\alpha_2 - (\\alpha_1 - \\alpha_2 -
            \\beta_0)/\\ln(z_k^\\infty/z_k(0))}.

    ``beta0 = 0`` (uniform init) is the paper's Eq. 292.  Theorem 9's aligned
    init ``beta0 = alpha1 - alpha2`` removes the correction.  ``r``, ``C``,
    ``eps`` (and ``k``) broadcast like numpy ufuncs (scalars in, scalar out).

    Parameters
    ----------
    alpha1, alpha2 : float
        Exponents of ``V_k`` and ``r_k`` (see :func:`scaling_exponent`).
    r : array_like
        Growth rates, all ``> 0``.
    C : array_like
        Self-competitions ``C_kk > 0`` (broadcast with ``r``), or a diagonal
        ``(K, K)`` matrix when ``r`` has shape ``(K,)``.
    eps : array_like
        Initial abundance scale (M-units), ``> 0``.
    beta0 : float
        Exponent of the initial profile, ``z_k(0) = eps k^{-beta0}``.
    k : array_like, optional
        Mode indices ``>= 1`` (only used when ``beta0 != 0``); default ``1..K``
        along the last axis of ``r`` (``1`` for a scalar ``r``).

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        If a mode starts at or above saturation (``z_k(0) >= z_k^inf``), where
        Eq. 290 has no switch-on, or if ``t_k`` of Eq. 290 fails to increase
        with ``k``.
    """
    alpha1, alpha2 = number("alpha1", alpha1), number("alpha2", alpha2)
    base = scaling_exponent(alpha1, alpha2)
    r, c = glv_rates(r, C)
    eps = as_array("eps", eps)
    beta0 = nonnegative("beta0", beta0)
    if np.any(r <= 0) or np.any(c <= 0):
        raise ValueError(
            "effective_slope needs r_k > 0 and C_kk > 0 for every mode (r, C)"
        )
    if np.any(eps <= 0):
        raise ValueError(f"eps must be > 0, got min {eps.min():.3g}")
    if k is None:
        k = (
            np.arange(1, r.shape[-1] + 1, dtype=float)
            if r.ndim
            else np.ones(())
        )
    else:
        k = as_array("k", k)
        if np.any(k < 1):
            raise ValueError(
                f"k must hold mode indices >= 1, got min {k.min():g}"
            )
    r, c, eps, k = broadcast("r, C, eps and k", r, c, eps, k)
    log_ratio = np.log(r / c) - np.log(eps) + beta0 * np.log(k)
    if np.any(log_ratio <= 0):
        raise ValueError(
            "eps too large: every mode must start below saturation, eps "
            "k^-beta0 < r_k/C_kk"
        )
    denom = alpha2 - (alpha1 - alpha2 - beta0) / log_ratio
    if np.any(denom <= 0):
        raise ValueError(
            "eps too large: t_k of Eq. 290 does not increase with k (d ln "
            "t/d ln k <= 0)"
        )
    return (base * alpha2 / denom)[()]


def effective_slope_at_time(
    t: object,
    alpha1: float,
    alpha2: float,
    eps: object,
    zeta1: float = 1.0,
    zinf1: float = 1.0,
) -> np.ndarray:
    """Effective loss exponent as a function of time at finite initialisation
    (App. C, Eq. 295).

    Derivation.  Take ``zeta_k = zeta1 k^{-alpha2}`` and ``z_k^inf = zeta_k/C_k
    =
    zinf1 k^{alpha2 - alpha1}``.  Eliminating ``k`` gives ``z^inf = zinf1
    (zeta/zeta1)^alpha`` with ``alpha = (alpha1 - alpha2)/alpha2``, so the
    switch-on time of Eq. 290, ``zeta_k t = ln(1/eps) + ln z_k^inf``, reads
    (Eq. 293)

    ``zeta t = ln(1/eps) + alpha ln zeta + C``,
    ``C = ln zinf1 - alpha ln zeta1``.

    To leading order ``zeta ~ ln(1/eps)/t``, hence ``ln zeta ~ ln ln(1/eps) -
    ln t`` and (Eq. 294) ``zeta t ~ ln(1/eps) + alpha ln ln(1/eps) - alpha ln t
    + C``. Eq. 292 has ``ln(zeta_k/(C_k eps)) = zeta_k t`` in its denominator:
    ``k_eff = (alpha1 - 1)/(alpha2 (1 - alpha/(zeta t))) ~ (alpha1 - 1)/alpha2
    [1 + alpha/(zeta t)]``, which with Eq. 294 is Eq. 295,

    .. math::

        k_\\mathrm{eff}(t) \\approx \\frac{\\alpha_1 - 1}{\\alpha_2}\\Big[1 +
        \\frac{\\alpha}{\\ln(1/\\epsilon) + \\alpha\\ln\\ln(1/\\epsilon) + C -
        \\alpha \\ln t}\\Big].

    It increases with ``t`` when ``alpha1 > alpha2`` (Fig. 3 right, Fig. 5) and
    tends to Eq. 46 as ``eps -> 0``; the neglected terms are ``O((ln
    ln(1/eps)/ln(1/eps))^2)`` relative.  All array arguments broadcast like
    numpy ufuncs.

    Parameters
    ----------
    t : array_like
        Times ``> 0`` inside the power-law window.
    alpha1, alpha2 : float
        Exponents of ``V_k`` (``> 1``) and ``zeta_k`` (``> 0``).
    eps : array_like
        Initial scale, ``0 < eps < 1``.
    zeta1, zinf1 : float
        Growth rate and saturation value of the first mode (they fix ``C``).

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        If the bracket's denominator is ``<= 0`` (``t`` too large for the
        power-law window).
    """
    alpha1, alpha2 = number("alpha1", alpha1), number("alpha2", alpha2)
    base = scaling_exponent(alpha1, alpha2)
    t = as_array("t", t)
    eps = as_array("eps", eps)
    zeta1 = positive("zeta1", zeta1)
    zinf1 = positive("zinf1", zinf1)
    if np.any(t <= 0):
        raise ValueError(f"t must be > 0, got min {t.min():g}")
    if np.any((eps <= 0) | (eps >= 1)):
        raise ValueError("eps must lie in (0, 1) so that ln ln(1/eps) exists")
    alpha = (alpha1 - alpha2) / alpha2
    L = -np.log(eps)
    denom = (
        L
        + alpha * np.log(L)
        + (np.log(zinf1) - alpha * np.log(zeta1))
        - alpha * np.log(t)
    )
    if np.any(denom <= 0):
        raise ValueError(
            "t too large for Eq. 295: the switch-on product zeta t of Eq. "
            "294 is <= 0"
        )
    return (base * (1.0 + alpha / denom))[()]


def staircase_loss(tau: object, r: object, V: object) -> np.ndarray:
    """The ``eps -> 0`` limit of the excess loss, ``sum_k V_k 1(tau < 1/r_k)``
    (Eqs. 168, 190).

    Read with ``r = zeta_n`` and ``V = y_n^2`` it is the sample-wise limit of
    Eq. 47/190.

    Parameters
    ----------
    tau : array_like, shape (T,)
        Rescaled times ``t/ln(1/eps) >= 0``.
    r : array_like, shape (K,)
        Growth rates, all ``> 0`` (mode k steps down at ``tau = 1/r_k``).
    V : array_like, shape (K,)
        Loss drops, ``>= 0``.

    Returns
    -------
    ndarray, shape (T,)
    """
    tau = as_array("tau", tau, ndim=1)
    r = vector("r", r)
    V = vector("V", V, r.size)
    if np.any(tau < 0):
        raise ValueError("tau must be >= 0")
    if np.any(r <= 0):
        raise ValueError(
            "r must be > 0 (a mode with r_k <= 0 never switches on)"
        )
    if np.any(V < 0):
        raise ValueError("V must be >= 0")
    return (tau[:, None] < 1.0 / r[None, :]).astype(float) @ V


# -----------------------------------------------------------------------------
# width scaling (Prop. 9)
def ntk_drift_exponent(alpha_A: object, alpha_B: object) -> np.ndarray:
    """Width exponent of the NTK's rate of change,
    ``d Theta/dt = O(d^{max(1 - alpha_B, -alpha_A)})`` (Prop. 9).

    Derivation (App. B.6, Eqs. 250-251). With ``g = Theta(d^{-1/2})``,
    ``B = Theta(d^{-alpha_B})``, ``A = Theta(d^{-alpha_A})`` and
    ``mu, M = O(1)``, the NTK is
    ``Theta = d u^T u + 2 u^T A mu + 2 mu^T A u + 4 Tr(A^2 M)`` with
    ``u = g + 2 B mu = O(d^{-1/2})`` (Prop. 8). Its derivative (Eq. 251)
    contains

    * the ``alpha_B`` branch: ``2 d u^T u' = 4 d u^T B mu'`` with ``mu' ~ -d l'
      u`` (Eq. 250), i.e. ``-4 l' d^2 u^T B u = O(d^2 d^{-1} d^{-alpha_B}) =
      O(d^{1
      - alpha_B})``;
    * the ``alpha_A`` branch: ``4 u^T A mu' ~ -4 l' d u^T A u =
      O(d^{-alpha_A})``;

    every other term is smaller.  Hence the exponent ``max(1 - alpha_B,
    -alpha_A)``: the NTK is frozen as ``d -> infinity`` (lazy training) iff
    ``alpha_A > 0`` and ``alpha_B > 1``, and moves at ``O(1)`` speed (feature
    learning) when ``alpha_A = 0`` or ``1/2 <= alpha_B <= 1``.  Arguments
    broadcast like numpy ufuncs.

    Parameters
    ----------
    alpha_A : array_like
        ``>= 0`` (outputs bounded at initialisation).
    alpha_B : array_like
        ``>= 1/2`` (gradients bounded at initialisation).

    Returns
    -------
    float or ndarray
    """
    aA = as_array("alpha_A", alpha_A)
    aB = as_array("alpha_B", alpha_B)
    if np.any(aA < 0):
        raise ValueError(f"alpha_A must be >= 0 (Prop. 9), got {aA.min():g}")
    if np.any(aB < 0.5):
        raise ValueError(f"alpha_B must be >= 1/2 (Prop. 9), got {aB.min():g}")
    return np.maximum(1.0 - aB, -aA)[()]


def is_lazy(alpha_A: object, alpha_B: object) -> np.ndarray:
    """Lazy (constant-NTK) regime of Prop. 9: ``alpha_A > 0`` and
    ``alpha_B > 1``.

    Equivalent to :func:`ntk_drift_exponent` ``< 0``; False is Prop. 9's
    feature learning.

    Returns
    -------
    bool or ndarray of bool
    """
    return (np.asarray(ntk_drift_exponent(alpha_A, alpha_B)) < 0)[()]


# -----------------------------------------------------------------------------
# Fig. 3 right / one-hot data
class PowerLawModes(NamedTuple):
    """Diagonal power-law data of Fig. 3 (right), App. C.

    Sample ``n`` has the one-entry structure matrix ``A_n = a_n E_nn``, so mode
    ``k`` is fed by sample ``k`` alone and ``lambda_{n,k} = a_n delta_{nk}``.
    """

    r: np.ndarray  #: growth rates ``k^{-alpha2}``
    C: np.ndarray  #: diagonal of the competition matrix, ``r_k^2/(8 V_k)``
    V: np.ndarray  #: loss drops ``k^{-alpha1}``
    a: np.ndarray  #: the non-zero entry ``A_{k,kk} = sqrt(C_kk m/8)``
    y: np.ndarray  #: labels ``y_k = m r_k/(8 a_k)``


def powerlaw_modes(m: int, alpha1: float, alpha2: float) -> PowerLawModes:
    """Build the diagonal NQF of Fig. 3 (right) (App. C).

    ``r_k = k^{-alpha2}``, ``V_k = k^{-alpha1}``, ``C_kk = r_k^2/(8 V_k)``,
    ``A_{k,kk} = sqrt(C_kk m/8)`` and ``y_k = m r_k/(8 A_{k,kk})``, so that
    Eq. 37 returns exactly these ``r`` and ``C``.

    It is also the one-hot quadratic network of Eq. 299:
    ``x_k = sqrt(a_k) e_k`` and ``f(x) = x^T W W^T x``. In the sample-wise
    reading (Theorem 11) ``zeta_n = r_n ∝ n^{-alpha2}`` and
    ``y_n ∝ n^{-alpha1/2}``, i.e. ``gamma1 = alpha1/2`` and
    ``gamma2 = alpha2``.

    Parameters
    ----------
    m : int
        Number of modes (= samples), ``>= 1``.
    alpha1 : float
        ``> 1``.
    alpha2 : float
        ``> 0``.

    Returns
    -------
    PowerLawModes
    """
    m = integer("m", m)
    alpha1, alpha2 = number("alpha1", alpha1), number("alpha2", alpha2)
    scaling_exponent(alpha1, alpha2)  # validates the exponents
    k = np.arange(1, m + 1, dtype=float)
    r = k**-alpha2
    V = k**-alpha1
    C = r**2 / (8.0 * V)
    a = np.sqrt(C * m / 8.0)
    y = m * r / (8.0 * a)
    return PowerLawModes(r, C, V, a, y)


def onehot_quadratic_gd(
    a: object, y: object, W0: object, lr: float, n_steps: int, every: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on the one-hot quadratic network ``f(x) = x^T W W^T x``
    (Eq. 299).

    With ``x_n = sqrt(a_n) e_n`` the prediction on sample ``n`` is ``a_n
    |w_n|^2``
    (``w_n`` the n-th row of ``W``), the loss is ``L = (1/m) sum_n (a_n |w_n|^2
    - y_n)^2``
    and ``dL/dw_n = (4/m) a_n Delta_n w_n``: an NQF with ``A_n = a_n E_nn``.

    Parameters
    ----------
    a : array_like, shape (m,)
        Squared input norms ``a_n > 0``.
    y : array_like, shape (m,)
        Labels.
    W0 : array_like, shape (m, d)
        Initial weights.
    lr : float
        Learning rate; time is ``t = lr * step``.
    n_steps : int
    every : int
        Record every ``every``-th step (steps ``0, every, 2 every, ... <=
        n_steps``).

    Returns
    -------
    t : ndarray, shape (S,)
        ``lr * step`` of the records.
    z : ndarray, shape (S, m)
        Mode abundances ``z_n = |w_n|^2 = M_nn``.
    """
    a = vector("a", a)
    if np.any(a <= 0):
        raise ValueError("a must be > 0 (squared input norms)")
    y = vector("y", y, a.size)
    W = as_array("W0", W0, ndim=2).copy()
    if W.shape[0] != a.size:
        raise ValueError(
            f"W0 must have {a.size} rows (one per sample), got shape {W.shape}"
        )
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps)
    every = integer("every", every)
    m = a.size
    steps = np.arange(0, n_steps + 1, every)
    z = np.empty((steps.size, m))
    for s in range(n_steps + 1):
        zs = np.einsum("nd,nd->n", W, W)
        if s % every == 0:
            z[s // every] = zs
        if s < n_steps:
            W -= lr * ((4.0 / m) * a * (a * zs - y))[:, None] * W
    if not np.all(np.isfinite(z)):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * steps, z
