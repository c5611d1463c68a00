"""Validators of numbers, arrays, tensors and call contracts.

Part of :mod:`nqf_lite._checks`; import from there.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

SYM_RTOL = 1e-10


def detached(name: str, value: object) -> object:
    """A torch tensor as a plain (detached, CPU) numpy array; anything else
    unchanged."""
    if hasattr(value, "detach") and hasattr(value, "requires_grad"):
        try:
            return value.detach().cpu().numpy()
        except (TypeError, RuntimeError) as exc:
            raise TypeError(
                f"{name} must be a real numeric tensor, got {value!r}"
            ) from exc
    return value


def _refuse_kind(name: str, value: object, what: str) -> None:
    """Raise ``TypeError`` for bool, str/bytes and complex inputs (scalars or
    arrays)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {what}, got the bool {value!r}")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {what}, got the string {value!r}")
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(
            f"{name} must be {what} (real), got the complex {value!r}"
        )


def as_array(
    name: str, value: object, ndim: int | tuple[int, ...] | None = None
) -> np.ndarray:
    """Return ``value`` as a finite float64 array, checking its number of axes.

    Refused with ``TypeError`` naming ``name``: ``None``, bools (or bool
    arrays), strings, complex numbers (or complex arrays) and non-numeric
    objects. Torch tensors are detached (``requires_grad`` is dropped) and
    copied to the CPU.
    """
    if (
        type(value) is np.ndarray and value.dtype == np.float64
    ):  # fast path: already float64
        arr = value
    else:
        arr = _convert(name, value)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(
                f"{name} must have {want} axes, got shape {arr.shape}"
            )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _convert(name: str, value: object) -> np.ndarray:
    """``value`` as a float64 array; ``TypeError`` naming ``name`` for anything
    not real and numeric."""
    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    value = detached(name, value)
    _refuse_kind(name, value, "a real numeric array")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a real numeric array, got {type(value).__name__}"
        ) from exc
    kind = raw.dtype.kind
    if kind == "b":
        raise TypeError(
            f"{name} must be a real numeric array, got a bool array"
        )
    if kind == "c":
        raise TypeError(
            f"{name} must be a real numeric array, got a complex array "
            f"(dtype {raw.dtype})"
        )
    if kind in "USV":
        raise TypeError(
            f"{name} must be a real numeric array, got dtype {raw.dtype}"
        )
    if kind == "O" and any(
        isinstance(v, (bool, np.bool_, str, bytes, complex))
        for v in raw.ravel()
    ):
        raise TypeError(
            f"{name} must be a real numeric array, got bool/str/complex "
            "entries"
        )
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a real numeric array, got {type(value).__name__}"
        ) from exc
    return arr


def check_shape(name: str, arr: np.ndarray, shape: tuple) -> None:
    """Raise ``ValueError`` unless ``arr.shape == shape``."""
    if arr.shape != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)}, got {arr.shape}"
        )


def check_symmetric(name: str, arr: np.ndarray) -> None:
    """Raise unless ``arr`` is symmetric in its last two axes (relative
    tolerance)."""
    if arr.shape[-1] != arr.shape[-2]:
        raise ValueError(
            f"{name} must be square in its last two axes, got shape "
            f"{arr.shape}"
        )
    if (
        arr == np.swapaxes(arr, -1, -2)
    ).all():  # exactly symmetric: nothing to measure
        return
    scale = max(float(np.max(np.abs(arr), initial=0.0)), 1e-300)
    asym = float(np.max(np.abs(arr - np.swapaxes(arr, -1, -2)), initial=0.0))
    if asym > SYM_RTOL * scale:
        raise ValueError(
            f"{name} must be symmetric in its last two axes (max |X - X^T| "
            f"= {asym:.3g}); "
            "symmetrise it with (X + X^T)/2"
        )


