"""The runs of the chapter on where the theory stops (Secs. 7 and 9).

- :func:`normal_draws`: an ensemble of standard normal weight draws;
- :func:`taylor_coefficients`, :func:`partition_term`,
  :func:`series_remainders`, :func:`hand_error`, :func:`remainder_orders`:
  Theorem 13's expansion (Eq. 200) against a hand expansion, Taylor's
  formula and the layer itself;
- :func:`plateau_runs`: a network and its truncated forms from small
  initial scales (the GELU teaser);
- :func:`error_slopes`: the order of an approximation's error;
- :func:`odd_fractions`: how far a layer is from even in its weights;
- :func:`normed_layer`, :func:`nqf_error`, :func:`norm_errors`: LayerNorm
  and RMSNorm layers and the relative error of an expansion;
- :func:`net_and_nqf_losses`: a tanh layer and its NQF from the same
  starts (Fig. 2);
- :func:`reflection_gaps`, :func:`reflection_draw`: GD and Adam from ``W``
  and ``WO`` (Cor. 2);
- :func:`fourier_exponents`: the Fourier MLP of Fig. 5 and its NQF, fitted
  exponents (Eq. 50; App. C, Eq. 297);
- :func:`escape_time`: when a loss first halves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from nqf_lite._checks import as_array, integer, positive, real
from nqf_lite.book.seeding import seeds
from nqf_lite.deep.higher_order import NeuralForm, gd_train
from nqf_lite.deep.symmetric_expansion import SymmetricExpansion
from nqf_lite.dynamics import scaling as sc
from nqf_lite.dynamics.momentum import AdamState, adam_step
from nqf_lite.expansion.autograd import expand
from nqf_lite.expansion.form import NQF, random_nqf
from nqf_lite.expansion.models import A_mlp
from nqf_lite.expansion.models import fourier as fo
from nqf_lite.experiments.fourier import train_fourier_ensemble

__all__ = [
    "error_slopes",
    "escape_time",
    "fourier_exponents",
    "hand_error",
    "net_and_nqf_losses",
    "norm_errors",
    "normal_draws",
    "normed_layer",
    "nqf_error",
    "odd_fractions",
    "partition_term",
    "plateau_runs",
    "reflection_draw",
    "reflection_gaps",
    "remainder_orders",
    "series_remainders",
    "taylor_coefficients",
]

Layer = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def normal_draws(n: int, shape: Sequence[int], *stream: str) -> np.ndarray:
    """``n`` standard normal arrays, one per seed of the named stream.

    Member ``j`` is drawn from ``numpy.random.default_rng(s_j)``, where
    ``s_j`` is the ``j``-th of :func:`nqf_lite.book.seeding.seeds` ``(n,
    *stream)``: the independent weight draws (this book) on which a claim
    is judged.

    Parameters
    ----------
    n : int
        Members, at least 1.
    shape : sequence of int
        Shape of one draw.
    *stream : str
        Name of the ensemble.

    Returns
    -------
    ndarray, shape (n, *shape)
    """
    n = integer("n", n)
    draws = [np.random.default_rng(s) for s in seeds(n, *stream)]
    return np.stack([g.standard_normal(shape) for g in draws])


def taylor_coefficients(f: Layer, W: object, x: object, K: int) -> np.ndarray:
    """Taylor coefficients ``1..K`` of ``t -> f(tW, x)`` at ``t = 0``.

    Each derivative is taken in forward mode (``torch.func.jvp``), nested
    ``K`` times: an independent route to the order-``k`` terms of Theorem
    13 (Eq. 200), whose sum over partitions is the ``k``-th coefficient.

    Parameters
    ----------
    f : callable
        ``f(W, x)``, a scalar tensor.
    W : array_like, shape (p, d)
    x : any
        The input passed to ``f``.
    K : int
        Highest order, at least 1.

    Returns
    -------
    ndarray, shape (K,)
        ``f^(k)(0) / k!`` for ``k = 1..K``.
    """
    K = integer("K", K)
    W_t = torch.as_tensor(W)
    h, coef = (lambda t: f(t * W_t, x)), []
    for k in range(1, K + 1):
        h = _d_dt(h)
        t0 = torch.zeros((), dtype=torch.float64)
        coef.append(float(h(t0)) / math.factorial(k))
    return np.array(coef)


def _d_dt(h: Callable) -> Callable:
    """The derivative of a function of one scalar tensor (forward mode)."""
    return lambda t: torch.func.jvp(h, (t,), (torch.ones_like(t),))[1]


def partition_term(
    e: SymmetricExpansion, lam: tuple[int, ...], W: object
) -> float:
    """The part of Theorem 13's order-``k`` term (Eq. 200) that the partition
    ``lam`` of ``k`` contributes at weights ``W`` (p, d)."""
    if lam not in e.tensors:
        raise ValueError(f"lam must be a partition of e.tensors, got {lam}")
    one = SymmetricExpansion(e.f0, {lam: e.tensors[lam]}, e.p, e.d, e.order)
    return one.term(W, sum(lam))


def series_remainders(
    f: Layer, W: object, x: object, eps: object, terms: object
) -> np.ndarray:
    """``|f(eps W) - sum_{k<=K} eps^k T_k(W)|`` for every ``eps`` and ``K``.

    The order-``k`` term of Theorem 13 (Eq. 200) is homogeneous of degree
    ``k`` in the weights, so one draw ``W`` gives the truncations at every
    scale ``eps``; the remainder of the order-``K`` truncation is
    ``O(eps^(K+1))``.

    Parameters
    ----------
    f : callable
        ``f(W, x)``, a scalar tensor; ``f(0, x)`` must be 0 (or subtracted).
    W : ndarray, shape (p, d)
    x : any
    eps : array_like, shape (E,)
        Positive scales.
    terms : array_like, shape (K,)
        ``T_1(W), ..., T_K(W)``.

    Returns
    -------
    ndarray, shape (E, K)
    """
    eps = as_array("eps", eps, ndim=1)
    if not np.all(eps > 0):
        raise ValueError("eps must hold positive scales")
    terms = as_array("terms", terms, ndim=1)
    exact = np.array([float(f(torch.tensor(e * W), x)) for e in eps])
    powers = eps[:, None] ** np.arange(1, len(terms) + 1)
    return np.abs(exact[:, None] - np.cumsum(powers * terms, axis=1))


def error_slopes(
    f: Layer,
    x: object,
    Ws: object,
    eps: object,
    *approximations: Callable[[np.ndarray], float],
) -> np.ndarray:
    """The order of each approximation's error: the fitted slope of
    ``log |f(eps W) - approx(eps W)|`` against ``log eps``, per draw ``W``.

    An approximation that keeps the expansion to order ``K`` leaves an error
    ``O(eps^(K+1))`` (Thm 1, Eqs. 2-3; Thm 12, Eq. 196).

    Parameters
    ----------
    f : callable
        ``f(W, x)``, a scalar tensor.
    x : any
    Ws : array_like, shape (n, p, d)
        The weight draws.
    eps : array_like, shape (E,)
        Positive scales, at least two.
    *approximations : callable
        ``approx(W)`` for weights ``W`` (p, d), a float.

    Returns
    -------
    ndarray, shape (n, len(approximations))
    """
    eps = as_array("eps", eps, ndim=1)
    if eps.size < 2 or not np.all(eps > 0):
        raise ValueError("eps must hold at least two positive scales")

    def fit(err: np.ndarray) -> float:
        return np.polyfit(np.log(eps), np.log(np.abs(err)), 1)[0]

    out = []
    for W in Ws:
        exact = np.array([float(f(torch.tensor(e * W), x)) for e in eps])
        approx = [np.array([a(e * W) for e in eps]) for a in approximations]
        out.append([fit(exact - ap) for ap in approx])
    return np.array(out)


def odd_fractions(f: Layer, W: object, x: object, h: object) -> list[float]:
    """``|f(hW) - f(-hW)| / (|f(hW)| + |f(-hW)|)`` for every scale ``h``.

    A module with a Taylor expansion ``f(0) + Tr[MA] + O(|W|^3)`` and
    ``f(0) = 0`` is even to second order (Thm 1), so the fraction falls
    with ``h``; a ReLU layer, homogeneous of degree two, keeps it at every
    scale (Sec. 9 item 2).
    """
    h = as_array("h", h, ndim=1)
    W = torch.as_tensor(W)
    vals = [(float(f(s * W, x)), float(f(-s * W, x))) for s in h]
    return [abs(a - b) / (abs(a) + abs(b)) for a, b in vals]


def normed_layer(eps: float, kind: str, k: int) -> Layer:
    """``f(W, x) = sum_i v_i h_i``, ``h`` the LayerNorm (``kind="ln"``) or
    RMSNorm (``"rms"``) of the pre-activations ``z_i = u_i . x``.

    The normalisation runs across the ``d`` units, so the layer is not a sum
    over its units; a neuron is the column ``(u_i, v_i)`` of ``W`` (k + 1,
    d). Its structure matrix is ``A = x-block / (2 sqrt eps)`` (this book;
    Thm 12, Eq. 196); ``eps = 0`` has no expansion.

    Parameters
    ----------
    eps : float
        The normaliser's epsilon, ``>= 0``.
    kind : {"ln", "rms"}
    k : int
        Input size.
    """
    eps = real("eps", eps)
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if kind not in ("ln", "rms"):
        raise ValueError(f"kind must be 'ln' or 'rms', got {kind!r}")
    k = integer("k", k)
    norm = F.layer_norm if kind == "ln" else F.rms_norm

    def f(W: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        z = x @ W[:k]
        return (W[k] * norm(z, (z.shape[0],), eps=eps)).sum()

    return f


def nqf_error(f: Layer, e: object, Ws: object, x: object) -> np.ndarray:
    """Relative errors ``|f(W) - NQF(W)| / |f(W)|`` of the expansion ``e``
    (anything with ``predict(W)``, e.g. :func:`nqf_lite.expand`'s, Eq. 20)
    at each of the weights ``Ws`` (n, p, d) and the input ``x``."""
    out = []
    for W in Ws:
        fw = float(f(torch.tensor(W), x))
        out.append(abs(fw - e.predict(W)) / abs(fw))
    return np.array(out)


def reflection_gaps(
    model: NQF, W: object, O: object, y: object, lr: float, n_steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """GD and Adam from ``W`` and ``WO``: the relative gap of their ``M``.

    ``W`` and ``WO`` (``O`` orthogonal, ``O 1 = 1``) have the same order
    parameters ``(M, mu)``; GD sees only those (Thm 2; Cor. 2), so the two
    runs keep the same ``M``; Adam, elementwise, separates them (Sec. 9
    item 5).

    Parameters
    ----------
    model : NQF
    W : ndarray, shape (p, d)
    O : ndarray, shape (d, d)
    y : ndarray, shape (m,)
    lr : float
    n_steps : int

    Returns
    -------
    gd, adam : ndarray, shape (n_steps,)
        ``|M_W - M_WO| / |M_W|`` (Frobenius) after each step.
    """
    W = as_array("W", W, ndim=2)
    O = as_array("O", O, ndim=2)
    if O.shape != (W.shape[1],) * 2:
        raise ValueError(f"O must have shape (d, d), d = {W.shape[1]}")
    lr, n_steps = positive("lr", lr), integer("n_steps", n_steps)
    pair_gd, pair_ad = [W, W @ O], [W, W @ O]
    states = [AdamState.zeros_like(W), AdamState.zeros_like(W)]
    gaps_gd, gaps_ad = [], []
    for _ in range(n_steps):
        pair_gd = [model.gd_step(W, y, lr) for W in pair_gd]
        stepped = [
            adam_step(model, W, st, y, lr) for W, st in zip(pair_ad, states)
        ]
        pair_ad, states = [w for w, _ in stepped], [st for _, st in stepped]
        for pair, gaps in ((pair_gd, gaps_gd), (pair_ad, gaps_ad)):
            M1, M2 = pair[0] @ pair[0].T, pair[1] @ pair[1].T
            gaps.append(np.linalg.norm(M1 - M2) / np.linalg.norm(M1))
    return np.array(gaps_gd), np.array(gaps_ad)


def fourier_exponents(
    a0: object,
    W0: object,
    psi: object,
    theta: float,
    beta: float,
    c: float,
    scale: float,
    lr: float,
    n_steps: int,
    window: tuple[float, float],
) -> dict:
    """The Fourier MLP of Fig. 5 and its NQF from the same starts, with the
    exponents of their losses.

    Feature weights ``s_k = k^-theta``, target ``y = c sum_k k^-beta psi_k``
    (Eq. 50); both models are trained by full-batch GD
    (:func:`~nqf_lite.experiments.fourier.train_fourier_ensemble`) and each
    run's loss exponent is fitted on ``window``. The NQF's prediction is
    ``(2 beta - 1) / (theta + beta)`` (Thm 9, Eq. 46; App. C).

    Parameters
    ----------
    a0, W0 : array_like, shape (S, P)
        The starts of the ``S`` runs.
    psi : array_like, shape (M, P)
        The features, as
        :func:`~nqf_lite.expansion.models.fourier.fourier_features` makes
        them.
    theta, beta, c, scale : float
        Feature decay, target decay, target amplitude, output prefactor.
    lr : float
    n_steps : int
    window : (float, float)
        The fit window in ``t = lr * step``.

    Returns
    -------
    dict
        ``t``; ``L_net``, ``L_nqf`` (n_steps, S); ``net``, ``nqf``: fitted
        exponents (S,); ``a1``: the NQF's ``|a_1|`` at the end (S,);
        ``arg``: the network's largest tanh argument ``sqrt(2) max_k |s_k
        a_k|`` (S,); ``pred``: the predicted exponent.
    """
    psi = fo.feature_matrix(psi)
    th, beta = real("theta", theta), real("beta", beta)
    lo, hi = (real("window", w) for w in window)
    if not 0 < lo < hi:
        raise ValueError(f"window must be 0 < lo < hi, got {window}")
    kk = np.arange(1, psi.shape[1] + 1, dtype=float)
    s_k, y = kk**-th, fo.fourier_target(psi, kk**-beta, c)
    out = {}
    for model in ("mlp", "nqf"):
        t, L, (a, _) = train_fourier_ensemble(
            a0, W0, s_k, psi, y, lr, n_steps, scale=scale, model=model
        )
        fit = -sc.fit_loglog_slopes(t[1:], L[1:], window)
        out[model] = dict(L=L, a=a, fit=fit)
    net, nqf = out["mlp"], out["nqf"]
    R = dict(t=t, L_net=net["L"], L_nqf=nqf["L"], net=net["fit"])
    R.update(nqf=nqf["fit"], a1=np.abs(nqf["a"][:, 0]))
    # the network's largest tanh argument
    R["arg"] = np.sqrt(2) * np.abs(s_k * net["a"]).max(axis=1)
    R["pred"] = sc.scaling_exponent(2 * beta, th + beta)
    return R


def escape_time(t: object, L: object) -> np.ndarray:
    """First time each member's loss is below half its initial value.

    Parameters
    ----------
    t : array_like, shape (T,)
    L : array_like, shape (T, E)
        One column a member.

    Returns
    -------
    ndarray, shape (E,)
        ``inf`` for a member that never gets there.
    """
    t = as_array("t", t, ndim=1)
    L = as_array("L", L, ndim=2)
    if L.shape[0] != t.shape[0]:
        raise ValueError(f"L must have len(t) = {t.shape[0]} rows")
    below = L < 0.5 * L[:1]
    return np.where(below.any(axis=0), t[np.argmax(below, axis=0)], np.inf)


def reflection_draw(
    g: np.random.Generator, lr: float, n_steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`reflection_gaps` ``(gd, adam)`` on a problem drawn from ``g``.

    In this order: a random NQF with ``m = 20``, ``p = 6``
    (:func:`nqf_lite.random_nqf`), labels ``y ~ N(0, I_20)``, ``W = 0.01 Z``
    with ``Z`` standard normal ``(6, 12)``, and a unit ``n`` orthogonal to
    ``1``: ``O = I - 2 n n^T`` is a reflection with ``O 1 = 1``, so ``W``
    and ``WO`` share ``(M, mu)`` (Cor. 2).
    """
    model = random_nqf(20, 6, seed=g)
    y = g.standard_normal(20)
    W = 0.01 * g.standard_normal((6, 12))
    n_vec = g.standard_normal(12)
    n_vec -= n_vec.mean()
    n_vec /= np.linalg.norm(n_vec)
    O = np.eye(12) - 2 * np.outer(n_vec, n_vec)
    return reflection_gaps(model, W, O, y, lr, n_steps)


def net_and_nqf_losses(
    X: object, y: object, W0: object, lr: float, n_steps: int, every: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GD on a bias-free tanh layer and on its NQF, from the same starts.

    The network is ``f(x) = sum_i v_i tanh(u_i . x)``, neuron ``i`` the
    column ``(u_i, v_i)`` of ``W``; its NQF is ``Tr[M A(x)]`` with ``A(x)``
    of Proposition 1 (Eq. 6, ``phi'(0) = 1``), trained on the mean squared
    error by :func:`nqf_lite.deep.higher_order.gd_train` and
    :meth:`~nqf_lite.deep.higher_order.NeuralForm.train`.

    Parameters
    ----------
    X : ndarray, shape (m, k)
        Inputs.
    y : ndarray, shape (m,)
        Labels.
    W0 : ndarray, shape (..., k + 1, d)
        Starts, one run per leading index.
    lr : float
    n_steps, every : int
        Steps, and record every ``every`` steps.

    Returns
    -------
    t, L_net, L_nqf : ndarray
        Recorded times and the two losses, shape ``(len(t), ...)``.
    """
    X = as_array("X", X, ndim=2)
    m, k = X.shape
    X_t = torch.tensor(X)

    def net(W: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(X_t @ W[..., :k, :]) * W[..., k:, :]).sum(-1)

    A = np.stack([A_mlp(x, 1.0) for x in X])
    nqf = NeuralForm(np.zeros(m), [np.zeros((m, k + 1)), A])
    t, L_net, _ = gd_train(net, W0, y, lr, n_steps, every=every)
    _, L_nqf, _ = nqf.train(W0, y, lr, n_steps, every=every)
    return t, L_net, L_nqf


def hand_error(
    e: SymmetricExpansion, W: object, closed: dict[tuple, float]
) -> float:
    """Each partition's part of Theorem 13's terms (Eq. 200) at ``W``
    against a hand expansion ``closed`` (partition -> value; a missing
    partition is 0): largest gap over the largest hand term."""
    if not closed:
        raise ValueError("closed must hold at least one partition's term")
    gaps = (
        abs(partition_term(e, lam, W) - closed.get(lam, 0.0))
        for lam in e.tensors
    )
    return max(gaps) / max(abs(v) for v in closed.values())


def remainder_orders(
    f: Layer,
    e: SymmetricExpansion,
    e_ctrl: SymmetricExpansion,
    W: object,
    x: object,
    eps: object,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Theorem 13's terms (Eq. 200) of one draw ``W``: Taylor, remainders.

    The order-``k`` terms ``T_k(W)``, ``k = 1..K`` (``K = e.order``), are
    checked against the Taylor coefficients of ``t -> f(tW)``
    (:func:`taylor_coefficients`); the truncations of ``e`` and of the
    control ``e_ctrl`` leave the remainders of :func:`series_remainders`
    at the scales ``eps``, whose log-log slopes are fitted per ``K``.

    Parameters
    ----------
    f : callable
        The layer ``f(W, x)``, ``f(0, x) = 0``.
    e, e_ctrl : SymmetricExpansion
        The expansion of ``f``, and a control (same order).
    W : ndarray, shape (p, d)
    x : any
    eps : array_like, shape (E,)

    Returns
    -------
    taylor_err : float
        ``max_k |T_k - coefficient_k| / max_k |coefficient_k|``.
    slopes, slopes_ctrl : ndarray, shape (K,)
        Fitted slopes of the remainders against ``eps``.
    rem, rem_ctrl : ndarray, shape (E, K)
        The remainders.
    """
    K = e.order
    if e_ctrl.order != K:
        raise ValueError(f"e_ctrl must have order {K}, got {e_ctrl.order}")
    terms = np.array([e.term(W, k) for k in range(1, K + 1)])
    coef = taylor_coefficients(f, W, x, K)
    taylor_err = np.abs(terms - coef).max() / np.abs(coef).max()
    terms_ctrl = np.array([e_ctrl.term(W, k) for k in range(1, K + 1)])
    rem, rem_ctrl = (
        series_remainders(f, W, x, eps, T) for T in (terms, terms_ctrl)
    )
    log_eps = np.log(as_array("eps", eps, ndim=1))
    slopes, slopes_ctrl = (
        np.polyfit(log_eps, np.log(R), 1)[0] for R in (rem, rem_ctrl)
    )
    return taylor_err, slopes, slopes_ctrl, rem, rem_ctrl


def norm_errors(eps: float, kind: str, x: object, Ws: object) -> np.ndarray:
    """Relative errors of the NQF of a normalised layer at many weights.

    The layer is :func:`normed_layer` ``(eps, kind, len(x))``, its NQF the
    order-2 expansion of :func:`nqf_lite.expand` at ``x`` (Eq. 20, with
    ``check=False``: the smoothness scale is ``sqrt(eps)``); the errors are
    those of :func:`nqf_error`.

    Parameters
    ----------
    eps : float
    kind : {"ln", "rms"}
    x : torch.Tensor, shape (k,)
    Ws : ndarray, shape (..., k + 1, d)

    Returns
    -------
    ndarray, shape Ws.shape[:-2]
    """
    Ws = as_array("Ws", Ws)
    if Ws.ndim < 2:
        raise ValueError(f"Ws must have shape (..., p, d), got {Ws.shape}")
    f = normed_layer(eps, kind, len(x))
    e = expand(f, x, Ws.shape[-2], d=Ws.shape[-1], check=False)
    flat = Ws.reshape(-1, *Ws.shape[-2:])
    return nqf_error(f, e, flat, x).reshape(Ws.shape[:-2])


def plateau_runs(
    net: Callable[[torch.Tensor], torch.Tensor],
    W_unit: object,
    y: object,
    lr: float,
    steps: dict[float, int],
    forms: dict[str, NeuralForm],
    every: int = 5,
) -> dict[float, dict[str, np.ndarray]]:
    """GD on a network from several initial scales, and on its forms.

    For each scale ``sig`` of ``steps`` the network ``net(W)`` (shape
    ``(..., m)``, on the training set) is trained from ``sig * W_unit``
    (one run per leading index) for ``steps[sig]`` steps
    (:func:`nqf_lite.deep.higher_order.gd_train`); each truncated form of
    ``forms`` (Thm 13, Eq. 200) from the first scale only, for as many
    steps. Losses are recorded every ``every`` steps.

    Returns
    -------
    dict
        Per scale ``{"t": times, "net": losses}``; at the first scale also
        each form's losses under its name.
    """
    if not steps:
        raise ValueError("steps must hold at least one initial scale")
    runs = {}
    for sig, n in steps.items():
        t, L, _ = gd_train(net, sig * W_unit, y, lr, n, every=every)
        runs[sig] = dict(t=t, net=L)
    sig0 = next(iter(steps))
    for key, form in forms.items():
        run = form.train(sig0 * W_unit, y, lr, steps[sig0], every=every)
        runs[sig0][key] = run[1]
    return runs
