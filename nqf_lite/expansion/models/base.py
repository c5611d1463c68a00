"""One object per model: its torch forward, its closed-form structure and its
NQF twin.

Every architecture of the paper (Props. 1-6) and every row of its Table 3 is a
:class:`Model`.  A model carries

- ``native(W, x)``: the model's own forward pass in torch (float64), with the
  neurons laid out as the paper's row of Table 3 says (``neurons``);
- ``structure(x)``: the closed-form :class:`Structure` ``(A, g, B, f0)`` of the
  quadratic form ``f0 + gᵀμ + μᵀBμ + Tr[M A]`` (Thm 1, Eq. 2; Eq. 20 when
  ``g, B`` are nonzero);
- ``twin(xs)``: the :class:`~nqf_lite.expansion.form.NQF` of a data set, built
  from ``structure`` (never re-derived);
- ``sample(rng)``: a small random instance ``(W, x)`` (``rng`` a numpy
  ``Generator``);
- ``sizes``: the model's size arguments and their current values;
  ``resized(**sizes)`` (or ``MODELS.make(name, **sizes)``) builds the same
  model at other sizes;
- ``check_input(x)``: the one validation of an input, shared by ``native`` and
  ``structure``;
- ``neurons``: ``"columns"`` when ``M = W Wᵀ`` (W of shape ``(p, d)``),
  ``"rows"`` when ``M = Wᵀ W`` (W of shape ``(d, p)``), as Table 3's caption
  says;
- ``exact``: True when ``native`` *equals* the quadratic form identically,
  False when the form is the leading order of a nonlinear model (Thm 1);
- ``reference``: where the paper states it;
- ``remainder``: for an expansion model, the power of ε of the first term the
  form leaves out, ``native(εW) - form(εW) = O(ε^remainder)``: 3 in general
  (Thm 1), 4 when every neuron's contribution is odd in its weights (an odd
  activation or gate).

:data:`MODELS` maps a name to its model (a :class:`Registry`: an unknown name
raises a ``KeyError`` listing the registered ones, and :meth:`Registry.make`
builds a model at any size); :func:`register` adds one.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import torch

from nqf_lite._checks import as_array
from nqf_lite.expansion.form import NQF

__all__ = [
    "MODELS",
    "Model",
    "Registry",
    "Structure",
    "as_weights",
    "register",
]


@dataclass(frozen=True)
class Structure:
    """The coefficients of one input's quadratic form (Eq. 20).

    ``f(W) = f0 + g·μ + μᵀ B μ + Tr[M A]`` with ``M = W Wᵀ`` and ``μ = W 1``
    (columns convention).  ``g`` and ``B`` are ``None`` when zero (a ZGZ
    module).
    """

    A: np.ndarray
    g: np.ndarray | None = None
    B: np.ndarray | None = None
    f0: float = 0.0


class Model(ABC):
    """A model of Table 3 (or Props. 1-6): its forward, its structure and its
    twin.

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

    def check_input(self, x: Any) -> Any:
        """``x`` validated (and converted) as :meth:`native` and
        :meth:`structure` both need it.

        Raises ``TypeError``/``ValueError`` naming the input for anything the
        model does not accept; the default accepts everything (a subclass that
        overrides neither
        :meth:`native` nor :meth:`structure` validation must override this).
        """
        return x

    @property
    def sizes(self) -> dict[str, Any]:
        """The constructor's arguments (all but ``name``) and their values for
        this model."""
        params = inspect.signature(type(self).__init__).parameters
        return {
            k: getattr(self, k) for k in params if k not in ("self", "name")
        }

    def resized(self, **sizes: Any) -> "Model":
        """A new model of the same kind with some sizes changed (not
        registered).

        Parameters
        ----------
        **sizes
            Any of :attr:`sizes` (e.g. ``k=5``, ``width=2``); the others keep
            their values.

        Raises
        ------
        TypeError
            For a size this model does not have (the message lists the ones it
            has).
        ValueError
            For a size out of its range (the constructor's message names it).
        """
        valid = self.sizes
        unknown = sorted(set(sizes) - set(valid))
        if unknown:
            raise TypeError(
                f"model {self.name!r} has no size {unknown[0]!r}; its sizes "
                f"are {sorted(valid)}"
            )
        kwargs = {**valid, **sizes}
        if "name" in inspect.signature(type(self).__init__).parameters:
            kwargs["name"] = self.name
        return type(self)(**kwargs)

    def columns(self, W: np.ndarray) -> np.ndarray:
        """``W`` in the columns convention (``M = W Wᵀ``): ``W`` or ``Wᵀ``."""
        W = as_array("W", W, ndim=2)
        return W if self.neurons == "columns" else W.T

    def twin(self, xs: Sequence[Any]) -> NQF:
        """The NQF of the inputs ``xs`` (a list, tuple or array of inputs),
        stacked from :meth:`structure`."""
        if isinstance(xs, (str, bytes, dict)) or not isinstance(
            xs, (Sequence, np.ndarray)
        ):
            raise TypeError(
                f"xs must be a list of inputs, got {type(xs).__name__}"
            )
        parts = [self.structure(x) for x in xs]
        if not parts:
            raise ValueError("xs must hold at least one input")
        A = np.stack([s.A for s in parts])
        g = (
            None
            if all(s.g is None for s in parts)
            else np.stack(
                [np.zeros(self.p) if s.g is None else s.g for s in parts]
            )
        )
        B = (
            None
            if all(s.B is None for s in parts)
            else np.stack(
                [
                    np.zeros((self.p, self.p)) if s.B is None else s.B
                    for s in parts
                ]
            )
        )
        f0 = np.array([s.f0 for s in parts])
        return NQF(A, g=g, B=B, f0=f0 if np.any(f0) else None)

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.name!r}: p={self.p}, "
            f"neurons={self.neurons}, exact={self.exact}>"
        )


