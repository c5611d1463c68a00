"""Runners of the architectures chapter: how good each quadratic form is.

Chapter 2 derives the structure matrix ``A(x)`` of every architecture of
the paper's Sec. 3 (Props. 1-6) and checks it against autograd. Two of its
experiments are here:

- :func:`truncation_errors`: the error ``|f(eps W) - NQF(eps W)|`` of a
  module's quadratic form on a grid of scales, for an ensemble of random
  inputs and weight directions (Thm 1; Prop. 2, App. A.5);
- :func:`feedforward_invariance`: that an NQF of the feed-forward form
  depends on ``W = [Z1; Z2]`` only through ``Z2 Z1^T``, and that the
  representation ``h = Z1^T C`` reads it out (Eqs. 17-19);
- :func:`feedforward_split`: where a structure matrix splits into the
  feed-forward form of Eq. 17, or ``None`` if it has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nqf_lite._checks import as_array, check_symmetric, integer
from nqf_lite.expansion import expand, truncation_error
from nqf_lite.expansion.models import feedforward_blocks, representation

__all__ = [
    "feedforward_invariance",
    "feedforward_split",
    "truncation_errors",
]


def truncation_errors(
    module: Any,
    sample: Callable[[np.random.Generator], Any],
    width: int,
    eps: Any,
    rngs: Sequence[np.random.Generator],
    correction: Callable[..., Any] | None = None,
) -> np.ndarray:
    """``|f - NQF|`` at weights ``eps W``, one row per input and direction.

    For every generator ``r`` of ``rngs``: an input ``sample(r)``, then a
    direction ``W`` of shape ``(module.p, width)`` with standard normal
    entries (drawn from ``r`` in that order); the module is expanded at the
    input (:func:`nqf_lite.expand`, width ``width``) and its truncation
    error measured on ``eps`` (:func:`nqf_lite.expansion.truncation_error`;
    Thm 1, Eq. 20). With ``correction``, ``correction(eps W, *inputs)`` (a
    higher-order term, e.g. attention's quartic term of App. A.5) is added
    to the NQF; a tuple input is unpacked into it.

    Parameters
    ----------
    module : torch.nn.Module
        A module of :mod:`nqf_lite.expansion.models` with ``p`` parameters
        per unit.
    sample : callable ``sample(r) -> inputs``
    width : int >= 1
        Units ``d`` of the directions.
    eps : array_like, shape (T,)
        Positive scales.
    rngs : sequence of numpy.random.Generator
        One per member of the ensemble.
    correction : callable, optional

    Returns
    -------
    ndarray, shape (len(rngs), T)

    Raises
    ------
    ValueError
        If ``width`` is not a positive integer, ``rngs`` is empty, or
        ``eps`` is not a 1-D array of positive scales.
    """
    width = integer("width", width)
    if len(rngs) == 0:
        raise ValueError("rngs must hold at least one generator")
    errs = []
    for r in rngs:
        inputs, W = sample(r), r.normal(size=(module.p, width))
        e = expand(module, inputs, module.p, d=width)
        if correction is None:
            extra = None
        else:
            args = inputs if isinstance(inputs, tuple) else (inputs,)

            def extra(We: np.ndarray) -> Any:
                return correction(We, *args)

        errs.append(truncation_error(module, e, inputs, W, eps, extra))
    return np.array(errs)


def feedforward_invariance(
    A: Any, W: Any, G: Any
) -> tuple[float, float, float]:
    """The feed-forward form's invariance and readout, at one ``W`` and ``G``.

    For ``A = 1/2 [[0, C], [C^T, 0]]`` (Eq. 17) and ``W = [Z1; Z2]``
    (Eq. 18) the NQF ``Tr[M A]``, ``M = W W^T``, depends on ``W`` only
    through ``Z2 Z1^T``: it is unchanged by ``Z1 -> Z1 G``,
    ``Z2 -> Z2 G^-T`` for any invertible ``G``, though ``M`` changes; and it
    equals ``sum_i h_i . z2_i`` with the representation ``h = Z1^T C``
    (Eq. 19).

    Parameters
    ----------
    A : array_like, shape (p, p)
        A structure matrix of the feed-forward form (scalar output).
    W : array_like, shape (p, d)
        Units as columns.
    G : array_like, shape (d, d)
        An invertible mixing of the units.

    Returns
    -------
    invariance : float
        ``|Tr[M' A] - Tr[M A]|`` for the mixed weights.
    moved : float
        ``max |M' - M|``: how much the mixing moved the moments.
    readout : float
        ``|sum_i h_i . z2_i - Tr[M A]|``.

    Raises
    ------
    ValueError
        If ``A`` has no feed-forward form, or the shapes do not match.
    """
    A = as_array("A", A, ndim=2)
    W = as_array("W", W, ndim=2)
    G = as_array("G", G, ndim=2)
    if W.shape[0] != A.shape[0] or G.shape != (W.shape[1], W.shape[1]):
        raise ValueError(
            f"W must be (p, d) and G (d, d) for A of shape {A.shape}, got "
            f"W {W.shape} and G {G.shape}"
        )
    C_block, split = feedforward_blocks(A)
    W_new = np.vstack([W[:split] @ G, W[split:] @ np.linalg.inv(G).T])
    quad = np.sum(A * (W @ W.T))
    invariance = abs(np.sum(A * (W_new @ W_new.T)) - quad)
    moved = np.abs(W_new @ W_new.T - W @ W.T).max()
    h = representation(W, C_block, split)
    readout = abs(np.sum(h * W[split:].T) - quad)
    return invariance, moved, readout


def feedforward_split(A: Any) -> int | None:
    """The split of ``A`` in the feed-forward form of Eq. 17, if it has one.

    ``A = 1/2 [[0, C], [C^T, 0]]`` with ``W = [Z1; Z2]`` split after row
    ``split`` (Eqs. 17-18; the blocks as
    :func:`~nqf_lite.expansion.models.blocks.feedforward_blocks` builds
    them). Phase retrieval's ``A = a a^T`` has no such form (Table 3).

    Parameters
    ----------
    A : array_like, shape (p, p) or (V, p, p)
        A symmetric structure matrix.

    Returns
    -------
    int or None
        The smallest split, or ``None`` if ``A`` has no feed-forward form.

    Raises
    ------
    ValueError
        If ``A`` is not a symmetric matrix (or a stack of them).
    """
    A = as_array("A", A)
    if A.ndim not in (2, 3):
        raise ValueError(
            f"A must have shape (p, p) or (V, p, p), got {A.shape}"
        )
    check_symmetric("A", A)
    try:
        return feedforward_blocks(A)[1]
    except ValueError:
        return None
