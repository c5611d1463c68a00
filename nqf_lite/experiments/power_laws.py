"""The power-law runs of Section 6 and App. C (Thms 9, 11; Eqs. 292-298):
exponents fitted to exact loss curves, and the Fourier networks of Fig. 5.

Exact theory: :func:`start_exponent` (Thm 9, Eq. 292),
:func:`local_exponents` and :func:`eq295_drift` (Eq. 295),
:func:`exponent_shifts` (the eps -> 0 limit, Eq. 292),
:func:`theory_exponents` (many starts), :func:`fourier_power_law` (many
Fourier modes). Networks: :func:`train_to_switch_on` and
:func:`net_vs_nqf` (Fig. 5); the one-hot runs, the plain control and the
NTK's drift are in :mod:`~nqf_lite.experiments.power_law_networks`.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from nqf_lite._checks import (
    as_array,
    check_shape,
    integer,
    natural,
    positive,
    vector,
)
from nqf_lite.dynamics import scaling as sc
from nqf_lite.dynamics.loglog import LogLogFit
from nqf_lite.dynamics.solvable import (
    excess_loss_draws,
    feature_trajectory,
    switch_on_time_exact,
)
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments.fourier import train_fourier_ensemble

__all__ = [
    "EpsLimit",
    "eq295_drift",
    "FourierPowerLaw",
    "TheoryExponents",
    "exponent_shifts",
    "start_exponent",
    "fourier_power_law",
    "local_exponents",
    "net_vs_nqf",
    "theory_exponents",
    "train_to_switch_on",
]


def _modes(name: str, value: object, m: int) -> tuple[int, int]:
    """A pair of 0-based mode indices ``0 <= lo < hi < m``."""
    try:
        lo, hi = (int(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a pair of mode indices, got {value!r}"
        ) from exc
    if not 0 <= lo < hi < m:
        raise ValueError(
            f"{name} must satisfy 0 <= lo < hi < {m} (0-based modes), got "
            f"{value!r}"
        )
    return lo, hi


def start_exponent(
    r: object,
    C: object,
    alpha1: float,
    alpha2: float,
    eps: float,
    beta0: float,
    t: object,
    window: tuple[int, int] = (2, 49),
) -> dict:
    """The exact loss from ``z_k(0) = eps k^-beta0``, its fitted exponent and
    Eq. 292's (Theorem 9; App. C, Eq. 292; the paper's Fig. 3, right).

    The excess loss (Eq. 163) of the exact logistic modes (Theorem 6, Eq.
    39) is evaluated at the times ``t`` and fitted between the switch-ons
    (Eq. 157) of the 0-based modes ``window``; ``k_eff`` of Eq. 292 at the
    same start is averaged over the window's modes.

    Parameters
    ----------
    r, C : array_like, shape (K,)
        Growth rates and self-competitions of the modes.
    alpha1, alpha2 : float
        Their decays.
    eps, beta0 : float
        The start's scale and decay (``beta0 = alpha1 - alpha2``: aligned;
        ``0``: uniform).
    t : array_like, shape (T,)
        Increasing times that cover the window.
    window : (int, int)

    Returns
    -------
    dict
        ``E`` (T,), the switch-ons ``ts`` (K,), the fit ``window`` in time,
        the ``fit`` (:class:`~nqf_lite.dynamics.loglog.LogLogFit`) and
        ``keff``.
    """
    r = vector("r", r)
    C = vector("C", C, r.size)
    lo, hi = _modes("window", window, r.size)
    k = np.arange(1, r.size + 1)
    z0 = positive("eps", eps) * k ** -float(beta0)
    E = sc.excess_loss(feature_trajectory(t, r, C, z0), r, C)
    ts = switch_on_time_exact(r, C, z0)
    keff = sc.effective_slope(alpha1, alpha2, r, C, eps, beta0=beta0)
    fit = sc.fit_loglog_slope(t, E, (ts[lo], ts[hi]))
    win = (ts[lo], ts[hi])
    return dict(E=E, ts=ts, window=win, fit=fit, keff=keff[lo : hi + 1].mean())


def local_exponents(
    r: object,
    C: object,
    z0: object,
    edges: Sequence[int],
    n_grid: int = 1500,
    last: int = 60,
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Fitted exponents of the exact loss between switch-ons (App. C, Eq.
    295).

    The excess loss (Eq. 163) of the exact logistic modes (Theorem 6, Eq.
    39) from ``z0`` is evaluated on ``n_grid`` log-uniform times from a tenth
    of the first switch-on to the switch-on of mode ``last`` (0-based), and
    fitted on the windows ``[t*_a, t*_b]`` between consecutive ``edges``
    (1-based mode numbers): the local exponent of Eq. 295.

    Parameters
    ----------
    r, C, z0 : array_like, shape (K,)
        Growth rates, self-competitions and the start (``> 0``).
    edges : sequence of int
        Increasing 1-based mode numbers, at least two, at most ``last + 1``.
    n_grid, last : int
        Number of times; the 0-based mode whose switch-on ends the curve.

    Returns
    -------
    exponents : ndarray, shape (len(edges) - 1,)
        Minus the fitted log-log slopes.
    windows : list of (float, float)
    """
    r = vector("r", r)
    last = natural("last", last)
    edges = [integer("edges", e) for e in edges]
    if len(edges) < 2 or np.any(np.diff(edges) <= 0) or edges[-1] > last + 1:
        raise ValueError(
            f"edges must be at least two increasing mode numbers in [1, "
            f"{last + 1}], got {edges}"
        )
    ts = switch_on_time_exact(r, C, z0)
    t = np.geomspace(ts[0] / 10, ts[last], integer("n_grid", n_grid))
    E = sc.excess_loss(feature_trajectory(t, r, C, z0), r, C)
    wins = [(ts[a - 1], ts[b - 1]) for a, b in zip(edges[:-1], edges[1:])]
    slopes = [-sc.fit_loglog_slope(t, E, w).slope for w in wins]
    return np.array(slopes), wins