def positive(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring it to be finite and > 0 (bool,
    str, complex refused)."""
    value = detached(name, value)
    _refuse_kind(name, value, "a positive number")
    if isinstance(value, np.ndarray) and (
        value.ndim != 0 or value.dtype.kind not in "iuf"
    ):
        raise TypeError(
            f"{name} must be a positive number, got an array of shape "
            f"{value.shape}, dtype {value.dtype}"
        )
    if not isinstance(
        value, (int, float, np.integer, np.floating, np.ndarray)
    ):
        raise TypeError(
            f"{name} must be a positive number, got {type(value).__name__} "
            f"{value!r}"
        )
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def nonnegative(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring it to be finite and >= 0 (bool,
    str, complex refused)."""
    value = detached(name, value)
    _refuse_kind(name, value, "a non-negative number")
    if isinstance(value, np.ndarray) and (
        value.ndim != 0 or value.dtype.kind not in "iuf"
    ):
        raise TypeError(
            f"{name} must be a non-negative number, got an array of shape "
            f"{value.shape}, dtype {value.dtype}"
        )
    if not isinstance(
        value, (int, float, np.integer, np.floating, np.ndarray)
    ):
        raise TypeError(
            f"{name} must be a non-negative number, got "
            f"{type(value).__name__} {value!r}"
        )
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def fraction(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring it to be finite with ``0 < value
    < 1`` (a relative tolerance)."""
    value = detached(name, value)
    _refuse_kind(name, value, "a number in (0, 1)")
    if isinstance(value, np.ndarray) and (
        value.ndim != 0 or value.dtype.kind not in "iuf"
    ):
        raise TypeError(
            f"{name} must be a number in (0, 1), got an array of shape "
            f"{value.shape}, dtype {value.dtype}"
        )
    if not isinstance(
        value, (int, float, np.integer, np.floating, np.ndarray)
    ):
        raise TypeError(
            f"{name} must be a number in (0, 1), got {type(value).__name__} "
            f"{value!r}"
        )
    v = float(value)
    if not (np.isfinite(v) and 0.0 < v < 1.0):
        raise ValueError(
            f"{name} must be finite with 0 < {name} < 1 (a relative "
            f"tolerance), got {value!r}"
        )
    return v


def generator(name: str, value: object) -> np.random.Generator | None:
    """Validate a random source: ``None``, a non-negative int seed, a
    ``SeedSequence`` or a ``Generator``.

    Returns ``None`` for ``None`` and a ``numpy.random.Generator`` otherwise.
    """
    if value is None:
        return None
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, np.integer, np.random.SeedSequence)
    ):
        raise TypeError(
            f"{name} must be None, a non-negative int seed or a numpy "
            f"Generator, got {type(value).__name__} {value!r}"
        )
    if not isinstance(value, np.random.SeedSequence) and value < 0:
        raise ValueError(
            f"{name} must be a non-negative int seed, got {value}"
        )
    return np.random.default_rng(value)


def integer(name: str, value: object, minimum: int = 1) -> int:
    """Return ``value`` as an int, requiring an integer type (not bool) and
    ``value >= minimum``."""
    kind = {0: "non-negative", 1: "positive"}.get(minimum, f">= {minimum}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a {kind} integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be a {kind} integer, got {value}")
    return int(value)


def natural(name: str, value: object) -> int:
    """Return ``value`` as a non-negative int (a seed, a count that may be
    zero)."""
    return integer(name, value, minimum=0)


def width(name: str, value: object) -> int:
    """Return ``value`` as a positive int (a number of neurons)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(
            f"{name} must be >= 1 (a width of at least one neuron), got "
            f"{value}"
        )
    return int(value)


def batch_indices(batch: object, m: int) -> np.ndarray:
    """Validate a minibatch: ``None`` (all samples) or a 1-D int array of
    indices in [0, m)."""
    if batch is None:
        return np.arange(m)
    arr = np.asarray(batch)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            "batch must be a non-empty 1-D array of sample indices, got "
            f"shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"batch must hold integer sample indices, got dtype {arr.dtype}"
        )
    if arr.min() < 0 or arr.max() >= m:
        raise ValueError(
            f"batch indices must lie in [0, {m}), got range [{arr.min()}, "
            f"{arr.max()}]"
        )
    return arr


def vector(name: str, value: object, k: int | None = None) -> np.ndarray:
    """A finite non-empty 1-D float array named ``name`` (of length ``k``
    when given); one ``ValueError``, "``name`` must be a vector of shape
    (k,)", for any other shape."""
    arr = as_array(name, value)
    if arr.ndim != 1 or (k is not None and arr.shape[0] != k) or arr.size == 0:
        want = "(n,) with n >= 1" if k is None else f"({k},)"
        raise ValueError(
            f"{name} must be a vector of shape {want}, got shape {arr.shape}"
        )
    return arr


# -----------------------------------------------------------------------------
# inputs of torch modules (nqf_lite.expansion): checked once where they enter
def describe(x: object) -> str:
    """Shape, dtype and device of an input, for error messages."""
    import torch

    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(describe(v) for v in x) + ")"
    if isinstance(x, torch.Tensor):
        return (
            f"tensor of shape {tuple(x.shape)}, dtype {x.dtype}, "
            f"device {x.device.type}"
        )
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape}, dtype {x.dtype}"
    return type(x).__name__


