"""Validators of the theory's objects: GLV systems, NQFs, layers' inputs.

Part of :mod:`nqf_lite._checks`; import from there.
"""

from __future__ import annotations

import numpy as np

from nqf_lite._checks.basic import as_array, check_shape, detached, vector


#: Relative tolerance for "C is diagonal": max |C_kj|, k != j, <= DIAG_RTOL *
#: max |C_kk| (re-exported by :mod:`nqf_lite.dynamics.solvable`).
DIAG_RTOL = 1e-10


def number(name: str, value: object) -> float:
    """A finite real number: a 0-d array or tensor counts; bool, complex, str
    and arrays with axes are refused (``TypeError``), NaN and inf too
    (``ValueError``)."""
    value = detached(name, value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        what = (
            f"an array of shape {value.shape}"
            if isinstance(value, np.ndarray)
            else f"{type(value).__name__} {value!r}"
        )
        raise TypeError(f"{name} must be a real number, got {what}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def sequence(name: str, value: object, what: str = "tensor") -> list:
    """``value`` (a list or tuple, not a string, array or tensor) as a list:
    one ``what`` per layer."""
    from collections.abc import Sequence

    if (
        isinstance(value, (str, bytes, np.ndarray))
        or hasattr(value, "detach")
        or not isinstance(value, Sequence)
    ):
        raise TypeError(
            f"{name} must be a list with one {what} per layer, got "
            f"{type(value).__name__}"
        )
    return list(value)


def unit_interval(name: str, value: object) -> float:
    """A coefficient in [0, 1) (a momentum, Adam's betas)."""
    if isinstance(value, bool) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{name} must be a real number in [0, 1), got {value!r}"
        )
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {value}")
    return value


def times(name: str, value: object) -> np.ndarray:
    """A 1-D array of non-negative, non-decreasing times."""
    t = as_array(name, value, ndim=1)
    if t.size and (t[0] < 0 or np.any(np.diff(t) < 0)):
        raise ValueError(f"{name} must be non-negative and non-decreasing")
    return t


def nonempty_times(name: str, t: np.ndarray) -> np.ndarray:
    """``t`` (checked by :func:`times`), required to hold at least one time
    (an integrator has somewhere to go)."""
    if t.size == 0:
        raise ValueError(f"{name} must hold at least one time")
    return t


def matrix(name: str, value: object) -> np.ndarray:
    """A 2-D float array with at least one row and one column."""
    arr = as_array(name, value, ndim=2)
    if 0 in arr.shape:
        raise ValueError(
            f"{name} must hold at least one row and one column, got shape "
            f"{arr.shape}"
        )
    return arr


def shaped(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """A finite float array of exactly the shape ``shape``."""
    arr = as_array(name, value)
    check_shape(name, arr, shape)
    return arr


def broadcast(names: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """``np.broadcast_arrays`` with an error naming the arguments."""
    try:
        return np.broadcast_arrays(*arrays)
    except ValueError as exc:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(
            f"{names} must broadcast together, got shapes {shapes}"
        ) from exc


def abundances(name: str, value: object, k: int) -> np.ndarray:
    """Mode abundances ``z_k = p_k^T M p_k >= 0`` of a PSD ``M``, shape (k,)
    (Eq. 32)."""
    z = vector(name, value, k)
    if np.any(z < 0):
        raise ValueError(f"{name} must be >= 0 (z_k = p_k^T M p_k of a PSD M)")
    return z


def competition_diagonal(
    C: object, k: int, rtol: float = DIAG_RTOL
) -> np.ndarray:
    """The diagonal of the competition matrix ``C`` given as (k,) or (k, k);
    ``ValueError`` if a (k, k) ``C`` is not diagonal (orthogonal features,
    Theorem 6) or has a negative diagonal (``C`` is a Gram matrix, Eq. 37)."""
    C = as_array("C", C, ndim=(1, 2))
    if C.ndim == 1:
        check_shape("C", C, (k,))
        d = C
    else:
        check_shape("C", C, (k, k))
        d = np.diag(C).copy()
        off = np.abs(C - np.diag(d)).max(initial=0.0)
        if off > rtol * max(np.abs(d).max(initial=0.0), 1e-300):
            raise ValueError(
                "C must be diagonal (orthogonal features, Thm 6); max "
                f"|off-diagonal| = {off:.3g}. "
                "For coupled modes use glv_integrate."
            )
    if np.any(d < 0):
        raise ValueError("the diagonal of C must be >= 0 (C is a Gram matrix)")
    return d


def glv_rates(r: object, C: object) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates ``r`` and self-competitions ``C_kk`` broadcast
    elementwise (numpy conventions; Eq. 37).

    ``C`` is read as a full competition matrix (its diagonal is used, after
    checking that it is diagonal) when ``r`` is 1-D with ``K`` entries and
    ``C`` has shape ``(K, K)``; otherwise ``r`` and ``C`` broadcast against
    each other entry by entry.
    """
    r = as_array("r", r)
    C = as_array("C", C)
    if r.ndim == 1 and C.ndim == 2 and C.shape == (r.size, r.size):
        c = competition_diagonal(C, r.size)
    else:
        if (
            C.ndim >= 2
            and C.shape[-1] == C.shape[-2] > 1
            and r.shape != C.shape
        ):
            raise ValueError(
                f"C of shape {C.shape} is read as a competition matrix only "
                f"with r of shape ({C.shape[0]},), "
                f"got r of shape {r.shape}; for rates that broadcast entry "
                "by entry pass C's diagonal"
            )
        c = C
        if np.any(c < 0):
            raise ValueError(
                "C must be >= 0 (C_kk = (8/m) sum_n lambda_nk^2, Eq. 37)"
            )
    r, c = broadcast("r and C", r, c)
    return r, c


def glv_system(r: object, C: object) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates ``r`` (K,) and a full competition matrix ``C`` (K, K) of
    the GLV equation (Eq. 32)."""
    r = vector("r", r)
    C = as_array("C", C, ndim=2)
    check_shape("C", C, (r.size, r.size))
    return r, C


def nqf(name: str, value: object) -> object:
    """``value`` if it is an :class:`nqf_lite.expansion.form.NQF`, else
    ``TypeError`` naming ``name``."""
    from nqf_lite.expansion.form import NQF  # the form imports this module

    if not isinstance(value, NQF):
        raise TypeError(
            f"{name} must be an nqf_lite NQF, got {type(value).__name__}"
        )
    return value


def torch_tensor(
    name: str, value: object, ndim_min: int = 0, differentiated: bool = False
) -> object:
    """``value`` as a finite float64 torch tensor with at least ``ndim_min``
    axes (complex, bool, str refused).

    With ``differentiated=True`` a tensor that requires grad passes as it is
    (no copy, no finiteness scan), so autograd can differentiate through it.
    """
    import torch  # only the torch layers need it

    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(
                f"{name} must be a real numeric array or tensor, got dtype "
                f"{value.dtype}"
            )
        if differentiated and value.requires_grad:
            t = value
        else:
            t = value.to(torch.float64)
            if not torch.all(torch.isfinite(t)):
                raise ValueError(f"{name} contains NaN or inf")
    else:
        t = torch.as_tensor(as_array(name, value))
    if t.ndim < ndim_min:
        raise ValueError(
            f"{name} must have at least {ndim_min} axes, got shape "
            f"{tuple(t.shape)}"
        )
    return t


def model_input(name: str, value: object) -> None:
    """Refuse an input of a model holding a complex number, or a complex,
    bool or non-finite array or tensor (also inside tuples and lists);
    anything else (``None``, a string) is the model's to interpret."""
    if isinstance(value, (tuple, list)):
        for i, part in enumerate(value):
            model_input(f"{name}[{i}]", part)
    elif isinstance(value, np.ndarray) or hasattr(value, "detach"):
        as_array(name, value)  # TypeError: complex or bool; ValueError: NaN
    elif isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be real, got the complex {value!r}")


def weights(name: str, value: object, p: int | None = None) -> np.ndarray:
    """A layer's weights ``W`` of shape ``(p, d)``, one neuron a column,
    ``d >= 1`` (and ``p`` rows when given)."""
    W = as_array(name, value, ndim=2)
    if 0 in W.shape or (p is not None and W.shape[0] != p):
        rows = "p" if p is None else p
        raise ValueError(
            f"{name} must have shape ({rows}, d) with d >= 1, got {W.shape}"
        )
    return W


def members(name: str, value: object) -> list:
    """An ensemble's members (seeds, generators, weights) as a non-empty
    list."""
    values = list(value)
    if not values:
        raise ValueError(f"{name} must hold at least one member")
    return values
