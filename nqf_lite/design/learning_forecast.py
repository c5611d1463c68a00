"""The forecast of how a layer will learn, as an object (paper Sec. 5-6,
Eqs. 37, 39, 43).

:class:`LearningForecast` holds the modes, rates, switch-on times and
plateaus that :func:`~nqf_lite.design.forecast.predict_learning` computes,
and draws the predicted loss staircase; :func:`stable_lr` is the stable range
of gradient descent for its modes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nqf_lite._checks import as_array, positive
from nqf_lite.design.forecast_warnings import COMMUTE_WARN
from nqf_lite.design.modes import growing_modes

__all__ = [
    "LearningForecast",
    "stable_lr",
]


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
        Learning rate of full-batch GD; gradient-flow time is
        ``t = lr * step``.
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
        grow = growing_modes(self.rates, c)
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


def stable_lr(rates: Any) -> float:
    """The stable range of full-batch GD for the modes of a forecast:
    ``lr < stable_lr(rates)``.

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
