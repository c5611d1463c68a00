"""The warnings of a forecast: when its assumptions fail (paper Assumption 1,
Eq. 43, Theorem 7).

:func:`warn_forecast` tells the user, with numbers, when the width caps the
modes that switch on, the start is not small or not balanced, ``lr`` is
outside the stable range of gradient descent, growing modes never switch on,
the data matrices do not commute, or the layer is not ZGZ.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [
    "COMMUTE_WARN",
    "SMALL_START",
    "imbalance_message",
    "warn_forecast",
]

#: ``commuting_error`` above which the forecast warns that Assumption 1 fails.
COMMUTE_WARN = 1e-6


#: ``z_k(0)/z_k^inf`` from which a start counts as not small (warned about):
#: the switch-on of Eq. 43 is a sudden drop only when ``z_k(0) << z_k^inf``.
SMALL_START = 0.1


def imbalance_message(imbalance: float | None, zinf: np.ndarray) -> str:
    """Why a start is not balanced (``""`` when it is): ``max_i | |w_in,i|^2
    - |w_out,i|^2 |`` of the units of ``W0`` against the largest saturation
    ``z_k^inf = r_k/C_kk``, at or above ``SMALL_START`` of it."""
    if imbalance is None or imbalance <= SMALL_START * float(np.max(zinf)):
        return ""
    return (
        "the start is not balanced: max_i | |w_in,i|^2 - |w_out,i|^2 | "
        f"= {imbalance:.3g} over the units of W0 "
        "(first layer against last) is not small against the "
        f"saturation max z_k^inf = {np.max(zinf):.3g}; "
        "this difference is conserved by gradient flow, so the layer "
        "never passes through the small-weight "
        "regime the forecast describes; start from small, balanced weights"
    )


def warn_forecast(
    *,
    width_d: int | None,
    width_from: str,
    order: np.ndarray,
    capped: np.ndarray,
    commuting_error: float,
    z0: np.ndarray,
    zinf_all: np.ndarray,
    unbalanced: str,
    lr: float,
    lr_max: float,
    r: np.ndarray,
    grow: np.ndarray,
    source: str,
    warn: bool,
    zgz: bool,
) -> None:
    """Issue the ``UserWarning`` s of
    :func:`~nqf_lite.design.forecast.predict_learning` (pointing at its
    caller): a width that caps the modes switching on (Theorem 7, Eq. 41), a
    start that is not small (Eq. 43) or not balanced, ``lr`` outside
    :func:`~nqf_lite.design.learning_forecast.stable_lr`, growing modes that
    start at ``z_k(0) = 0``, and, with ``warn``, data matrices that do not
    commute (Assumption 1) or a layer that is not ZGZ."""
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
            stacklevel=3,
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
            stacklevel=3,
        )
    if unbalanced:
        warnings.warn(unbalanced, UserWarning, stacklevel=3)
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
            stacklevel=3,
        )
    silent = np.flatnonzero(grow & (z0 <= 0))
    if silent.size:
        warnings.warn(
            f"{silent.size} growing mode(s) {silent.tolist()} start at "
            f"z_k(0) = 0 ({source}) and never switch on: "
            "their switch-on times are inf, switches_on is False and order "
            "leaves them out",
            UserWarning,
            stacklevel=3,
        )
    if warn and commuting_error > COMMUTE_WARN:
        warnings.warn(
            "the data matrices A(x_mu) do not commute (commuting_error = "
            f"{commuting_error:.3g}); "
            "rates and the first switch-on are still the early-time "
            "prediction, but plateaus and "
            "later switch-ons assume Assumption 1",
            stacklevel=3,
        )
    if warn and not zgz:
        warnings.warn(
            "the layer is not ZGZ (g or B nonzero at W = 0); the forecast "
            "ignores g and B",
            stacklevel=3,
        )
