"""The atlas of Table 3: each model against its NQF, and staged learning.

The runners of chapter 8 ("One model, seventeen faces"):

- :func:`native`, :func:`quadratic_form`, :func:`remainder_gap`: a registered
  model and its quadratic form ``f0 + g.mu + mu^T B mu + Tr[M A]`` (Thm 1,
  Eq. 2) at the same weights;
- :func:`remainder_sweep`: both over draws and a grid of scales;
  :func:`table3_row`, :func:`registry_row`: a model's row of Table 3 and of
  the chapter's table of the registry;
- :func:`coefficient_gap`: the closed-form structure against autograd's
  Taylor coefficients; :func:`structure_class`: what kind of matrix an
  ``A(x)`` is; :func:`is_even`: whether the odd Taylor terms vanish;
- :func:`remainder_slope`, :func:`signed_remainder`: the order of the
  remainder (Thm 1, Eq. 2 and Remark);
- :func:`staged_data`, :func:`staged_prediction`, :func:`staged_run`,
  :func:`compare_switch_on`: staged learning predicted from ``A(x)`` alone
  (Thm 6, Eq. 37; Thm 8, Eq. 158) and measured under full-batch GD.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import torch
from scipy.stats import ortho_group

from nqf_lite._checks import as_array, fraction, integer, natural, positive
from nqf_lite.design.corrections import (
    SATURATION_LEAD_STEPS,
    gd_growth_rate,
    gd_half_time_from,
    gd_switch_on_time,
    log_chi2_sd,
    order_tally,
    out_of_order_probability,
)
from nqf_lite.dynamics.solvable import (
    common_eigenbasis,
    crossing_time,
    glv_coefficients,
    switch_on_time,
)
from nqf_lite.expansion.autograd import expand
from nqf_lite.expansion.models import MODELS
from nqf_lite.expansion.models.base import Model
from nqf_lite.experiments.train import descend_many

__all__ = [
    "STAGED_TASKS",
    "coefficient_gap",
    "compare_switch_on",
    "is_even",
    "native",
    "quadratic_form",
    "registry_row",
    "remainder_gap",
    "remainder_slope",
    "remainder_sweep",
    "signed_remainder",
    "staged_data",
    "staged_prediction",
    "staged_run",
    "structure_class",
    "table3_row",
]

#: the registered models whose staged learning chapter 8 predicts
STAGED_TASKS = ("psd_sensing", "phase_retrieval", "diagonal_square")


@torch.no_grad()
def native(model: Model, W: object, x: Any) -> np.ndarray:
    """The model's own forward pass ``f(W; x)`` as a float64 array.

    Parameters
    ----------
    model : Model
        A registered model (:mod:`nqf_lite.expansion.models`).
    W : array_like
        Its weights, in the model's own convention (``model.neurons``).
    x : object
        One input of the model.

    Returns
    -------
    ndarray
        The output(s), shape ``()`` or ``(V,)``.
    """
    W = torch.as_tensor(W, dtype=torch.float64)
    return np.asarray(model.native(W, x).numpy(), dtype=float)


def quadratic_form(
    model: Model, W: np.ndarray, x: Any, scale: float = 1.0
) -> np.ndarray:
    """The NQF ``f0 + g.mu + mu^T B mu + Tr[M A]`` at ``scale * W``.

    Thm 1, Eq. 2 (Eq. 4 for the exact rows): ``M = Wc Wc^T`` and ``mu = Wc
    1`` with ``Wc = model.columns(scale * W)`` (one neuron a column).

    Parameters
    ----------
    model : Model
    W : ndarray
        Weights in the model's convention.
    x : object
        One input.
    scale : float
        The weight scale ``eps``.

    Returns
    -------
    ndarray
        The quadratic form, one value per output.
    """
    s = model.structure(x)
    Wc = scale * model.columns(W)
    M, mu = Wc @ Wc.T, Wc.sum(axis=1)
    out = s.f0 + np.einsum("...ij,ij->...", s.A, M)
    if s.g is not None:
        out = out + s.g @ mu
    if s.B is not None:
        out = out + np.einsum("...ij,i,j->...", s.B, mu, mu)
    return out


def remainder_gap(model: Model, W: np.ndarray, x: Any, eps: float) -> float:
    """``max |f(eps W) - NQF(eps W)|`` over the outputs (Thm 1, Eq. 2).

    Parameters
    ----------
    model : Model
    W : ndarray
        Weights in the model's convention.
    x : object
        One input.
    eps : float
        The weight scale.

    Returns
    -------
    float
        Round-off for the exact rows of Table 3 (Eq. 4); ``O(eps^3)`` or
        ``O(eps^4)`` for the others.
    """
    nqf = quadratic_form(model, W, x, eps)
    return float(np.max(np.abs(native(model, eps * W, x) - nqf)))


def remainder_sweep(
    model: Model, draws: Sequence, eps_grid: object
) -> tuple[np.ndarray, np.ndarray]:
    """The remainder of Thm 1, Eq. 2 over draws and weight scales, and
    the NQF next to the model at the sampled weights (Eq. 4).

    Parameters
    ----------
    model : Model
    draws : sequence of (W, x)
        Samples of the model (``model.sample``).
    eps_grid : array_like
        The weight scales.

    Returns
    -------
    sweep : ndarray, shape (draws, scales)
        :func:`remainder_gap` of each draw at each scale.
    pairs : ndarray, shape (draws, 2)
        ``(NQF, model)`` at the sampled weights, first output.
    """
    eps_grid = as_array("eps_grid", eps_grid)
    gaps = [[remainder_gap(model, *d, e) for e in eps_grid] for d in draws]
    both = [(quadratic_form(model, *d), native(model, *d)) for d in draws]
    pairs = [[np.ravel(f)[0] for f in fs] for fs in both]
    return np.array(gaps), np.array(pairs)


def table3_row(model: Model) -> int | None:
    """The row of the paper's Table 3 (App. A.2) that a model's reference
    cites ("Table 3, row 9"), or None for a model outside the table."""
    found = re.search(r"Table 3, row (\d+)", model.reference)
    return int(found.group(1)) if found else None


def registry_row(model: Model, x: Any) -> list:
    """A model's row of chapter 8's table of the registry (Table 3, App.
    A.2): its Table 3 row (or "—"), title, the first formula of its class
    docstring, neurons, ``p``, whether it is exact, :func:`structure_class`
    of ``A(x)`` at the input ``x`` and the rank, and its first citation.
    """
    kind, rank = structure_class(model.structure(x).A)
    doc = (type(model).__doc__ or "").split("\n\n")[0].replace("\n", " ")
    formula = (re.findall(r"``(.+?)``", doc) + [""])[0]  # the first formula
    refs = re.findall(r"\[[\d, ]+\]", model.reference) + [model.reference]
    how = "yes" if model.exact else "leading order"
    row = [table3_row(model) or "—", model.title, formula, model.neurons]
    return row + [model.p, how, kind, rank, refs[0]]


def coefficient_gap(model: Model, W: np.ndarray, x: Any) -> float:
    """The largest gap between a model's closed-form structure and autograd.

    Compares ``A``, ``g`` and ``B`` of ``model.structure(x)`` (Table 3) with
    the second-order Taylor coefficients of :func:`nqf_lite.expand` (Thm 1,
    Eq. 2), and ``f0`` with ``f(0)`` at the width of ``W``.

    Parameters
    ----------
    model : Model
    W : ndarray
        Sampled weights (only their shape is used, for ``f(0)``).
    x : object
        One input.

    Returns
    -------
    float
        ``max |closed form - autograd|`` over the four coefficients.
    """
    s = model.structure(x)
    cols = model.neurons == "columns"  # expand() wants neurons as columns
    e = expand(
        lambda W, x: model.native(W if cols else W.T, x), x, model.p, d=2
    )
    g, B = (0.0 if v is None else v for v in (s.g, s.B))
    f0 = native(model, np.zeros_like(W), x)  # f(0) at the sampled width
    gaps = (s.A - e.A, g - e.g, B - e.B, s.f0 - f0)
    return float(max(np.abs(d).max() for d in gaps))


def structure_class(A: object) -> tuple[str, int]:
    """A short description of one structure matrix and its rank.

    "diagonal", or "feed-forward (Eq. 17)" when a split of the units into two
    blocks leaves only off-diagonal blocks (Props. 1-3); then "PSD" when no
    eigenvalue is negative; "indefinite" when none applies. Entries below
    ``1e-10 max |A|`` count as zero. For several outputs, the first.

    Parameters
    ----------
    A : array_like, shape (..., p, p)
        Symmetric.

    Returns
    -------
    (str, int)
        The description and the numerical rank.
    """
    A = as_array("A", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be (..., p, p), got shape {A.shape}")
    A = A.reshape(-1, *A.shape[-2:])[0]
    tol = 1e-10 * max(np.abs(A).max(), 1e-300)

    def small(B):
        return np.all(np.abs(B) <= tol)

    kinds = []
    if small(A - np.diag(np.diag(A))):
        kinds.append("diagonal")
    elif any(small(A[:s, :s]) and small(A[s:, s:]) for s in range(1, len(A))):
        kinds.append("feed-forward (Eq. 17)")
    if np.linalg.eigvalsh(A).min() >= -tol:
        kinds.append("PSD")
    rank = int(np.linalg.matrix_rank(A, tol=tol))
    return ", ".join(kinds) or "indefinite", rank


def is_even(model: Model, draws: Sequence, tol: float = 1e-12) -> bool:
    """Whether ``f(-W) = f(W)`` on every draw ``(W, x)``, to ``tol``.

    Then the odd Taylor terms vanish and the remainder of Thm 1, Eq. 2 is
    ``O(eps^4)`` (the Remark), not ``O(eps^3)``.

    Parameters
    ----------
    model : Model
    draws : sequence of (W, x)
        Samples of the model (``model.sample``).
    tol : float > 0

    Returns
    -------
    bool
    """
    tol = positive("tol", tol)
    odd = [native(model, -W, x) - native(model, W, x) for W, x in draws]
    return all(np.max(np.abs(d)) <= tol for d in odd)


def remainder_slope(
    eps: object, err: object, n: int = 5, roundoff: float = 1e-13
) -> float:
    """Log-log slope of ``|f - NQF|`` at the ``n`` smallest scales above
    round-off.

    The remainder of Thm 1, Eq. 2 falls as ``eps^3``, or ``eps^4`` when the
    odd Taylor terms vanish (the Remark); round-off of the exact rows sits at
    about ``1e-16`` and is excluded by ``roundoff``.

    Parameters
    ----------
    eps : array_like, shape (T,)
        Increasing positive weight scales.
    err : array_like, shape (T,)
        ``|f - NQF|`` at those scales.
    n : int >= 2
        How many scales the straight line is fitted to.
    roundoff : float > 0
        Errors at or below this are round-off.

    Returns
    -------
    float
        The fitted slope.

    Raises
    ------
    ValueError
        If fewer than ``n`` scales lie above round-off, or on bad input.
    """
    eps, err = as_array("eps", eps), as_array("err", err)
    n = integer("n", n, minimum=2)
    roundoff = positive("roundoff", roundoff)
    if eps.shape != err.shape or eps.ndim != 1:
        raise ValueError(
            f"eps and err must be 1-d of one length, got {eps.shape} and "
            f"{err.shape}"
        )
    fit = np.flatnonzero(err > roundoff)[:n]
    if fit.size < n:
        raise ValueError(f"only {fit.size} scales above round-off to fit")
    return float(np.polyfit(np.log(eps[fit]), np.log(err[fit]), 1)[0])


def signed_remainder(
    model: Model, W: np.ndarray, x: Any, eps: object
) -> np.ndarray:
    """``f(eps W) - eps^2 Tr[W W^T A]`` at each scale, first output.

    The signed remainder of Thm 1, Eq. 2 for a model with ``f(0) = 0``, no
    ``g`` and no ``B`` (the two-layer networks of Table 3, row 9; Prop. 1,
    Eq. 6), neurons as rows of ``W``.

    Parameters
    ----------
    model : Model
    W : ndarray (d, p)
    x : object
    eps : array_like (T,)

    Returns
    -------
    ndarray (T,)
    """
    eps = as_array("eps", eps)
    quad = np.sum(model.structure(x).A * (W @ W.T))
    f = [np.ravel(native(model, e * W, x))[0] for e in eps]
    return np.array(f) - eps**2 * quad


def staged_data(
    name: str, rates: np.ndarray, g: np.random.Generator
) -> tuple[list, np.ndarray]:
    """Inputs with commuting ``A(x)`` and targets planting ``rates``.

    Assumption 1 holds by construction, so Thm 6 (Eq. 37) applies:
    ``"psd_sensing"`` takes ``x_mu = sqrt(1/2) P Diag(Q_mu) P^T`` and
    ``y_mu = <x_mu, P Diag(rates) P^T>``; ``"phase_retrieval"`` the columns of
    an orthogonal ``Q`` and ``y = 3 rates / 8``; ``"diagonal_square"`` the rows
    ``sqrt(8) Q_mu`` and ``y_mu = x_mu . rates / 4`` (this book, chapter 8).

    Parameters
    ----------
    name : one of :data:`STAGED_TASKS`
    rates : ndarray
        The planted rates, 4 of them (3 for phase retrieval).
    g : numpy Generator

    Returns
    -------
    (list, ndarray)
        The inputs and the targets.
    """
    if name not in STAGED_TASKS:
        raise ValueError(f"name must be one of {STAGED_TASKS}, got {name!r}")
    rates = as_array("rates", rates)
    if name == "psd_sensing":
        P, Q = (ortho_group.rvs(4, random_state=g) for _ in range(2))
        xs = [np.sqrt(4 / 8) * P @ np.diag(Q[:, mu]) @ P.T for mu in range(4)]
        M_star = P @ np.diag(rates) @ P.T
        return xs, np.array([np.sum(S_mu * M_star) for S_mu in xs])
    Q = ortho_group.rvs(4, random_state=g)
    if name == "phase_retrieval":
        return [Q[:, mu] for mu in range(3)], rates * 3 / 8
    xs = [np.sqrt(8) * Q[mu] for mu in range(4)]
    return xs, np.array([x @ (rates / 4) for x in xs])


def staged_prediction(
    model: Model,
    xs: Sequence,
    y: np.ndarray,
    eps: float,
    lr: float,
    width: int,
) -> dict:
    """The GLV prediction of staged learning from the structure matrices.

    Thm 6, Eq. 37 (``r``, ``C`` on the common eigenbasis ``P`` of the
    ``A(x_mu)``), the flow switch-on times of Thm 8, Eq. 158 from ``z(0) =
    eps``, and this book's GD-step and ``chi2_width`` corrections
    (:func:`~nqf_lite.design.corrections.gd_switch_on_time`).

    Returns
    -------
    dict
        ``P``, ``r``, ``C``, ``comm`` (the largest commutator over ``max
        |A|^2``), ``t_flow`` and ``t_gd``.
    """
    A = np.stack([model.structure(x).A for x in xs])
    comm = max(np.abs(a @ b - b @ a).max() for a in A for b in A)
    P, lam = common_eigenbasis(A)
    # exact zeros: directions that no sample sees
    lam[np.abs(lam) < 1e-12 * np.abs(lam).max()] = 0.0
    r, C = glv_coefficients(lam, y)
    t_flow = switch_on_time(r, C, eps)  # Eq. 158: flow, z(0) = eps
    t_gd = gd_switch_on_time(r, np.diag(C), eps, lr, d=width)  # (tgd)
    comm = comm / np.abs(A).max() ** 2
    return dict(P=P, r=r, C=C, comm=comm, t_flow=t_flow, t_gd=t_gd)


def staged_run(
    name: str,
    rates: np.ndarray,
    seed: object,
    eps: float,
    width: int,
    lr: float,
    steps: int,
) -> dict:
    """One seed of staged learning: data, prediction, then full-batch GD.

    Draws the task of :func:`staged_data` and a Gaussian start ``W0`` of
    variance ``eps / width`` from ``seed``, predicts with
    :func:`staged_prediction` before training, then trains the model's own
    forward by GD (Eq. 21) on the mean squared error, recording the
    abundances ``z_k = (P^T W W^T P)_kk`` (Thm 6).

    Parameters
    ----------
    name : one of :data:`STAGED_TASKS`
    rates : ndarray
        Planted rates.
    seed : int or SeedSequence
    eps, lr : float > 0
    width : int >= 1
    steps : int >= 0

    Returns
    -------
    dict
        The prediction's entries, plus ``z`` (steps + 1, p), ``live`` (the
        modes with ``r > 0`` in predicted order), ``r_k``, ``c_k``,
        ``z_inf``, ``z0``, ``dead`` (the modes with ``r = 0``) and
        ``t_meas`` (the measured half-saturation times, in time ``lr *
        step``).
    """
    eps, lr = positive("eps", eps), positive("lr", lr)
    width, steps = integer("width", width), natural("steps", steps)
    model, g = MODELS[name], np.random.default_rng(seed)
    xs, y = staged_data(name, rates, g)
    run = staged_prediction(model, xs, y, eps, lr, width)  # before training
    W0 = np.sqrt(eps / width) * g.standard_normal((model.p, width))
    cols = model.neurons == "columns"
    yt, Pt = torch.as_tensor(y), torch.as_tensor(run["P"])

    def loss(W):
        out = torch.stack([model.native(W, x) for x in xs])
        return ((out - yt) ** 2).mean()

    def z(W):
        Wc = W if cols else W.T
        return torch.diagonal(Pt.T @ Wc @ Wc.T @ Pt)

    z = descend_many(W0 if cols else W0.T, loss, lr, steps, record=z).history
    live = np.flatnonzero(run["r"] > 0)
    live = live[np.argsort(-run["r"][live])]  # modes in predicted order
    r_k, c_k = run["r"][live], np.diag(run["C"])[live]
    run.update(z=z, live=live, r_k=r_k, c_k=c_k, z_inf=r_k / c_k)
    run.update(z0=z[0, live], dead=np.flatnonzero(run["r"] == 0))
    t_grid = lr * np.arange(steps + 1)
    run["t_meas"] = crossing_time(t_grid, z[:, live], run["z_inf"] / 2)
    return run


def compare_switch_on(
    members: Sequence[dict],
    eps: float,
    lr: float,
    width: int,
    q: float,
    g: np.random.Generator,
    alpha: float,
) -> dict:
    """Measured against predicted switch-on times, order and lead.

    For the runs of :func:`staged_run` on one task (one a seed): the mean
    measured times against the GD-corrected time ``t_gd`` and the flow time
    of Thm 8, Eq. 158 (``|mean - t| / (q SE)``); the switch-on order against
    the ``chi2_width`` start's flip probability and against each run's own
    ``z_k(0)`` (Thm 6, Eq. 37); and the lead of the GD map over the
    rate-corrected time, in steps (this book, from Thm 2, Eq. 24).

    Parameters
    ----------
    members : sequence of dict
        The runs of one task, at least two.
    eps, lr : float > 0
    width : int >= 1
    q : float > 0
        The normal quantile of the comparisons.
    g : numpy Generator
        Draws of the flip probability.
    alpha : float in (0, 1)
        The level of the order tally.

    Returns
    -------
    dict
        ``t_gd``, ``t_flow``, ``t_mean``, ``se``, ``used``, ``control``,
        ``flip_p_up``, ``order``, ``lead``, ``lead_sd``, ``lead_used``,
        ``no_lead`` and ``flow_lead`` (one value a live mode).
    """
    if len(members) < 2:
        raise ValueError(
            f"members must hold at least two runs, got {len(members)}"
        )
    eps, lr, q = positive("eps", eps), positive("lr", lr), positive("q", q)
    width, alpha = integer("width", width), fraction("alpha", alpha)
    m0, live = members[0], members[0]["live"]
    r_k, c_k = m0["r_k"], m0["c_k"]
    t_meas = np.array([m_["t_meas"] for m_ in members])  # (seeds, modes)
    z0 = np.array([m_["z"][0, live] for m_ in members])
    sd = log_chi2_sd(width) / gd_growth_rate(r_k, lr)
    sd = np.maximum(t_meas.std(axis=0, ddof=1), sd)
    res = dict(t_gd=m0["t_gd"][live], t_flow=m0["t_flow"][live])
    res.update(t_mean=t_meas.mean(axis=0), se=sd / np.sqrt(len(members)))
    for key, t in (("used", "t_gd"), ("control", "t_flow")):
        res[key] = np.abs(res["t_mean"] - res[t]) / (q * res["se"])
    # the order: live is sorted by the predicted time; a chi2_d start can
    # flip two modes with probability p, and each run follows its own start
    p_up = out_of_order_probability(r_k, c_k, eps, lr, width, g)[1]
    own = gd_half_time_from(r_k, c_k, z0, lr)
    tally = order_tally(t_meas, own, p_up, alpha)
    res.update(flip_p_up=p_up, order=tally)
    # the lead, paired on each run's own start: the step-corrected time
    # (tgd) from the measured z_k(0) without the lead, minus the measured
    # time, in steps; controls: no lead, and the flow rate r of (tstar)
    starts = [(m_["r_k"], m_["c_k"], m_["z0"]) for m_ in members]
    gd = [gd_half_time_from(r, c, z, lr, lead=False) for r, c, z in starts]
    flow = [np.log((r / c - z) / z) / r for r, c, z in starts]
    gd, flow = ((np.array(t) - t_meas) / lr for t in (gd, flow))
    h = lr * r_k / 2  # h_k = lr r_k / 2
    res.update(lead=gd.mean(0), lead_sd=gd.std(0, ddof=1))
    res["lead_used"] = np.abs(res["lead"] - SATURATION_LEAD_STEPS) / h
    res["no_lead"] = np.abs(res["lead"]) / h
    res["flow_lead"] = np.abs(flow.mean(0) - SATURATION_LEAD_STEPS) / h
    return res
