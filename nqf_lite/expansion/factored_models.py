"""Factored coefficients of the structures the paper states in closed form.

Each builder returns a :class:`~nqf_lite.expansion.factored.FactoredNQF` of a
data set, built from the inputs (never a ``p × p`` matrix per input, except
in the generic route for a registry model, whose ``p`` is small):

- :func:`mlp_factored`: ``nn.Sequential(Linear, act, Linear)`` (Proposition
  1): one term, ``L = x~`` (the input, with a 1 for the bias),
  ``R = phi'(0) e_o`` shared over inputs;
- :func:`module_factored`: the modules of :mod:`nqf_lite.expansion.models`
  whose structure is known: a mixture of experts of
  :func:`~nqf_lite.expansion.models.moe_module` (Proposition 5, Eq. 14: ``L =
  x`` on the gate, ``R[n, o] = psi'(0) ∇_Θ E_o(x_n; 0)`` on the expert), the
  attention heads of :func:`~nqf_lite.expansion.models.mha` (Proposition 2: the
  head acts on the token average ``x̄``, ``d_v`` terms ``L = x̄`` on a row of
  ``W_V``, ``R = e_o`` on ``v`` or ``W_O``),
  :func:`~nqf_lite.expansion.models.qk_head` (Proposition 3: ``d_k`` terms
  ``L = x`` on ``W_Q``, ``R = Σ_X c / √d_k`` on ``W_K``) and
  :func:`~nqf_lite.expansion.models.logits_head` (Proposition 4: one such
  term);
- :func:`factored_twin`: any registry model (``MODELS[name]``), with the known
  form of ``mlp``, ``cnn`` (the MLP's with the patch sum), ``moe``, ``mha``,
  ``qk`` and ``logits``, and for the twelve others (sensing, bilinear,
  diagonal, self-supervised and linear-attention models, whose ``A(x)`` is a
  small matrix with no shared factor) the eigenvectors of each ``A(x)``:
  ``A = sum_k lam_k v_k v_kᵀ = sum_k sym(lam_k v_k ⊗ v_k)``, one term per
  eigenvalue above round-off.

``device`` runs the data-set-scale arithmetic (the inputs' Gram matrix of the
MLP, the token statistics of attention) on a torch device; the factors come
back as numpy arrays.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from nqf_lite._checks import as_array, vector
from nqf_lite.expansion.factored import FactoredNQF, Term
from nqf_lite.expansion.taylor import NotSmoothError

__all__ = [
    "FACTORED_MODELS",
    "as_device",
    "factored_twin",
    "mlp_factored",
    "module_factored",
]

#: the registry models built from their known factored form (the others are
#: factored through the eigenvectors of each ``A(x)``)
FACTORED_MODELS = ("mlp", "cnn", "moe", "mha", "qk", "logits")


def as_device(device: Any) -> torch.device | None:
    """``device`` checked: ``None``, or a torch device (or its name) that this
    machine has; a ``ValueError`` naming ``device`` otherwise."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            "device must be None, a str such as 'cpu' or 'cuda', or a "
            f"torch.device, got {type(device).__name__}"
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(
            f"device must name a torch device ('cpu', 'cuda', 'cuda:0', "
            f"'mps'), got {device!r}: {exc}"
        ) from None
    if dev.type == "meta":
        raise ValueError("device must hold values; 'meta' holds none")
    try:
        torch.zeros(1, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise ValueError(
            f"device={device!r} is not available on this machine ({exc}); "
            "use device='cpu' or leave device out"
        ) from None
    return dev


def slope_at_zero(act: Any, name: str) -> tuple[float, float]:
    """``phi(0)`` and ``phi'(0)`` of an elementwise torch function;
    ``NotSmoothError`` at a kink."""
    z = torch.zeros((), dtype=torch.float64, requires_grad=True)
    with torch.enable_grad():
        value = act(z)
        (slope,) = torch.autograd.grad(value, z)
    h = 1e-4
    with torch.no_grad():
        v0 = float(value.detach())
        right = (float(act(torch.tensor(h, dtype=torch.float64))) - v0) / h
        left = (v0 - float(act(torch.tensor(-h, dtype=torch.float64)))) / h
    if abs(right - left) > 1e-2 * (1.0 + abs(float(slope))):
        raise NotSmoothError(
            f"the {name} has a kink at 0 (one-sided slopes {left:.3g} and "
            f"{right:.3g}): Theorem 1 needs a module that is three times "
            "differentiable at W = 0"
        )
    return v0, float(slope)


def _gram(L: np.ndarray, dev: torch.device | None) -> np.ndarray:
    """``Lᵀ L`` in float64, on ``dev`` when given."""
    if dev is None:
        return (L.T @ L).astype(np.float64)
    t = torch.as_tensor(L, device=dev)
    return (t.T @ t).to(torch.float64).cpu().numpy()


def mlp_factored(
    X: np.ndarray,
    phi0: float,
    slope: float,
    p: int,
    V: int,
    bias: bool,
    out_bias: np.ndarray | None,
    dtype: Any,
    device: torch.device | None = None,
) -> FactoredNQF:
    """Proposition 1 for ``Sequential(Linear, act, Linear)`` on the inputs
    ``X`` (m, D) (trusted): one term, in the memory of the inputs."""
    m, D = X.shape
    Dp = D + int(bias)
    if device is None:
        L = np.asarray(X, dtype=dtype)
        if bias:
            L = np.concatenate([L, np.ones((m, 1), dtype=dtype)], axis=1)
    else:
        t = torch.as_tensor(np.asarray(X, dtype=dtype), device=device)
        if bias:
            t = torch.cat(
                [t, torch.ones((m, 1), dtype=t.dtype, device=device)], 1
            )
        L = t.cpu().numpy()
    g = np.zeros((V, p))
    g[np.arange(V), Dp + np.arange(V)] = phi0
    f0 = np.zeros(V) if out_bias is None else out_bias
    term = Term(L, np.arange(Dp), slope * np.eye(V), Dp + np.arange(V))
    scalar = V == 1
    out = FactoredNQF(
        [term],
        p,
        None if scalar else V,
        g=g,
        f0=f0[0] if scalar else f0,
        dtype=dtype,
    )
    # the one pass over the inputs that every forecast reads (p^2 numbers)
    out.__dict__["_grams"] = {(0, 0): _gram(out.terms[0].L, device)}
    return out


# ----------------------------------------------------------- known terms
def moe_terms(X: np.ndarray, G: np.ndarray, dpsi0: float, k: int) -> Term:
    """Eq. 14: ``A = (psi'(0)/2) sym2(x ⊗ G)``, ``L = x`` on the gate rows,
    ``R[n, o] = psi'(0) G[n, o]`` on the expert's rows (``G`` (m, V, q))."""
    q = G.shape[-1]
    return Term(X, np.arange(k), dpsi0 * G, k + np.arange(q))


def linear_expert_terms(
    X: np.ndarray, dpsi0: float, k: int, V: int, dtype: Any
) -> list[Term]:
    """Eq. 14 for the linear expert ``Θ x`` with ``V`` outputs: ``∇_Θ E_o =
    x`` in the rows ``Θ[o, :]`` (``o + V b``), one term per output sharing
    the arrays ``L = psi'(0) x`` and ``R = x`` (memory ``2 m k``, not ``m V^2
    k``)."""
    L = np.ascontiguousarray(dpsi0 * X, dtype=dtype)
    R = np.ascontiguousarray(X, dtype=dtype)[:, None, :]
    rows = k + V * np.arange(k)
    return [Term(L, np.arange(k), R, rows + o, output=o) for o in range(V)]


def mha_terms(
    xbar: np.ndarray, D: int, d_k: int, d_v: int, V: int | None
) -> list[Term]:
    """Eq. 8: ``d_v`` terms; ``W_V[a, b]`` (row ``a + d_v b``) meets ``v[a]``
    (or ``W_O[o, a]``, row ``o + V a``) with weight ``x̄_b / 2``."""
    start = 2 * d_k * D
    head = start + d_v * D
    out = []
    for a in range(d_v):
        rows_L = start + a + d_v * np.arange(D)
        if V is None:
            out.append(Term(xbar, rows_L, np.ones((1, 1)), [head + a]))
        else:
            rows_R = head + np.arange(V) + V * a
            out.append(Term(xbar, rows_L, np.eye(V), rows_R))
    return out


def qk_terms(x: np.ndarray, u: np.ndarray, d_k: int, logits: bool) -> list:
    """Eqs. 10 and 12: ``L = x`` on ``W_Q`` (or ``q``), ``R = u / √d_k`` on
    ``W_K`` (or ``k``), ``u = Σ_X c``; one term per key dimension."""
    m, D = x.shape
    R = (u / math.sqrt(d_k))[:, None, :]
    if logits:
        return [Term(x, np.arange(D), R, D + np.arange(D))]
    n1 = d_k * D
    return [
        Term(x, j + d_k * np.arange(D), R, n1 + j + d_k * np.arange(D))
        for j in range(d_k)
    ]


def token_stats(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    c: np.ndarray | None,
    dev: torch.device | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Queries ``x`` (m, D), token means ``x̄`` (m, D) and ``u = Σ_X c`` (m,
    D) (``None`` without ``c``), on ``dev`` when given."""
    dev = dev or torch.device("cpu")
    xs, means, us = [], [], []
    for x, X in pairs:
        Xt = torch.as_tensor(X, dtype=torch.float64, device=dev)
        mean = Xt.mean(dim=1)
        xs.append(np.asarray(x, dtype=np.float64))
        means.append(mean)
        if c is not None:
            ct = torch.as_tensor(c, dtype=torch.float64, device=dev)
            us.append(Xt @ (Xt.T @ ct) / Xt.shape[1] - mean * (mean @ ct))
    u = None if c is None else torch.stack(us).cpu().numpy()
    return np.stack(xs), torch.stack(means).cpu().numpy(), u


# -------------------------------------------- modules of expansion.models
def recognise(module: Any) -> tuple[str, dict[str, Any]] | None:
    """``(kind, parameters)`` of a module built by ``moe_module``, ``mha``,
    ``qk_head`` or ``logits_head`` (the record its builder leaves in
    :attr:`~nqf_lite.expansion.models.blocks.SymmetricModule.family`);
    ``None`` for anything else."""
    from nqf_lite.expansion.models.blocks import SymmetricModule

    if not isinstance(module, SymmetricModule):
        return None
    return module.family


def _expert_gradients(
    expert: Any, layout: Any, X: np.ndarray, k: int
) -> np.ndarray:
    """``G[n, o] = ∇_Θ E_o(x_n; 0)`` (m, V, q) in the layout's rows after the
    gate: the linear expert in closed form, any other by autograd."""
    m = X.shape[0]
    nV = 1 if expert.V is None else expert.V
    if expert.name == "linear expert":
        if expert.V is None:
            return X[:, None, :].copy()
        G = np.zeros((m, nV, nV * k))
        for o in range(nV):
            G[:, o, o + nV * np.arange(k)] = X
        return G
    p = layout.p
    G = np.empty((m, nV, p - k))
    for n in range(m):
        x = torch.as_tensor(X[n], dtype=torch.float64)

        def E(w: torch.Tensor) -> torch.Tensor:
            b = layout.unpack(w.reshape(p, 1))
            b.pop("r")
            return expert.fn(b, x).reshape(nV)

        J = torch.func.jacrev(E)(torch.zeros(p, dtype=torch.float64))
        G[n] = J[:, k:].numpy()
    return G


def module_factored(
    module: Any,
    rows: Sequence[Any],
    d: int,
    dtype: Any,
    device: torch.device | None = None,
) -> FactoredNQF | None:
    """The factored NQF of a recognised module of
    :mod:`nqf_lite.expansion.models` on the inputs ``rows`` (width ``d`` for
    ``f0``); ``None`` when the module is not recognised."""
    found = recognise(module)
    if found is None:
        return None
    kind, env = found
    p, V = module.p, module.V
    nV = 1 if V is None else V
    if kind == "moe":
        k = env["k"]
        X = np.stack([vector(f"xs[{i}]", r, k) for i, r in enumerate(rows)])
        _, dpsi0 = slope_at_zero(env["psi"], "gate")
        expert = env["expert"]
        if expert.name == "linear expert" and V is not None:
            terms = linear_expert_terms(X, dpsi0, k, V, dtype)
        else:
            G = _expert_gradients(expert, env["layout"], X, k)
            terms = [moe_terms(X, G, dpsi0, k)]
        return FactoredNQF(terms, p, V, dtype=dtype)
    D, d_k = env["D"], env["d_k"]
    pairs = [_pair(r, D, i) for i, r in enumerate(rows)]
    if kind == "mha":
        _, xbar, _ = token_stats(pairs, None, device)
        d_v = dict(env["layout"].blocks)["W_V"][0]
        terms = mha_terms(xbar, D, d_k, d_v, V)
        return FactoredNQF(terms, p, V, f0=np.zeros(nV), dtype=dtype)
    c = env["c_t"].detach().cpu().numpy()
    x, xbar, u = token_stats(pairs, c, device)
    logits = kind == "logits"
    f0 = (xbar @ c) * (1 if logits else d)
    return FactoredNQF(
        qk_terms(x, u, d_k, logits), p, None, f0=f0, dtype=dtype
    )


def _pair(x: Any, D: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Input ``i`` as the pair ``(query (D,), context (D, N))``."""
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise TypeError(
            f"xs[{i}]: an attention input must be a pair (x, X), got "
            f"{type(x).__name__}"
        )
    q = vector(f"xs[{i}]", x[0], D)
    X = as_array(f"xs[{i}]: the context X", x[1], ndim=2)
    if X.shape[0] != D or X.shape[1] < 1:
        raise ValueError(
            f"xs[{i}]: the context X must have shape ({D}, N), N >= 1, got "
            f"{X.shape}"
        )
    return q, X


# ------------------------------------------------------ registry models
def _eigen_terms(A: np.ndarray, nV: int, dtype: Any) -> list[Term]:
    """``A[n, o] = sum_k lam v vᵀ``: one term per (output, eigenvalue above
    ``1e-13`` of the largest), ``L = lam v``, ``R[n, o] = v``."""
    m, p = A.shape[0], A.shape[-1]
    A = A.reshape(m, nV, p, p)
    lam, vec = np.linalg.eigh(A)  # (m, nV, p), (m, nV, p, p)
    big = np.abs(lam) > 1e-13 * max(float(np.abs(lam).max()), 1e-300)
    rank = int(big.sum(axis=-1).max()) if big.any() else 1
    # the largest |lam| first, so that the first `rank` keep every kept one
    order = np.argsort(-np.abs(lam), axis=-1)[..., :rank]
    lam = np.take_along_axis(lam * big, order, axis=-1)
    vec = np.take_along_axis(vec, order[:, :, None, :], axis=-1)
    rows = np.arange(p)
    terms = []
    for o in range(nV):
        for j in range(rank):
            R = np.zeros((m, nV, p), dtype=dtype)
            R[:, o] = vec[:, o, :, j]
            L = lam[:, o, j, None] * vec[:, o, :, j]
            terms.append(Term(L, rows, R, rows))
    return terms


def factored_twin(
    model: Any, xs: Sequence[Any], dtype: Any = np.float64, device=None
) -> FactoredNQF:
    """The :class:`~nqf_lite.expansion.factored.FactoredNQF` of a registry
    model on the inputs ``xs``, equal to ``model.twin(xs)``.

    The models of :data:`FACTORED_MODELS` are built from their known form
    (Props. 1-6); every other registry model from the eigenvectors of each
    ``A(x)`` (their ``p`` is small).
    """
    from nqf_lite.expansion.models import base, cnn

    if not isinstance(model, base.Model):
        raise TypeError(
            "model must be a registry model (nqf_lite.expansion.models."
            f"MODELS[name]), got {type(model).__name__}"
        )
    if isinstance(xs, (str, bytes, dict)) or not hasattr(xs, "__len__"):
        raise TypeError(
            f"xs must be a list of inputs, got {type(xs).__name__}"
        )
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input")
    dev = as_device(device)
    inputs = []
    for i, x in enumerate(xs):
        try:
            inputs.append(model.check_input(x))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"xs[{i}]: {exc}") from exc
    name, p = model.name, model.p
    if name in ("mlp", "cnn", "moe"):
        if name == "cnn":
            X = np.stack(
                [cnn.patches(x, model.kernel).sum(axis=0) for x in inputs]
            )
            slope = 1.0
        else:
            X, slope = np.stack(inputs), getattr(model, "dphi0", 1.0)
        k = X.shape[1]
        if name == "moe":
            term = moe_terms(X, X[:, None, :], 1.0, k)
        else:
            term = Term(X, np.arange(k), slope * np.ones((1, 1)), [k])
        return FactoredNQF([term], p, None, dtype=dtype)
    if name in ("mha", "qk", "logits"):
        c = getattr(model, "c", None)
        x, xbar, u = token_stats(inputs, c, dev)
        if name == "mha":
            terms = mha_terms(xbar, model.D, model.d_k, model.d_v, None)
            return FactoredNQF(terms, p, None, dtype=dtype)
        f0 = (xbar @ c) * (1 if name == "logits" else model.width)
        terms = qk_terms(x, u, model.d_k, name == "logits")
        return FactoredNQF(terms, p, None, f0=f0, dtype=dtype)
    parts = [model.structure(x) for x in xs]
    if any(s.g is not None or s.B is not None for s in parts):
        raise ValueError(
            f"model {name!r} has a linear or cross-unit term (g or B); the "
            "factored form holds A and f0 only: use model.twin(xs)"
        )
    A = np.stack([s.A for s in parts])
    nV = 1 if A.ndim == 3 else A.shape[1]
    f0 = np.array([s.f0 for s in parts], dtype=np.float64)
    V = None if A.ndim == 3 else nV
    terms = _eigen_terms(A, nV, dtype)
    return FactoredNQF(terms, p, V, f0=f0 if V is None else None, dtype=dtype)