def eq295_drift(
    r: object,
    C: object,
    alpha1: float,
    alpha2: float,
    eps: Sequence[float],
    edges: Sequence[int],
) -> dict[float, dict]:
    """The local exponent of the uniform start against Eq. 295, one ``eps``
    after the other (App. C, Eqs. 292, 295; Theorem 9).

    For each ``eps`` the exact loss from the uniform start ``z_k(0) = eps``
    and from the aligned start ``eps k^-(alpha1 - alpha2)`` (no finite-eps
    correction) is fitted between the switch-ons of consecutive ``edges``
    (:func:`local_exponents`, each start on its own windows). The aligned
    start's exponent divides out what the window does to a fit: the measured
    local exponent is the ratio of the two times Theorem 9's
    ``(alpha1 - 1)/alpha2``. Eq. 295 is taken at the geometric centres of the
    uniform start's windows with mode 1's rate and ceiling. The relative
    error is expected of order ``(ln ln(1/eps) / ln(1/eps))^2``.

    Parameters
    ----------
    r, C : array_like, shape (K,)
        Rates and self-competitions of the power-law modes.
    alpha1, alpha2 : float
        Their decays (Theorem 9).
    eps : sequence of float
        Starts, each ``> 0``.
    edges : sequence of int
        1-based mode numbers, as in :func:`local_exponents`.

    Returns
    -------
    dict
        ``eps -> dict``: the window centres ``t``, the ``measured`` local
        exponents and Eq. 295's (``eq295``), the ``order`` of the error and
        ``err``, the largest ``|measured / eq295 - 1|``.
    """
    r = vector("r", r)
    C = vector("C", C, r.size)
    k = np.arange(1, r.size + 1)
    beta0 = alpha1 - alpha2
    pred = sc.scaling_exponent(alpha1, alpha2)
    at_1 = dict(zeta1=r[0], zinf1=r[0] / C[0])  # mode 1
    drift = {}
    for e in eps:
        e = positive("eps", e)
        uniform, wins = local_exponents(r, C, np.full(r.size, e), edges)
        aligned = local_exponents(r, C, e * k**-beta0, edges)[0]
        measured = uniform / aligned * pred
        t_mid = np.array([np.sqrt(a * b) for a, b in wins])
        eq295 = sc.effective_slope_at_time(t_mid, alpha1, alpha2, e, **at_1)
        ell = np.log(1 / e)
        order = (np.log(ell) / ell) ** 2
        err = np.abs(measured / eq295 - 1).max()
        drift[e] = dict(t=t_mid, measured=measured, eq295=eq295)
        drift[e].update(order=order, err=err)
    return drift


