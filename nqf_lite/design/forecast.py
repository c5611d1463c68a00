"""A(x) as a design tool: forecast how a layer will learn before it is trained.

The paper notes that "A(x) can be evaluated for a proposed layer before that
layer is ever trained" (Sec. 1).  :func:`predict_learning` turns that remark
into a
procedure:

1. get the structure matrices ``A(x_mu)`` of the training inputs: from a torch
   module or a function by autograd (Theorem 1, Eq. 2;
   :func:`nqf_lite.expand_dataset`), from
   a registry model's closed form (``model.twin(xs)``, Table 3), or from an
   :class:`~nqf_lite.NQF` directly;
2. rotate the data matrices ``A(x_mu)`` into one basis of modes -- exactly the
   common eigenbasis when they commute (Assumption 1), otherwise the eigenbasis
   of the label-weighted sum ``Y = (4/m) sum_mu y_mu A(x_mu)`` (Theorem 7)
   refined by Jacobi joint diagonalisation inside its degenerate eigenspaces;
3. read off the Lotka-Volterra growth rates ``r_k`` and competition matrix
   ``C`` (Eqs. 32, 37; :func:`nqf_lite.glv_coefficients`), the switch-on times
   of Eq. 43 (exact half-saturation form of Theorem 6, Eq. 39) from the initial
   abundances ``z_k(0) = p_k^T M(0) p_k`` and the plateau losses.

Whatever the data, the early, exponential phase ``M' ~ Y M + M Y`` of a small
initialisation is governed by the eigenvalues of ``Y``, and ``r_k = 2
gamma_k``; so the rates, and with them the order and time of the first
switch-on, do not need Assumption 1.  Plateau heights and later switch-ons do;
the forecast reports how far the data are from commuting (``commuting_error``)
and how strongly the growing modes compete (``coupling``).  Gradient descent is
stable for the fastest mode when ``lr < 2 / max_k r_k`` (the curvature of the
loss at a saturated mode is ``r_k``) and decaying modes stay small when ``lr <
4 / max_k |r_k|``; the forecast warns otherwise.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.optimize import nnls

from nqf_lite._checks import as_array, positive
from nqf_lite.expansion.autograd import expand_dataset
from nqf_lite.expansion.form import NQF
from nqf_lite.dynamics.solvable import glv_coefficients, switch_on_time_exact

__all__ = ["LearningForecast", "predict_learning", "stable_lr"]

#: ``commuting_error`` above which the forecast warns that Assumption 1 fails.
COMMUTE_WARN = 1e-6
#: ``z_k(0)/z_k^inf`` from which a start counts as not small (warned about):
#: the switch-on of Eq. 43 is a sudden drop only when ``z_k(0) << z_k^inf``.
SMALL_START = 0.1
#: Relative gap under which two eigenvalues of ``Y`` count as one degenerate
#: eigenspace.
DEGENERATE_RTOL = 1e-9
#: Growth rates ``r_k`` (and ``C_kk``) below this fraction of the largest count
#: as zero: such a mode never switches on (its rate is round-off, e.g. a
#: direction no structure matrix touches).
RATE_RTOL = 1e-10


@dataclass(frozen=True)
class LearningForecast:
    """What gradient descent on a small-initialised layer will do (Sec. 5-6).

    Attributes
    ----------
    modes : ndarray, shape (p, p)
        Orthonormal modes ``p_k`` (columns), ordered by decreasing growth rate.
    rates : ndarray, shape (p,)
        GLV growth rates ``r_k = (8/m) sum_{mu,o} lambda_{mu o,k} y_{mu o}``
        (Eq. 37; the sum runs over the ``m`` inputs and every output ``o``, the
        loss convention of Eq. 26 and
        :meth:`nqf_lite.expansion.form.NQF.train`), decreasing.
    competition : ndarray, shape (p, p)
        ``C_kj = (8/m) sum_{mu,o} lambda_{mu o,k} lambda_{mu o,j}`` (Eq. 32).
    eps : float or None
        The uniform initial abundance ``z_k(0) = eps`` when one number was
        given; ``None`` when the initial condition was per mode or ``W0`` (see
        ``z0``).
    z0 : ndarray, shape (p,)
        Initial abundance ``z_k(0) = p_k^T M(0) p_k`` of every mode (units of
        ``M = W W^T``).
    lr : float
        Learning rate of full-batch GD; gradient-flow time is ``t = lr *
        step``.
    lr_max : float
        The stable range of GD: ``lr < lr_max = min(2/max r_k, 4/max|r_k|)``
        (:func:`stable_lr`).
    switches_on : ndarray of bool, shape (p,)
        Modes that switch on: growing (``r_k > 0`` and ``C_kk > 0``, both above
        ``RATE_RTOL`` times the largest, not round-off) and present at the
        start (``z_k(0) > 0``).  The others never switch on: their entries of
        ``switch_on_times`` and ``switch_on_steps`` are ``inf`` and ``order``
        leaves them out.
    switch_on_times : ndarray, shape (p,)
        Gradient-flow time at which ``z_k`` reaches half of ``r_k/C_kk`` (Eqs.
        39, 43); 0 for a mode that starts above it; ``inf`` where
        ``switches_on`` is False.
    switch_on_steps : ndarray, shape (p,)
        The same in GD steps at ``lr`` (growth factor ``(1 + lr r_k/2)^2`` per
        step).
    order : ndarray of int
        Indices of the modes that switch on, in the order they do.
    plateaus : ndarray, shape (len(order) + 1,)
        Training loss before the first switch-on and after each one: the
        minimum of the loss over ``z >= 0`` on the modes switched on so far (a
        GLV fixed point, Eq. 32); for orthogonal features ``mean(y^2)`` minus
        the drops ``V_k = r_k^2/(8 C_kk)`` (Theorem 6, App. A.17).
    commuting_error : float
        ``sqrt(sum_mu ||offdiag(P^T A_mu P)||_F^2 / sum_mu ||A_mu||_F^2)``: 0
        when the data matrices commute (Assumption 1), up to 1 when no basis
        helps.
    coupling : float
        Largest normalised competition ``|C_kj|/sqrt(C_kk C_jj)`` between two
        growing modes; 0 for orthogonal features (Theorem 6), where the
        plateaus are exact.
    zgz : bool
        Whether the layer has zero gradient at zero (Property 1); if not, ``g``
        and ``B`` are ignored by the forecast.
    f0 : ndarray, shape (n,)
        Layer output at ``W = 0`` per (sample, output), subtracted from the
        labels.
    """

    modes: np.ndarray
    rates: np.ndarray
    competition: np.ndarray
    eps: float | None
    z0: np.ndarray
    lr: float
    lr_max: float
    switches_on: np.ndarray
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
        """True when the data matrices commute to ``COMMUTE_WARN`` (Assumption
        1)."""
        return self.commuting_error <= COMMUTE_WARN

    @property
    def saturation(self) -> np.ndarray:
        """``z_k^inf = r_k / C_kk`` of every growing mode (``nan`` for the
        others, see ``RATE_RTOL``)."""
        c = np.diag(self.competition)
        grow = _growing(self.rates, c)
        return np.where(grow, self.rates / np.where(grow, c, 1.0), np.nan)

    def abundances(self, W: Any) -> np.ndarray:
        """Mode abundances ``z_k = p_k^T W W^T p_k`` of weights ``W`` (p, d) or
        (T, p, d).

        Use it on the weights of the real layer during training to compare with
        the forecast.
        """
        W = as_array("W", W, ndim=(2, 3))
        p = self.modes.shape[0]
        if W.shape[-2] != p:
            raise ValueError(
                f"W must have shape (p={p}, d) or (T, p, d), got {W.shape}"
            )
        proj = np.swapaxes(self.modes, 0, 1) @ W
        return (proj**2).sum(axis=-1)

    def staircase(
        self, t_max: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The predicted loss staircase in GD steps: ``(steps, loss)`` for a
        step plot.

        Parameters
        ----------
        t_max : float > 0, optional
            Last step to show; defaults to 1.5 times the last switch-on.
        """
        s = self.switch_on_steps[self.order]
        end = 1.5 * float(s[-1]) if s.size else 1.0
        if t_max is not None:
            end = positive("t_max", t_max)
        steps = np.concatenate([[0.0], s, [end]])
        loss = np.concatenate([self.plateaus, [self.plateaus[-1]]])
        return steps, loss

    def plot(
        self, ax: Any = None, t_max: float | None = None, **kwargs: Any
    ) -> Any:
        """Draw the predicted staircase (black dashed) on ``ax`` and return
        ``ax``.

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

    def __str__(self) -> str:
        head = (
            f"LearningForecast: {int(self.switches_on.sum())} of "
            f"{self.rates.size} modes switch on; "
            f"lr = {self.lr:.3g} (stable below {self.lr_max:.3g}); "
            f"commuting error {self.commuting_error:.2g}, "
            f"coupling {self.coupling:.2g}"
        )
        rows = [
            "  mode      rate r_k     z_k(0)   switch-on step   loss after"
        ]
        for j, k in enumerate(self.order):
            rows.append(
                f"  {k:4d}  {self.rates[k]:10.4g}  {self.z0[k]:9.3g}  "
                f"{self.switch_on_steps[k]:15.4g}  "
                f"{self.plateaus[j + 1]:11.4g}"
            )
        never = np.flatnonzero(~self.switches_on)
        if never.size:
            rows.append(
                "  never switch on (r_k <= 0 up to round-off, or z_k(0) = "
                f"0): modes {never.tolist()}"
            )
        return "\n".join(
            [head, f"  loss at the start {self.plateaus[0]:.4g}"] + rows
        )


# -----------------------------------------------------------------------------
# helpers
def stable_lr(rates: Any) -> float:
    """The stable range of full-batch GD for the modes of a forecast: ``lr <
    stable_lr(rates)``.

    A growing mode saturates where the loss has curvature ``r_k`` along it (for
    ``M = z p pᵀ`` the loss is ``(1/m) sum (lambda z - t)^2`` and its second
    derivative in ``w = sqrt(z)`` at ``z = r_k/C_kk`` is ``z C_kk = r_k``), so
    GD converges there for ``lr r_k < 2``.  A decaying mode (``r_k < 0``)
    starts as ``w -> (1 + lr r_k/2) w`` and stays small for ``lr |r_k| < 4``.

    Parameters
    ----------
    rates : array_like, shape (p,)
        Growth rates ``r_k`` (Eq. 37).

    Returns
    -------
    float
        ``min(2 / max_k r_k, 4 / max_k (-r_k))`` over the modes where each
        applies (``inf`` when every rate is zero).
    """
    r = as_array("rates", rates, ndim=1)
    if r.size == 0:
        raise ValueError("rates must hold at least one growth rate")
    bounds = [math.inf]
    if r.max() > 0:
        bounds.append(2.0 / float(r.max()))
    if r.min() < 0:
        bounds.append(4.0 / float(-r.min()))
    return min(bounds)


def _growing(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Modes with ``r_k > 0`` and ``C_kk > 0``, both above round-off
    (``RATE_RTOL`` times the largest)."""
    return (r > RATE_RTOL * np.abs(r).max(initial=0.0)) & (
        c > RATE_RTOL * c.max(initial=0.0)
    )


