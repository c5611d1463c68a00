"""The expansion of a permutation-symmetric module: its structure matrix by autograd (Theorem 1).

Theorem 1 and its ZGZ-free form (paper Eq. 20, App. B.1): a module
``f(W; x)`` that is symmetric under permuting the ``d`` columns (neurons) of
``W`` and three times differentiable satisfies, near ``W = 0``,

.. math::

    f(W) = f_0 + g^\\top \\mu + \\mu^\\top B \\mu + \\mathrm{Tr}[M A] + O(\\|W\\|^3),
    \\qquad M = W W^\\top,\\; \\mu = W \\mathbf 1 .

If ``H_ii = 2 A_s`` are the equal diagonal Hessian blocks and ``H_ij = 2 B``
the equal off-diagonal ones, then ``A = A_s - B`` (so that
``sum_i w_i^T A_s w_i + sum_{i != j} w_i^T B w_j = Tr[M A] + mu^T B mu``).
A width-2 evaluation gives all three blocks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ._checks import as_array, integer, width
from .form import NQF, moments

__all__ = [
    "Expansion",
    "NotSmoothError",
    "NotSymmetricError",
    "expand",
    "expand_dataset",
    "truncation_error",
]

Module = Callable[[torch.Tensor, Any], torch.Tensor]

#: relative tolerance of the permutation-symmetry check
SYMMETRY_RTOL = 1e-9

#: default memory budget of :func:`expand` (its Hessian has ``V (d p)^2`` float64 entries)
MAX_BYTES = 2 * 2**30

#: step sizes of the smoothness check (one-sided difference quotients along random directions)
SMOOTH_STEPS = (1e-2, 1e-3, 1e-4)


class NotSymmetricError(ValueError):
    """The module is not invariant under permuting its neurons (Definition 1)."""


class NotSmoothError(ValueError):
    """The module is not twice differentiable at ``W = 0`` (e.g. ReLU); Theorem 1 needs C^3."""


@dataclass(frozen=True)
class Expansion:
    """Taylor coefficients of a symmetric module at ``W = 0`` (Eq. 20).

    Attributes
    ----------
    f0 : ndarray, shape () or (V,)
        ``f(0; x)``.
    g : ndarray, shape (p,) or (V, p)
        Gradient of one neuron at the origin; ``g = 0`` under ZGZ.
    A : ndarray, shape (p, p) or (V, p, p)
        The structure matrix ``A = A_s - B`` of Eq. 20 (symmetric).
    B : ndarray, shape (p, p) or (V, p, p)
        Half the cross-neuron Hessian block; ``B = 0`` under ZGZ.
    d : int
        The width at which the expansion was taken.  ``f0`` depends on it
        (``f(0) = d phi(0)`` for an additive module), and for a module that
        is not a plain sum over neurons so may ``g, A, B``.
    """

    f0: np.ndarray
    g: np.ndarray
    A: np.ndarray
    B: np.ndarray
    d: int = 2

    @property
    def p(self) -> int:
        """Number of parameters of one neuron."""
        return int(self.A.shape[-1])

    @property
    def V(self) -> int | None:
        """Output dimension, or ``None`` for a scalar module."""
        return None if self.A.ndim == 2 else int(self.A.shape[0])

    @property
    def zgz(self) -> bool:
        """True when zero gradient at zero holds: ``g = 0`` and ``B = 0`` (Property 1)."""
        tol = 1e-12 * (1.0 + float(np.max(np.abs(self.A), initial=0.0)))
        return bool(np.max(np.abs(self.g), initial=0.0) <= tol and np.max(np.abs(self.B), initial=0.0) <= tol)

    def predict(self, W: np.ndarray) -> np.ndarray:
        """The quadratic form ``f0 + g.mu + mu^T B mu + Tr[M A]`` at weights ``W`` (p, d).

        ``W`` must have the width ``d`` the expansion was taken at, because
        ``f0`` (and for non-additive modules the coefficients) depend on it.
        """
        W = as_array("W", W, ndim=2)
        if W.shape != (self.p, self.d):
            raise ValueError(
                f"W must have shape (p, d) = ({self.p}, {self.d}), the width this expansion was "
                f"taken at, got {W.shape}; f(0) and, for non-additive modules, g, A, B can depend "
                f"on the width, so call expand(f, x, p, d={W.shape[1] if W.shape[0] == self.p else 'd'})"
            )
        M, mu = moments(W)
        return (
            self.f0
            + self.g @ mu
            + np.einsum("...ij,i,j->...", self.B, mu, mu)
            + np.einsum("...ij,ij->...", self.A, M)
        )

    def __str__(self) -> str:
        kind = "scalar output" if self.V is None else f"V = {self.V} outputs"
        if self.zgz:
            zgz = "ZGZ holds (g = 0, B = 0): f = f0 + Tr[M A] + O(|W|^3)"
        else:
            zgz = (
                f"ZGZ violated: max|g| = {np.max(np.abs(self.g)):.3g}, "
                f"max|B| = {np.max(np.abs(self.B)):.3g} (general form, Eq. 20)"
            )
        return f"Expansion(p = {self.p}, {kind}; {zgz})"


def _call(f: Module, W: torch.Tensor, x: Any) -> torch.Tensor:
    try:
        out = f(W, x)
    except IndexError as exc:
        p, d = W.shape
        raise ValueError(
            f"f(W, x) raised IndexError ({exc}) for W of shape (p, d) = ({p}, {d}): check p = {p}, "
            "the number of parameters of one neuron (the rows of W) that f indexes"
        ) from exc
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"f(W, x) must return a torch tensor, got {type(out).__name__}")
    if out.ndim > 1:
        raise ValueError(f"f(W, x) must return a scalar or a (V,) vector, got shape {tuple(out.shape)}")
    return out.to(torch.float64)


def _detach_input(x: Any) -> Any:
    """``x`` with every torch tensor (also inside tuples and lists) detached from autograd."""
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detach_input(v) for v in x)
    return x


def _check_input_finite(x: Any, name: str = "x") -> None:
    """``ValueError`` if a tensor, array or number in ``x`` (or in its tuples and lists) is NaN or inf."""
    if isinstance(x, torch.Tensor):
        bad = (x.is_floating_point() or x.is_complex()) and not bool(torch.isfinite(x).all())
    elif isinstance(x, (np.ndarray, float, np.floating)):
        arr = np.asarray(x)
        bad = arr.dtype.kind in "fc" and not bool(np.isfinite(arr).all())
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            _check_input_finite(v, f"{name}[{i}]")
        return
    else:
        return
    if bad:
        raise ValueError(f"{name} contains NaN or inf: the expansion of f at such an input is undefined")


def _check_budget(n: int, V: int, max_bytes: int) -> None:
    """Refuse up front a Hessian of ``V n^2`` float64 entries above ``max_bytes``."""
    need = 8 * V * n * n
    if need > max_bytes:
        raise ValueError(
            f"the Hessian of f in the d * p = {n:,} weights ({V} output(s)) has {V * n * n:,} float64 entries "
            f"and would need {need / 2**30:,.2f} GiB, more than max_bytes = {max_bytes / 2**30:,.2f} GiB; "
            "lower p or d, or raise max_bytes"
        )


def _derivatives(F: Callable[[torch.Tensor], torch.Tensor], n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Value, gradient (.., n) and Hessian (.., n, n) of ``F`` at zero by autograd."""
    theta0 = torch.zeros(n, dtype=torch.float64)
    value = F(theta0).detach()
    if not bool(torch.isfinite(value).all()):
        raise NotSmoothError(
            f"f(W = 0; x) = {value.numpy()} is not finite: the module is undefined at the origin "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0), a non-finite derivative at W = 0; "
            "Theorem 1 needs a module that is smooth at the origin"
        )
    try:
        with warnings.catch_warnings():  # torch.func's internal torch.jit.script deprecation notice
            warnings.simplefilter("ignore", DeprecationWarning)
            grad = torch.func.jacrev(F)(theta0)
            hess = torch.func.jacfwd(torch.func.jacrev(F))(theta0)
    except Exception:  # modules torch.func cannot trace: plain autograd
        def jac(t: torch.Tensor) -> torch.Tensor:
            return torch.autograd.functional.jacobian(F, t, create_graph=True)

        grad = jac(theta0)
        hess = torch.autograd.functional.jacobian(jac, theta0)
    grad, hess = grad.detach(), hess.detach()
    if not (bool(torch.isfinite(grad).all()) and bool(torch.isfinite(hess).all())):
        raise NotSmoothError(
            "non-finite derivative at W = 0: the gradient or Hessian of f at the origin is NaN or inf "
            "(e.g. 0/0 in a LayerNorm/RMSNorm with eps = 0, or sqrt at 0); Theorem 1 needs a C^3 module"
        )
    return value, grad, hess


