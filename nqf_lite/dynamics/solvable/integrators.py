"""Reference integrators of the NQF dynamics and Proposition 7 (paper Eqs.
27-32, App. A.15-A.17).

The GLV equation in ``log z`` (:func:`glv_integrate`), full-batch gradient
descent on ``W`` (:func:`gd_nqf`) and its exact discrete GLV
(:func:`gd_discrete_glv`), the matrix flow ``M' = -(H M + M H)`` (Eq. 28,
:func:`matrix_flow`), and the slaved moments of Proposition 7.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from nqf_lite._checks import (
    DIAG_RTOL,
    abundances,
    as_array,
    check_shape,
    check_symmetric,
    fraction,
    glv_system,
    integer,
    nonempty_times,
    positive,
    times,
    vector,
)
from nqf_lite.dynamics.solvable.glv import (
    feature_trajectory,
)

__all__ = [
    "gd_discrete_glv",
    "gd_nqf",
    "glv_integrate",
    "matrix_flow",
    "slaved_moments",
    "slaved_ratio",
]


# -----------------------------------------------------------------------------
# integrators
def _psd_competition(C: np.ndarray) -> None:
    """Raise unless ``C`` is symmetric positive semi-definite (a Gram matrix,
    Eq. 37).

    A diagonal ``C`` needs ``C_kk >= 0``; otherwise a Cholesky factorisation of
    ``C + tol I`` (``tol = 1e-10 max|C|``) must exist, which is cheaper than a
    spectrum.
    """
    check_symmetric("C", C)
    diag = np.diag(C)
    tol = 1e-10 * max(float(np.abs(C).max(initial=0.0)), 1e-300)
    if not np.any(C - np.diag(diag)):
        ok = bool(np.all(diag >= -tol))
    else:
        try:
            np.linalg.cholesky(C + tol * np.eye(C.shape[0]))
            ok = True
        except np.linalg.LinAlgError:
            ok = False
    if not ok:
        raise ValueError(
            "C must be positive semi-definite (C = (8/m) lam^T lam, Eq. 37); "
            "with such a C the abundances can blow up in finite time"
        )


def glv_integrate(
    t: object,
    r: object,
    C: object,
    z0: object,
    method: str = "auto",
    rtol: float = 1e-12,
) -> np.ndarray:
    """Integrate the GLV equation ``z' = z (r - C z)`` (Eq. 32), accurate down
    to ``z ~ 1e-300``.

    The ODE is solved for ``u = ln z`` (``u_k' = r_k - (C e^u)_k``), so
    relative accuracy does not degrade at tiny initial scales (``eps = 1e-30``
    and below).

    Parameters
    ----------
    t : array_like, shape (T,)
    r : array_like, shape (K,)
    C : array_like, shape (K, K)
        Symmetric positive semi-definite competition matrix (Eq. 37).
    z0 : array_like, shape (K,), all > 0
    method : str
        ``"auto"``: exact logistic (:func:`feature_trajectory`) when ``C`` is
        diagonal, else ``"DOP853"``; or any :func:`scipy.integrate.solve_ivp`
        method name, which forces numerical integration.
    rtol : float
        Relative tolerance (``atol = rtol`` on ``ln z``).

    Returns
    -------
    ndarray, shape (T, K)
    """
    t = times("t", t)
    r, C = glv_system(r, C)
    z0 = abundances("z0", z0, r.size)
    if np.any(z0 == 0):
        raise ValueError(
            "z0 must be > 0 (integration in ln z); drop modes with z_k(0) = 0"
        )
    rtol = fraction("rtol", rtol)
    _psd_competition(C)
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {method!r}")
    if method == "auto":
        off = np.abs(C - np.diag(np.diag(C))).max(initial=0.0)
        if off <= DIAG_RTOL * max(np.abs(np.diag(C)).max(initial=0.0), 1e-300):
            return feature_trajectory(t, r, np.diag(C), z0)
        method = "DOP853"
    nonempty_times("t", t)
    implicit = (
        {"jac": lambda _s, u: -C * np.exp(u)[None, :]}
        if method in ("Radau", "BDF", "LSODA")
        else {}
    )
    diag = np.diag(C).copy()
    diagonal = not np.any(C - np.diag(diag))

    def competition(z):
        # diagonal C: an O(K) right-hand side instead of a K x K product
        return diag * z if diagonal else C @ z

    sol = solve_ivp(
        lambda _s, u: (
            r - competition(np.exp(np.minimum(u, 700.0)))
        ),  # clip trial steps only
        (0.0, float(t[-1])),
        np.log(z0),
        method=method,
        t_eval=t,
        rtol=rtol,
        atol=rtol,
        **implicit,
    )
    if not sol.success:
        raise RuntimeError(f"GLV integration failed: {sol.message}")
    return np.exp(sol.y.T)


def gd_discrete_glv(
    r: object, C: object, z0: object, lr: float, n_steps: int
) -> np.ndarray:
    """Exact abundances under full-batch GD on W:
    ``z <- z [1 + (lr/2)(r - C z)]^2`` (Eq. 32, one GD step).

    One GD step multiplies the k-th row of ``P^T W`` by ``1 - lr H~_kk`` with
    ``H~_kk = -(r_k - (C z)_k)/2``, so ``z_k`` is multiplied by its square.

    Parameters
    ----------
    r : array_like, shape (K,)
    C : array_like, shape (K, K)
    z0 : array_like, shape (K,)
    lr : float
        Learning rate ``eta > 0``; GD time is ``t = lr * step``.
    n_steps : int

    Returns
    -------
    ndarray, shape (n_steps + 1, K)
    """
    r, C = glv_system(r, C)
    z = abundances("z0", z0, r.size).copy()
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=0)
    out = np.empty((n_steps + 1, r.size))
    out[0] = z
    for s in range(n_steps):
        z = z * (1.0 + 0.5 * lr * (r - C @ z)) ** 2
        out[s + 1] = z
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"lr = {lr:g} is too large: the discrete GLV diverged (overflow)"
        )
    return out


def _A_y(A: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    A = as_array("A", A, ndim=3)
    if A.shape[1] != A.shape[2]:
        raise ValueError(f"A must have shape (m, p, p), got {A.shape}")
    check_symmetric("A", A)
    return A, vector("y", y, A.shape[0])


def _H(A: np.ndarray, y: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``H = (4/m) sum_n Delta_n A_n`` with ``Delta_n = Tr[M A_n] - y_n`` (Eq.
    27)."""
    delta = np.einsum("nij,ij->n", A, M) - y
    return (4.0 / A.shape[0]) * np.einsum("n,nij->ij", delta, A)


def gd_nqf(
    A: object, y: object, W0: object, lr: float, n_steps: int, every: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch GD on the weights of a ZGZ NQF: ``W <- W - lr H W`` (Eqs. 21,
    27).

    The arithmetic of :meth:`nqf_lite.expansion.form.NQF.gd_step` with
    ``g = B = 0``: the inputs are validated once, then the loop runs plain
    numpy (no per-step checks).

    Parameters
    ----------
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    W0 : array_like, shape (p, d)
    lr : float
    n_steps : int
    every : int
        Record every ``every``-th step.

    Returns
    -------
    t : ndarray, shape (S,)
        GD times ``lr * step`` of the records.
    M : ndarray, shape (S, p, p)
        Recorded ``M = W W^T``.

    Raises
    ------
    ValueError
        On bad inputs, or if the iteration overflows (``lr`` too large).
    """
    A, y = _A_y(A, y)
    W = as_array("W0", W0, ndim=2).copy()
    if W.shape[0] != A.shape[1]:
        raise ValueError(
            f"W0 must have {A.shape[1]} rows (p), got shape {W.shape}"
        )
    lr = positive("lr", lr)
    n_steps = integer("n_steps", n_steps, minimum=0)
    every = integer("every", every, minimum=1)
    m, p = A.shape[0], A.shape[1]
    A2 = A.reshape(m, p * p)
    scale = 4.0 / m
    steps = np.arange(0, n_steps + 1, every)
    rec = np.empty((steps.size, p, p))
    rec[0] = W @ W.T
    for s in range(1, n_steps + 1):
        M = W @ W.T
        H = (scale * ((A2 @ M.ravel() - y) @ A2)).reshape(p, p)
        W = W - lr * (H @ W)
        if s % every == 0:
            rec[s // every] = W @ W.T
    if not np.all(np.isfinite(rec)):
        raise ValueError(
            f"lr = {lr:g} is too large: gradient descent diverged (overflow)"
        )
    return lr * steps, rec


def matrix_flow(
    t: object, A: object, y: object, M0: object, rtol: float = 1e-12
) -> np.ndarray:
    """Integrate the gradient flow ``M' = -(H M + M H)`` (Eq. 28) with DOP853.

    A reference for the closed forms (no structural assumption on ``A``).

    Parameters
    ----------
    t : array_like, shape (T,)
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    M0 : array_like, shape (p, p), symmetric
    rtol : float
        Relative tolerance; ``atol = rtol * max|M0|``.

    Returns
    -------
    ndarray, shape (T, p, p)
    """
    t = times("t", t)
    A, y = _A_y(A, y)
    p = A.shape[1]
    M0 = as_array("M0", M0, ndim=2)
    check_shape("M0", M0, (p, p))
    check_symmetric("M0", M0)
    rtol = fraction("rtol", rtol)

    def rhs(_s: float, v: np.ndarray) -> np.ndarray:
        M = v.reshape(p, p)
        H = _H(A, y, M)
        return -(H @ M + M @ H).ravel()

    nonempty_times("t", t)
    atol = rtol * max(np.abs(M0).max(initial=0.0), 1e-300)
    sol = solve_ivp(
        rhs,
        (0.0, float(t[-1])),
        M0.ravel(),
        method="DOP853",
        t_eval=t,
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:
        raise RuntimeError(f"matrix flow integration failed: {sol.message}")
    return sol.y.T.reshape(t.size, p, p)


# -----------------------------------------------------------------------------
# Proposition 7
def slaved_ratio(M: object, P: object) -> np.ndarray:
    """Normalised off-diagonals ``M~_ij / sqrt(z_i z_j)`` with ``M~ = P^T M P``
    (Proposition 7).

    Under Assumption 1 this ratio is conserved by gradient flow (Eq. 30) and,
    exactly, by full-batch GD (each step rescales row k of ``P^T W`` by
    ``1 - lr H~_kk``).

    Parameters
    ----------
    M : array_like, shape (..., p, p)
    P : array_like, shape (p, p), orthogonal

    Returns
    -------
    ndarray, shape (..., p, p)
        Unit diagonal (the Cauchy-Schwarz bound gives |ratio| <= 1).
    """
    M = as_array("M", M)
    P = as_array("P", P, ndim=2)
    if M.ndim < 2 or M.shape[-2:] != P.shape or P.shape[0] != P.shape[1]:
        raise ValueError(
            f"M must have shape (..., p, p) matching P {P.shape}, got "
            f"{M.shape}"
        )
    Mt = np.swapaxes(P, 0, 1) @ M @ P
    z = np.einsum("...kk->...k", Mt)
    if np.any(z <= 0):
        raise ValueError(
            "every z_k = (P^T M P)_kk must be > 0 to normalise the "
            "off-diagonals"
        )
    s = np.sqrt(z)
    return Mt / (s[..., :, None] * s[..., None, :])


def slaved_moments(M0: object, P: object, z: object) -> np.ndarray:
    """Full ``M(t)`` from the abundances ``z(t)`` (Proposition 7, Eq. 30;
    Theorem 6, Eq. 38).

    ``M(t) = P D M~(0) D P^T`` with ``D = diag(sqrt(z(t)/z(0)))``: the
    off-diagonals of ``M~`` follow the diagonal.

    Parameters
    ----------
    M0 : array_like, shape (p, p)
    P : array_like, shape (p, p)
    z : array_like, shape (T, p), all > 0 where ``z_k(0) > 0``

    Returns
    -------
    ndarray, shape (T, p, p)
    """
    M0 = as_array("M0", M0, ndim=2)
    P = as_array("P", P, ndim=2)
    check_shape("M0", M0, P.shape)
    z = as_array("z", z, ndim=2)
    if z.shape[1] != P.shape[0]:
        raise ValueError(f"z must have shape (T, {P.shape[0]}), got {z.shape}")
    Mt0 = P.T @ M0 @ P
    z0 = np.diag(Mt0)
    d = np.sqrt(np.divide(z, z0, out=np.zeros_like(z), where=z0 > 0))
    return np.einsum("ik,tk,kl,tl,jl->tij", P, d, Mt0, d, P)
