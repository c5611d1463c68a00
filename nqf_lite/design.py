"""A(x) as a design tool: forecast how a layer will learn before it is trained.

The paper notes that "A(x) can be evaluated for a proposed layer before that layer is
ever trained" (Sec. 1).  :func:`predict_learning` turns that remark into a procedure:

1. expand the layer at every training input (Theorem 1, Eq. 2; :func:`nqf_lite.expand_dataset`);
2. rotate the data matrices ``A(x_mu)`` into one basis of modes -- exactly the common
   eigenbasis when they commute (Assumption 1), otherwise the eigenbasis of the
   label-weighted sum ``Y = (4/m) sum_mu y_mu A(x_mu)`` (Theorem 7) refined by Jacobi
   joint diagonalisation inside its degenerate eigenspaces;
3. read off the Lotka-Volterra growth rates ``r_k`` and competition matrix ``C``
   (Eqs. 32, 37; :func:`nqf_lite.glv_coefficients`), the switch-on times of
   Eq. 43 (exact half-saturation form of Theorem 6, Eq. 39) and the plateau losses.

Whatever the data, the early, exponential phase ``M' ~ Y M + M Y`` of a small
initialisation is governed by the eigenvalues of ``Y``, and ``r_k = 2 gamma_k``; so
the rates, and with them the order and time of the first switch-on, do not need
Assumption 1.  Plateau heights and later switch-ons do; the forecast reports how
far the data are from commuting (``commuting_error``) and how strongly the growing
modes compete (``coupling``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scipy.optimize import nnls

from nqf_lite import expand_dataset, glv_coefficients
from nqf_lite.solvable import switch_on_time_exact

__all__ = ["LearningForecast", "predict_learning"]

#: ``commuting_error`` above which the forecast warns that Assumption 1 fails.
COMMUTE_WARN = 1e-6
#: Relative gap under which two eigenvalues of ``Y`` count as one degenerate eigenspace.
DEGENERATE_RTOL = 1e-9


@dataclass(frozen=True)
class LearningForecast:
    """What gradient descent on a small-initialised layer will do (Sec. 5-6).

    Attributes
    ----------
    modes : ndarray, shape (p, p)
        Orthonormal modes ``p_k`` (columns), ordered by decreasing growth rate.
    rates : ndarray, shape (p,)
        GLV growth rates ``r_k = (8/m) sum_mu lambda_{mu,k} y_mu`` (Eq. 37), decreasing.
    competition : ndarray, shape (p, p)
        ``C_kj = (8/m) sum_mu lambda_{mu,k} lambda_{mu,j}`` (Eq. 32).
    eps : float
        Initial abundance ``z_k(0) = eps`` of every mode (units of ``M = W W^T``).
    lr : float
        Learning rate of full-batch GD; gradient-flow time is ``t = lr * step``.
    switch_on_times : ndarray, shape (p,)
        Gradient-flow time at which ``z_k`` reaches half of ``r_k/C_kk`` (Eqs. 39, 43);
        ``inf`` for modes that never grow.
    switch_on_steps : ndarray, shape (p,)
        The same in GD steps at ``lr`` (growth factor ``(1 + lr r_k/2)^2`` per step).
    order : ndarray of int
        Indices of the growing modes in the order they switch on.
    plateaus : ndarray, shape (len(order) + 1,)
        Training loss before the first switch-on and after each one: the minimum of the
        loss over ``z >= 0`` on the modes switched on so far (a GLV fixed point, Eq. 32);
        for orthogonal features ``mean(y^2)`` minus the drops ``V_k = r_k^2/(8 C_kk)``
        (Theorem 6, App. A.17).
    commuting_error : float
        ``sqrt(sum_mu ||offdiag(P^T A_mu P)||_F^2 / sum_mu ||A_mu||_F^2)``: 0 when the
        data matrices commute (Assumption 1), up to 1 when no basis helps.
    coupling : float
        Largest normalised competition ``|C_kj|/sqrt(C_kk C_jj)`` between two growing
        modes; 0 for orthogonal features (Theorem 6), where the plateaus are exact.
    zgz : bool
        Whether the layer has zero gradient at zero (Property 1); if not, ``g`` and
        ``B`` are ignored by the forecast.
    f0 : ndarray, shape (n,)
        Layer output at ``W = 0`` per (sample, output), subtracted from the labels.
    """

    modes: np.ndarray
    rates: np.ndarray
    competition: np.ndarray
    eps: float
    lr: float
    switch_on_times: np.ndarray
    switch_on_steps: np.ndarray
    order: np.ndarray
    plateaus: np.ndarray
    commuting_error: float
    coupling: float
    zgz: bool
    f0: np.ndarray

    @property
    def commuting(self) -> bool:
        """True when the data matrices commute to ``COMMUTE_WARN`` (Assumption 1)."""
        return self.commuting_error <= COMMUTE_WARN

    def abundances(self, W: Any) -> np.ndarray:
        """Mode abundances ``z_k = p_k^T W W^T p_k`` of weights ``W`` (p, d) or (T, p, d).

        Use it on the weights of the real layer during training to compare with the forecast.
        """
        W = np.asarray(W, dtype=np.float64)
        p = self.modes.shape[0]
        if W.ndim not in (2, 3) or W.shape[-2] != p:
            raise ValueError(f"W must have shape (p={p}, d) or (T, p, d), got {W.shape}")
        proj = np.swapaxes(self.modes, 0, 1) @ W
        return (proj**2).sum(axis=-1)

    def staircase(self, t_max: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The predicted loss staircase in GD steps: ``(steps, loss)`` for a step plot.

        Parameters
        ----------
        t_max : float, optional
            Last step to show; defaults to 1.5 times the last switch-on.
        """
        s = self.switch_on_steps[self.order]
        end = 1.5 * float(s[-1]) if s.size else 1.0
        if t_max is not None:
            end = float(t_max)
        steps = np.concatenate([[0.0], s, [end]])
        loss = np.concatenate([self.plateaus, [self.plateaus[-1]]])
        return steps, loss

    def plot(self, ax: Any = None, t_max: float | None = None, **kwargs: Any) -> Any:
        """Draw the predicted staircase (black dashed) on ``ax`` and return ``ax``.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Created when omitted.
        t_max : float, optional
            Passed to :meth:`staircase`.
        **kwargs
            Passed to ``ax.step`` (default: black dashed, label "forecast").
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(4.5, 3.0))
        steps, loss = self.staircase(t_max)
        kwargs.setdefault("color", "black")
        kwargs.setdefault("ls", "--")
        kwargs.setdefault("label", "forecast")
        ax.step(steps, loss, where="post", **kwargs)
        ax.set(xlabel="GD step", ylabel="training loss")
        return ax


# ----------------------------------------------------------------------------- helpers
def _positive(name: str, value: object) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a positive number, got {value!r}") from exc
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _labels(y: object, lead: tuple[int, ...]) -> np.ndarray:
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y must be a real array, got {type(y).__name__}") from exc
    if arr.shape != lead:
        raise ValueError(f"y must have shape {lead} (one label per input{' and output' if len(lead) > 1 else ''}), "
                         f"got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("y contains NaN or inf")
    return arr


def _jacobi_rotate(A: np.ndarray, P: np.ndarray, i: int, j: int) -> None:
    """In place: the Givens rotation of columns i, j that best diagonalises all A_mu jointly.

    Cardoso and Souloumiac's closed form for real symmetric matrices: with
    ``h_mu = (A_ii - A_jj, 2 A_ij)`` the optimal ``(cos 2t, sin 2t)`` is the leading
    eigenvector of ``sum_mu h_mu h_mu^T``.
    """
    h = np.stack([A[:, i, i] - A[:, j, j], 2.0 * A[:, i, j]], axis=1)
    _, vec = np.linalg.eigh(h.T @ h)
    x, s2 = vec[:, -1]
    if x < 0:
        x, s2 = -x, -s2
    c = math.sqrt((1.0 + x) / 2.0)
    s = s2 / (2.0 * c)
    G = np.array([[c, -s], [s, c]])
    idx = [i, j]
    A[:, :, idx] = A[:, :, idx] @ G
    A[:, idx, :] = np.swapaxes(G, 0, 1) @ A[:, idx, :]
    P[:, idx] = P[:, idx] @ G


def _joint_basis(A: np.ndarray, Y: np.ndarray, sweeps: int = 30) -> np.ndarray:
    """Eigenbasis of ``Y`` (decreasing), Jacobi-refined inside degenerate eigenspaces."""
    gam, P = np.linalg.eigh(Y)
    P = P[:, ::-1].copy()
    gam = gam[::-1]
    scale = max(float(np.abs(gam).max(initial=0.0)), float(np.abs(A).max(initial=0.0)), 1e-300)
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    p = P.shape[0]
    pairs = [(i, j) for i in range(p) for j in range(i + 1, p) if abs(gam[i] - gam[j]) <= DEGENERATE_RTOL * scale]
    for _ in range(sweeps if pairs else 0):
        before = float(np.sum(At[:, [i for i, _ in pairs], [j for _, j in pairs]] ** 2))
        if before <= (1e-15 * scale) ** 2:
            break
        for i, j in pairs:
            _jacobi_rotate(At, P, i, j)
    return P


def _plateaus(lam: np.ndarray, target: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Loss at the GLV saddle reached after each switch-on (Eq. 32 fixed points).

    After the modes ``S = order[:j]`` have switched on, ``z`` sits at the minimum of the
    loss of ``M = P diag(z) P^T``, ``(1/n) ||lam[:, S] z_S - target||^2`` over ``z_S >= 0``
    (a non-negative least-squares problem; a stable fixed point of the GLV equation).
    For a diagonal ``C`` this is ``mean(target^2) - sum_{k in S} r_k^2/(8 C_kk)``.
    """
    n = target.size
    out = [float(np.mean(target**2))]
    for j in range(1, order.size + 1):
        _, res = nnls(lam[:, order[:j]], target)
        out.append(res**2 / n)
    return np.array(out)