def _check_symmetry(f: Module, x: Any, p: int, rng: np.random.Generator) -> None:
    """Compare f at a random width-3 point with f at permuted columns."""
    W = torch.as_tensor(0.3 * rng.standard_normal((p, 3)), dtype=torch.float64)
    base = _call(f, W, x).detach().numpy()
    for perm in ([1, 0, 2], [1, 2, 0]):
        other = _call(f, W[:, perm], x).detach().numpy()
        gap = float(np.max(np.abs(other - base)))
        if gap > SYMMETRY_RTOL * (1.0 + float(np.max(np.abs(base)))):
            raise NotSymmetricError(
                f"f is not symmetric under permuting neurons: f(W P) - f(W) = {gap:.3g} for the "
                f"column permutation {perm} at a random width-3 W; Theorem 1 needs S_d symmetry "
                "(Definition 1). Check that W's columns are the neurons."
            )


def _check_smooth(f: Module, x: Any, e: Expansion, rng: np.random.Generator) -> None:
    """Compare autograd's coefficients with one-sided difference quotients at three scales.

    Along a random direction ``W`` and for ``s = +1, -1``, a C^3 module has

    .. math::

        \\frac{f(shW) - f_0}{sh} - \\ell = O(h), \\qquad
        \\frac{f(shW) - f_0 - sh\\,\\ell}{h^2} - q = O(h),

    with ``l = g.mu`` and ``q = mu^T B mu + Tr[M A]`` from autograd.  At a kink
    autograd returns one branch's derivative (``relu'(0) = 0``, ``sign(0) = 0``)
    and one of the gaps stays put as ``h`` shrinks: that is flagged.  One-sided
    quotients see kinks of either parity: ``v relu(u.x)`` (neither even nor odd)
    as well as the odd ``v |u.x|``, to which a central second difference is blind.
    """
    for _ in range(2):
        W = rng.standard_normal((e.p, e.d))
        M, mu = moments(W)
        lin = np.atleast_1d(e.g @ mu)
        quad = np.atleast_1d(np.einsum("...ij,i,j->...", e.B, mu, mu) + np.einsum("...ij,ij->...", e.A, M))
        Wt = torch.as_tensor(W, dtype=torch.float64)
        f0 = np.atleast_1d(e.f0)
        floor = 1e-6 * (1.0 + np.abs(f0) + np.abs(lin) + np.abs(quad))
        for sign in (1.0, -1.0):
            gaps = []
            for h in SMOOTH_STEPS:
                fh = np.atleast_1d(_call(f, sign * h * Wt, x).detach().numpy())
                first = np.abs((fh - f0) / (sign * h) - lin)
                second = np.abs((fh - f0 - sign * h * lin) / (h * h) - quad)
                gaps.append((first, second))
            for order, name in ((0, "first"), (1, "second")):
                big, mid, small = (gap[order] for gap in gaps)
                stuck = (small > floor) & (small > 0.3 * mid) & (mid > 0.3 * big)
                if np.any(stuck):
                    raise NotSmoothError(
                        f"f is not differentiable at W = 0: its {name}-order autograd coefficient disagrees "
                        f"with one-sided difference quotients by {np.max(small):.3g}, and the gap does not "
                        f"shrink as the step goes from {SMOOTH_STEPS[0]:g} to {SMOOTH_STEPS[-1]:g}. A kink at "
                        "the origin (e.g. ReLU, |u.x|) makes the quadratic form wrong; Theorem 1 needs a C^3 module."
                    )


