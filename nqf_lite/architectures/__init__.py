"""Symmetric neural modules and their closed-form structure matrices (paper §3).

Every module here is a sum over ``d`` interchangeable units ("neurons").  Each
factory returns a :class:`SymmetricModule`: a callable ``f(W, x)`` that
:func:`nqf_lite.expand` accepts (``W`` of shape ``(p, d)``, float64, one neuron
per column) together with the :class:`Layout` of one neuron's ``p`` parameters.
Next to each factory sits the closed-form structure matrix of the paper's
proposition as a NumPy function, so that the autograd coefficients of
:func:`nqf_lite.expand` can be checked against the algebra:

- :func:`mlp` with :func:`A_mlp`, :func:`g_mlp`: Prop. 1, Eqs. 5-6; App. B.2;
- :func:`cnn` with :func:`A_cnn`: Prop. 6, Eqs. 15-16;
- :func:`mha` with :func:`A_mha`, :func:`mha_quartic`: Prop. 2, Eqs. 7-8;
- :func:`qk_head` with :func:`A_qk`: Prop. 3, Eqs. 9-10;
- :func:`logits_head` with :func:`A_logits`: Prop. 4, Eqs. 11-12;
- :func:`moe` with :func:`A_moe`: Prop. 5, Eqs. 13-14;
- :func:`mean_field_mlp` with :func:`coeffs_mean_field_mlp`: a module with
  ``g, B != 0`` (App. B.1, Eq. 20).

Vectorisation is column-major throughout (``vec(A X B) = (Bᵀ ⊗ A) vec(X)``):
matrix entry ``[a, b]`` of an ``r x c`` block sits at offset ``a + r*b``.

The module also holds the feed-forward block form of Eqs. 17-19
(:func:`feedforward_blocks`, :func:`representation`), the two helpers the
chapters use to measure truncation orders (:func:`truncation_error`,
:func:`loglog_slope`) and a picture of A's block sparsity
(:func:`plot_structure`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from .._checks import integer
from ..structure import Expansion

__all__ = [
    "ACTIVATIONS",
    "activation",
    "Layout",
    "SymmetricModule",
    "Expert",
    "mlp_layout",
    "mlp",
    "A_mlp",
    "g_mlp",
    "mean_field_mlp",
    "coeffs_mean_field_mlp",
    "patches",
    "cnn",
    "A_cnn",
    "token_mean",
    "token_covariance",
    "mha_layout",
    "mha",
    "A_mha",
    "mha_quartic",
    "qk_head",
    "A_qk",
    "logits_head",
    "A_logits",
    "linear_expert",
    "mlp_expert",
    "G_linear",
    "moe",
    "A_moe",
    "feedforward_blocks",
    "representation",
    "loglog_slope",
    "truncation_error",
    "plot_structure",
]

_LN2 = math.log(2.0)

#: Activations by name: ``name -> (torch function, φ(0), φ'(0))``.  ``φ'(0)`` is
#: ``None`` for ReLU, which has no derivative at the origin.
ACTIVATIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], float, float | None]] = {
    "tanh": (torch.tanh, 0.0, 1.0),
    "gelu": (F.gelu, 0.0, 0.5),
    "sigmoid": (torch.sigmoid, 0.5, 0.25),
    "softplus0": (lambda z: F.softplus(z) - _LN2, 0.0, 0.5),
    "erf": (torch.erf, 0.0, 2.0 / math.sqrt(math.pi)),
    "identity": (lambda z: z, 0.0, 1.0),
    "relu": (torch.relu, 0.0, None),
}


def activation(name: str) -> tuple[Callable[[torch.Tensor], torch.Tensor], float, float | None]:
    """Look up an activation by name.

    Parameters
    ----------
    name : str
        One of ``ACTIVATIONS``: ``"tanh"``, ``"gelu"`` (exact, erf form),
        ``"sigmoid"``, ``"softplus0"`` (softplus − ln 2, so φ(0) = 0), ``"erf"``,
        ``"identity"``, ``"relu"``.

    Returns
    -------
    (phi, phi0, dphi0)
        The torch function, φ(0) and φ'(0) (``None`` for ReLU).
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
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
        The named blocks in order.  Shape ``()`` is a scalar, ``(n,)`` a vector,
        ``(r, c)`` a matrix stored as its column-major ``vec``.
    """

    blocks: tuple[tuple[str, tuple[int, ...]], ...]

    def __post_init__(self) -> None:
        names = [n for n, _ in self.blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"block names must be unique, got {names}")
        for name, shape in self.blocks:
            if len(shape) > 2 or any(int(s) < 1 for s in shape):
                raise ValueError(f"block {name!r} needs a shape of 0-2 positive sizes, got {shape}")

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
                f"{arg} must have shape (p={self.p}, d) for layout {self.names}, got {tuple(W.shape)}"
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
                out[name] = cube.permute(2, 1, 0) if torch.is_tensor(cube) else cube.transpose(2, 1, 0)
        return out

    def pack(self, blocks: dict[str, np.ndarray]) -> np.ndarray:
        """Inverse of :meth:`unpack` for NumPy blocks of shape ``(d, *shape)``.

        Returns
        -------
        numpy.ndarray
            ``W`` of shape ``(p, d)``.
        """
        if set(blocks) != set(self.names):
            raise ValueError(f"blocks must have exactly the keys {self.names}, got {sorted(blocks)}")
        cols = []
        d = None
        for name, shape in self.blocks:
            b = np.asarray(blocks[name], dtype=float)
            d = b.shape[0] if d is None else d
            if b.shape != (d, *shape):
                raise ValueError(f"block {name!r} must have shape {(d, *shape)}, got {b.shape}")
            # column-major vec of each neuron's block: transpose the last two axes, then flatten
            flat = b.reshape(d, -1) if len(shape) < 2 else b.transpose(0, 2, 1).reshape(d, -1)
            cols.append(flat.T)
        return np.concatenate(cols, axis=0)

    def edges(self) -> list[tuple[int, int, str]]:
        """``(start, stop, name)`` of every block, for labelling pictures of ``A``."""
        return [(sl.start, sl.stop, name) for name, sl in self.slices().items()]


@dataclass(frozen=True)
class SymmetricModule:
    """A module ``f(W, x) = Σ_i φ(w_i; x)``-like callable with its neuron layout.

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
    """

    fn: Callable[[torch.Tensor, Any], torch.Tensor]
    layout: Layout
    V: int | None
    name: str

    @property
    def p(self) -> int:
        """Parameters per neuron."""
        return self.layout.p

    def __call__(self, W: torch.Tensor, x: Any) -> torch.Tensor:
        W = torch.as_tensor(W, dtype=torch.float64)
        self.layout.check(W)
        return self.fn(W, x)


def _t(a: Any) -> torch.Tensor:
    return torch.as_tensor(a, dtype=torch.float64)


def _pos_int(name: str, value: Any) -> int:
    return integer(name, value, minimum=1)


def _outputs(V: Any) -> int | None:
    return None if V is None else _pos_int("V", V)


def _real(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, got {value!r}") from exc
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return out


def _vector(name: str, a: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(a, dtype=float)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = "(n,)" if n is None else f"({n},)"
        raise ValueError(f"{name} must be a vector of shape {want}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _context(name: str, X: Any, D: int | None = None) -> np.ndarray:
    arr = np.asarray(X, dtype=float)
    if arr.ndim != 2 or (D is not None and arr.shape[0] != D):
        want = "(D, N)" if D is None else f"({D}, N)"
        raise ValueError(f"{name} must be a token matrix of shape {want}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _offdiag(C: np.ndarray, scale: float) -> np.ndarray:
    """``scale * [[0, C], [Cᵀ, 0]]`` (the feed-forward form, Eq. 17)."""
    n1, n2 = C.shape
    A = np.zeros((n1 + n2, n1 + n2))
    A[:n1, n1:] = scale * C
    A[n1:, :n1] = scale * C.T
    return A


def _per_output(C_of_o: Callable[[int], np.ndarray], V: int | None, scale: float) -> np.ndarray:
    """Scalar: ``_offdiag(C, scale)``; vector: one such matrix per output ``o``."""
    if V is None:
        return _offdiag(C_of_o(0), scale)
    return np.stack([_offdiag(C_of_o(o), scale) for o in range(V)])


# ----------------------------------------------------------------------------
# Prop. 1: two-layer MLP
# ----------------------------------------------------------------------------


def mlp_layout(k: int, V: int | None = None) -> Layout:
    """Neuron of a two-layer MLP: ``w = [u (k); v (1 or V)]`` (Eq. 5)."""
    k, V = _pos_int("k", k), _outputs(V)
    return Layout((("u", (k,)), ("v", () if V is None else (V,))))


def mlp(k: int, act: str = "tanh", V: int | None = None) -> SymmetricModule:
    """Two-layer bias-free MLP ``f(W, x) = Σ_i v_i φ(u_iᵀ x)`` (Eq. 5; App. B.2).

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
    SymmetricModule
        ``f(W, x)`` with ``W`` of shape ``(k + (V or 1), d)`` and ``x`` of shape ``(k,)``.
    """
    phi, _, _ = activation(act)
    layout = mlp_layout(k, V)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = _t(x)
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
    x, dphi0, V = _vector("x", x), _real("dphi0", dphi0), _outputs(V)
    if V is None:
        return _offdiag(x[:, None], dphi0 / 2)
    return _per_output(lambda o: np.outer(x, np.eye(V)[o]), V, dphi0 / 2)


def g_mlp(x: Any, phi0: float, V: int | None = None) -> np.ndarray:
    """Linear coefficient when φ(0) ≠ 0 (App. B.1): ``g = φ(0) [0_k; 1]``.

    For ``V`` outputs ``g^(o) = φ(0) [0_k; e_o]``; shape ``(k+1,)`` or ``(V, k+V)``.
    """
    x, phi0, V = _vector("x", x), _real("phi0", phi0), _outputs(V)
    k = x.shape[0]
    if V is None:
        return np.concatenate([np.zeros(k), [phi0]])
    return np.concatenate([np.zeros((V, k)), phi0 * np.eye(V)], axis=1)


def mean_field_mlp(k: int, act: str = "sigmoid", outer: str = "softplus0") -> SymmetricModule:
    """A symmetric but non-additive module: ``f = ρ(Σ_i v_i φ(u_iᵀx))``.

    The output nonlinearity ρ couples all neurons ("mean-field" readout), so the
    Hessian at the origin has off-diagonal blocks ``2B ≠ 0`` when
    ``φ(0) ρ''(0) ≠ 0``; with ``φ(0) ≠ 0`` the linear coefficient ``g`` is
    non-zero too (App. B.1, Eq. 20).  Neuron layout as :func:`mlp_layout`.
    """
    phi, _, _ = activation(act)
    rho, _, _ = activation(outer)
    layout = mlp_layout(k)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = _t(x)
        if x.shape != (k,):
            raise ValueError(f"x must have shape ({k},), got {tuple(x.shape)}")
        b = layout.unpack(W)
        return rho(phi(b["u"] @ x) @ b["v"])

    return SymmetricModule(fn, layout, None, f"{outer}({act} MLP)")


def coeffs_mean_field_mlp(
    x: Any, phi0: float, dphi0: float, drho0: float, ddrho0: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed-form ``(g, B, A)`` of :func:`mean_field_mlp` in the form of Eq. 20.

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
    x = _vector("x", x)
    phi0, dphi0 = _real("phi0", phi0), _real("dphi0", dphi0)
    drho0, ddrho0 = _real("drho0", drho0), _real("ddrho0", ddrho0)
    k = x.shape[0]
    g = np.zeros(k + 1)
    g[k] = drho0 * phi0
    B = np.zeros((k + 1, k + 1))
    B[k, k] = 0.5 * ddrho0 * phi0**2
    return g, B, A_mlp(x, drho0 * dphi0)


# ----------------------------------------------------------------------------
# Prop. 6: single-layer CNN with global sum pooling
# ----------------------------------------------------------------------------


def _image(X: Any) -> np.ndarray:
    arr = np.asarray(X, dtype=float)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"X must be an image of shape (H, W) or (C, H, W), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("X must be finite")
    return arr


def _kernel(kernel_shape: Any, img: np.ndarray) -> tuple[int, int]:
    if not isinstance(kernel_shape, (tuple, list)) or len(kernel_shape) != 2:
        raise ValueError(f"kernel_shape must be a pair (kh, kw), got {kernel_shape!r}")
    kh, kw = (_pos_int("kernel_shape[0]", kernel_shape[0]), _pos_int("kernel_shape[1]", kernel_shape[1]))
    if kh > img.shape[1] or kw > img.shape[2]:
        raise ValueError(f"kernel_shape {(kh, kw)} is larger than the image {img.shape[1:]}")
    return kh, kw


def patches(X: Any, kernel_shape: tuple[int, int]) -> np.ndarray:
    """Stride-1, no-padding patches of an image, flattened ``(channel, row, col)``.

    Parameters
    ----------
    X : array_like, shape (H, W) or (C, H, W)
        Input feature map.
    kernel_shape : (kh, kw)
        Filter size.

    Returns
    -------
    numpy.ndarray, shape (P, m)
        ``P = (H-kh+1)(W-kw+1)`` patches ``x_p`` of ``m = C kh kw`` entries.
    """
    img = _image(X)
    kh, kw = _kernel(kernel_shape, img)
    _, H, Wd = img.shape
    return np.stack(
        [img[:, i : i + kh, j : j + kw].ravel() for i in range(H - kh + 1) for j in range(Wd - kw + 1)]
    )


def cnn(
    kernel_shape: tuple[int, int], channels: int = 1, act: str = "tanh", V: int | None = None
) -> SymmetricModule:
    """Single-layer CNN with global sum pooling, ``Σ_i v_i Σ_p φ(k_iᵀ x_p)`` (Eq. 15).

    Neuron ``i`` is one filter: ``w = [k (m = channels·kh·kw, flattened
    (channel, row, col)); v (1 or V)]``.  The input ``X`` has shape ``(H, W)``
    (one channel) or ``(channels, H, W)``; stride 1, no padding.
    """
    kh, kw = _pos_int("kernel_shape[0]", kernel_shape[0]), _pos_int("kernel_shape[1]", kernel_shape[1])
    C = _pos_int("channels", channels)
    phi, _, _ = activation(act)
    V = _outputs(V)
    layout = Layout((("k", (C * kh * kw,)), ("v", () if V is None else (V,))))

    def fn(W: torch.Tensor, X: Any) -> torch.Tensor:
        img = _t(X)
        img = img[None] if img.ndim == 2 else img
        if img.ndim != 3 or img.shape[0] != C or img.shape[1] < kh or img.shape[2] < kw:
            raise ValueError(
                f"X must have shape ({C}, H>={kh}, W>={kw}) (or (H, W) for one channel), "
                f"got {tuple(_t(X).shape)}"
            )
        b = layout.unpack(W)
        filt = b["k"].reshape(-1, C, kh, kw)
        pooled = phi(F.conv2d(img[None], filt)).sum(dim=(0, 2, 3))  # (d,)
        return pooled @ b["v"]

    return SymmetricModule(fn, layout, V, f"{act} CNN")


def A_cnn(X: Any, kernel_shape: tuple[int, int], dphi0: float, V: int | None = None) -> np.ndarray:
    """Structure matrix of the CNN (Prop. 6, Eq. 16): the MLP's with ``x = Σ_p x_p``.

    Returns
    -------
    numpy.ndarray
        ``(m+1, m+1)`` or ``(V, m+V, m+V)``.
    """
    return A_mlp(patches(X, kernel_shape).sum(axis=0), dphi0, V)


# ----------------------------------------------------------------------------
# Props. 2-4: attention
# ----------------------------------------------------------------------------


def token_mean(X: Any) -> np.ndarray:
    """``x̄ = X 1_N / N`` for a token matrix ``X`` of shape ``(D, N)``."""
    return _context("X", X).mean(axis=1)


def token_covariance(X: Any) -> np.ndarray:
    """Token covariance ``Σ_X = X Xᵀ/N − x̄ x̄ᵀ`` (Prop. 3)."""
    X = _context("X", X)
    xbar = X.mean(axis=1)
    return X @ X.T / X.shape[1] - np.outer(xbar, xbar)


def _xX(x: Any, X: Any, D: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    x = _vector("x", x, D)
    return x, _context("X", X, x.shape[0])


def _inputs_t(inputs: Any, D: int) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
        raise TypeError("the input of an attention module must be a pair (x, X)")
    x, X = _t(inputs[0]), _t(inputs[1])
    if x.shape != (D,) or X.ndim != 2 or X.shape[0] != D:
        raise ValueError(f"attention input must be x of shape ({D},) and X of shape ({D}, N), "
                         f"got {tuple(x.shape)} and {tuple(X.shape)}")
    return x, X


def mha_layout(D: int, d_k: int, d_v: int, V: int | None = None) -> Layout:
    """Head ``w = vec(W_Q, W_K, W_V, v)`` (Prop. 2), or ``… , vec W_O`` for ``V`` outputs.

    ``W_Q, W_K ∈ R^{d_k×D}``, ``W_V ∈ R^{d_v×D}``, ``v ∈ R^{d_v}``,
    ``W_O ∈ R^{V×d_v}``; ``p = 2 d_k D + d_v D + d_v (or V d_v)``.
    """
    D, d_k, d_v, V = _pos_int("D", D), _pos_int("d_k", d_k), _pos_int("d_v", d_v), _outputs(V)
    readout = ("v", (d_v,)) if V is None else ("W_O", (V, d_v))
    return Layout((("W_Q", (d_k, D)), ("W_K", (d_k, D)), ("W_V", (d_v, D)), readout))


def mha(D: int, d_k: int, d_v: int, V: int | None = None) -> SymmetricModule:
    """Multi-head softmax attention, one head per neuron (Eq. 7).

    ``f(W, (x, X)) = Σ_i v_iᵀ W_V,i X softmax(Xᵀ W_K,iᵀ W_Q,i x / √d_k)``
    (``W_O,i`` in place of ``v_iᵀ`` for ``V`` outputs); ``x ∈ R^D`` is the
    query token, ``X ∈ R^{D×N}`` the context.  Layout: :func:`mha_layout`.
    """
    layout = mha_layout(D, d_k, d_v, V)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)
        q = b["W_Q"] @ x  # (d, d_k)
        keys = b["W_K"] @ X  # (d, d_k, N)
        att = torch.softmax(torch.einsum("hk,hkn->hn", q, keys) / math.sqrt(d_k), dim=-1)
        heads = torch.einsum("hvn,hn->hv", b["W_V"] @ X, att)  # (d, d_v)
        if V is None:
            return (b["v"] * heads).sum()
        return torch.einsum("hov,hv->o", b["W_O"], heads)

    return SymmetricModule(fn, layout, V, "attention")


def A_mha(x: Any, X: Any, d_k: int, d_v: int, V: int | None = None) -> np.ndarray:
    """Structure matrix of multi-head attention (Prop. 2, Eq. 8).

    Only the ``(vec W_V, v)`` block is non-zero: ``½ (x̄ ⊗ I_{d_v})`` and its
    transpose; query and key blocks vanish at quadratic order (they enter at
    quartic order, see :func:`mha_quartic`).  For ``V`` outputs,
    ``A^(o)`` couples ``W_V[a, b]`` with ``W_O[o, a]`` with weight ``x̄_b / 2``.
    ``x`` is accepted for a uniform signature and checked, but does not enter.

    Returns
    -------
    numpy.ndarray
        ``(p, p)`` or ``(V, p, p)`` with ``p`` from :func:`mha_layout`.
    """
    x, X = _xX(x, X)
    D = x.shape[0]
    layout = mha_layout(D, d_k, d_v, V)
    sl = layout.slices()
    xbar = X.mean(axis=1)
    start = sl["W_V"].start  # Q and K rows are all zero

    def C(o: int) -> np.ndarray:
        if V is None:
            return np.kron(xbar[:, None], np.eye(d_v))  # (d_v D, d_v)
        # W_V[a, b] (row a + d_v b) with W_O[o, a] (column o + V a)
        block = np.zeros((d_v * D, V * d_v))
        for a in range(d_v):
            block[a + d_v * np.arange(D), o + V * a] = xbar
        return block

    core = _per_output(C, V, 0.5)
    A = np.zeros(core.shape[:-2] + (layout.p, layout.p))
    A[..., start:, start:] = core
    return A


def mha_quartic(W: Any, x: Any, X: Any, d_k: int, d_v: int, V: int | None = None) -> np.ndarray:
    """The quartic term of attention, where ``W_Q`` and ``W_K`` first appear.

    ``(1/√d_k) Σ_i v_iᵀ W_V,i Σ_X W_K,iᵀ W_Q,i x`` (``W_O,i`` for ``v_iᵀ`` with
    ``V`` outputs), from ``softmax(L) = 1/N + J L + O(L²)`` with
    ``X J Xᵀ = Σ_X`` (App. A.5-A.6).

    Returns
    -------
    numpy.ndarray
        Shape ``()`` or ``(V,)``.
    """
    x, X = _xX(x, X)
    layout = mha_layout(x.shape[0], d_k, d_v, V)
    b = layout.unpack(np.asarray(W, dtype=float))
    S = token_covariance(X)
    inner = np.einsum("hvD,DE,hkE,hkF,F->hv", b["W_V"], S, b["W_K"], b["W_Q"], x) / math.sqrt(d_k)
    if V is None:
        return np.asarray(np.sum(b["v"] * inner))
    return np.einsum("hov,hv->o", b["W_O"], inner)


def qk_head(c: Any, d_k: int) -> SymmetricModule:
    """Query-key-only heads with a fixed readout ``c ∈ R^D`` (Eq. 9).

    ``f(W, (x, X)) = Σ_i cᵀ X softmax(Xᵀ W_K,iᵀ W_Q,i x / √d_k)``; head
    ``w = [vec W_Q; vec W_K]``, ``p = 2 d_k D``.
    """
    c_np = _vector("c", c)
    D, d_k = c_np.shape[0], _pos_int("d_k", d_k)
    layout = Layout((("W_Q", (d_k, D)), ("W_K", (d_k, D))))
    c_t = _t(c_np)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)
        logits = torch.einsum("hk,hkn->hn", b["W_Q"] @ x, b["W_K"] @ X) / math.sqrt(d_k)
        return (torch.softmax(logits, dim=-1) @ (X.T @ c_t)).sum()

    return SymmetricModule(fn, layout, None, "QK-only attention")


def A_qk(x: Any, X: Any, c: Any, d_k: int) -> np.ndarray:
    """Structure matrix of the QK-only head (Prop. 3, Eq. 10).

    ``A = (1/(2√d_k)) [[0, x uᵀ ⊗ I_{d_k}], [u xᵀ ⊗ I_{d_k}, 0]]`` with
    ``u = Σ_X c``; shape ``(2 d_k D, 2 d_k D)``.
    """
    x, X = _xX(x, X)
    c = _vector("c", c, x.shape[0])
    d_k = _pos_int("d_k", d_k)
    u = token_covariance(X) @ c
    return _offdiag(np.kron(np.outer(x, u), np.eye(d_k)), 1 / (2 * math.sqrt(d_k)))


def logits_head(c: Any, d_k: int) -> SymmetricModule:
    """Single-head attention whose neurons are the rows of ``W_Q`` and ``W_K`` (Eq. 11).

    ``f(W, (x, X)) = cᵀ X softmax(Xᵀ W_Kᵀ W_Q x / √d_k)`` with ``W ∈ R^{2D×d}``:
    column ``i`` is ``w_i = [q_i; k_i]``, the i-th rows of ``W_Q`` and ``W_K``.
    In the paper's model the width is ``d = d_k``; the scale ``1/√d_k`` is held
    fixed here so that the module is defined (and symmetric) at every width.
    """
    c_np = _vector("c", c)
    D, d_k = c_np.shape[0], _pos_int("d_k", d_k)
    layout = Layout((("q", (D,)), ("k", (D,))))
    c_t = _t(c_np)

    def fn(W: torch.Tensor, inputs: Any) -> torch.Tensor:
        x, X = _inputs_t(inputs, D)
        b = layout.unpack(W)  # q, k: (d, D), the rows of W_Q, W_K
        logits = X.T @ (b["k"].T @ (b["q"] @ x)) / math.sqrt(d_k)
        return torch.softmax(logits, dim=0) @ (X.T @ c_t)

    return SymmetricModule(fn, layout, None, "attention logits")


def A_logits(x: Any, X: Any, c: Any, d_k: int) -> np.ndarray:
    """Structure matrix of the single-head logits (Prop. 4, Eq. 12).

    ``A = (1/(2√d_k)) [[0, x uᵀ], [u xᵀ, 0]]``, ``u = Σ_X c``; shape ``(2D, 2D)``.
    """
    x, X = _xX(x, X)
    c = _vector("c", c, x.shape[0])
    d_k = _pos_int("d_k", d_k)
    return _offdiag(np.outer(x, token_covariance(X) @ c), 1 / (2 * math.sqrt(d_k)))


# ----------------------------------------------------------------------------
# Prop. 5: mixture of experts
# ----------------------------------------------------------------------------


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
    """Linear expert ``E = θᵀx`` (``θ ∈ R^k``) or ``E = Θ x`` (``Θ ∈ R^{V×k}``)."""
    k, V = _pos_int("k", k), _outputs(V)
    if V is None:
        return Expert((("theta", (k,)),), lambda th, x: th["theta"] @ x, None, "linear expert")
    return Expert((("Theta", (V, k)),), lambda th, x: th["Theta"] @ x, V, "linear expert")


def mlp_expert(k: int, hidden: int, act: str = "tanh") -> Expert:
    """Bias-free two-layer expert ``E = aᵀ φ(U x)``: itself ZGZ, so ``∇_Θ E(x; 0) = 0``."""
    k, hidden = _pos_int("k", k), _pos_int("hidden", hidden)
    phi, _, _ = activation(act)
    return Expert(
        (("U", (hidden, k)), ("a", (hidden,))),
        lambda th, x: (phi(th["U"] @ x) * th["a"]).sum(-1),
        None,
        f"{act} MLP expert",
    )


def G_linear(x: Any, V: int | None = None) -> np.ndarray:
    """``G = ∇_Θ E(x; 0)`` of :func:`linear_expert`: ``x``, or ``(V, V k)`` with rows ``x ⊗ e_o``."""
    x, V = _vector("x", x), _outputs(V)
    return x.copy() if V is None else np.kron(x[None, :], np.eye(V))


def moe(k: int, expert: Expert, gate: str = "tanh") -> SymmetricModule:
    """Mixture of experts with independent gates, ``Σ_i ψ(r_iᵀx) E(x; Θ_i)`` (Eq. 13).

    Neuron ``w = [r (k); Θ (expert.blocks)]``; the gate ψ needs ψ(0) = 0.
    """
    k = _pos_int("k", k)
    if not isinstance(expert, Expert):
        raise TypeError(f"expert must be an Expert (see linear_expert), got {type(expert).__name__}")
    psi, psi0, _ = activation(gate)
    if psi0 != 0.0:
        raise ValueError(f"gate must satisfy ψ(0) = 0, but {gate!r} has ψ(0) = {psi0}")
    layout = Layout((("r", (k,)),) + expert.blocks)

    def fn(W: torch.Tensor, x: Any) -> torch.Tensor:
        x = _t(x)
        if x.shape != (k,):
            raise ValueError(f"x must have shape ({k},), got {tuple(x.shape)}")
        b = layout.unpack(W)
        gates = psi(b.pop("r") @ x)  # (d,)
        return gates @ expert.fn(b, x)

    return SymmetricModule(fn, layout, expert.V, f"MoE ({gate} gate, {expert.name})")


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
    x, dpsi0 = _vector("x", x), _real("dpsi0", dpsi0)
    G = np.asarray(G, dtype=float)
    if G.ndim not in (1, 2) or G.shape[-1] < 1:
        raise ValueError(f"G must have shape (q,) or (V, q), got {G.shape}")
    if G.ndim == 1:
        return _offdiag(np.outer(x, G), dpsi0 / 2)
    return _per_output(lambda o: np.outer(x, G[o]), G.shape[0], dpsi0 / 2)


# ----------------------------------------------------------------------------
# Eqs. 17-19: feed-forward block form
# ----------------------------------------------------------------------------


def _is_split(A: np.ndarray, s: int, atol: float) -> bool:
    return bool(np.all(np.abs(A[..., :s, :s]) <= atol) and np.all(np.abs(A[..., s:, s:]) <= atol))


def feedforward_blocks(A: Any, split: int | None = None, atol: float = 1e-12) -> tuple[np.ndarray, int]:
    """Detect the feed-forward form ``A = ½ [[0, C], [Cᵀ, 0]]`` (Eq. 17) and return ``C``.

    Parameters
    ----------
    A : array_like, shape (p, p) or (V, p, p)
        Symmetric structure matrix (one per output for vector outputs).
    split : int, optional
        Row where ``Z1`` ends and ``Z2`` begins (``W = [Z1; Z2]``, Eq. 18).
        When omitted, the smallest split with both diagonal blocks zero is used.
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
    A = np.asarray(A, dtype=float)
    if A.ndim not in (2, 3) or A.shape[-1] != A.shape[-2] or A.shape[-1] < 2:
        raise ValueError(f"A must have shape (p, p) or (V, p, p) with p >= 2, got {A.shape}")
    if not np.allclose(A, np.swapaxes(A, -1, -2), rtol=0.0, atol=atol):
        raise ValueError("A must be symmetric")
    p = A.shape[-1]
    if split is None:
        found = [s for s in range(1, p) if _is_split(A, s, atol)]
        if not found:
            raise ValueError("A has no feed-forward form ½[[0, C], [Cᵀ, 0]] (Eq. 17) for any split")
        split = found[0]
    elif isinstance(split, bool) or not isinstance(split, (int, np.integer)) or not 1 <= split < p:
        raise ValueError(f"split must be an integer in [1, {p - 1}], got {split!r}")
    elif not _is_split(A, int(split), atol):
        raise ValueError(f"A is not of the form ½[[0, C], [Cᵀ, 0]] with split={split}")
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
    W, C = np.asarray(W, dtype=float), np.asarray(C, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"W must have shape (p, d), got {W.shape}")
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)) or not 1 <= split < W.shape[0]:
        raise ValueError(f"split must be an integer in [1, {W.shape[0] - 1}], got {split!r}")
    if C.shape != (split, W.shape[0] - split):
        raise ValueError(f"C must have shape ({split}, {W.shape[0] - split}), got {C.shape}")
    return W[:split].T @ C


