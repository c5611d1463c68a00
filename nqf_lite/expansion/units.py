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
  ``f(W, x)``; what the ``units`` argument means, and how it is checked, is
  :mod:`nqf_lite.expansion.unit_spec`'s.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nqf_lite._checks import as_array, check_device, describe, module_input
from nqf_lite.expansion.unit_spec import resolve_units

__all__ = ["ModuleUnits", "module_units"]


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
        Entries ``(name, dim)``, ``(name, dim, blocks)`` or
        ``(pattern, None)``:

        - ``(name, dim)``: the size of parameter ``name`` along ``dim`` splits
          into ``d`` equal consecutive slices, one per unit;
        - ``(name, dim, blocks)``: the axis holds ``blocks`` consecutive
          blocks, each split that way (e.g. ``("in_proj_weight", 0, 3)``: the
          stacked query, key and value projections of
          ``nn.MultiheadAttention``);
        - ``(pattern, None)`` with one ``*`` in the pattern: unit ``i`` owns
          the whole parameter named with ``*`` replaced by ``i`` (e.g.
          ``("experts.*.weight", None)`` for an ``nn.ModuleList`` of experts).

        Default: for
        ``nn.Sequential(Linear or ConvNd, parameter-free layers, Linear)``, the
        hidden units ``[("0.weight", 0), ("0.bias", 0), ("2.weight", 1)]``
        (without the bias entry when the first layer has none); any other
        module must say.
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
        self.d, self._parts, self._owned = resolve_units(module, units, d)
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
        ``(name, dim)``, ``(name, dim, blocks)`` or ``(pattern, None)``: which
        parameters form one unit; automatic for
        ``nn.Sequential(Linear, act, Linear)``.
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
