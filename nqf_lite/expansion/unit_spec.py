"""Which parameters one unit of a torch module owns: the ``units`` argument
of :class:`~nqf_lite.expansion.units.ModuleUnits`, read and checked once.

An entry ``(name, dim)``, ``(name, dim, blocks)`` or ``(pattern, None)`` gives
every unit a share of some parameters (see ``ModuleUnits``);
:func:`resolve_units` checks the entries against the module (names, axes,
dtypes, one owner per parameter, one number of units) and returns them as
:class:`UnitPart` objects, which cut a unit's share out of a parameter
(:meth:`UnitPart.split`) and put it back (:meth:`UnitPart.join`).
:func:`default_units` is the automatic choice for
``nn.Sequential(Linear or ConvNd, parameter-free layers, Linear)``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from nqf_lite._checks import integer, width

__all__ = ["UnitPart", "default_units", "resolve_units"]

#: layers whose output units the automatic ``units`` of an ``nn.Sequential``
#: reads (dim 0)
_FIRST_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


@dataclass(frozen=True)
class UnitPart:
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


def default_units(module: nn.Module) -> list[tuple[str, int]]:
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


def resolve_units(
    module: Any, units: Sequence[Any] | None, d: Any
) -> tuple[int, list[UnitPart], frozenset[str]]:
    """Check a module and its ``units`` once: ``(d, parts, owned names)``.

    The contract of :class:`~nqf_lite.expansion.units.ModuleUnits`:
    ``module`` an ``nn.Module`` with no meta tensors, every entry of
    ``units`` a known real floating parameter listed once, and the entries
    agreeing on the number of units.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"module must be a torch.nn.Module, got {type(module).__name__}"
        )
    params = dict(module.named_parameters())
    spec = default_units(module) if units is None else units
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
        UnitPart(lab, names, dim, blocks, shape, 1 if dim is None else c // d)
        for lab, names, dim, blocks, shape, c in entries
    ]
    return int(d), parts, frozenset(owner)
