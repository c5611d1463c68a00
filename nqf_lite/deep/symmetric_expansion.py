"""The tensors of Theorem 13: the expansion of a symmetric module to any
order (paper App. B.1, Eqs. 200-203).

One symmetric tensor ``T_lambda`` per integer partition ``lambda`` of ``k``
(:func:`partitions`, with the constant :func:`partition_weight` of Eq. 202),
computed by automatic differentiation at the origin (:func:`theorem13`) and
held with its symmetry and additivity checks by :class:`SymmetricExpansion`.
See :mod:`nqf_lite.deep.higher_order` for the statement.
"""

from __future__ import annotations

import math
import string
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nqf_lite._checks import as_array, integer, model_input
from nqf_lite.expansion.autograd import NotSmoothError, expand

__all__ = [
    "ADDITIVE_RTOL",
    "MAX_BYTES",
    "SymmetricExpansion",
    "call_scalar",
    "partition_weight",
    "partitions",
    "theorem13",
]

Module = Callable[[torch.Tensor, Any], torch.Tensor]

#: largest array (bytes) this module agrees to build; pass ``max_bytes`` to
#: change it
MAX_BYTES = 2**28

#: relative size below which a cross-neuron tensor counts as zero (additivity)
ADDITIVE_RTOL = 1e-10


def partitions(k: int) -> list[tuple[int, ...]]:
    """Integer partitions of ``k``, parts in decreasing order (the ``lambda |-
    k`` of Eq. 200).

    Parameters
    ----------
    k : int
        A positive integer.

    Returns
    -------
    list of tuple of int
        E.g. ``partitions(3) == [(3,), (2, 1), (1, 1, 1)]``.
    """
    k = integer("k", k, minimum=1)

    def gen(n: int, largest: int) -> list[tuple[int, ...]]:
        if n == 0:
            return [()]
        return [
            (c, *rest)
            for c in range(min(n, largest), 0, -1)
            for rest in gen(n - c, c)
        ]

    return gen(k, k)


def partition_weight(lam: Sequence[int]) -> float:
    """``C_lambda / k!`` of Eq. 202 for sums over ordered tuples of distinct
    neurons.

    ``C_lambda`` counts the index sequences ``(j_1..j_k)`` that one ordered
    tuple of distinct neurons produces, ``k!/prod_r c_r!``, divided by
    ``prod_j n_j!`` because tuples differing only by a swap of equal parts give
    the same sequences.

    Parameters
    ----------
    lam : sequence of int
        A partition (positive parts, any order).

    Returns
    -------
    float
        ``1 / (prod_r c_r! * prod_j n_j!)``.
    """
    lam = _partition("lam", lam)
    denom = math.prod(math.factorial(c) for c in lam)
    denom *= math.prod(math.factorial(n) for n in Counter(lam).values())
    return 1.0 / denom


def _partition(name: str, lam: object) -> tuple[int, ...]:
    try:
        parts = tuple(lam)  # type: ignore[arg-type]
    except TypeError as exc:
        raise TypeError(
            f"{name} must be a sequence of positive integers, got {lam!r}"
        ) from exc
    if not parts:
        raise ValueError(f"{name} must have at least one part, got {lam!r}")
    for c in parts:
        integer(f"{name} part", c, minimum=1)
    return tuple(sorted((int(c) for c in parts), reverse=True))


def _budget(what: str, n_entries: int, max_bytes: int) -> None:
    need = 8 * n_entries
    if need > max_bytes:
        raise ValueError(
            f"{what} has {n_entries:,} float64 entries and would need "
            f"{need / 2**20:,.1f} MiB, "
            f"more than max_bytes = {max_bytes / 2**20:,.1f} MiB; lower the "
            "order or the width, "
            "or raise max_bytes"
        )


def _derivative(
    F: Callable[[torch.Tensor], torch.Tensor], n: int, k: int
) -> torch.Tensor:
    """The order-``k`` derivative tensor (shape ``(n,)*k``) of a scalar ``F``
    at ``0 in R^n``."""
    G = F
    for _ in range(k):
        G = torch.func.jacfwd(G)
    theta0 = torch.zeros(n, dtype=torch.float64)
    with (
        warnings.catch_warnings()
    ):  # torch.func's internal deprecation notices
        warnings.simplefilter("ignore", DeprecationWarning)
        return G(theta0).detach()


