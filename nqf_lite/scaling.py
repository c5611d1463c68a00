"""Power laws from crowded switch-ons (paper Sec. 6, App. A.17 Thms 9-11, App. C).

When the modes of an NQF switch on one by one (Theorem 6/8) and their growth rates
and loss drops follow power laws in the mode index,

.. math::

    \\zeta_k = r_k \\propto k^{-\\alpha_2}, \\qquad V_k = r_k^2/(8 C_{kk}) \\propto k^{-\\alpha_1},

the excess loss in rescaled time ``tau = t/ln(1/eps)`` tends to the staircase
``E(tau) = sum_k V_k 1(tau < 1/r_k)`` (Eq. 168), whose envelope is
``tau^{-(alpha_1 - 1)/alpha_2}`` (Eq. 46/161).  This module holds the exponents
(Eqs. 46, 49, 292), the staircase, a log-log slope fit, the data of Fig. 3 (right)
and of the one-hot quadratic network (App. C, Eq. 299), and the Fourier MLP of
Eq. 50 with its NQF (Eq. 296) and plain gradient-descent trainers.

The Fourier MLP is written with an explicit output prefactor ``scale``: the paper's
Eq. 50 has ``scale = 1/sqrt(P)``; ``scale = 1`` drops it (notes Sec. 5.3).

``excess_loss`` (Eq. 163) lives in :mod:`nqf_lite.solvable` and is re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from tqdm.auto import tqdm

from ._checks import as_array, check_shape, integer, nonnegative, positive
from .solvable import excess_loss

__all__ = [
    "scaling_exponent",
    "samplewise_exponent",
    "effective_slope",
    "excess_loss",
    "staircase_loss",
    "LogLogFit",
    "fit_loglog_slope",
    "PowerLawModes",
    "powerlaw_modes",
    "onehot_quadratic_gd",
    "fourier_features",
    "fourier_target",
    "fourier_mlp",
    "fourier_nqf",
    "fourier_nqf_structure",
    "fourier_modes",
    "train_fourier",
    "train_tanh_mlp",
]


# ----------------------------------------------------------------------------- helpers
def _vector(name: str, value: object, k: int | None = None) -> np.ndarray:
    arr = as_array(name, value, ndim=1)
    if k is not None:
        check_shape(name, arr, (k,))
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one entry")
    return arr


def _diag(name: str, C: object, k: int) -> np.ndarray:
    """Diagonal of ``C`` given as (K,) or (K, K); raise if a (K, K) ``C`` is not diagonal."""
    C = as_array(name, C, ndim=(1, 2))
    if C.ndim == 1:
        check_shape(name, C, (k,))
        return C
    check_shape(name, C, (k, k))
    d = np.diag(C).copy()
    off = np.abs(C - np.diag(d)).max(initial=0.0)
    if off > 1e-10 * max(np.abs(d).max(initial=0.0), 1e-300):
        raise ValueError(f"{name} must be diagonal (orthogonal features); max |off-diagonal| = {off:.3g}")
    return d


def _steps(name: str, value: object) -> int:
    return integer(name, value, minimum=1)


# ----------------------------------------------------------------------------- exponents
def scaling_exponent(alpha1: float, alpha2: float) -> float:
    """Feature-wise loss exponent ``(alpha_1 - 1)/alpha_2`` (Eq. 46, Theorem 9 Eq. 161).

    Parameters
    ----------
    alpha1 : float
        Decay exponent of the loss drops, ``V_k ∝ k^{-alpha1}``; must exceed 1 so that
        the initial excess loss ``sum_k V_k`` is finite.
    alpha2 : float
        Decay exponent of the growth rates, ``zeta_k ∝ k^{-alpha2}``, ``> 0``.

    Returns
    -------
    float
        The exponent ``a`` of ``E(tau) = Theta(tau^{-a})``.
    """
    alpha1 = positive("alpha1", alpha1)
    alpha2 = positive("alpha2", alpha2)
    if alpha1 <= 1:
        raise ValueError(f"alpha1 must be > 1 (finite initial loss sum_k k^-alpha1), got {alpha1}")
    return (alpha1 - 1.0) / alpha2


def samplewise_exponent(gamma1: float, gamma2: float) -> float:
    """Sample-wise loss exponent ``(2 gamma_1 - 1)/gamma_2`` (Eq. 49, Theorem 11 Eq. 187).

    Parameters
    ----------
    gamma1 : float
        Label decay ``y_n ∝ n^{-gamma1}``, ``> 1/2`` (finite ``sum_n y_n^2``).
    gamma2 : float
        Rate decay ``zeta_n ∝ n^{-gamma2}``, ``> 0``.

    Returns
    -------
    float
    """
    gamma1 = positive("gamma1", gamma1)
    gamma2 = positive("gamma2", gamma2)
    if gamma1 <= 0.5:
        raise ValueError(f"gamma1 must be > 1/2 (finite sum_n y_n^2), got {gamma1}")
    return (2.0 * gamma1 - 1.0) / gamma2


def effective_slope(
    alpha1: float, alpha2: float, r: object, C: object, eps: float, beta0: float = 0.0
) -> np.ndarray:
    """Finite-initialisation local exponent of mode k (App. C, Eqs. 290-292).

    With ``t_k = (1/r_k) ln(z_k^inf / z_k(0))`` (Eq. 290), ``z_k^inf = r_k/C_kk`` and
    ``z_k(0) = eps k^{-beta0}``,

    .. math::

        k_\\mathrm{eff}(k) = \\frac{\\alpha_1 - 1}
            {\\alpha_2 - (\\alpha_1 - \\alpha_2 - \\beta_0)/\\ln(z_k^\\infty/z_k(0))}.

    ``beta0 = 0`` (uniform init) is the paper's Eq. 292.  Theorem 9's aligned init
    ``beta0 = alpha1 - alpha2`` removes the correction.

    Parameters
    ----------
    alpha1, alpha2 : float
        Exponents of ``V_k`` and ``r_k`` (see :func:`scaling_exponent`).
    r : array_like, shape (K,)
        Growth rates of modes ``k = 1..K``, all ``> 0``.
    C : array_like, shape (K,) or (K, K)
        Diagonal competition matrix (or its diagonal), all ``C_kk > 0``.
    eps : float
        Initial abundance scale (M-units).
    beta0 : float
        Exponent of the initial profile, ``z_k(0) = eps k^{-beta0}``.

    Returns
    -------
    ndarray, shape (K,)

    Raises
    ------
    ValueError
        If a mode starts at or above saturation (``z_k(0) >= z_k^inf``), where Eq. 290
        has no switch-on, or if ``t_k`` of Eq. 290 fails to increase with ``k``.
    """
    base = scaling_exponent(alpha1, alpha2)
    r = _vector("r", r)
    c = _diag("C", C, r.size)
    eps = positive("eps", eps)
    beta0 = nonnegative("beta0", beta0)
    if np.any(r <= 0) or np.any(c <= 0):
        raise ValueError("effective_slope needs r_k > 0 and C_kk > 0 for every mode")
    k = np.arange(1, r.size + 1, dtype=float)
    log_ratio = np.log((r / c) / (eps * k**-beta0))
    if np.any(log_ratio <= 0):
        raise ValueError("every mode must start below saturation, eps k^-beta0 < r_k/C_kk")
    denom = alpha2 - (alpha1 - alpha2 - beta0) / log_ratio
    if np.any(denom <= 0):
        raise ValueError("eps too large: t_k of Eq. 290 does not increase with k (d ln t/d ln k <= 0)")
    return base * alpha2 / denom


def staircase_loss(tau: object, r: object, V: object) -> np.ndarray:
    """The ``eps -> 0`` limit of the excess loss, ``sum_k V_k 1(tau < 1/r_k)`` (Eqs. 168, 190).

    Read with ``r = zeta_n`` and ``V = y_n^2`` it is the sample-wise limit of Eq. 47/190.

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
    r = _vector("r", r)
    V = _vector("V", V, r.size)
    if np.any(tau < 0):
        raise ValueError("tau must be >= 0")
    if np.any(r <= 0):
        raise ValueError("r must be > 0 (a mode with r_k <= 0 never switches on)")
    if np.any(V < 0):
        raise ValueError("V must be >= 0")
    return (tau[:, None] < 1.0 / r[None, :]).astype(float) @ V


