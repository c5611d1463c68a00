"""The networks of chapter 7 against their power laws (Section 6; Thm 11,
Eq. 49; App. C, Eqs. 292-298; Prop. 9; the paper's Fig. 5).

:func:`onehot_ensemble` trains one-hot quadratic networks at once,
:func:`onehot_power_law` fits their exponents next to the exact theory's;
:func:`fourier_exponent_runs` does the same for the tanh Fourier MLP of
Fig. 5 and its NQF, at the book's amplitudes and, the control, at the
paper's; :func:`plain_mlp_control` is its baseline without features.
:func:`ntk_drift` and :func:`ntk_width_slopes` measure how fast the tangent
kernel moves with the width (Prop. 9).
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import numpy as np
import torch
from scipy.special import digamma
from torch.func import jvp

from nqf_lite._checks import (
    as_array,
    check_shape,
    integer,
    natural,
    positive,
    vector,
    width,
)
from nqf_lite.dynamics import scaling as sc
from nqf_lite.dynamics.solvable import (
    feature_trajectory,
    switch_on_time_exact,
)
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments.fourier import train_tanh_mlp
from nqf_lite.experiments.pool import run_jobs
from nqf_lite.experiments.power_laws import (
    net_vs_nqf,
    theory_exponents,
    train_to_switch_on,
)

__all__ = [
    "OneHotRun",
    "PlainControl",
    "fourier_exponent_runs",
    "ntk_drift",
    "ntk_width_slopes",
    "onehot_ensemble",
    "onehot_power_law",
    "plain_mlp_control",
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
    own ``[t*_3, t*_15]``
    (:func:`~nqf_lite.experiments.power_laws.net_vs_nqf`). The exact
    theory's exponents
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
        ``gap_mean`` of ``net_vs_nqf``; ``fit_th`` the exact exponents
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


def ntk_drift(
    d: int,
    alpha_A: float,
    alpha_B: float,
    seed: int,
    m: int = 6,
    p: int = 4,
    n_draws: int = 16,
) -> float:
    """How fast the NTK moves at initialisation, ``||dTheta/dt||_F`` at
    ``t = 0``, for one random NQF scaled as in Proposition 9 (Eqs.
    250-251).

    The NQF ``f_n = g_n . mu + mu^T B_n mu + Tr[M A_n]`` has ``g ~ d^-1/2``,
    ``B ~ d^-alpha_B``, ``A ~ d^-alpha_A`` (Gaussian, symmetrised), ``m``
    Gaussian targets, and ``n_draws`` draws of ``d`` units of ``p``
    weights each, ``w ~ N(0, 1/d)``. Under gradient flow on the mean squared
    loss the NTK's time derivative is its forward derivative along
    ``-dL/dW`` (``torch.func.jvp``).

    Parameters
    ----------
    d, seed : int
        The width; the seed of the NQF and the weights.
    alpha_A, alpha_B : float
        The scalings of ``A`` and ``B``.
    m, p, n_draws : int
        Samples, weights per unit, weight draws.

    Returns
    -------
    float
        The root mean square over the weight draws.
    """
    d = np.float64(width("d", d))  # numpy's powers, as the widths array
    m, p, n_w = integer("m", m), integer("p", p), integer("n_draws", n_draws)
    g_ = np.random.default_rng(natural("seed", seed))

    def sym(X):
        return (X + np.swapaxes(X, -1, -2)) / 2

    g = torch.tensor(g_.standard_normal((m, p)) * d**-0.5)
    B = torch.tensor(sym(g_.standard_normal((m, p, p))) * d**-alpha_B)
    A = torch.tensor(sym(g_.standard_normal((m, p, p))) * d**-alpha_A)
    y = torch.tensor(g_.standard_normal(m))
    W = torch.tensor(g_.standard_normal((n_w, int(d), p)) / np.sqrt(d))

    def grads(W):  # grad_{w_i} f_n = u_n + 2 A_n w_i, shape (n_w, m, d, p)
        u = g + 2 * torch.einsum("nij,wj->wni", B, W.sum(1))
        return u[:, :, None, :] + 2 * torch.einsum("nij,wdj->wndi", A, W)

    def f(W):
        mu, M = W.sum(1), W.transpose(1, 2) @ W
        quad = torch.einsum("wi,nij,wj->wn", mu, B, mu)
        return mu @ g.T + quad + torch.einsum("wij,nji->wn", M, A)

    def ntk(W):
        G = grads(W)
        return torch.einsum("wndi,wkdi->wnk", G, G)

    # -dL/dW
    velocity = -(2 / m) * torch.einsum("wn,wndi->wdi", f(W) - y, grads(W))
    _, dtheta = jvp(ntk, (W,), (velocity,))
    return float(torch.sqrt((dtheta**2).sum((1, 2)).mean()))


def ntk_width_slopes(
    widths: Sequence[float],
    alpha_A: float,
    alpha_B: float,
    seeds: Sequence[int],
) -> np.ndarray:
    """Fitted width exponents of the NTK's speed, one per seed (Prop. 9, Eqs.
    250-251).

    For each seed, :func:`ntk_drift` (at its defaults) is measured at every
    width, with the same seed, and the slope of ``ln ||dTheta/dt||`` against
    ``ln d`` is fitted by least squares. The runs go one after the other:
    ``torch.func``'s forward AD is not thread-safe.

    Parameters
    ----------
    widths : sequence of float
        At least two widths, integers.
    alpha_A, alpha_B : float
        The scalings of ``A`` and ``B``.
    seeds : sequence of int

    Returns
    -------
    ndarray, shape (len(seeds),)
        The slopes; Prop. 9 predicts ``max(1 - alpha_B, -alpha_A)``.
    """
    widths = vector("widths", widths)
    if widths.size < 2:
        raise ValueError(f"widths must hold at least two, got {widths}")
    slopes = []
    for seed in seeds:
        drifts = [ntk_drift(int(d), alpha_A, alpha_B, seed) for d in widths]
        slopes.append(np.polyfit(np.log(widths), np.log(drifts), 1)[0])
    return np.array(slopes)


class PlainControl(NamedTuple):
    """What :func:`plain_mlp_control` returns."""

    t: np.ndarray
    L: np.ndarray
    L_gd: np.ndarray
    L_flow: np.ndarray
    L0: float
    V: float


def plain_mlp_control(
    u0: object,
    v0: object,
    x: object,
    y: object,
    lr: float,
    rho: float = 0.9,
    overrun: float = 3.0,
) -> PlainControl:
    """Plain bias-free tanh MLPs on the raw input against their one-mode NQF
    (Prop. 1, Theorem 6, Eq. 163; the baseline of the paper's Fig. 5).

    The NQF of ``sum_i v_i tanh(u_i x)`` is ``sum_i v_i u_i x``: one linear
    feature, whose growing mode ``(u + sign<xy> v)/sqrt(2)`` has the rate
    ``r = 4|<xy>|``, the self-competition ``C = 2<x^2>`` and the drop
    ``V = r^2/(8C) = <xy>^2/<x^2>``. Each run is trained by
    :func:`~nqf_lite.experiments.fourier.train_tanh_mlp` up to ``overrun``
    times the latest time a run's mode reaches ``rho`` of its ceiling. GD
    multiplies a small ``z`` by ``(1 + lr r/2)^2`` per step: the flow's rate
    ``r`` becomes ``r_gd = (2/lr) ln(1 + lr r/2)``, the ceiling stays ``r/C``.

    Parameters
    ----------
    u0, v0 : array_like, shape (S, H)
        Input and output weights of ``S`` runs of ``H`` units.
    x, y : array_like, shape (M,)
    lr : float
    rho, overrun : float
        A fraction in (0, 1) of the ceiling, and a factor ``>= 1`` on its
        time.

    Returns
    -------
    PlainControl
        The times ``t`` (T,); the runs' losses ``L`` (T, S); the one-mode
        NQF's at GD's rate, ``L_gd``, and at the flow's, ``L_flow`` (T, S);
        the initial loss ``L0 = <y^2>`` and the drop ``V``.
    """
    u0, v0 = as_array("u0", u0, ndim=2), as_array("v0", v0, ndim=2)
    check_shape("v0", v0, u0.shape)
    x = vector("x", x)
    y = vector("y", y, x.size)
    lr = positive("lr", lr)
    if positive("overrun", overrun) < 1:
        raise ValueError(f"overrun must be >= 1, got {overrun}")
    r, C = abs(4 * np.mean(x * y)), 2 * np.mean(x**2)
    V = r**2 / (8 * C)
    L0 = np.mean(y**2)
    sign = np.sign(np.mean(x * y))
    z0 = ((u0 + sign * v0) ** 2).sum(axis=1) / 2
    n = z0.size
    t_rho = switch_on_time_exact(np.full(n, r), np.full(n, C), z0, rho=rho)
    n_steps = int(overrun * t_rho.max() / lr)
    runs = [train_tanh_mlp(u, v, x, y, lr, n_steps)[1] for u, v in zip(u0, v0)]
    t = lr * np.arange(n_steps)

    def one_mode(rate, comp):
        z = feature_trajectory(t, np.full(n, rate), np.full(n, comp), z0)
        return L0 - V * (1 - (1 - z / (r / C)) ** 2)

    r_gd = 2 / lr * np.log1p(lr * r / 2)
    L_gd, L_flow = one_mode(r_gd, C * r_gd / r), one_mode(r, C)
    return PlainControl(t, np.stack(runs, 1), L_gd, L_flow, L0, V)
