"""One object per model: its torch forward, its closed-form structure and its NQF twin.

Every architecture of the paper (Props. 1-6) and every row of its Table 3 is a
:class:`Model`.  A model carries

- ``native(W, x)``: the model's own forward pass in torch (float64), with the
  neurons laid out as the paper's row of Table 3 says (``neurons``);
- ``structure(x)``: the closed-form :class:`Structure` ``(A, g, B, f0)`` of the
  quadratic form ``f0 + gᵀμ + μᵀBμ + Tr[M A]`` (Thm 1, Eq. 2; Eq. 20 when
  ``g, B`` are nonzero);
- ``twin(xs)``: the :class:`~nqf_lite.form.NQF` of a data set, built from
  ``structure`` (never re-derived);
- ``sample(rng)``: a small random instance ``(W, x)``;
- ``neurons``: ``"columns"`` when ``M = W Wᵀ`` (W of shape ``(p, d)``),
  ``"rows"`` when ``M = Wᵀ W`` (W of shape ``(d, p)``), as Table 3's caption says;
- ``exact``: True when ``native`` *equals* the quadratic form identically,
  False when the form is the leading order of a nonlinear model (Thm 1);
- ``reference``: where the paper states it;
- ``remainder``: for an expansion model, the power of ε of the first term the form
  leaves out, ``native(εW) - form(εW) = O(ε^remainder)``: 3 in general (Thm 1), 4 when
  every neuron's contribution is odd in its weights (an odd activation or gate).

:data:`MODELS` maps a name to its model; :func:`register` adds one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import torch

from ..form import NQF

__all__ = ["MODELS", "Model", "Structure", "register"]


@dataclass(frozen=True)
class Structure:
    """The coefficients of one input's quadratic form (Eq. 20).

    ``f(W) = f0 + g·μ + μᵀ B μ + Tr[M A]`` with ``M = W Wᵀ`` and ``μ = W 1``
    (columns convention).  ``g`` and ``B`` are ``None`` when zero (a ZGZ module).
    """

    A: np.ndarray
    g: np.ndarray | None = None
    B: np.ndarray | None = None
    f0: float = 0.0


class Model(ABC):
    """A model of Table 3 (or Props. 1-6): its forward, its structure and its twin.

    Subclasses set the class attributes and implement :meth:`native`,
    :meth:`structure` and :meth:`sample`.
    """

    name: str = ""
    title: str = ""
    reference: str = ""
    neurons: Literal["columns", "rows"] = "columns"
    exact: bool = True
    remainder: int = 3

    @property
    @abstractmethod
    def p(self) -> int:
        """Parameters per neuron."""

    @abstractmethod
    def native(self, W: torch.Tensor, x: Any) -> torch.Tensor:
        """The model's output on one input ``x`` (a 0-dim float64 tensor)."""

    @abstractmethod
    def structure(self, x: Any) -> Structure:
        """The closed-form coefficients ``(A, g, B, f0)`` on input ``x``."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        """A random instance ``(W, x)`` with ``W`` in the native layout."""

    def columns(self, W: np.ndarray) -> np.ndarray:
        """``W`` in the columns convention (``M = W Wᵀ``): ``W`` or ``Wᵀ``."""
        W = np.asarray(W, dtype=np.float64)
        return W if self.neurons == "columns" else W.T

    def twin(self, xs: Sequence[Any]) -> NQF:
        """The NQF of the inputs ``xs``, stacked from :meth:`structure`."""
        parts = [self.structure(x) for x in xs]
        if not parts:
            raise ValueError("xs must hold at least one input")
        A = np.stack([s.A for s in parts])
        g = None if all(s.g is None for s in parts) else np.stack(
            [np.zeros(self.p) if s.g is None else s.g for s in parts]
        )
        B = None if all(s.B is None for s in parts) else np.stack(
            [np.zeros((self.p, self.p)) if s.B is None else s.B for s in parts]
        )
        f0 = np.array([s.f0 for s in parts])
        return NQF(A, g=g, B=B, f0=f0 if np.any(f0) else None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: p={self.p}, neurons={self.neurons}, exact={self.exact}>"


MODELS: dict[str, Model] = {}


def register(model: Model) -> Model:
    """Add ``model`` to :data:`MODELS` under ``model.name`` (names are unique)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model, got {type(model).__name__}")
    if not model.name:
        raise ValueError("model.name must be a non-empty string")
    if model.name in MODELS:
        raise ValueError(f"a model named {model.name!r} is already registered")
    MODELS[model.name] = model
    return model