def check_device(name: str, x: object) -> None:
    """Refuse tensors on the meta device (they hold no values) anywhere in
    ``x``."""
    import torch

    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            check_device(f"{name}[{i}]", v)
    elif isinstance(x, torch.Tensor) and x.is_meta:
        raise ValueError(
            f"{name} is on the meta device (shape {tuple(x.shape)}): it "
            "holds no values to expand at; pass real data (e.g. "
            "x.to_empty(device='cpu') and fill it, or a CPU tensor)"
        )


def _detach_all(x: object) -> object:
    """``x`` with every torch tensor (also inside tuples and lists) detached
    from autograd."""
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detach_all(v) for v in x)
    return x


def _check_finite_input(name: str, x: object) -> None:
    """Refuse NaN or inf (``ValueError``) and complex values (``TypeError``)
    anywhere in ``x``."""
    import torch

    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            _check_finite_input(f"{name}[{i}]", v)
        return
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise TypeError(
                f"{name} must be real, got a complex tensor (dtype {x.dtype})"
            )
        bad = x.is_floating_point() and not bool(torch.isfinite(x).all())
    elif isinstance(x, (np.ndarray, np.generic, float, complex)):
        arr = np.asarray(x)
        if arr.dtype.kind == "c":
            raise TypeError(
                f"{name} must be real, got a complex value (dtype {arr.dtype})"
            )
        bad = arr.dtype.kind == "f" and not bool(np.isfinite(arr).all())
    else:
        return
    if bad:
        raise ValueError(
            f"{name} contains NaN or inf: the expansion of f at such an "
            "input is undefined"
        )


def finite_input(name: str, x: object) -> object:
    """One input of a module, detached from autograd (also inside tuples and
    lists), with no meta tensor, NaN, inf or complex value in it.

    Raises
    ------
    TypeError
        For a complex tensor, array or number anywhere in ``x``.
    ValueError
        For NaN or inf, or a tensor on the meta device.
    """
    x = _detach_all(x)
    check_device(name, x)
    _check_finite_input(name, x)
    return x


def module_input(name: str, v: object) -> object:
    """A module argument: floating tensors and arrays as float64 tensors,
    other tensors detached, complex refused (``TypeError`` naming ``name``)."""
    import torch

    if isinstance(v, torch.Tensor):
        if v.is_complex():
            raise TypeError(
                f"{name} must be real, got a complex tensor (dtype {v.dtype})"
            )
        return (
            v.detach().to(torch.float64)
            if v.is_floating_point()
            else v.detach()
        )
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "c":
            raise TypeError(
                f"{name} must be real, got a complex array (dtype {v.dtype})"
            )
        if v.dtype.kind in "fiub":
            return torch.as_tensor(
                v, dtype=torch.float64 if v.dtype.kind == "f" else None
            )
    return v


# -----------------------------------------------------------------------------
# arguments of the models (nqf_lite.expansion.models)
def real(name: str, value: object) -> float:
    """Return ``value`` as a finite float (bool, complex, str and ``None``
    refused with ``TypeError``)."""
    if (
        isinstance(
            value, (bool, np.bool_, complex, np.complexfloating, str, bytes)
        )
        or value is None
    ):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a real number, got {value!r}"
        ) from exc
    if not np.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def outputs(V: object) -> int | None:
    """The number of outputs ``V`` of a model: ``None`` (a scalar output) or
    a positive int."""
    return None if V is None else integer("V", V)


