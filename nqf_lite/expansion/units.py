"""The units of a torch module: which parameters one neuron, head, expert or
channel owns, and the matrix ``W`` (p, d) they form (Definition 1).

Theorem 1 (Eq. 20) expands a module in the columns of ``W``, one per
interchangeable unit.  :class:`ModuleUnits` names them for any
``torch.nn.Module`` (``units=[("0.weight", 0), ("2.weight", 1)]``: unit ``i``
owns row ``i`` of ``0.weight`` and column ``i`` of ``2.weight``; automatic for
``nn.Sequential(Linear, act, Linear)``) and evaluates the module as a function
``f(W, x)`` of its units, in float64, with
:func:`torch.func.functional_call`.

- :class:`ModuleUnits`, :func:`module_units`: a module's units as ``W`` and as
  ``f(W, x)``.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nqf_lite._checks import (
    as_array,
    check_device,
    describe,
    integer,
    module_input,
    width,
)

__all__ = ["ModuleUnits", "module_units"]

#: layers whose output units the automatic ``units`` of an ``nn.Sequential``
#: reads (dim 0)
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
        f"units is required for a {type(module).__name__}: the automatic "
        "choice covers "
        "nn.Sequential(Linear or Conv, parameter-free layers, Linear) only. "
        "List the parameters of one "
        "unit as (name, dim) pairs, e.g. units=[('0.weight', 0), ('0.bias', "
        "0), ('2.weight', 1)]; "
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
        f"{where}: the module has no parameter {name!r}{hint} Its "
        "parameters are: "
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
            f"{where} must be a pair (name, dim) or a triple (name, dim, "
            f"blocks), got {entry!r}"
        )
    name, dim = entry[0], entry[1]
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"{where}: the parameter name must be a non-empty string, got "
            f"{name!r}"
        )
    blocks = integer(f"{where} blocks", entry[2]) if len(entry) == 3 else 1
    if "*" in name:
        if name.count("*") != 1 or dim is not None or blocks != 1:
            raise ValueError(
                f"{where}: a name with one '*' (like 'experts.*.weight') "
                "gives unit i the whole parameter "
                f"with '*' replaced by i, so write ({name!r}, None); got "
                f"{tuple(entry)!r}"
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
                f"{where}: the parameters matching {name!r} must be "
                f"numbered 0, 1, 2, ..., got {idx}"
            )
        shapes = {tuple(params[n].shape) for _, n in found}
        if len(shapes) != 1:
            raise ValueError(
                f"{where}: the parameters matching {name!r} have different "
                f"shapes {sorted(shapes)}"
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
            f"{where}: dim must be an axis of {name!r} (shape {shape}), an "
            f"integer, got {dim!r}"
        )
    if not -len(shape) <= dim < len(shape):
        raise ValueError(
            f"{where}: dim = {dim} is not an axis of {name!r}, whose shape "
            f"is {shape}"
        )
    dim = int(dim) % len(shape)
    if shape[dim] % blocks:
        raise ValueError(
            f"{where}: {name!r} has {shape[dim]} entries along dim {dim}, "
            f"which do not split into blocks = {blocks}"
        )
    return name, (name,), dim, blocks, shape, shape[dim] // blocks


def _resolve(
    module: Any, units: Sequence[Any] | None, d: Any
) -> tuple[int, list[_Part], frozenset[str]]:
    """Check a module and its ``units`` once: ``(d, parts, owned names)``.

    The contract of :class:`ModuleUnits`: ``module`` an ``nn.Module`` with
    no meta tensors, every entry of ``units`` a known real floating
    parameter listed once, and the entries agreeing on the number of units.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"module must be a torch.nn.Module, got {type(module).__name__}"
        )
    params = dict(module.named_parameters())
    spec = _default_units(module) if units is None else units
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (list, tuple)):
        raise TypeError(
            "units must be a list of (name, dim) pairs, got "
            f"{type(spec).__name__}"
        )
    if len(spec) == 0:
        raise ValueError("units must list at least one (name, dim) pair")
    entries = [_entry(f"units[{i}]", e, params) for i, e in enumerate(spec)]
    owner: dict[str, str] = {}
    for i, (label, names, *_rest) in enumerate(entries):
        for n in names:
            if n in owner:
                raise ValueError(
                    f"units[{i}] lists {n!r} again ({owner[n]} already "
                    "does): a parameter belongs "
                    "to the units once"
                )
            owner[n] = f"units[{i}]"
    for n, t in list(module.named_parameters()) + list(module.named_buffers()):
        if t.is_meta:
            raise ValueError(
                f"module: parameter {n!r} (shape {tuple(t.shape)}) is on "
                "the meta device and holds no values; "
                "materialise the module first "
                "(module.to_empty(device='cpu') and initialise its weights)"
            )
    for n in owner:
        t = params[n]
        if t.is_complex() or not t.is_floating_point():
            raise TypeError(
                f"parameter {n!r} must be real floating point, got dtype "
                f"{t.dtype}"
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
                f"units: the sizes do not match ({sizes}): every entry must "
                "give the same number of units; "
                "if a unit owns several consecutive indices (e.g. an "
                "attention head), pass d, the number of units"
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
                    f"units[{i}]: {lab!r} {what}, which do not split into d "
                    f"= {d} units"
                )
    parts = [
        _Part(lab, names, dim, blocks, shape, 1 if dim is None else c // d)
        for lab, names, dim, blocks, shape, c in entries
    ]
    return int(d), parts, frozenset(owner)


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
        self.d, self._parts, self._owned = _resolve(module, units, d)
        self.module = module
        self.p = sum(part.size for part in self._parts)

    @property
    def owned(self) -> frozenset[str]:
        """Names of the parameters the units hold (the others are shared)."""
        return self._owned

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
                f"W must have shape (p, d) = ({self.p}, {self.d}) for these "
                f"units, got {tuple(W.shape)}"
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
            tuple(module_input(f"x[{i}]", v) for i, v in enumerate(x))
            if isinstance(x, tuple)
            else (module_input("x", x),)
        )
        for i, a in enumerate(args):
            check_device(f"x[{i}]" if isinstance(x, tuple) else "x", a)
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
                    expects = (
                        " (its first Linear layer expects "
                        f"in_features = {layer.in_features} on the "
                        "last axis)"
                    )
                    break
            raise ValueError(
                "the module cannot be evaluated on x = "
                f"{describe(args[0] if len(args) == 1 else args)}"
                f"{expects}; torch raised RuntimeError: "
                f"{str(exc).splitlines()[0]}. Check the input's size and "
                "dtype (floating inputs are cast to float64; integer ones "
                "are passed as they "
                f"are){'' if first is None else '; the module has ' + shapes}"
            ) from exc
        if not isinstance(out, torch.Tensor):
            raise TypeError(
                "the module must return one tensor, got "
                f"{type(out).__name__}; wrap it in a module that returns "
                "one (nn.MultiheadAttention returns a pair (output, "
                "weights): keep the output)"
            )
        if out.is_complex() or not out.is_floating_point():
            raise TypeError(
                "the module must return a real floating tensor, got dtype "
                f"{out.dtype}"
            )
        return out.reshape(()) if out.numel() == 1 else out.reshape(-1)

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{part.label}"
            + ("[*]" if part.dim is None else f"[dim {part.dim}]")
            + f" ({part.size})"
            for part in self._parts
        )
        return (
            f"ModuleUnits({type(self.module).__name__}: d = {self.d} "
            f"units of p = {self.p}: {parts})"
        )


def module_units(
    module: nn.Module, units: Sequence[Any] | None = None, d: int | None = None
) -> ModuleUnits:
    """The units of a torch module (see :class:`ModuleUnits`): ``W``, ``p``,
    ``d`` and ``f(W, x)``.

    Parameters
    ----------
    module : torch.nn.Module
    units : sequence of tuples, optional
        ``(name, dim)``, ``(name, dim, blocks)`` or ``(pattern, None)``:
        which parameters form one unit; automatic for ``nn.Sequential(Linear,
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
    >>> u = module_units(net)  # rows of 0.weight, 0.bias; columns of 2.weight
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
