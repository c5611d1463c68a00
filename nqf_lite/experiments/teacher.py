"""The teacher tasks of the paper's Fig. 2 (App. C sizes).

:func:`teacher_map` draws the linear teacher ``T = P diag(s) Qᵀ``;
:func:`teacher_task` builds one panel's network, inputs and targets.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from torch import Tensor

from nqf_lite._checks import integer, positive
from nqf_lite.expansion.models.attention import (
    MultiHeadAttention,
    QKAttention,
)
from nqf_lite.expansion.models.blocks import Inputs, Network
from nqf_lite.expansion.models.cnn import TanhCNN
from nqf_lite.expansion.models.mlp import TanhMLP

__all__ = ["ARCHITECTURES", "teacher_map", "teacher_task"]


def teacher_map(
    D_in: int,
    V: int,
    s: Sequence[float] = (1.0, 0.5, 0.25, 0.125),
    seed: int = 0,
) -> np.ndarray:
    """A rank-``k`` teacher ``T* = P diag(s) Q^T`` (paper Fig. 2 and its
    settings in App. C).

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
    D_in, V = integer("D_in", D_in), integer("V", V)
    s = np.asarray(s, dtype=np.float64)
    if (
        s.ndim != 1
        or s.size == 0
        or not np.all(np.isfinite(s))
        or np.any(s <= 0)
    ):
        raise ValueError(
            "s must be a non-empty 1-D sequence of positive numbers, "
            f"got {s!r}"
        )
    if s.size > min(D_in, V):
        raise ValueError(
            f"s has {s.size} values but the map is only {V} x {D_in}"
        )
    rng = np.random.default_rng(integer("seed", seed, minimum=0))
    P = np.linalg.qr(rng.standard_normal((V, s.size)))[0]
    Q = np.linalg.qr(rng.standard_normal((D_in, s.size)))[0]
    return P @ np.diag(s) @ Q.T


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
) -> tuple[Network, Inputs, Tensor]:
    """One panel of paper Fig. 2: a network with App. C sizes, its data and the
    teacher's targets.

    Sizes (App. C): MLP 20 -> 64 -> 8; CNN on 5 x 7 images with 64 kernels 4 x
    5; QK head with D = 20, d_k = 8, N = 16 context tokens; MHA with 4 heads, D
    = 20, d_k = 8, d_v = 20, N = 16. Every network has 8 outputs. The targets
    are those of the NQF whose effective map is the teacher
    ``T* = P diag(s) Q^T`` (:func:`teacher_map`), so the loss can reach zero
    and ``s_hat_k / s_k -> 1``. The effective inputs are exactly whitened (x,
    sum_p x_p, xbar) except for the QK head, whose Gaussian tokens have entries
    N(0, token_scale^2) and readout ``C`` entries N(0, readout_scale^2 / D).

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
        Seed of the weights (``seed``), the inputs (``seed + 1``) and the
        teacher (``seed + 2``).
    token_scale, readout_scale : float
        QK head only (see above).

    Returns
    -------
    net, X, Y
        The network (build its twin with ``net.twin()``), its inputs and the
        targets (m, 8).
    """
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
    token_scale, readout_scale = (
        positive("token_scale", token_scale),
        positive("readout_scale", readout_scale),
    )
    V, D, N = 8, 20, 16
    if arch == "mlp":
        net: Network = TanhMLP(D, 64, V=V, sigma=sigma, seed=seed)
        X: Inputs = net.sample_inputs(m, seed=seed + 1)
    elif arch == "cnn":
        net = TanhCNN((5, 7), (4, 5), channels=64, V=V, sigma=sigma, seed=seed)
        X = net.sample_inputs(m, seed=seed + 1)
    elif arch == "qk":
        net = QKAttention(
            D,
            8,
            heads=1,
            V=V,
            sigma=sigma,
            seed=seed,
            readout_scale=readout_scale,
        )
        X = net.sample_inputs(m, N, seed=seed + 1, scale=token_scale)
    else:
        net = MultiHeadAttention(
            D, 8, 20, heads=4, V=V, sigma=sigma, seed=seed
        )
        X = net.sample_inputs(m, N, seed=seed + 1)
    T = teacher_map(D, D if arch == "qk" else V, s, seed=seed + 2)
    return net, X, net.apply_map(X, T)
