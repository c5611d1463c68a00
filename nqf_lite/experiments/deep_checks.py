"""The live checks of Theorems 14 and 15 of chapter 9: the training of a
deep NQF closes on every layer's ``(M, mu)`` (Thm 14, Eqs. 221-225) and a
stack compresses layer by layer to widths ``k_l + 1`` (Thm 15, Eq. 236).

``theorem14_*`` and ``theorem15_*`` check them on the 2-layer NQF of the
4-layer MLP of :mod:`nqf_lite.experiments.deep_runs` (``_check``) and on a
general stack with ``g, B != 0`` (``_general``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from nqf_lite._checks import generator, integer, natural, positive
from nqf_lite.deep.deep_nqf import (
    DeepNQF,
    compress_deep,
    deep_moments,
    realize_deep,
    structure_subspace,
)
from nqf_lite.deep.general import (
    order_gradients_by_structure,
    random_general_layer,
)

__all__ = [
    "SENSITIVITY",
    "theorem14_check",
    "theorem14_general",
    "theorem15_check",
    "theorem15_general",
    "conditioned_theorem15",
    "CONDITIONED",
]

F64 = torch.float64


def _mlp_stack() -> DeepNQF:
    """The 2-layer NQF of the 4-layer MLP (input 8, width 16)."""
    return DeepNQF.mlp([8, 16, 16, 16, 1])


def _source(gen: object) -> np.random.Generator:
    if gen is None:
        raise TypeError("gen must be a numpy Generator or an int seed")
    return generator("gen", gen)


def _gap(a: Tensor, b: Tensor) -> float:
    return float((a - b).abs().max())


def theorem14_check(
    seed: int, steps: int = 100, n: int = 8
) -> tuple[float, float, float]:
    """Theorem 14 (Eqs. 221-225) on the 2-layer NQF of the 4-layer MLP:
    widths ``(16, 16)`` and ``(40, 25)`` with equal per-layer ``(M, mu)``
    and the closed recursion, trained by minibatch SGD (batches of 4).

    Parameters
    ----------
    seed, steps, n : int
        The seed, the SGD steps and the training inputs (at least 4).

    Returns
    -------
    (width gap, closed gap, move) : floats
        Max output gaps of the wide model and of the closed recursion to
        the explicit run over ``steps`` steps on ``n`` inputs, and how far
        the outputs moved.
    """
    seed, steps = natural("seed", seed), integer("steps", steps)
    n = integer("n", n, minimum=4)
    stack = _mlp_stack()
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=gen, dtype=F64)
    y = torch.randn(n, 1, generator=gen, dtype=F64)
    Ws = [0.3 * torch.randn(p, 16, generator=gen, dtype=F64) for p in (24, 17)]
    Ms, mus = deep_moments(Ws)
    Ws_wide = realize_deep(Ms, mus, [40, 25], rng=rng)
    batches = [rng.choice(n, 4, replace=False) for _ in range(steps)]
    lrs = [0.03, 0.05]
    _, out = stack.train(x, y, Ws, lrs, steps, batches=batches)
    _, out_wide = stack.train(x, y, Ws_wide, lrs, steps, batches=batches)
    _, out_closed = stack.train_closed(
        x, y, Ms, mus, [16, 16], lrs, steps, batches=batches
    )
    return _gap(out, out_wide), _gap(out, out_closed), _gap(out[-1], out[0])


def theorem14_general(
    gen: object, steps: int = 40, n: int = 8, lr: float = 0.05
) -> dict:
    """Theorem 14 with every term of Eq. 219 (``g, B != 0``): the width is
    part of the state (Eqs. 222-225).

    Widths ``(5, 8)`` and ``(11, 13)`` with the same initial ``(M, mu)``
    are trained by minibatch SGD next to the closed recursion run with
    either pair of widths; Eqs. 224-225 written out term by term
    (``order_gradients_by_structure``) are compared with autograd.

    Parameters
    ----------
    gen : numpy Generator or int seed
    steps, n, lr : SGD steps, training inputs (at least 4), learning rate

    Returns
    -------
    dict
        ``"closed"``, ``"wrong-width"`` (recursion at (11, 13) vs SGD at
        (5, 8)), ``"vH"`` (max relative difference), ``"v0"`` (smallest
        ``max|v^(l)|`` at step zero), ``"moved"`` and ``"problem"`` (stack,
        data, order parameters and rate).
    """
    gen = _source(gen)
    steps, n = integer("steps", steps), integer("n", n, minimum=4)
    lr = positive("lr", lr)
    stack = DeepNQF(
        [
            random_general_layer(6, 4, 3, gen),
            random_general_layer(5, 3, 1, gen),
        ]
    )
    x = torch.as_tensor(gen.standard_normal((n, 4)))
    y = torch.as_tensor(gen.standard_normal((n, 1)))
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((p, d)))
        for p, d in ((6, 5), (5, 8))
    ]  # widths (5, 8)
    Ms, mus = deep_moments(Ws)
    Ws_wide = realize_deep(Ms, mus, [11, 13], rng=gen)  # same (M, mu)
    batches = [gen.choice(n, 4, replace=False) for _ in range(steps)]
    Ws_end, out = stack.train(x, y, Ws, lr, steps, batches=batches)
    _, out_wide = stack.train(x, y, Ws_wide, lr, steps, batches=batches)
    closed = {  # the recursion of Eqs. 222-223 with either pair of widths
        d: stack.train_closed(x, y, Ms, mus, d, lr, steps, batches=batches)[1]
        for d in ((5, 8), (11, 13))
    }
    # Eqs. 224-225 term by term against autograd, at the start and the end
    vH_error = 0.0
    for state in ((Ms, mus), deep_moments(Ws_end)):
        by_autograd = stack.order_gradients(x, y, *state)
        by_structure = order_gradients_by_structure(stack, x, y, *state)
        for a, b in zip(sum(by_autograd, []), sum(by_structure, [])):
            vH_error = max(
                vH_error, float((a - b).abs().max() / b.abs().max())
            )
    v0 = order_gradients_by_structure(stack, x, y, Ms, mus)[0]
    return {
        "closed": max(_gap(out, closed[5, 8]), _gap(out_wide, closed[11, 13])),
        "wrong-width": _gap(out, closed[11, 13]),
        "vH": vH_error,
        "v0": min(float(v.abs().max()) for v in v0),
        "moved": _gap(out[-1], out[0]),
        "problem": dict(stack=stack, x=x, y=y, Ms=Ms, mus=mus, lr=lr),
    }


def theorem15_check(seed: int, steps: int = 100, m: int = 3) -> tuple:
    """Theorem 15 (Eq. 236) on the 2-layer NQF of the 4-layer MLP: widths
    ``(40, 30)`` compressed layer by layer (layer 2 not projected), both
    trained by full-batch GD with layer-wise rates.

    Parameters
    ----------
    seed, steps, m : int
        The seed, the GD steps and the training inputs.

    Returns
    -------
    (output gap, compressed widths, move, problem)
        ``problem`` is ``dict(x, y, Ws, lr)`` (``m`` inputs).
    """
    seed, steps = natural("seed", seed), integer("steps", steps)
    m = integer("m", m)
    stack = _mlp_stack()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, 8, generator=gen, dtype=F64)
    y = torch.randn(m, 1, generator=gen, dtype=F64)
    Ws = [
        0.3 * torch.randn(24, 40, generator=gen, dtype=F64),
        0.3 * torch.randn(17, 30, generator=gen, dtype=F64),
    ]
    bases = [
        structure_subspace(stack.layers[0], x),
        torch.eye(17, dtype=F64),
    ]
    # full batch, widths 40 and 30: larger steps diverge for some draws
    lrs = [0.01, 0.015]
    small, Ws_small, lrs_small = compress_deep(stack, Ws, lrs, bases, rng=seed)
    _, out = stack.train(x, y, Ws, lrs, steps)
    _, out_small = small.train(x, y, Ws_small, lrs_small, steps)
    return (
        _gap(out, out_small),
        [W.shape[1] for W in Ws_small],
        _gap(out[-1], out[0]),
        dict(x=x, y=y, Ws=Ws, lr=lrs),
    )


#: the relative size of the start's perturbation that measures how much a
#: run amplifies rounding (``theorem15_general``'s ``"floor"``): 1e4 times
#: float64's rounding of a step
SENSITIVITY = 1e-12
#: a start whose full run moves further than this from a start
#: ``SENSITIVITY`` away (an amplification above ten) is ill-conditioned:
#: float64 cannot resolve an identity along it (see
#: :func:`conditioned_theorem15`)
CONDITIONED = 10 * SENSITIVITY


def _direction(W: Tensor) -> Tensor:
    """A fixed direction of the shape of ``W``, entries in [-1, 1]."""
    return torch.cos(torch.arange(W.numel(), dtype=W.dtype)).reshape(W.shape)


def _order_gap(Ws: list[Tensor], Vs: list[Tensor]) -> float:
    """Largest relative difference of ``(M, mu)`` between two weight lists."""
    gap = 0.0
    for W, V in zip(Ws, Vs):
        for a, b in ((W @ W.T, V @ V.T), (W.sum(1), V.sum(1))):
            gap = max(gap, float((a - b).abs().max() / a.abs().max()))
    return gap


def theorem15_general(
    gen: object, steps: int = 60, n: int = 6, lr: float = 0.05
) -> dict:
    """Theorem 15, statements 2 and 3, with ``g, B != 0`` and every layer
    projected (Eq. 236): widths ``(12, 10)``, structure in subspaces of
    dimension 4 and 3, compressed to ``(k_1 + 1, k_2 + 1)``; full-batch GD.

    Parameters
    ----------
    gen : numpy Generator or int seed
    steps, n, lr : GD steps, training inputs, learning rate

    Returns
    -------
    dict
        ``"widths"``, ``"out"`` (max output gap), ``"order"`` (max relative
        deviation of ``mu~ = P mu``, ``M~ = (d/d') P M P`` at the end),
        ``"ctrl"`` (gap at the original rate), ``"moved"``, ``"v0"``, and
        ``"floor"``: how far the full stack's own run moves, in outputs and
        in ``(M, mu)`` relative, when its weights start ``SENSITIVITY``
        (relative) away. Rounding is a perturbation of about ``1e-16`` a
        step; where GD is transiently unstable (the random general layers
        make it so on about four starts in a hundred, some of them chaotic)
        it is amplified, and two exact routes agree only to that
        amplification.
    """
    gen = _source(gen)
    steps, n, lr = integer("steps", steps), integer("n", n), positive("lr", lr)
    stack = DeepNQF(
        [
            random_general_layer(8, 4, 3, gen, rank=4),
            random_general_layer(7, 3, 1, gen, rank=3),
        ]
    )
    x = torch.as_tensor(gen.standard_normal((n, 4)))
    y = torch.as_tensor(gen.standard_normal((n, 1)))
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((p, d)))
        for p, d in ((8, 12), (7, 10))
    ]
    Ms, mus = deep_moments(Ws)
    h1 = stack.hidden(x, Ms, mus)[0]
    bases = [
        structure_subspace(stack.layers[0], x),
        structure_subspace(stack.layers[1], h1),
    ]
    small, Ws_small, lrs_small = compress_deep(stack, Ws, lr, bases, rng=gen)
    Ws_end, out = stack.train(x, y, Ws, lr, steps)
    Ws_small_end, out_small = small.train(x, y, Ws_small, lrs_small, steps)
    _, out_ctrl = small.train(x, y, Ws_small, lr, steps)  # rates not rescaled
    # statement 2 of the theorem at the last step, layer by layer
    order = 0.0
    for V, W, W_s in zip(bases, Ws_end, Ws_small_end):
        P, d, d_s = V @ V.T, W.shape[1], W_s.shape[1]
        (M, mu), (M_s, mu_s) = ((w @ w.T, w.sum(1)) for w in (W, W_s))
        order = max(
            order,
            float((mu_s - P @ mu).abs().max() / mu.abs().max()),
            float((M_s - d / d_s * P @ M @ P).abs().max() / M.abs().max()),
        )
    v0 = order_gradients_by_structure(stack, x, y, Ms, mus)[0]
    # the full run's sensitivity: the same stack from weights moved by
    # SENSITIVITY in a fixed direction (no draw: the runs above are unchanged)
    nudged = [W * (1 + SENSITIVITY * _direction(W)) for W in Ws]
    Ws_nudged, out_nudged = stack.train(x, y, nudged, lr, steps)
    floor = max(_gap(out, out_nudged), _order_gap(Ws_end, Ws_nudged))
    return {
        "widths": [W.shape[1] for W in Ws_small],
        "floor": floor,
        "out": _gap(out, out_small),
        "order": order,
        "ctrl": _gap(out, out_ctrl),
        "moved": _gap(out[-1], out[0]),
        "v0": min(float(v.abs().max()) for v in v0),
    }


def conditioned_theorem15(
    draws: Iterable[object], cutoff: float = CONDITIONED, **kw: Any
) -> tuple[dict, int]:
    """:func:`theorem15_general` on the first of ``draws`` whose full run is
    well-conditioned (``"floor" <= cutoff``), and how many were passed over.

    The choice looks at the full stack's run only, never at the compressed
    one the theorem is checked on, so it cannot favour the theorem.

    Parameters
    ----------
    draws : iterable of numpy Generators or int seeds
        The starts to try, in order (the first is the seed's own).
    cutoff : float > 0
        Largest ``"floor"`` accepted.
    **kw
        Passed to :func:`theorem15_general` (``steps``, ``n``, ``lr``).

    Raises
    ------
    RuntimeError
        If no start in ``draws`` is well-conditioned.
    """
    cutoff = positive("cutoff", cutoff)
    skipped = 0
    for gen in draws:
        run = theorem15_general(gen, **kw)
        if run["floor"] <= cutoff:
            return run, skipped
        skipped += 1
    raise RuntimeError(
        f"none of {skipped} starts has a well-conditioned run (floor <= "
        f"{cutoff:g})"
    )
