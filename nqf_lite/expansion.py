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

from ._checks import as_array, width
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
    out = f(W, x)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"f(W, x) must return a torch tensor, got {type(out).__name__}")
    if out.ndim > 1:
        raise ValueError(f"f(W, x) must return a scalar or a (V,) vector, got shape {tuple(out.shape)}")
    return out.to(torch.float64)


def _derivatives(F: Callable[[torch.Tensor], torch.Tensor], n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Value, gradient (.., n) and Hessian (.., n, n) of ``F`` at zero by autograd."""
    theta0 = torch.zeros(n, dtype=torch.float64)
    value = F(theta0).detach()
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
    return value, grad.detach(), hess.detach()


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
    """Compare autograd's coefficients with central finite differences at two step sizes.

    For a C^3 module the symmetric difference quotients converge to the
    autograd coefficients like ``h^2``.  At a kink (ReLU) autograd returns a
    one-sided derivative, and the gap between the two does not shrink with
    ``h``: that is what is flagged.
    """
    steps = (1e-2, 1e-3)
    for _ in range(2):
        W = rng.standard_normal((e.p, e.d))
        M, mu = moments(W)
        lin = np.atleast_1d(e.g @ mu)
        quad = np.atleast_1d(np.einsum("...ij,i,j->...", e.B, mu, mu) + np.einsum("...ij,ij->...", e.A, M))
        Wt = torch.as_tensor(W, dtype=torch.float64)
        f0 = np.atleast_1d(e.f0)
        floor = 1e-8 * (1.0 + np.abs(f0) + np.abs(lin) + np.abs(quad))
        gaps = []
        for h in steps:
            fp = np.atleast_1d(_call(f, h * Wt, x).detach().numpy())
            fm = np.atleast_1d(_call(f, -h * Wt, x).detach().numpy())
            gaps.append((np.abs((fp - fm) / (2 * h) - lin), np.abs((fp + fm - 2 * f0) / (2 * h * h) - quad)))
        for order, name in ((0, "first"), (1, "second")):
            big, small = gaps[0][order], gaps[1][order]
            stuck = (small > floor) & (small > 0.3 * big)
            if np.any(stuck):
                raise NotSmoothError(
                    f"f is not differentiable at W = 0: its {name}-order autograd coefficient "
                    f"disagrees with central finite differences by {np.max(small):.3g}, and the gap "
                    "does not shrink as the step goes from 1e-2 to 1e-3. A kink at the origin "
                    "(e.g. ReLU) makes the quadratic form wrong; Theorem 1 needs a C^3 module."
                )


def expand(f: Module, x: Any, p: int, d: int = 2, check: bool = True, seed: int = 0) -> Expansion:
    """Exact Taylor coefficients ``f0, g, A, B`` of a symmetric module at ``W = 0`` (Eq. 20).

    Parameters
    ----------
    f : callable ``f(W, x) -> tensor``
        The module, in torch.  ``W`` has shape ``(p, d)`` (neurons as columns,
        float64) for any width ``d``; the output is a scalar or a ``(V,)`` vector.
    x : any
        One input, passed through to ``f`` unchanged.
    p : int
        Number of parameters of one neuron.
    d : int, default 2
        Width at which the expansion is taken.  Two neurons show every block
        (one diagonal, one off-diagonal); ``f0`` is ``f(0)`` at this width.
    check : bool, default True
        Verify permutation symmetry (at a random width-3 point) and
        differentiability at the origin (finite differences).
    seed : int
        Seed of the random points used by the checks.

    Returns
    -------
    Expansion
        ``f0, g, A, B`` as float64 numpy arrays (leading ``V`` axis for vector outputs).

    Raises
    ------
    NotSymmetricError
        If permuting neurons changes ``f`` or the Hessian blocks differ.
    NotSmoothError
        If ``f`` is not differentiable at the origin (ReLU).
    """
    if not callable(f):
        raise TypeError(f"f must be callable as f(W, x), got {type(f).__name__}")
    p = width("p", p)
    d = width("d", d)
    if d < 2:
        raise ValueError(f"d must be >= 2 to see the cross-neuron block B, got {d}")

    def F(theta: torch.Tensor) -> torch.Tensor:
        return _call(f, theta.reshape(d, p).T, x)

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


def expand_dataset(f: Module, xs: Sequence[Any], p: int, d: int = 2, check: bool = True) -> NQF:
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

    Returns
    -------
    NQF
        With ``A`` of shape ``(m, p, p)`` or ``(m, V, p, p)`` and matching ``g, B, f0``.
    """
    if len(xs) == 0:
        raise ValueError("xs must hold at least one input")
    exps = [expand(f, x, p, d=d, check=check and i == 0) for i, x in enumerate(xs)]
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
    W = np.asarray(W, dtype=float)
    eps = np.asarray(eps_grid, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"W must have shape (p, d), got {W.shape}")
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError("eps_grid must be a non-empty 1-D array of positive numbers")
    if not isinstance(expansion, Expansion):
        raise TypeError(f"expansion must be an Expansion (from expand), got {type(expansion).__name__}")
    if expansion.p != W.shape[0]:
        raise ValueError(f"expansion has p={expansion.p}, which does not match W with {W.shape[0]} rows")
    errs = []
    with torch.no_grad():
        for e in eps:
            We = e * W
            exact = f(torch.as_tensor(We, dtype=torch.float64), x).detach().numpy()
            approx = expansion.predict(We)
            if correction is not None:
                approx = approx + np.asarray(correction(We), dtype=float)
            errs.append(float(np.linalg.norm(np.atleast_1d(exact - approx))))
    return np.array(errs)