class EpsLimit(NamedTuple):
    """What :func:`exponent_shifts` returns: shifts of shape (draws, eps) and
    their rates of decay in ``ln(1/eps)``, one per draw."""

    shift: np.ndarray
    shift_eq292: np.ndarray
    q: np.ndarray
    q_eq292: np.ndarray


def exponent_shifts(
    alpha1: float,
    alpha2: float,
    beta0: float,
    eps: object,
    starts: Sequence[object],
    m: int = 1000,
    window: tuple[int, int] = (3, 50),
    n_grid: int = 600,
) -> EpsLimit:
    """How fast the exponent of a random start approaches its eps -> 0 value
    (Thms 9 and 11; App. C, Eq. 292 for the rate).

    On the modes ``r_k = k^-alpha2``, ``V_k = k^-alpha1`` of
    :func:`~nqf_lite.dynamics.scaling.powerlaw_modes` the start
    ``z_k(0) = eps c_k k^-beta0`` is compared with the aligned start
    ``eps z_k^inf / z_1^inf`` (no ``1/ln(1/eps)`` correction): the shift of
    the fitted exponent, in the limiting time ``tau = t / ln(1/eps)`` on a
    window between the limiting switch-ons ``tau*_k = 1/r_k`` of modes
    ``window`` (0-based, the window's edges halfway in log between
    neighbours), and the same shift from Eq. 292's mode-wise ``k_eff``,
    averaged over those modes. ``|shift| ~ ln(1/eps)^-q``: ``q`` is minus
    the least-squares slope of ``ln|shift|`` against ``ln ln(1/eps)``.

    Parameters
    ----------
    alpha1, alpha2, beta0 : float
        The exponents of the data (Theorem 9), and of the start in ``k``.
    eps : array_like, shape (E,)
        At least two scales of the start, in (0, 1).
    starts : sequence of array_like, each shape (m,)
        The random factors ``c_k > 0``, one array a draw.
    m, n_grid : int
        Number of modes, and of times on the window.
    window : (int, int)
        0-based modes ``(lo, hi)``, ``1 <= lo < hi < m - 1``.

    Returns
    -------
    EpsLimit
        ``shift`` and ``shift_eq292`` (draws, E); ``q`` and ``q_eq292``
        (draws,).
    """
    eps = vector("eps", eps)
    if eps.size < 2 or np.any(eps <= 0) or np.any(eps >= 1):
        raise ValueError(f"eps must hold at least two values in (0, 1): {eps}")
    lo, hi = _modes("window", window, integer("m", m) - 1)
    if lo < 1:
        raise ValueError(f"window must start at mode 1 or later: {window}")
    starts = [vector("starts", c, m) for c in starts]
    ml = sc.powerlaw_modes(m, alpha1, alpha2)
    k = np.arange(1, m + 1)
    zinf = ml.r / ml.C
    tau_star = 1 / ml.r  # the limiting switch-ons
    win = tuple(np.sqrt(tau_star[[lo - 1, hi - 1]] * tau_star[[lo, hi]]))
    tau = np.geomspace(*win, integer("n_grid", n_grid))

    def fitted_slope(e, z0):
        t = tau * np.log(1 / e)
        E = sc.excess_loss(feature_trajectory(t, ml.r, ml.C, z0), ml.r, ml.C)
        return sc.fit_loglog_slope(tau, E, win).slope

    aligned = {e: fitted_slope(e, e * zinf / zinf[0]) for e in eps}

    def fit_shift(e, c):
        return aligned[e] - fitted_slope(e, e * c * k**-beta0)

    def keff_shift(e, c):
        keff = sc.effective_slope(
            alpha1, alpha2, ml.r, ml.C, e * c, beta0=beta0
        )
        return keff[lo:hi].mean() - sc.scaling_exponent(alpha1, alpha2)

    shift = np.array([[fit_shift(e, c) for e in eps] for c in starts])
    shift_292 = np.array([[keff_shift(e, c) for e in eps] for c in starts])
    ell = np.log(1 / eps)

    def rate(d):  # minus the slope of ln|d| against ln ell, one per draw
        return -np.polyfit(np.log(ell), np.log(np.abs(d)).T, 1)[0]

    return EpsLimit(shift, shift_292, rate(shift), rate(shift_292))


class TheoryExponents(NamedTuple):
    """What :func:`theory_exponents` returns."""

    t: np.ndarray
    E: np.ndarray
    ts: np.ndarray
    fits: np.ndarray


