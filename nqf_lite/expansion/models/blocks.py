"""Building blocks shared by the architecture families (paper §3).

- :data:`ACTIVATIONS` / :func:`activation`: the activations φ with φ(0), φ'(0);
- :class:`Layout`: how one neuron's ``p`` parameters stack into a column of
  ``W``;
- :class:`SymmetricModule`: a callable ``f(W, x)`` that :func:`nqf_lite.expand`
  accepts, with its layout (the single-input form of every family);
- :func:`feedforward_blocks`, :func:`representation`: the feed-forward block
  form ``A = ½ [[0, C], [Cᵀ, 0]]`` and the representation ``h = Z1ᵀ C`` (Eqs.
  17-19);
- :class:`Network`: the batched torch network of a family, whose
  :meth:`Network.twin`
  is the same network with the closed-form quadratic forward (Theorem 1);
- :func:`whitened_gaussian`: exactly whitened inputs for the networks'
  samplers;
- :class:`ModuleModel`: a registered
  :class:`~nqf_lite.expansion.models.base.Model` whose
  forward is a :class:`SymmetricModule` (the base of the families' models).

Vectorisation is column-major throughout (``vec(A X B) = (Bᵀ ⊗ A) vec(X)``):
matrix entry ``[a, b]`` of an ``r x c`` block sits at offset ``a + r*b``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nqf_lite._checks import (
    as_array,
    integer,
    nonnegative,
    positive,
    tensor,
    torch_generator,
)
from nqf_lite.expansion.models.base import Model, as_weights, generator

__all__ = [
    "ACTIVATIONS",
    "Layout",
    "ModuleModel",
    "Network",
    "SymmetricModule",
    "activation",
    "feedforward_blocks",
    "representation",
    "whitened_gaussian",
]

Inputs = Union[Tensor, tuple]

_LN2 = math.log(2.0)

#: Activations by name: ``name -> (torch function, φ(0), φ'(0))``.  ``φ'(0)``
#: is ``None`` for ReLU, which has no derivative at the origin.
ACTIVATIONS: dict[
    str, tuple[Callable[[torch.Tensor], torch.Tensor], float, float | None]
] = {
    "tanh": (torch.tanh, 0.0, 1.0),
    "gelu": (F.gelu, 0.0, 0.5),
    "sigmoid": (torch.sigmoid, 0.5, 0.25),
    "softplus0": (lambda z: F.softplus(z) - _LN2, 0.0, 0.5),
    "erf": (torch.erf, 0.0, 2.0 / math.sqrt(math.pi)),
    "identity": (lambda z: z, 0.0, 1.0),
    "relu": (torch.relu, 0.0, None),
}


def activation(
    name: str, arg: str = "name"
) -> tuple[Callable[[torch.Tensor], torch.Tensor], float, float | None]:
    """Look up an activation by name.

    Parameters
    ----------
    name : str
        One of ``ACTIVATIONS``: ``"tanh"``, ``"gelu"`` (exact, erf form),
        ``"sigmoid"``, ``"softplus0"`` (softplus − ln 2, so φ(0) = 0),
        ``"erf"``, ``"identity"``, ``"relu"``.
    arg : str
        The caller's name for the argument (``"act"``, ``"gate"``, ...), for
        the error message.

    Returns
    -------
    (phi, phi0, dphi0)
        The torch function, φ(0) and φ'(0) (``None`` for ReLU).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"{arg} must be an activation name, one of "
            f"{sorted(ACTIVATIONS)}, got {name!r}"
        )
    if name not in ACTIVATIONS:
        raise ValueError(
            f"{arg} must be an activation name, one of "
            f"{sorted(ACTIVATIONS)}, got {name!r}"
        )
    return ACTIVATIONS[name]