def token_matrix(name: str, X: object, D: int | None = None) -> np.ndarray:
    """A finite token matrix of shape ``(D, N)`` with ``N >= 1`` tokens (any
    ``D`` when not given)."""
    arr = as_array(name, X)
    if (
        arr.ndim != 2
        or (D is not None and arr.shape[0] != D)
        or arr.shape[1] == 0
    ):
        want = "(D, N)" if D is None else f"({D}, N)"
        raise ValueError(
            f"{name} must be a token matrix of shape {want} with N >= 1 "
            f"tokens, got shape {arr.shape}"
        )
    return arr


def tensor(name: str, value: object, ndim: int, shape: tuple | None = None):
    """A finite real float64 torch tensor with ``ndim`` axes (and exactly
    ``shape`` when given), from a tensor or an array.

    A one-element tuple (an input already checked by a module) is unpacked.
    """
    import torch

    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    if not isinstance(value, (torch.Tensor, np.ndarray)):
        raise TypeError(
            f"{name} must be a torch tensor or numpy array, got "
            f"{type(value).__name__}"
        )
    bad = (
        (value.is_complex() or value.dtype == torch.bool)
        if isinstance(value, torch.Tensor)
        else value.dtype.kind not in "iuf"
    )
    if bad:
        raise TypeError(
            f"{name} must hold real numbers, got dtype {value.dtype}"
        )
    t = torch.as_tensor(value, dtype=torch.float64)
    if t.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} axes, got shape {tuple(t.shape)}"
        )
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}"
        )
    return t


def size_pair(name: str, value: object) -> tuple[int, int]:
    """A pair of positive ints ``(height, width)`` (an image, a kernel)."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(
            f"{name} must be a pair of positive ints (height, width), got "
            f"{value!r}"
        )
    return integer(f"{name}[0]", value[0]), integer(f"{name}[1]", value[1])


def check_sizes(name: str, t: object, axes: dict[int, int]) -> None:
    """Raise ``ValueError`` unless ``t.shape[axis] == n`` for every ``axis:
    n`` of ``axes``."""
    for ax, n in axes.items():
        if t.shape[ax] != n:
            raise ValueError(
                f"{name} must have size {n} on axis {ax}, got shape "
                f"{tuple(t.shape)}"
            )


def torch_generator(seed: object):
    """A ``torch.Generator`` seeded with ``seed``, a non-negative int."""
    import torch

    return torch.Generator().manual_seed(integer("seed", seed, minimum=0))


# -----------------------------------------------------------------------------
# declaring a contract once
def instance(cls: type) -> Callable[[str, object], Any]:
    """A check for :func:`checks`: ``value`` must be an instance of ``cls``
    (``TypeError`` naming the argument otherwise)."""

    def check(name: str, value: object) -> Any:
        if not isinstance(value, cls):
            raise TypeError(
                f"{name} must be an instance of {cls.__name__}, got "
                f"{type(value).__name__}"
            )
        return value

    return check


def checks(**contract: Callable[[str, object], Any]) -> Callable:
    """Declare the contract of a function's arguments once, at its definition.

    ``@checks(lr=positive, steps=integer)`` checks the named arguments with
    the validators of this module (called as ``check(name, value)``, e.g.
    :func:`positive`, :func:`integer`, :func:`width`, :func:`instance`) before
    the body runs, and passes the converted values (``lr`` as a float,
    ``steps`` as an int); the body trusts them.  The signature and docstring
    of the function are kept; the contract is its ``__checks__``.

    Examples
    --------
    >>> @checks(lr=positive)
    ... def step(x, lr=0.1):
    ...     return x - lr * x
    >>> step(1.0, lr="fast")
    Traceback (most recent call last): TypeError: lr must be a positive number,
    got the string 'fast'
    """

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        unknown = set(contract) - set(sig.parameters)
        if unknown:
            raise TypeError(
                f"checks: {fn.__qualname__} has no argument(s) "
                f"{sorted(unknown)}"
            )

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, check in contract.items():
                bound.arguments[name] = check(name, bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        run.__checks__ = dict(contract)  # type: ignore[attr-defined]
        return run

    return wrap