def expand(
    f: Module, x: Any, p: int, d: int = 2, check: bool = True, seed: int = 0, *, max_bytes: int = MAX_BYTES
) -> Expansion:
    """Exact Taylor coefficients ``f0, g, A, B`` of a symmetric module at ``W = 0`` (Eq. 20).

    Parameters
    ----------
    f : callable ``f(W, x) -> tensor``
        The module, in torch.  ``W`` has shape ``(p, d)`` (neurons as columns,
        float64) for any width ``d``; the output is a scalar or a ``(V,)`` vector.
    x : any
        One input, passed through to ``f`` (torch tensors, also inside tuples
        and lists, detached from autograd).  Refused if a tensor, array or
        number in it is NaN or inf.
    p : int
        Number of parameters of one neuron (the rows of ``W``).
    d : int, default 2
        Width at which the expansion is taken.  Two neurons show every block
        (one diagonal, one off-diagonal); ``f0`` is ``f(0)`` at this width.
    check : bool, default True
        Verify permutation symmetry (at a random width-3 point) and
        differentiability at the origin (one-sided difference quotients at
        three scales along two random directions, against autograd).
    seed : int
        Seed of the random points used by the checks.
    max_bytes : int, default 2 GiB
        Memory budget: ``expand`` refuses up front when the Hessian
        (``V (d p)^2`` float64 entries) would exceed it.

    Returns
    -------
    Expansion
        ``f0, g, A, B`` as float64 numpy arrays (leading ``V`` axis for vector outputs).

    Raises
    ------
    NotSymmetricError
        If permuting neurons changes ``f`` or the Hessian blocks differ.
    NotSmoothError
        If ``f`` is not differentiable at the origin (ReLU, ``|u.x|``), or
        ``f`` or a derivative at the origin is not finite (``0/0``).
    ValueError
        If ``x`` holds NaN or inf, ``f`` indexes ``W`` beyond ``p`` rows, or the
        Hessian would need more than ``max_bytes``.
    """
    if not callable(f):
        raise TypeError(f"f must be callable as f(W, x), got {type(f).__name__}")
    p = width("p", p)
    d = width("d", d)
    if d < 2:
        raise ValueError(f"d must be >= 2 to see the cross-neuron block B, got {d}")
    max_bytes = integer("max_bytes", max_bytes)
    x = _detach_input(x)
    _check_input_finite(x)
    _check_budget(d * p, 1, max_bytes)  # before f is called on a (p, d) tensor

    def F(theta: torch.Tensor) -> torch.Tensor:
        return _call(f, theta.reshape(d, p).T, x)

    with torch.no_grad():
        V = int(np.prod(F(torch.zeros(d * p, dtype=torch.float64)).shape))
    _check_budget(d * p, V, max_bytes)
    value, grad, hess = _derivatives(F, d * p)
    vec = value.ndim == 1
    g_all = grad.reshape(*value.shape, d, p).numpy()
    H = hess.reshape(*value.shape, d, p, d, p).numpy()
    H11, H22, H12 = H[..., 0, :, 0, :], H[..., 1, :, 1, :], H[..., 0, :, 1, :]
    scale = 1.0 + float(np.max(np.abs(H), initial=0.0)) + float(np.max(np.abs(g_all), initial=0.0))
    mismatch = max(
        float(np.max(np.abs(H11 - H22))),
        float(np.max(np.abs(g_all[..., 0, :] - g_all[..., 1, :]))),
    )
    if mismatch > SYMMETRY_RTOL * scale:
        raise NotSymmetricError(
            f"the two neurons' derivatives at W = 0 differ by {mismatch:.3g}: f is not symmetric "
            "under permuting neurons (Definition 1), or W's columns are not the neurons"
        )
    A_s = 0.5 * (H11 + np.swapaxes(H11, -1, -2)) / 2
    B = 0.5 * (H12 + np.swapaxes(H12, -1, -2)) / 2
    out = Expansion(
        f0=value.numpy().copy(),
        g=g_all[..., 0, :].copy(),
        A=A_s - B,
        B=B,
        d=d,
    )
    if not vec and out.f0.ndim != 0:
        raise ValueError("f must return a scalar or a (V,) vector")
    if check:
        rng = np.random.default_rng(seed)
        _check_symmetry(f, x, p, rng)
        _check_smooth(f, x, out, rng)
    return out


