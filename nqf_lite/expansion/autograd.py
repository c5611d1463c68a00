"""The expansion of a permutation-symmetric module: its structure matrix by
autograd (Theorem 1).

Theorem 1 and its ZGZ-free form (paper Eq. 20, App. B.1): a module
``f(W; x)`` that is symmetric under permuting the ``d`` columns (neurons) of
``W`` and three times differentiable satisfies, near ``W = 0``,

.. math::

    f(W) = f_0 + g^\\top \\mu + \\mu^\\top B \\mu + \\mathrm{Tr}[M A] +
    O(\\|W\\|^3),
    \\qquad M = W W^\\top,\\; \\mu = W \\mathbf 1 .

If ``H_ii = 2 A_s`` are the equal diagonal Hessian blocks and ``H_ij = 2 B``
the equal off-diagonal ones, then ``A = A_s - B`` (so that
``sum_i w_i^T A_s w_i + sum_{i != j} w_i^T B w_j = Tr[M A] + mu^T B mu``).
The derivatives in two neurons give all three blocks.

The module is either a function ``f(W, x)`` with the neurons as the columns of
``W``, or a ``torch.nn.Module`` whose interchangeable units (neurons, heads,
experts, channels) are named by
:class:`~nqf_lite.expansion.units.ModuleUnits`. A module is evaluated with
:func:`torch.func.functional_call` in float64, whatever its dtype.

- :func:`expand`: the coefficients at one input, an
  :class:`~nqf_lite.expansion.taylor.Expansion`;
- :func:`unit_function`, :func:`expand_at`: the two halves of
  :func:`expand` (the module as ``f(W, x)``; its derivatives at ``W = 0``),
  shared with :func:`~nqf_lite.expansion.dataset.expand_dataset`.

The rest of Theorem 1 lives next door: :mod:`nqf_lite.expansion.taylor`
(the coefficients, the symmetry and smoothness conditions and their errors,
the remainder), :mod:`nqf_lite.expansion.units` (the units of an
``nn.Module``) and :mod:`nqf_lite.expansion.dataset` (a data set, chunked
within a memory budget).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from nqf_lite._checks import checks, finite_input, integer, natural, width
from nqf_lite.expansion.taylor import (
    SYMMETRY_RTOL,
    Expansion,
    Module,
    NotSmoothError,
    NotSymmetricError,
    check_module_symmetry,
    check_smooth,
    check_symmetry,
    evaluate,
)
from nqf_lite.expansion.units import ModuleUnits

# names that moved to nqf_lite.expansion.{taylor, units} in version 0.3 stay
# importable from here (expand_dataset too: see __getattr__ below)
from nqf_lite.expansion.taylor import truncation_error  # noqa: F401
from nqf_lite.expansion.units import module_units  # noqa: F401

__all__ = ["MAX_BYTES", "expand_at", "expand", "unit_function"]

#: default memory budget of :func:`expand` (its Hessian has ``V (d p)^2``
#: float64 entries)
MAX_BYTES = 2 * 2**30


def _check_budget(n: int, V: int, max_bytes: int) -> None:
    """Refuse up front a Hessian of ``V n^2`` float64 entries above
    ``max_bytes``."""
    need = 8 * V * n * n
    if need > max_bytes:
        raise ValueError(
            f"the Hessian of f in the 2 p = {n:,} weights of two neurons "
            f"({V} output(s)) has {V * n * n:,} "
            "float64 entries "
            f"and would need {need / 2**30:,.2f} GiB, more than max_bytes = "
            f"{max_bytes / 2**30:,.2f} GiB; "
            "lower p or d, or raise max_bytes"
        )


def _state_numel(f: Any) -> int:
    """Numbers held by a module's parameters and buffers (0 for a plain
    function)."""
    if isinstance(f, ModuleUnits):
        return sum(
            t.numel()
            for t in list(f.module.parameters()) + list(f.module.buffers())
        )
    return 0


def _chunk(f: Any, n: int, V: int, max_bytes: int) -> int | None:
    """Hessian rows per reverse pass so that the passes fit what ``max_bytes``
    leaves after the Hessian.

    One forward-over-reverse pass for one Hessian column keeps about the
    module's state (parameters, buffers, their float64 copies, their tangents
    and gradients) and its activations; we count 64 float64 copies of the state
    and of ``n`` per column (measured: about 45 for ``Sequential(Linear(784,
    64), Tanh, Linear(64, 10))``). ``None`` (all columns at once) when
    everything fits.
    """
    free = max_bytes - 8 * V * n * n
    per_row = 8 * 64 * (_state_numel(f) + n + V)
    if per_row * n <= free:
        return None
    return max(1, int(free // per_row))


def _derivatives(
    F: Callable[[torch.Tensor], torch.Tensor], n: int, chunk: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Value, gradient (.., n) and Hessian (.., n, n) of ``F`` at zero by
    autograd."""
    theta0 = torch.zeros(n, dtype=torch.float64)
    value = F(theta0).detach()
    if not bool(torch.isfinite(value).all()):
        raise NotSmoothError(
            f"f(W = 0; x) = {value.numpy()} is not finite: the module is "
            "undefined at the origin "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0), a non-finite "
            "derivative at W = 0; "
            "Theorem 1 needs a module that is smooth at the origin"
        )
    try:
        with (
            warnings.catch_warnings()
        ):  # torch.func's internal torch.jit.script deprecation notice
            warnings.simplefilter("ignore", DeprecationWarning)
            grad_fn = torch.func.jacrev(F)
            grad = grad_fn(theta0)
            if chunk is None:
                hess = torch.func.jacfwd(grad_fn)(theta0)
            else:
                # forward over reverse, ``chunk`` Hessian columns per
                # vectorised pass: the memory of one pass times ``chunk``,
                # never all n directions at once
                def column(t: torch.Tensor) -> torch.Tensor:
                    return torch.func.jvp(grad_fn, (theta0,), (t,))[1]

                eye = torch.eye(n, dtype=torch.float64)
                cols = [
                    torch.func.vmap(column)(eye[i : i + chunk])
                    for i in range(0, n, chunk)
                ]
                hess = torch.movedim(torch.cat(cols), 0, -1)
    except (
        ValueError,
        TypeError,
    ):  # clear errors of the package: raised as they are
        raise
    except Exception:  # modules torch.func cannot trace: plain autograd

        def jac(t: torch.Tensor) -> torch.Tensor:
            return torch.autograd.functional.jacobian(F, t, create_graph=True)

        grad = jac(theta0)
        hess = torch.autograd.functional.jacobian(jac, theta0)
    grad, hess = grad.detach(), hess.detach()
    if not (
        bool(torch.isfinite(grad).all()) and bool(torch.isfinite(hess).all())
    ):
        raise NotSmoothError(
            "non-finite derivative at W = 0: the gradient or Hessian of f "
            "at the origin is NaN or inf "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0, or sqrt at 0); "
            "Theorem 1 needs a C^3 module"
        )
    return value, grad, hess