def theory_exponents(
    r: object,
    C: object,
    z0: object,
    window: tuple[int, int],
    span: tuple[int, int] | None = None,
    margin: tuple[float, float] = (1.0, 1.0),
    n_grid: int = 600,
) -> TheoryExponents:
    """The exact loss from many starts and each one's fitted exponent
    (Theorem 6, Eq. 39; Eq. 163; App. C, Eq. 292).

    Each row of ``z0`` is one start; its exact excess loss is fitted on its
    own window, the switch-ons of its modes ``window`` (0-based). The common
    time grid runs from the earliest switch-on of mode ``span[0]`` divided by
    ``margin[0]`` to the latest of mode ``span[1]`` times ``margin[1]``.

    Parameters
    ----------
    r, C : array_like, shape (K,)
    z0 : array_like, shape (N, K)
        One start a row, ``> 0``.
    window, span : (int, int)
        0-based modes; ``span`` defaults to ``window``.
    margin : (float, float)
        Factors ``>= 1`` that widen the grid.
    n_grid : int

    Returns
    -------
    TheoryExponents
        ``t`` (T,), ``E`` (T, N), the switch-ons ``ts`` (N, K) and the
        exponents ``fits`` (N,).
    """
    r = vector("r", r)
    C = vector("C", C, r.size)
    z0 = as_array("z0", z0, ndim=2)
    check_shape("z0", z0, (z0.shape[0], r.size))
    lo, hi = _modes("window", window, r.size)
    first, last = _modes("span", window if span is None else span, r.size)
    pad_lo, pad_hi = (positive("margin", v) for v in margin)
    if pad_lo < 1 or pad_hi < 1:
        raise ValueError(f"margin must hold factors >= 1, got {margin}")
    ts = switch_on_time_exact(r[None], C[None], z0)
    t_lo, t_hi = ts[:, first].min() / pad_lo, ts[:, last].max() * pad_hi
    t = np.geomspace(t_lo, t_hi, integer("n_grid", n_grid))
    E = excess_loss_draws(t, r, C, z0)
    fits = -sc.fit_loglog_slopes(t, E, ts[:, [lo, hi]])
    return TheoryExponents(t, E, ts, fits)


