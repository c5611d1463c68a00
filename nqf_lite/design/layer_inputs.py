"""What a forecast reads from a layer: its structure matrices, labels, width
and initial abundances (paper Theorem 1, Eq. 2, Table 3).

:func:`structure_matrices` gives the NQF of the training inputs (given, from a
registry model's closed form ``model.twin(xs)``, or by autograd through
:func:`nqf_lite.expand_dataset`); :func:`labels`, :func:`layer_width`,
:func:`unit_imbalance` and :func:`initial_abundances` check and read the rest
of :func:`~nqf_lite.design.forecast.predict_learning`'s arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nqf_lite._checks import as_array, positive
from nqf_lite.expansion.autograd import expand_dataset
from nqf_lite.expansion.form import NQF

__all__ = [
    "initial_abundances",
    "labels",
    "layer_width",
    "structure_matrices",
    "unit_imbalance",
]


def labels(y: object, lead: tuple[int, ...]) -> np.ndarray:
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


def structure_matrices(f: Any, xs: Any, p: Any, d: Any, units: Any) -> NQF:
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


def layer_width(f: Any, W0: Any, d: Any, units: Any) -> tuple[int | None, str]:
    """The layer's width ``d`` when it is known: from ``W0``, a module's units
    or ``d``."""
    if W0 is not None:
        shape = np.shape(W0)
        if len(shape) == 2 and shape[1] >= 1:
            return int(shape[1]), "the columns of W0"
    if isinstance(f, NQF):
        return None, ""
    try:
        from torch import nn

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


def unit_imbalance(f: Any, W0: Any, units: Any, d: Any) -> float | None:
    """``max_i | |w_in,i|^2 - |w_out,i|^2 |`` of ``W0`` for a module whose
    units span two layers."""
    if W0 is None:
        return None
    try:
        from torch import nn

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


def initial_abundances(
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