# ----------------------------------------------------------------------------- slope fit
class LogLogFit(NamedTuple):
    """Least-squares line ``ln L = slope ln t + intercept`` over a window."""

    slope: float
    intercept: float
    decades: float


def fit_loglog_slope(t: object, L: object, window: tuple[float, float], n: int = 100) -> LogLogFit:
    """Fit a power law ``L ∝ t^slope`` on the window ``[t_lo, t_hi]``.

    ``ln L`` is interpolated linearly in ``ln t`` onto ``n`` log-uniform points of the
    window, so the fit weights every decade equally whatever the sampling of ``t``
    (e.g. one record per GD step).  The loss exponent is ``-slope``.

    Parameters
    ----------
    t : array_like, shape (T,)
        Strictly increasing positive times.
    L : array_like, shape (T,)
        Positive losses.
    window : (float, float)
        ``0 < t_lo < t_hi`` inside ``[t[0], t[-1]]``.
    n : int
        Number of fit points (``>= 2``).

    Returns
    -------
    LogLogFit
        ``slope``, ``intercept`` and ``decades = log10(t_hi/t_lo)``.
    """
    t = _vector("t", t)
    L = _vector("L", L, t.size)
    if np.any(t <= 0) or np.any(np.diff(t) <= 0):
        raise ValueError("t must be positive and strictly increasing")
    if np.any(L <= 0):
        raise ValueError("L must be > 0 to take logarithms")
    try:
        lo, hi = (float(w) for w in window)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"window must be a pair (t_lo, t_hi), got {window!r}") from exc
    if not (0 < lo < hi):
        raise ValueError(f"window must satisfy 0 < t_lo < t_hi, got {window!r}")
    if lo < t[0] or hi > t[-1]:
        raise ValueError(f"window {window!r} must lie inside the sampled range [{t[0]:.4g}, {t[-1]:.4g}]")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    lt = np.linspace(np.log(lo), np.log(hi), n)
    ll = np.interp(lt, np.log(t), np.log(L))
    slope, intercept = np.polyfit(lt, ll, 1)
    return LogLogFit(float(slope), float(intercept), float(np.log10(hi / lo)))


