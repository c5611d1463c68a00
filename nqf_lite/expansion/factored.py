"""Structured (factored) coefficients: the NQF of a whole data set in the
memory of its inputs.

For many layers the structure matrices have low rank with factors shared over
inputs and outputs. Proposition 1: for a two-layer network
``f_o(x) = c_o + sum_i a_io phi(u_i . x + b_i)`` with unit
``w_i = (u_i, b_i, a_i)``, the Taylor coefficients at ``W = 0`` are
(``x~ = (x, 1)`` with a bias, ``x`` without)

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

A term may also carry one ``R`` per input and output, ``sym(L[n] ⊗ R[n,
o])`` (mixtures of experts, query-key heads, a small ``A(x)`` factored by its
eigenvectors), or belong to one output alone (``Term.output``: the vector
linear expert, whose ``L`` and ``R`` are then shared by its outputs); the
arithmetic of one term is in
:mod:`nqf_lite.expansion.factored_terms`, the builders of the known
structures in :mod:`nqf_lite.expansion.factored_models`.

``A``, ``g`` and ``B`` are still available as dense arrays (built on access,
refused above a memory budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nqf_lite._checks import as_array, integer
from nqf_lite.expansion import factored_terms as ft
from nqf_lite.expansion.factored_terms import Term
from nqf_lite.expansion.form import NQF

__all__ = ["DENSE_MAX_BYTES", "FactoredNQF", "Term"]

#: largest dense ``A`` (bytes) that :attr:`FactoredNQF.A` builds on access
DENSE_MAX_BYTES = 2 * 2**30


class FactoredNQF(NQF):
    """An :class:`~nqf_lite.NQF` whose structure matrices are kept factored.

    ``A_{n,o} = sum_r sym(L_r[n] ⊗ R_r[o])`` (or ``R_r[n, o]``),
    ``g_{n,o} = g_out[o]`` (shared over inputs), ``B = 0``,
    ``f0_{n,o} = f0[n, o]``.

    Parameters
    ----------
    terms : sequence of Term
    p : int
        Parameters per unit.
    V : int or None
        Number of outputs; ``None`` for a scalar output (every ``R`` then has
        one row per input, or one row).
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
        self.terms, self.m = ft.checked_terms(terms, self.p, self.V, dtype)
        self._nV = 1 if self.V is None else self.V
        lead = (self.m,) if self.V is None else (self.m, self.V)
        self._lead = lead
        g_out = np.zeros((self._nV, self.p)) if g is None else as_array("g", g)
        if g_out.shape == (self.p,):
            g_out = g_out[None, :]
        if g_out.shape != (self._nV, self.p):
            raise ValueError(
                f"g must have shape ({self._nV}, {self.p}) (one row per "
                f"output, shared over inputs), got {g_out.shape}"
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
        self._shared = all(t.shared for t in self.terms)

    # ----------------------------------------------------------- dense views
    def _dense_guard(self, what: str, per: int) -> None:
        need = 8 * self.m * self._nV * per
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
        X = np.zeros((self.m, self._nV, self.p, self.p))
        for t in self.terms:
            ft.dense_into(X, t)
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
        seen = {  # arrays shared by several terms count once
            (a.__array_interface__["data"][0], a.nbytes)
            for t in self.terms
            for a in (t.L, t.R)
        }
        return sum(n for _, n in seen) + self.f0.nbytes + self._g_out.nbytes

    # ------------------------------------------------------- the arithmetic
    def _f(
        self, M: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> np.ndarray:
        rows = self.m if idx is None else idx.size
        out = np.zeros((rows, self._nV))
        for t in self.terms:
            out[:, ft.cols(t)] += ft.value(t, M, idx, self.dtype)
        if not self._zgz:
            out += self._g_out @ mu
        out = out[:, 0] if self.V is None else out
        return out + (self.f0 if idx is None else self.f0[idx])

    def _block_sum(
        self, w: np.ndarray, idx: np.ndarray | None = None
    ) -> np.ndarray:
        """``X`` with ``X[rows_L, rows_R] = sum_r sum_{n,o} w L_r R_rᵀ``, so
        that ``sum_{n,o} w_{n,o} A_{n,o} = (X + Xᵀ)/2``."""
        w = np.asarray(w, dtype=np.float64).reshape(-1, self._nV)
        X = np.zeros((self.p, self.p))
        for t in self.terms:
            X[np.ix_(t.rows_L, t.rows_R)] += ft.block(t, w, idx, self.dtype)
        return X

    def _grad(
        self, lp: np.ndarray, mu: np.ndarray, idx: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        X = self._block_sum(lp, idx)
        H = X + X.T
        if self._zgz:
            return np.zeros(self.p), H
        return lp.reshape(-1, self._nV).sum(axis=0) @ self._g_out, H

    # ------------------------------------------------ helpers of the forecast
    def _weighted_sum(self, T: np.ndarray) -> np.ndarray:
        """``sum_{n,o} T_{n,o} A_{n,o}`` (p, p) for weights ``T`` of the shape
        of the labels."""
        X = self._block_sum(np.asarray(T).reshape(self.m, self._nV))
        return 0.5 * (X + X.T)

    def _diagonals(self, P: np.ndarray) -> np.ndarray:
        """``lam[n, o, k] = p_kᵀ A_{n,o} p_k`` (memory m V p: small data sets
        only)."""
        self._dense_guard("diagonals", P.shape[1])
        out = ft.diagonals(self.terms, P, self.dtype, self._nV)
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

        With shared ``R``, ``lam_{n,o,k} = sum_r (L_r[n] . P[rows_L]_k)
        (R_r[o] . P[rows_R]_k)``, so the sum over ``(n, o)`` is ``sum_{r,s}
        (P_Lrᵀ L_rᵀ L_s P_Ls) ∘ (P_Rrᵀ R_rᵀ R_s P_Rs)`` (Hadamard product);
        otherwise ``lam`` is built a chunk of inputs at a time.
        """
        k = P.shape[1]
        G = np.zeros((k, k))
        if not self._shared:
            for idx in ft.chunks(self.m, self._nV * k):
                lam = ft.diagonals(self.terms, P, self.dtype, self._nV, idx)
                lam = lam.reshape(-1, k)
                G += lam.T @ lam
            return G
        for r, t1 in enumerate(self.terms):
            for s, t2 in enumerate(self.terms):
                left = P[t1.rows_L].T @ self._gram(r, s) @ P[t2.rows_L]
                R1, R2 = ft.full_R(t1, self._nV), ft.full_R(t2, self._nV)
                right = (R1 @ P[t1.rows_R]).T @ (R2 @ P[t2.rows_R])
                G += left * right
        return G

    def _frobenius2(self) -> float:
        """``sum_{n,o} ||A_{n,o}||_F^2`` from the factors, a chunk of inputs
        at a time (from the cached Gram matrices with shared ``R``)."""
        if self._shared:
            return ft.frobenius2_shared(self.terms, self._gram, self._nV)
        per = self._nV * sum(t.L.shape[1] + t.R.shape[-1] for t in self.terms)
        return sum(
            ft.frobenius2_chunk(self.terms, idx, self._nV)
            for idx in ft.chunks(self.m, per)
        )

    def _span_columns(self) -> np.ndarray:
        """Rows spanning ``span{g, Col A}`` (shape (N, p)), for
        :func:`nqf_lite.data_subspace`."""
        blocks = [self._g_out]
        for t in self.terms:
            blocks += ft.span_rows(t, self.p)
        return np.concatenate(blocks, axis=0)

    def _scaled(self, factor: float) -> FactoredNQF:
        """The same model with ``A`` multiplied by ``factor`` (``g``, ``B``,
        ``f0`` kept)."""
        terms = [
            Term(t.L, t.rows_L, t.R * factor, t.rows_R, t.output)
            for t in self.terms
        ]
        return FactoredNQF(
            terms, self.p, self.V, g=self._g_out, f0=self.f0, dtype=self.dtype
        )