def call_scalar(f: Module, W: torch.Tensor, x: Any) -> torch.Tensor:
    out = f(W, x)
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"f(W, x) must return a torch tensor, got {type(out).__name__}"
        )
    if out.ndim != 0:
        raise ValueError(
            "f(W, x) must return a scalar (0-d tensor), got shape "
            f"{tuple(out.shape)}"
        )
    return out.to(torch.float64)


@dataclass(frozen=True)
class SymmetricExpansion:
    """The tensors ``T_lambda`` of Theorem 13 (Eq. 200) at one input.

    Attributes
    ----------
    f0 : float
        ``f(0; x)`` at width ``d``.
    tensors : dict
        ``T_lambda`` (float64, shape ``(p,) * k``) for every partition
        ``lambda`` of every order ``k <= order`` with at most ``d`` parts.  Its
        axes are grouped by the parts of ``lambda`` in decreasing order: the
        first ``c_1`` axes take neuron ``i_1``, the next ``c_2`` neuron
        ``i_2``, ...
    p : int
        Parameters per neuron.
    d : int
        Width at which the expansion was taken.
    order : int
        The ``K`` of Eq. 200.
    """

    f0: float
    tensors: dict[tuple[int, ...], np.ndarray]
    p: int
    d: int
    order: int

    def term(self, W: np.ndarray, k: int, max_bytes: int = MAX_BYTES) -> float:
        """The order-``k`` term of Eq. 200 at weights ``W`` (p, d), summed over
        distinct tuples.

        The sum over ordered tuples of ``m`` distinct neurons is done on the
        full ``d**m`` array of contractions with the coinciding tuples masked
        out, so it is meant for small widths (it refuses arrays above
        ``max_bytes``).
        """
        W = self._W(W)
        k = integer("k", k, minimum=1)
        if k > self.order:
            raise ValueError(f"k must be <= order = {self.order}, got {k}")
        total = 0.0
        for lam, T in self.tensors.items():
            if sum(lam) != k:
                continue
            m = len(lam)
            _budget(
                f"the order-{k} term of partition {lam} at width {self.d}",
                self.d**m,
                max_bytes,
            )
            letters = string.ascii_letters
            axes = letters[:k]
            neurons = letters[k : k + m]
            ops, pos = [], 0
            for r, c in enumerate(lam):
                for _ in range(c):
                    ops.append(axes[pos] + neurons[r])
                    pos += 1
            E = np.einsum(
                f"{axes}," + ",".join(ops) + f"->{neurons}", T, *([W] * k)
            )
            grids = np.indices((self.d,) * m).reshape(m, -1)
            distinct = np.array(
                [len(set(col)) == m for col in grids.T]
            ).reshape((self.d,) * m)
            total += float(E[distinct].sum())
        return total

    def predict(self, W: np.ndarray, order: int | None = None) -> float:
        """The expansion truncated at
        ``order`` (default: all of it), ``f0 + sum_k term(W, k)``."""
        K = self.order if order is None else integer("order", order, minimum=0)
        if K > self.order:
            raise ValueError(
                f"order must be <= {self.order}, the order this expansion "
                f"was taken to, got {K}"
            )
        return self.f0 + sum(self.term(W, k) for k in range(1, K + 1))

    def cross_size(self) -> float:
        """Largest entry of any cross-neuron tensor (two or more parts); 0 for
        an additive module."""
        return max(
            (
                float(np.abs(T).max())
                for lam, T in self.tensors.items()
                if len(lam) > 1
            ),
            default=0.0,
        )

    def _W(self, W: object) -> np.ndarray:
        W = as_array("W", W, ndim=2)
        if W.shape != (self.p, self.d):
            raise ValueError(
                f"W must have shape (p, d) = ({self.p}, {self.d}), got "
                f"{W.shape}"
            )
        return W


