"""A layer's forecast tested by training it: the runs of the design chapter.

The runners of chapter 11 ("A(x) as a design tool"):

- :func:`moe_run`: the forecast of a mixture of experts (Prop. 5, Eq. 14)
  before training, then full-batch GD (Eq. 21) on the real layer for many
  seeds at once, and the measured switch-on steps of its modes (Thm 6,
  Eq. 39), in a :class:`MoERun`;
- :func:`forecast_order`: the seeds that learn the modes out of the
  forecast order, against the ``chi2_d`` start's flip probability;
- :func:`closed_switch_on`: the first switch-on of a layer's own NQF, trained
  by the closed recursion (the forecast's error on its quadratic form);
- :func:`switch_on_se`: the standard error of a mean switch-on step, from
  the measured spread or the ``chi2_d`` start's, whichever is larger;
- :func:`phase_retrieval_run`: the how-to's registry model, phase
  retrieval, forecast from its start and trained as its NQF twin;
- :func:`load_images`: the 28 x 28 images of the how-to's network of MNIST
  size (Prop. 1 in factored form), MNIST or the scikit-learn digits.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import torch

from nqf_lite._checks import as_array, integer, positive
from nqf_lite.design.corrections import (
    OrderTally,
    gd_growth_rate,
    gd_half_time_from,
    gd_switch_on_time,
    geometric_mean_abundance,
    log_chi2_sd,
    order_tally,
    out_of_order_probability,
)
from nqf_lite.design.forecast import predict_learning
from nqf_lite.design.learning_forecast import LearningForecast
from nqf_lite.dynamics.solvable import crossing_time
from nqf_lite.expansion.models import (
    MODELS,
    activation,
    linear_expert,
    moe_module,
)
from nqf_lite.expansion.order import moments
from nqf_lite.experiments.train import descend_many

__all__ = [
    "MoERun",
    "PhaseRetrievalRun",
    "closed_switch_on",
    "forecast_order",
    "load_images",
    "moe_run",
    "phase_retrieval_run",
    "switch_on_se",
]


@dataclass(frozen=True)
class MoERun:
    """What :func:`moe_run` returns.

    Attributes
    ----------
    fc : LearningForecast
        The forecast made before training.
    z : ndarray (n + 1, seeds, p)
        The abundance of every mode, step by step, seed by seed.
    n, d : int
        Steps trained; the number of experts.
    loss : ndarray (n + 1, seeds)
        Training loss (Eq. 26) of every seed.
    r, C : ndarray (k,)
        Rates and competitions ``C_kk`` of the growing modes, in forecast
        order.
    pred : ndarray (k,)
        Forecast switch-on steps with the GD-step and ``chi2_d`` corrections
        (this book, chapter 8).
    meas : ndarray (seeds, k)
        Measured switch-on steps (half-saturation crossings).
    se : ndarray (k,)
        Standard errors of the mean measured steps (:func:`switch_on_se`).
    """

    fc: LearningForecast
    z: np.ndarray
    n: int
    d: int
    loss: np.ndarray
    r: np.ndarray
    C: np.ndarray
    pred: np.ndarray
    meas: np.ndarray
    se: np.ndarray


def switch_on_se(r: object, meas: object, d: int, lr: float) -> np.ndarray:
    """Standard error of the mean switch-on step of each mode.

    The seed-to-seed standard deviation is the measured one (``ddof=1``) or,
    if larger, the one of a ``chi2_d`` start, ``sqrt(psi'(d/2)) / (lr
    r_gd)`` in steps (this book, from Thm 6, Eq. 39, and Thm 2, Eq. 24).

    Parameters
    ----------
    r : array_like (k,)
        Growth rates of the modes.
    meas : array_like (seeds, k)
        Measured switch-on steps, at least two seeds; NaN where a mode never
        switched on (its standard error is then NaN).
    d : int >= 1
        The width (number of units).
    lr : float > 0

    Returns
    -------
    ndarray (k,)
        ``sd / sqrt(seeds)``.
    """
    r, meas = as_array("r", r), np.asarray(meas, dtype=float)
    d, lr = integer("d", d), positive("lr", lr)
    if meas.ndim != 2 or meas.shape[0] < 2:
        raise ValueError(
            f"meas must be (seeds, modes) with at least two seeds, got shape "
            f"{meas.shape}"
        )
    sd_chi2 = log_chi2_sd(d) / (lr * gd_growth_rate(r, lr))  # in steps
    sd = np.maximum(meas.std(axis=0, ddof=1), sd_chi2)
    return sd / np.sqrt(meas.shape[0])


def moe_run(
    gate: str,
    d: int,
    seeds: Sequence[object],
    inputs: object,
    y: object,
    sigma2: float,
    lr: float,
    stretch: float = 1.3,
) -> MoERun:
    """Forecast a mixture of experts, then train it and measure its modes.

    The layer is ``sum_i psi(r_i . x) (theta_i . x)`` with ``d`` linear
    experts (Prop. 5, Eq. 14). Its forecast
    (:func:`~nqf_lite.design.forecast.predict_learning`, Thm 6, Eqs. 37,
    39) is made from the geometric-mean abundance of a ``sigma2 chi2_d``
    start; then every seed draws ``W0 ~ N(0, sigma2)`` of shape ``(2k, d)``
    and all seeds descend at once by full-batch GD (Eq. 21) on the loss of
    Eq. 26 for ``stretch`` times the last forecast switch-on. The measured
    switch-on of a mode is the step where its abundance ``z_k = |P_k^T W|^2``
    crosses half its forecast saturation.

    Parameters
    ----------
    gate : str
        The gate ``psi`` (``"tanh"``, ``"gelu"``, ...).
    d : int >= 1
        The number of experts.
    seeds : sequence of int or SeedSequence
        One a run, at least two.
    inputs : array_like (m, k)
        One input a row.
    y : array_like (m,)
        The targets.
    sigma2, lr : float > 0
        Variance of the initial weights; learning rate.
    stretch : float > 0
        How long to train, in units of the last forecast switch-on.

    Returns
    -------
    MoERun
    """
    inputs, y = as_array("inputs", inputs), as_array("y", y)
    d, sigma2 = integer("d", d), positive("sigma2", sigma2)
    lr, stretch = positive("lr", lr), positive("stretch", stretch)
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least two, got {len(seeds)}")
    k = inputs.shape[1]
    f = moe_module(k, linear_expert(k), gate)
    eps = geometric_mean_abundance(d * sigma2, d)
    fc = predict_learning(  # warn=False: the commuting error is inspected
        f, list(inputs), y, f.p, d=d, eps=eps, lr=lr, warn=False
    )
    n = int(stretch * fc.switch_on_steps[fc.order].max())
    psi = activation(gate)[0]
    W0 = [
        g.standard_normal((2 * k, d))
        for g in map(np.random.default_rng, seeds)
    ]
    W0 = np.sqrt(sigma2) * np.stack(W0)
    Xt, yt, Pt = torch.tensor(inputs), torch.tensor(y), torch.tensor(fc.modes)

    def loss(W):  # one per seed
        out = psi(Xt @ W[:, :k, :]) * (Xt @ W[:, k:, :])  # (seeds, m, d)
        return ((out.sum(-1) - yt) ** 2).mean(-1)

    def record(W):
        return dict(z=((Pt.T @ W) ** 2).sum(-1), loss=loss(W))

    gd = descend_many(W0, lambda W: loss(W).sum(), lr, n, record=record)
    z, t, half = gd.history["z"], np.arange(n + 1), fc.saturation[fc.order] / 2
    meas = [crossing_time(t, zs[:, fc.order], half) for zs in z.swapaxes(0, 1)]
    r, C = fc.rates[fc.order], np.diag(fc.competition)[fc.order]
    # forecast steps with the GD-step and chi2_d corrections of chapter 8
    pred = gd_switch_on_time(r, C, d * sigma2, lr, d=d) / lr
    meas = np.array(meas)
    with np.errstate(invalid="ignore"):  # a mode that never switches on
        se = switch_on_se(r, meas, d, lr)
    return MoERun(fc, z, n, d, gd.history["loss"], r, C, pred, meas, se)


def forecast_order(
    run: MoERun, sigma2: float, lr: float, g: np.random.Generator, alpha: float
) -> tuple[float, float, OrderTally]:
    """How many seeds of a :class:`MoERun` learn its modes out of order.

    A ``chi2_d`` start can flip two modes whose GD switch-on times are close
    (this book, chapter 8; Thm 6, Eq. 43): the flip probability ``p`` of the
    start and its upper confidence limit ``p_up`` are drawn with ``g``; the
    tally counts the seeds out of the forecast order (at most the binomial
    ``1 - alpha`` quantile of ``p_up``) and the seeds out of the order
    forecast from their own ``z_k(0)`` (none).

    Parameters
    ----------
    run : MoERun
    sigma2, lr : float > 0
        The start's variance and the learning rate of the run.
    g : numpy Generator
    alpha : float in (0, 1)

    Returns
    -------
    (float, float, OrderTally)
        ``p``, ``p_up`` and the tally.
    """
    sigma2, lr = positive("sigma2", sigma2), positive("lr", lr)
    d, z0 = run.d, run.z[0][:, run.fc.order]
    p, p_up = out_of_order_probability(run.r, run.C, d * sigma2, lr, d, g)
    own = gd_half_time_from(run.r, run.C, z0, lr)
    return p, p_up, order_tally(run.meas, own, p_up, alpha)


def closed_switch_on(
    nqf: object,
    fc: LearningForecast,
    W0: object,
    y: object,
    lr: float,
    steps: int,
    mode: int,
) -> float:
    """The switch-on step of one mode of an NQF trained by the closed
    recursion.

    The quadratic form the forecast is read from, trained exactly (Thm 2,
    Eq. 24) from ``M(0), mu(0)`` of ``W0`` (p, d): the step where ``z =
    p^T M p`` of the forecast's mode ``mode`` crosses half its forecast
    saturation. Against the forecast's step it measures the forecast's own
    error (the approach to saturation is a logistic, Eq. 39, only for
    commuting data), apart from any cubic term of a real layer.

    Parameters
    ----------
    nqf : NQF or FactoredNQF
        The layer's NQF on its training inputs.
    fc : LearningForecast
        The forecast from ``W0``.
    W0 : array_like (p, d)
    y : array_like
        The targets.
    lr : float > 0
    steps : int >= 1
    mode : int
        The mode's index in ``fc.modes``' columns.

    Returns
    -------
    float
        The crossing step (NaN if never crossed).
    """
    W0 = as_array("W0", W0, ndim=2)
    steps = integer("steps", steps)
    rec = nqf.train_closed(*moments(W0), W0.shape[1], y, lr, steps, record="M")
    p = fc.modes[:, mode]
    z = np.einsum("i,tij,j->t", p, rec.M, p)
    return crossing_time(np.arange(len(z)), z, fc.saturation[mode] / 2)


class PhaseRetrievalRun(NamedTuple):
    """What :func:`phase_retrieval_run` returns (a tuple, in this order)."""

    fc: LearningForecast  #: the forecast from the start
    z: np.ndarray  #: (steps + 1,) abundance of the first mode / saturation
    loss: np.ndarray  #: (steps + 1,) training loss of the twin
    t_on: float  #: the step where ``z`` crosses 1/2
    overlap: float  #: ``|top eigenvector of M . first mode|`` at ``t_on``


def phase_retrieval_run(
    seed: object,
    n_meas: int,
    width: int,
    sigma: float,
    lr: float,
    steps: int = 450,
) -> PhaseRetrievalRun:
    """Phase retrieval of a rank-2 signal: forecast, then closed training.

    The registry model ``"phase_retrieval"`` (``y = a^T W W^T a``, ``A_a =
    a a^T``; Table 3) on ``n_meas`` Gaussian measurements ``a`` of the
    signal ``1.0 u_1 u_1^T + 0.3 u_2 u_2^T`` (``u`` orthonormal). The
    forecast (:func:`~nqf_lite.design.forecast.predict_learning` of the model
    from ``W0 = sigma N(0, 1)``, warnings silenced: the ``a a^T`` do not
    commute, so only its first switch-on is a forecast) follows the top
    eigenvector of ``Y`` (the linear part of Eq. 143); the twin
    ``model.twin(a)`` is trained from ``W0`` by the closed recursion (Thm 2,
    Eq. 24).

    Parameters
    ----------
    seed : int or SeedSequence
        Draws the measurements, the signal and ``W0``, in that order.
    n_meas, width : int >= 1
        Measurements; units.
    sigma, lr : float > 0
        Scale of ``W0``; learning rate.
    steps : int >= 1

    Returns
    -------
    PhaseRetrievalRun
    """
    n_meas, width = integer("n_meas", n_meas), integer("width", width)
    sigma, lr = positive("sigma", sigma), positive("lr", lr)
    steps = integer("steps", steps)
    pr = MODELS["phase_retrieval"]
    r = np.random.default_rng(seed)
    a = r.standard_normal((n_meas, pr.p))
    U = np.linalg.qr(r.standard_normal((pr.p, 2)))[0]
    # rank 2: 1.0 u_1 u_1^T + 0.3 u_2 u_2^T
    signal = sum(s * np.outer(u, u) for s, u in zip((1.0, 0.3), U.T))
    y_pr = np.einsum("ai,ij,aj->a", a, signal, a)
    W_init = sigma * r.standard_normal((pr.p, width))
    with warnings.catch_warnings():  # not commuting: the first mode only
        warnings.simplefilter("ignore")
        fc_pr = predict_learning(pr, a, y_pr, W0=W_init, lr=lr)
    top = fc_pr.modes[:, fc_pr.order[0]]
    rec = pr.twin(a).train_closed(
        *moments(W_init), width, y_pr, lr, steps, record=("M", "loss")
    )
    z = np.einsum("k,tkl,l->t", top, rec.M, top)
    z = z / fc_pr.saturation[fc_pr.order[0]]
    t_on = crossing_time(rec.steps, z, 0.5)
    M_on = rec.M[int(np.ceil(t_on))]  # the learned direction at switch-on
    overlap = abs(np.linalg.eigh(M_on)[1][:, -1] @ top)
    return PhaseRetrievalRun(fc_pr, z, rec.loss, t_on, overlap)


def load_images(
    mnist: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The 28 x 28 images of a first real experiment, one a row.

    MNIST's 60,000 training images when asked for and ``torchvision`` can
    fetch them (into ``~/.cache/nqf-mnist``); otherwise the 1797
    scikit-learn digits, upsampled from 8 x 8 to 28 x 28 (linear
    interpolation; no download). The network of the how-to's Sec. 5 expands
    them in the factored form of Prop. 1.

    Parameters
    ----------
    mnist : bool, optional
        Ask for MNIST; by default, when the environment variable
        ``NQF_MNIST`` is ``"1"``.

    Returns
    -------
    (ndarray (m, 784), ndarray (m,), str)
        Pixel values in ``[0, 1]``, the labels ``0..9``, and ``"MNIST"`` or
        ``"digits"``.
    """
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    if mnist is None:
        mnist = os.environ.get("NQF_MNIST") == "1"
    if not isinstance(mnist, (bool, np.bool_)):
        raise TypeError(f"mnist must be a bool or None, got {mnist!r}")
    if mnist:
        try:
            from torchvision.datasets import MNIST

            root = os.path.expanduser("~/.cache/nqf-mnist")
            ds = MNIST(root, train=True, download=True)
            X_img = ds.data.reshape(-1, 784).numpy() / 255.0
            return X_img, ds.targets.numpy(), "MNIST"
        except Exception as exc:  # no torchvision, no network, ...
            print(f"MNIST unavailable ({type(exc).__name__}): digits")
    digits = load_digits()
    images = zoom(digits.images / 16.0, (1, 3.5, 3.5), order=1)
    return images.reshape(len(images), -1), digits.target, "digits"