def unit_function(
    f: Any, p: Any, d: Any, units: Any
) -> tuple[Callable[[torch.Tensor, Any], torch.Tensor], int, int, bool]:
    """``(fn, p, d, is_module)``: the function ``fn(W, x)`` to expand, its
    ``p`` and width ``d``.

    A torch module becomes its :class:`ModuleUnits`; ``p``, ``d`` and
    ``units`` are checked here, once, for :func:`expand` and
    :func:`~nqf_lite.expansion.dataset.expand_dataset`.
    """
    given = isinstance(f, ModuleUnits)
    if isinstance(f, nn.Module):
        f = ModuleUnits(f, units, d)
    elif units is not None:
        raise ValueError(
            "units applies to a torch.nn.Module f only; a function f(W, x) "
            "says its units by the columns of W"
        )
    if isinstance(f, ModuleUnits):
        if p is not None and width("p", p) != f.p:
            raise ValueError(
                f"p = {p} does not match the module's units, which hold p = "
                f"{f.p} parameters each "
                f"({f!r}); leave p out for a module"
            )
        if given and d is not None and width("d", d) != f.d:
            raise ValueError(
                f"d = {d} does not match the module's d = {f.d} units; "
                "leave d out for a module"
            )
        if f.d < 2:
            raise ValueError(
                f"the module has d = {f.d} unit; Theorem 1 compares two "
                "units, so it needs d >= 2"
            )
        return f, f.p, f.d, True
    if not callable(f):
        raise TypeError(
            "f must be a torch.nn.Module or callable as f(W, x), got "
            f"{type(f).__name__}"
        )
    if p is None:
        raise TypeError(
            "p is required for a function f(W, x): the number of parameters "
            "of one neuron (rows of W)"
        )
    p = width("p", p)
    d = 2 if d is None else width("d", d)
    if d < 2:
        raise ValueError(
            f"d must be >= 2 to see the cross-neuron block B, got {d}"
        )
    return f, p, d, False


