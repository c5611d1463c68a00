"""Coding exercises of chapter 9 (deep NQFs): the end-to-end map, one closed
step, a compressed width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from nqf_lite.deep.deep_nqf import (
    DeepNQF,
    MLPLayer,
    deep_moments,
    realize_deep,
    structure_subspace,
)
from nqf_lite.deep.general import random_general_layer
from nqf_lite.book.seeding import rng
from nqf_lite.book.exercises import Exercise, eq, register
from nqf_lite.book.exercises._judges import compare_arrays, compare_number

__all__: list[str] = []


# ------------------------------------------------------------------
# ex-ch9-end-to-end
def _linear_stack(dims: Sequence[int]) -> DeepNQF:
    """Two MLP blocks without activation, ``dims[0] -> dims[1] -> dims[2]``."""
    return DeepNQF([MLPLayer(dims[0], dims[1]), MLPLayer(dims[1], dims[2])])


def _end_to_end(Ms: Sequence[Any], dims: Sequence[int]) -> np.ndarray:
    """``P`` with ``f(x) = x @ P``: the stack's outputs on the unit vectors
    ``e_i``."""
    stack = _linear_stack(dims)
    mus = [
        np.zeros(layer.p) for layer in stack.layers
    ]  # a ZGZ stack ignores mu
    return stack.predict(np.eye(dims[0]), list(Ms), mus).numpy()


def _judge_end_to_end(
    answer: Any, Ms: Sequence[Any], dims: Sequence[int]
) -> str | None:
    return compare_arrays(answer, _end_to_end(Ms, dims), what="P")


def _end_to_end_case() -> dict:
    gen = rng("exercises", "ch9", "end-to-end")
    dims = (3, 4, 2)
    Ws = [
        gen.standard_normal((dims[0] + dims[1], 5)),
        gen.standard_normal((dims[1] + dims[2], 6)),
    ]
    return {"Ms": [W @ W.T for W in Ws], "dims": dims}


_E2E = _end_to_end_case()
_E2E_P = _end_to_end(**_E2E)
register(
    Exercise(
        "ex-ch9-end-to-end",
        "P, the matrix of the linear two-layer stack's map f(x) = x @ P, from "
        "its order parameters Ms",
        _judge_end_to_end,
        given=("Ms", "dims"),
        wrong=(
            (0.5 * _E2E_P, _E2E, "factor 2"),  # the 1/2 of A kept in the trace
            (_E2E["Ms"][0][:3, 3:], _E2E),  # the first layer alone
            (-_E2E_P, _E2E, "sign"),
        ),
    )
)


# ------------------------------------------------------------------
# ex-ch9-closed-step
def _explicit_step(
    stack: DeepNQF,
    x: Any,
    y: Any,
    Ms: Sequence[Any],
    mus: Sequence[Any],
    widths: Sequence[int],
    lr: float,
) -> tuple[list, list]:
    """One SGD step on weights that realise ``(Ms, mus)`` at ``widths``, read
    back as order parameters."""
    Ws = realize_deep(Ms, mus, widths)
    Ms_next, mus_next = deep_moments(stack.gd_step(x, y, Ws, lr))
    return [M.numpy() for M in Ms_next], [mu.numpy() for mu in mus_next]


def _judge_closed_step(
    answer: Any,
    stack: DeepNQF,
    x: Any,
    y: Any,
    Ms: Sequence[Any],
    mus: Sequence[Any],
    widths: Sequence[int],
    lr: float,
) -> str | None:
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        return "the answer should be the pair (Ms_next, mus_next)."
    Ms_next, mus_next = answer
    L = len(Ms)
    for name, value in (("Ms_next", Ms_next), ("mus_next", mus_next)):
        if not (isinstance(value, (tuple, list)) and len(value) == L):
            return f"{name} should be a list with one entry per layer ({L})."
    expected_M, expected_mu = _explicit_step(stack, x, y, Ms, mus, widths, lr)
    for l in range(L):
        hint = compare_arrays(
            mus_next[l],
            expected_mu[l],
            what=f"mus_next[{l}]",
            rtol=1e-7,
            atol=1e-10,
        )
        if hint:
            return hint + " Does the width d_l enter the update of mu?"
        hint = compare_arrays(
            Ms_next[l],
            expected_M[l],
            what=f"Ms_next[{l}]",
            rtol=1e-7,
            atol=1e-10,
        )
        if hint:
            return hint + " Keep every term of order lr and lr**2."
    return None


def _closed_step_case() -> dict:
    gen = rng("exercises", "ch9", "closed-step")
    stack = DeepNQF(
        [
            random_general_layer(6, 4, 3, gen),
            random_general_layer(5, 3, 1, gen),
        ]
    )
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((p, d)))
        for p, d in ((6, 5), (5, 8))
    ]
    Ms, mus = deep_moments(Ws)
    return {
        "stack": stack,
        "x": torch.as_tensor(gen.standard_normal((8, 4))),
        "y": torch.as_tensor(gen.standard_normal((8, 1))),
        "Ms": Ms,
        "mus": mus,
        "widths": (5, 8),
        "lr": 0.05,
    }


def _step_without_width(case: dict) -> tuple[list, list]:
    """Eqs. 222-223 with the width d_l left out (d = 1): the slip this
    exercise's hint names.

    Written out here because the package refuses a width the state cannot be
    realised at.
    """
    vs, Hs = case["stack"].order_gradients(
        case["x"], case["y"], case["Ms"], case["mus"]
    )
    lr, Ms, mus = case["lr"], [], []
    for M, mu, v, H in zip(case["Ms"], case["mus"], vs, Hs):
        vm = torch.outer(v, mu)
        M_next = (
            M
            - lr * (vm + vm.T + H @ M + M @ H)
            + lr**2 * (torch.outer(v, v) + vm @ H + H @ vm.T + H @ M @ H)
        )
        Ms.append(M_next.numpy())
        mus.append((mu - lr * (v + H @ mu)).numpy())
    return Ms, mus


_STEP = _closed_step_case()
_NO_WIDTH = _step_without_width(_STEP)
register(
    Exercise(
        "ex-ch9-closed-step",
        "(Ms_next, mus_next): one step of the closed recursion, "
        + eq("eq-ch9-dmu", "eq-ch9-dM")
        + ", for every layer of the stack",
        _judge_closed_step,
        given=("stack", "x", "y", "Ms", "mus", "widths", "lr"),
        wrong=(
            ((_STEP["Ms"], _STEP["mus"]), _STEP),  # no step at all
            (_NO_WIDTH, _STEP),  # the width d_l forgotten (d = 1)
            (_STEP["Ms"], _STEP),  # not a pair of per-layer lists
        ),
    )
)


# ------------------------------------------------------------------
# ex-ch9-width2
def _layer1_outputs(
    stack: DeepNQF, x: Any, y: Any, Ws: Sequence[Any], lr: float, steps: int
) -> torch.Tensor:
    """``h^(1)`` on the inputs at steps ``0..steps`` of GD, stacked (steps + 1,
    n, D_1)."""
    Ws = list(Ws)
    out = []
    for t in range(steps + 1):
        out.append(stack.hidden(x, *deep_moments(Ws))[0])
        if t < steps:
            Ws = stack.gd_step(x, y, Ws, lr)
    return torch.stack(out)


def _width2(
    stack: DeepNQF, x: Any, y: Any, Ws: Sequence[Any], lr: float, steps: int
) -> int:
    """Theorem 15's width ``k_2 + 1`` of layer 2, with the span of Eq. 236 over
    every step."""
    h1 = _layer1_outputs(stack, x, y, Ws, lr, steps)
    return (
        structure_subspace(
            stack.layers[1], h1.reshape(-1, h1.shape[-1])
        ).shape[1]
        + 1
    )


def _judge_width2(
    answer: Any,
    stack: DeepNQF,
    x: Any,
    y: Any,
    Ws: Sequence[Any],
    lr: float,
    steps: int,
) -> str | None:
    expected = _width2(stack, x, y, Ws, lr, steps)
    hint = compare_number(answer, expected, what="d2", rtol=0.0, atol=0.5)
    if hint is None or "should be" in hint or "NaN" in hint:
        return hint  # right, or not a number at all
    return (
        "d2 is not the compressed width of layer 2: count the directions that "
        "layer 2's structure "
        "spans over every input and every step, then add what Theorem 15 adds."
    )


def _width2_case() -> dict:
    gen = rng("exercises", "ch9", "width2")
    stack = DeepNQF([MLPLayer(8, 16), MLPLayer(16, 1, act=torch.tanh)])
    Ws = [
        0.3 * torch.as_tensor(gen.standard_normal((24, 40))),
        0.3 * torch.as_tensor(gen.standard_normal((17, 30))),
    ]
    return {
        "stack": stack,
        "x": torch.as_tensor(gen.standard_normal((3, 8))),
        "y": torch.as_tensor(gen.standard_normal((3, 1))),
        "Ws": Ws,
        "lr": 0.01,
        "steps": 2,
    }


_W2 = _width2_case()
_W2_RIGHT = _width2(**_W2)
register(
    Exercise(
        "ex-ch9-width2",
        "d2, the compressed width k_2 + 1 of the MLP stack's second layer "
        "(Theorem 15) over the first steps",
        _judge_width2,
        given=("stack", "x", "y", "Ws", "lr", "steps"),
        wrong=(
            (_W2_RIGHT - 1, _W2),  # k_2 instead of k_2 + 1
            (
                _W2_RIGHT - 2 * 3,
                _W2,
            ),  # the span at step zero only (3 inputs, not 9)
            (_W2_RIGHT + 1, _W2),
        ),
    )
)
