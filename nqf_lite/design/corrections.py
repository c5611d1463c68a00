"""Switch-on times for gradient descent from a Gaussian start (this book, from
Thm 2 Eq. 24 and Thm 8 Eq. 158).

Both corrections below are derivations of this book (chapter "One model,
seventeen faces", section "Two corrections, both predicted"), not results of
the paper: the paper's Eq. 158 is the gradient-flow time from a fixed start.

Theorem 8 of the paper gives the time at which a mode of the GLV equation
reaches half of its saturation value ``z_k^inf = r_k/C_kk`` under gradient
*flow* started from ``z_k(0) = eps`` (Eq. 158).  A network trained by
full-batch gradient descent at learning rate ``eta`` from i.i.d. Gaussian
weights differs in two predictable ways, and both move the switch-on later.

**Discrete steps.**  With ``g = B = 0``, Eq. 24 of Theorem 2 reads ``M <- (I -
eta H) M (I - eta H)``.  When the data commute (Assumption 1), ``H`` is
diagonal in the common eigenbasis with entries ``-(r_k - (C z)_k)/2`` (Eqs. 27,
37), so an orthogonal mode follows the logistic *map* ``z <- z (1 + eta (r - C
z)/2)^2``.  With ``h = eta r/2`` and the log-odds ``v = ln(u/(1 - u))`` of ``u
= z/z^inf``, one step adds ``2 ln(1 + h) + 3 h^2 u + O(h^3)``.  The first term
replaces ``r`` by the GD growth rate ``r_gd = (2/eta) ln(1 + eta r/2) < r``
(:func:`gd_growth_rate`); summed over the approach to ``u = 1/2`` the second
adds ``(3/2) h ln 2`` to ``v``, i.e. ``(3/4) ln 2`` steps *earlier*.

**Random initial abundance.**  With weights ``N(0, eps/d)`` and ``d`` neurons,
``z_k(0) = (eps/d) chi^2_d``, and the half-saturation time is linear in ``ln
z_k(0)``.  Its mean is ``ln eps + psi(d/2) - ln(d/2)`` (:func:`log_chi2_mean`,
``psi`` the digamma function): the mean switch-on is that of the geometric mean
``eps e^{psi(d/2) - ln(d/2)} < eps`` (:func:`geometric_mean_abundance`), and
its seed-to-seed standard deviation is ``sqrt(psi'(d/2))/r_gd``
(:func:`log_chi2_sd`).

:func:`gd_switch_on_time` puts the two together; :func:`gd_half_time_from`
gives the time of one run from its own start ``z_k(0)`` (for tests paired on
the start, which isolate the step correction from the random start),
:func:`log_chi2_kurtosis` and
:func:`spread_ratio` judge the
predicted seed-to-seed spread, and :func:`out_of_order_probability` gives the
chance that the random start alone switches two modes on in the wrong order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import digamma, polygamma
from scipy.stats import beta, binom

from nqf_lite._checks import (
    as_array,
    broadcast,
    fraction,
    generator,
    integer,
    positive,
    width,
)
from nqf_lite.dynamics.solvable import switch_on_time_exact

__all__ = [
    "SATURATION_LEAD_STEPS",
    "gd_growth_rate",
    "gd_half_time_from",
    "gd_switch_on_time",
    "geometric_mean_abundance",
    "log_chi2_kurtosis",
    "log_chi2_mean",
    "log_chi2_sd",
    "OrderTally",
    "order_tally",
    "out_of_order_probability",
    "spread_ratio",
]

#: steps by which the saturation phase of the logistic map runs ahead of the
#: flow, (3/4) ln 2
SATURATION_LEAD_STEPS = 0.75 * np.log(2.0)


def gd_growth_rate(r: object, lr: float) -> np.ndarray:
    """Growth rate of a small mode under full-batch GD,
    ``(2/lr) ln(1 + lr r/2)`` (Eq. 24).

    One GD step multiplies a small abundance ``z_k`` by ``(1 + lr r_k/2)^2``
    (Eq. 24 of Theorem 2 in the common eigenbasis of Assumption 1); per unit of
    flow time ``t = lr * step`` that is the rate returned here.  It tends to
    ``r`` as ``lr -> 0``.

    Parameters
    ----------
    r : array_like
        Growth rates ``r_k`` of Eq. 37.
    lr : float
        Learning rate ``> 0``.

    Returns
    -------
    ndarray or float
        Same shape as ``r``.

    Raises
    ------
    ValueError
        If ``1 + lr r_k/2 <= 0`` for some ``k`` (a step would flip the sign of
        the mode).
    """
    r = as_array("r", r)
    lr = positive("lr", lr)
    if np.any(1.0 + 0.5 * lr * r <= 0):
        raise ValueError(
            f"lr * r / 2 must be > -1 for every mode (lr = {lr:g}, min r = "
            f"{r.min():.3g})"
        )
    return ((2.0 / lr) * np.log1p(0.5 * lr * r))[()]


def log_chi2_mean(d: int) -> float:
    """``E ln(chi^2_d / d) = psi(d/2) - ln(d/2)`` (negative; about ``-1/d`` for
    large ``d``).

    Parameters
    ----------
    d : int
        Degrees of freedom: the number of neurons of a width-``d`` layer.
    """
    d = width("d", d)
    return float(digamma(d / 2) - np.log(d / 2))


def log_chi2_sd(d: int) -> float:
    """Standard deviation of ``ln chi^2_d``, ``sqrt(psi'(d/2))`` (about
    ``sqrt(2/d)``).

    Parameters
    ----------
    d : int
        Degrees of freedom: the number of neurons of a width-``d`` layer.
    """
    d = width("d", d)
    return float(np.sqrt(polygamma(1, d / 2)))


def geometric_mean_abundance(eps: float, d: int) -> float:
    """Geometric mean of ``z_k(0) = (eps/d) chi^2_d``:
    ``eps exp(psi(d/2) - ln(d/2))``.

    Parameters
    ----------
    eps : float
        Mean initial abundance ``E z_k(0) = d sigma^2`` for weights
        ``N(0, sigma^2)``.
    d : int
        Number of neurons.
    """
    return positive("eps", eps) * float(np.exp(log_chi2_mean(d)))


def gd_switch_on_time(
    r: object, C: object, eps: float, lr: float, d: int | None = None
) -> np.ndarray:
    """Mean half-saturation time of an orthogonal mode under GD from a Gaussian
    start.

    ``t_k = (1/r_gd) ln((z^inf - e)/e) - (3/4) lr ln 2`` in flow time ``t = lr
    * step``,
    with ``z^inf = r_k/C_kk``, the GD rate ``r_gd`` of :func:`gd_growth_rate`
    and ``e`` the geometric mean :func:`geometric_mean_abundance` of ``z_k(0)``
    (``e = eps`` when ``d`` is None).  It is Eq. 158 of Theorem 8 (with ``rho =
    1/2``) for the logistic map of Eq. 24, accurate to ``O(lr)`` in steps; as
    ``lr -> 0`` and ``d -> inf`` it tends to
    :func:`nqf_lite.dynamics.solvable.switch_on_time_exact`.  Arguments
    broadcast like numpy ufuncs.

    Parameters
    ----------
    r : array_like
        Growth rates ``r_k`` (Eq. 37).
    C : array_like
        Self-competitions ``C_kk``, broadcast with ``r``.
    eps : float
        Initial abundance: ``E z_k(0)`` for Gaussian weights of ``d`` neurons,
        or ``z_k(0)`` itself when ``d`` is None.
    lr : float
        Learning rate of full-batch GD, ``lr r_k/2 < 1`` for every growing
        mode.
    d : int, optional
        Number of neurons, when the weights are i.i.d. Gaussian.

    Returns
    -------
    ndarray or float
        ``inf`` where ``r_k <= 0`` or ``C_kk = 0`` (the mode never switches
        on).

    Raises
    ------
    ValueError
        If a growing mode starts at or above half saturation, if
        ``lr r_k/2 >= 1`` for a growing mode (the map overshoots its
        saturation), or on bad shapes and values.
    """
    r = as_array("r", r)
    c = as_array("C", C)
    if np.any(c < 0):
        raise ValueError(
            "C must be >= 0 (C_kk = (8/m) sum_mu lambda_mu,k^2, Eq. 37)"
        )
    r, c = broadcast("r and C", r, c)
    lr = positive("lr", lr)
    e = positive("eps", eps) if d is None else geometric_mean_abundance(eps, d)
    grow = (r > 0) & (c > 0)
    if np.any(grow & (0.5 * lr * r >= 1.0)):
        raise ValueError(
            f"lr * r / 2 must be < 1 for every growing mode (lr = {lr:g}, "
            f"max r = {r.max():.3g})"
        )
    if np.any(grow & (e >= 0.5 * r / np.where(grow, c, 1.0))):
        raise ValueError(
            f"the initial abundance {e:.3g} is not below half saturation "
            "r_k/(2 C_kk) for every mode"
        )
    out = np.full(r.shape, np.inf)
    r_gd = gd_growth_rate(r[grow], lr)
    # the same saturation z^inf = r/C at the GD rate: C scales with r_gd/r
    out[grow] = switch_on_time_exact(r_gd, c[grow] * r_gd / r[grow], e)
    out[grow] -= SATURATION_LEAD_STEPS * lr
    return out[()]


def gd_half_time_from(
    r: object, C: object, z0: object, lr: float, lead: bool = True
) -> np.ndarray:
    """Half-saturation time of an orthogonal mode under GD from its own start
    ``z_k(0)``.

    ``t = (1/r_gd) ln((z^inf - z0)/z0) - (3/4) lr ln 2`` in flow time ``t = lr
    * step``, with
    ``z^inf = r/C`` and the GD rate :func:`gd_growth_rate` (this book's step
    correction of Eq. 158). Unlike :func:`gd_switch_on_time` it does not
    average over a random start: ``z0`` is the start of one run (or an array of
    runs), so a measured time can be compared with it run by run.

    Parameters
    ----------
    r, C : array_like
        Growth rates ``r_k > 0`` and self-competitions ``C_kk > 0``.
    z0 : array_like
        Initial abundances, ``0 < z0 < r/(2C)``; broadcast with ``r`` and ``C``
        (e.g. shape ``(runs, modes)`` against ``(modes,)``).
    lr : float
        Learning rate, ``lr r/2 < 1``.
    lead : bool, default True
        Subtract the saturation lead ``(3/4) lr ln 2``; ``False`` gives the
        time without it.

    Returns
    -------
    ndarray or float
        The broadcast shape of ``r``, ``C`` and ``z0``.

    Raises
    ------
    ValueError
        On shapes that do not broadcast, a rate or competition that is not
        positive, a start that is not below half saturation, or
        ``lr r/2 >= 1``.
    """
    r = as_array("r", r)
    c = as_array("C", C)
    z0 = as_array("z0", z0)
    r, c, z0 = broadcast("r, C and z0", r, c, z0)
    lr = positive("lr", lr)
    if not isinstance(lead, (bool, np.bool_)):
        raise TypeError(f"lead must be True or False, got {lead!r}")
    if np.any(r <= 0) or np.any(c <= 0):
        raise ValueError("r and C must be > 0 (a growing mode that saturates)")
    if np.any(0.5 * lr * r >= 1.0):
        raise ValueError(
            f"lr * r / 2 must be < 1 (lr = {lr:g}, max r = {r.max():.3g})"
        )
    zinf = r / c
    if np.any(z0 <= 0) or np.any(z0 >= 0.5 * zinf):
        raise ValueError("z0 must be > 0 and below half saturation r/(2 C)")
    t = np.log((zinf - z0) / z0) / gd_growth_rate(r, lr)
    return (t - SATURATION_LEAD_STEPS * lr if lead else t)[()]


def log_chi2_kurtosis(d: int) -> float:
    """Kurtosis of ``ln chi^2_d``: ``3 + psi_3(d/2) / psi_1(d/2)^2`` (``psi_n``
    the polygamma functions).

    It is 3 for a normal variable.  The sampling error of a standard deviation
    measured on ``n`` draws is about ``sqrt((kurtosis - 1)/(4 n))`` of it;
    :func:`spread_ratio` uses it.

    Parameters
    ----------
    d : int
        Degrees of freedom.
    """
    d = width("d", d)
    return float(3.0 + polygamma(3, d / 2) / polygamma(1, d / 2) ** 2)


def spread_ratio(
    times: object, sd_predicted: object, kurtosis: float
) -> tuple[float, float]:
    """Measured over predicted seed-to-seed spread of switch-on times, pooled
    over modes.

    ``ratio = sqrt(mean_k s_k^2 / sigma_k^2)`` with ``s_k`` the sample standard
    deviation of mode ``k`` over the runs (rows of ``times``) and ``sigma_k``
    the prediction (e.g. ``sqrt(psi'(d/2))/r_gd``); its standard error is
    ``sqrt((kurtosis - 1)/(4 n K))`` for ``n`` runs and ``K`` independent modes
    (the delta method for a variance).

    Parameters
    ----------
    times : array_like, shape (n, K)
        Switch-on times, one row per run, ``n >= 2``; every entry finite.
    sd_predicted : array_like, shape (K,)
        Predicted standard deviations, ``> 0``.
    kurtosis : float
        Kurtosis of the fluctuation that sets the spread
        (:func:`log_chi2_kurtosis`), ``>= 1``.

    Returns
    -------
    ratio, standard_error : float

    Raises
    ------
    ValueError
        On a wrong shape, fewer than two runs, a time that is not finite (a run
        that never switched on), a prediction that is not positive or a
        kurtosis below 1.
    """
    t = as_array("times", times, ndim=2)
    n, k = t.shape
    if n < 2:
        raise ValueError(f"times must hold at least 2 runs (rows), got {n}")
    sd = as_array("sd_predicted", sd_predicted, ndim=1)
    if sd.shape != (k,):
        raise ValueError(
            f"sd_predicted must have shape ({k},), got {sd.shape}"
        )
    if np.any(sd <= 0):
        raise ValueError("sd_predicted must be > 0")
    kurt = float(kurtosis)
    if not kurt >= 1.0:
        raise ValueError(f"kurtosis must be >= 1, got {kurtosis!r}")
    ratio = float(np.sqrt(np.mean(t.var(axis=0, ddof=1) / sd**2)))
    return ratio, float(np.sqrt((kurt - 1.0) / (4.0 * n * k)))


def out_of_order_probability(
    r: object,
    C: object,
    eps: float,
    lr: float,
    d: int,
    rng: np.random.Generator | int,
    n_draws: int = 1_000_000,
    level: float = 0.999,
) -> tuple[float, float]:
    """Probability that a Gaussian start switches orthogonal modes on out of
    the given order (this book).

    With weights ``N(0, eps/d)`` and ``d`` neurons the starts ``z_k(0) =
    (eps/d) chi^2_d`` of orthonormal modes are independent, and each mode
    reaches half saturation at :func:`gd_half_time_from` of its own start.
    The order of the mean times is the forecast's; a run whose times are not
    increasing in the given order switches on out of it.  The probability is
    estimated on ``n_draws`` independent starts, with a one-sided
    Clopper-Pearson upper bound.

    Parameters
    ----------
    r, C : array_like, shape (K,)
        Growth rates and self-competitions ``C_kk`` of the growing modes,
        ``> 0``, in the order to test (``K >= 2``).
    eps : float
        Scale of the start, ``E z_k(0) = eps``, below half of every
        saturation ``r/(2 C)``.  A draw above half saturation counts as
        switched on at time 0.
    lr : float
        Learning rate, ``lr r/2 < 1``.
    d : int
        Number of neurons (degrees of freedom of ``chi^2_d``).
    rng : numpy.random.Generator or int
        Source of the draws (or its seed).
    n_draws : int, default 1,000,000
        Number of simulated starts.
    level : float, default 0.999
        Confidence of the upper bound, in (0, 1).

    Returns
    -------
    p, p_upper : float
        The estimate and its upper confidence bound.

    Raises
    ------
    ValueError
        On fewer than two modes, a rate or competition that is not positive,
        ``eps`` not below half saturation, ``lr r/2 >= 1`` or a bad
        ``n_draws`` or ``level``.
    TypeError
        If ``rng`` is neither a numpy Generator nor an int seed.
    """
    r = as_array("r", r, ndim=1)
    c = as_array("C", C, ndim=1)
    r, c = broadcast("r and C", r, c)
    if r.size < 2:
        raise ValueError(f"r must hold at least 2 modes, got {r.size}")
    if np.any(r <= 0) or np.any(c <= 0):
        raise ValueError("r and C must be > 0 (growing modes that saturate)")
    eps, lr, d = positive("eps", eps), positive("lr", lr), width("d", d)
    if np.any(0.5 * lr * r >= 1.0):
        raise ValueError(
            f"lr * r / 2 must be < 1 (lr = {lr:g}, max r = {r.max():.3g})"
        )
    half = 0.5 * r / c
    if eps >= half.min():
        raise ValueError(
            f"eps must be below half saturation r/(2 C) = {half.min():.3g}"
        )
    rng = generator("rng", rng)
    if rng is None:
        raise TypeError("rng must be a numpy Generator or an int seed")
    n_draws = integer("n_draws", n_draws, minimum=1)
    level = fraction("level", level)
    rate, bad, chunk = gd_growth_rate(r, lr), 0, 2**16
    for start in range(0, n_draws, chunk):
        n = min(chunk, n_draws - start)
        z0 = np.minimum(eps / d * rng.chisquare(d, (n, r.size)), half)
        t = np.log((2 * half - z0) / z0) / rate
        bad += int(np.count_nonzero((np.diff(t, axis=1) <= 0).any(axis=1)))
    upper = 1.0 if bad == n_draws else beta.ppf(level, bad + 1, n_draws - bad)
    return bad / n_draws, float(upper)


class OrderTally(NamedTuple):
    """Runs out of the forecast order, the most that the random start allows,
    and runs out of the order of their own start (:func:`order_tally`)."""

    out_of_order: int
    bound: int
    off_own_order: int


def order_tally(
    times: object, own_times: object, p_upper: float, alpha: float
) -> OrderTally:
    """Count the runs that switch their modes on out of order (this book).

    Parameters
    ----------
    times : array_like, shape (n, K)
        Measured switch-on times, one row per run, the columns in the
        forecast order; a time that is not finite (a mode that never switched
        on) puts its run out of every order.
    own_times : array_like, shape (n, K)
        The times forecast from each run's own start (e.g.
        :func:`gd_half_time_from` of its ``z_k(0)``).
    p_upper : float
        Upper bound on the probability that a run is out of the forecast
        order (:func:`out_of_order_probability`), in [0, 1].
    alpha : float
        Level of the bound, in (0, 1): ``bound`` is the binomial
        ``1 - alpha`` quantile of the number of runs out of order.

    Returns
    -------
    OrderTally
        ``out_of_order`` (times not increasing along a row), ``bound`` and
        ``off_own_order`` (the measured order differs from that of
        ``own_times``).
    """
    t = np.asarray(times, dtype=float)  # may hold inf or nan: lost runs
    if t.ndim != 2:
        raise ValueError(f"times must have shape (n, K), got {t.shape}")
    own = as_array("own_times", own_times, ndim=2)
    if own.shape != t.shape:
        raise ValueError(
            f"own_times must have the shape of times {t.shape}, got "
            f"{own.shape}"
        )
    p = float(p_upper)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p_upper must lie in [0, 1], got {p_upper!r}")
    alpha = fraction("alpha", alpha)
    lost = ~np.isfinite(t).all(axis=1)
    out = (np.diff(t, axis=1) <= 0).any(axis=1) | lost
    t_safe = np.where(np.isfinite(t), t, np.inf)
    off = (np.argsort(t_safe, 1) != np.argsort(own, 1)).any(axis=1) | lost
    bound = int(binom.ppf(1.0 - alpha, t.shape[0], p))
    return OrderTally(int(out.sum()), bound, int(off.sum()))