def expand_at(
    f: Callable[[torch.Tensor, Any], torch.Tensor],
    x: Any,
    p: int,
    d: int,
    check: bool,
    seed: int,
    max_bytes: int,
    module: bool,
) -> Expansion:
    """The coefficients of ``f`` at width ``d`` from the derivatives in its
    first two columns (Eq. 20).

    The arguments are trusted: ``f, p, d, module`` from
    :func:`unit_function`, ``x`` from ``nqf_lite._checks.finite_input``.
    With ``check``, the conditions of Theorem 1 are verified
    (:func:`~nqf_lite.expansion.taylor.check_symmetry` or
    :func:`~nqf_lite.expansion.taylor.check_module_symmetry`, and
    :func:`~nqf_lite.expansion.taylor.check_smooth`).
    """
    n = 2 * p
    _check_budget(n, 1, max_bytes)  # before f is called on a (p, d) tensor
    rest = torch.zeros(p, d - 2, dtype=torch.float64)

    def F(theta: torch.Tensor) -> torch.Tensor:
        return evaluate(f, torch.cat([theta.reshape(2, p).T, rest], dim=1), x)

    with torch.no_grad():
        V = int(np.prod(F(torch.zeros(n, dtype=torch.float64)).shape))
    _check_budget(n, V, max_bytes)
    value, grad, hess = _derivatives(F, n, _chunk(f, n, V, max_bytes))
    g_all = grad.reshape(*value.shape, 2, p).numpy()
    H = hess.reshape(*value.shape, 2, p, 2, p).numpy()
    H11, H22, H12 = H[..., 0, :, 0, :], H[..., 1, :, 1, :], H[..., 0, :, 1, :]
    scale = (
        1.0
        + float(np.max(np.abs(H), initial=0.0))
        + float(np.max(np.abs(g_all), initial=0.0))
    )
    mismatch = max(
        float(np.max(np.abs(H11 - H22))),
        float(np.max(np.abs(g_all[..., 0, :] - g_all[..., 1, :]))),
    )
    if mismatch > SYMMETRY_RTOL * scale:
        hint = (
            "; check that units lists every per-unit parameter (a bias "
            f"too) with its dim: {f!r}"
            if module
            else ", or W's columns are not the neurons"
        )
        raise NotSymmetricError(
            f"the derivatives of two {'units' if module else 'neurons'} at "
            f"W = 0 differ by {mismatch:.3g}: f is "
            f"not symmetric under permuting them (Definition 1){hint}"
        )
    A_s = 0.5 * (H11 + np.swapaxes(H11, -1, -2)) / 2
    B = 0.5 * (H12 + np.swapaxes(H12, -1, -2)) / 2
    out = Expansion(
        f0=value.numpy().copy(), g=g_all[..., 0, :].copy(), A=A_s - B, B=B, d=d
    )
    if check:
        rng = np.random.default_rng(seed)
        if module:
            check_module_symmetry(f, x, rng)  # type: ignore[arg-type]
        else:
            check_symmetry(f, x, p, rng)
        check_smooth(f, x, out, rng)
    return out


