"""The NQF of a data set: :func:`expand` at every input, stacked (Eq. 20).

For ``nn.Sequential(Linear, act, Linear)``, the mixtures of experts and
attention heads of :mod:`nqf_lite.expansion.models` and every registry model
the coefficients are known in closed form (Propositions 1-5) and kept factored
(:class:`~nqf_lite.expansion.factored.FactoredNQF`, built by
:mod:`nqf_lite.expansion.factored_models`); any other module is expanded input
by input by autograd (Theorem 1), in chunks that fit a memory budget, with a
progress bar over large data sets.

- :func:`expand_dataset`: the :class:`~nqf_lite.NQF` of a data set.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from nqf_lite._checks import check_device, finite_input, integer
from nqf_lite.expansion.autograd import MAX_BYTES, expand_at, unit_function
from nqf_lite.expansion.factored_models import (
    as_device,
    factored_twin,
    mlp_factored,
    module_factored,
    recognise,
    slope_at_zero,
)
from nqf_lite.expansion.form import NQF
from nqf_lite.expansion.taylor import Module, NotSmoothError, NotSymmetricError
from nqf_lite.expansion.units import ModuleUnits

__all__ = ["PROGRESS_MIN", "expand_dataset"]

#: number of inputs from which :func:`expand_dataset` shows a progress bar by
#: default
PROGRESS_MIN = 200


def _rows(xs: Any) -> Sequence[Any]:
    """The inputs as an indexable sequence: a sequence, an array or tensor
    (first axis), or an iterable of batches (a ``DataLoader``: each batch a
    tensor or a tuple whose first element
    holds the inputs, split along its first axis)."""
    if isinstance(xs, (str, bytes)):
        raise TypeError(
            "xs must be a sequence of inputs, an array or an iterable of "
            f"batches, got {type(xs).__name__}"
        )
    if isinstance(xs, (np.ndarray, torch.Tensor)):
        if xs.ndim == 0:
            raise TypeError(
                "xs must hold inputs along its first axis, got a 0-d array"
            )
        return xs
    if hasattr(xs, "__len__") and hasattr(xs, "__getitem__"):
        return xs
    if not hasattr(xs, "__iter__"):
        raise TypeError(
            "xs must be a sequence of inputs, an array or an iterable of "
            f"batches, got {type(xs).__name__}"
        )
    rows: list[Any] = []
    for b, batch in enumerate(xs):
        if isinstance(batch, (tuple, list)):
            if not batch:
                raise ValueError(f"xs: batch {b} is empty")
            batch = batch[
                0
            ]  # (inputs, labels, ...) as a DataLoader yields them
        if (
            not isinstance(batch, (np.ndarray, torch.Tensor))
            or batch.ndim == 0
        ):
            raise TypeError(
                f"xs: batch {b} must be an array or tensor of inputs (first "
                "axis), got "
                f"{type(batch).__name__}"
            )
        rows.extend(batch[i] for i in range(batch.shape[0]))
    return rows


_ACTIVATIONS = (
    nn.Tanh,
    nn.Sigmoid,
    nn.GELU,
    nn.SiLU,
    nn.ELU,
    nn.CELU,
    nn.SELU,
    nn.Softplus,
    nn.Mish,
    nn.Identity,
    nn.ReLU,
    nn.LeakyReLU,
    nn.Hardtanh,
    nn.Softsign,
    nn.Tanhshrink,
    nn.ReLU6,
)


def _mlp_layers(
    units: ModuleUnits,
) -> tuple[nn.Linear, nn.Module, nn.Linear] | None:
    """``(first, act, last)`` when the module is
    ``Sequential(Linear, act, Linear)`` with its hidden units."""
    module = units.module
    if type(module) is not nn.Sequential or len(module) != 3:
        return None
    first, act, last = module[0], module[1], module[2]
    if not (
        type(first) is nn.Linear
        and type(last) is nn.Linear
        and isinstance(act, _ACTIVATIONS)
    ):
        return None
    if (
        any(True for _ in act.parameters())
        or first.out_features != last.in_features
    ):
        return None
    spec = (
        [("0.weight", 0, 1)]
        + ([("0.bias", 0, 1)] if first.bias is not None else [])
        + [("2.weight", 1, 1)]
    )
    if units.units != spec or units.d != first.out_features:
        return None
    return first, act, last


def _mlp_factored(
    units: ModuleUnits,
    xs: Sequence[Any],
    dtype: Any,
    progress: Any,
    device: torch.device | None = None,
) -> NQF | None:
    """Proposition 1 for ``Sequential(Linear, act, Linear)``: the factored NQF,
    in the memory of the inputs."""

    layers = _mlp_layers(units)
    if layers is None:
        return None
    first, act, last = layers
    D, V = first.in_features, last.out_features
    m = len(xs)
    if isinstance(xs, (np.ndarray, torch.Tensor)):
        if xs.ndim != 2 or xs.shape[1] != D:
            raise ValueError(
                f"xs must have shape (m, {D}) for a first layer with "
                f"in_features = {D}, "
                f"got {tuple(xs.shape)}"
            )
        if isinstance(xs, torch.Tensor):
            check_device("xs", xs)
            if xs.is_complex() or not xs.is_floating_point():
                raise TypeError(
                    f"xs must be a real floating tensor, got dtype {xs.dtype}"
                )
            X = xs.detach().cpu().numpy()
        else:
            if xs.dtype.kind not in "fiu":
                raise TypeError(
                    f"xs must hold real numbers, got dtype {xs.dtype}"
                )
            X = xs
        X = np.asarray(X, dtype=dtype)
        bad = ~np.isfinite(X).all(axis=1)
        if bad.any():
            raise ValueError(
                f"xs[{int(np.flatnonzero(bad)[0])}]: x contains NaN or inf: "
                "the expansion of f at "
                "such an input is undefined"
            )
    else:
        X = np.empty((m, D), dtype=dtype)
        for i in _progress(range(m), progress, "inputs"):
            try:
                x = finite_input("x", xs[i])
                if isinstance(x, torch.Tensor):
                    if not x.is_floating_point():
                        raise TypeError(
                            "x must be a real floating tensor, got dtype "
                            f"{x.dtype}"
                        )
                    x = x.cpu().numpy()
                x = np.asarray(x)
                if x.shape != (D,):
                    raise ValueError(
                        f"x must have shape ({D},) (in_features of the "
                        f"first layer), got {x.shape}"
                    )
                if x.dtype.kind not in "fiu":
                    raise TypeError(
                        f"x must hold real numbers, got dtype {x.dtype}"
                    )
                X[i] = x
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"xs[{i}]: {exc}") from exc
    phi0, slope = slope_at_zero(act, f"activation {type(act).__name__}")
    out_bias = (
        None
        if last.bias is None
        else last.bias.detach().to(torch.float64).cpu().numpy()
    )
    return mlp_factored(
        X,
        phi0,
        slope,
        units.p,
        V,
        first.bias is not None,
        out_bias,
        dtype,
        device,
    )


def _progress(iterable: Any, progress: Any, what: str) -> Any:
    """``iterable`` with a tqdm bar when ``progress`` says so (see
    :func:`expand_dataset`)."""
    if progress is None:
        import os

        progress = (
            os.environ.get("NQF_PROGRESS", "1") != "0"
            and not os.environ.get(
                "NQF_CLAIMS_DIR"
            )  # the book build: no bars in the pages
            and len(iterable) >= PROGRESS_MIN
        )
    if not progress:
        return iterable
    try:
        from tqdm.auto import tqdm
    except (
        ImportError
    ):  # pragma: no cover - tqdm is pinned in requirements.txt
        return iterable
    return tqdm(iterable, desc=f"expand_dataset ({what})", leave=False)


def expand_dataset(
    f: Module | nn.Module,
    xs: Any,
    p: int | None = None,
    d: int | None = None,
    check: bool = True,
    *,
    units: Sequence[Any] | None = None,
    max_bytes: int = MAX_BYTES,
    factored: bool | None = None,
    dtype: Any = np.float64,
    progress: bool | None = None,
    device: Any = None,
) -> NQF:
    """The NQF of a data set: :func:`expand` at every input, stacked into an
    :class:`~nqf_lite.NQF`.

    For ``nn.Sequential(Linear, act, Linear)`` (with or without biases, a
    smooth elementwise activation, its hidden units) the coefficients are known
    in closed form (Proposition 1: ``A_o(x) = (phi'(0)/2)(e_o x~ᵀ + x~ e_oᵀ)``,
    ``g_o = phi(0) e_o``, ``B = 0``, ``f0`` the output bias) and the NQF is a
    :class:`~nqf_lite.expansion.factored.FactoredNQF`: it holds the inputs, not
    a ``p × p`` matrix per input, and every method of :class:`~nqf_lite.NQF`
    works on it (``.A``, ``.g``, ``.B`` still give the dense arrays when they
    fit).  Any other module is expanded input by input by autograd, the Hessian
    of one input in chunks of rows that fit ``max_bytes``; the memory of the
    whole dense result is estimated before the first input, and refused when it
    exceeds ``max_bytes``.

    The factored form is also picked, with ``factored=None``, for

    - a module of :mod:`nqf_lite.expansion.models` built by
      :func:`~nqf_lite.expansion.models.moe_module` (Proposition 5, Eq. 14:
      ``A = (psi'(0)/2) sym2(x ⊗ ∇_Θ E(x; 0))``, rank 2 a output),
      :func:`~nqf_lite.expansion.models.mha` (Proposition 2: the head acts on
      the token average ``x̄``, the MLP's structure with ``x -> x̄``),
      :func:`~nqf_lite.expansion.models.qk_head` or
      :func:`~nqf_lite.expansion.models.logits_head` (Propositions 3-4); such
      a module is recognised by the function it was built from, and ``p``
      may be left out;
    - a registry model, ``f = MODELS[name]`` (inputs as its ``structure``
      takes them): ``mlp``, ``cnn``, ``moe``, ``mha``, ``qk`` and ``logits``
      from their known form, the others from the eigenvectors of each small
      ``A(x)`` (see :func:`~nqf_lite.expansion.factored_models.factored_twin`);
      ``factored=False`` gives ``f.twin(xs)``.

    The symmetry and smoothness checks run on the first input only (for the
    factored MLP the structure is symmetric by construction and the activation
    is checked; a recognised module of :mod:`nqf_lite.expansion.models` is
    checked by autograd on its first input, a registry model not at all: its
    structure is the paper's).

    Parameters
    ----------
    f : torch.nn.Module, ModuleUnits, registry model, or callable ``f(W, x)``
        The module (see :func:`expand`), or a registry model.
    xs : sequence, array, tensor or iterable of batches
        The ``m`` inputs: a list, an array or tensor whose first axis runs over
        them, or an iterable of batches such as a
        ``torch.utils.data.DataLoader`` (each batch a tensor, or a tuple whose
        first element holds the inputs).
    p, d : int, optional
        As in :func:`expand` (``p`` required for a function).
    check : bool
        Run :func:`expand`'s checks on ``xs[0]``.
    units : sequence, optional
        As in :func:`expand`, for a torch module.
    max_bytes : int, default 2 GiB
        Memory budget of the dense result (``m`` inputs of ``V (2 p^2 + p +
        1)`` float64 numbers) and of one input's Hessian; raise it to allow
        more.
    factored : bool, optional
        ``None`` (default): factored when the structure is known; ``False``:
        dense (autograd, as for any module); ``True``: factored or a
        ``ValueError``.
    dtype : numpy.float32 or numpy.float64, default float64
        Storage and arithmetic of the factored coefficients (``float32`` halves
        the memory; predictions, ``v`` and ``H`` are returned in float64).
        Dense results are float64.
    progress : bool, optional
        A tqdm progress bar over the inputs.  By default shown from
        ``PROGRESS_MIN`` inputs, except when the environment sets
        ``NQF_PROGRESS=0`` or ``NQF_CLAIMS_DIR`` (the book build).
    device : str or torch.device, optional
        Where the data-set-scale arithmetic of a factored form runs (the
        inputs' Gram matrix that every forecast reads for the MLP, the token
        statistics of attention), e.g. ``"cuda"`` when there is a GPU; the
        factors come back as numpy arrays and every result compared is
        float64.  A name torch does not know, or a device this machine does
        not have, is a ``ValueError`` naming ``device``.  The dense
        (autograd) path runs on the CPU and refuses another device.

    Returns
    -------
    NQF
        With ``A`` of shape ``(m, p, p)`` or ``(m, V, p, p)`` and matching ``g,
        B, f0`` (float64), or a
        :class:`~nqf_lite.expansion.factored.FactoredNQF` (see above).

    Raises
    ------
    TypeError, ValueError, NotSymmetricError, NotSmoothError
        As :func:`expand`; an error caused by one input names it (``xs[i]:
        ...``).
    MemoryError
        When the dense coefficients of the data set would exceed ``max_bytes``:
        the message gives the bytes needed, the budget and how to raise it.
    """
    from nqf_lite.expansion.models import Model, SymmetricModule

    xs = _rows(xs)
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input")
    dev = as_device(device)
    if isinstance(f, Model):  # a registry model: its structure, stacked
        extra = {"p": p, "d": d, "units": units}
        given = [k for k, v in extra.items() if v is not None]
        if given and not (given == ["p"] and integer("p", p) == f.p):
            raise ValueError(
                f"{given[0]} does not apply to a registry model (its p = "
                f"{f.p} and its structure are its own); leave it out"
            )
        if factored is False:
            return f.twin(list(xs))
        return factored_twin(f, xs, dtype, dev)
    if isinstance(f, SymmetricModule):
        if p is None:
            p = f.p
        elif integer("p", p) != f.p:
            raise ValueError(
                f"p = {p} does not match the module's layout, which holds "
                f"p = {f.p} parameters a neuron; leave p out"
            )
    fn, p, d, module = unit_function(f, p, d, units)
    max_bytes = integer("max_bytes", max_bytes)
    if factored not in (None, True, False):
        raise TypeError(
            f"factored must be None, True or False, got {factored!r}"
        )
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(
            f"dtype must be numpy.float32 or numpy.float64, got {dtype}"
        )
    if progress not in (None, True, False):
        raise TypeError(
            f"progress must be None, True or False, got {progress!r}"
        )
    if factored is not False and module:
        out = _mlp_factored(fn, xs, dtype, progress, dev)  # type: ignore
        if out is not None:
            return out
    if factored is not False and recognise(fn) is not None:
        if check:  # Theorem 1's conditions, on the first input
            expand_at(
                fn, finite_input("x", xs[0]), p, d, True, 0, max_bytes, False
            )
        return module_factored(fn, xs, d, dtype, dev)  # type: ignore
    if factored:
        raise ValueError(
            "factored=True: no factored form is known for this module; the "
            "factored path covers "
            "nn.Sequential(Linear, smooth elementwise activation, Linear) "
            "with its hidden units, the modules of nqf_lite.expansion.models "
            "built by moe_module, mha, qk_head and logits_head, and the "
            "registry models (MODELS[name])"
        )
    if dev is not None and dev.type != "cpu":
        raise ValueError(
            f"device={device!r}: the dense (autograd) expansion runs on the "
            "CPU; device applies to the factored forms (see factored)"
        )
    m = len(xs)
    exps = []
    for i in _progress(range(m), progress, "inputs"):
        try:
            x = finite_input("x", xs[i])
            exps.append(
                expand_at(fn, x, p, d, check and i == 0, 0, max_bytes, module)
            )
        except (NotSymmetricError, NotSmoothError):
            raise
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"xs[{i}]: {exc}") from exc
        if i == 0:
            V = int(np.prod(exps[0].f0.shape))
            need = 8 * m * V * (2 * p * p + p + 1)
            if need > max_bytes:
                raise MemoryError(
                    f"the dense NQF of m = {m:,} inputs (p = {p:,}, {V} "
                    f"output(s)) needs {need / 2**30:,.2f} GiB "
                    "for A, B, g and f0, more than max_bytes = "
                    f"{max_bytes / 2**30:,.2f} GiB. Raise it with "
                    f"expand_dataset(..., max_bytes={int(need * 1.1):,}), "
                    "expand fewer inputs, or use a module "
                    "whose factored form is known (nn.Sequential(Linear, "
                    "act, Linear): Proposition 1)"
                )
    return NQF(
        A=np.stack([e.A for e in exps]),
        g=np.stack([e.g for e in exps]),
        B=np.stack([e.B for e in exps]),
        f0=np.stack([e.f0 for e in exps]),
    )
