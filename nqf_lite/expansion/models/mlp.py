"""The two-layer MLP (Prop. 1, Eqs. 5-6; App. B.2) and a mean-field readout
(App. B.1, Eq. 20).

- :func:`mlp_module` (one input, neurons as columns) with :func:`A_mlp`,
  :func:`g_mlp`;
- :func:`mean_field_mlp` with :func:`coeffs_mean_field_mlp`: a module with ``g,
  B != 0``;
- :class:`TanhMLP`: the batched torch network ``f = V tanh(U x)``; its twin is
  ``V U x`` (``A_mlp`` with ``tanh'(0) = 1``);
- the registered model ``"mlp"`` (:class:`TwoLayerMLP`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from nqf_lite.expansion.models.base import Structure, register
from nqf_lite._checks import (
    check_sizes,
    integer,
    outputs,
    real,
    tensor,
    torch_generator,
    vector,
)
from nqf_lite.expansion.models.blocks import (
    Inputs,
    Layout,
    ModuleModel,
    Network,
    SymmetricModule,
    activation,
    gaussian_parameter,
    offdiag,
    per_output,
    tensor64,
    whitened_gaussian,
)

_ODD = (
    "tanh",
    "erf",
    "identity",
)  # odd activations: the MLP is even in W, remainder O(ε⁴)

__all__ = [
    "mlp_layout",
    "mlp_module",
    "A_mlp",
    "g_mlp",
    "mean_field_mlp",
    "coeffs_mean_field_mlp",
    "TanhMLP",
    "TwoLayerMLP",
    "MLP",
]


def mlp_layout(k: int, V: int | None = None) -> Layout:
    """Neuron of a two-layer MLP: ``w = [u (k); v (1 or V)]`` (Eq. 5)."""
    k, V = integer("k", k), outputs(V)
    return Layout((("u", (k,)), ("v", () if V is None else (V,))))


def mlp_module(
    k: int, act: str = "tanh", V: int | None = None
) -> SymmetricModule:
    """Two-layer bias-free MLP ``f(W, x) = Σ_i v_i φ(u_iᵀ x)`` (Eq. 5; App.
    B.2).

    Parameters
    ----------
    k : int
        Input dimension.
    act : str
        Activation name (see :func:`activation`).
    V : int, optional
        Number of outputs; ``None`` gives a scalar output and ``v_i ∈ R``.

    Returns
    -------
    nqf_lite.expansion.models.blocks.SymmetricModule
        ``f(W, x)`` with ``W`` of shape ``(k + (V or 1), d)`` and ``x`` of
        shape ``(k,)``.
    """
    phi, _, _ = activation(act, "act")
    layout = mlp_layout(k, V)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = tensor64(x)
        if x.shape != (k,):
            raise ValueError(f"x must have shape ({k},), got {tuple(x.shape)}")
        b = layout.unpack(W)
        h = phi(b["u"] @ x)  # (d,)
        return h @ b["v"]  # scalar, or (V,) from (d,) @ (d, V)

    return SymmetricModule(fn, layout, V, f"{act} MLP")


def A_mlp(x: Any, dphi0: float, V: int | None = None) -> np.ndarray:
    """Structure matrix of the two-layer MLP (Prop. 1, Eq. 6; App. B.2).

    ``A(x) = (φ'(0)/2) [[0, x], [xᵀ, 0]]``; for ``V`` outputs
    ``A^(o)(x) = (φ'(0)/2) [[0, x e_oᵀ], [e_o xᵀ, 0]]``.

    Parameters
    ----------
    x : array_like, shape (k,)
        Input.
    dphi0 : float
        φ'(0).
    V : int, optional
        Number of outputs.

    Returns
    -------
    numpy.ndarray
        ``(k+1, k+1)`` or ``(V, k+V, k+V)``.
    """
    x, dphi0, V = vector("x", x), real("dphi0", dphi0), outputs(V)
    if V is None:
        return offdiag(x[:, None], dphi0 / 2)
    return per_output(lambda o: np.outer(x, np.eye(V)[o]), V, dphi0 / 2)


def g_mlp(x: Any, phi0: float, V: int | None = None) -> np.ndarray:
    """Linear coefficient when φ(0) ≠ 0 (App. B.1): ``g = φ(0) [0_k; 1]``.

    For ``V`` outputs ``g^(o) = φ(0) [0_k; e_o]``; shape ``(k+1,)`` or
    ``(V, k+V)``.
    """
    x, phi0, V = vector("x", x), real("phi0", phi0), outputs(V)
    k = x.shape[0]
    if V is None:
        return np.concatenate([np.zeros(k), [phi0]])
    return np.concatenate([np.zeros((V, k)), phi0 * np.eye(V)], axis=1)


def mean_field_mlp(
    k: int, act: str = "sigmoid", outer: str = "softplus0"
) -> SymmetricModule:
    """A symmetric but non-additive module: ``f = ρ(Σ_i v_i φ(u_iᵀx))``.

    The output nonlinearity ρ couples all neurons ("mean-field" readout), so
    the Hessian at the origin has off-diagonal blocks ``2B ≠ 0`` when
    ``φ(0) ρ''(0) ≠ 0``; with ``φ(0) ≠ 0`` the linear coefficient ``g`` is
    non-zero too (App. B.1, Eq. 20). Neuron layout as :func:`mlp_layout`.
    """
    phi, _, _ = activation(act, "act")
    rho, _, _ = activation(outer, "outer")
    layout = mlp_layout(k)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = tensor64(x)
        if x.shape != (k,):
            raise ValueError(f"x must have shape ({k},), got {tuple(x.shape)}")
        b = layout.unpack(W)
        return rho(phi(b["u"] @ x) @ b["v"])

    return SymmetricModule(fn, layout, None, f"{outer}({act} MLP)")


def coeffs_mean_field_mlp(
    x: Any, phi0: float, dphi0: float, drho0: float, ddrho0: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed-form ``(g, B, A)`` of :func:`mean_field_mlp` in the form of Eq.
    20.

    With ``S = Σ_i v_i φ(u_iᵀx) = φ(0) μ_v + φ'(0) Σ_i v_i u_iᵀx + O(‖W‖³)``,
    ``ρ(S) = ρ(0) + ρ'(0) S + ½ρ''(0) S² + …`` gives

    * ``g = ρ'(0) φ(0) e_v``,
    * ``B = ½ ρ''(0) φ(0)² e_v e_vᵀ`` (the cross-neuron coupling),
    * ``A = (ρ'(0) φ'(0)/2) [[0, x], [xᵀ, 0]]`` (``A = A_s − B`` of Eq. 20).

    Returns
    -------
    (g, B, A)
        Shapes ``(k+1,)``, ``(k+1, k+1)``, ``(k+1, k+1)``.
    """
    x = vector("x", x)
    phi0, dphi0 = real("phi0", phi0), real("dphi0", dphi0)
    drho0, ddrho0 = real("drho0", drho0), real("ddrho0", ddrho0)
    k = x.shape[0]
    g = np.zeros(k + 1)
    g[k] = drho0 * phi0
    B = np.zeros((k + 1, k + 1))
    B[k, k] = 0.5 * ddrho0 * phi0**2
    return g, B, A_mlp(x, drho0 * dphi0)


class TanhMLP(Network):
    """Bias-free two-layer tanh network ``f(x) = V tanh(U x)`` (Prop. 1, Eq.
    5).

    Parameters
    ----------
    D_in, hidden, V : int
        Input dimension, width d and output dimension.
    sigma : float
        Init scale: every entry of ``U`` (hidden, D_in) and ``V`` (V, hidden)
        is N(0, sigma^2).
    seed : int
        Seed of the init.

    Notes
    -----
    Inputs are ``x`` of shape (m, D_in).  Unit ``i`` is ``w_i = [u_i; v_i]`` (p
    = D_in + V).
    """

    def __init__(
        self,
        D_in: int,
        hidden: int,
        V: int = 1,
        sigma: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(sigma, V, seed)
        self.D_in, self.hidden = (
            integer("D_in", D_in),
            integer("hidden", hidden),
        )
        gen = torch_generator(seed)
        self.U = gaussian_parameter(gen, self.sigma, self.hidden, self.D_in)
        self.W_out = gaussian_parameter(gen, self.sigma, self.V, self.hidden)

    def _config(self) -> dict[str, Any]:
        return dict(
            D_in=self.D_in,
            hidden=self.hidden,
            V=self.V,
            sigma=self.sigma,
            seed=self.seed,
        )

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        x = tensor("x", inputs, 1 if single else 2)
        check_sizes("x", x, {-1: self.D_in})
        return (x,)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        (x,) = inputs
        return torch.tanh(x @ params["U"].T) @ params["W_out"].T

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        return {"U": W[: self.D_in].T, "W_out": W[self.D_in :]}

    def units(self) -> Tensor:
        return torch.cat([self.U.T, self.W_out], dim=0).detach().clone()

    def effective_map(self) -> Tensor:
        return self.W_out @ self.U

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF whose effective map is
        ``T`` (V, D_in): ``T x``."""
        (x,) = self._check_inputs(inputs)
        return x @ tensor("T", T, 2, (self.V, self.D_in)).T

    def sample_inputs(self, m: int, seed: int = 0) -> Tensor:
        """``m`` exactly whitened Gaussian inputs (m, D_in)."""
        return torch.as_tensor(whitened_gaussian(m, self.D_in, seed))

    def _nqf(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        """The NQF (twin forward): ``f = tanh'(0) V U x = V U x`` (Eq. 6)."""
        (x,) = inputs
        return (x @ params["U"].T) @ params["W_out"].T


# ----------------------------------------------------------------------------
# registered model
# ----------------------------------------------------------------------------


class TwoLayerMLP(ModuleModel):
    """The two-layer bias-free MLP ``Σ_i v_i φ(u_iᵀ x)`` with an activation of
    φ(0) = 0 (Prop. 1).

    Parameters
    ----------
    k : int >= 1
        Input dimension.
    act : str
        An activation of :data:`~nqf_lite.expansion.models.blocks.ACTIVATIONS`
        with φ(0) = 0 and a derivative at 0 (not ReLU).  For an odd one (tanh,
        erf) the remainder is O(ε⁴), else O(ε³); ``"identity"`` makes the model
        linear in each factor, hence exactly its NQF.
    width : int >= 1
        Neurons drawn by :meth:`sample`.
    """

    name = "mlp"
    title = "two-layer MLP"
    reference = "Table 3, row 9; Prop. 1, Eqs. 5-6; App. B.2"
    exact = False
    remainder = 4

    def __init__(self, k: int = 3, act: str = "tanh", width: int = 3) -> None:
        _, phi0, dphi0 = activation(act, "act")
        if phi0 != 0.0:
            raise ValueError(
                f"act must have φ(0) = 0 for this model, got {act!r}"
            )
        if dphi0 is None:
            raise ValueError(
                "act must be differentiable at 0 (Thm 1 needs a Taylor "
                f"expansion), got {act!r}"
            )
        self.k, self.width, self.act, self.dphi0 = (
            integer("k", k),
            integer("width", width),
            act,
            dphi0,
        )
        self.exact = act == "identity"
        self.remainder = 4 if act in _ODD else 3
        self.module = mlp_module(self.k, act)

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real vector of shape ``(k,)``."""
        return vector("x", x, self.k)

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 6 (``g = 0`` since φ(0) = 0)."""
        return Structure(A=A_mlp(self.check_input(x), self.dphi0))

    def sample_input(self, rng: np.random.Generator) -> np.ndarray:
        """A standard normal input (k,)."""
        return rng.standard_normal(self.k)


MLP = register(TwoLayerMLP())