# ----------------------------------------------------------------------------
# parameter layout of one neuron
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How one neuron's ``p`` parameters are stacked into a column of ``W``.

    Parameters
    ----------
    blocks : tuple of (name, shape)
        The named blocks in order.  Shape ``()`` is a scalar, ``(n,)`` a
        vector, ``(r, c)`` a matrix stored as its column-major ``vec``.
    """

    blocks: tuple[tuple[str, tuple[int, ...]], ...]

    def __post_init__(self) -> None:
        names = [n for n, _ in self.blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"block names must be unique, got {names}")
        for name, shape in self.blocks:
            if len(shape) > 2 or any(int(s) < 1 for s in shape):
                raise ValueError(
                    f"block {name!r} needs a shape of 0-2 positive sizes, "
                    f"got {shape}"
                )

    @property
    def sizes(self) -> list[int]:
        """Number of parameters of each block."""
        return [int(np.prod(shape, dtype=int)) for _, shape in self.blocks]

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return sum(self.sizes)

    @property
    def names(self) -> list[str]:
        """Block names in order."""
        return [n for n, _ in self.blocks]

    def slices(self) -> dict[str, slice]:
        """Row range of every block inside a column of ``W``."""
        out, start = {}, 0
        for (name, _), size in zip(self.blocks, self.sizes):
            out[name] = slice(start, start + size)
            start += size
        return out

    def check(self, W: Any, arg: str = "W") -> None:
        """Raise unless ``W`` is 2-D with ``p`` rows."""
        if W.ndim != 2 or W.shape[0] != self.p:
            raise ValueError(
                f"{arg} must have shape (p={self.p}, d) for layout "
                f"{self.names}, got {tuple(W.shape)}"
            )

    def unpack(self, W: Any) -> dict[str, Any]:
        """Split ``W`` (torch or numpy, ``(p, d)``) into per-neuron blocks.

        Returns
        -------
        dict
            ``name -> array`` of shape ``(d, *shape)`` (same type as ``W``);
            matrix blocks are un-``vec``-ed column-major.
        """
        self.check(W)
        d = W.shape[1]
        out = {}
        for (name, shape), sl in zip(self.blocks, self.slices().values()):
            rows = W[sl]
            if len(shape) == 0:
                out[name] = rows[0]
            elif len(shape) == 1:
                out[name] = rows.T
            else:
                r, c = shape
                cube = rows.reshape(c, r, d)
                out[name] = (
                    cube.permute(2, 1, 0)
                    if torch.is_tensor(cube)
                    else cube.transpose(2, 1, 0)
                )
        return out

    def pack(self, blocks: dict[str, np.ndarray]) -> np.ndarray:
        """Inverse of :meth:`unpack` for NumPy blocks of shape ``(d, *shape)``.

        Returns
        -------
        numpy.ndarray
            ``W`` of shape ``(p, d)``.
        """
        if set(blocks) != set(self.names):
            raise ValueError(
                f"blocks must have exactly the keys {self.names}, got "
                f"{sorted(blocks)}"
            )
        cols = []
        d = None
        for name, shape in self.blocks:
            b = np.asarray(blocks[name], dtype=float)
            d = b.shape[0] if d is None else d
            if b.shape != (d, *shape):
                raise ValueError(
                    f"block {name!r} must have shape {(d, *shape)}, got "
                    f"{b.shape}"
                )
            # column-major vec of each neuron's block: transpose the last two
            # axes, then flatten
            flat = (
                b.reshape(d, -1)
                if len(shape) < 2
                else b.transpose(0, 2, 1).reshape(d, -1)
            )
            cols.append(flat.T)
        return np.concatenate(cols, axis=0)

    def edges(self) -> list[tuple[int, int, str]]:
        """``(start, stop, name)`` of every block, for labelling pictures of
        ``A``."""
        return [
            (sl.start, sl.stop, name) for name, sl in self.slices().items()
        ]


@dataclass(frozen=True)
class SymmetricModule:
    """A module ``f(W, x) = Σ_i φ(w_i; x)``-like callable with its neuron
    layout.

    Attributes
    ----------
    fn : callable
        ``fn(W, x)``: ``W`` a float64 torch tensor ``(p, d)``, returns a scalar
        or a ``(V,)`` tensor.
    layout : Layout
        Parameters of one neuron.
    V : int or None
        Number of outputs (``None``: scalar output).
    name : str
        Short description for labels.
    family : tuple of (str, dict) or None
        The builder's kind (``"moe"``, ``"mha"``, ``"qk"``, ``"logits"``)
        and the parameters it was built with, for the factored expansion
        (:mod:`nqf_lite.expansion.factored_models`); ``None`` for any other
        module.
    """

    fn: Callable[[torch.Tensor, Any], torch.Tensor]
    layout: Layout
    V: int | None
    name: str
    family: tuple[str, dict[str, Any]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return self.layout.p

    def __call__(self, W: torch.Tensor, x: Any) -> torch.Tensor:
        W = torch.as_tensor(W, dtype=torch.float64)
        self.layout.check(W)
        return self.fn(W, x)


def tensor64(a: Any) -> torch.Tensor:
    """``a`` as a float64 torch tensor (trusted: already checked)."""
    return torch.as_tensor(a, dtype=torch.float64)


def offdiag(C: np.ndarray, scale: float) -> np.ndarray:
    """``scale * [[0, C], [Cᵀ, 0]]`` (the feed-forward form, Eq. 17)."""
    n1, n2 = C.shape
    A = np.zeros((n1 + n2, n1 + n2))
    A[:n1, n1:] = scale * C
    A[n1:, :n1] = scale * C.T
    return A


def per_output(
    C_of_o: Callable[[int], np.ndarray], V: int | None, scale: float
) -> np.ndarray:
    """Scalar: ``offdiag(C, scale)``; vector: one such matrix per output
    ``o``."""
    if V is None:
        return offdiag(C_of_o(0), scale)
    return np.stack([offdiag(C_of_o(o), scale) for o in range(V)])


# ----------------------------------------------------------------------------
# Eqs. 17-19: feed-forward block form
# ----------------------------------------------------------------------------


def _is_split(A: np.ndarray, s: int, atol: float) -> bool:
    return bool(
        np.all(np.abs(A[..., :s, :s]) <= atol)
        and np.all(np.abs(A[..., s:, s:]) <= atol)
    )


def feedforward_blocks(
    A: Any, split: int | None = None, atol: float = 1e-12
) -> tuple[np.ndarray, int]:
    """Detect the feed-forward form ``A = ½ [[0, C], [Cᵀ, 0]]`` (Eq. 17) and
    return ``C``.

    Parameters
    ----------
    A : array_like, shape (p, p) or (V, p, p)
        Symmetric structure matrix (one per output for vector outputs).
    split : int, optional
        Row where ``Z1`` ends and ``Z2`` begins (``W = [Z1; Z2]``, Eq. 18).
        When omitted, the smallest split with both diagonal blocks zero is
        used.
    atol : float
        Entries with ``|A_ij| ≤ atol`` count as zero.

    Returns
    -------
    (C, split)
        ``C = 2 A[:split, split:]`` of shape ``(split, p - split)`` (or
        ``(V, split, p - split)``), and the split.

    Raises
    ------
    ValueError
        If ``A`` is not symmetric or has no feed-forward split.
    """
    A = as_array("A", A)
    atol = nonnegative("atol", atol)
    if (
        A.ndim not in (2, 3)
        or A.shape[-1] != A.shape[-2]
        or A.shape[-1] < 2
        or A.shape[0] < 1
    ):
        raise ValueError(
            f"A must have shape (p, p) or (V, p, p) with p >= 2, got {A.shape}"
        )
    if not np.allclose(A, np.swapaxes(A, -1, -2), rtol=0.0, atol=atol):
        raise ValueError("A must be symmetric")
    p = A.shape[-1]
    if split is None:
        found = [s for s in range(1, p) if _is_split(A, s, atol)]
        if not found:
            raise ValueError(
                "A has no feed-forward form ½[[0, C], [Cᵀ, 0]] (Eq. 17) for "
                "any split"
            )
        split = found[0]
    elif (
        isinstance(split, bool)
        or not isinstance(split, (int, np.integer))
        or not 1 <= split < p
    ):
        raise ValueError(
            f"split must be an integer in [1, {p - 1}], got {split!r}"
        )
    elif not _is_split(A, int(split), atol):
        raise ValueError(
            f"A is not of the form ½[[0, C], [Cᵀ, 0]] with split={split}"
        )
    split = int(split)
    return 2.0 * A[..., :split, split:], split


def representation(W: Any, C: Any, split: int) -> np.ndarray:
    """First-layer representation ``h(x) = Z1ᵀ C(x)`` (Eq. 19).

    Parameters
    ----------
    W : array_like, shape (p, d)
        Neurons as columns; ``Z1 = W[:split]``.
    C : array_like, shape (split, n2)
        Off-diagonal block from :func:`feedforward_blocks` (scalar output).
    split : int

    Returns
    -------
    numpy.ndarray, shape (d, n2)
        Row ``i`` is neuron i's feature; the module's quadratic part is
        ``Tr[Z2 Z1ᵀ C] = Σ_i h_i · z2_i`` with ``Z2 = W[split:]``.
    """
    W, C = as_array("W", W), as_array("C", C)
    if W.ndim != 2 or 0 in W.shape:
        raise ValueError(
            f"W must have shape (p, d) with p >= 2, d >= 1, got {W.shape}"
        )
    if (
        isinstance(split, bool)
        or not isinstance(split, (int, np.integer))
        or not 1 <= split < W.shape[0]
    ):
        raise ValueError(
            f"split must be an integer in [1, {W.shape[0] - 1}], got {split!r}"
        )
    if C.shape != (split, W.shape[0] - split):
        raise ValueError(
            f"C must have shape ({split}, {W.shape[0] - split}), got {C.shape}"
        )
    return W[:split].T @ C


# ----------------------------------------------------------------------------
# batched torch networks and their twins
# ----------------------------------------------------------------------------


def gaussian_parameter(
    gen: torch.Generator, sigma: float, *shape: int
) -> nn.Parameter:
    """A float64 parameter of i.i.d. ``N(0, sigma^2)`` entries drawn from
    ``gen``."""
    return nn.Parameter(
        sigma * torch.randn(*shape, generator=gen, dtype=torch.float64)
    )


class Network(nn.Module):
    """A batched torch network of ``d`` symmetric units and, as its twin, its
    quadratic form.

    One class holds both forwards of a family: :meth:`_func` is the network,
    :meth:`_nqf` its neural quadratic form ``f0 + Tr[M A(x)]`` (Theorem 1) with
    ``A(x)`` the family's closed form (Props. 1-6), written as a cheap torch
    expression instead of a dense ``A``.  :meth:`twin` returns a copy with the
    same parameters whose forward is :meth:`_nqf`.
    """

    is_twin = False

    def __init__(self, sigma: float, V: int, seed: int) -> None:
        super().__init__()
        self.sigma = positive("sigma", sigma)
        self.V = integer("V", V)
        self.seed = integer("seed", seed, minimum=0)

    # each architecture implements the methods below that raise
    # NotImplementedError
    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        raise NotImplementedError

    def _nqf(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        """The closed-form quadratic form of :meth:`_func` (the twin's
        forward)."""
        raise NotImplementedError

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        raise NotImplementedError

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        """Validate a batch (or, with ``single``, one input) and return it as a
        tuple of tensors."""
        raise NotImplementedError

    def effective_map(self) -> Tensor:
        """The learned linear map of the NQF (see the module docstring)."""
        raise NotImplementedError

    def _config(self) -> dict[str, Any]:
        raise NotImplementedError

    def forward(self, inputs: Inputs) -> Tensor:
        """Outputs (m, V) for a batch of ``m`` inputs."""
        return self._forward_fn(
            dict(self.named_parameters()), self._check_inputs(inputs)
        )

    @property
    def _forward_fn(self) -> Callable[[dict[str, Tensor], tuple], Tensor]:
        return self._nqf if self.is_twin else self._func

    def twin(self) -> "Network":
        """The NQF twin: a new module with a copy of these parameters whose
        forward is the NQF."""
        if self.is_twin:
            raise TypeError(
                "this module is already a twin; call twin() on the network"
            )
        out = type(self)(**self._config())
        out.is_twin = True
        out.load_state_dict(self.state_dict())
        return out

    def units(self) -> Tensor:
        """The trainable weights as ``W`` of shape (p, d), one column per unit
        (neuron or head)."""
        raise NotImplementedError

    def unit_function(self) -> Callable[[Tensor, Inputs], Tensor]:
        """``f(W, x) -> (V,)``: this module on ONE input with units ``W`` (p,
        d), for ``nqf_lite.expand``."""

        def f(W: Tensor, x: Inputs) -> Tensor:
            one = tuple(
                t.unsqueeze(0) for t in self._check_inputs(x, single=True)
            )
            return self._forward_fn(self._params_from_W(W), one)[0]

        return f


def whitened_gaussian(m: int, D: int, seed: int = 0) -> np.ndarray:
    """Exactly whitened Gaussian samples:
    ``X`` (m, D) with zero mean and ``X^T X / m = I``.

    Parameters
    ----------
    m, D : int
        Number of samples and dimension (``m > D``).
    seed : int
        Seed of the Gaussian draw.
    """
    m, D = integer("m", m), integer("D", D)
    if m <= D:
        raise ValueError(
            f"m must exceed D to whiten exactly, got m = {m}, D = {D}"
        )
    rng = np.random.default_rng(integer("seed", seed, minimum=0))
    X = rng.standard_normal((m, D))
    X -= X.mean(axis=0)
    L = np.linalg.cholesky(X.T @ X / m)
    return np.linalg.solve(L, X.T).T


# ----------------------------------------------------------------------------
# registered models built on a SymmetricModule
# ----------------------------------------------------------------------------


class ModuleModel(Model):
    """A :class:`~nqf_lite.expansion.models.base.Model` whose forward is a
    :class:`SymmetricModule`.

    Subclasses set ``module`` (the single-input form), ``width`` (the number of
    neurons :meth:`sample` draws) and implement :meth:`check_input`,
    :meth:`structure`
    (which validates its input with :meth:`check_input`, as :meth:`native`
    does) and
    :meth:`sample_input`.  Neurons are the columns of ``W`` (``M = W Wᵀ``).
    """

    neurons = "columns"
    module: SymmetricModule
    width: int = 3

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return self.module.p

    def native(self, W: Any, x: Any) -> torch.Tensor:
        """The module's output on one input, ``W`` of shape ``(p, d)``."""
        return self.module(
            as_weights(W, self.p, "columns", self.name), self.check_input(x)
        )

    def sample_input(self, rng: np.random.Generator) -> Any:
        """One random input of the module."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
        """Standard normal ``W`` of shape ``(p, width)`` and one input (drawn
        in this order)."""
        rng = generator(rng)
        return rng.standard_normal((self.p, self.width)), self.sample_input(
            rng
        )


# the private names of version 0.3, still imported by nqf_lite.experiments
# (train.py, ensemble.py): use nqf_lite._checks.{integer, positive, tensor,
# torch_generator} instead
def _int(name: str, value: object, low: int = 1) -> int:
    return integer(name, value, minimum=low)


_pos, _tensor, _generator = positive, tensor, torch_generator
