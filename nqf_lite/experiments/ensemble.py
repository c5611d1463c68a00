"""Networks trained next to their NQF twins, a whole ensemble in one call.

The claims about real networks (paper Sec. 7, Figs. 2, 6 and 7) are judged
on ensembles of seeds: many networks, each trained side by side with its NQF
twin from the same weights.  :func:`train_ensemble` trains all members of an
ensemble, and their twins, at once: the members' weights are stacked on a new
leading axis and the network's and the twin's forwards (``Network._func`` and
``Network._nqf``) are mapped over it with ``torch.func.vmap``.  Each member's
loss depends only on its own weights, so one optimizer step on the stack is
one step for every member (the optimizers of
:func:`nqf_lite.experiments.train.optimizer`
update every weight entry on its own).
:func:`nqf_lite.experiments.pair.train_pair` is
the same training for one member.

- :func:`stack_weights`, :func:`stack_inputs`: the members' weights and data
  on axis 0;
- :func:`train_ensemble`: the training loop, recorded in an
  :class:`EnsembleHistory`;
- :func:`log_ratio`: the log of the ratio of two ensembles' geometric means,
  with its standard error (how the book compares skewed, positive quantities
  between ensembles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.func import functional_call, vmap

from nqf_lite._checks import integer, positive
from nqf_lite.expansion.models import blocks
from nqf_lite.expansion.models.blocks import Network
from nqf_lite.experiments.train import optimizer

__all__ = [
    "EnsembleHistory",
    "log_ratio",
    "stack_inputs",
    "stack_weights",
    "train_ensemble",
]

#: the two models of every member: the network and its NQF twin
ROLES = ("net", "twin")


def stack_weights(nets: Sequence[blocks.Network]) -> dict[str, Tensor]:
    """The members' trainable weights: one leaf tensor per parameter name.

    Parameters
    ----------
    nets : sequence of blocks.Network
        Networks of one architecture and one configuration (they share their
        fixed buffers, e.g. the readout of query-key heads).

    Returns
    -------
    dict of str to Tensor
        ``{name: (E, *shape)}``, members on axis 0: detached copies that
        require grad.

    Raises
    ------
    TypeError
        If ``nets`` is empty or its members are not networks of one class.
    ValueError
        If the members' fixed buffers or parameter shapes differ.
    """
    nets = _networks(nets)
    first = nets[0]
    shapes = {n: p.shape for n, p in first.named_parameters()}
    for net in nets[1:]:
        for name, buf in first.named_buffers():
            if not torch.equal(buf, net.get_buffer(name)):
                raise ValueError(
                    f"all members must share the fixed buffer {name!r}"
                )
        if {n: p.shape for n, p in net.named_parameters()} != shapes:
            raise ValueError("all members must have the same parameter shapes")
    return {
        name: torch.stack(
            [net.get_parameter(name).detach() for net in nets]
        ).requires_grad_()
        for name in shapes
    }


def stack_inputs(
    inputs: Sequence[Tensor | tuple[Tensor, ...]],
) -> tuple[Tensor, ...]:
    """Stack per-member inputs (tensors, or tuples of tensors) on a new axis 0.

    Returns
    -------
    tuple of Tensor
        One stacked tensor per part of an input (a 1-tuple for inputs that
        are single tensors).
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(
            "inputs must be a non-empty list of per-member inputs, got "
            f"{type(inputs).__name__}"
        )
    if isinstance(inputs[0], tuple):
        if not all(
            isinstance(x, tuple) and len(x) == len(inputs[0]) for x in inputs
        ):
            raise TypeError(
                "inputs must all be tuples of the same length, or all tensors"
            )
        return tuple(torch.stack(parts) for parts in zip(*inputs))
    if not all(isinstance(x, Tensor) for x in inputs):
        raise TypeError("inputs must all be tensors, or all tuples of tensors")
    return (torch.stack(list(inputs)),)