def _labels(y: object, lead: tuple[int, ...]) -> np.ndarray:
    if y is None:
        raise TypeError("y (the labels, one per input and output) is required")
    arr = as_array("y", y)
    if arr.shape != lead:
        raise ValueError(
            f"y must have shape {lead} (one label per "
            f"input{' and output' if len(lead) > 1 else ''}), "
            f"got {arr.shape}"
        )
    return arr


def _inputs(xs: object) -> Sequence[Any]:
    if (
        isinstance(xs, (str, bytes))
        or not hasattr(xs, "__len__")
        or not hasattr(xs, "__getitem__")
    ):
        raise TypeError(
            f"xs must be a sequence of inputs, got {type(xs).__name__}"
        )
    if len(xs) == 0:
        raise ValueError(
            "xs must hold at least one input, got an empty sequence"
        )
    return xs


def _structure_matrices(f: Any, xs: Any, p: Any, d: Any, units: Any) -> NQF:
    """The NQF of the training inputs: given, from a registry model's closed
    form, or by autograd."""
    if isinstance(f, NQF):
        for name, value in (("xs", xs), ("p", p), ("d", d), ("units", units)):
            if value is not None:
                raise ValueError(
                    f"{name} must be left out when f is an NQF: it already "
                    "holds the data"
                )
        return f
    from nqf_lite.expansion.models.base import (
        Model,
    )  # lazy: the registry sits above this module

    if isinstance(f, Model):
        for name, value in (("d", d), ("units", units)):
            if value is not None:
                raise ValueError(
                    f"{name} must be left out for a registry model, which "
                    "has its own layout"
                )
        if p is not None and p != f.p:
            raise ValueError(
                f"p = {p!r} does not match the model {f.name!r}, which has "
                f"p = {f.p}"
            )
        nqf = f.twin(list(_inputs(xs)))
        if not isinstance(nqf, NQF):
            raise TypeError(
                "the model's twin(xs) must return an NQF, got "
                f"{type(nqf).__name__}"
            )
        return nqf
    return expand_dataset(f, _inputs(xs), p, d, units=units)