def expand_dataset(
    f: Module, xs: Sequence[Any], p: int, d: int = 2, check: bool = True, *, max_bytes: int = MAX_BYTES
) -> NQF:
    """The NQF of a data set: :func:`expand` at every input, stacked into an :class:`~nqf_lite.NQF`.

    The symmetry and smoothness checks run on the first input only.

    Parameters
    ----------
    f : callable ``f(W, x) -> tensor``
        The module (see :func:`expand`).
    xs : sequence
        The ``m`` inputs.
    p, d : int
        As in :func:`expand`.
    check : bool
        Run :func:`expand`'s checks on ``xs[0]``.
    max_bytes : int
        Memory budget of one :func:`expand` (its Hessian).

    Returns
    -------
    NQF
        With ``A`` of shape ``(m, p, p)`` or ``(m, V, p, p)`` and matching ``g, B, f0``.
    """
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input")
    exps = []
    for i, x in enumerate(xs):
        try:
            exps.append(expand(f, x, p, d=d, check=check and i == 0, max_bytes=max_bytes))
        except (NotSymmetricError, NotSmoothError):
            raise
        except ValueError as exc:
            raise ValueError(f"xs[{i}]: {exc}") from exc
    return NQF(
        A=np.stack([e.A for e in exps]),
        g=np.stack([e.g for e in exps]),
        B=np.stack([e.B for e in exps]),
        f0=np.stack([e.f0 for e in exps]),
    )


