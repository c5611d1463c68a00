"""The Taylor coefficients of Theorem 1, the two conditions they need, and
their remainder.

Theorem 1 and its ZGZ-free form (paper Eq. 20, App. B.1): a module
``f(W; x)`` that is symmetric under permuting the ``d`` columns (neurons) of
``W`` (Definition 1) and three times differentiable satisfies, near ``W = 0``,

.. math::

    f(W) = f_0 + g^\\top \\mu + \\mu^\\top B \\mu + \\mathrm{Tr}[M A] +
    O(\\|W\\|^3),
    \\qquad M = W W^\\top,\\; \\mu = W \\mathbf 1 .

- :class:`Expansion`: the coefficients ``f0, g, A, B`` at one input and the
  quadratic form they define;
- :class:`NotSymmetricError`, :class:`NotSmoothError`: the two ways a module
  fails Theorem 1, and the checks that raise them (a random permutation of
  the units; one-sided difference quotients at three scales);
- :func:`truncation_error`: the remainder ``|f(εW) - NQF(εW)|`` of Theorem 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from nqf_lite._checks import as_array, describe, finite_input
from nqf_lite.expansion.order import moments
from nqf_lite.expansion.units import ModuleUnits

__all__ = [
    "Expansion",
    "NotSmoothError",
    "NotSymmetricError",
    "truncation_error",
]

Module = Callable[[torch.Tensor, Any], torch.Tensor]

#: relative tolerance of the permutation-symmetry check
SYMMETRY_RTOL = 1e-9


#: step sizes of the smoothness check (one-sided difference quotients along
#: random directions)
SMOOTH_STEPS = (1e-2, 1e-3, 1e-4)


class NotSymmetricError(ValueError):
    """The module is not invariant under permuting its neurons (Definition
    1)."""


class NotSmoothError(ValueError):
    """The module is not twice differentiable at ``W = 0`` (e.g. ReLU); Theorem
    1 needs C^3."""


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
        """True when zero gradient at zero holds: ``g = 0`` and ``B = 0``
        (Property 1)."""
        tol = 1e-12 * (1.0 + float(np.max(np.abs(self.A), initial=0.0)))
        return bool(
            np.max(np.abs(self.g), initial=0.0) <= tol
            and np.max(np.abs(self.B), initial=0.0) <= tol
        )

    def predict(self, W: np.ndarray) -> np.ndarray:
        """The quadratic form ``f0 + g.mu + mu^T B mu + Tr[M A]`` at weights
        ``W`` (p, d).

        ``W`` must have the width ``d`` the expansion was taken at, because
        ``f0`` (and for non-additive modules the coefficients) depend on it.
        """
        W = as_array("W", W, ndim=2)
        if W.shape != (self.p, self.d):
            raise ValueError(
                f"W must have shape (p, d) = ({self.p}, {self.d}), the "
                "width this expansion was "
                f"taken at, got {W.shape}; f(0) and, for non-additive "
                "modules, g, A, B can depend "
                "on the width, so call expand(f, x, p, "
                f"d={W.shape[1] if W.shape[0] == self.p else 'd'})"
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


def evaluate(f: Module, W: torch.Tensor, x: Any) -> torch.Tensor:
    try:
        out = f(W, x)
    except IndexError as exc:
        p, d = W.shape
        raise ValueError(
            f"f(W, x) raised IndexError ({exc}) for W of shape (p, d) = "
            f"({p}, {d}): check p = {p}, "
            "the number of parameters of one neuron (the rows of W) that f "
            "indexes"
        ) from exc
    except RuntimeError as exc:
        if isinstance(f, ModuleUnits):
            raise
        p, d = W.shape
        raise ValueError(
            f"f(W, x) failed for x = {describe(x)} and W of shape (p, d) = "
            f"({p}, {d}), float64: torch raised "
            f"RuntimeError: {str(exc).splitlines()[0]}; check the size and "
            f"dtype of x and p = {p}"
        ) from exc
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"f(W, x) must return a torch tensor, got {type(out).__name__}"
        )
    if out.is_complex() or not out.is_floating_point():
        raise TypeError(
            "f(W, x) must return a real floating tensor, got dtype "
            f"{out.dtype}"
        )
    if out.ndim > 1:
        raise ValueError(
            "f(W, x) must return a scalar or a (V,) vector, got shape "
            f"{tuple(out.shape)}"
        )
    return out.to(torch.float64)


def check_symmetry(
    f: Module, x: Any, p: int, rng: np.random.Generator
) -> None:
    """Compare f at a random width-3 point with f at permuted columns."""
    W = torch.as_tensor(0.3 * rng.standard_normal((p, 3)), dtype=torch.float64)
    base = evaluate(f, W, x).detach().numpy()
    for perm in ([1, 0, 2], [1, 2, 0]):
        other = evaluate(f, W[:, perm], x).detach().numpy()
        gap = float(np.max(np.abs(other - base)))
        if gap > SYMMETRY_RTOL * (1.0 + float(np.max(np.abs(base)))):
            raise NotSymmetricError(
                "f is not symmetric under permuting neurons: f(W P) - f(W) "
                f"= {gap:.3g} for the "
                f"column permutation {perm} at a random width-3 W; Theorem "
                "1 needs S_d symmetry "
                "(Definition 1). Check that W's columns are the neurons."
            )


def check_smooth(
    f: Module, x: Any, e: Expansion, rng: np.random.Generator
) -> None:
    """Compare autograd's coefficients with one-sided difference quotients at
    three scales.

    Along a random direction ``W`` and for ``s = +1, -1``, a C^3 module has

    .. math::

        \\frac{f(shW) - f_0}{sh} - \\ell = O(h), \\qquad
        \\frac{f(shW) - f_0 - sh\\,\\ell}{h^2} - q = O(h),

    with ``l = g.mu`` and ``q = mu^T B mu + Tr[M A]`` from autograd.  At a kink
    autograd returns one branch's derivative (``relu'(0) = 0``, ``sign(0) =
    0``) and one of the gaps stays put as ``h`` shrinks: that is flagged.
    One-sided quotients see kinks of either parity: ``v relu(u.x)`` (neither
    even nor odd) as well as the odd ``v |u.x|``, to which a central second
    difference is blind.
    """
    for _ in range(2):
        W = rng.standard_normal((e.p, e.d))
        M, mu = moments(W)
        lin = np.atleast_1d(e.g @ mu)
        quad = np.atleast_1d(
            np.einsum("...ij,i,j->...", e.B, mu, mu)
            + np.einsum("...ij,ij->...", e.A, M)
        )
        Wt = torch.as_tensor(W, dtype=torch.float64)
        f0 = np.atleast_1d(e.f0)
        floor = 1e-6 * (1.0 + np.abs(f0) + np.abs(lin) + np.abs(quad))
        for sign in (1.0, -1.0):
            gaps = []
            for h in SMOOTH_STEPS:
                fh = np.atleast_1d(
                    evaluate(f, sign * h * Wt, x).detach().numpy()
                )
                first = np.abs((fh - f0) / (sign * h) - lin)
                second = np.abs((fh - f0 - sign * h * lin) / (h * h) - quad)
                gaps.append((first, second))
            for order, name in ((0, "first"), (1, "second")):
                big, mid, small = (gap[order] for gap in gaps)
                stuck = (
                    (small > floor) & (small > 0.3 * mid) & (mid > 0.3 * big)
                )
                if np.any(stuck):
                    raise NotSmoothError(
                        "f is not differentiable at W = 0: its "
                        f"{name}-order autograd coefficient disagrees "
                        "with one-sided difference quotients by "
                        f"{np.max(small):.3g}, and the gap does not "
                        f"shrink as the step goes from {SMOOTH_STEPS[0]:g} "
                        f"to {SMOOTH_STEPS[-1]:g}. A kink at "
                        "the origin (e.g. ReLU, |u.x|) makes the quadratic "
                        "form wrong; Theorem 1 needs a C^3 module."
                    )


def check_module_symmetry(
    units: ModuleUnits, x: Any, rng: np.random.Generator
) -> None:
    """Permute the units at a random ``W`` (a swap and a cycle); then perturb
    each unlisted parameter.

    A parameter left out of ``units`` that belongs to the units (a per-unit
    bias that happens to be zero, say) keeps the module symmetric at its
    current value but not at others: perturbing it alone and permuting the
    units shows it.
    """
    d = units.d
    W = torch.as_tensor(0.3 * rng.standard_normal((units.p, d)))
    perms = [[1, 0] + list(range(2, d))] + (
        [list(range(1, d)) + [0]] if d > 2 else []
    )

    def gap(
        overrides: dict[str, torch.Tensor] | None = None,
    ) -> tuple[float, float]:
        base = units(W, x, overrides).detach().numpy()
        worst = max(
            float(
                np.max(
                    np.abs(
                        units(W[:, perm], x, overrides).detach().numpy() - base
                    )
                )
            )
            for perm in perms
        )
        return worst, SYMMETRY_RTOL * (1.0 + float(np.max(np.abs(base))))

    worst, tol = gap()
    if worst > tol:
        raise NotSymmetricError(
            "the module is not symmetric under permuting its units: f(W P) "
            f"- f(W) = {worst:.3g} at a random W for "
            f"{units!r}. Theorem 1 needs S_d symmetry (Definition 1): check "
            "that units lists every per-unit "
            "parameter with its dim, and d (a unit may own several "
            "consecutive indices, e.g. an attention head)"
        )
    for name, t in units.module.named_parameters():
        if name in units.owned or not t.is_floating_point() or t.numel() == 0:
            continue
        base = t.detach().to(torch.float64)
        kick = torch.as_tensor(rng.standard_normal(tuple(t.shape))) * (
            0.3 + float(base.abs().mean())
        )
        worst, tol = gap({name: base + kick})
        if worst > tol:
            raise ValueError(
                f"units leaves out {name!r} (shape {tuple(t.shape)}), which "
                "belongs to the units: the module is "
                "symmetric at its current value, but permuting the units "
                "without it changes f once it varies. "
                f"Add ({name!r}, dim) to units"
            )


def truncation_error(
    f: Module | nn.Module,
    expansion: Any,
    x: Any,
    W: Any,
    eps_grid: Any,
    correction: Callable[[np.ndarray], Any] | None = None,
    *,
    units: Sequence[Any] | None = None,
) -> np.ndarray:
    """``|f(εW; x) − NQF(εW; x)|`` for every ε (Eq. 20; Thm 1's remainder).

    Parameters
    ----------
    f : torch.nn.Module, ModuleUnits, or callable
        The module, as given to :func:`nqf_lite.expand` (with the same
        ``units``).
    expansion : Expansion
        The Taylor coefficients, e.g. from :func:`nqf_lite.expand`; its
        ``predict(W)`` gives ``f0 + gᵀμ + μᵀBμ + Tr[M A]``.
    x : any
        The module's input.
    W : array_like, shape (p, d)
        Direction in weight space (``d`` the width of the expansion).
    eps_grid : array_like
        Positive scales ε.
    correction : callable, optional
        ``correction(εW)`` added to the NQF prediction, for higher-order terms
        (e.g. :func:`nqf_lite.expansion.models.attention.mha_quartic`).
    units : sequence, optional
        For a torch module: its units, as in :func:`expand`.

    Returns
    -------
    numpy.ndarray
        The error per ε (Euclidean norm over outputs for vector modules).
    """
    W = as_array("W", W, ndim=2)
    eps = as_array("eps_grid", eps_grid)
    if eps.ndim != 1 or eps.size == 0 or not np.all(eps > 0):
        raise ValueError(
            "eps_grid must be a non-empty 1-D array of positive numbers"
        )
    if not isinstance(expansion, Expansion):
        raise TypeError(
            "expansion must be an Expansion (from expand), got "
            f"{type(expansion).__name__}"
        )
    if isinstance(f, nn.Module):
        f = ModuleUnits(f, units, expansion.d)
    elif units is not None:
        raise ValueError("units applies to a torch.nn.Module f only")
    if not callable(f):
        raise TypeError(
            "f must be a torch.nn.Module or callable as f(W, x), got "
            f"{type(f).__name__}"
        )
    x = finite_input("x", x)
    if expansion.p != W.shape[0]:
        raise ValueError(
            f"expansion has p={expansion.p}, which does not match W with "
            f"{W.shape[0]} rows"
        )
    errs = []
    with torch.no_grad():
        for e in eps:
            We = e * W
            exact = evaluate(
                f, torch.as_tensor(We, dtype=torch.float64), x
            ).numpy()
            approx = expansion.predict(We)
            if correction is not None:
                approx = approx + as_array("correction(eps W)", correction(We))
            errs.append(float(np.linalg.norm(np.atleast_1d(exact - approx))))
    return np.array(errs)