@checks(seed=natural, max_bytes=integer)
def expand(
    f: Module | nn.Module,
    x: Any,
    p: int | None = None,
    d: int | None = None,
    check: bool = True,
    seed: int = 0,
    *,
    units: Sequence[Any] | None = None,
    max_bytes: int = MAX_BYTES,
) -> Expansion:
    """Exact Taylor coefficients ``f0, g, A, B`` of a symmetric module at
    ``W = 0`` (Eq. 20).

    Parameters
    ----------
    f : torch.nn.Module, ModuleUnits, or callable ``f(W, x) -> tensor``
        The module.  A **torch module** is expanded in its units (see
        :class:`ModuleUnits`): ``units`` says which parameters form one unit
        (automatic for ``nn.Sequential(Linear, act, Linear)``), parameters not
        listed keep their values, any floating dtype is computed in float64,
        and the width is the module's own number of units.  A **function**
        receives ``W`` of shape ``(p, d)`` (neurons as columns, float64) for
        any width ``d``.  The output is a scalar or a ``(V,)`` vector (a
        module's output is flattened; one element gives a scalar).
    x : any
        One input, passed to ``f`` (to a module as ``module(*x)`` when ``x`` is
        a tuple, else ``module(x)``).  Torch tensors, also inside tuples and
        lists, are detached.  Refused if a tensor, array or number in it is NaN
        or inf (``ValueError``) or complex (``TypeError``).
    p : int
        Number of parameters of one neuron (the rows of ``W``); required for a
        function, read from the units for a module (checked when given).
    d : int, optional
        For a function, the width at which the expansion is taken (default 2:
        two neurons show every block; ``f0`` is ``f(0)`` at this width).  For a
        module, the number of units, when a unit owns several consecutive
        indices (``d = num_heads`` for attention heads); see
        :class:`ModuleUnits`.
    check : bool, default True
        Verify permutation symmetry (at a random point; for a module also that
        no per-unit parameter was left out of ``units``) and differentiability
        at the origin (one-sided difference quotients at three scales along two
        random directions, against autograd).
    seed : int >= 0
        Seed of the random points used by the checks.
    units : sequence, optional
        Which parameters of a torch module form one unit: ``(name, dim)``
        pairs, ``(name, dim, blocks)`` triples or ``(pattern, None)`` (see
        :class:`ModuleUnits`).
    max_bytes : int, default 2 GiB
        Memory budget: ``expand`` refuses up front when the Hessian in the
        ``2 p`` weights of two units (``V (2 p)^2`` float64 entries) would
        exceed it.

    Returns
    -------
    Expansion
        ``f0, g, A, B`` as float64 numpy arrays (leading ``V`` axis for vector
        outputs), whatever the dtype of the module; ``d`` is the width used.

    Raises
    ------
    NotSymmetricError
        If ``f`` is not invariant under permuting neurons (or the module's
        units).
    NotSmoothError
        If ``f`` or its derivatives at ``W = 0`` are not finite, or autograd's
        coefficients disagree with difference quotients (a kink such as ReLU).
    TypeError
        If ``f`` is neither a module nor callable, ``p`` is missing for a
        function, ``x`` or the output is complex, or an argument has the wrong
        type.
    ValueError
        If ``x`` holds NaN or inf, ``f`` indexes ``W`` beyond ``p`` rows, the
        Hessian would need more than ``max_bytes``, or ``units`` is wrong (an
        unknown name, a parameter listed twice or left out, sizes that do not
        match).

    Examples
    --------
    >>> net = nn.Sequential(
    ...     nn.Linear(3, 8, bias=False), nn.Tanh(), nn.Linear(8, 1, bias=False)
    ... )
    >>> e = expand(net, torch.tensor([1.0, 2.0, 3.0]))
    >>> e.A[:3, 3]  # Prop. 1: A = (tanh'(0)/2) [[0, x], [x^T, 0]]
    array([0.5, 1. , 1.5])
    """
    fn, p, d, module = unit_function(f, p, d, units)
    x = finite_input("x", x)
    return expand_at(fn, x, p, d, check, seed, max_bytes, module)


def __getattr__(name: str) -> Any:
    """``expand_dataset`` moved to :mod:`nqf_lite.expansion.dataset`."""
    if name == "expand_dataset":
        from nqf_lite.expansion.dataset import expand_dataset

        return expand_dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
