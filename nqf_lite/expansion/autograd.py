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
experts, channels) are named by :class:`ModuleUnits`: ``units=[("0.weight", 0),
("2.weight", 1)]`` says that unit ``i`` owns row ``i`` of ``0.weight`` and
column ``i`` of ``2.weight`` (automatic for ``nn.Sequential(Linear, act,
Linear)``).  A module is evaluated with :func:`torch.func.functional_call` in
float64, whatever its dtype.

- :func:`expand`, :class:`Expansion`: the coefficients at one input;
- :func:`expand_dataset`: the :class:`~nqf_lite.NQF` of a data set;
- :func:`module_units`, :class:`ModuleUnits`: a module's units as ``W`` (p, d)
  and as ``f(W, x)``;
- :func:`truncation_error`: the remainder of Theorem 1;
- :class:`NotSymmetricError`, :class:`NotSmoothError`: the two ways a module
  fails Theorem 1.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nqf_lite._checks import as_array, integer, width
from nqf_lite.expansion.form import NQF, moments

__all__ = [
    "Expansion",
    "ModuleUnits",
    "NotSmoothError",
    "NotSymmetricError",
    "expand",
    "expand_dataset",
    "module_units",
    "truncation_error",
]

Module = Callable[[torch.Tensor, Any], torch.Tensor]

#: relative tolerance of the permutation-symmetry check
SYMMETRY_RTOL = 1e-9

#: default memory budget of :func:`expand` (its Hessian has ``V (d p)^2``
#: float64 entries)
MAX_BYTES = 2 * 2**30

#: step sizes of the smoothness check (one-sided difference quotients along
#: random directions)
SMOOTH_STEPS = (1e-2, 1e-3, 1e-4)


class NotSymmetricError(ValueError):
    """The module is not invariant under permuting its neurons (Definition
    1)."""


class NotSmoothError(ValueError):
    """The module is not twice differentiable at ``W = 0`` (e.g. ReLU); Theorem
    1 needs C^3."""


@dataclass(frozen=True)
class Expansion:
    """Taylor coefficients of a symmetric module at ``W = 0`` (Eq. 20).

    Attributes
    ----------
    f0 : ndarray, shape () or (V,)
        ``f(0; x)``.
    g : ndarray, shape (p,) or (V, p)
        Gradient of one neuron at the origin; ``g = 0`` under ZGZ.
    A : ndarray, shape (p, p) or (V, p, p)
        The structure matrix ``A = A_s - B`` of Eq. 20 (symmetric).
    B : ndarray, shape (p, p) or (V, p, p)
        Half the cross-neuron Hessian block; ``B = 0`` under ZGZ.
    d : int
        The width at which the expansion was taken.  ``f0`` depends on it
        (``f(0) = d phi(0)`` for an additive module), and for a module that
        is not a plain sum over neurons so may ``g, A, B``.
    """

    f0: np.ndarray
    g: np.ndarray
    A: np.ndarray
    B: np.ndarray
    d: int = 2

    @property
    def p(self) -> int:
        """Number of parameters of one neuron."""
        return int(self.A.shape[-1])

    @property
    def V(self) -> int | None:
        """Output dimension, or ``None`` for a scalar module."""
        return None if self.A.ndim == 2 else int(self.A.shape[0])

    @property
    def zgz(self) -> bool:
        """True when zero gradient at zero holds: ``g = 0`` and ``B = 0``
        (Property 1)."""
        tol = 1e-12 * (1.0 + float(np.max(np.abs(self.A), initial=0.0)))
        return bool(
            np.max(np.abs(self.g), initial=0.0) <= tol
            and np.max(np.abs(self.B), initial=0.0) <= tol
        )

    def predict(self, W: np.ndarray) -> np.ndarray:
        """The quadratic form ``f0 + g.mu + mu^T B mu + Tr[M A]`` at weights
        ``W`` (p, d).

        ``W`` must have the width ``d`` the expansion was taken at, because
        ``f0`` (and for non-additive modules the coefficients) depend on it.
        """
        W = as_array("W", W, ndim=2)
        if W.shape != (self.p, self.d):
            raise ValueError(
                f"W must have shape (p, d) = ({self.p}, {self.d}), the width this expansion was "
                f"taken at, got {W.shape}; f(0) and, for non-additive modules, g, A, B can depend "
                f"on the width, so call expand(f, x, p, d={W.shape[1] if W.shape[0] == self.p else 'd'})"
            )
        M, mu = moments(W)
        return (
            self.f0
            + self.g @ mu
            + np.einsum("...ij,i,j->...", self.B, mu, mu)
            + np.einsum("...ij,ij->...", self.A, M)
        )

    def __str__(self) -> str:
        kind = "scalar output" if self.V is None else f"V = {self.V} outputs"
        if self.zgz:
            zgz = "ZGZ holds (g = 0, B = 0): f = f0 + Tr[M A] + O(|W|^3)"
        else:
            zgz = (
                f"ZGZ violated: max|g| = {np.max(np.abs(self.g)):.3g}, "
                f"max|B| = {np.max(np.abs(self.B)):.3g} (general form, Eq. 20)"
            )
        return f"Expansion(p = {self.p}, {kind}; {zgz})"


def _describe(x: Any) -> str:
    """Shape, dtype and device of an input, for error messages."""
    if isinstance(x, (tuple, list)):
        return "(" + ", ".join(_describe(v) for v in x) + ")"
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)}, dtype {x.dtype}, device {x.device.type}"
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape}, dtype {x.dtype}"
    return type(x).__name__