def _width(f: Any, W0: Any, d: Any, units: Any) -> tuple[int | None, str]:
    """The layer's width ``d`` when it is known: from ``W0``, a module's units
    or ``d``."""
    if W0 is not None:
        shape = np.shape(W0)
        if len(shape) == 2 and shape[1] >= 1:
            return int(shape[1]), "the columns of W0"
    if isinstance(f, NQF):
        return None, ""
    try:
        import torch.nn as nn

        from nqf_lite.expansion.autograd import ModuleUnits

        if isinstance(f, ModuleUnits):
            return f.d, "the module's units"
        if isinstance(f, nn.Module):
            return ModuleUnits(f, units, d).d, "the module's units"
    except (TypeError, ValueError):
        return None, ""
    from nqf_lite.expansion.models.base import (
        Model,
    )  # lazy: the registry sits above this module

    if d is not None and not isinstance(f, Model):
        return int(d), "d"
    return None, ""


def _imbalance(f: Any, W0: Any, units: Any, d: Any) -> float | None:
    """``max_i | |w_in,i|^2 - |w_out,i|^2 |`` of ``W0`` for a module whose
    units span two layers."""
    if W0 is None:
        return None
    try:
        import torch.nn as nn

        from nqf_lite.expansion.autograd import ModuleUnits

        if isinstance(f, nn.Module):
            f = ModuleUnits(f, units, d)
        if not isinstance(f, ModuleUnits):
            return None
    except (TypeError, ValueError):
        return None
    layers: dict[str, list[slice]] = {}
    for name, sl in f.slices().items():
        layers.setdefault(name.rsplit(".", 1)[0], []).append(sl)
    if len(layers) != 2:
        return None
    W = np.asarray(W0, dtype=np.float64)
    first, last = (
        np.concatenate([np.arange(s.start, s.stop) for s in sls])
        for sls in layers.values()
    )
    return float(
        np.max(
            np.abs((W[first] ** 2).sum(axis=0) - (W[last] ** 2).sum(axis=0))
        )
    )