# ----------------------------------------------------------------------------- forecast
def predict_learning(
    f: Callable[[Any, Any], Any],
    xs: Sequence[Any],
    y: object,
    p: int,
    *,
    d: int = 2,
    eps: float,
    lr: float,
    warn: bool = True,
) -> LearningForecast:
    """Forecast the learning order, switch-on times and plateaus of a layer before training.

    The layer is expanded at every input (Theorem 1, Eq. 2), the data matrices are
    rotated into a common basis of modes (Assumption 1, or its best approximation),
    and the GLV coefficients (Eqs. 32, 37) give, for an initialisation with
    ``z_k(0) = eps`` and full-batch GD at learning rate ``lr`` on the mean squared
    error ``(1/n) sum (f - y)^2`` over all ``n`` (sample, output) pairs:

    - the switch-on time of mode ``k``, where ``z_k`` reaches half of ``r_k/C_kk``,
      ``t*_k = (1/r_k) ln[(r_k/C_kk - eps)/eps]`` (Theorem 6, Eq. 39; its leading order
      is Eq. 43, ``ln(1/eps)/r_k``), and the same in GD steps;
    - the loss plateaus ``mean(y^2) - sum V_k`` with ``V_k = r_k^2/(8 C_kk)`` (orthogonal
      features; for competing modes the loss at the GLV fixed point).

    The switch-on times are exact for orthogonal features (``coupling = 0``) and
    commuting data; with competing modes they are the times of isolated modes, and with
    non-commuting data (``commuting_error > 0``) only the first one is reliable.

    Parameters
    ----------
    f : callable ``f(W, x) -> torch scalar or (V,) tensor``
        A permutation-symmetric torch layer in the :func:`nqf_lite.expand` convention
        (``W`` of shape ``(p, d)``, one neuron per column).
    xs : sequence of length m
        Training inputs, passed to ``f`` unchanged.
    y : array_like, shape (m,) or (m, V)
        Labels (``(m, V)`` for a layer with ``V`` outputs; each output is a sample).
    p : int
        Parameters per neuron.
    d : int, default 2
        Width at which the layer is expanded (the forecast does not depend on it for a
        ZGZ layer, Theorem 2).
    eps : float
        Initial abundance of each mode, ``z_k(0) = p_k^T M(0) p_k``.  For i.i.d.
        ``N(0, sigma^2)`` weights and width ``d``, ``eps = d sigma^2``.
    lr : float
        Learning rate of full-batch GD (the step count assumes ``lr r_k < 2``, i.e. GD
        that does not oscillate; it is exact in the exponential phase).
    warn : bool, default True
        Warn when the data matrices do not commute or the layer is not ZGZ.

    Returns
    -------
    LearningForecast

    Raises
    ------
    TypeError
        If ``f`` is not callable or a number has the wrong type.
    ValueError
        If ``xs`` is empty, ``y`` has the wrong shape, ``eps`` or ``lr`` is not
        positive, ``eps`` exceeds every saturation value ``r_k/C_kk``, or no mode grows.
    nqf_lite.NotSymmetricError, nqf_lite.NotSmoothError
        From :func:`nqf_lite.expand` when ``f`` is not permutation symmetric or not
        differentiable at ``W = 0`` (ReLU).
    """
    if not callable(f):
        raise TypeError(f"f must be callable as f(W, x), got {type(f).__name__}")
    if isinstance(xs, (str, bytes)) or not hasattr(xs, "__len__"):
        raise TypeError(f"xs must be a sequence of inputs, got {type(xs).__name__}")
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input, got an empty sequence")
    eps = _positive("eps", eps)
    lr = _positive("lr", lr)
    nqf = expand_dataset(f, xs, p, d=d)
    lead = nqf.A.shape[:-2]
    labels = _labels(y, lead)
    n, pp = int(np.prod(lead)), nqf.A.shape[-1]
    A = nqf.A.reshape(n, pp, pp)
    f0 = np.asarray(nqf.f0, dtype=np.float64).reshape(n)
    target = labels.reshape(n) - f0
    zgz = bool(nqf.zgz)

    Y = (4.0 / n) * np.einsum("n,nij->ij", target, A)
    P = _joint_basis(A, Y)
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    lam = np.einsum("nkk->nk", At)
    total = float(np.sum(A**2))
    off = float(np.sum((At - lam[:, :, None] * np.eye(pp)) ** 2))
    commuting_error = math.sqrt(max(off, 0.0) / total) if total > 0 else 0.0

    r, C = glv_coefficients(lam, target)
    c = np.diag(C).copy()
    grow = (r > 0) & (c > 0)
    if not np.any(grow):
        raise ValueError("no mode has a positive growth rate r_k: the layer cannot fit y from a small init")
    if np.all(eps >= 0.5 * r[grow] / c[grow]):
        raise ValueError(f"eps = {eps:.3g} is not small: every mode starts above half of its saturation "
                         f"r_k/C_kk (max {np.max(r[grow] / c[grow]):.3g})")
    t_flow = switch_on_time_exact(r, c, np.full(pp, eps))
    # GD: a small z_k grows by (1 + lr r_k/2)^2 per step; keep the saturation r_k/C_kk
    r_gd = np.where(grow, (2.0 / lr) * np.log1p(lr * np.abs(r) / 2.0), r)
    c_gd = np.where(grow, c * r_gd / np.where(grow, r, 1.0), c)
    t_gd = switch_on_time_exact(r_gd, c_gd, np.full(pp, eps))
    order = np.flatnonzero(grow)[np.argsort(t_flow[grow], kind="stable")]
    plateaus = _plateaus(lam, target, order)
    sub = C[np.ix_(order, order)]
    norm = np.sqrt(np.outer(np.diag(sub), np.diag(sub)))
    coupling = float(np.max(np.abs(sub - np.diag(np.diag(sub))) / norm, initial=0.0))

    if warn and commuting_error > COMMUTE_WARN:
        warnings.warn(
            f"the data matrices A(x_mu) do not commute (commuting_error = {commuting_error:.3g}); "
            "rates and the first switch-on are still the early-time prediction, but plateaus and "
            "later switch-ons assume Assumption 1",
            stacklevel=2,
        )
    if warn and not zgz:
        warnings.warn("the layer is not ZGZ (g or B nonzero at W = 0); the forecast ignores g and B",
                      stacklevel=2)
    return LearningForecast(
        modes=P,
        rates=r,
        competition=C,
        eps=eps,
        lr=lr,
        switch_on_times=t_flow,
        switch_on_steps=t_gd / lr,
        order=order,
        plateaus=plateaus,
        commuting_error=commuting_error,
        coupling=coupling,
        zgz=zgz,
        f0=f0,
    )
