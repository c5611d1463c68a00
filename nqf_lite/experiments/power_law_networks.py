"""The networks of chapter 7 against their power laws (Section 6; Thm 11,
Eq. 49; App. C, Eqs. 292-298; the paper's Fig. 5).

:func:`onehot_ensemble` trains one-hot quadratic networks at once,
:func:`onehot_power_law` fits their exponents next to the exact theory's;
:func:`fourier_exponent_runs` does the same for the tanh Fourier MLP of
Fig. 5 and its NQF, at the book's amplitudes and, the control, at the
paper's.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import numpy as np
from scipy.special import digamma

from nqf_lite._checks import (
    as_array,
    check_shape,
    integer,
    positive,
    vector,
)
from nqf_lite.dynamics import scaling as sc
from nqf_lite.dynamics.solvable import (
    feature_trajectory,
    switch_on_time_exact,
)
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments.pool import run_jobs
from nqf_lite.experiments.power_laws import (
    net_vs_nqf,
    theory_exponents,
    train_to_switch_on,
)

__all__ = [
    "OneHotRun",
    "fourier_exponent_runs",
    "onehot_ensemble",
    "onehot_power_law",
]


def onehot_ensemble(
    a: object,
    y: object,
    W0: object,
    lr: float,
    n_steps: int,
    n_ens: int,
    every: int = 10,
) -> tuple[np.ndarray, np.ndarray]:
    """Train ``n_ens`` one-hot quadratic networks at once (Section 6, Eq.
    49; Theorem 11).

    Samples never interact, so ``n_ens`` copies of the data set form one data
    set of ``n_ens * m`` samples; the loss's ``1/m`` then shrinks every rate
    by ``n_ens``, which a learning rate ``n_ens`` times larger undoes. Each
    member is then gradient descent at ``lr`` on its own copy
    (:func:`~nqf_lite.dynamics.scaling.onehot_quadratic_gd`).

    Parameters
    ----------
    a, y : array_like, shape (m,)
        The samples' scales and targets.
    W0 : array_like, shape (n_ens * m, d)
        Initial weights, member by member.
    lr : float
        Learning rate of one member.
    n_steps, n_ens, every : int
        Steps, members, and steps between records.

    Returns
    -------
    t : ndarray, shape (T,)
        Times of the records (``lr`` times the step).
    L : ndarray, shape (T, n_ens)
        ``sum_n Delta_n^2`` of each member, ``Delta_n = a_n z_n - y_n``.
    """
    a = vector("a", a)
    y = vector("y", y, a.size)
    n = integer("n_ens", n_ens)
    a_ens, y_ens = np.tile(a, n), np.tile(y, n)
    gd = dict(lr=n * positive("lr", lr), n_steps=n_steps, every=every)
    t, z = sc.onehot_quadratic_gd(a_ens, y_ens, W0, **gd)
    L = ((a * z.reshape(-1, n, a.size) - y) ** 2).sum(axis=-1)
    return t / n, L


class OneHotRun(NamedTuple):
    """What :func:`onehot_power_law` returns."""

    t: np.ndarray
    L: np.ndarray
    ts: np.ndarray
    n_steps: int
    fits: np.ndarray
    pred: float
    keff: float
    t_u: np.ndarray
    E_u: np.ndarray
    window_err: float
    fits_own: np.ndarray
    fits_draws: np.ndarray


def onehot_power_law(
    gamma1: float,
    gamma2: float,
    W0: object,
    z0_draws: object,
    lr: float,
    n_ens: int,
    sigma: float,
    window: tuple[int, int] = (4, 49),
    overrun: float = 1.3,
) -> OneHotRun:
    """One-hot quadratic networks from random starts against the exact
    theory (Section 6, Eq. 49; Theorem 11; App. C, Eq. 292).

    The data are the power-law modes of
    :func:`~nqf_lite.dynamics.scaling.powerlaw_modes` with ``alpha1 = 2
    gamma1``, ``alpha2 = gamma2``. The ``n_ens`` networks (weights ``W0``,
    ``z_n(0) = |w_n|^2``) are trained by :func:`onehot_ensemble` until
    ``overrun`` times the latest switch-on of mode ``window[1]`` (0-based),
    and each is fitted on its own window, the exact switch-ons (Eq. 157) of
    the modes ``window``. The exact loss (Eq. 163) from the networks' own
    starts and from the starts ``z0_draws`` is fitted the same way
    (:func:`~nqf_lite.experiments.power_laws.theory_exponents`, 120 times).
    The typical start is the geometric mean of ``sigma^2 chi^2_d``,
    ``eps = sigma^2 exp(psi(d/2) + ln 2)``; ``k_eff`` (Eq. 292) is averaged
    over the window's modes, and ``window_err`` is what the window does to
    the exponent of the noise-free uniform start ``eps``, whose exact loss
    is taken from a tenth of its first switch-on to that of mode
    ``window[1] + 11``.

    Parameters
    ----------
    gamma1, gamma2 : float
        Decays of the targets and of the scales (Eq. 49).
    W0 : array_like, shape (n_ens * m, d)
        Initial weights, member by member.
    z0_draws : array_like, shape (N, m)
        Fresh starts of the exact theory.
    lr, sigma : float
        Learning rate; scale of the initial weights.
    n_ens : int
    window : (int, int)
        0-based modes whose switch-ons bound the fits.
    overrun : float

    Returns
    -------
    OneHotRun
        ``t`` (T,), ``L`` (T, n_ens): ``sum_n Delta_n^2``; ``ts`` (n_ens, m)
        the switch-ons; ``n_steps``; ``fits`` (n_ens,) the networks'
        exponents; ``pred``, Eq. 49; ``keff``; ``t_u``, ``E_u`` the exact
        loss of the uniform start; ``window_err``; ``fits_own`` (n_ens,) and
        ``fits_draws`` (N,), the exact theory's exponents.
    """
    n = integer("n_ens", n_ens)
    W0 = as_array("W0", W0, ndim=2)
    m = W0.shape[0] // n
    check_shape("W0", W0, (n * m, W0.shape[1]))
    z0_draws = as_array("z0_draws", z0_draws, ndim=2)
    check_shape("z0_draws", z0_draws, (z0_draws.shape[0], m))
    lo, hi = (integer("window", v, minimum=0) for v in window)
    if not lo < hi < m:
        raise ValueError(f"window must hold 0 <= lo < hi < {m}, got {window}")
    lr, d = positive("lr", lr), W0.shape[1]
    po = sc.powerlaw_modes(m, 2 * gamma1, gamma2)
    z0 = (W0**2).sum(axis=1).reshape(n, m)
    ts = switch_on_time_exact(po.r[None], po.C[None], z0)
    n_steps = int(positive("overrun", overrun) * ts[:, hi].max() / lr)
    t, L = onehot_ensemble(po.a, po.y, W0, lr, n_steps, n)
    # each run on its own window
    fits = -sc.fit_loglog_slopes(t[1:], L[1:], ts[:, [lo, hi]])
    pred = sc.samplewise_exponent(gamma1, gamma2)
    eps = positive("sigma", sigma) ** 2 * np.exp(digamma(d / 2) + np.log(2))
    keff = sc.effective_slope(2 * gamma1, gamma2, po.r, po.C, eps)
    keff = keff[lo : hi + 1].mean()
    z0_u = np.full(m, eps)  # noise-free uniform start
    ts_u = switch_on_time_exact(po.r, po.C, z0_u)
    t_u = np.geomspace(ts_u[0] / 10, ts_u[min(hi + 11, m - 1)], 800)
    E_u = (po.a * feature_trajectory(t_u, po.r, po.C, z0_u) - po.y) ** 2
    E_u = E_u.sum(1)
    fit_u = sc.fit_loglog_slope(t_u, E_u, (ts_u[lo], ts_u[hi]))
    window_err = abs(-fit_u.slope - keff)
    # sum_n Delta_n^2 = m E (Eq. 163): the same exponent
    starts = np.vstack([z0, z0_draws])
    th = theory_exponents(po.r, po.C, starts, (lo, hi), n_grid=120)
    return OneHotRun(
        t, L, ts, n_steps, fits, pred, keff, t_u, E_u, window_err,
        th.fits[:n], th.fits[n:],
    )  # fmt: skip


def fourier_exponent_runs(
    thetas: Sequence[float],
    a0: object,
    W0: object,
    z0_draws: object,
    eps_typ: float,
    beta: float,
    psi: object,
    amp: tuple[float, float],
    control_amp: tuple[float, float],
    lr: float = 0.5,
) -> dict[float, dict]:
    """Fourier MLPs and their NQFs against the exact theory, one feature
    decay ``theta`` after the other (the paper's Fig. 5; App. C, Eqs. 292,
    296-298).

    The target is ``c sum_k b_k psi_k`` with ``b_k = k^-beta``. At each
    ``theta`` (feature weights ``s_k = k^-theta``, step ``lr
    4^theta``), the runs from ``a0``, ``W0`` are trained as networks and as
    NQFs (:func:`~nqf_lite.experiments.power_laws.train_to_switch_on`, up
    to 1.05 times the 15th switch-on) at the amplitudes ``amp = (c,
    kappa)`` and, the control, at ``control_amp``; each is fitted on its
    own ``[t*_3, t*_15]`` (:func:`~nqf_lite.experiments.power_laws.\
net_vs_nqf`). The exact theory's exponents
    (:func:`~nqf_lite.experiments.power_laws.theory_exponents`) come from
    the runs' own starts ``z_k(0) = (a_k + W_k)^2 / 2`` (at both
    amplitudes), from ``z0_draws`` and from the typical start ``eps_typ``,
    where ``k_eff`` (Eq. 292) is taken, averaged over the window's modes.
    The jobs run in a pool of threads (numpy and torch release the GIL).

    Parameters
    ----------
    thetas : sequence of float
    a0, W0 : array_like, shape (S, P)
        Initial weights of the ``S`` runs.
    z0_draws : array_like, shape (N, P)
        Fresh starts of the exact theory.
    eps_typ, beta : float
        The typical start; the decay of the target's coefficients.
    psi : array_like, shape (M, P)
    amp, control_amp : (float, float)
        ``(c, kappa)``: target amplitude and output prefactor.
    lr : float
        The step at ``theta = 0``.

    Returns
    -------
    dict
        ``theta -> dict``: ``t``, ``L_net``, ``L_nqf`` (T, S), ``ts`` the
        runs' switch-ons, ``steps``; ``fit_net``, ``fit_nqf``, ``gap``,
        ``gap_mean`` of :func:`net_vs_nqf`; ``fit_th`` the exact exponents
        from the runs' own starts; ``paper``, the same at ``control_amp``;
        ``fit_draws``, ``t_draws``, ``band`` (the 10, 50 and 90 % quantiles
        of the draws' loss over the initial loss ``c^2 sum b_k^2``);
        ``keff``; ``window_err``; ``pred`` (Eq. 298); ``zminus``, the
        largest partner mode over its ceiling; ``disc``, the largest
        relative gap of GD's growth rate to the flow's in the window.
    """
    a0, W0 = as_array("a0", a0, ndim=2), as_array("W0", W0, ndim=2)
    check_shape("W0", W0, a0.shape)
    lr, eps_typ = positive("lr", lr), positive("eps_typ", eps_typ)
    kf = np.arange(1, a0.shape[1] + 1, dtype=float)
    b = kf ** -positive("beta", beta)
    amps = {"book": tuple(amp), "paper": tuple(control_amp)}

    def modes(th, a="book"):
        return fo.fourier_modes(kf**-th, b, *amps[a])

    # first the runs at each theta and amplitudes, longest jobs first
    jobs = {
        (th, m, a): (a0, W0, kf**-th, b, psi, lr * 4**th, *amps[a], m)
        for m in ("mlp", "nqf")
        for th in thetas[::-1]
        for a in amps
    }
    done = run_jobs(train_to_switch_on, jobs)
    # then the exact theory on [t*_3, t*_15]
    z0_plus = (a0 + W0) ** 2 / 2
    starts = {
        "own": z0_plus,
        "draws": z0_draws,
        "typical": [[eps_typ] * b.size],
    }
    jobs = {
        (th, s): (*modes(th), z0) for th in thetas for s, z0 in starts.items()
    }
    jobs |= {(th, "paper"): (*modes(th, "paper"), z0_plus) for th in thetas}
    grid = dict(window=(2, 14), span=(0, 14), margin=(10, 1.1))
    done |= run_jobs(functools.partial(theory_exponents, **grid), jobs)
    L0 = (
        amps["book"][0] ** 2 * (b**2).sum()
    )  # initial loss: the target's power
    runs = {}
    for th in thetas:
        own, draws, uni = (done[th, s] for s in starts)
        r_k, C_k = modes(th)
        keff = sc.effective_slope(2 * beta, th + beta, r_k, C_k, eps_typ)
        keff = keff[2:15].mean()
        t_f, L_net, L_nqf = (
            *done[th, "mlp", "book"],
            done[th, "nqf", "book"][1],
        )
        r_disc = lr * 4**th * r_k[2:15]  # GD's step in the mode's time
        R = dict(t=t_f, L_net=L_net, L_nqf=L_nqf, ts=own.ts, steps=len(t_f))
        R.update(net_vs_nqf(t_f, L_net, L_nqf, own.ts), fit_th=own.fits)
        sat = done[th, "paper"]
        paper = *done[th, "mlp", "paper"], done[th, "nqf", "paper"][1], sat.ts
        R["paper"] = dict(fit_th=sat.fits, **net_vs_nqf(*paper))
        R.update(fit_draws=draws.fits, keff=keff, t_draws=draws.t)
        R["band"] = np.quantile(draws.E / L0, [0.1, 0.5, 0.9], axis=1)
        R["window_err"] = abs(uni.fits[0] - keff)
        R["pred"] = sc.scaling_exponent(2 * beta, th + beta)
        R["zminus"] = ((a0 - W0) ** 2 / 2 / (r_k / C_k)).max()
        R["disc"] = (1 - 2 * np.log1p(r_disc / 2) / r_disc).max()
        runs[th] = R
    return runs