def _check_device(x: Any, name: str) -> None:
    """Refuse tensors on the meta device (they hold no values) anywhere in
    ``x``."""
    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            _check_device(v, f"{name}[{i}]")
    elif isinstance(x, torch.Tensor) and x.is_meta:
        raise ValueError(
            f"{name} is on the meta device (shape {tuple(x.shape)}): it holds no values to expand at; "
            "pass real data (e.g. x.to_empty(device='cpu') and fill it, or a CPU tensor)"
        )


def _call(f: Module, W: torch.Tensor, x: Any) -> torch.Tensor:
    try:
        out = f(W, x)
    except IndexError as exc:
        p, d = W.shape
        raise ValueError(
            f"f(W, x) raised IndexError ({exc}) for W of shape (p, d) = ({p}, {d}): check p = {p}, "
            "the number of parameters of one neuron (the rows of W) that f indexes"
        ) from exc
    except RuntimeError as exc:
        if isinstance(f, ModuleUnits):
            raise
        p, d = W.shape
        raise ValueError(
            f"f(W, x) failed for x = {_describe(x)} and W of shape (p, d) = ({p}, {d}), float64: torch raised "
            f"RuntimeError: {str(exc).splitlines()[0]}; check the size and dtype of x and p = {p}"
        ) from exc
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"f(W, x) must return a torch tensor, got {type(out).__name__}"
        )
    if out.is_complex() or not out.is_floating_point():
        raise TypeError(
            f"f(W, x) must return a real floating tensor, got dtype {out.dtype}"
        )
    if out.ndim > 1:
        raise ValueError(
            f"f(W, x) must return a scalar or a (V,) vector, got shape {tuple(out.shape)}"
        )
    return out.to(torch.float64)


def _detach_input(x: Any) -> Any:
    """``x`` with every torch tensor (also inside tuples and lists) detached
    from autograd."""
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detach_input(v) for v in x)
    return x


def _check_input(x: Any, name: str = "x") -> None:
    """Refuse NaN or inf (``ValueError``) and complex values (``TypeError``)
    anywhere in ``x``."""
    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            _check_input(v, f"{name}[{i}]")
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
            f"{name} contains NaN or inf: the expansion of f at such an input is undefined"
        )


def _prepare_input(x: Any) -> Any:
    """``x`` detached from autograd, after :func:`_check_input`."""
    x = _detach_input(x)
    _check_device(x, "x")
    _check_input(x)
    return x


def _check_budget(n: int, V: int, max_bytes: int) -> None:
    """Refuse up front a Hessian of ``V n^2`` float64 entries above
    ``max_bytes``."""
    need = 8 * V * n * n
    if need > max_bytes:
        raise ValueError(
            f"the Hessian of f in the 2 p = {n:,} weights of two neurons ({V} output(s)) has {V * n * n:,} "
            "float64 entries "
            f"and would need {need / 2**30:,.2f} GiB, more than max_bytes = {max_bytes / 2**30:,.2f} GiB; "
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
            f"f(W = 0; x) = {value.numpy()} is not finite: the module is undefined at the origin "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0), a non-finite derivative at W = 0; "
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
            "non-finite derivative at W = 0: the gradient or Hessian of f at the origin is NaN or inf "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0, or sqrt at 0); Theorem 1 needs a C^3 module"
        )
    return value, grad, hess


def _check_symmetry(
    f: Module, x: Any, p: int, rng: np.random.Generator
) -> None:
    """Compare f at a random width-3 point with f at permuted columns."""
    W = torch.as_tensor(0.3 * rng.standard_normal((p, 3)), dtype=torch.float64)
    base = _call(f, W, x).detach().numpy()
    for perm in ([1, 0, 2], [1, 2, 0]):
        other = _call(f, W[:, perm], x).detach().numpy()
        gap = float(np.max(np.abs(other - base)))
        if gap > SYMMETRY_RTOL * (1.0 + float(np.max(np.abs(base)))):
            raise NotSymmetricError(
                f"f is not symmetric under permuting neurons: f(W P) - f(W) = {gap:.3g} for the "
                f"column permutation {perm} at a random width-3 W; Theorem 1 needs S_d symmetry "
                "(Definition 1). Check that W's columns are the neurons."
            )


def _check_smooth(
    f: Module, x: Any, e: Expansion, rng: np.random.Generator
) -> None:
    """Compare autograd's coefficients with one-sided difference quotients at
    three scales.

    Along a random direction ``W`` and for ``s = +1, -1``, a C^3 module has

    .. math::

        \\frac{f(shW) - f_0}{sh} - \\ell = O(h), \\qquad
        \\frac{f(shW) - f_0 - sh\\,\\ell}{h^2} - q = O(h),

    with ``l = g.mu`` and ``q = mu^T B mu + Tr[M A]`` from autograd.  At a kink
    autograd returns one branch's derivative (``relu'(0) = 0``, ``sign(0) =
    0``) and one of the gaps stays put as ``h`` shrinks: that is flagged.
    One-sided quotients see kinks of either parity: ``v relu(u.x)`` (neither
    even nor odd) as well as the odd ``v |u.x|``, to which a central second
    difference is blind.
    """
    for _ in range(2):
        W = rng.standard_normal((e.p, e.d))
        M, mu = moments(W)
        lin = np.atleast_1d(e.g @ mu)
        quad = np.atleast_1d(
            np.einsum("...ij,i,j->...", e.B, mu, mu)
            + np.einsum("...ij,ij->...", e.A, M)
        )
        Wt = torch.as_tensor(W, dtype=torch.float64)
        f0 = np.atleast_1d(e.f0)
        floor = 1e-6 * (1.0 + np.abs(f0) + np.abs(lin) + np.abs(quad))
        for sign in (1.0, -1.0):
            gaps = []
            for h in SMOOTH_STEPS:
                fh = np.atleast_1d(_call(f, sign * h * Wt, x).detach().numpy())
                first = np.abs((fh - f0) / (sign * h) - lin)
                second = np.abs((fh - f0 - sign * h * lin) / (h * h) - quad)
                gaps.append((first, second))
            for order, name in ((0, "first"), (1, "second")):
                big, mid, small = (gap[order] for gap in gaps)
                stuck = (
                    (small > floor) & (small > 0.3 * mid) & (mid > 0.3 * big)
                )
                if np.any(stuck):
                    raise NotSmoothError(
                        f"f is not differentiable at W = 0: its {name}-order autograd coefficient disagrees "
                        f"with one-sided difference quotients by {np.max(small):.3g}, and the gap does not "
                        f"shrink as the step goes from {SMOOTH_STEPS[0]:g} to {SMOOTH_STEPS[-1]:g}. A kink at "
                        "the origin (e.g. ReLU, |u.x|) makes the quadratic form wrong; Theorem 1 needs a C^3 module."
                    )