@dataclass(frozen=True)
class EnsembleHistory:
    """What :func:`train_ensemble` records: member on axis 0, step on axis 1.

    Attributes
    ----------
    step : ndarray (T,)
        The recorded steps (0 = the initial weights; the last step is always
        recorded).
    loss : dict
        ``{"net": (E, T), "twin": (E, T)}``: the loss
        ``(1/n) sum_n |f_n - y_n|^2`` on the step's batch before the step, or
        on the fixed evaluation set when one was given.
    s : dict or None
        ``{"net": (E, T, k), "twin": (E, T, k)}``: the top k singular values
        of the effective maps divided by the teacher's ``s`` (k = len(s));
        None when no ``s`` was given.
    acc : dict or None
        ``{"net": (E, T), "twin": (E, T)}``: the sign accuracy on the test
        set, or None.
    probe : ndarray or None
        ``(E, T, ...)``: ``probe(weights of the networks)`` at the recorded
        steps, or None.
    """

    step: np.ndarray
    loss: dict[str, np.ndarray]
    s: dict[str, np.ndarray] | None = None
    acc: dict[str, np.ndarray] | None = None
    probe: np.ndarray | None = None

    @property
    def members(self) -> int:
        """The ensemble size E."""
        return self.loss["net"].shape[0]

    def deviation(self) -> np.ndarray:
        """``max_{t,k} |s_k(network) - s_k(twin)| / s_k`` for each member (E,).

        Raises
        ------
        ValueError
            If no singular values were recorded (``s`` was not given).
        """
        if self.s is None:
            raise ValueError(
                "no singular values were recorded: train with s=..."
            )
        return np.abs(self.s["net"] - self.s["twin"]).max(axis=(1, 2))

    def select(
        self, members: slice | Sequence[int] | np.ndarray
    ) -> EnsembleHistory:
        """The history of some members (a slice or index array on axis 0)."""

        def pick(
            d: dict[str, np.ndarray] | None,
        ) -> dict[str, np.ndarray] | None:
            return None if d is None else {k: v[members] for k, v in d.items()}

        probe = None if self.probe is None else self.probe[members]
        return EnsembleHistory(
            self.step, pick(self.loss), pick(self.s), pick(self.acc), probe
        )

    @classmethod
    def concat(cls, parts: Sequence[EnsembleHistory]) -> EnsembleHistory:
        """One history from those of disjoint groups of members, in order.

        Raises
        ------
        ValueError
            If the parts were recorded at different steps, or recorded
            different quantities.
        """
        if not parts or not all(isinstance(h, EnsembleHistory) for h in parts):
            raise TypeError(
                "parts must be a non-empty sequence of EnsembleHistory"
            )
        first = parts[0]
        for h in parts[1:]:
            if not np.array_equal(h.step, first.step):
                raise ValueError("the parts were recorded at different steps")
            if (
                (h.s is None) != (first.s is None)
                or (h.acc is None) != (first.acc is None)
                or (h.probe is None) != (first.probe is None)
            ):
                raise ValueError("the parts recorded different quantities")

        def cat(key: str) -> dict[str, np.ndarray] | None:
            if getattr(first, key) is None:
                return None
            return {
                r: np.concatenate([getattr(h, key)[r] for h in parts])
                for r in ROLES
            }

        probe = (
            None
            if first.probe is None
            else np.concatenate([h.probe for h in parts])
        )
        return cls(first.step, cat("loss"), cat("s"), cat("acc"), probe)


class _EffectiveMap(torch.nn.Module):
    """``net.effective_map()`` as a forward, to vmap it over weights."""

    def __init__(self, net: blocks.Network) -> None:
        super().__init__()
        self.net = net

    def forward(self) -> Tensor:
        return self.net.effective_map()


def _networks(nets: object) -> list[blocks.Network]:
    if not isinstance(nets, (list, tuple)) or not nets:
        raise TypeError(
            "nets must be a non-empty list of networks, got "
            f"{type(nets).__name__}"
        )
    first = nets[0]
    if not isinstance(first, Network) or first.is_twin:
        raise TypeError(
            "nets must hold networks of nqf_lite.expansion.models (not "
            "twins), "
            f"got {type(first).__name__}"
        )
    if any(type(net) is not type(first) or net.is_twin for net in nets):
        raise TypeError(
            "all members must share one architecture (and none may be a twin)"
        )
    return list(nets)


