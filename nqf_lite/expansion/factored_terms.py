"""The terms of a factored NQF and their arithmetic, one term at a time.

A :class:`Term` is ``sym(L[n] ⊗ R[o])``
(``R`` shared over the inputs) or ``sym(L[n] ⊗ R[n, o])`` (``R`` per input and
output), with the vectors embedded into rows ``rows_L``, ``rows_R`` of
``R^p`` and ``sym(u ⊗ v) = (u vᵀ + v uᵀ)/2``. The functions here give, per
term, the pieces that :class:`~nqf_lite.expansion.factored.FactoredNQF` sums:
``Tr[M A]``, the block of ``sum l' A``, the diagonals of ``Pᵀ A P``, their Gram
matrix and ``sum ||A||_F^2``, never a ``p × p`` matrix per input.

A shared ``R`` (the MLP of Proposition 1, attention heads) keeps the data set
in the memory of its inputs and lets one Gram matrix of the inputs serve
every forecast; a per-input ``R`` (mixtures of experts, whose expert gradient
depends on the input; query-key heads; any small ``A(x)`` factored by its
eigenvectors) costs ``m V b`` numbers a term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Term"]

#: bytes of the per-input blocks the generic (per-input ``R``) sums build at
#: once
CHUNK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Term:
    """One term ``sym(L[n] ⊗ R[o])`` (or ``sym(L[n] ⊗ R[n, o])``) of the
    structure matrices.

    Attributes
    ----------
    L : ndarray, shape (m, a)
        One vector per input.
    rows_L : ndarray of int, shape (a,)
        The rows of ``R^p`` that ``L[n]`` fills.
    R : ndarray, shape (V, b) or (m, V, b)
        One vector per output (``V = 1`` for a scalar output), shared over
        the inputs; or one per input and output.
    rows_R : ndarray of int, shape (b,)
        The rows that ``R[o]`` (or ``R[n, o]``) fills.
    output : int, optional
        When given, the term belongs to this output alone and ``R`` has one
        row for it (shape ``(1, b)`` or ``(m, 1, b)``): ``A_{n,o}`` holds
        ``sym(L[n] ⊗ R[(n,) 0])`` for ``o == output`` and nothing for the
        others (a vector linear expert: its gradient for output ``o`` is the
        input in the rows of ``Θ_o``, so ``L`` and ``R`` may be the same
        array for every output).
    """

    L: np.ndarray
    rows_L: np.ndarray
    R: np.ndarray
    rows_R: np.ndarray
    output: int | None = None

    @property
    def shared(self) -> bool:
        """True when ``R`` is shared over the inputs (shape ``(V, b)``)."""
        return self.R.ndim == 2


def _rows(name: str, rows: np.ndarray, p: int, i: int) -> None:
    if rows.ndim != 1 or (
        rows.size
        and (
            rows.min() < 0
            or rows.max() >= p
            or np.unique(rows).size != rows.size
        )
    ):
        raise ValueError(
            f"terms[{i}].{name} must be distinct rows in [0, p = {p})"
        )


def checked_terms(
    terms: Sequence[Term], p: int, V: int | None, dtype: np.dtype
) -> tuple[tuple[Term, ...], int]:
    """The contract of the terms, checked once: the terms with contiguous
    factors (``L`` and a per-input ``R`` in ``dtype``, a shared ``R`` in
    float64) and the number of inputs ``m``."""
    if isinstance(terms, Term) or not isinstance(terms, Sequence):
        raise TypeError(
            f"terms must be a sequence of Term, got {type(terms).__name__}"
        )
    if not terms:
        raise ValueError("terms must hold at least one Term")
    nV = 1 if V is None else V
    checked, m = [], None
    for i, t in enumerate(terms):
        if not isinstance(t, Term):
            raise TypeError(
                f"terms[{i}] must be a Term, got {type(t).__name__}"
            )
        L = np.ascontiguousarray(t.L, dtype=dtype)
        R = np.asarray(t.R)
        R = np.ascontiguousarray(R, np.float64 if R.ndim == 2 else dtype)
        rL = np.asarray(t.rows_L, dtype=np.intp)
        rR = np.asarray(t.rows_R, dtype=np.intp)
        if t.output is not None and (
            not isinstance(t.output, (int, np.integer))
            or not 0 <= t.output < nV
        ):
            raise ValueError(
                f"terms[{i}].output must be None or an output index in "
                f"[0, {nV}), got {t.output!r}"
            )
        rows_of_R = nV if t.output is None else 1
        if (
            L.ndim != 2
            or L.shape[1] != rL.size
            or R.ndim not in (2, 3)
            or R.shape[-2:] != (rows_of_R, rR.size)
            or (R.ndim == 3 and R.shape[0] != L.shape[0])
        ):
            raise ValueError(
                f"terms[{i}]: L must be (m, len(rows_L)) and R ({rows_of_R}, "
                f"len(rows_R)) or (m, {rows_of_R}, len(rows_R)), got "
                f"{L.shape}, {R.shape}"
            )
        _rows("rows_L", rL, p, i)
        _rows("rows_R", rR, p, i)
        if m is None:
            m = L.shape[0]
        elif L.shape[0] != m:
            raise ValueError(
                f"terms[{i}]: L has {L.shape[0]} inputs, the first term {m}"
            )
        if not (np.isfinite(L).all() and np.isfinite(R).all()):
            raise ValueError(f"terms[{i}]: L and R must be finite")
        out = None if t.output is None else int(t.output)
        checked.append(Term(L, rL, R, rR, out))
    if m == 0:
        raise ValueError("the data set must hold at least one input")
    return tuple(checked), int(m)


def _sel(a: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
    return a if idx is None else a[idx]


def cols(t: Term) -> slice:
    """The outputs the term fills: all, or its ``output``."""
    o = t.output
    return slice(None) if o is None else slice(o, o + 1)


def full_R(t: Term, nV: int, idx: np.ndarray | None = None) -> np.ndarray:
    """``R`` (of the inputs ``idx``) with a row for every output (zero rows
    for the outputs a term with ``output`` does not fill), float64."""
    R = t.R if t.shared else _sel(t.R, idx)
    if t.output is None:
        return R.astype(np.float64)
    out = np.zeros(R.shape[:-2] + (nV, R.shape[-1]))
    out[..., t.output, :] = R[..., 0, :]
    return out


def dense_into(X: np.ndarray, t: Term) -> None:
    """Add ``L[n] R[o]ᵀ`` into ``X[:, :, rows_L, rows_R]`` (shape (m, V, p,
    p))."""
    spec = "na,ob->noab" if t.shared else "na,nob->noab"
    outer = np.einsum(spec, t.L.astype(np.float64), t.R)
    Xo = X[:, cols(t)]
    Xo[:, :, t.rows_L[:, None], t.rows_R[None, :]] += outer


def value(
    t: Term, M: np.ndarray, idx: np.ndarray | None, dtype: np.dtype
) -> np.ndarray:
    """``Tr[M sym(L[n] ⊗ R[o])] = L[n]ᵀ M[rows_L, rows_R] R[o]``, shape (n,
    V)."""
    L = _sel(t.L, idx)
    block = M[np.ix_(t.rows_L, t.rows_R)]
    if t.shared:
        return L @ (block @ t.R.T).astype(dtype)
    LM = (L @ block.astype(dtype)).astype(np.float64)
    return np.einsum("nb,nob->no", LM, _sel(t.R, idx))


def block(
    t: Term, w: np.ndarray, idx: np.ndarray | None, dtype: np.dtype
) -> np.ndarray:
    """``sum_{n,o} w[n, o] L[n] R[o]ᵀ`` (a, b) for weights ``w`` (n, V)."""
    L = _sel(t.L, idx)
    w = w[:, cols(t)]
    if t.shared:
        return (L.T @ w.astype(dtype)).astype(np.float64) @ t.R
    S = np.einsum("no,nob->nb", w, _sel(t.R, idx)).astype(dtype)
    return (L.T @ S).astype(np.float64)


def diagonals(
    terms: Sequence[Term],
    P: np.ndarray,
    dtype: np.dtype,
    nV: int,
    idx: np.ndarray | None = None,
) -> np.ndarray:
    """``lam[n, o, k] = p_kᵀ A_{n,o} p_k`` (for the inputs ``idx``)."""
    n = terms[0].L.shape[0] if idx is None else idx.size
    out = np.zeros((n, nV, P.shape[1]))
    for t in terms:
        left = (_sel(t.L, idx) @ P[t.rows_L].astype(dtype)).astype(np.float64)
        if t.shared:
            right = t.R @ P[t.rows_R]
            out[:, cols(t)] += np.einsum("nk,ok->nok", left, right)
        else:
            right = _sel(t.R, idx) @ P[t.rows_R].astype(dtype)
            out[:, cols(t)] += left[:, None, :] * right
    return out


def chunks(m: int, per_input: int) -> list[np.ndarray]:
    """Index blocks of the ``m`` inputs, each within :data:`CHUNK_BYTES` for
    ``per_input`` float64 numbers an input."""
    size = max(1, CHUNK_BYTES // max(8 * per_input, 1))
    return [np.arange(s, min(s + size, m)) for s in range(0, m, size)]


def _dots(
    A: np.ndarray, rA: np.ndarray, B: np.ndarray, rB: np.ndarray, spec: str
) -> np.ndarray | float:
    """Dot products of embedded vectors over their common rows."""
    _, i, j = np.intersect1d(rA, rB, return_indices=True)
    if i.size == 0:
        return 0.0
    return np.einsum(spec, A[..., i], B[..., j])


def frobenius2_chunk(terms: Sequence[Term], idx: np.ndarray, nV: int) -> float:
    """``sum_{n in idx, o} ||A_{n,o}||_F^2`` from the factors (any terms).

    ``||sum_r sym(u_r v_rᵀ)||^2 = 1/2 sum_{r,s} [(u_r.u_s)(v_r.v_s) +
    (u_r.v_s)(v_r.u_s)]`` with the vectors embedded in ``R^p``.
    """
    Ls = [t.L[idx].astype(np.float64) for t in terms]
    Rs = [
        np.broadcast_to(full_R(t, nV), (idx.size, nV, t.R.shape[-1]))
        if t.shared
        else full_R(t, nV, idx)
        for t in terms
    ]
    total = 0.0
    for r, t1 in enumerate(terms):
        for s, t2 in enumerate(terms):
            uu = _dots(Ls[r], t1.rows_L, Ls[s], t2.rows_L, "na,na->n")
            vv = _dots(Rs[r], t1.rows_R, Rs[s], t2.rows_R, "noa,noa->no")
            uv = _dots(Ls[r], t1.rows_L, Rs[s], t2.rows_R, "na,noa->no")
            vu = _dots(Rs[r], t1.rows_R, Ls[s], t2.rows_L, "noa,na->no")
            if np.ndim(uu) and np.ndim(vv):
                total += 0.5 * float(np.sum(uu[:, None] * vv))
            if np.ndim(uv) and np.ndim(vu):
                total += 0.5 * float(np.sum(uv * vu))
    return total


def frobenius2_shared(terms: Sequence[Term], gram, nV: int) -> float:
    """:func:`frobenius2_chunk` over all inputs for shared ``R``, from the
    Gram matrices ``gram(r, s) = L_rᵀ L_s`` (no pass over the inputs once
    they are cached)."""
    Rs = [full_R(t, nV) for t in terms]
    total = 0.0
    for r, t1 in enumerate(terms):
        for s, t2 in enumerate(terms):
            _, i1, i2 = np.intersect1d(
                t1.rows_L, t2.rows_L, return_indices=True
            )
            vv = _dots(Rs[r], t1.rows_R, Rs[s], t2.rows_R, "oa,oa->")
            if i1.size and np.ndim(vv) == 0 and vv:
                uu = float(np.trace(gram(r, s)[np.ix_(i1, i2)]))
                total += 0.5 * uu * float(vv)
            uv = _dots(t1.L, t1.rows_L, Rs[s], t2.rows_R, "na,oa->no")
            vu = _dots(t2.L, t2.rows_L, Rs[r], t1.rows_R, "na,oa->no")
            if np.ndim(uv) and np.ndim(vu):
                total += 0.5 * float(np.sum(uv * vu))
    return total


def span_rows(t: Term, p: int) -> list[np.ndarray]:
    """Rows of ``R^p`` spanning the columns of the term's matrices: ``L[n]``
    where some ``R[(n,) o]`` is non-zero and ``R[(n,) o]`` where ``L[n]`` is
    (``sym(u ⊗ v)`` spans ``{u, v}``, or nothing when ``u`` or ``v`` is 0)."""
    L, R = t.L.astype(np.float64), t.R.astype(np.float64)
    L_on = np.any(L != 0, axis=1)
    if t.shared:
        L = L * bool(np.any(R))
        R = R * bool(L_on.any())
    else:
        L = L * np.any(R != 0, axis=(1, 2))[:, None]
        R = (R * L_on[:, None, None]).reshape(-1, R.shape[-1])
    out = []
    for F, rows in ((L, t.rows_L), (R, t.rows_R)):
        E = np.zeros((F.shape[0], p))
        E[:, rows] = F
        out.append(E)
    return out