# ----------------------------------------------------------------------------- Fig. 3 right / one-hot data
class PowerLawModes(NamedTuple):
    """Diagonal power-law data of Fig. 3 (right), App. C.

    Sample ``n`` has the one-entry structure matrix ``A_n = a_n E_nn``, so mode ``k``
    is fed by sample ``k`` alone and ``lambda_{n,k} = a_n delta_{nk}``.
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

    It is also the one-hot quadratic network of Eq. 299: ``x_k = sqrt(a_k) e_k`` and
    ``f(x) = x^T W W^T x``.  In the sample-wise reading (Theorem 11)
    ``zeta_n = r_n ∝ n^{-alpha2}`` and ``y_n ∝ n^{-alpha1/2}``, i.e. ``gamma1 = alpha1/2``
    and ``gamma2 = alpha2``.

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
    m = _steps("m", m)
    scaling_exponent(alpha1, alpha2)  # validates the exponents
    k = np.arange(1, m + 1, dtype=float)
    r = k**-alpha2
    V = k**-alpha1
    C = r**2 / (8.0 * V)
    a = np.sqrt(C * m / 8.0)
    y = m * r / (8.0 * a)
    return PowerLawModes(r, C, V, a, y)


def onehot_quadratic_gd(
    a: object, y: object, W0: object, lr: float, n_steps: int, every: int = 1, progress: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on the one-hot quadratic network ``f(x) = x^T W W^T x`` (Eq. 299).

    With ``x_n = sqrt(a_n) e_n`` the prediction on sample ``n`` is ``a_n |w_n|^2``
    (``w_n`` the n-th row of ``W``), the loss is ``L = (1/m) sum_n (a_n |w_n|^2 - y_n)^2``
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
        Record every ``every``-th step (steps ``0, every, 2 every, ... <= n_steps``).
    progress : bool
        Show a progress bar.

    Returns
    -------
    t : ndarray, shape (S,)
        ``lr * step`` of the records.
    z : ndarray, shape (S, m)
        Mode abundances ``z_n = |w_n|^2 = M_nn``.
    """
    a = _vector("a", a)
    if np.any(a <= 0):
        raise ValueError("a must be > 0 (squared input norms)")
    y = _vector("y", y, a.size)
    W = as_array("W0", W0, ndim=2).copy()
    if W.shape[0] != a.size:
        raise ValueError(f"W0 must have {a.size} rows (one per sample), got shape {W.shape}")
    lr = positive("lr", lr)
    n_steps = _steps("n_steps", n_steps)
    every = _steps("every", every)
    m = a.size
    steps = np.arange(0, n_steps + 1, every)
    z = np.empty((steps.size, m))
    for s in tqdm(range(n_steps + 1), disable=not progress, desc="one-hot GD", mininterval=1.0):
        zs = np.einsum("nd,nd->n", W, W)
        if s % every == 0:
            z[s // every] = zs
        if s < n_steps:
            W -= lr * ((4.0 / m) * a * (a * zs - y))[:, None] * W
    return lr * steps, z


# ----------------------------------------------------------------------------- Fourier MLP (Eq. 50)
def fourier_features(M: int, P: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid and Fourier features of Eq. 50.

    ``x_n = n/M`` (``n = 0..M-1``) and ``psi_k(x) = sqrt(2) cos(2 pi k x)``, ``k = 1..P``.
    For ``P < M/2`` the features are orthonormal on the grid,
    ``(1/M) sum_n psi_k(x_n) psi_j(x_n) = delta_kj``, and have zero mean.

    Parameters
    ----------
    M : int
        Grid size.
    P : int
        Number of features, ``1 <= P < M/2``.

    Returns
    -------
    x : ndarray, shape (M,)
    psi : ndarray, shape (M, P)
    """
    M = _steps("M", M)
    P = _steps("P", P)
    if 2 * P >= M:
        raise ValueError(f"P must be < M/2 for orthonormal cosines on the grid, got P={P}, M={M}")
    x = np.arange(M) / M
    k = np.arange(1, P + 1)
    return x, np.sqrt(2.0) * np.cos(2.0 * np.pi * np.outer(x, k))


def fourier_target(psi: object, b: object, c: float = 1.0) -> np.ndarray:
    """Target ``y(x_n) = c sum_k b_k psi_k(x_n)`` (Eq. 50's teacher, ``b_k = k^{-beta}``).

    Parameters
    ----------
    psi : array_like, shape (M, P)
    b : array_like, shape (P,)
    c : float
        Amplitude (the paper uses 1).

    Returns
    -------
    ndarray, shape (M,)
    """
    psi = as_array("psi", psi, ndim=2)
    b = _vector("b", b, psi.shape[1])
    return positive("c", c) * psi @ b


def _fourier_args(a: object, W: object, s: object, psi: object, scale: float):
    psi = as_array("psi", psi, ndim=2)
    P = psi.shape[1]
    return (
        _vector("a", a, P),
        _vector("W", W, P),
        _vector("s", s, P),
        psi,
        positive("scale", scale),
    )


def fourier_mlp(a: object, W: object, s: object, psi: object, scale: float = 1.0) -> np.ndarray:
    """The Fourier MLP ``f(x_n) = scale sum_k W_k tanh(s_k a_k psi_k(x_n))`` (Eq. 50).

    Parameters
    ----------
    a, W : array_like, shape (P,)
        Input and output weights of the ``P`` units.
    s : array_like, shape (P,)
        Feature weights ``s_k = k^{-theta}``.
    psi : array_like, shape (M, P)
        Features on the grid (:func:`fourier_features`).
    scale : float
        Output prefactor: ``1/sqrt(P)`` in the paper, ``1`` without it.

    Returns
    -------
    ndarray, shape (M,)
    """
    a, W, s, psi, scale = _fourier_args(a, W, s, psi, scale)
    return scale * np.tanh(psi * (s * a)) @ W


def fourier_nqf(a: object, W: object, s: object, psi: object, scale: float = 1.0) -> np.ndarray:
    """NQF of the Fourier MLP, ``Tr[M A(x_n)] = scale sum_k s_k a_k W_k psi_k(x_n)`` (Eq. 296).

    Same arguments as :func:`fourier_mlp`; equals ``Tr[w w^T A(x_n)]`` with the
    block-diagonal ``A`` of :func:`fourier_nqf_structure` and
    ``w = (a_1, W_1, ..., a_P, W_P)``.

    Returns
    -------
    ndarray, shape (M,)
    """
    a, W, s, psi, scale = _fourier_args(a, W, s, psi, scale)
    return scale * psi @ (s * a * W)


def fourier_nqf_structure(s: object, psi: object, scale: float = 1.0) -> np.ndarray:
    """Block-diagonal structure matrices of the Fourier MLP (Eq. 296).

    ``A(x_n) = ⊕_k (scale s_k/2) [[0, psi_k(x_n)], [psi_k(x_n), 0]]`` on the parameters
    ordered ``(a_1, W_1, a_2, W_2, ...)``.  The network is not permutation-symmetric
    (each unit has its own feature), so it is a single "neuron" with ``p = 2P``.

    Parameters
    ----------
    s : array_like, shape (P,)
    psi : array_like, shape (M, P)
    scale : float

    Returns
    -------
    ndarray, shape (M, 2P, 2P)
    """
    psi = as_array("psi", psi, ndim=2)
    M, P = psi.shape
    s = _vector("s", s, P)
    scale = positive("scale", scale)
    A = np.zeros((M, 2 * P, 2 * P))
    k = np.arange(P)
    A[:, 2 * k, 2 * k + 1] = 0.5 * scale * s * psi
    A[:, 2 * k + 1, 2 * k] = 0.5 * scale * s * psi
    return A


def fourier_modes(s: object, b: object, c: float = 1.0, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates and self-competition of the growing Fourier modes (Eq. 297, notes Sec. 5.1).

    Mode ``k+`` is the eigenvector ``(a_k + W_k)/sqrt(2)`` of the k-th block of Eq. 296,
    with eigenvalue ``lambda_{n,k} = scale s_k psi_k(x_n)/2``.  For the target
    ``y = c sum_k b_k psi_k`` and orthonormal features, Eq. 37 gives

    ``r_k = 4 c scale s_k b_k``, ``C_kk = 2 scale^2 s_k^2`` (so ``V_k = c^2 b_k^2``,
    ``z_k^inf = 2 c b_k/(scale s_k)``).  The partner mode ``k-`` has rate ``-r_k``.

    Parameters
    ----------
    s : array_like, shape (P,)
        Feature weights.
    b : array_like, shape (P,)
        Target coefficients.
    c, scale : float
        Target amplitude and output prefactor.

    Returns
    -------
    r : ndarray, shape (P,)
    C : ndarray, shape (P,)
        Diagonal of the competition matrix of the growing modes.
    """
    s = _vector("s", s)
    b = _vector("b", b, s.size)
    c = positive("c", c)
    scale = positive("scale", scale)
    return 4.0 * c * scale * s * b, 2.0 * scale**2 * s**2


def train_fourier(
    a0: object,
    W0: object,
    s: object,
    psi: object,
    y: object,
    lr: float,
    n_steps: int,
    scale: float = 1.0,
    model: str = "mlp",
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Full-batch GD on the Fourier MLP (Eq. 50) or its NQF (Eq. 296), loss ``(1/M) sum (f - y)^2``.

    Gradients are written out by hand (``e_n = (2/M)(f_n - y_n)``):

    * ``model="mlp"``: ``dL/dW_k = scale sum_n e_n tanh(u_kn)``,
      ``dL/da_k = scale W_k s_k sum_n e_n (1 - tanh^2 u_kn) psi_kn``, ``u_kn = s_k a_k psi_kn``;
    * ``model="nqf"``: ``dL/dW_k = scale s_k a_k sum_n e_n psi_kn`` and symmetrically for ``a_k``.

    Parameters
    ----------
    a0, W0 : array_like, shape (P,)
        Initial weights (the same for both models to compare them).
    s : array_like, shape (P,)
    psi : array_like, shape (M, P)
    y : array_like, shape (M,)
    lr : float
        Learning rate; time is ``t = lr * step``.
    n_steps : int
    scale : float
        Output prefactor (see :func:`fourier_mlp`).
    model : {"mlp", "nqf"}
    progress : bool
        Show a progress bar.

    Returns
    -------
    t : ndarray, shape (n_steps,)
        ``lr * step`` for ``step = 0..n_steps-1``.
    L : ndarray, shape (n_steps,)
        Loss before each update.
    (a, W) : tuple of ndarray
        Final weights.
    """
    a, W, s, psi, scale = _fourier_args(a0, W0, s, psi, scale)
    a, W = a.copy(), W.copy()
    y = _vector("y", y, psi.shape[0])
    lr = positive("lr", lr)
    n_steps = _steps("n_steps", n_steps)
    if model not in ("mlp", "nqf"):
        raise ValueError(f"model must be 'mlp' or 'nqf', got {model!r}")
    M = psi.shape[0]
    psiT = np.ascontiguousarray(psi.T)
    L = np.empty(n_steps)
    for i in tqdm(range(n_steps), disable=not progress, desc=f"Fourier {model}", mininterval=1.0):
        if model == "mlp":
            h = np.tanh((s * a)[:, None] * psiT)
            e = h.T @ W * scale - y
            L[i] = e @ e / M
            g = (2.0 * scale / M) * e
            gW = h @ g
            ga = W * s * (((1.0 - h * h) * psiT) @ g)
        else:
            e = psi @ (s * a * W) * scale - y
            L[i] = e @ e / M
            q = (2.0 * scale / M) * s * (psiT @ e)
            ga, gW = q * W, q * a
        a -= lr * ga
        W -= lr * gW
    return lr * np.arange(n_steps), L, (a, W)


def train_tanh_mlp(
    u0: object, v0: object, x: object, y: object, lr: float, n_steps: int, progress: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on a plain bias-free tanh MLP on the raw input, ``f(x) = sum_i v_i tanh(u_i x)``.

    The baseline of Fig. 5: its NQF is ``sum_i v_i u_i x`` (Prop. 1 with a scalar input),
    a single linear feature ``x``, so only the linear part of the target can be learned
    at small initialisation.

    Parameters
    ----------
    u0, v0 : array_like, shape (H,)
        Input and output weights of the ``H`` hidden units.
    x, y : array_like, shape (M,)
        Inputs and labels.
    lr : float
    n_steps : int
    progress : bool

    Returns
    -------
    t : ndarray, shape (n_steps,)
    L : ndarray, shape (n_steps,)
        Loss ``(1/M) sum (f - y)^2`` before each update.
    """
    u = _vector("u0", u0).copy()
    v = _vector("v0", v0, u.size).copy()
    x = _vector("x", x)
    y = _vector("y", y, x.size)
    lr = positive("lr", lr)
    n_steps = _steps("n_steps", n_steps)
    M = x.size
    L = np.empty(n_steps)
    for i in tqdm(range(n_steps), disable=not progress, desc="tanh MLP", mininterval=1.0):
        h = np.tanh(np.outer(u, x))
        e = v @ h - y
        L[i] = e @ e / M
        g = (2.0 / M) * e
        gv = h @ g
        gu = v * (((1.0 - h * h) * x) @ g)
        u -= lr * gu
        v -= lr * gv
    return lr * np.arange(n_steps), L