def generator(rng: object) -> np.random.Generator:
    """``rng`` checked to be a numpy ``Generator`` (``TypeError`` otherwise,
    e.g. for a bare seed)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy Generator (e.g. "
            f"nqf_lite.book.seeding.rng(...)), got {type(rng).__name__} "
            f"{rng!r}"
        )
    return rng


def as_weights(W: Any, p: int, neurons: str, model: str) -> torch.Tensor:
    """``W`` as a finite float64 tensor in a model's native layout; gradients
    are kept.

    Parameters
    ----------
    W : array_like or tensor
        ``(p, d)`` when ``neurons == "columns"``, ``(d, p)`` when ``"rows"``,
        with ``d >= 1``.
    p : int
        Parameters per neuron.
    neurons : {"columns", "rows"}
    model : str
        The model's name, for the error message.

    Raises
    ------
    TypeError
        For complex, bool, string or non-numeric ``W``.
    ValueError
        For the wrong shape, or NaN/inf entries.
    """
    if isinstance(W, torch.Tensor):
        if W.is_complex() or W.dtype == torch.bool:
            raise TypeError(
                f"W must be a real numeric tensor, got dtype {W.dtype}"
            )
        W = W.to(torch.float64)
        if not torch.isfinite(W.detach()).all():
            raise ValueError("W contains NaN or inf")
    else:
        W = torch.as_tensor(as_array("W", W))
    axis = 0 if neurons == "columns" else 1
    if W.ndim != 2 or W.shape[axis] != p or W.shape[1 - axis] < 1:
        want = f"(p={p}, d)" if axis == 0 else f"(d, p={p})"
        raise ValueError(
            f"W must have shape {want} with d >= 1 (neurons as {neurons}) "
            f"for {model}, got {tuple(W.shape)}"
        )
    return W


class Registry(dict):
    """The registered models by name: a ``dict`` that names the valid keys when
    a key is missing."""

    def __missing__(self, name: object) -> Model:
        raise KeyError(
            f"no model named {name!r}; the registered models are "
            f"{sorted(self)}"
        )

    def make(self, name: str, **sizes: Any) -> Model:
        """The model ``name`` at other sizes (a new, unregistered model; see
        :meth:`Model.resized`).

        ``MODELS.make("mlp", k=5, width=2)`` is a two-layer MLP on 5 inputs
        whose ``sample`` draws 2 neurons.  ``MODELS[name].sizes`` lists the
        sizes a model takes.

        Raises
        ------
        KeyError
            For an unknown ``name`` (the message lists the registered ones).
        TypeError, ValueError
            For a size the model does not have, or one out of its range.
        """
        if not isinstance(name, str):
            raise TypeError(
                f"name must be a model name (str), got {type(name).__name__}"
            )
        return self[name].resized(**sizes)


MODELS: Registry = Registry()


def register(model: Model) -> Model:
    """Add ``model`` to :data:`MODELS` under ``model.name`` (names are
    unique)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model, got {type(model).__name__}")
    if not model.name:
        raise ValueError("model.name must be a non-empty string")
    if model.name in MODELS:
        raise ValueError(f"a model named {model.name!r} is already registered")
    MODELS[model.name] = model
    return model
