"""Real torch networks, their NQF twins, and a side-by-side trainer (paper Sec. 7, Fig. 2, App. C).

Four permutation-symmetric architectures, each with ``V`` outputs, bias-free,
float64, and every trainable weight drawn i.i.d. from ``N(0, sigma^2)`` with an
explicit seed:

- :class:`TanhMLP` -- ``f = V tanh(U x)`` (Prop. 1, Eq. 5);
- :class:`TanhCNN` -- one 2-D convolution (stride 1, no padding), tanh, global
  sum pooling and a linear readout (Prop. 6, Eq. 15);
- :class:`QKAttention` -- query-key-only heads with a fixed readout ``C``
  (Prop. 3, Eq. 9);
- :class:`MultiHeadAttention` -- heads with query, key, value and output
  matrices (Prop. 2, Eq. 7).

Each network's ``twin()`` is a module of the same class family holding a copy of
the SAME parameters whose forward pass is the network's neural quadratic form
``f0 + Tr[M A(x)]`` (Theorem 1), written as a cheap torch expression rather than
a dense ``A`` (the multi-head ``A`` would hold ``m V p^2`` numbers):

- MLP: ``sigma'(0) V U x`` with ``sigma'(0) = 1`` for tanh (Eq. 6);
- CNN: ``V K sum_p x_p`` (Eq. 16);
- QK heads: ``H c^T xbar + c^T Sigma_X (sum_h W_K,h^T W_Q,h / sqrt(d_k)) x`` (Eq. 10, ``u = Sigma_X c``);
- MHA: ``sum_h W_O,h W_V,h xbar`` (Eq. 8); ``W_Q`` and ``W_K`` are carried along
  but do not enter, so gradient descent never moves them.

:func:`teacher_task` builds one panel of paper Fig. 2 (App. C sizes, whitened inputs,
teacher targets).  Both members of a pair expose the same *effective linear map* (``V U``,
``V K``, ``sum_h W_K,h^T W_Q,h/sqrt(d_k)``, ``sum_h W_O,h W_V,h``), whose singular
values :func:`train_pair` records against a teacher ``T* = P diag(s) Q^T``
(:func:`teacher_map`, implementation notes Sec. 7.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "TanhMLP",
    "TanhCNN",
    "QKAttention",
    "MultiHeadAttention",
    "PairHistory",
    "teacher_map",
    "whitened_gaussian",
    "train_pair",
    "train_pair_online",
    "OPTIMIZERS",
    "ARCHITECTURES",
    "teacher_task",
]

Inputs = Union[Tensor, tuple]

#: optimizer names accepted by :func:`train_pair` (Polyak momentum uses beta = 0.9)
OPTIMIZERS = ("gd", "momentum", "adam")


# ----------------------------------------------------------------------------- checks
def _int(name: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _pos(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def _tensor(name: str, value: object, ndim: int) -> Tensor:
    if isinstance(value, tuple) and len(value) == 1:  # an input already checked by a module
        value = value[0]
    if not isinstance(value, (Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch tensor or numpy array, got {type(value).__name__}")
    t = torch.as_tensor(value, dtype=torch.float64)
    if t.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _generator(seed: object) -> torch.Generator:
    seed = _int("seed", seed, low=0)
    return torch.Generator().manual_seed(seed)


def _gauss(gen: torch.Generator, sigma: float, *shape: int) -> nn.Parameter:
    return nn.Parameter(sigma * torch.randn(*shape, generator=gen, dtype=torch.float64))


# ----------------------------------------------------------------------------- data
def whitened_gaussian(m: int, D: int, seed: int = 0) -> np.ndarray:
    """Exactly whitened Gaussian samples: ``X`` (m, D) with zero mean and ``X^T X / m = I``.

    Parameters
    ----------
    m, D : int
        Number of samples and dimension (``m > D``).
    seed : int
        Seed of the Gaussian draw.
    """
    m, D = _int("m", m), _int("D", D)
    if m <= D:
        raise ValueError(f"m must exceed D to whiten exactly, got m = {m}, D = {D}")
    rng = np.random.default_rng(_int("seed", seed, low=0))
    X = rng.standard_normal((m, D))
    X -= X.mean(axis=0)
    L = np.linalg.cholesky(X.T @ X / m)
    return np.linalg.solve(L, X.T).T


def teacher_map(
    D_in: int, V: int, s: Sequence[float] = (1.0, 0.5, 0.25, 0.125), seed: int = 0
) -> np.ndarray:
    """A rank-``k`` teacher ``T* = P diag(s) Q^T`` (implementation notes Sec. 7.2, paper Fig. 2).

    Parameters
    ----------
    D_in, V : int
        Input and output dimension of the map; ``len(s) <= min(D_in, V)``.
    s : sequence of float
        Positive singular values (paper: 1, 1/2, 1/4, 1/8).
    seed : int
        Seed of the random orthonormal ``P`` (V, k) and ``Q`` (D_in, k).

    Returns
    -------
    ndarray, shape (V, D_in)
    """
    D_in, V = _int("D_in", D_in), _int("V", V)
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"s must be a non-empty 1-D sequence of positive numbers, got {s!r}")
    if s.size > min(D_in, V):
        raise ValueError(f"s has {s.size} values but the map is only {V} x {D_in}")
    rng = np.random.default_rng(_int("seed", seed, low=0))
    P = np.linalg.qr(rng.standard_normal((V, s.size)))[0]
    Q = np.linalg.qr(rng.standard_normal((D_in, s.size)))[0]
    return P @ np.diag(s) @ Q.T


# ----------------------------------------------------------------------------- base class
class _Symmetric(nn.Module):
    """Common machinery: functional forward, twin, units ``W`` (p, d), single-sample function."""

    twin_class: type["_Symmetric"]
    is_twin = False

    def __init__(self, sigma: float, V: int, seed: int) -> None:
        super().__init__()
        self.sigma = _pos("sigma", sigma)
        self.V = _int("V", V)
        self.seed = _int("seed", seed, low=0)

    # each architecture implements the methods below that raise NotImplementedError
    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        raise NotImplementedError

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        raise NotImplementedError

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        """Validate a batch (or, with ``single``, one input) and return it as a tuple of tensors."""
        raise NotImplementedError

    def effective_map(self) -> Tensor:
        """The learned linear map of the NQF (see the module docstring)."""
        raise NotImplementedError

    def _config(self) -> dict[str, Any]:
        raise NotImplementedError

    def forward(self, inputs: Inputs) -> Tensor:
        """Outputs (m, V) for a batch of ``m`` inputs."""
        return self._func(dict(self.named_parameters()), self._check_inputs(inputs))

    def twin(self) -> "_Symmetric":
        """The NQF twin: a new module with a copy of these parameters whose forward is the NQF."""
        out = self.twin_class(**self._config())
        out.load_state_dict(self.state_dict())
        return out

    def units(self) -> Tensor:
        """The trainable weights as ``W`` of shape (p, d), one column per unit (neuron or head)."""
        raise NotImplementedError

    def unit_function(self) -> Callable[[Tensor, Inputs], Tensor]:
        """``f(W, x) -> (V,)``: this module on ONE input with units ``W`` (p, d), for ``nqf_lite.expand``."""

        def f(W: Tensor, x: Inputs) -> Tensor:
            one = tuple(t.unsqueeze(0) for t in self._check_inputs(x, single=True))
            return self._func(self._params_from_W(W), one)[0]

        return f


def _sizes_match(name: str, t: Tensor, axes: dict[int, int]) -> None:
    for ax, n in axes.items():
        if t.shape[ax] != n:
            raise ValueError(f"{name} must have size {n} on axis {ax}, got shape {tuple(t.shape)}")


# ----------------------------------------------------------------------------- MLP
class TanhMLP(_Symmetric):
    """Bias-free two-layer tanh network ``f(x) = V tanh(U x)`` (Prop. 1, Eq. 5).

    Parameters
    ----------
    D_in, hidden, V : int
        Input dimension, width d and output dimension.
    sigma : float
        Init scale: every entry of ``U`` (hidden, D_in) and ``V`` (V, hidden) is N(0, sigma^2).
    seed : int
        Seed of the init.

    Notes
    -----
    Inputs are ``x`` of shape (m, D_in).  Unit ``i`` is ``w_i = [u_i; v_i]`` (p = D_in + V).
    """

    def __init__(self, D_in: int, hidden: int, V: int = 1, sigma: float = 0.01, seed: int = 0) -> None:
        super().__init__(sigma, V, seed)
        self.D_in, self.hidden = _int("D_in", D_in), _int("hidden", hidden)
        gen = _generator(seed)
        self.U = _gauss(gen, self.sigma, self.hidden, self.D_in)
        self.W_out = _gauss(gen, self.sigma, self.V, self.hidden)

    def _config(self) -> dict[str, Any]:
        return dict(D_in=self.D_in, hidden=self.hidden, V=self.V, sigma=self.sigma, seed=self.seed)

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        x = _tensor("x", inputs, 1 if single else 2)
        _sizes_match("x", x, {-1: self.D_in})
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
        """Output (m, V) of the NQF whose effective map is ``T`` (V, D_in): ``T x``."""
        (x,) = self._check_inputs(inputs)
        return x @ torch.as_tensor(T, dtype=torch.float64).T

    def sample_inputs(self, m: int, seed: int = 0) -> Tensor:
        """``m`` exactly whitened Gaussian inputs (m, D_in)."""
        return torch.as_tensor(whitened_gaussian(m, self.D_in, seed))


class MLPTwin(TanhMLP):
    """NQF twin of :class:`TanhMLP`: ``f = tanh'(0) V U x = V U x`` (Eq. 6)."""

    is_twin = True

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        (x,) = inputs
        return (x @ params["U"].T) @ params["W_out"].T