def truncation_error(
    f: Callable[[torch.Tensor, Any], torch.Tensor],
    expansion: Any,
    x: Any,
    W: Any,
    eps_grid: Any,
    correction: Callable[[np.ndarray], Any] | None = None,
) -> np.ndarray:
    """``|f(εW; x) − NQF(εW; x)|`` for every ε (Eq. 20; Thm 1's remainder).

    Parameters
    ----------
    f : callable
        The module, ``f(W, x)`` as given to :func:`nqf_lite.expand`.
    expansion : Expansion
        The Taylor coefficients, e.g. from :func:`nqf_lite.expand`; its
        ``predict(W)`` gives ``f0 + gᵀμ + μᵀBμ + Tr[M A]``.
    x : any
        The module's input.
    W : array_like, shape (p, d)
        Direction in weight space.
    eps_grid : array_like
        Positive scales ε.
    correction : callable, optional
        ``correction(εW)`` added to the NQF prediction, for higher-order terms
        (e.g. :func:`nqf_lite.architectures.attention.mha_quartic`).

    Returns
    -------
    numpy.ndarray
        The error per ε (Euclidean norm over outputs for vector modules).
    """
    W = as_array("W", W, ndim=2)
    eps = as_array("eps_grid", eps_grid)
    if eps.ndim != 1 or eps.size == 0 or not np.all(eps > 0):
        raise ValueError("eps_grid must be a non-empty 1-D array of positive numbers")
    if not isinstance(expansion, Expansion):
        raise TypeError(f"expansion must be an Expansion (from expand), got {type(expansion).__name__}")
    x = _detach_input(x)
    if expansion.p != W.shape[0]:
        raise ValueError(f"expansion has p={expansion.p}, which does not match W with {W.shape[0]} rows")
    errs = []
    with torch.no_grad():
        for e in eps:
            We = e * W
            exact = f(torch.as_tensor(We, dtype=torch.float64), x).detach().numpy()
            approx = expansion.predict(We)
            if correction is not None:
                approx = approx + as_array("correction(eps W)", correction(We))
            errs.append(float(np.linalg.norm(np.atleast_1d(exact - approx))))
    return np.array(errs)