# -----------------------------------------------------------------------------
# torch modules : layers whose output units the automatic ``units`` of an
# ``nn.Sequential`` : reads (dim 0)
_FIRST_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclass(frozen=True)
class _Part:
    """One entry of ``units``: a sliced parameter, or one whole parameter per
    unit (``*``)."""

    label: str
    names: tuple[str, ...]
    dim: int | None
    blocks: int
    shape: tuple[int, ...]
    per_unit: int

    @property
    def unit_shape(self) -> tuple[int, ...]:
        """Shape of one unit's share before it is flattened (C order) into a
        column of ``W``."""
        if self.dim is None:
            return self.shape
        pre, post = self.shape[: self.dim], self.shape[self.dim + 1 :]
        return pre + (self.blocks, self.per_unit) + post

    @property
    def size(self) -> int:
        return int(np.prod(self.unit_shape, dtype=int))

    def split(self, params: dict[str, torch.Tensor], d: int) -> torch.Tensor:
        """The ``(size, d)`` block of ``W`` held by this entry's
        parameter(s)."""
        if self.dim is None:
            return torch.stack(
                [params[n].reshape(-1) for n in self.names], dim=1
            )
        pre = self.shape[: self.dim]
        view = params[self.names[0]].reshape(
            pre + (self.blocks, d, self.per_unit) + self.shape[self.dim + 1 :]
        )
        return torch.movedim(view, len(pre) + 1, 0).reshape(d, -1).T

    def join(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """Inverse of :meth:`split`: the parameter(s) from the ``(size, d)``
        block ``rows``."""
        d = rows.shape[1]
        if self.dim is None:
            return {
                n: rows[:, i].reshape(self.shape)
                for i, n in enumerate(self.names)
            }
        cube = rows.T.reshape((d,) + self.unit_shape)
        return {
            self.names[0]: torch.movedim(cube, 0, self.dim + 1).reshape(
                self.shape
            )
        }


def _default_units(module: nn.Module) -> list[tuple[str, int]]:
    """``units`` of ``nn.Sequential(Linear or ConvNd, parameter-free layers,
    Linear)``: the hidden units."""
    layers = [
        (n, c)
        for n, c in module.named_children()
        if any(True for _ in c.parameters())
    ]
    if isinstance(module, nn.Sequential) and len(layers) == 2:
        (n1, first), (n2, last) = layers
        if isinstance(first, _FIRST_LAYERS) and isinstance(last, nn.Linear):
            hidden = (
                first.out_features
                if isinstance(first, nn.Linear)
                else first.out_channels
            )
            if hidden == last.in_features:
                spec = [(f"{n1}.weight", 0)]
                if first.bias is not None:
                    spec.append((f"{n1}.bias", 0))
                return spec + [(f"{n2}.weight", 1)]
    shapes = ", ".join(
        f"{n} {tuple(t.shape)}" for n, t in module.named_parameters()
    )
    raise ValueError(
        f"units is required for a {type(module).__name__}: the automatic choice covers "
        "nn.Sequential(Linear or Conv, parameter-free layers, Linear) only. List the parameters of one "
        "unit as (name, dim) pairs, e.g. units=[('0.weight', 0), ('0.bias', 0), ('2.weight', 1)]; "
        f"the module's parameters are: {shapes or 'none'}"
    )


def _unknown(
    where: str, name: str, params: dict[str, torch.Tensor]
) -> ValueError:
    close = difflib.get_close_matches(name, list(params), n=3)
    hint = (
        f"; did you mean {', '.join(repr(c) for c in close)}?"
        if close
        else "."
    )
    return ValueError(
        f"{where}: the module has no parameter {name!r}{hint} Its parameters are: "
        + (
            ", ".join(f"{n} {tuple(t.shape)}" for n, t in params.items())
            or "none"
        )
    )


def _entry(where: str, entry: Any, params: dict[str, torch.Tensor]) -> tuple:
    """Validate one entry of ``units``: ``(label, names, dim, blocks, shape,
    count)``."""
    if (
        isinstance(entry, (str, bytes))
        or not isinstance(entry, (tuple, list))
        or len(entry) not in (2, 3)
    ):
        raise TypeError(
            f"{where} must be a pair (name, dim) or a triple (name, dim, blocks), got {entry!r}"
        )
    name, dim = entry[0], entry[1]
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"{where}: the parameter name must be a non-empty string, got {name!r}"
        )
    blocks = integer(f"{where} blocks", entry[2]) if len(entry) == 3 else 1
    if "*" in name:
        if name.count("*") != 1 or dim is not None or blocks != 1:
            raise ValueError(
                f"{where}: a name with one '*' (like 'experts.*.weight') gives unit i the whole parameter "
                f"with '*' replaced by i, so write ({name!r}, None); got {tuple(entry)!r}"
            )
        pattern = re.compile(re.escape(name).replace(r"\*", r"(\d+)"))
        found = sorted(
            (int(mt.group(1)), n)
            for n in params
            if (mt := pattern.fullmatch(n))
        )
        if not found:
            raise _unknown(where, name, params)
        idx = [i for i, _ in found]
        if idx != list(range(len(idx))):
            raise ValueError(
                f"{where}: the parameters matching {name!r} must be numbered 0, 1, 2, ..., got {idx}"
            )
        shapes = {tuple(params[n].shape) for _, n in found}
        if len(shapes) != 1:
            raise ValueError(
                f"{where}: the parameters matching {name!r} have different shapes {sorted(shapes)}"
            )
        return (
            name,
            tuple(n for _, n in found),
            None,
            1,
            shapes.pop(),
            len(found),
        )
    if name not in params:
        raise _unknown(where, name, params)
    shape = tuple(params[name].shape)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(
            f"{where}: dim must be an axis of {name!r} (shape {shape}), an integer, got {dim!r}"
        )
    if not -len(shape) <= dim < len(shape):
        raise ValueError(
            f"{where}: dim = {dim} is not an axis of {name!r}, whose shape is {shape}"
        )
    dim = int(dim) % len(shape)
    if shape[dim] % blocks:
        raise ValueError(
            f"{where}: {name!r} has {shape[dim]} entries along dim {dim}, which do not split into blocks = {blocks}"
        )
    return name, (name,), dim, blocks, shape, shape[dim] // blocks


