"""Structured (factored) coefficients: the NQF of a whole data set in the
memory of its inputs.

For many layers the structure matrices have low rank with factors shared over
inputs and outputs.  Proposition 1: for a two-layer network ``f_o(x) = c_o +
sum_i a_io phi(u_i . x + b_i)`` with unit ``w_i = (u_i, b_i, a_i)``, the Taylor
coefficients at ``W = 0`` are (``x~ = (x, 1)`` with a bias, ``x`` without)

.. math::

    A_o(x) = \\frac{\\phi'(0)}{2}\\,(e_o \\tilde x^\\top + \\tilde x
    e_o^\\top), \\qquad
    g_o(x) = \\phi(0)\\, e_o, \\qquad B = 0, \\qquad f_0 = c,

where ``x~`` fills the unit's input block and ``e_o`` is output ``o``'s
coordinate in its output block: rank 2, built from the input itself and the
output's index.

:class:`FactoredNQF` holds a data set of such matrices as a sum of terms
``A_{n,o} = sum_r sym(L_r[n] ⊗ R_r[o])`` (``sym(u ⊗ v) = (u vᵀ + v uᵀ)/2``, the
vectors embedded into rows ``rows_L``, ``rows_R`` of ``R^p``), a linear term
shared over inputs and an output offset.  Every method of
:class:`~nqf_lite.NQF`
works on it without forming a ``p × p`` matrix per input:

- ``Tr[M A_{n,o}] = sum_r L_r[n]ᵀ M[rows_L, rows_R] R_r[o]``;
- ``H = sum 2 l' A = X + Xᵀ`` with ``X[rows_L, rows_R] = sum_r L_rᵀ l' R_r``;
- ``v = sum_{n,o} l'_{n,o} g_o``.

``A``, ``g`` and ``B`` are still available as dense arrays (built on access,
refused above a memory budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nqf_lite._checks import as_array, integer
from nqf_lite.expansion.form import NQF

__all__ = ["DENSE_MAX_BYTES", "FactoredNQF", "Term"]

#: largest dense ``A`` (bytes) that :attr:`FactoredNQF.A` builds on access
DENSE_MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class Term:
    """One term ``sym(L[n] ⊗ R[o])`` of the structure matrices.

    Attributes
    ----------
    L : ndarray, shape (m, a)
        One vector per input.
    rows_L : ndarray of int, shape (a,)
        The rows of ``R^p`` that ``L[n]`` fills.
    R : ndarray, shape (V, b)
        One vector per output (``V = 1`` for a scalar output).
    rows_R : ndarray of int, shape (b,)
        The rows that ``R[o]`` fills.
    """

    L: np.ndarray
    rows_L: np.ndarray
    R: np.ndarray
    rows_R: np.ndarray


def _checked_terms(
    terms: Sequence[Term], p: int, V: int | None, dtype: np.dtype
) -> tuple[tuple[Term, ...], int]:
    """The contract of :class:`FactoredNQF`'s terms, checked once: the terms
    with contiguous factors (``L`` in ``dtype``) and the number of inputs
    ``m``."""
    if not terms:
        raise ValueError("terms must hold at least one Term")
    nV = 1 if V is None else V
    checked = []
    m = None
    for i, t in enumerate(terms):
        if not isinstance(t, Term):
            raise TypeError(
                f"terms[{i}] must be a Term, got {type(t).__name__}"
            )
        L = np.ascontiguousarray(t.L, dtype=dtype)
        R = np.ascontiguousarray(t.R, dtype=np.float64)
        rL = np.asarray(t.rows_L, dtype=np.intp)
        rR = np.asarray(t.rows_R, dtype=np.intp)
        if (
            L.ndim != 2
            or L.shape[1] != rL.size
            or R.ndim != 2
            or R.shape != (nV, rR.size)
        ):
            raise ValueError(
                f"terms[{i}]: L must be (m, len(rows_L)) and R (V={nV}, "
                "len(rows_R)), got "
                f"{L.shape}, {R.shape}"
            )
        for name, rows in (("rows_L", rL), ("rows_R", rR)):
            if rows.size and (
                rows.min() < 0
                or rows.max() >= p
                or np.unique(rows).size != rows.size
            ):
                raise ValueError(
                    f"terms[{i}].{name} must be distinct rows in [0, p = {p})"
                )
        if m is None:
            m = L.shape[0]
        elif L.shape[0] != m:
            raise ValueError(
                f"terms[{i}]: L has {L.shape[0]} inputs, the first term {m}"
            )
        if not (np.isfinite(L).all() and np.isfinite(R).all()):
            raise ValueError(f"terms[{i}]: L and R must be finite")
        checked.append(Term(L, rL, R, rR))
    if m == 0:
        raise ValueError("the data set must hold at least one input")
    return tuple(checked), int(m)


class FactoredNQF(NQF):
    """An :class:`~nqf_lite.NQF` whose structure matrices are kept factored.

    ``A_{n,o} = sum_r sym(L_r[n] ⊗ R_r[o])``, ``g_{n,o} = g_out[o]`` (shared
    over inputs), ``B = 0``, ``f0_{n,o} = f0[n, o]``.

    Parameters
    ----------
    terms : sequence of Term
    p : int
        Parameters per unit.
    V : int or None
        Number of outputs; ``None`` for a scalar output (every ``R`` then has
        one row).
    g : array, shape (V, p) or (p,), optional
        The linear coefficients, the same for every input.
    f0 : array, shape (V,), (m, V), (m,) or (), optional
        Outputs at ``W = 0``, broadcast to every input.
    dtype : numpy float dtype, default float64
        The dtype of the stored factors and of the products with them
        (``float32`` halves the memory); predictions, ``v`` and ``H`` are
        returned in float64.
    """

    factored = True

    def __init__(
        self,
        terms: Sequence[Term],
        p: int,
        V: int | None = None,
        g=None,
        f0=None,
        dtype: Any = np.float64,
    ) -> None:
        self.p = integer("p", p)
        self.V = None if V is None else integer("V", V)
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"dtype must be float32 or float64, got {dtype}")
        self.dtype = dtype
        self.terms, self.m = _checked_terms(terms, self.p, self.V, dtype)
        nV = 1 if self.V is None else self.V
        lead = (self.m,) if self.V is None else (self.m, self.V)
        self._lead = lead
        g_out = np.zeros((nV, self.p)) if g is None else as_array("g", g)
        if g_out.shape == (self.p,):
            g_out = g_out[None, :]
        if g_out.shape != (nV, self.p):
            raise ValueError(
                f"g must have shape ({nV}, {self.p}) (one row per output, "
                "shared over inputs), "
                f"got {g_out.shape}"
            )
        self._g_out = g_out
        f0 = np.zeros(()) if f0 is None else as_array("f0", f0)
        try:
            self.f0 = np.ascontiguousarray(
                np.broadcast_to(f0, lead), dtype=np.float64
            )
        except ValueError:
            raise ValueError(
                f"f0 must broadcast to {lead}, got shape {f0.shape}"
            ) from None
        self._zgz = not np.any(g_out)
        self._eye = np.eye(self.p)

    # ----------------------------------------------------------- dense views
    def _dense_guard(self, what: str, per: int) -> None:
        need = 8 * self.m * (1 if self.V is None else self.V) * per
        if need > DENSE_MAX_BYTES:
            raise MemoryError(
                f"the dense {what} of this factored NQF would need "
                f"{need / 2**30:.2f} GiB, more than "
                "nqf_lite.expansion.factored.DENSE_MAX_BYTES = "
                f"{DENSE_MAX_BYTES / 2**30:.2f} GiB; every NQF method "
                "works on the factors, so use them (or raise DENSE_MAX_BYTES)"
            )

    @property
    def A(self) -> np.ndarray:  # type: ignore[override]
        """The dense structure matrices, shape (m, p, p) or (m, V, p, p), built
        on access."""
        self._dense_guard("A", self.p * self.p)
        nV = 1 if self.V is None else self.V
        X = np.zeros((self.m, nV, self.p, self.p))
        for t in self.terms:
            outer = np.einsum("na,ob->noab", t.L.astype(np.float64), t.R)
            X[:, :, t.rows_L[:, None], t.rows_R[None, :]] += outer
        A = 0.5 * (X + np.swapaxes(X, -1, -2))
        return A[:, 0] if self.V is None else A

    @property
    def g(self) -> np.ndarray:  # type: ignore[override]
        """The dense linear coefficients, shape (m, p) or (m, V, p)."""
        self._dense_guard("g", self.p)
        g = np.broadcast_to(self._g_out, (self.m,) + self._g_out.shape).copy()
        return g[:, 0] if self.V is None else g

    @property
    def B(self) -> np.ndarray:  # type: ignore[override]
        """The dense cross-unit coefficients: zero."""
        self._dense_guard("B", self.p * self.p)
        return np.zeros(self._lead + (self.p, self.p))

    def dense(self) -> NQF:
        """The same model as a dense :class:`~nqf_lite.NQF`."""
        return NQF(self.A, g=self.g, B=None, f0=self.f0)

    def __repr__(self) -> str:
        out = "scalar" if self.V is None else f"V={self.V}"
        return (
            f"FactoredNQF(m={self.m}, p={self.p}, {out}, zgz={self.zgz}, "
            f"terms={len(self.terms)}, {self.dtype})"
        )

    @property
    def nbytes(self) -> int:
        """Bytes held by the factors and offsets."""
        return (
            sum(t.L.nbytes + t.R.nbytes for t in self.terms)
            + self.f0.nbytes
            + self._g_out.nbytes
        )

    # ------------------------------------------------------- the arithmetic
    def _f(
        self, M: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> np.ndarray:
        nV = 1 if self.V is None else self.V
        rows = self.m if idx is None else idx.size
        out = np.zeros((rows, nV))
        for t in self.terms:
            L = t.L if idx is None else t.L[idx]
            block = (M[np.ix_(t.rows_L, t.rows_R)] @ t.R.T).astype(
                self.dtype
            )  # (a, V)
            out += L @ block
        if not self._zgz:
            out += self._g_out @ mu
        out = out[:, 0] if self.V is None else out
        return out + (self.f0 if idx is None else self.f0[idx])

    def _grad(
        self, lp: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        nV = 1 if self.V is None else self.V
        lp = lp.reshape(-1, nV)
        X = np.zeros((self.p, self.p))
        for t in self.terms:
            L = t.L if idx is None else t.L[idx]
            K = (L.T @ lp.astype(self.dtype)).astype(
                np.float64
            ) @ t.R  # (a, b)
            X[np.ix_(t.rows_L, t.rows_R)] += K
        H = X + X.T
        if self._zgz:
            return np.zeros(self.p), H
        return lp.sum(axis=0) @ self._g_out, H

    # ------------------------------------------------ helpers of the forecast
    def _weighted_sum(self, T: np.ndarray) -> np.ndarray:
        """``sum_{n,o} T_{n,o} A_{n,o}`` (p, p) for weights ``T`` of the shape
        of the labels."""
        nV = 1 if self.V is None else self.V
        T = np.asarray(T, dtype=np.float64).reshape(self.m, nV)
        X = np.zeros((self.p, self.p))
        for t in self.terms:
            X[np.ix_(t.rows_L, t.rows_R)] += (
                t.L.T @ T.astype(self.dtype)
            ).astype(np.float64) @ t.R
        return 0.5 * (X + X.T)

    def _projections(
        self, P: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per term, ``(L P[rows_L], R P[rows_R])``: the diagonal of ``Pᵀ
        A_{n,o} P`` is their product."""
        return [
            (
                (t.L @ P[t.rows_L].astype(self.dtype)).astype(np.float64),
                t.R @ P[t.rows_R],
            )
            for t in self.terms
        ]

    def _diagonals(self, P: np.ndarray) -> np.ndarray:
        """``lam[n, o, k] = p_kᵀ A_{n,o} p_k`` (memory m V p: small data sets
        only)."""
        self._dense_guard("diagonals", P.shape[1])
        out = 0.0
        for a, b in self._projections(P):
            out = out + np.einsum("nk,ok->nok", a, b)
        return out[:, 0] if self.V is None else out

    def _gram(self, r: int, s: int) -> np.ndarray:
        """``L_rᵀ L_s`` (float64), computed once: one pass over the inputs
        serves every forecast."""
        cache = self.__dict__.setdefault("_grams", {})
        if (r, s) not in cache:
            cache[(r, s)] = (self.terms[r].L.T @ self.terms[s].L).astype(
                np.float64
            )
        return cache[(r, s)]

    def _gram_of_diagonals(self, P: np.ndarray) -> np.ndarray:
        """``sum_{n,o} lam_{n,o,k} lam_{n,o,j}`` (p, p) without forming
        ``lam``.

        ``lam_{n,o,k} = sum_r (L_r[n] . P[rows_L]_k) (R_r[o] . P[rows_R]_k)``,
        so the sum over ``(n, o)`` is ``sum_{r,s} (P_Lrᵀ L_rᵀ L_s P_Ls) ∘
        (P_Rrᵀ R_rᵀ R_s P_Rs)`` (Hadamard product).
        """
        G = np.zeros((P.shape[1], P.shape[1]))
        for r, t1 in enumerate(self.terms):
            for s, t2 in enumerate(self.terms):
                left = P[t1.rows_L].T @ self._gram(r, s) @ P[t2.rows_L]
                right = (t1.R @ P[t1.rows_R]).T @ (t2.R @ P[t2.rows_R])
                G += left * right
        return G

    def _frobenius2(self) -> float:
        """``sum_{n,o} ||A_{n,o}||_F^2`` from the factors (Gram matrices of the
        terms)."""
        total = 0.0
        for r, t1 in enumerate(self.terms):
            for s, t2 in enumerate(self.terms):
                # ||sum_r sym(u_r v_r^T)||^2 = 1/2 sum_{r,s}
                # [(u_r.u_s)(v_r.v_s) + (u_r.v_s)(v_r.u_s)]
                cl, i1, i2 = np.intersect1d(
                    t1.rows_L, t2.rows_L, return_indices=True
                )
                cr, j1, j2 = np.intersect1d(
                    t1.rows_R, t2.rows_R, return_indices=True
                )
                if cl.size and cr.size:
                    uu = float(np.trace(self._gram(r, s)[np.ix_(i1, i2)]))
                    vv = float(np.einsum("oa,oa->", t1.R[:, j1], t2.R[:, j2]))
                    total += 0.5 * uu * vv
                total += 0.5 * _cross_sum(t1, t2)
        return total

    def _span_columns(self) -> np.ndarray:
        """Rows spanning ``span{g, Col A}`` (shape (N, p)), for
        :func:`nqf_lite.data_subspace`."""
        blocks = [self._g_out]
        for t in self.terms:
            for F, rows in ((t.L, t.rows_L), (t.R, t.rows_R)):
                E = np.zeros((F.shape[0], self.p))
                E[:, rows] = F
                blocks.append(E)
        return np.concatenate(blocks, axis=0)

    def _scaled(self, factor: float) -> FactoredNQF:
        """The same model with ``A`` multiplied by ``factor`` (``g``, ``B``,
        ``f0`` kept)."""
        terms = [
            Term(t.L, t.rows_L, t.R * factor, t.rows_R) for t in self.terms
        ]
        return FactoredNQF(
            terms, self.p, self.V, g=self._g_out, f0=self.f0, dtype=self.dtype
        )


def _cross_sum(t1: Term, t2: Term) -> float:
    """``sum_{n,o} (u1.v2)(v1.u2)`` for ``u = L[n]``, ``v = R[o]`` embedded in
    ``R^p`` (0 when the input rows of one term and the output rows of the other
    do not overlap, as
    in the MLP)."""
    a_rows, a1, a2 = np.intersect1d(t1.rows_L, t2.rows_R, return_indices=True)
    b_rows, b1, b2 = np.intersect1d(t1.rows_R, t2.rows_L, return_indices=True)
    if a_rows.size == 0 or b_rows.size == 0:
        return 0.0
    a = t1.L[:, a1].astype(np.float64) @ t2.R[:, a2].T  # (m, V): u1[n].v2[o]
    b = t2.L[:, b2].astype(np.float64) @ t1.R[:, b1].T  # (m, V): u2[n].v1[o]
    return float(np.sum(a * b))