def train_to_switch_on(
    a0: object,
    W0: object,
    s: object,
    b: object,
    psi: object,
    lr: float,
    c: float = 1.0,
    scale: float = 1.0,
    model: str = "mlp",
    last: int = 14,
    overrun: float = 1.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Train an ensemble of Fourier MLPs (or their NQFs) past a switch-on
    (the paper's Fig. 5; App. C, Eqs. 296-297).

    The target is ``y = c sum_k b_k psi_k``; each run's growing modes start
    at ``z_k(0) = (a_k + W_k)^2 / 2`` and switch on at the exact times of
    Theorem 6 (Eq. 157) with the rates of Eq. 297. The runs are trained
    until ``overrun`` times the latest switch-on of mode ``last`` (0-based)
    by :func:`~nqf_lite.experiments.fourier.train_fourier_ensemble`.

    Parameters
    ----------
    a0, W0 : array_like, shape (S, P)
        Initial weights of the ``S`` runs.
    s, b : array_like, shape (P,)
        Feature weights and target coefficients.
    psi : array_like, shape (M, P)
    lr, c, scale : float
        Learning rate, target amplitude and output prefactor.
    model : {"mlp", "nqf"}
    last, overrun : int, float
        The 0-based mode, and a factor ``>= 1`` on its switch-on time.

    Returns
    -------
    t : ndarray, shape (n_steps,)
    L : ndarray, shape (n_steps, S)
        Loss of each run before each step.
    """
    a0, W0 = as_array("a0", a0, ndim=2), as_array("W0", W0, ndim=2)
    if positive("overrun", overrun) < 1:
        raise ValueError(f"overrun must be >= 1, got {overrun}")
    r, C = fo.fourier_modes(s, b, c, scale)
    last = _modes("last", (0, last), r.size)[1]
    z0 = (a0 + W0) ** 2 / 2
    ts = switch_on_time_exact(r[None], C[None], z0)
    n_steps = int(np.ceil(overrun * ts[:, last].max() / positive("lr", lr)))
    y = fo.fourier_target(psi, b, c)
    return train_fourier_ensemble(
        a0, W0, s, psi, y, lr, n_steps, scale=scale, model=model
    )[:2]


def net_vs_nqf(
    t: object,
    L_net: object,
    L_nqf: object,
    ts: object,
    window: tuple[int, int] = (2, 14),
) -> dict[str, np.ndarray]:
    """A network's loss curves against its NQF's, run by run (Theorem 1, the
    paper's Fig. 5).

    Each run ``j`` is fitted on its own window, the switch-ons
    ``ts[j, window]``; the first record (``t = 0``) is left out.

    Parameters
    ----------
    t : array_like, shape (T,)
    L_net, L_nqf : array_like, shape (T, S)
        Losses, one run a column.
    ts : array_like, shape (S, K)
        Each run's switch-on times.
    window : (int, int)

    Returns
    -------
    dict
        ``fit_net`` and ``fit_nqf``: the exponents (S,); ``gap`` and
        ``gap_mean``: the largest and the mean ``|ln L_net/L_NQF|`` on each
        run's window (S,).
    """
    t = vector("t", t)
    L_net = as_array("L_net", L_net, ndim=2)
    check_shape("L_nqf", as_array("L_nqf", L_nqf, ndim=2), L_net.shape)
    L_nqf = np.asarray(L_nqf)
    ts = as_array("ts", ts, ndim=2)
    n = L_net.shape[1]
    check_shape("ts", ts, (n, ts.shape[1]))
    lo, hi = _modes("window", window, ts.shape[1])
    fit_net, fit_nqf = (
        -sc.fit_loglog_slopes(t[1:], L[1:], ts[:, [lo, hi]])
        for L in (L_net, L_nqf)
    )
    gap, gap_mean = np.empty(n), np.empty(n)
    for j in range(n):
        in_w = (t >= ts[j, lo]) & (t <= ts[j, hi])
        log_gap = np.abs(np.log(L_net[in_w, j] / L_nqf[in_w, j]))
        gap[j], gap_mean[j] = log_gap.max(), log_gap.mean()
    return dict(fit_net=fit_net, fit_nqf=fit_nqf, gap=gap, gap_mean=gap_mean)


class FourierPowerLaw(NamedTuple):
    """What :func:`fourier_power_law` returns."""

    t: np.ndarray
    E: np.ndarray
    window: tuple[float, float]
    fit: LogLogFit
    keff: float
    pred: float


def fourier_power_law(
    theta: float,
    beta: float,
    P: int,
    c: float,
    z0: float,
    window: tuple[int, int] = (4, 99),
    n_grid: int = 600,
) -> FourierPowerLaw:
    """The exact NQF loss of ``P`` Fourier modes and its exponents (App. C,
    Eqs. 292, 297-298).

    Features ``s_k = k^-theta``, target ``b_k = k^-beta`` (amplitude ``c``),
    every growing mode from ``z_k(0) = z0``. The loss (Eq. 163 along Eq. 39)
    runs on ``n_grid`` log-uniform times from a twentieth of the first
    switch-on to the last, and is fitted between the switch-ons of the modes
    ``window`` (0-based).

    Parameters
    ----------
    theta, beta, c, z0 : float
        Feature and target decay, target amplitude, start (``> 0``).
    P, n_grid : int
        Number of modes, and of times.
    window : (int, int)

    Returns
    -------
    FourierPowerLaw
        ``t``, ``E``, the fit ``window`` (times) and its ``fit``; ``keff``,
        Eq. 292 averaged over the window's modes; ``pred``, the eps -> 0
        exponent ``(2 beta - 1)/(theta + beta)`` of Eq. 298.
    """
    P = integer("P", P)
    lo, hi = _modes("window", window, P)
    z0 = positive("z0", z0)
    kP = np.arange(1, P + 1, dtype=float)
    r, C = fo.fourier_modes(kP**-theta, kP**-beta, c)
    z0_k = np.full(P, z0)
    ts = switch_on_time_exact(r, C, z0_k)
    t = np.geomspace(ts[0] / 20, ts[-1], integer("n_grid", n_grid))
    E = sc.excess_loss(feature_trajectory(t, r, C, z0_k), r, C)
    win = (ts[lo], ts[hi])
    keff = sc.effective_slope(2 * beta, theta + beta, r, C, z0)
    fit = sc.fit_loglog_slope(t, E, win)
    pred = sc.scaling_exponent(2 * beta, theta + beta)
    return FourierPowerLaw(t, E, win, fit, keff[lo : hi + 1].mean(), pred)
