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

from collections.abc import Sequence
from typing import Any

import numpy as np

from nqf_lite._checks import positive
from nqf_lite.design.forecast_warnings import (  # noqa: F401 (re-exported)
    COMMUTE_WARN,
    SMALL_START,
    imbalance_message,
    warn_forecast,
)
from nqf_lite.design.layer_inputs import (
    initial_abundances,
    labels,
    layer_width,
    structure_matrices,
    unit_imbalance,
)
from nqf_lite.design.learning_forecast import LearningForecast, stable_lr
from nqf_lite.design.modes import (  # noqa: F401 (re-exported)
    DEGENERATE_RTOL,
    RATE_RTOL,
    glv_modes,
    growing_modes,
    mode_plateaus,
)
from nqf_lite.dynamics.solvable import switch_on_time_exact
from nqf_lite.expansion.form import NQF

__all__ = ["LearningForecast", "predict_learning", "stable_lr"]


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
    coefficients (Eqs. 32, 37) give, for initial abundances
    ``z_k(0)`` and full-batch GD at learning rate ``lr`` on the loss of Eq. 26,
    ``L = (1/m) sum_mu sum_o (f_{mu o} - y_{mu o})^2``: summed over the
    ``V`` outputs and averaged over the ``m`` inputs, the convention of
    :meth:`nqf_lite.expansion.form.NQF.train` and
    :meth:`nqf_lite.expansion.form.NQF.loss` (so the same
    ``lr`` gives the same steps in both; with ``V`` outputs a mean over outputs
    would be ``V`` times slower):

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
    nqf = structure_matrices(f, xs, p, d, units)
    lead = nqf._lead
    y_arr = labels(y, lead)
    m = int(lead[0])
    n, pp = int(np.prod(lead)), nqf.p
    f0 = np.broadcast_to(np.asarray(nqf.f0, dtype=np.float64), lead).reshape(n)
    target = y_arr.reshape(n) - f0
    zgz = bool(nqf.zgz)
    width_d, width_from = layer_width(f, W0, d, units)
    modes = glv_modes(nqf, target)
    P, r, C = modes.P, modes.r, modes.C
    commuting_error = modes.commuting_error
    eps, z0, source = initial_abundances(eps, W0, P)
    c = np.diag(C).copy()
    grow = growing_modes(r, c)
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
    imbalance = unit_imbalance(f, W0, units, d)
    unbalanced = imbalance_message(imbalance, zinf)
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
    steps_loss = mode_plateaus(modes, target, order, m)
    sub = C[np.ix_(order, order)]
    norm = np.sqrt(np.outer(np.diag(sub), np.diag(sub)))
    coupling = float(
        np.max(np.abs(sub - np.diag(np.diag(sub))) / norm, initial=0.0)
    )
    lr_max = stable_lr(r)

    warn_forecast(
        width_d=width_d,
        width_from=width_from,
        order=order,
        capped=capped,
        commuting_error=commuting_error,
        z0=z0,
        zinf_all=zinf_all,
        unbalanced=unbalanced,
        lr=lr,
        lr_max=lr_max,
        r=r,
        grow=grow,
        source=source,
        warn=warn,
        zgz=zgz,
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
        plateaus=steps_loss,
        commuting_error=commuting_error,
        coupling=coupling,
        zgz=zgz,
        f0=f0,
    )