class ModuleUnits:
    """The interchangeable units of a torch module, and the matrix ``W`` (p, d)
    they form.

    A unit (neuron, head, expert, channel, ...) owns a share of some
    parameters:
    ``("0.weight", 0)`` gives unit ``i`` the ``i``-th slice of ``0.weight``
    along dim 0 (a row), ``("2.weight", 1)`` the ``i``-th slice along dim 1 (a
    column). Column ``i`` of ``W`` stacks unit ``i``'s shares, each flattened
    in C order, in the order of ``units``; the module must be unchanged by any
    permutation of the units (Definition 1).  Parameters that are not listed
    are shared: held at their current values, they enter ``f0`` and the
    coefficients like the input does.

    Parameters
    ----------
    module : torch.nn.Module
        Any floating dtype; the unit function computes in float64.
    units : sequence, optional
        Entries ``(name, dim)``, ``(name, dim, blocks)`` or ``(pattern,
        None)``:

        - ``(name, dim)``: the size of parameter ``name`` along ``dim`` splits
          into ``d`` equal consecutive slices, one per unit;
        - ``(name, dim, blocks)``: the axis holds ``blocks`` consecutive
          blocks, each split that way (e.g. ``("in_proj_weight", 0, 3)``: the
          stacked query, key and value projections of
          ``nn.MultiheadAttention``);
        - ``(pattern, None)`` with one ``*`` in the pattern: unit ``i`` owns
          the whole parameter named with ``*`` replaced by ``i`` (e.g.
          ``("experts.*.weight", None)`` for an ``nn.ModuleList`` of experts).

        Default: for ``nn.Sequential(Linear or ConvNd, parameter-free layers,
        Linear)``, the hidden units ``[("0.weight", 0), ("0.bias", 0),
        ("2.weight", 1)]`` (without the bias entry when the first layer has
        none); any other module must say.
    d : int, optional
        Number of units.  By default every unit owns one index along each
        ``dim`` (neurons, channels, stacked experts); give ``d`` when a unit
        owns several consecutive indices (``d = num_heads`` for attention
        heads).

    Attributes
    ----------
    module : torch.nn.Module
    p : int
        Parameters per unit (the rows of ``W``).
    d : int
        Number of units (the columns of ``W``).

    Notes
    -----
    Called as ``units(W, x)``, the object is the module as a function of its
    units in the convention of :func:`expand` (``W`` of shape ``(p, d)``).  The
    module is evaluated with :func:`torch.func.functional_call` in eval mode
    (dropout off; its training flags are restored afterwards) and with the math
    backend of scaled-dot-product attention, whose second derivatives exist.  A
    tuple ``x`` is unpacked into the module's positional arguments; floating
    tensors and arrays are cast to float64, complex ones refused.  The output
    is flattened: one element gives a scalar, ``V > 1`` elements a ``(V,)``
    vector; a complex or non-floating output, or one that is not a tensor
    (``nn.MultiheadAttention`` returns a tuple), is refused.
    """

    def __init__(
        self,
        module: nn.Module,
        units: Sequence[Any] | None = None,
        d: int | None = None,
    ) -> None:
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"module must be a torch.nn.Module, got {type(module).__name__}"
            )
        params = dict(module.named_parameters())
        spec = _default_units(module) if units is None else units
        if isinstance(spec, (str, bytes)) or not isinstance(
            spec, (list, tuple)
        ):
            raise TypeError(
                f"units must be a list of (name, dim) pairs, got {type(spec).__name__}"
            )
        if len(spec) == 0:
            raise ValueError("units must list at least one (name, dim) pair")
        entries = [
            _entry(f"units[{i}]", e, params) for i, e in enumerate(spec)
        ]
        owner: dict[str, str] = {}
        for i, (label, names, *_rest) in enumerate(entries):
            for n in names:
                if n in owner:
                    raise ValueError(
                        f"units[{i}] lists {n!r} again ({owner[n]} already does): a parameter belongs "
                        "to the units once"
                    )
                owner[n] = f"units[{i}]"
        for n, t in list(module.named_parameters()) + list(
            module.named_buffers()
        ):
            if t.is_meta:
                raise ValueError(
                    f"module: parameter {n!r} (shape {tuple(t.shape)}) is on the meta device and holds no values; "
                    "materialise the module first (module.to_empty(device='cpu') and initialise its weights)"
                )
        for n in owner:
            t = params[n]
            if t.is_complex() or not t.is_floating_point():
                raise TypeError(
                    f"parameter {n!r} must be real floating point, got dtype {t.dtype}"
                )
        counts = [e[5] for e in entries]
        if d is None:
            if len(set(counts)) != 1:
                sizes = ", ".join(
                    f"{lab!r} gives {c}"
                    + ("" if dim is None else f" along dim {dim}")
                    for lab, _, dim, _, _, c in entries
                )
                raise ValueError(
                    f"units: the sizes do not match ({sizes}): every entry must give the same number of units; "
                    "if a unit owns several consecutive indices (e.g. an attention head), pass d, the number of units"
                )
            d = counts[0]
        else:
            d = width("d", d)
            for i, (lab, _, dim, _, _, c) in enumerate(entries):
                if (dim is None and c != d) or c % d:
                    what = (
                        f"matches {c} parameters"
                        if dim is None
                        else f"has {c} entries per block along dim {dim}"
                    )
                    raise ValueError(
                        f"units[{i}]: {lab!r} {what}, which do not split into d = {d} units"
                    )
        self.module = module
        self.d = int(d)
        self._parts = [
            _Part(
                lab,
                names,
                dim,
                blocks,
                shape,
                1 if dim is None else c // self.d,
            )
            for lab, names, dim, blocks, shape, c in entries
        ]
        self.p = sum(part.size for part in self._parts)
        self._owned = frozenset(owner)

    @property
    def units(self) -> list[tuple[Any, ...]]:
        """The resolved ``units`` entries ``(name, dim, blocks)``."""
        return [(part.label, part.dim, part.blocks) for part in self._parts]

    def slices(self) -> dict[str, slice]:
        """Rows of ``W`` held by each entry (by name or pattern), for labelling
        pictures of ``A``."""
        out, start = {}, 0
        for part in self._parts:
            out[part.label] = slice(start, start + part.size)
            start += part.size
        return out

    @property
    def names(self) -> list[str]:
        """The entries' names (patterns for ``*`` entries), in the order of
        ``W``'s rows."""
        return [part.label for part in self._parts]

    def edges(self) -> list[tuple[int, int, str]]:
        """``(start, stop, name)`` of every entry's rows, for labelling
        pictures of ``A`` (:func:`nqf_lite.book.plotting.plot_structure`
        accepts a
        ``ModuleUnits`` as its layout)."""
        return [
            (sl.start, sl.stop, name) for name, sl in self.slices().items()
        ]

    def _state(
        self, overrides: dict[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Every parameter and buffer, detached, floating ones as float64."""
        state = {}
        for name, t in list(self.module.named_parameters()) + list(
            self.module.named_buffers()
        ):
            t = t.detach()
            state[name] = t.to(torch.float64) if t.is_floating_point() else t
        if overrides:
            state.update(overrides)
        return state

    def weights(self) -> np.ndarray:
        """The module's current units as ``W`` (p, d), float64 (a copy)."""
        state = self._state()
        return (
            torch.cat([part.split(state, self.d) for part in self._parts])
            .numpy()
            .copy()
        )

    def _check_W(self, W: Any) -> torch.Tensor:
        if isinstance(W, torch.Tensor):
            if W.is_complex() or not W.is_floating_point():
                raise TypeError(
                    f"W must be a real floating tensor, got dtype {W.dtype}"
                )
            W = W.to(torch.float64)
        else:
            W = torch.as_tensor(as_array("W", W))
        if W.shape != (self.p, self.d):
            raise ValueError(
                f"W must have shape (p, d) = ({self.p}, {self.d}) for these units, got {tuple(W.shape)}"
            )
        return W

    def parameters(
        self, W: Any, overrides: dict[str, torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Every parameter and buffer of the module (float64) with the units
        taken from ``W`` (p, d)."""
        W = self._check_W(W)
        state = self._state(overrides)
        start = 0
        for part in self._parts:
            state.update(part.join(W[start : start + part.size]))
            start += part.size
        return state

    def assign(self, W: Any) -> None:
        """Write ``W`` (p, d) into the module's parameters, in place and in
        their own dtype."""
        new = self.parameters(W)
        with torch.no_grad():
            for name, t in self.module.named_parameters():
                if name in self._owned:
                    t.copy_(new[name].to(t.dtype))

    def __call__(
        self, W: Any, x: Any, overrides: dict[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """The module on one input ``x`` with units ``W`` (p, d): a scalar or a
        ``(V,)`` tensor, float64.

        ``overrides`` (name -> tensor) replaces shared parameters or buffers
        for this call only.
        """
        state = self.parameters(W, overrides)
        args = (
            tuple(_module_input(v, f"x[{i}]") for i, v in enumerate(x))
            if isinstance(x, tuple)
            else (_module_input(x, "x"),)
        )
        for i, a in enumerate(args):
            _check_device(a, f"x[{i}]" if isinstance(x, tuple) else "x")
        try:
            with (
                _evaluating(self.module),
                sdpa_kernel(SDPBackend.MATH),
            ):  # the fused kernels lack 2nd derivatives
                out = torch.func.functional_call(self.module, state, args)
        except RuntimeError as exc:
            shapes = ", ".join(
                f"{n} {tuple(t.shape)}"
                for n, t in self.module.named_parameters()
            )
            first = next(iter(self.module.parameters()), None)
            expects = ""
            for layer in self.module.modules():
                if isinstance(layer, nn.Linear):
                    expects = f" (its first Linear layer expects in_features = {layer.in_features} on the last axis)"
                    break
            raise ValueError(
                f"the module cannot be evaluated on x = {_describe(args[0] if len(args) == 1 else args)}"
                f"{expects}; torch raised RuntimeError: {str(exc).splitlines()[0]}. Check the input's size and "
                f"dtype (floating inputs are cast to float64; integer ones are passed as they are){'' if first is None else '; the module has ' + shapes}"
            ) from exc
        if not isinstance(out, torch.Tensor):
            raise TypeError(
                f"the module must return one tensor, got {type(out).__name__}; wrap it in a module that returns "
                "one (nn.MultiheadAttention returns a pair (output, weights): keep the output)"
            )
        if out.is_complex() or not out.is_floating_point():
            raise TypeError(
                f"the module must return a real floating tensor, got dtype {out.dtype}"
            )
        return out.reshape(()) if out.numel() == 1 else out.reshape(-1)

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{part.label}"
            + ("[*]" if part.dim is None else f"[dim {part.dim}]")
            + f" ({part.size})"
            for part in self._parts
        )
        return f"ModuleUnits({type(self.module).__name__}: d = {self.d} units of p = {self.p}: {parts})"


def module_units(
    module: nn.Module, units: Sequence[Any] | None = None, d: int | None = None
) -> ModuleUnits:
    """The units of a torch module (see :class:`ModuleUnits`): ``W``, ``p``,
    ``d`` and ``f(W, x)``.

    Parameters
    ----------
    module : torch.nn.Module
    units : sequence of ``(name, dim)``, ``(name, dim, blocks)`` or ``(pattern,
    None)``, optional
        Which parameters form one unit; automatic for ``nn.Sequential(Linear,
        act, Linear)``.
    d : int, optional
        Number of units, when a unit owns several consecutive indices
        (attention heads).

    Returns
    -------
    ModuleUnits

    Raises
    ------
    TypeError
        If ``module`` is not an ``nn.Module``, an entry is malformed or a
        listed parameter is not real floating point.
    ValueError
        If a name is unknown, a parameter is listed twice, or the entries give
        different numbers of units (naming the entries and their sizes).

    Examples
    --------
    >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    >>> u = module_units(net)           # rows of 0.weight, 0.bias; columns of 2.weight
    >>> u.p, u.d, u.weights().shape
    (5, 8, (5, 8))
    """
    return ModuleUnits(module, units, d)


@contextlib.contextmanager
def _evaluating(module: nn.Module) -> Iterator[None]:
    """Eval mode for the duration, then every submodule's own training flag
    back."""
    flags = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield
    finally:
        for m, flag in flags:
            m.training = flag


def _module_input(v: Any, name: str) -> Any:
    """A module argument: floating tensors and arrays as float64 tensors;
    complex refused."""
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


def _check_module_symmetry(
    units: ModuleUnits, x: Any, rng: np.random.Generator
) -> None:
    """Permute the units at a random ``W`` (a swap and a cycle); then perturb
    each unlisted parameter.

    A parameter left out of ``units`` that belongs to the units (a per-unit
    bias that happens to be zero, say) keeps the module symmetric at its
    current value but not at others: perturbing it alone and permuting the
    units shows it.
    """
    d = units.d
    W = torch.as_tensor(0.3 * rng.standard_normal((units.p, d)))
    perms = [[1, 0] + list(range(2, d))] + (
        [list(range(1, d)) + [0]] if d > 2 else []
    )

    def gap(
        overrides: dict[str, torch.Tensor] | None = None,
    ) -> tuple[float, float]:
        base = units(W, x, overrides).detach().numpy()
        worst = max(
            float(
                np.max(
                    np.abs(
                        units(W[:, perm], x, overrides).detach().numpy() - base
                    )
                )
            )
            for perm in perms
        )
        return worst, SYMMETRY_RTOL * (1.0 + float(np.max(np.abs(base))))

    worst, tol = gap()
    if worst > tol:
        raise NotSymmetricError(
            f"the module is not symmetric under permuting its units: f(W P) - f(W) = {worst:.3g} at a random W for "
            f"{units!r}. Theorem 1 needs S_d symmetry (Definition 1): check that units lists every per-unit "
            "parameter with its dim, and d (a unit may own several consecutive indices, e.g. an attention head)"
        )
    for name, t in units.module.named_parameters():
        if name in units._owned or not t.is_floating_point() or t.numel() == 0:
            continue
        base = t.detach().to(torch.float64)
        kick = torch.as_tensor(rng.standard_normal(tuple(t.shape))) * (
            0.3 + float(base.abs().mean())
        )
        worst, tol = gap({name: base + kick})
        if worst > tol:
            raise ValueError(
                f"units leaves out {name!r} (shape {tuple(t.shape)}), which belongs to the units: the module is "
                "symmetric at its current value, but permuting the units without it changes f once it varies. "
                f"Add ({name!r}, dim) to units"
            )


# -----------------------------------------------------------------------------
# the expansion
def _target(
    f: Any, p: Any, d: Any, units: Any
) -> tuple[Callable[[torch.Tensor, Any], torch.Tensor], int, int, bool]:
    """``(fn, p, d, is_module)``: the function ``fn(W, x)`` to expand, its
    ``p`` and width ``d``."""
    given = isinstance(f, ModuleUnits)
    if isinstance(f, nn.Module):
        f = ModuleUnits(f, units, d)
    elif units is not None:
        raise ValueError(
            "units applies to a torch.nn.Module f only; a function f(W, x) says its units by the columns of W"
        )
    if isinstance(f, ModuleUnits):
        if p is not None and width("p", p) != f.p:
            raise ValueError(
                f"p = {p} does not match the module's units, which hold p = {f.p} parameters each "
                f"({f!r}); leave p out for a module"
            )
        if given and d is not None and width("d", d) != f.d:
            raise ValueError(
                f"d = {d} does not match the module's d = {f.d} units; leave d out for a module"
            )
        if f.d < 2:
            raise ValueError(
                f"the module has d = {f.d} unit; Theorem 1 compares two units, so it needs d >= 2"
            )
        return f, f.p, f.d, True
    if not callable(f):
        raise TypeError(
            f"f must be a torch.nn.Module or callable as f(W, x), got {type(f).__name__}"
        )
    if p is None:
        raise TypeError(
            "p is required for a function f(W, x): the number of parameters of one neuron (rows of W)"
        )
    p = width("p", p)
    d = 2 if d is None else width("d", d)
    if d < 2:
        raise ValueError(
            f"d must be >= 2 to see the cross-neuron block B, got {d}"
        )
    return f, p, d, False


def _expand(
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
    first two columns."""
    n = 2 * p
    _check_budget(n, 1, max_bytes)  # before f is called on a (p, d) tensor
    rest = torch.zeros(p, d - 2, dtype=torch.float64)

    def F(theta: torch.Tensor) -> torch.Tensor:
        return _call(f, torch.cat([theta.reshape(2, p).T, rest], dim=1), x)

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
            f"; check that units lists every per-unit parameter (a bias too) with its dim: {f!r}"
            if module
            else ", or W's columns are not the neurons"
        )
        raise NotSymmetricError(
            f"the derivatives of two {'units' if module else 'neurons'} at W = 0 differ by {mismatch:.3g}: f is "
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
            _check_module_symmetry(f, x, rng)  # type: ignore[arg-type]
        else:
            _check_symmetry(f, x, p, rng)
        _check_smooth(f, x, out, rng)
    return out


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
    """Exact Taylor coefficients ``f0, g, A, B`` of a symmetric module at ``W =
    0`` (Eq. 20).

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
    >>> net = nn.Sequential(nn.Linear(3, 8, bias=False), nn.Tanh(), nn.Linear(8, 1, bias=False))
    >>> e = expand(net, torch.tensor([1.0, 2.0, 3.0]))
    >>> e.A[:3, 3]                      # Prop. 1: A = (tanh'(0)/2) [[0, x], [x^T, 0]]
    array([0.5, 1. , 1.5])
    """
    fn, p, d, module = _target(f, p, d, units)
    seed = integer("seed", seed, minimum=0)
    max_bytes = integer("max_bytes", max_bytes)
    x = _prepare_input(x)
    return _expand(fn, x, p, d, check, seed, max_bytes, module)


def _rows(xs: Any) -> Sequence[Any]:
    """The inputs as an indexable sequence: a sequence, an array or tensor
    (first axis), or an iterable of batches (a ``DataLoader``: each batch a
    tensor or a tuple whose first element
    holds the inputs, split along its first axis)."""
    if isinstance(xs, (str, bytes)):
        raise TypeError(
            f"xs must be a sequence of inputs, an array or an iterable of batches, got {type(xs).__name__}"
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
            f"xs must be a sequence of inputs, an array or an iterable of batches, got {type(xs).__name__}"
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
                f"xs: batch {b} must be an array or tensor of inputs (first axis), got "
                f"{type(batch).__name__}"
            )
        rows.extend(batch[i] for i in range(batch.shape[0]))
    return rows


#: elementwise activations whose module the factored MLP path recognises
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
    """``(first, act, last)`` when the module is ``Sequential(Linear, act,
    Linear)`` with its hidden units."""
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


def _activation_at_zero(act: nn.Module) -> tuple[float, float]:
    """``phi(0)`` and ``phi'(0)`` of an elementwise activation;
    ``NotSmoothError`` at a kink."""
    z = torch.zeros((), dtype=torch.float64, requires_grad=True)
    with torch.enable_grad():
        value = act(z)
        (slope,) = torch.autograd.grad(value, z)
    h = 1e-4
    with torch.no_grad():
        right = (
            float(act(torch.tensor(h, dtype=torch.float64)))
            - float(value.detach())
        ) / h
        left = (
            float(value.detach())
            - float(act(torch.tensor(-h, dtype=torch.float64)))
        ) / h
    if abs(right - left) > 1e-2 * (1.0 + abs(float(slope))):
        raise NotSmoothError(
            f"the activation {type(act).__name__} has a kink at 0 (one-sided slopes {left:.3g} and {right:.3g}): "
            "Theorem 1 needs a module that is three times differentiable at W = 0"
        )
    return float(value.detach()), float(slope)


def _mlp_factored(
    units: ModuleUnits, xs: Sequence[Any], dtype: Any, progress: Any
) -> NQF | None:
    """Proposition 1 for ``Sequential(Linear, act, Linear)``: the factored NQF,
    in the memory of the inputs."""
    from nqf_lite.expansion.factored import FactoredNQF, Term

    layers = _mlp_layers(units)
    if layers is None:
        return None
    first, act, last = layers
    D, V = first.in_features, last.out_features
    m = len(xs)
    if isinstance(xs, (np.ndarray, torch.Tensor)):
        if xs.ndim != 2 or xs.shape[1] != D:
            raise ValueError(
                f"xs must have shape (m, {D}) for a first layer with in_features = {D}, "
                f"got {tuple(xs.shape)}"
            )
        if isinstance(xs, torch.Tensor):
            _check_device(xs, "xs")
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
                f"xs[{int(np.flatnonzero(bad)[0])}]: x contains NaN or inf: the expansion of f at "
                "such an input is undefined"
            )
    else:
        X = np.empty((m, D), dtype=dtype)
        for i in _progress(range(m), progress, "inputs"):
            try:
                x = _prepare_input(xs[i])
                if isinstance(x, torch.Tensor):
                    if not x.is_floating_point():
                        raise TypeError(
                            f"x must be a real floating tensor, got dtype {x.dtype}"
                        )
                    x = x.cpu().numpy()
                x = np.asarray(x)
                if x.shape != (D,):
                    raise ValueError(
                        f"x must have shape ({D},) (in_features of the first layer), got {x.shape}"
                    )
                if x.dtype.kind not in "fiu":
                    raise TypeError(
                        f"x must hold real numbers, got dtype {x.dtype}"
                    )
                X[i] = x
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"xs[{i}]: {exc}") from exc
    phi0, slope = _activation_at_zero(act)
    bias = first.bias is not None
    Dp = D + int(bias)
    L = (
        np.concatenate([X, np.ones((m, 1), dtype=dtype)], axis=1)
        if bias
        else np.ascontiguousarray(X)
    )
    scalar = V == 1
    g = np.zeros((V, units.p))
    g[np.arange(V), Dp + np.arange(V)] = phi0
    f0 = (
        np.zeros(V)
        if last.bias is None
        else last.bias.detach().to(torch.float64).cpu().numpy()
    )
    term = Term(L, np.arange(Dp), slope * np.eye(V), Dp + np.arange(V))
    out = FactoredNQF(
        [term],
        units.p,
        None if scalar else V,
        g=g,
        f0=f0[0] if scalar else f0,
        dtype=dtype,
    )
    out._gram(
        0, 0
    )  # the one pass over the inputs that every forecast reads (p^2 numbers)
    return out


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


#: number of inputs from which :func:`expand_dataset` shows a progress bar by
#: default
PROGRESS_MIN = 200


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

    The symmetry and smoothness checks run on the first input only (for the
    factored MLP the structure is symmetric by construction and the activation
    is checked).

    Parameters
    ----------
    f : torch.nn.Module, ModuleUnits, or callable ``f(W, x) -> tensor``
        The module (see :func:`expand`).
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
    xs = _rows(xs)
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input")
    fn, p, d, module = _target(f, p, d, units)
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
        out = _mlp_factored(fn, xs, dtype, progress)  # type: ignore[arg-type]
        if out is not None:
            return out
    if factored:
        raise ValueError(
            "factored=True: no factored form is known for this module; the factored path covers "
            "nn.Sequential(Linear, smooth elementwise activation, Linear) with its hidden units"
        )
    m = len(xs)
    exps = []
    for i in _progress(range(m), progress, "inputs"):
        try:
            x = _prepare_input(xs[i])
            exps.append(
                _expand(fn, x, p, d, check and i == 0, 0, max_bytes, module)
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
                    f"the dense NQF of m = {m:,} inputs (p = {p:,}, {V} output(s)) needs {need / 2**30:,.2f} GiB "
                    f"for A, B, g and f0, more than max_bytes = {max_bytes / 2**30:,.2f} GiB. Raise it with "
                    f"expand_dataset(..., max_bytes={int(need * 1.1):,}), expand fewer inputs, or use a module "
                    "whose factored form is known (nn.Sequential(Linear, act, Linear): Proposition 1)"
                )
    return NQF(
        A=np.stack([e.A for e in exps]),
        g=np.stack([e.g for e in exps]),
        B=np.stack([e.B for e in exps]),
        f0=np.stack([e.f0 for e in exps]),
    )


def truncation_error(
    f: Module | nn.Module,
    expansion: Any,
    x: Any,
    W: Any,
    eps_grid: Any,
    correction: Callable[[np.ndarray], Any] | None = None,
    *,
    units: Sequence[Any] | None = None,
) -> np.ndarray:
    """``|f(εW; x) − NQF(εW; x)|`` for every ε (Eq. 20; Thm 1's remainder).

    Parameters
    ----------
    f : torch.nn.Module, ModuleUnits, or callable
        The module, as given to :func:`nqf_lite.expand` (with the same
        ``units``).
    expansion : Expansion
        The Taylor coefficients, e.g. from :func:`nqf_lite.expand`; its
        ``predict(W)`` gives ``f0 + gᵀμ + μᵀBμ + Tr[M A]``.
    x : any
        The module's input.
    W : array_like, shape (p, d)
        Direction in weight space (``d`` the width of the expansion).
    eps_grid : array_like
        Positive scales ε.
    correction : callable, optional
        ``correction(εW)`` added to the NQF prediction, for higher-order terms
        (e.g. :func:`nqf_lite.expansion.models.attention.mha_quartic`).
    units : sequence, optional
        For a torch module: its units, as in :func:`expand`.

    Returns
    -------
    numpy.ndarray
        The error per ε (Euclidean norm over outputs for vector modules).
    """
    W = as_array("W", W, ndim=2)
    eps = as_array("eps_grid", eps_grid)
    if eps.ndim != 1 or eps.size == 0 or not np.all(eps > 0):
        raise ValueError(
            "eps_grid must be a non-empty 1-D array of positive numbers"
        )
    if not isinstance(expansion, Expansion):
        raise TypeError(
            f"expansion must be an Expansion (from expand), got {type(expansion).__name__}"
        )
    if isinstance(f, nn.Module):
        f = ModuleUnits(f, units, expansion.d)
    elif units is not None:
        raise ValueError("units applies to a torch.nn.Module f only")
    if not callable(f):
        raise TypeError(
            f"f must be a torch.nn.Module or callable as f(W, x), got {type(f).__name__}"
        )
    x = _prepare_input(x)
    if expansion.p != W.shape[0]:
        raise ValueError(
            f"expansion has p={expansion.p}, which does not match W with {W.shape[0]} rows"
        )
    errs = []
    with torch.no_grad():
        for e in eps:
            We = e * W
            exact = _call(
                f, torch.as_tensor(We, dtype=torch.float64), x
            ).numpy()
            approx = expansion.predict(We)
            if correction is not None:
                approx = approx + as_array("correction(eps W)", correction(We))
            errs.append(float(np.linalg.norm(np.atleast_1d(exact - approx))))
    return np.array(errs)
