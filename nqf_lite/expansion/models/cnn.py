"""The single-layer CNN with global sum pooling (Prop. 6, Eqs. 15-16).

- :func:`cnn_module` (one image, filters as columns) with :func:`A_cnn` and
  :func:`patches`;
- :class:`TanhCNN`: the batched torch network; its twin is ``V K Σ_p x_p`` (Eq.
  16);
- the registered model ``"cnn"`` (:class:`SingleLayerCNN`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from nqf_lite._checks import (
    as_array,
    check_sizes,
    integer,
    outputs,
    size_pair,
    tensor,
    torch_generator,
)
from nqf_lite.expansion.models.base import Structure, register
from nqf_lite.expansion.models.blocks import (
    Inputs,
    Layout,
    ModuleModel,
    Network,
    SymmetricModule,
    activation,
    gaussian_parameter,
    tensor64,
    whitened_gaussian,
)
from nqf_lite.expansion.models.mlp import A_mlp

__all__ = [
    "patches",
    "cnn_module",
    "A_cnn",
    "TanhCNN",
    "SingleLayerCNN",
    "CNN",
]


def _image(X: Any) -> np.ndarray:
    arr = as_array("X", X, ndim=(2, 3))
    if 0 in arr.shape:
        raise ValueError(
            "X must be a non-empty image of shape (H, W) or (C, H, W), got "
            f"shape {arr.shape}"
        )
    return arr[None] if arr.ndim == 2 else arr


def _kernel(kernel_shape: Any, img: np.ndarray) -> tuple[int, int]:
    if not isinstance(kernel_shape, (tuple, list)) or len(kernel_shape) != 2:
        raise ValueError(
            f"kernel_shape must be a pair (kh, kw), got {kernel_shape!r}"
        )
    kh, kw = (
        integer("kernel_shape[0]", kernel_shape[0]),
        integer("kernel_shape[1]", kernel_shape[1]),
    )
    if kh > img.shape[1] or kw > img.shape[2]:
        raise ValueError(
            f"kernel_shape {(kh, kw)} is larger than the image {img.shape[1:]}"
        )
    return kh, kw


def patches(X: Any, kernel_shape: tuple[int, int]) -> np.ndarray:
    """Stride-1, no-padding patches of an image, flattened
    ``(channel, row, col)``.

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
        [
            img[:, i : i + kh, j : j + kw].ravel()
            for i in range(H - kh + 1)
            for j in range(Wd - kw + 1)
        ]
    )


def cnn_module(
    kernel_shape: tuple[int, int],
    channels: int = 1,
    act: str = "tanh",
    V: int | None = None,
) -> SymmetricModule:
    """Single-layer CNN with global sum pooling, ``Σ_i v_i Σ_p φ(k_iᵀ x_p)``
    (Eq. 15).

    Neuron ``i`` is one filter: ``w = [k (m = channels·kh·kw, flattened
    (channel, row, col)); v (1 or V)]``.  The input ``X`` has shape ``(H, W)``
    (one channel) or ``(channels, H, W)``; stride 1, no padding.
    """
    kh, kw = size_pair("kernel_shape", kernel_shape)
    C = integer("channels", channels)
    phi, _, _ = activation(act, "act")
    V = outputs(V)
    layout = Layout((("k", (C * kh * kw,)), ("v", () if V is None else (V,))))

    def fn(W: torch.Tensor, X: Any) -> torch.Tensor:
        img = tensor64(X)
        img = img[None] if img.ndim == 2 else img
        if (
            img.ndim != 3
            or img.shape[0] != C
            or img.shape[1] < kh
            or img.shape[2] < kw
        ):
            raise ValueError(
                f"X must have shape ({C}, H>={kh}, W>={kw}) (or (H, W) for "
                "one channel), "
                f"got {tuple(tensor64(X).shape)}"
            )
        b = layout.unpack(W)
        filt = b["k"].reshape(-1, C, kh, kw)
        pooled = phi(F.conv2d(img[None], filt)).sum(dim=(0, 2, 3))  # (d,)
        return pooled @ b["v"]

    return SymmetricModule(fn, layout, V, f"{act} CNN")


def A_cnn(
    X: Any, kernel_shape: tuple[int, int], dphi0: float, V: int | None = None
) -> np.ndarray:
    """Structure matrix of the CNN (Prop. 6, Eq. 16): the MLP's with
    ``x = Σ_p x_p``.

    Returns
    -------
    numpy.ndarray
        ``(m+1, m+1)`` or ``(V, m+V, m+V)``.
    """
    return A_mlp(patches(X, kernel_shape).sum(axis=0), dphi0, V)