def _initial_abundances(
    eps: Any, W0: Any, P: np.ndarray
) -> tuple[float | None, np.ndarray, str]:
    """``(eps or None, z0, what)``: the initial abundance of every mode and the
    argument it came from."""
    pp = P.shape[0]
    if (eps is None) == (W0 is None):
        raise TypeError(
            "give the initial condition once: eps (one number, or one per "
            "mode) or W0 (the initial weights, (p, d))"
        )
    if W0 is not None:
        W0 = as_array("W0", W0, ndim=2)
        if W0.shape[0] != pp or W0.shape[1] == 0:
            raise ValueError(
                f"W0 must have shape (p={pp}, d) with d >= 1 (neurons as "
                f"columns), got {W0.shape}"
            )
        return None, ((P.T @ W0) ** 2).sum(axis=1), "W0"
    if np.ndim(eps) == 0:
        value = positive("eps", eps)
        return value, np.full(pp, value), "eps"
    z0 = as_array("eps", eps, ndim=1)
    if z0.shape != (pp,):
        raise ValueError(
            f"eps must be one number or one value per mode, shape ({pp},), "
            f"got {z0.shape}"
        )
    if np.any(z0 < 0):
        raise ValueError(
            "eps must be >= 0 for every mode (an abundance p_k^T M p_k), "
            f"got min {z0.min():.3g}"
        )
    return None, z0, "eps"