def theorem13(
    f: Module,
    x: Any,
    p: int,
    order: int,
    d: int | None = None,
    check: bool = True,
    max_bytes: int = MAX_BYTES,
) -> SymmetricExpansion:
    """The symmetric tensors ``T_lambda`` of Theorem 13 (Eqs. 200-203) by
    autograd.

    For each order ``k`` the ``k``-th derivative of ``f`` at ``W = 0`` is taken
    with respect to the first ``min(k, d)`` neurons only (the others sit at
    zero, and by permutation symmetry every choice of neurons gives the same
    block), and ``T_lambda = D_lambda / (prod_r c_r! prod_j n_j!)`` is read off
    the block in which neuron ``r`` appears ``c_r`` times
    (:func:`partition_weight`).

    Parameters
    ----------
    f : callable ``f(W, x) -> scalar tensor``
        The module in torch, ``W`` of shape ``(p, d)`` with neurons as columns.
    x : any
        One input, passed to ``f`` unchanged.
    p : int
        Parameters per neuron.
    order : int
        Highest order ``K >= 1`` of the expansion.
    d : int, optional
        Width at which ``f`` is evaluated (default ``max(order, 2)``, enough to
        see every partition).  For a module that is not a plain sum over
        neurons the tensors can depend on it.
    check : bool
        First run :func:`nqf_lite.expand`'s symmetry and smoothness checks, so
        that a non-symmetric module raises ``NotSymmetricError`` and a kink at
        the origin (ReLU) ``NotSmoothError``.
    max_bytes : int
        Refuse derivative tensors larger than this (the order-``k`` tensor has
        ``(min(k, d) p)**k`` entries).

    Returns
    -------
    SymmetricExpansion

    Raises
    ------
    ValueError
        If a derivative tensor would exceed ``max_bytes`` (the message states
        the memory it would need), or if ``f`` does not return a scalar.
    NotSmoothError
        If a derivative at the origin is not finite, or (with ``check``) if
        ``f`` has a kink there.
    """
    if not callable(f):
        raise TypeError(
            f"f must be callable as f(W, x), got {type(f).__name__}"
        )
    p = integer("p", p, minimum=1)
    order = integer("order", order, minimum=1)
    d = max(order, 2) if d is None else integer("d", d, minimum=1)
    max_bytes = integer("max_bytes", max_bytes, minimum=1)
    if not isinstance(check, (bool, np.bool_)):
        raise TypeError(f"check must be True or False, got {check!r}")
    model_input("x", x)
    for k in range(1, order + 1):
        _budget(
            f"the order-{k} derivative tensor", (min(k, d) * p) ** k, max_bytes
        )
    if check and d >= 2:
        expand(f, x, p, d=d, check=True)
    zeros = torch.zeros(p, d, dtype=torch.float64)
    f0 = float(call_scalar(f, zeros, x).detach())
    tensors: dict[tuple[int, ...], np.ndarray] = {}
    for k in range(1, order + 1):
        m_max = min(k, d)

        def F(theta: torch.Tensor, m_max: int = m_max) -> torch.Tensor:
            W = torch.cat([theta.reshape(m_max, p).T, zeros[:, m_max:]], dim=1)
            return call_scalar(f, W, x)

        D = _derivative(F, m_max * p, k).reshape((m_max, p) * k).numpy()
        if not np.all(np.isfinite(D)):
            raise NotSmoothError(
                f"the order-{k} derivative of f at W = 0 is not finite "
                "(e.g. 0/0 in a "
                "normalisation without epsilon); Theorem 13 needs a module "
                "that is smooth at the origin"
            )
        for lam in partitions(k):
            if len(lam) > d:
                continue
            neuron_of_axis = [r for r, c in enumerate(lam) for _ in range(c)]
            index: list[Any] = []
            for r in neuron_of_axis:
                index += [r, slice(None)]
            tensors[lam] = partition_weight(lam) * np.ascontiguousarray(
                D[tuple(index)]
            )
    return SymmetricExpansion(f0=f0, tensors=tensors, p=p, d=d, order=order)
