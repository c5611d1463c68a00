"""Mixture of experts with independent gates (Prop. 5, Eqs. 13-14).

- :class:`Expert`, :func:`linear_expert`, :func:`mlp_expert`, :func:`G_linear`;
- :func:`moe_module` with :func:`A_moe`;
- the registered model ``"moe"`` (:class:`MixtureOfExperts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from nqf_lite._checks import (
    as_array,
    integer,
    outputs,
    real,
    vector,
)
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.blocks import (
    Layout,
    ModuleModel,
    SymmetricModule,
    activation,
    offdiag,
    per_output,
    tensor64,
)

__all__ = [
    "Expert",
    "linear_expert",
    "mlp_expert",
    "G_linear",
    "moe_module",
    "A_moe",
    "MixtureOfExperts",
    "MOE",
]


@dataclass(frozen=True)
class Expert:
    """An expert network ``E(x; Θ)`` with ``E(x; 0) = 0``.

    Attributes
    ----------
    blocks : tuple of (name, shape)
        Layout of ``Θ`` (appended after the gate ``r`` in the neuron).
    fn : callable
        ``fn(theta, x)``: ``theta`` a dict of blocks of shape ``(d, *shape)``,
        returns ``(d,)`` (scalar expert) or ``(d, V)``.
    V : int or None
        Output dimension.
    name : str
        Description.
    """

    blocks: tuple[tuple[str, tuple[int, ...]], ...]
    fn: Callable[[dict[str, torch.Tensor], torch.Tensor], torch.Tensor]
    V: int | None
    name: str


def linear_expert(k: int, V: int | None = None) -> Expert:
    """Linear expert ``E = θᵀx`` (``θ ∈ R^k``) or ``E = Θ x``
    (``Θ ∈ R^{V×k}``)."""
    k, V = integer("k", k), outputs(V)
    if V is None:
        return Expert(
            (("theta", (k,)),),
            lambda th, x: th["theta"] @ x,
            None,
            "linear expert",
        )
    return Expert(
        (("Theta", (V, k)),), lambda th, x: th["Theta"] @ x, V, "linear expert"
    )


def mlp_expert(k: int, hidden: int, act: str = "tanh") -> Expert:
    """Bias-free two-layer expert ``E = aᵀ φ(U x)``: itself ZGZ, so
    ``∇_Θ E(x; 0) = 0``."""
    k, hidden = integer("k", k), integer("hidden", hidden)
    phi, _, _ = activation(act, "act")
    return Expert(
        (("U", (hidden, k)), ("a", (hidden,))),
        lambda th, x: (phi(th["U"] @ x) * th["a"]).sum(-1),
        None,
        f"{act} MLP expert",
    )


def G_linear(x: Any, V: int | None = None) -> np.ndarray:
    """``G = ∇_Θ E(x; 0)`` of :func:`linear_expert`: ``x``, or ``(V, V k)``
    with rows ``x ⊗ e_o``."""
    x, V = vector("x", x), outputs(V)
    return x.copy() if V is None else np.kron(x[None, :], np.eye(V))


def moe_module(k: int, expert: Expert, gate: str = "tanh") -> SymmetricModule:
    """Mixture of experts with independent gates, ``Σ_i ψ(r_iᵀx) E(x; Θ_i)``
    (Eq. 13).

    Neuron ``w = [r (k); Θ (expert.blocks)]``; the gate ψ needs ψ(0) = 0.
    """
    k = integer("k", k)
    if not isinstance(expert, Expert):
        raise TypeError(
            "expert must be an Expert (see linear_expert), got "
            f"{type(expert).__name__}"
        )
    psi, psi0, _ = activation(gate, "gate")
    if psi0 != 0.0:
        raise ValueError(
            f"gate must satisfy ψ(0) = 0, but {gate!r} has ψ(0) = {psi0}"
        )
    layout = Layout((("r", (k,)),) + expert.blocks)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = tensor64(x)
        if x.shape != (k,):
            raise ValueError(f"x must have shape ({k},), got {tuple(x.shape)}")
        b = layout.unpack(W)
        gates = psi(b.pop("r") @ x)  # (d,)
        return gates @ expert.fn(b, x)

    family = ("moe", dict(k=k, psi=psi, expert=expert, layout=layout))
    name = f"MoE ({gate} gate, {expert.name})"
    return SymmetricModule(fn, layout, expert.V, name, family)


def A_moe(x: Any, dpsi0: float, G: Any) -> np.ndarray:
    """Structure matrix of the mixture of experts (Prop. 5, Eq. 14).

    ``A = (ψ'(0)/2) [[0, x Gᵀ], [G xᵀ, 0]]`` with ``G = ∇_Θ E(x; 0)``.

    Parameters
    ----------
    x : array_like, shape (k,)
    dpsi0 : float
        ψ'(0).
    G : array_like, shape (q,) or (V, q)
        Expert gradient at Θ = 0 (one row per output for a vector expert).

    Returns
    -------
    numpy.ndarray
        ``(k+q, k+q)`` or ``(V, k+q, k+q)``.
    """
    x, dpsi0 = vector("x", x), real("dpsi0", dpsi0)
    G = as_array("G", G)
    if G.ndim not in (1, 2) or G.shape[-1] < 1 or G.shape[0] < 1:
        raise ValueError(f"G must have shape (q,) or (V, q), got {G.shape}")
    if G.ndim == 1:
        return offdiag(np.outer(x, G), dpsi0 / 2)
    return per_output(lambda o: np.outer(x, G[o]), G.shape[0], dpsi0 / 2)


# ----------------------------------------------------------------------------
# registered model
# ----------------------------------------------------------------------------


class MixtureOfExperts(ModuleModel):
    """Tanh-gated linear experts ``Σ_i tanh(r_iᵀ x) θ_iᵀ x`` (Prop. 5).

    Parameters
    ----------
    k : int >= 1
        Input dimension.
    width : int >= 1
        Experts drawn by :meth:`sample`.
    """

    name = "moe"
    title = "mixture of experts"
    reference = "Table 3, row 11; Prop. 5, Eqs. 13-14"
    exact = False
    remainder = 4

    def __init__(self, k: int = 3, width: int = 3) -> None:
        self.k, self.width = integer("k", k), integer("width", width)
        self.module = moe_module(self.k, linear_expert(self.k))

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real vector of shape ``(k,)``."""
        return vector("x", x, self.k)

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 14 with ``ψ'(0) = 1`` and ``G = x``."""
        x = self.check_input(x)
        return Structure(A=A_moe(x, 1.0, G_linear(x)))

    def sample_input(self, rng: np.random.Generator) -> np.ndarray:
        """A standard normal input (k,)."""
        return rng.standard_normal(self.k)


MOE = register(MixtureOfExperts())