def _jacobi_rotate(A: np.ndarray, P: np.ndarray, i: int, j: int) -> None:
    """In place: the Givens rotation of columns i, j that best diagonalises all
    A_mu jointly.

    Cardoso and Souloumiac's closed form for real symmetric matrices: with
    ``h_mu = (A_ii - A_jj, 2 A_ij)`` the optimal ``(cos 2t, sin 2t)`` is the
    leading eigenvector of ``sum_mu h_mu h_mu^T``.
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


def _joint_basis(
    A: np.ndarray | None, Y: np.ndarray, sweeps: int = 30
) -> np.ndarray:
    """Eigenbasis of ``Y`` (decreasing), Jacobi-refined inside degenerate
    eigenspaces (when ``A`` is given)."""
    gam, P = np.linalg.eigh(Y)
    P = P[:, ::-1].copy()
    gam = gam[::-1]
    if A is None:
        return P
    scale = max(
        float(np.abs(gam).max(initial=0.0)),
        float(np.abs(A).max(initial=0.0)),
        1e-300,
    )
    At = np.einsum("ki,nkl,lj->nij", P, A, P)
    p = P.shape[0]
    pairs = [
        (i, j)
        for i in range(p)
        for j in range(i + 1, p)
        if abs(gam[i] - gam[j]) <= DEGENERATE_RTOL * scale
    ]
    for _ in range(sweeps if pairs else 0):
        before = float(
            np.sum(At[:, [i for i, _ in pairs], [j for _, j in pairs]] ** 2)
        )
        if before <= (1e-15 * scale) ** 2:
            break
        for i, j in pairs:
            _jacobi_rotate(At, P, i, j)
    return P


def _plateaus(
    lam: np.ndarray, target: np.ndarray, order: np.ndarray, m: int
) -> np.ndarray:
    """Loss at the GLV saddle reached after each switch-on (Eq. 32 fixed
    points).

    After the modes ``S = order[:j]`` have switched on, ``z`` sits at the
    minimum of the loss of ``M = P diag(z) P^T``, ``(1/m) ||lam[:, S] z_S -
    target||^2`` over ``z_S >= 0`` (a non-negative least-squares problem; a
    stable fixed point of the GLV equation), with the loss of Eq. 26 (summed
    over the outputs, averaged over the ``m`` inputs). For a diagonal ``C``
    this is ``sum(target^2)/m - sum_{k in S} r_k^2/(8 C_kk)``.
    """
    out = [float(np.sum(target**2)) / m]
    for j in range(1, order.size + 1):
        _, res = nnls(lam[:, order[:j]], target)
        out.append(res**2 / m)
    return np.array(out)


def _plateaus_gram(
    G: np.ndarray, b: np.ndarray, tt: float, order: np.ndarray, m: int
) -> np.ndarray:
    """:func:`_plateaus` from ``G = lamᵀ lam``, ``b = lamᵀ target`` and ``tt =
    |target|^2`` alone.

    ``||lam_S z - t||^2 = zᵀ G_S z - 2 b_Sᵀ z + tt``; with ``G_S = U S Uᵀ``
    this is ``||S^(1/2) Uᵀ z - S^(-1/2) Uᵀ b_S||^2 + tt - b_Sᵀ G_S^+ b_S``
    (``b_S`` lies in the range of ``G_S``), a non-negative least-squares
    problem of the size of ``S``.
    """
    out = [tt / m]
    for j in range(1, order.size + 1):
        S = order[:j]
        w, U = np.linalg.eigh(G[np.ix_(S, S)])
        keep = w > 1e-12 * max(float(w.max()), 1e-300)
        root = np.sqrt(w[keep])
        Ub = U[:, keep].T @ b[S]
        _, res = nnls(root[:, None] * U[:, keep].T, Ub / root)
        out.append(max(res**2 + tt - float(Ub @ (Ub / w[keep])), 0.0) / m)
    return np.array(out)


# -----------------------------------------------------------------------------
# forecast
def predict_learning(
    f: Any,
    xs: Sequence[Any] | None = None,
    y: object = None,
    p: int | None = None,
    *,
    d: int | None = None,
    eps: Any = None,
    lr: float,
    W0: Any = None,
    units: Sequence[Any] | None = None,
    warn: bool = True,
) -> LearningForecast:
    """Forecast the learning order, switch-on times and plateaus of a layer
    before training.

    The structure matrices of the training inputs are rotated into a common
    basis of modes (Assumption 1, or its best approximation), and the GLV
    coefficients (Eqs. 32, 37) give, for initial abundances ``z_k(0)`` and
    full-batch GD at learning rate ``lr`` on the loss of Eq. 26, ``L = (1/m)
    sum_mu sum_o (f_{mu o} - y_{mu o})^2``: summed over the ``V`` outputs and
    averaged over the ``m`` inputs, the convention of
    :meth:`nqf_lite.expansion.form.NQF.train` and
    :meth:`nqf_lite.expansion.form.NQF.loss` (so the same ``lr`` gives the
    same steps in both; with ``V`` outputs a mean over outputs would be ``V``
    times slower):

    - the switch-on time of mode ``k``, where ``z_k`` reaches half of
      ``r_k/C_kk``, ``t*_k = (1/r_k) ln[(r_k/C_kk - z_k(0))/z_k(0)]`` (Theorem
      6, Eq. 39; its leading order is Eq. 43, ``ln(1/eps)/r_k``), and the same
      in GD steps;
    - the loss plateaus ``sum(y^2)/m - sum V_k`` with ``V_k = r_k^2/(8 C_kk)``
      (orthogonal features; for competing modes the loss at the GLV fixed
      point).

    The switch-on times are exact for orthogonal features (``coupling = 0``)
    and commuting data; with competing modes they are the times of isolated
    modes, and with non-commuting data (``commuting_error > 0``) only the first
    one is reliable.

    Parameters
    ----------
    f : NQF, registry model, torch.nn.Module or callable
        What to forecast:

        - an :class:`~nqf_lite.NQF`: its ``A`` (and ``f0``) directly; leave
          ``xs`` out;
        - a registry model (an instance of
          :class:`nqf_lite.expansion.models.base.Model`,
          e.g. ``nqf_lite.expansion.models.MODELS["phase_retrieval"]``): its
          closed-form ``structure(x)`` through ``model.twin(xs)``, no autograd;
        - a ``torch.nn.Module``: expanded in its units by autograd (``units``,
          ``d`` as in :func:`nqf_lite.expand`);
        - a function ``f(W, x)`` in the :func:`nqf_lite.expand` convention
          (``W`` of shape ``(p, d)``, one neuron per column), expanded at width
          ``d`` (default 2).
    xs : sequence of length m
        Training inputs (not for an NQF).
    y : array_like, shape (m,) or (m, V)
        Labels (``(m, V)`` for a layer with ``V`` outputs; the loss sums over
        outputs, Eq. 26).
    p : int, optional
        Parameters per neuron: required for a function, checked when given
        otherwise.
    d : int, optional
        For a function, the width at which it is expanded (the forecast does
        not depend on it for a ZGZ layer, Theorem 2); for a module, its number
        of units.
    eps : float or array_like, shape (p,)
        Initial abundance ``z_k(0) = p_k^T M(0) p_k``: one number for every
        mode, or one value ``>= 0`` per mode in the order of the returned
        ``modes`` (decreasing rate). For i.i.d. ``N(0, sigma^2)`` weights and
        width ``d``, ``eps ~ d sigma^2``.
    lr : float
        Learning rate of full-batch GD.  A ``UserWarning`` naming ``lr`` and
        the stable bound (:func:`stable_lr`) is issued when ``lr`` is outside
        the stable range of GD for the fastest mode; the step counts assume it
        is inside.
    W0 : array_like, shape (p, d), optional
        The initial weights (neurons as columns), instead of ``eps``:
        ``z_k(0) = p_k^T W0 W0^T p_k``.  For a module,
        ``nqf_lite.module_units(module).weights()``.
    units : sequence, optional
        For a torch module: which parameters form one unit (see
        :func:`nqf_lite.expand`).
    warn : bool, default True
        Warn when the data matrices do not commute or the layer is not ZGZ.
        (The warnings about ``lr``, about growing modes that never switch on,
        about a width below the modes that would switch on, and about a start
        that is not small or not balanced are always issued.)

    Returns
    -------
    LearningForecast
        ``switches_on`` marks the modes that switch on; the others (``r_k <=
        0`` or ``z_k(0) = 0``) have infinite times and are left out of
        ``order``.

    Notes
    -----
    *Width.*  ``M = W W^T`` has rank at most the width ``d`` (the columns of
    ``W0``, a module's units, or ``d`` for a function).  When the data matrices
    commute the width drops out (Theorem 6: every ``z_k`` follows its own
    logistic, Eq. 39, whatever ``d``).  When they do not, each mode that
    switches on is an eigen-direction of ``M``, and the rank of ``M(t)`` stays
    that of ``M(0)`` (Theorem 7, Eq. 41), so only the first ``d`` modes in
    order switch on: the forecast keeps those and warns.

    *Start.*  A ``UserWarning`` names ``z_k(0)/z_k^inf`` when a mode that
    switches on starts at or above ``SMALL_START`` of its saturation (not
    small), and, for a module whose units span two layers, ``max_i | |w_in,i|^2
    - |w_out,i|^2 |`` of ``W0`` when it is at or above ``SMALL_START`` times
    the largest saturation (not balanced: gradient flow conserves it, so the
    weights never become small).

    Raises
    ------
    TypeError
        If ``f`` is none of the above, a number or array has the wrong type
        (complex values included), or neither or both of ``eps`` and ``W0`` are
        given.
    ValueError
        If ``xs`` is empty, ``y`` has the wrong shape or is not finite, ``eps``
        or ``lr`` is not positive, ``W0`` has the wrong shape, every mode
        starts above half of its saturation ``r_k/C_kk``, no mode grows, or no
        growing mode starts with ``z_k(0) > 0``.
    nqf_lite.NotSymmetricError, nqf_lite.NotSmoothError
        From :func:`nqf_lite.expand` when ``f`` is not permutation symmetric or
        not differentiable at ``W = 0`` (ReLU).
    """
    lr = positive("lr", lr)
    if not (isinstance(f, NQF) or callable(f) or hasattr(f, "twin")):
        raise TypeError(
            "f must be callable as f(W, x), a torch module, a registry "
            f"model or an NQF, got {type(f).__name__}"
        )
    nqf = _structure_matrices(f, xs, p, d, units)
    lead = nqf._lead
    labels = _labels(y, lead)
    m = int(lead[0])
    n, pp = int(np.prod(lead)), nqf.p
    f0 = np.broadcast_to(np.asarray(nqf.f0, dtype=np.float64), lead).reshape(n)
    target = labels.reshape(n) - f0
    zgz = bool(nqf.zgz)
    width_d, width_from = _width(f, W0, d, units)

    factored = getattr(nqf, "factored", False)
    # Eq. 26: the loss sums over outputs and averages over the m inputs, so
    # every sum over the n = m V (input, output) pairs is divided by m, as in
    # NQF.train
    if (
        factored
    ):  # never a p x p matrix per input: Gram matrices of the factors
        Y = nqf._weighted_sum((4.0 / m) * target.reshape(lead))
        P = _joint_basis(None, Y)
        lam = None
        gram = nqf._gram_of_diagonals(P)  # sum_n lam_nk lam_nj
        lam_t = (m / 4.0) * np.sum(
            P * (Y @ P), axis=0
        )  # sum_n lam_nk t_n = (m/4) p_k^T Y p_k
        total = nqf._frobenius2()
    else:
        A = nqf.A.reshape(n, pp, pp)
        Y = (4.0 / m) * np.einsum("n,nij->ij", target, A)
        P = _joint_basis(A, Y)
        At = np.einsum("ki,nkl,lj->nij", P, A, P)
        lam = np.einsum("nkk->nk", At)
        total = float(np.sum(A**2))
    eps, z0, source = _initial_abundances(eps, W0, P)
    if factored:
        off = total - float(np.trace(gram))
    else:
        off = float(np.sum((At - lam[:, :, None] * np.eye(pp)) ** 2))
    commuting_error = math.sqrt(max(off, 0.0) / total) if total > 0 else 0.0

    if factored:
        r, C = (8.0 / m) * lam_t, (8.0 / m) * gram
    else:
        r, C = glv_coefficients(lam, target)
        r, C = (
            r * (n / m),
            C * (n / m),
        )  # glv_coefficients divides by its n rows
    c = np.diag(C).copy()
    grow = _growing(r, c)
    if not np.any(grow):
        raise ValueError(
            "no mode has a positive growth rate r_k: the layer cannot fit y "
            "from a small init"
        )
    on = grow & (z0 > 0)
    if not np.any(on):
        raise ValueError(
            f"no growing mode starts with z_k(0) > 0: {source} is "
            "orthogonal to every growing mode, "
            "so gradient descent learns nothing"
        )
    zinf_all = np.where(grow, r / np.where(grow, c, 1.0), np.inf)
    zinf = zinf_all[on]
    imbalance = _imbalance(f, W0, units, d)
    unbalanced = ""
    if imbalance is not None and imbalance > SMALL_START * float(np.max(zinf)):
        unbalanced = (
            "the start is not balanced: max_i | |w_in,i|^2 - |w_out,i|^2 | "
            f"= {imbalance:.3g} over the units of W0 "
            "(first layer against last) is not small against the "
            f"saturation max z_k^inf = {np.max(zinf):.3g}; "
            "this difference is conserved by gradient flow, so the layer "
            "never passes through the small-weight "
            "regime the forecast describes; start from small, balanced weights"
        )
    if np.all(z0[on] >= 0.5 * zinf):
        start = (
            f"eps = {eps:.3g} is"
            if eps is not None
            else f"the initial abundances z_k(0) from {source} are"
        )
        raise ValueError(
            f"{start} not small: every mode starts above half of its "
            "saturation "
            f"r_k/C_kk (max {np.max(zinf):.3g}); start from smaller weights"
            + (f". Also, {unbalanced}" if unbalanced else "")
        )
    t_flow = np.full(pp, np.inf)
    t_flow[on] = switch_on_time_exact(r[on], c[on], z0[on])
    order = np.flatnonzero(on)[np.argsort(t_flow[on], kind="stable")]
    capped = np.array([], dtype=int)
    if (
        width_d is not None
        and commuting_error > COMMUTE_WARN
        and order.size > width_d
    ):
        # M(t) = W W^T keeps rank <= d; without a common eigenbasis each mode
        # that switches on is an eigen-direction of M (Theorem 7, Eq. 41: rank
        # M(t) = rank M(0)), so only the first d modes in order can switch on
        capped = order[width_d:]
        order = order[:width_d]
        on[capped] = False
        t_flow[capped] = np.inf
    # GD: a small z_k grows by (1 + lr r_k/2)^2 per step; keep the saturation
    # r_k/C_kk
    r_gd = (2.0 / lr) * np.log1p(lr * r[on] / 2.0)
    t_gd = np.full(pp, np.inf)
    t_gd[on] = switch_on_time_exact(r_gd, c[on] * r_gd / r[on], z0[on]) / lr
    if factored:
        plateaus = _plateaus_gram(
            gram, lam_t, float(target @ target), order, m
        )
    else:
        plateaus = _plateaus(lam, target, order, m)
    sub = C[np.ix_(order, order)]
    norm = np.sqrt(np.outer(np.diag(sub), np.diag(sub)))
    coupling = float(
        np.max(np.abs(sub - np.diag(np.diag(sub))) / norm, initial=0.0)
    )
    lr_max = stable_lr(r)

    if capped.size:
        warnings.warn(
            f"the width d = {width_d} ({width_from}) is below the "
            f"{order.size + capped.size} modes that would "
            "switch on, and the data matrices do not commute "
            f"(commuting_error = {commuting_error:.3g}): "
            f"M = W W^T has rank <= d, so only the first {width_d} switch "
            f"on; modes {capped.tolist()} are left "
            "out (switches_on False, infinite times) and the plateaus stop "
            "after the first d",
            UserWarning,
            stacklevel=2,
        )
    big = order[z0[order] >= SMALL_START * zinf_all[order]]
    if big.size:
        ratio = z0[big] / zinf_all[big]
        warnings.warn(
            "the start is not small: z_k(0)/z_k^inf = "
            f"{np.array2string(ratio, precision=3)} for mode(s) "
            f"{big.tolist()} (at least {SMALL_START:g}; z_k^inf = r_k/C_kk "
            "is the saturation); the forecast "
            "assumes z_k(0) << z_k^inf (Eq. 43), so these modes do not "
            "switch on suddenly and their switch-on "
            "steps (possibly 0) are not a plateau's end; start from smaller "
            "weights",
            UserWarning,
            stacklevel=2,
        )
    if unbalanced:
        warnings.warn(unbalanced, UserWarning, stacklevel=2)
    if lr >= lr_max:
        warnings.warn(
            f"lr = {lr:.4g} is outside the stable range of gradient "
            f"descent: lr must be below {lr_max:.4g} "
            f"(2/r_max = {2 / r.max():.4g} for the fastest mode, r_max = "
            f"{r.max():.4g}"
            + (
                f"; 4/|r_min| = {4 / -r.min():.4g} for the fastest decaying "
                "one"
                if r.min() < 0
                else ""
            )
            + "); the forecast's step counts assume stable GD",
            UserWarning,
            stacklevel=2,
        )
    silent = np.flatnonzero(grow & (z0 <= 0))
    if silent.size:
        warnings.warn(
            f"{silent.size} growing mode(s) {silent.tolist()} start at "
            f"z_k(0) = 0 ({source}) and never switch on: "
            "their switch-on times are inf, switches_on is False and order "
            "leaves them out",
            UserWarning,
            stacklevel=2,
        )
    if warn and commuting_error > COMMUTE_WARN:
        warnings.warn(
            "the data matrices A(x_mu) do not commute (commuting_error = "
            f"{commuting_error:.3g}); "
            "rates and the first switch-on are still the early-time "
            "prediction, but plateaus and "
            "later switch-ons assume Assumption 1",
            stacklevel=2,
        )
    if warn and not zgz:
        warnings.warn(
            "the layer is not ZGZ (g or B nonzero at W = 0); the forecast "
            "ignores g and B",
            stacklevel=2,
        )
    return LearningForecast(
        modes=P,
        rates=r,
        competition=C,
        eps=eps,
        z0=z0,
        lr=lr,
        lr_max=lr_max,
        switches_on=on,
        switch_on_times=t_flow,
        switch_on_steps=t_gd,
        order=order,
        plateaus=plateaus,
        commuting_error=commuting_error,
        coupling=coupling,
        zgz=zgz,
        f0=f0,
    )