def _teacher_values(s: object, net: blocks.Network) -> Tensor:
    arr = np.asarray(s, dtype=np.float64)
    rank = min(net.effective_map().shape)
    if (
        arr.ndim != 1
        or not 0 < arr.size <= rank
        or np.any(~np.isfinite(arr))
        or np.any(arr <= 0)
    ):
        raise ValueError(
            f"s must be 1 to {rank} positive teacher singular values, "
            f"got {s!r}"
        )
    return torch.as_tensor(arr)


def _recorded_steps(steps: int, record_every: int) -> np.ndarray:
    return np.unique(np.append(np.arange(0, steps + 1, record_every), steps))


def train_ensemble(
    nets: Sequence[blocks.Network],
    draw: Callable[[int], tuple[tuple[Tensor, ...], Tensor]],
    optimizer_name: str = "gd",
    lr: float = 0.1,
    steps: int = 100,
    record_every: int = 2,
    evaluate: tuple[tuple[Tensor, ...], Tensor] | None = None,
    s: Sequence[float] | None = None,
    test: tuple[tuple[Tensor, ...], Tensor] | None = None,
    probe: Callable[[dict[str, Tensor]], Tensor] | None = None,
) -> EnsembleHistory:
    """Train E networks and, side by side, their NQF twins, in one call.

    Every member and its twin start from the member's weights and are trained
    with the same optimizer on the loss ``L = (1/n) sum_n |f(x_n) - y_n|^2``
    of the step's batch (paper Eq. 26, summed over outputs), exactly as
    :func:`nqf_lite.experiments.pair.train_pair` trains one pair.

    Parameters
    ----------
    nets : sequence of blocks.Network
        The E members (one architecture; e.g. ``teacher_task(...)[0]`` for
        E seeds).
    draw : callable ``draw(t) -> (inputs, targets)``
        The batch of step ``t``, stacked over members: ``inputs`` a tuple of
        tensors with leading axes (E, n, ...) (see :func:`stack_inputs`),
        ``targets`` of shape (E, n, V). Return the same tensors every step for
        full-batch training.
    optimizer_name : {"gd", "momentum", "adam"}
        As in :func:`nqf_lite.experiments.train.optimizer`.
    lr : float > 0
    steps : int >= 0
    record_every : int >= 1
        Record every this many steps, and the last step.
    evaluate : (inputs, targets), optional
        A fixed set (stacked like ``draw``'s) on which the recorded losses
        are measured.
    s : sequence of float, optional
        Teacher singular values: record the top ``len(s)`` singular values of
        the effective maps divided by them.
    test : (inputs, targets), optional
        A test set (stacked like ``draw``'s): record the sign accuracy of
        every member.
    probe : callable, optional
        ``probe(weights of the networks) -> (E, ...)``, recorded at every
        recorded step.

    Returns
    -------
    EnsembleHistory

    Raises
    ------
    TypeError, ValueError
        For bad arguments (named in the message).
    FloatingPointError
        When a loss stops being finite (the message names the model, the
        step and ``lr``).

    Notes
    -----
    The records go into arrays allocated once, never into growing lists of
    small tensors: small allocations that live through training pin the heap,
    and the memory of freed activations could not be returned to the system
    (several hundred MB over a thousand steps of online training).
    """
    nets = _networks(nets)
    if not callable(draw):
        raise TypeError(
            f"draw must be callable as draw(step), got {type(draw).__name__}"
        )
    optimizer(
        optimizer_name, [torch.zeros(1, requires_grad=True)], 1.0
    )  # validates the name
    lr = positive("lr", lr)
    steps = integer("steps", steps, minimum=0)
    record_every = integer("record_every", record_every)
    for name, pair in (("evaluate", evaluate), ("test", test)):
        if pair is not None and not (
            isinstance(pair, (tuple, list)) and len(pair) == 2
        ):
            raise TypeError(f"{name} must be a pair (inputs, targets)")
    if probe is not None and not callable(probe):
        raise TypeError(f"probe must be callable, got {type(probe).__name__}")
    net = nets[0]
    s_scale = None if s is None else _teacher_values(s, net)
    forward = {"net": vmap(net._func), "twin": vmap(net._nqf)}
    W = {role: stack_weights(nets) for role in ROLES}
    # one optimizer over both weight sets: it updates each parameter on its
    # own, so this is one optimizer each, with half the Python overhead
    opt = optimizer(
        optimizer_name, [w for role in ROLES for w in W[role].values()], lr
    )
    wrap = _EffectiveMap(net)
    emap = vmap(
        lambda w: functional_call(
            wrap, {"net." + n: t for n, t in w.items()}, ()
        )
    )

    at = _recorded_steps(steps, record_every)
    E, T = len(nets), len(at)
    loss_rec = {role: np.empty((E, T)) for role in ROLES}
    s_rec = (
        None
        if s_scale is None
        else {role: np.empty((E, T, len(s_scale))) for role in ROLES}
    )
    acc_rec = (
        None if test is None else {role: np.empty((E, T)) for role in ROLES}
    )
    probe_rec = None

    def loss(role: str, inputs: tuple[Tensor, ...], Y: Tensor) -> Tensor:
        return ((forward[role](W[role], inputs) - Y) ** 2).sum(-1).mean(-1)

    i = 0
    for t in range(steps + 1):
        inputs, Y = draw(t)
        record = i < T and t == at[i]
        if record and probe is not None:
            with torch.no_grad():
                p = probe(W["net"]).detach().numpy()
            if probe_rec is None:
                probe_rec = np.empty((E, T, *p.shape[1:]))
            probe_rec[:, i] = p
        total = 0.0
        for role in ROLES:
            L = loss(role, inputs, Y)
            if not torch.isfinite(L).all():
                raise FloatingPointError(
                    f"{role} diverged at step {t}; lower lr = {lr}"
                )
            if record:
                with torch.no_grad():
                    measured = L if evaluate is None else loss(role, *evaluate)
                    loss_rec[role][:, i] = measured.detach().numpy()
                    if s_rec is not None:
                        sv = torch.linalg.svdvals(emap(W[role]))[
                            :, : len(s_scale)
                        ]
                        s_rec[role][:, i] = (sv / s_scale).numpy()
                    if acc_rec is not None:
                        hit = torch.sign(
                            forward[role](W[role], test[0])
                        ) == torch.sign(test[1])
                        acc_rec[role][:, i] = (
                            hit.double().mean((-2, -1)).numpy()
                        )
            total = (
                total + L.sum()
            )  # the members do not interact: each gets its own gradient
        if record:
            i += 1
        if t < steps:
            opt.zero_grad(set_to_none=True)
            total.backward()
            opt.step()
    return EnsembleHistory(at, loss_rec, s_rec, acc_rec, probe_rec)


def log_ratio(a: object, b: object) -> tuple[float, float]:
    """Log of the ratio of two ensembles' geometric means, and its error.

    For positive samples ``a`` and ``b`` (skewed quantities such as
    deviations, compared on a log scale), returns ``mean(log a) - mean(log b)``
    and ``sqrt(var(log a)/n_a + var(log b)/n_b)`` (sample variances; two
    independent ensembles).

    Raises
    ------
    ValueError
        If a sample has fewer than two values, or a value that is not
        positive and finite.
    """
    logs = []
    for name, x in (("a", a), ("b", b)):
        arr = np.asarray(x, dtype=np.float64).ravel()
        if arr.size < 2 or np.any(~np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(
                f"{name} must hold at least two positive, finite values, "
                f"got {x!r}"
            )
        logs.append(np.log(arr))
    la, lb = logs
    se = np.sqrt(la.var(ddof=1) / la.size + lb.var(ddof=1) / lb.size)
    return float(la.mean() - lb.mean()), float(se)