TanhMLP.twin_class = MLPTwin


# ----------------------------------------------------------------------------- CNN
class TanhCNN(_Symmetric):
    """One 2-D convolution (single input channel, stride 1, no padding), tanh, global sum pooling
    and a linear readout: ``f = sum_i v_i sum_p tanh(k_i . x_p)`` (Prop. 6, Eq. 15).

    Parameters
    ----------
    image : (int, int)
        Input height and width.
    kernel : (int, int)
        Kernel height and width (at most the image's).
    channels, V : int
        Number of kernels d and output dimension.
    sigma, seed : float, int
        Init scale (every kernel and readout entry N(0, sigma^2)) and seed.

    Notes
    -----
    Inputs are images of shape (m, H, W).  Unit ``i`` is ``[vec k_i; v_i]``.
    """

    def __init__(
        self,
        image: tuple[int, int] = (5, 7),
        kernel: tuple[int, int] = (4, 5),
        channels: int = 64,
        V: int = 1,
        sigma: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(sigma, V, seed)
        self.image = self._pair("image", image)
        self.kernel = self._pair("kernel", kernel)
        if self.kernel[0] > self.image[0] or self.kernel[1] > self.image[1]:
            raise ValueError(f"kernel {self.kernel} must fit inside image {self.image}")
        self.channels = _int("channels", channels)
        gen = _generator(seed)
        self.K = _gauss(gen, self.sigma, self.channels, *self.kernel)
        self.W_out = _gauss(gen, self.sigma, self.V, self.channels)

    @staticmethod
    def _pair(name: str, value: object) -> tuple[int, int]:
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise TypeError(f"{name} must be a pair of ints (height, width), got {value!r}")
        return (_int(f"{name}[0]", value[0]), _int(f"{name}[1]", value[1]))

    def _config(self) -> dict[str, Any]:
        return dict(image=self.image, kernel=self.kernel, channels=self.channels, V=self.V,
                    sigma=self.sigma, seed=self.seed)

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        x = _tensor("x", inputs, 2 if single else 3)
        _sizes_match("x", x, {-2: self.image[0], -1: self.image[1]})
        return (x,)

    def patch_sum(self, x: Tensor) -> Tensor:
        """``sum_p x_p`` (m, kh*kw): the sum of all patches, the CNN's effective input (Eq. 16)."""
        return F.unfold(x.unsqueeze(1), self.kernel).sum(-1)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        (x,) = inputs
        patches = F.unfold(x.unsqueeze(1), self.kernel)  # (m, kh*kw, P): stride-1 convolution as a product
        K = params["K"].reshape(params["K"].shape[0], -1)
        return torch.tanh(torch.einsum("dk,mkp->mdp", K, patches)).sum(-1) @ params["W_out"].T

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        n = self.kernel[0] * self.kernel[1]
        return {"K": W[:n].T.reshape(-1, *self.kernel), "W_out": W[n:]}

    def units(self) -> Tensor:
        return torch.cat([self.K.reshape(self.channels, -1).T, self.W_out], dim=0).detach().clone()

    def effective_map(self) -> Tensor:
        return self.W_out @ self.K.reshape(self.channels, -1)

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF whose effective map is ``T`` (V, kh*kw): ``T sum_p x_p``."""
        (x,) = self._check_inputs(inputs)
        return self.patch_sum(x) @ torch.as_tensor(T, dtype=torch.float64).T

    def sample_inputs(self, m: int, seed: int = 0) -> Tensor:
        """``m`` Gaussian images whose patch sums ``sum_p x_p`` are exactly whitened.

        The patch sum is a linear map ``S`` of the flattened image; the image is
        ``S^+ z + (I - S^+ S) xi`` with ``z`` exactly whitened and ``xi`` standard Gaussian.
        """
        H, Wd = self.image
        S = self.patch_sum(torch.eye(H * Wd, dtype=torch.float64).reshape(-1, H, Wd)).T  # (kh*kw, H*W)
        Sp = torch.linalg.pinv(S)
        z = torch.as_tensor(whitened_gaussian(m, S.shape[0], seed))
        xi = torch.randn(m, H * Wd, generator=_generator(seed + 1), dtype=torch.float64)
        img = z @ Sp.T + xi @ (torch.eye(H * Wd, dtype=torch.float64) - Sp @ S).T
        return img.reshape(m, H, Wd)


class CNNTwin(TanhCNN):
    """NQF twin of :class:`TanhCNN`: ``f = V K sum_p x_p`` (Eq. 16, tanh'(0) = 1)."""

    is_twin = True

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        (x,) = inputs
        return self.patch_sum(x) @ params["K"].reshape(params["K"].shape[0], -1).T @ params["W_out"].T


TanhCNN.twin_class = CNNTwin


# ----------------------------------------------------------------------------- attention
def _check_tokens(obj: _Symmetric, inputs: Inputs, single: bool) -> tuple:
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
        raise TypeError("inputs must be a pair (x, X): query tokens and context tokens")
    x = _tensor("x (query)", inputs[0], 1 if single else 2)
    X = _tensor("X (context)", inputs[1], 2 if single else 3)
    _sizes_match("x (query)", x, {-1: obj.D})
    _sizes_match("X (context)", X, {-1: obj.D})
    if not single and X.shape[0] != x.shape[0]:
        raise ValueError(f"x and X must hold the same number of samples, got {x.shape[0]} and {X.shape[0]}")
    return (x, X)


def _attention(Q: Tensor, K: Tensor, x: Tensor, X: Tensor) -> Tensor:
    """Softmax weights (m, H, N) of the logits ``X^T W_K,h^T W_Q,h x / sqrt(d_k)`` of every head."""
    G = torch.einsum("hkd,hke->hde", K, Q)  # W_K,h^T W_Q,h, (H, D, D)
    u = torch.einsum("hde,me->mhd", G, x)
    logits = torch.bmm(u, X.transpose(1, 2)) / math.sqrt(Q.shape[1])  # (m, H, N)
    return torch.softmax(logits, dim=-1)


def _context_sigma_times(X: Tensor, z: Tensor) -> Tensor:
    """``Sigma_X z`` for every sample, without forming ``Sigma_X = X^T X / N - xbar xbar^T``."""
    xbar = X.mean(dim=1)
    return torch.einsum("mnd,mn->md", X, torch.einsum("mnd,md->mn", X, z)) / X.shape[1] - xbar * (
        xbar * z
    ).sum(-1, keepdim=True)


def _gaussian_tokens(m: int, N: int, D: int, seed: int) -> tuple[Tensor, Tensor]:
    gen = _generator(seed)
    return (torch.randn(m, D, generator=gen, dtype=torch.float64),
            torch.randn(m, N, D, generator=gen, dtype=torch.float64))


class QKAttention(_Symmetric):
    """Query-key-only attention heads with a fixed readout (Prop. 3, Eq. 9).

    ``f_o(x, X) = sum_h c_o^T X softmax(X^T W_K,h^T W_Q,h x / sqrt(d_k))``, with
    ``X`` (D, N) the context, ``x`` the query and ``C = [c_1 .. c_V]`` (D, V) fixed.

    Parameters
    ----------
    D, d_k, heads, V : int
        Token dimension, key dimension, number of heads H and outputs.
    sigma, seed : float, int
        Init scale of ``W_Q, W_K`` (N(0, sigma^2)) and seed.
    readout_scale : float
        ``C`` has i.i.d. N(0, readout_scale^2 / D) entries; it is a buffer, not trained.
    readout_seed : int
        Seed of ``C`` (a teacher and a student share ``C`` when they share this seed).

    Notes
    -----
    Inputs are pairs ``(x, X)`` of shapes (m, D) and (m, N, D) (tokens as rows).
    Unit ``h`` is a head ``[vec W_Q,h; vec W_K,h]`` (p = 2 d_k D).
    """

    def __init__(
        self,
        D: int,
        d_k: int,
        heads: int = 1,
        V: int = 1,
        sigma: float = 0.01,
        seed: int = 0,
        readout_scale: float = 1.0,
        readout_seed: int = 0,
    ) -> None:
        super().__init__(sigma, V, seed)
        self.D, self.d_k, self.heads = _int("D", D), _int("d_k", d_k), _int("heads", heads)
        self.readout_scale = _pos("readout_scale", readout_scale)
        self.readout_seed = _int("readout_seed", readout_seed, low=0)
        gen = _generator(seed)
        self.Q = _gauss(gen, self.sigma, self.heads, self.d_k, self.D)
        self.K = _gauss(gen, self.sigma, self.heads, self.d_k, self.D)
        C = torch.randn(self.D, self.V, generator=_generator(readout_seed), dtype=torch.float64)
        self.register_buffer("C", C * self.readout_scale / math.sqrt(self.D))

    def _config(self) -> dict[str, Any]:
        return dict(D=self.D, d_k=self.d_k, heads=self.heads, V=self.V, sigma=self.sigma, seed=self.seed,
                    readout_scale=self.readout_scale, readout_seed=self.readout_seed)

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        return _check_tokens(self, inputs, single)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        x, X = inputs
        a = _attention(params["Q"], params["K"], x, X)
        return torch.bmm(a, X).sum(dim=1) @ self.C

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        n = self.d_k * self.D
        return {"Q": W[:n].T.reshape(-1, self.d_k, self.D), "K": W[n:].T.reshape(-1, self.d_k, self.D)}

    def units(self) -> Tensor:
        return torch.cat([self.Q.reshape(self.heads, -1).T, self.K.reshape(self.heads, -1).T]).detach().clone()

    def effective_map(self) -> Tensor:
        return torch.einsum("hkd,hke->de", self.K, self.Q) / math.sqrt(self.d_k)

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF with effective map ``T`` (D, D): ``H C^T xbar + C^T Sigma_X T x``."""
        x, X = self._check_inputs(inputs)
        T = torch.as_tensor(T, dtype=torch.float64)
        return (self.heads * X.mean(dim=1) + _context_sigma_times(X, x @ T.T)) @ self.C

    def sample_inputs(self, m: int, N: int, seed: int = 0, scale: float = 1.0) -> tuple[Tensor, Tensor]:
        """``m`` Gaussian queries (m, D) and contexts of ``N`` tokens (m, N, D), entries N(0, scale^2).

        The logits are quadratic in the tokens, so a small ``scale`` keeps them small at
        the teacher's weights too (the quadratic regime of the softmax).
        """
        x, X = _gaussian_tokens(_int("m", m), _int("N", N), self.D, _int("seed", seed, low=0))
        scale = _pos("scale", scale)
        return scale * x, scale * X


class QKTwin(QKAttention):
    """NQF twin of :class:`QKAttention`: ``H C^T xbar + C^T Sigma_X (sum_h W_K,h^T W_Q,h/sqrt(d_k)) x``
    (Eq. 10 with ``u = Sigma_X c``)."""

    is_twin = True

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        x, X = inputs
        T = torch.einsum("hkd,hke->de", params["K"], params["Q"]) / math.sqrt(self.d_k)
        H = params["Q"].shape[0]
        return (H * X.mean(dim=1) + _context_sigma_times(X, x @ T.T)) @ self.C


QKAttention.twin_class = QKTwin


class MultiHeadAttention(_Symmetric):
    """Multi-head softmax attention with value and output matrices (Prop. 2, Eq. 7).

    ``f(x, X) = sum_h W_O,h W_V,h X softmax(X^T W_K,h^T W_Q,h x / sqrt(d_k))`` with
    ``W_Q,h, W_K,h`` (d_k, D), ``W_V,h`` (d_v, D) and ``W_O,h`` (V, d_v).

    Parameters
    ----------
    D, d_k, d_v, heads, V : int
        Token, key and value dimensions, number of heads H, outputs.
    sigma, seed : float, int
        Init scale (every entry N(0, sigma^2)) and seed.

    Notes
    -----
    Inputs are pairs ``(x, X)`` of shapes (m, D) and (m, N, D).  Unit ``h`` is the
    head ``[vec W_Q; vec W_K; vec W_V; vec W_O]`` (p = 2 d_k D + d_v D + V d_v).
    """

    def __init__(
        self, D: int, d_k: int, d_v: int, heads: int = 1, V: int = 1, sigma: float = 0.01, seed: int = 0
    ) -> None:
        super().__init__(sigma, V, seed)
        self.D, self.d_k, self.d_v = _int("D", D), _int("d_k", d_k), _int("d_v", d_v)
        self.heads = _int("heads", heads)
        gen = _generator(seed)
        self.Q = _gauss(gen, self.sigma, self.heads, self.d_k, self.D)
        self.K = _gauss(gen, self.sigma, self.heads, self.d_k, self.D)
        self.W_V = _gauss(gen, self.sigma, self.heads, self.d_v, self.D)
        self.W_O = _gauss(gen, self.sigma, self.heads, self.V, self.d_v)

    def _config(self) -> dict[str, Any]:
        return dict(D=self.D, d_k=self.d_k, d_v=self.d_v, heads=self.heads, V=self.V,
                    sigma=self.sigma, seed=self.seed)

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        return _check_tokens(self, inputs, single)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        x, X = inputs
        a = _attention(params["Q"], params["K"], x, X)
        E = torch.einsum("hov,hvd->hod", params["W_O"], params["W_V"])  # W_O,h W_V,h
        return torch.einsum("hod,mhd->mo", E, torch.bmm(a, X))

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        sizes = [self.d_k * self.D, self.d_k * self.D, self.d_v * self.D, self.V * self.d_v]
        q, k, v, o = torch.split(W, sizes, dim=0)
        return {
            "Q": q.T.reshape(-1, self.d_k, self.D),
            "K": k.T.reshape(-1, self.d_k, self.D),
            "W_V": v.T.reshape(-1, self.d_v, self.D),
            "W_O": o.T.reshape(-1, self.V, self.d_v),
        }

    def units(self) -> Tensor:
        parts = [self.Q, self.K, self.W_V, self.W_O]
        return torch.cat([t.reshape(self.heads, -1).T for t in parts]).detach().clone()

    def effective_map(self) -> Tensor:
        return torch.einsum("hov,hvd->od", self.W_O, self.W_V)

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF with effective map ``T`` (V, D): ``T xbar``."""
        _, X = self._check_inputs(inputs)
        return X.mean(dim=1) @ torch.as_tensor(T, dtype=torch.float64).T

    def sample_inputs(self, m: int, N: int, seed: int = 0) -> tuple[Tensor, Tensor]:
        """Gaussian queries (m, D) and contexts (m, N, D) whose token means ``xbar`` are exactly whitened.

        Each context is ``xbar 1^T`` plus centred Gaussian noise of unit variance per token.
        """
        m, N = _int("m", m), _int("N", N)
        x, X = _gaussian_tokens(m, N, self.D, _int("seed", seed, low=0))
        xbar = torch.as_tensor(whitened_gaussian(m, self.D, seed))
        return x, X - X.mean(dim=1, keepdim=True) + xbar.unsqueeze(1)


class MHATwin(MultiHeadAttention):
    """NQF twin of :class:`MultiHeadAttention`: ``f = sum_h W_O,h W_V,h xbar`` (Eq. 8).

    ``W_Q`` and ``W_K`` stay in the module (same parameters as the network) but do
    not enter the output: at quadratic order they never move.
    """

    is_twin = True

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        _, X = inputs
        return torch.einsum("hov,hvd,md->mo", params["W_O"], params["W_V"], X.mean(dim=1))


MultiHeadAttention.twin_class = MHATwin


# ----------------------------------------------------------------------------- training
@dataclass(frozen=True)
class PairHistory:
    """What :func:`train_pair` records, every ``record_every`` steps (numpy float64).

    Attributes
    ----------
    step : ndarray (T,)
        Step numbers (0 = initial weights).
    loss_net, loss_twin : ndarray (T,)
        Training loss ``(1/m) sum_n |f_n - y_n|^2`` of the network and of its NQF twin
        (for online training: the loss on the fixed evaluation set).
    s_net, s_twin : ndarray (T, k)
        Singular values of the effective maps divided by the teacher's ``s`` (k = len(s)),
        or the top-k singular values when no ``s`` was given.
    gap : ndarray (T,)
        Relative output gap ``sum_n |f_net(x_n) - f_twin(x_n)|^2 / sum_n |y_n|^2`` on the same
        data as the losses.
    acc_net, acc_twin : ndarray (T,) or None
        Test accuracy (sign of a scalar output, or arg-max) when a test set was given.
    """

    step: np.ndarray
    loss_net: np.ndarray
    loss_twin: np.ndarray
    s_net: np.ndarray
    s_twin: np.ndarray
    gap: np.ndarray
    acc_net: np.ndarray | None = None
    acc_twin: np.ndarray | None = None

    @property
    def s_deviation(self) -> float:
        """``max_{t,k} |s_net - s_twin|`` (divided by ``s_k`` when ``s`` was given)."""
        return float(np.max(np.abs(self.s_net - self.s_twin)))

    @property
    def log_loss_deviation(self) -> float:
        """``max_t |log10 L_net - log10 L_twin|``."""
        return float(np.max(np.abs(np.log10(self.loss_net) - np.log10(self.loss_twin))))


def _optimizer(name: object, params: list, lr: float) -> torch.optim.Optimizer:
    if not isinstance(name, str):
        raise TypeError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")
    if name == "gd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


def _check_pair(net: object, twin: object) -> None:
    for name, obj in (("net", net), ("twin", twin)):
        if not isinstance(obj, _Symmetric):
            raise TypeError(f"{name} must be a network from nqf_lite.networks, got {type(obj).__name__}")
    if net.is_twin or not twin.is_twin or type(twin) is not net.twin_class:
        raise TypeError(f"twin must be the NQF twin of net (net.twin()), got {type(twin).__name__}")
    a, b = net.state_dict(), twin.state_dict()
    if a.keys() != b.keys() or any(a[k].shape != b[k].shape or not torch.equal(a[k], b[k]) for k in a):
        raise ValueError("net and twin must start from identical weights; build the twin with net.twin()")


def _loss(f: Tensor, Y: Tensor) -> Tensor:
    return ((f - Y) ** 2).sum(-1).mean()


def _accuracy(f: Tensor, Y: Tensor) -> float:
    if Y.shape[-1] == 1:
        return float((torch.sign(f) == torch.sign(Y)).double().mean())
    return float((f.argmax(-1) == Y.argmax(-1)).double().mean())


def _index(inputs: tuple, idx: Tensor) -> tuple:
    return tuple(t[idx] for t in inputs)


def _singular(model: _Symmetric, s: np.ndarray | None, k: int) -> np.ndarray:
    sv = torch.linalg.svdvals(model.effective_map().detach()).numpy()[:k]
    return sv / s if s is not None else sv


def _run(
    net: _Symmetric,
    twin: _Symmetric,
    draw: Callable[[int], tuple[tuple, Tensor]],
    evaluate: tuple[tuple, Tensor] | None,
    test: tuple[tuple, Tensor] | None,
    optimizer: str,
    lr: float,
    steps: int,
    s: np.ndarray | None,
    k: int,
    record_every: int,
    progress: bool,
) -> PairHistory:
    from tqdm.auto import tqdm

    models = (net, twin)
    opts = [_optimizer(optimizer, [p for p in mdl.parameters() if p.requires_grad], lr) for mdl in models]
    rec: dict[str, list] = {key: [] for key in ("step", "loss_net", "loss_twin", "s_net", "s_twin", "gap",
                                                 "acc_net", "acc_twin")}

    def record(t: int, outs: list[Tensor], yb: Tensor) -> None:
        with torch.no_grad():
            if evaluate is not None:
                outs, yb = [mdl(evaluate[0]) for mdl in models], evaluate[1]
            rec["step"].append(t)
            rec["gap"].append(float(((outs[0] - outs[1]) ** 2).sum(-1).mean() / (yb**2).sum(-1).mean()))
            for tag, mdl, out in zip(("net", "twin"), models, outs):
                rec[f"loss_{tag}"].append(float(_loss(out, yb)))
                rec[f"s_{tag}"].append(_singular(mdl, s, k))
                if test is not None:
                    rec[f"acc_{tag}"].append(_accuracy(mdl(test[0]), test[1]))

    for t in tqdm(range(steps + 1), desc=f"{type(net).__name__} vs NQF ({optimizer})", disable=not progress,
                  leave=False):
        xb, yb = draw(t)
        outs = [mdl(xb) for mdl in models]
        losses = [_loss(out, yb) for out in outs]
        if not all(torch.isfinite(loss) for loss in losses):
            raise FloatingPointError(f"training diverged at step {t} (non-finite loss); lower lr = {lr}")
        if t % record_every == 0 or t == steps:
            record(t, [out.detach() for out in outs], yb)
        if t < steps:
            for loss, opt in zip(losses, opts):
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    as_np = {key: np.asarray(val, dtype=np.float64) for key, val in rec.items() if val}
    return PairHistory(**as_np)


def _common(net, twin, optimizer, lr, steps, s, record_every):
    _check_pair(net, twin)
    _optimizer(optimizer, [torch.zeros(1, requires_grad=True)], 1.0)
    lr = _pos("lr", lr)
    steps = _int("steps", steps)
    record_every = _int("record_every", record_every)
    s_arr = None
    if s is not None:
        s_arr = np.asarray(s, dtype=np.float64)
        if s_arr.ndim != 1 or s_arr.size == 0 or np.any(~np.isfinite(s_arr)) or np.any(s_arr <= 0):
            raise ValueError(f"s must be a 1-D sequence of positive teacher singular values, got {s!r}")
    return lr, steps, record_every, s_arr


def _targets(name: str, Y: object, m: int, V: int) -> Tensor:
    Yt = _tensor(name, Y, 2)
    if Yt.shape != (m, V):
        raise ValueError(f"{name} must have shape (m, V) = ({m}, {V}), got {tuple(Yt.shape)}")
    return Yt


def train_pair(
    net: _Symmetric,
    twin: _Symmetric,
    X: Inputs,
    Y: Tensor,
    optimizer: str = "gd",
    lr: float = 0.1,
    steps: int = 100,
    batch: int | None = None,
    s: Sequence[float] | None = None,
    k: int = 4,
    record_every: int = 1,
    test: tuple[Inputs, Tensor] | None = None,
    seed: int = 0,
    progress: bool = False,
) -> PairHistory:
    """Train a network and its NQF twin side by side from the same weights (paper Fig. 2, 7).

    Both are trained with the same torch optimizer on the loss
    ``L = (1/m) sum_n |f(x_n) - y_n|^2`` (paper Eq. 26, summed over outputs):
    ``"gd"`` = ``SGD(lr)``, ``"momentum"`` = ``SGD(lr, momentum=0.9)`` (Polyak heavy ball),
    ``"adam"`` = ``Adam(lr)``.  Mini-batches, when ``batch`` is given, are drawn with the
    same indices for both.

    Parameters
    ----------
    net, twin : module
        A network of this module and ``net.twin()`` (checked to hold identical weights).
    X : tensor or tuple of tensors
        Training inputs in the network's format (leading axis m).
    Y : tensor, shape (m, V)
        Targets.
    optimizer : {"gd", "momentum", "adam"}
    lr : float
        Learning rate.
    steps : int
        Number of optimizer steps.
    batch : int, optional
        Mini-batch size (default: full batch).
    s : sequence of float, optional
        Teacher singular values; recorded singular values are divided by them.
    k : int
        Number of singular values recorded when ``s`` is None.
    record_every : int
        Record every this many steps (and the last step).
    test : (inputs, targets), optional
        Held-out set for the test accuracy.
    seed : int
        Seed of the mini-batch draws.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    PairHistory
    """
    lr, steps, record_every, s_arr = _common(net, twin, optimizer, lr, steps, s, record_every)
    inputs = net._check_inputs(X)
    m = inputs[0].shape[0]
    Y = _targets("Y", Y, m, net.V)
    if batch is not None:
        batch = _int("batch", batch)
        if batch > m:
            raise ValueError(f"batch must be at most the number of samples {m}, got {batch}")
    gen = _generator(seed)

    def draw(t: int) -> tuple[tuple, Tensor]:
        if batch is None:
            return inputs, Y
        idx = torch.randperm(m, generator=gen)[:batch]
        return _index(inputs, idx), Y[idx]

    tst = None
    if test is not None:
        if not isinstance(test, (tuple, list)) or len(test) != 2:
            raise TypeError("test must be a pair (inputs, targets)")
        t_in = net._check_inputs(test[0])
        tst = (t_in, _targets("test targets", test[1], t_in[0].shape[0], net.V))
    evaluate = None if batch is None else (inputs, Y)
    k = len(s_arr) if s_arr is not None else _int("k", k)
    return _run(net, twin, draw, evaluate, tst, optimizer, lr, steps, s_arr, k, record_every, progress)


def train_pair_online(
    net: _Symmetric,
    twin: _Symmetric,
    sample: Callable[[int, torch.Generator], tuple[Inputs, Tensor]],
    evaluate: tuple[Inputs, Tensor],
    optimizer: str = "gd",
    lr: float = 0.05,
    steps: int = 2000,
    k: int = 1,
    record_every: int = 10,
    seed: int = 0,
    progress: bool = False,
) -> PairHistory:
    """Online SGD for a network and its NQF twin on the same fresh mini-batches (paper Fig. 6).

    Parameters
    ----------
    net, twin : module
        A network and ``net.twin()``.
    sample : callable ``sample(n, generator) -> (inputs, targets)``
        Draws a fresh mini-batch; called once per step with a shared seeded generator.
    evaluate : (inputs, targets)
        Fixed held-out set on which the recorded losses are measured.
    optimizer, lr, steps, record_every, seed, progress :
        As in :func:`train_pair`.
    k : int
        Number of singular values of the effective map recorded.

    Returns
    -------
    PairHistory
        ``loss_*`` are held-out losses.
    """
    lr, steps, record_every, _ = _common(net, twin, optimizer, lr, steps, None, record_every)
    if not callable(sample):
        raise TypeError(f"sample must be callable as sample(step, generator), got {type(sample).__name__}")
    if not isinstance(evaluate, (tuple, list)) or len(evaluate) != 2:
        raise TypeError("evaluate must be a pair (inputs, targets)")
    e_in = net._check_inputs(evaluate[0])
    ev = (e_in, _targets("evaluate targets", evaluate[1], e_in[0].shape[0], net.V))
    gen = _generator(seed)

    def draw(t: int) -> tuple[tuple, Tensor]:
        xb, yb = sample(t, gen)
        xb = net._check_inputs(xb)
        return xb, _targets("sampled targets", yb, xb[0].shape[0], net.V)

    return _run(net, twin, draw, ev, None, optimizer, lr, steps, None, _int("k", k), record_every, progress)


# ----------------------------------------------------------------------------- the Fig. 2 task
#: the four architectures of Fig. 2 with the sizes of App. C
ARCHITECTURES = ("mlp", "cnn", "qk", "mha")


def teacher_task(
    arch: str,
    sigma: float,
    m: int = 600,
    s: Sequence[float] = (1.0, 0.5, 0.25, 0.125),
    seed: int = 0,
    token_scale: float = 0.4,
    readout_scale: float = 8.0,
) -> tuple[_Symmetric, Inputs, Tensor]:
    """One panel of paper Fig. 2: a network with App. C sizes, its data and the teacher's targets.

    Sizes (App. C): MLP 20 -> 64 -> 8; CNN on 5 x 7 images with 64 kernels 4 x 5;
    QK head with D = 20, d_k = 8, N = 16 context tokens; MHA with 4 heads, D = 20,
    d_k = 8, d_v = 20, N = 16.  Every network has 8 outputs.  The targets are those
    of the NQF whose effective map is the teacher ``T* = P diag(s) Q^T``
    (:func:`teacher_map`), so the loss can reach zero and ``s_hat_k / s_k -> 1``.
    The effective inputs are exactly whitened (x, sum_p x_p, xbar) except for the
    QK head, whose Gaussian tokens have entries N(0, token_scale^2) and readout
    ``C`` entries N(0, readout_scale^2 / D).

    Parameters
    ----------
    arch : {"mlp", "cnn", "qk", "mha"}
    sigma : float
        Init scale of every trained weight.
    m : int
        Number of samples.
    s : sequence of float
        Teacher singular values.
    seed : int
        Seed of the weights (``seed``), the inputs (``seed + 1``) and the teacher (``seed + 2``).
    token_scale, readout_scale : float
        QK head only (see above).

    Returns
    -------
    net, X, Y
        The network (build its twin with ``net.twin()``), its inputs and the targets (m, 8).
    """
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
    V, D, N = 8, 20, 16
    if arch == "mlp":
        net: _Symmetric = TanhMLP(D, 64, V=V, sigma=sigma, seed=seed)
        X: Inputs = net.sample_inputs(m, seed=seed + 1)
    elif arch == "cnn":
        net = TanhCNN((5, 7), (4, 5), channels=64, V=V, sigma=sigma, seed=seed)
        X = net.sample_inputs(m, seed=seed + 1)
    elif arch == "qk":
        net = QKAttention(D, 8, heads=1, V=V, sigma=sigma, seed=seed, readout_scale=readout_scale)
        X = net.sample_inputs(m, N, seed=seed + 1, scale=token_scale)
    else:
        net = MultiHeadAttention(D, 8, 20, heads=4, V=V, sigma=sigma, seed=seed)
        X = net.sample_inputs(m, N, seed=seed + 1)
    T = teacher_map(D, D if arch == "qk" else V, s, seed=seed + 2)
    return net, X, net.apply_map(X, T)