class TanhCNN(Network):
    """One 2-D convolution (single input channel, stride 1, no padding), tanh,
    global sum pooling and a linear readout:
    ``f = sum_i v_i sum_p tanh(k_i . x_p)`` (Prop. 6, Eq. 15).

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
            raise ValueError(
                f"kernel {self.kernel} must fit inside image {self.image}"
            )
        self.channels = integer("channels", channels)
        gen = torch_generator(seed)
        self.K = gaussian_parameter(
            gen, self.sigma, self.channels, *self.kernel
        )
        self.W_out = gaussian_parameter(gen, self.sigma, self.V, self.channels)

    @staticmethod
    def _pair(name: str, value: object) -> tuple[int, int]:
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise TypeError(
                f"{name} must be a pair of ints (height, width), got {value!r}"
            )
        return (
            integer(f"{name}[0]", value[0]),
            integer(f"{name}[1]", value[1]),
        )

    def _config(self) -> dict[str, Any]:
        return dict(
            image=self.image,
            kernel=self.kernel,
            channels=self.channels,
            V=self.V,
            sigma=self.sigma,
            seed=self.seed,
        )

    def _check_inputs(self, inputs: Inputs, single: bool = False) -> tuple:
        x = tensor("x", inputs, 2 if single else 3)
        check_sizes("x", x, {-2: self.image[0], -1: self.image[1]})
        return (x,)

    def patch_sum(self, x: Tensor) -> Tensor:
        """``sum_p x_p`` (m, kh*kw): the sum of all patches, the CNN's
        effective input (Eq. 16)."""
        return F.unfold(x.unsqueeze(1), self.kernel).sum(-1)

    def _func(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        (x,) = inputs
        patches = F.unfold(
            x.unsqueeze(1), self.kernel
        )  # (m, kh*kw, P): stride-1 convolution as a product
        K = params["K"].reshape(params["K"].shape[0], -1)
        return (
            torch.tanh(torch.einsum("dk,mkp->mdp", K, patches)).sum(-1)
            @ params["W_out"].T
        )

    def _params_from_W(self, W: Tensor) -> dict[str, Tensor]:
        n = self.kernel[0] * self.kernel[1]
        return {"K": W[:n].T.reshape(-1, *self.kernel), "W_out": W[n:]}

    def units(self) -> Tensor:
        return (
            torch.cat([self.K.reshape(self.channels, -1).T, self.W_out], dim=0)
            .detach()
            .clone()
        )

    def effective_map(self) -> Tensor:
        return self.W_out @ self.K.reshape(self.channels, -1)

    def apply_map(self, inputs: Inputs, T: Tensor) -> Tensor:
        """Output (m, V) of the NQF whose effective map is ``T`` (V, kh*kw):
        ``T sum_p x_p``."""
        (x,) = self._check_inputs(inputs)
        return (
            self.patch_sum(x)
            @ tensor("T", T, 2, (self.V, self.kernel[0] * self.kernel[1])).T
        )

    def sample_inputs(self, m: int, seed: int = 0) -> Tensor:
        """``m`` Gaussian images whose patch sums ``sum_p x_p`` are exactly
        whitened.

        The patch sum is a linear map ``S`` of the flattened image; the image
        is ``S^+ z + (I - S^+ S) xi`` with ``z`` exactly whitened and ``xi``
        standard Gaussian.
        """
        H, Wd = self.image
        S = self.patch_sum(
            torch.eye(H * Wd, dtype=torch.float64).reshape(-1, H, Wd)
        ).T  # (kh*kw, H*W)
        Sp = torch.linalg.pinv(S)
        z = torch.as_tensor(whitened_gaussian(m, S.shape[0], seed))
        xi = torch.randn(
            m, H * Wd, generator=torch_generator(seed + 1), dtype=torch.float64
        )
        img = (
            z @ Sp.T + xi @ (torch.eye(H * Wd, dtype=torch.float64) - Sp @ S).T
        )
        return img.reshape(m, H, Wd)

    def _nqf(self, params: dict[str, Tensor], inputs: tuple) -> Tensor:
        """The NQF (twin forward): ``f = V K sum_p x_p`` (Eq. 16, tanh'(0) =
        1)."""
        (x,) = inputs
        return (
            self.patch_sum(x)
            @ params["K"].reshape(params["K"].shape[0], -1).T
            @ params["W_out"].T
        )


# ----------------------------------------------------------------------------
# registered model
# ----------------------------------------------------------------------------


class SingleLayerCNN(ModuleModel):
    """One tanh convolution with global sum pooling and a scalar readout (Prop.
    6).

    Parameters
    ----------
    image : (int, int)
        Image size ``(H, W)`` drawn by :meth:`sample` (the model accepts any
        image the kernel fits).
    kernel : (int, int)
        Filter size ``(kh, kw)``, at most ``image``.
    width : int >= 1
        Filters drawn by :meth:`sample`.
    """

    name = "cnn"
    title = "single-layer CNN"
    reference = "Table 3, row 10; Prop. 6, Eqs. 15-16"
    exact = False
    remainder = 4

    def __init__(
        self,
        image: tuple[int, int] = (3, 4),
        kernel: tuple[int, int] = (2, 2),
        width: int = 3,
    ) -> None:
        self.image, self.kernel = (
            size_pair("image", image),
            size_pair("kernel", kernel),
        )
        if self.kernel[0] > self.image[0] or self.kernel[1] > self.image[1]:
            raise ValueError(
                f"kernel {self.kernel} must fit inside image {self.image} "
                "(kh <= H, kw <= W)"
            )
        self.width = integer("width", width)
        self.module = cnn_module(self.kernel)

    def check_input(self, x: Any) -> np.ndarray:
        """A finite real image ``(H, W)`` (or ``(1, H, W)``) with ``H >= kh``,
        ``W >= kw``."""
        img = as_array("x (the image)", x, ndim=(2, 3))
        if img.ndim == 3:
            if img.shape[0] != 1:
                raise ValueError(
                    "x (the image) must have one channel, shape (H, W) or "
                    f"(1, H, W), got {img.shape}"
                )
            img = img[0]
        kh, kw = self.kernel
        if img.shape[0] < kh or img.shape[1] < kw:
            raise ValueError(
                f"x (the image) must be at least the kernel {self.kernel}, "
                f"got shape {img.shape}"
            )
        return img

    def structure(self, x: Any) -> Structure:
        """``A`` of Eq. 16: the MLP's with ``x = Σ_p x_p``."""
        return Structure(A=A_cnn(self.check_input(x), self.kernel, 1.0))

    def sample_input(self, rng: np.random.Generator) -> np.ndarray:
        """A standard normal image (H, W)."""
        return rng.standard_normal(self.image)


CNN = register(SingleLayerCNN())