# ----------------------------------------------------------------------------
# truncation order
# ----------------------------------------------------------------------------


def loglog_slope(x: Any, y: Any) -> float:
    """Least-squares slope of ``log y`` against ``log x``.

    Raises
    ------
    ValueError
        If the arrays differ in shape, have fewer than two points, or contain
        non-positive or non-finite entries.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(f"x and y must be 1-D of equal length >= 2, got {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
        raise ValueError("x and y must be finite and positive for a log-log fit")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def truncation_error(
    f: Callable[[torch.Tensor, Any], torch.Tensor],
    expansion: Any,
    x: Any,
    W: Any,
    eps_grid: Any,
    correction: Callable[[np.ndarray], Any] | None = None,
) -> np.ndarray:
    """``|f(εW; x) − NQF(εW; x)|`` for every ε (Eq. 20; Thm 1's remainder).

    Parameters
    ----------
    f : callable
        The module, ``f(W, x)`` as given to :func:`nqf_lite.expand`.
    expansion : Expansion
        The Taylor coefficients, e.g. from :func:`nqf_lite.expand`; its
        ``predict(W)`` gives ``f0 + gᵀμ + μᵀBμ + Tr[M A]``.
    x : any
        The module's input.
    W : array_like, shape (p, d)
        Direction in weight space.
    eps_grid : array_like
        Positive scales ε.
    correction : callable, optional
        ``correction(εW)`` added to the NQF prediction, for higher-order terms
        (e.g. :func:`mha_quartic`).

    Returns
    -------
    numpy.ndarray
        The error per ε (Euclidean norm over outputs for vector modules).
    """
    W = np.asarray(W, dtype=float)
    eps = np.asarray(eps_grid, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"W must have shape (p, d), got {W.shape}")
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError("eps_grid must be a non-empty 1-D array of positive numbers")
    if not isinstance(expansion, Expansion):
        raise TypeError(f"expansion must be an Expansion (from expand), got {type(expansion).__name__}")
    if expansion.p != W.shape[0]:
        raise ValueError(f"expansion has p={expansion.p}, which does not match W with {W.shape[0]} rows")
    errs = []
    with torch.no_grad():
        for e in eps:
            We = e * W
            exact = f(torch.as_tensor(We, dtype=torch.float64), x).detach().numpy()
            approx = expansion.predict(We)
            if correction is not None:
                approx = approx + np.asarray(correction(We), dtype=float)
            errs.append(float(np.linalg.norm(np.atleast_1d(exact - approx))))
    return np.array(errs)


def plot_structure(ax: Any, A: Any, layout: Layout, title: str | None = None) -> Any:
    """Draw ``|A|`` with the neuron's parameter blocks marked and named.

    Parameters
    ----------
    ax : matplotlib Axes
    A : array_like, shape (p, p)
        One structure matrix (pick one output of a vector module).
    layout : Layout
        The neuron layout, for block boundaries and tick labels.
    title : str, optional

    Returns
    -------
    matplotlib.image.AxesImage
    """
    A = np.abs(np.asarray(A, dtype=float))
    if A.shape != (layout.p, layout.p):
        raise ValueError(
            f"A must have shape ({layout.p}, {layout.p}) for layout {layout.names}, got {A.shape}"
        )
    im = ax.imshow(A, cmap="Blues", interpolation="nearest")
    centres = []
    for start, stop, _ in layout.edges():
        if start > 0:
            ax.axhline(start - 0.5, color="0.4", lw=0.7)
            ax.axvline(start - 0.5, color="0.4", lw=0.7)
        centres.append((start + stop - 1) / 2)
    ax.set_xticks(centres, layout.names, fontsize=7, rotation=90)
    ax.set_yticks(centres, layout.names, fontsize=7)
    ax.grid(False)
    if title:
        ax.set_title(title, fontsize=9)
    return im
