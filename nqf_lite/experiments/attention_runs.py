"""The attention half of the paper's Fig. 8 (App. B.4, App. C): a 2-layer
single-head attention network next to its 2-layer and 1-layer NQFs.

- :func:`attention_forward`: the network, batched over the members;
- :func:`attention_task`: its teacher-student task (a token-average or a
  Gaussian teacher);
- :func:`attention_models`: the network and its two NQFs from the same
  weights, for :func:`~nqf_lite.experiments.deep_runs.train_together`;
- :func:`logit_mean_square`: the size of the layer-1 logits at step zero;
- :func:`on_slower_clock`, :func:`log_contrast`, :func:`ratio_lower`: the
  controls and the function-space contrast of the book's claims;
- :func:`half_speed_gaps`: the two groups the bound of the tracks claims is
  set between.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import integer, natural, positive, sequence
from nqf_lite.deep.deep_nqf import AttentionLayer, DeepNQF
from nqf_lite.experiments.deep_runs import N_TEST, N_TRAIN, mean_se, pair
from nqf_lite.experiments.deep_runs import rel_gap

__all__ = [
    "D_TOK",
    "N_TOK",
    "attention_forward",
    "attention_models",
    "attention_task",
    "half_speed_gaps",
    "log_contrast",
    "logit_mean_square",
    "on_slower_clock",
    "ratio_lower",
]

#: App. C: 10 tokens of dimension 8 (d_k = d_v = 8)
N_TOK, D_TOK = 10, 8
F64 = torch.float64


def _softmax(logits: Tensor) -> Tensor:
    # written out: faster than torch.softmax on rows of length 10
    e = torch.exp(logits - logits.detach().amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def attention_forward(P: Sequence[Tensor], X: Tensor) -> Tensor:
    """The 2-layer single-head attention network of the paper's Fig. 8
    (App. C), batched over members ``S``.

    Layer 1 maps every token, ``softmax(X W_Q1^T W_K1 X^T / sqrt 8) X
    W_V1^T W_O1^T``; in layer 2 the last token queries and a readout ``v``
    gives one number, ``v^T W_V2 H^T softmax(H W_K2^T W_Q2 h_N / sqrt 8)``.

    Parameters
    ----------
    P : sequence of Tensor
        ``W_Q1, W_K1, W_V1, W_O1, W_Q2, W_K2, W_V2`` of shape ``(S, 8, 8)``
        and ``v`` of shape ``(S, 8)``.
    X : Tensor ``(S, n, N_TOK, D_TOK)``

    Returns
    -------
    Tensor ``(S, n, 1)``
    """
    W_Q1, W_K1, W_V1, W_O1, W_Q2, W_K2, W_V2, v = P
    S, n = X.shape[:2]
    tokens = X.reshape(S, n * N_TOK, D_TOK)
    QK1 = W_Q1.transpose(-1, -2) @ W_K1 / D_TOK**0.5  # logits x_t QK1 x_u
    logits = (tokens @ QK1).reshape(X.shape) @ X.transpose(-1, -2)
    values1 = tokens @ (W_O1 @ W_V1).transpose(-1, -2)
    H = _softmax(logits) @ values1.reshape(X.shape)  # every token
    # layer 2: the last token queries
    query = H[:, :, -1] @ (W_Q2.transpose(-1, -2) @ W_K2 / D_TOK**0.5)
    att2 = _softmax((H * query.unsqueeze(-2)).sum(-1))  # (S, n, N)
    readout = W_V2.transpose(-1, -2) @ v.unsqueeze(-1)
    values = (H.reshape(S, n * N_TOK, D_TOK) @ readout).reshape(S, n, N_TOK)
    return (att2 * values).sum(-1, keepdim=True)  # v^T W_V2 H^T att2


def attention_task(
    seed_list: Sequence[int],
    variances: Sequence[float],
    teacher_qk: bool,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
) -> tuple[Tensor, Tensor, list[Tensor]]:
    """A teacher-student task for :func:`attention_forward`, one member per
    (variance, seed) (the paper's Fig. 8, App. C).

    The teacher has standard Gaussian value and readout weights, and
    standard Gaussian queries and keys (``teacher_qk``, the Gaussian
    teacher) or zero ones (uniform attention, the token-average teacher).
    Inputs are standard Gaussian tokens; targets have unit variance on the
    first ``n_train`` sequences; the student starts at variance ``var``.

    Parameters
    ----------
    seed_list : sequence of int
    variances : sequence of float > 0
        The student's initial variances (members ordered variance-major).
    teacher_qk : bool
        Gaussian queries and keys in the teacher (else zero).
    n_train, n_test : int
        Training and test sequences (the training ones first).

    Returns
    -------
    X : Tensor ``(S, n_train + n_test, N_TOK, D_TOK)``
    Y : Tensor ``(S, n_train + n_test, 1)``
    W : list of Tensor
        The student's initial weights, as :func:`attention_forward` takes
        them.

    Raises
    ------
    ValueError
        On no seeds or variances, or a variance that is not positive.
    """
    seeds = [natural(f"seed_list[{i}]", s) for i, s in enumerate(seed_list)]
    variances = [
        positive(f"variances[{i}]", v)
        for i, v in enumerate(sequence("variances", variances, "number"))
    ]
    if not seeds or not variances:
        raise ValueError("seed_list and variances must not be empty")
    n_train, n_test = integer("n_train", n_train), natural("n_test", n_test)
    shapes = [(D_TOK, D_TOK)] * 7 + [(D_TOK,)]
    X, Y, W0 = [], [], []
    for var in variances:
        for s in seeds:
            gen = torch.Generator().manual_seed(s)
            teacher = [  # standard Gaussian
                torch.randn(*shape, generator=gen, dtype=F64)
                for shape in shapes
            ]
            if not teacher_qk:
                for i in (0, 1, 4, 5):
                    teacher[i] = torch.zeros(shapes[i], dtype=F64)
            x = torch.randn(
                n_train + n_test, N_TOK, D_TOK, generator=gen, dtype=F64
            )
            y = attention_forward([w[None] for w in teacher], x[None])[0]
            X.append(x)
            Y.append(y / y[:n_train].std())  # targets of unit variance
            W0.append(
                [
                    var**0.5 * torch.randn(*shape, generator=gen, dtype=F64)
                    for shape in shapes
                ]
            )
    return torch.stack(X), torch.stack(Y), [torch.stack(w) for w in zip(*W0)]


def attention_models(W: Sequence[Tensor], X: Tensor) -> dict:
    """The network and its 2-layer and 1-layer NQFs from the same weights
    (Prop. 2; App. B.4), for ``train_together``.

    The 2-layer NQF pairs ``(W_V1, W_O1)`` and ``(W_V2, v)`` in two
    ``AttentionLayer`` s; the 1-layer NQF pairs ``(W_V1, v)`` and gets the
    constant term ``C(x)`` that makes it equal the network at step zero.

    Parameters
    ----------
    W : sequence of Tensor
        The weights of :func:`attention_task`.
    X : Tensor ``(S, n, N_TOK, D_TOK)``
        Every input (``C(x)`` is computed on all of them).

    Returns
    -------
    dict
        ``"model"``, ``"nqf2"``, ``"nqf1"``: ``(parameters, forward,
        offset)``.
    """
    nqf2 = DeepNQF(
        [
            AttentionLayer(N_TOK, D_TOK, D_TOK),
            AttentionLayer(N_TOK, D_TOK, 1, pooled=True),
        ]
    )
    nqf1 = DeepNQF([AttentionLayer(N_TOK, D_TOK, 1, pooled=True)])
    readout = W[7].unsqueeze(-2)

    def nqf1_forward(P, x):
        return nqf1.predict_W(x.flatten(-2), P)

    with torch.no_grad():
        C = attention_forward(W, X) - nqf1_forward([pair(W[2], readout)], X)
    return {
        "model": (W, attention_forward, None),
        "nqf2": (
            [pair(W[2], W[3]), pair(W[6], readout)],
            lambda P, x: nqf2.predict_W(x.flatten(-2), P),
            None,
        ),
        "nqf1": ([pair(W[2], readout)], nqf1_forward, C),
    }


def logit_mean_square(
    X: Tensor, W: Sequence[Tensor], n_train: int = N_TRAIN
) -> np.ndarray:
    """The mean square of the layer-1 logits ``x_t^T W_Q^T W_K x_u / sqrt
    D`` between distinct tokens of the training inputs at step zero, one
    value per member (Prop. 2: the logits are quadratic in the weights).

    Parameters
    ----------
    X : Tensor ``(S, n, N_TOK, D_TOK)``
    W : sequence of Tensor
        The weights of :func:`attention_task` (``W_Q1, W_K1`` are read).
    n_train : int
        The first ``n_train`` inputs are the training inputs.

    Returns
    -------
    ndarray ``(S,)``
    """
    x = X[:, : integer("n_train", n_train)]
    QK = W[0].transpose(-1, -2) @ W[1] / D_TOK**0.5
    logits = torch.einsum("snti,sij,snuj->sntu", x, QK, x)
    off = ~torch.eye(N_TOK, dtype=torch.bool)
    return (logits[:, :, off] ** 2).mean(dim=(1, 2)).numpy()


def on_slower_clock(hist: np.ndarray, factor: float = 2.0) -> np.ndarray:
    """The same loss curves read at ``step / factor`` (linear interpolation
    between the records): a model that learns ``factor`` times slower (this
    book, the control of the tracks claims).

    Parameters
    ----------
    hist : ndarray ``(records, ...)``
        Curves recorded at equal intervals along axis 0.
    factor : float > 0

    Returns
    -------
    ndarray of the shape of ``hist``
    """
    factor = positive("factor", factor)
    steps = np.arange(hist.shape[0])
    flat = hist.reshape(hist.shape[0], -1)
    slow = [np.interp(steps / factor, steps, col) for col in flat.T]
    return np.stack(slow, axis=1).reshape(hist.shape)


def log_contrast(f: dict) -> np.ndarray:
    """Per member, the log of the ratio of the root mean square distances
    of the 1-layer and the 2-layer NQF's outputs from the network's (this
    book, the function-space contrast of the paper's Fig. 8).

    The mean runs over the inputs and the records after the first (at step
    zero the 1-layer NQF equals the network by construction).

    Parameters
    ----------
    f : dict
        ``"model"``, ``"nqf2"``, ``"nqf1"``: outputs ``(records, S, n, 1)``
        as ``train_together(..., outputs=True)`` records them.

    Returns
    -------
    ndarray ``(S,)``
    """
    missing = {"model", "nqf2", "nqf1"} - set(f)
    if missing:
        raise ValueError(f"f must hold the outputs of {sorted(missing)}")
    d = {
        n: ((f[n] - f["model"])[1:] ** 2).mean((0, 2, 3))
        for n in ("nqf2", "nqf1")
    }
    return 0.5 * np.log(d["nqf1"] / d["nqf2"])


def ratio_lower(log_ratio: np.ndarray) -> float:
    """The geometric mean of per-seed ratios divided by ``e`` to the three
    standard errors of its log (this book): at least 1 when the ratio
    exceeds 1 beyond the noise.

    ``log_ratio`` holds the per-seed logs (at least two).
    """
    m, se = mean_se(log_ratio)
    return float(np.exp(m - 3 * se))


def half_speed_gaps(
    f: dict, Y: Tensor, n_train: int = N_TRAIN
) -> tuple[np.ndarray, np.ndarray]:
    """The two groups of per-member loss gaps that the bound of the
    attention tracks claims lies between (this book, on the paper's Fig. 8,
    App. B.4): the 2-layer NQF's gap to the network, and the gap of the
    network's own loss curve read at half speed (:func:`on_slower_clock`).

    Parameters
    ----------
    f : dict
        ``"model"`` and ``"nqf2"``: training outputs ``(records, S, n, 1)``
        as ``train_together(..., outputs=True)`` records them.
    Y : Tensor ``(S, N, 1)``
        The targets; the first ``n_train`` inputs are the training set.
    n_train : int

    Returns
    -------
    (nqf2 gaps, half-speed gaps) : ndarrays ``(S,)``
        :func:`~nqf_lite.experiments.deep_runs.rel_gap` of each to the
        network's training loss.
    """
    missing = {"model", "nqf2"} - set(f)
    if missing:
        raise ValueError(f"f must hold the outputs of {sorted(missing)}")
    n_train = integer("n_train", n_train)
    target = Y[None, :, :n_train].numpy()
    loss = {  # training loss, shaped (records, 1, members) for rel_gap
        n: ((f[n] - target) ** 2).mean((2, 3))[:, None]
        for n in ("model", "nqf2")
    }
    half = on_slower_clock(loss["model"])
    return rel_gap(loss["model"], loss["nqf2"]), rel_gap(loss["model"], half)
