"""The runs of the chapter on modes that switch on one by one (Sec. 6).

- :func:`abundances`, :func:`mode_error`: a trajectory of ``M`` read on a
  basis of modes, and its distance to a closed form;
- :func:`rescaled_run`: the GLV flow in rescaled time ``t / ln(1/eps)``
  (Thms 6, 8, 9);
- :func:`orthogonal_samples_run`: GD and Thm 5 on orthogonal samples;
- :func:`proportional_run`, :func:`isotropic_structures`,
  :func:`isotropic_run`: Thm 4's proportional and Thm 7's isotropic
  samples, closed forms against the flow;
- :func:`projector_gd`, :func:`projector_gd_run`, :func:`thm16_draw`,
  :func:`unseen_label_shift`: GD on data on orthogonal projectors against
  the exact map, and labels that break the theorem's condition (Thm 16);
- :func:`saxe_problem`, :func:`saxe_gd`, :func:`linear_gd_singular_values`,
  :func:`cor4_problem`, :func:`cor4_draw`: the two-layer linear network of
  Cor. 4 (Saxe et al.).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import ortho_group

from nqf_lite._checks import as_array, integer, positive
from nqf_lite.dynamics import projectors as pj
from nqf_lite.dynamics import solvable as S

__all__ = [
    "abundances",
    "cor4_draw",
    "cor4_problem",
    "isotropic_run",
    "isotropic_structures",
    "linear_gd_singular_values",
    "mode_error",
    "orthogonal_samples_run",
    "projector_gd",
    "projector_gd_run",
    "proportional_run",
    "rescaled_run",
    "saxe_gd",
    "saxe_problem",
    "thm16_draw",
    "unseen_label_shift",
]


def abundances(M: object, P: object) -> np.ndarray:
    """The abundances ``z_k = p_k^T M p_k`` along the time axis of ``M``.

    With commuting structure matrices and eigenbasis ``P`` (columns
    ``p_k``) the matrix flow closes on these diagonal entries, the GLV
    form (Eq. 32).

    Parameters
    ----------
    M : array_like, shape (T, p, p)
    P : array_like, shape (p, K)

    Returns
    -------
    ndarray, shape (T, K)
    """
    M = as_array("M", M, ndim=3)
    P = as_array("P", P, ndim=2)
    if M.shape[1:] != (P.shape[0],) * 2:
        raise ValueError(
            f"M must have shape (T, p, p) with p = {P.shape[0]} (P's rows), "
            f"got {M.shape}"
        )
    return np.einsum("ki,tkl,li->ti", P, M, P)


def mode_error(z: object, z_ref: object) -> float:
    """Largest error of each mode, in units of that mode's largest value
    (``z``, ``z_ref`` of shape ``(T, K)``), largest over the modes."""
    z, z_ref = as_array("z", z, ndim=2), as_array("z_ref", z_ref, ndim=2)
    if z.shape != z_ref.shape:
        raise ValueError(f"z {z.shape} and z_ref {z_ref.shape} must match")
    return (np.abs(z - z_ref).max(axis=0) / np.abs(z_ref).max(axis=0)).max()


def rescaled_run(r: object, C: object, eps: float, tau: object) -> dict:
    """The GLV flow (Eq. 32) from ``z_k(0) = eps`` in rescaled time.

    Time is ``tau = t / ln(1/eps)``: mode ``k`` switches on near ``tau =
    1/r_k`` (Thm 8, Eq. 158), its 10-90 % width falls as ``ln(81) / (r_k
    ln(1/eps))``, and between switch-ons the loss rests on the plateaus of
    Thm 9 (Eq. 163).

    Parameters
    ----------
    r : array_like, shape (K,)
    C : array_like, shape (K, K)
    eps : float
        The initial abundance, ``0 < eps``.
    tau : array_like, shape (T,)
        Rescaled times.

    Returns
    -------
    dict
        ``frac``: ``z_k / z_k^inf`` (T, K); ``E``: the excess loss (T,);
        ``width``: the 10-90 % widths in ``tau`` (K,), ``nan`` where the 10 %
        level lies below ``z_k(0)``; ``t_half``: the half-saturation times
        in ``tau`` (K,).
    """
    e = positive("eps", eps)
    tau = as_array("tau", tau, ndim=1)
    r, C = np.asarray(r), np.asarray(C)
    z_inf = r / np.diag(C)
    t_e, z0_e = tau * np.log(1 / e), np.full(len(r), e)
    z_e = S.glv_integrate(t_e, r, C, z0_e, method="DOP853")
    frac = z_e / z_inf
    t10, t90 = (S.crossing_time(tau, frac, level) for level in (0.1, 0.9))
    valid = e < 0.1 * z_inf  # the 10 % level lies above z_k(0)
    E_e, t_half = S.excess_loss(z_e, r, C), S.crossing_time(tau, frac, 0.5)
    width = np.where(valid, t90 - t10, np.nan)
    return dict(frac=frac, E=E_e, width=width, t_half=t_half)


def isotropic_structures(p: int, c: float) -> np.ndarray:
    """Isotropic samples (Thm 7): ``A_a = sqrt(c m) E_a`` over an orthonormal
    basis ``E_a`` of the symmetric ``p x p`` matrices, ``m = p (p + 1) / 2``.

    Their second-moment tensor is ``(1/m) sum_a A_a (x) A_a = (c/2) (dd +
    dd)``, Assumption 2 (Eq. 40).

    Returns
    -------
    ndarray, shape (m, p, p)
    """
    p, c = integer("p", p), positive("c", c)
    pairs = [(i, j) for i in range(p) for j in range(i, p)]
    basis = np.zeros((len(pairs), p, p))
    for n, (i, j) in enumerate(pairs):
        basis[n, i, j] = basis[n, j, i] = 1.0 if i == j else 1 / np.sqrt(2)
    return np.sqrt(c * len(pairs)) * basis


def projector_gd(
    A: object,
    y: object,
    Pi: object,
    z0: object,
    W0: object,
    lr: float,
    n_steps: int,
    every: int,
) -> tuple[np.ndarray, np.ndarray, float]:
    """GD on ``W`` for data on orthogonal projectors, and the exact map.

    Under Eqs. 253-254 GD keeps ``M = W W^T`` in the span of the projectors
    (Eq. 255) and each coordinate follows ``z_a <- z_a [1 + lr (gamma_a -
    kappa_a z_a)]^2`` (Thm 16, Eq. 262's one-step map).

    Parameters
    ----------
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    Pi : array_like, shape (R, p, p)
        The projectors.
    z0 : array_like, shape (R,)
        The start's coordinates ``z_a(0)``.
    W0 : array_like, shape (p, d)
        Start, with ``M(0) = sum_a z_a(0) Pi_a``.
    lr : float
    n_steps, every : int
        Steps, and how often ``z`` is recorded.

    Returns
    -------
    z_gd, z_map : ndarray, shape (n_steps // every + 1, R)
        The coordinates ``Tr[M Pi_a] / rank`` of GD, and the map's.
    off : float
        Largest off-span part of GD's ``M``, relative to ``max |M|``.
    """
    every = integer("every", every)
    _, M = S.gd_nqf(A, y, W0, lr, n_steps, every=every)
    z_gd, off_gd = pj.span_coordinates(M, Pi)
    co = pj.projector_coefficients(A, y, Pi)
    z_map = pj.projector_gd_map(co.gamma, co.kappa, z0, lr, n_steps)
    return z_gd, z_map[::every], off_gd.max() / np.abs(M).max()


def unseen_label_shift(
    A: object, y: object, Pi: object, g: np.random.Generator
) -> np.ndarray:
    """A random label shift ``dy`` that the traces of Thm 16 cannot see.

    ``dy`` (of the norm of ``y``) is orthogonal to every column ``lam_a =
    Tr[A_n Pi_a] / rank_a``, so ``y + dy`` leaves the constants ``gamma_a``
    of Eq. 253's traces unchanged while it breaks the condition Eq. 253
    itself: the control of the theorem's hypothesis.

    Parameters
    ----------
    A : array_like, shape (m, p, p)
    y : array_like, shape (m,)
    Pi : array_like, shape (R, p, p)
    g : numpy.random.Generator
        Draws ``m`` standard normals.

    Returns
    -------
    ndarray, shape (m,)
    """
    A, Pi = as_array("A", A, ndim=3), as_array("Pi", Pi, ndim=3)
    y = as_array("y", y, ndim=1)
    if len(y) != len(A):
        raise ValueError(f"y must hold one label per A_n ({len(A)})")
    ranks = np.einsum("aii->a", Pi).round()
    lam = np.einsum("nij,aji->na", A, Pi) / ranks
    frame = np.linalg.qr(lam)[0]
    dy = g.standard_normal(len(y))
    dy -= frame @ (frame.T @ dy)
    dy *= np.linalg.norm(y) / np.linalg.norm(dy)
    return dy


def thm16_draw(
    g: np.random.Generator,
    ranks: Sequence[int],
    t: object,
    d: int,
    p: int = 12,
    m: int = 10,
    lr: float = 0.01,
    n_steps: int = 2000,
    every: int = 10,
) -> dict:
    """One random problem of Thm 16, a random start in the span, and a
    generic start.

    Draws, from ``g`` and in this order: ``gamma_a ~ U(-0.5, 1)``,
    ``kappa_a ~ U(0.3, 1)``, the data
    (:func:`~nqf_lite.dynamics.projectors.projector_data`), ``z_a(0) =
    10^U(-5, 0)``, a start ``W(0)`` in the span
    (:func:`~nqf_lite.dynamics.projectors.span_start`) and a generic
    Gaussian start of the same mean size.

    Returns
    -------
    dict
        ``flow``: the integrated flow from the start in the span vs Eqs.
        256-257; ``gd``: GD vs the exact map; ``ctrl``: the flow from the
        generic start vs Eqs. 256-257 fed its own coordinates (each a
        :func:`mode_error`).
    """
    ranks = np.asarray(ranks)
    R = len(ranks)
    gam, kap = g.uniform(-0.5, 1.0, R), g.uniform(0.3, 1.0, R)
    A_r, y_r, Pi_r = pj.projector_data(ranks, gam, kap, p=p, m=m, rng=g)
    co_r = pj.projector_coefficients(A_r, y_r, Pi_r)
    z0_r = 10.0 ** g.uniform(-5.0, 0.0, R)
    W0_r = pj.span_start(z0_r, Pi_r, d, g)

    def span_flow(W: np.ndarray) -> np.ndarray:
        # the coordinates on the projectors of the integrated flow from W
        return pj.span_coordinates(S.matrix_flow(t, A_r, y_r, W @ W.T), Pi_r)[
            0
        ]

    # control: a generic start of the same mean size, M(0) off the span
    W0_g = g.standard_normal((p, d)) * np.sqrt(z0_r.mean() / d)
    z_g = span_flow(W0_g)

    def th(z0: np.ndarray) -> np.ndarray:
        return S.projector_logistic(t, co_r.gamma, co_r.kappa, z0)

    z_gd_r, z_map_r, _ = projector_gd(
        A_r, y_r, Pi_r, z0_r, W0_r, lr, n_steps, every
    )
    flow = mode_error(span_flow(W0_r), th(z0_r))
    gd = mode_error(z_gd_r, z_map_r)
    return dict(flow=flow, gd=gd, ctrl=mode_error(z_g, th(z_g[0])))


def linear_gd_singular_values(
    U0: object,
    V0: object,
    X: object,
    Y: object,
    lr: float,
    n_steps: int,
    every: int,
) -> np.ndarray:
    """GD on the two-layer linear network ``y = U V^T x`` (Cor. 4): the top
    three singular values of ``U V^T`` every ``every`` steps.

    The loss is ``||U V^T X - Y||^2 / (n n_out)`` (``n`` inputs, the
    columns of ``X``; ``n_out`` outputs, the rows of ``Y``); its singular
    values follow Eq. 288 (whitened inputs) or Eq. 271 in the gradient-flow
    limit.

    Parameters
    ----------
    U0 : array_like, shape (n_out, h)
    V0 : array_like, shape (n_in, h)
    X : array_like, shape (n_in, n)
    Y : array_like, shape (n_out, n)
    lr : float
    n_steps, every : int

    Returns
    -------
    ndarray, shape (n_steps // every + 1, 3)
    """
    U, V = as_array("U0", U0, ndim=2), as_array("V0", V0, ndim=2)
    X_g, Y = as_array("X", X, ndim=2), as_array("Y", Y, ndim=2)
    if Y.shape != (U.shape[0], X_g.shape[1]) or V.shape[0] != X_g.shape[0]:
        raise ValueError(
            f"shapes must be U0 (n_out, h), V0 (n_in, h), X (n_in, n), Y "
            f"(n_out, n); got {U.shape}, {V.shape}, {X_g.shape}, {Y.shape}"
        )
    lr, every = positive("lr", lr), integer("every", every)
    n_steps = integer("n_steps", n_steps, minimum=0)
    n = X_g.shape[1] * Y.shape[0]
    out = []
    for step in range(n_steps + 1):
        if step % every == 0:
            out.append(np.linalg.svd(U @ V.T, compute_uv=False)[:3])
        G = 2 * (U @ V.T @ X_g - Y) @ X_g.T / n
        U, V = U - lr * G @ V, V - lr * G.T @ U
    return np.array(out)


def cor4_problem(
    g: np.random.Generator, n_in: int, n_out: int, hidden: int, n_x: int
) -> dict:
    """A random problem of Cor. 4 with inputs that are not whitened.

    Inputs with covariance ``Vs diag(sig) Vs^T``, a teacher whose right
    singular vectors are its first three eigenvectors, and a random start
    (Eqs. 266-268).

    Returns
    -------
    dict
        ``X`` (n_in, n_x), ``Y`` (n_out, n_x), ``s`` and ``sig`` (3,): the
        teacher's singular values and the inputs' variances along them;
        ``u`` (n_out, n_out), ``v`` (n_in, 3); ``U0``, ``V0``, ``rho0``
        (3,).
    """
    sig = 2.0 ** (g.choice([-1, 1], n_in) * g.uniform(0.5, 1.0, n_in))
    Vs = ortho_group.rvs(n_in, random_state=g)
    O = ortho_group.rvs(n_x, random_state=g)[:n_in]
    X_g = np.sqrt(n_x) * Vs @ np.diag(np.sqrt(sig)) @ O
    s_g = g.uniform(0.5, 1.5, 3)
    u_g, v_g = ortho_group.rvs(n_out, random_state=g), Vs[:, :3]
    rho0_g = 10.0 ** g.uniform(-4.0, -3.0, 3)
    r_g = ortho_group.rvs(hidden, random_state=g)[:, :3]
    U0, V0 = (T @ np.diag(np.sqrt(rho0_g)) @ r_g.T for T in (u_g, v_g))
    pb = dict(X=X_g, Y=u_g @ np.diag(s_g) @ v_g.T @ X_g, s=s_g, sig=sig[:3])
    return pb | dict(u=u_g, v=v_g, U0=U0, V0=V0, rho0=rho0_g)


def _descending(x: np.ndarray) -> np.ndarray:
    return -np.sort(-x, axis=-1)


def cor4_draw(
    pb: dict, lrs: Sequence[float], t_end: float, n_records: int = 400
) -> dict:
    """Cor. 4 on one problem of :func:`cor4_problem`: its conditions, and GD
    at each learning rate against the exact map and the flow.

    Returns
    -------
    dict
        ``cond``: the largest residual of Eqs. 267-268 on the data with
        ``tau_a = s_a sig_a / n_out``, ``c_a = sig_a / n_out``; for each
        ``lr``: ``map`` (GD vs ``rho_a <- rho_a [1 + 2 lr (tau_a - c_a
        rho_a)]^2``, relative), ``gap`` (GD vs Eq. 271) and ``whitened``
        (GD vs the whitened formula, Eq. 288).
    """
    n_records = integer("n_records", n_records)
    n_out, n_in = pb["Y"].shape[0], pb["X"].shape[0]
    s_c4, sig_c4, rho0_g = pb["s"], pb["sig"], pb["rho0"]
    # the samples S_mu = e_o x_n^T and their labels y_mu = Y[o, n]
    S_c4 = np.einsum("oa,in->noai", np.eye(n_out), pb["X"])
    S_c4 = S_c4.reshape(-1, n_out, n_in)
    y_c4 = pb["Y"].T.ravel()
    co = pj.linear_network_coefficients(S_c4, y_c4, pb["u"].T, pb["v"].T)
    tau_err = np.abs(co.tau - s_c4 * sig_c4 / n_out).max()
    c_err = np.abs(co.c - sig_c4 / n_out).max()
    row = dict(cond=max(co.residual, tau_err, c_err))
    for lr_c4 in lrs:
        n_c4 = int(round(t_end / lr_c4))
        every_c4 = n_c4 // n_records
        sv_c4 = linear_gd_singular_values(
            pb["U0"], pb["V0"], pb["X"], pb["Y"], lr_c4, n_c4, every_c4
        )
        t_grid = lr_c4 * every_c4 * np.arange(len(sv_c4))
        z_map = pj.projector_gd_map(2 * co.tau, co.c, 2 * rho0_g, lr_c4, n_c4)
        gd_map = z_map[::every_c4] / 2
        exact = S.saxe_logistic(t_grid, co.tau, co.c, rho0_g)
        whitened = S.saxe_logistic(t_grid, s_c4 / n_out, 1 / n_out, rho0_g)
        gap, white, rel_map = (
            np.abs(sv_c4 - _descending(ref)).max()
            for ref in (exact, whitened, gd_map)
        )
        rel_map = rel_map / sv_c4.max()
        row[lr_c4] = dict(map=rel_map, gap=gap, whitened=white)
    return row


def proportional_run(
    g: np.random.Generator, t: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Theorem 4's closed form and the matrix flow, proportional samples.

    Three samples ``A_n = c_n A``, ``A = P diag(lam) P^T`` with ``P`` a
    random orthogonal ``4 x 4`` (drawn first from ``g``),
    ``lam = (1, 1/2, 1/4, -1/2)``, ``c = (1, 0.6, -0.8)``, labels
    ``y = (1, 0.4, -0.3)``, and a random start ``W(0) = 0.05 Z``, ``Z``
    standard normal ``(4, 3)`` (drawn next). The closed form is
    ``W(t) = P exp(-xi(t) lam) P^T W(0)`` with ``alpha = (4/m) sum c_n^2``,
    ``beta = (4/m) sum c_n y_n`` (Eqs. 33-34). Returns ``P``, ``lam`` and
    ``M = W W^T`` at the times ``t`` (from 0) of the closed form and of the
    integrated flow, each of shape ``(len(t), 4, 4)``.
    """
    t = as_array("t", t, ndim=1)
    P = ortho_group.rvs(4, random_state=g)
    lam = np.array([1.0, 0.5, 0.25, -0.5])
    c_n, y_n = np.array([1.0, 0.6, -0.8]), np.array([1.0, 0.4, -0.3])
    A = c_n[:, None, None] * (P @ np.diag(lam) @ P.T)
    alpha, beta = 4 / 3 * (c_n**2).sum(), 4 / 3 * (c_n * y_n).sum()
    W0 = 0.05 * g.standard_normal((4, 3))
    z0 = np.diag(P.T @ W0 @ W0.T @ P)
    xi = S.proportional_samples_xi(t, lam, z0, alpha, beta)
    W = S.proportional_samples_W(xi, P, lam, W0)
    M = W @ np.swapaxes(W, 1, 2)
    return P, lam, M, S.matrix_flow(t, A, y_n, W0 @ W0.T)


def isotropic_run(
    g: np.random.Generator, t: object, A: object, c: float
) -> dict[str, np.ndarray]:
    """Theorem 7 on isotropic samples ``A``: Riccati and Eq. 42 vs the flow.

    From ``g``, in this order: labels ``y ~ N(0, I_m)``, rescaled so that
    the eigenvalues of ``Y = (4/m) sum y_n A_n`` lie in ``[-1, 1]``; a start
    ``M(0) = 10^-3 B B^T``, ``B`` standard normal; and eigenvalues
    ``z(0) = 10^-3 u``, ``u ~ U(0.5, 2)``, of a second start
    ``M(0) = Q diag(z(0)) Q^T`` on the eigenvectors ``Q`` of ``Y``.

    The samples ``A`` (shape ``(m, p, p)``) satisfy Assumption 2 (Eq. 40)
    with the constant ``c``.

    Returns
    -------
    dict
        ``M``, ``M_flow``: the Riccati closed form (Eq. 41) and the flow
        from the first start; ``gamma``: the eigenvalues of ``Y``; ``z42``,
        ``z42_flow``: Eq. 42 and the diagonal of ``Q^T M Q`` of the flow
        ``M42_flow`` from the second start; ``M42_rot``: that ``Q^T M Q``.
    """
    t, A = as_array("t", t, ndim=1), as_array("A", A, ndim=3)
    c = positive("c", c)
    m, p = len(A), A.shape[1]
    y = g.standard_normal(m)
    Y = 4 / m * np.einsum("n,nij->ij", y, A)
    norm_Y = np.abs(np.linalg.eigvalsh(Y)).max()
    y, Y = y / norm_Y, Y / norm_Y
    B0 = g.standard_normal((p, p))
    M0 = 1e-3 * B0 @ B0.T
    out = dict(M=S.isotropic_trajectory(t, Y, c, M0))
    out["M_flow"] = S.matrix_flow(t, A, y, M0)
    gamma, Q = np.linalg.eigh(Y)
    z0 = 1e-3 * g.uniform(0.5, 2.0, p)
    M42_flow = S.matrix_flow(t, A, y, Q @ np.diag(z0) @ Q.T)
    # the flow in the eigenbasis of Y: it should stay diagonal
    M42_rot = np.einsum("ki,tkl,lj->tij", Q, M42_flow, Q)
    out.update(gamma=gamma, M42_flow=M42_flow, M42_rot=M42_rot)
    out["z42_flow"] = np.einsum("tii->ti", M42_rot)
    out["z42"] = S.isotropic_logistic(t, gamma, c, z0)
    return out


def saxe_problem(
    g: np.random.Generator,
    s: object,
    n_in: int,
    hidden: int,
    n_x: int,
    rho0: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Whitened data, a teacher and the balanced aligned start of Cor. 4.

    From ``g``, in this order: ``n_in`` rows of a random orthogonal
    ``n_x x n_x`` times ``sqrt(n_x)`` as inputs ``X`` (so
    ``X X^T / n_x = I``), the teacher's output frame ``U_t`` (random
    orthogonal ``n_out x n_out``, ``n_out = len(s)``) and right singular
    vectors (the first ``n_out`` columns of a random orthogonal
    ``n_in x n_in``). Labels ``Y = U_t diag(s) V_t^T X``; the start is
    ``U(0) = sqrt(rho0) U_t R^T``, ``V(0) = sqrt(rho0) V_t R^T`` with
    ``R`` the first ``n_out`` columns of ``I_hidden`` (Eq. 288).

    Returns
    -------
    X : ndarray, shape (n_in, n_x)
    Y : ndarray, shape (n_out, n_x)
    U0 : ndarray, shape (n_out, hidden)
    V0 : ndarray, shape (n_in, hidden)
    """
    s = as_array("s", s, ndim=1)
    n_out, rho0 = len(s), positive("rho0", rho0)
    n_in, hidden = integer("n_in", n_in), integer("hidden", hidden)
    n_x = integer("n_x", n_x)
    if not (n_out <= min(n_in, hidden) and n_in <= n_x):
        raise ValueError(
            f"need len(s) <= n_in, hidden and n_in <= n_x; got len(s) = "
            f"{n_out}, n_in = {n_in}, hidden = {hidden}, n_x = {n_x}"
        )
    X = np.sqrt(n_x) * ortho_group.rvs(n_x, random_state=g)[:n_in]
    U_t = ortho_group.rvs(n_out, random_state=g)
    V_t = ortho_group.rvs(n_in, random_state=g)[:, :n_out]
    Y = U_t @ np.diag(s) @ V_t.T @ X
    R = np.eye(hidden)[:, :n_out]  # orthonormal directions r_a
    U0, V0 = (np.sqrt(rho0) * (T @ R.T) for T in (U_t, V_t))
    return X, Y, U0, V0


def orthogonal_samples_run(
    lam: object, y: object, eps: float, lr: float, n_steps: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GD and Theorem 5's ``xi``-ODE (Eq. 36) on orthogonal samples.

    The samples are ``A_n = diag(lam[n])`` (orthogonal: no mode belongs to
    two samples), the start ``W(0) = sqrt(eps) I`` (every ``z_k(0) =
    eps``); GD on ``W`` (:func:`nqf_lite.dynamics.solvable.gd_nqf`) is
    recorded every step. ``lam`` has shape ``(m, p)``, ``y`` ``(m,)``.

    Returns
    -------
    t : ndarray, shape (T,)
    res_gd, res_th : ndarray, shape (T, m)
        The per-sample residuals ``Delta_n = Tr[M A_n] - y_n``, of GD and
        of the theorem.
    """
    lam, y = as_array("lam", lam, ndim=2), as_array("y", y, ndim=1)
    if len(y) != len(lam):
        raise ValueError(f"y must have {len(lam)} labels, got {len(y)}")
    p, eps = lam.shape[1], positive("eps", eps)
    A = np.stack([np.diag(v) for v in lam])
    t, M = S.gd_nqf(A, y, np.sqrt(eps) * np.eye(p), lr, n_steps)
    res_gd = np.einsum("tkk,nk->tn", M, lam) - y
    xi = S.orthogonal_samples_xi(t, lam, y, np.full(p, eps))
    z = S.orthogonal_samples_z(xi, lam, np.full(p, eps))
    return t, res_gd, z @ lam.T - y


def projector_gd_run(
    A: object,
    y: object,
    Pi: object,
    z0: object,
    W0: object,
    lr: float,
    t: object,
    z_th: object,
) -> dict:
    """:func:`projector_gd` up to the last time of the grid ``t``, recorded
    on ``t`` (``t`` evenly spaced from 0); GD's coordinates ``z``, off-span
    part ``off``, largest relative gap ``map_err`` to the exact GD map (Eq.
    262) and largest gap ``gap`` to the flow's ``z_th`` (Eqs. 256-257)."""
    t, lr = as_array("t", t, ndim=1), positive("lr", lr)
    z_th = as_array("z_th", z_th, ndim=2)
    if len(z_th) != len(t):
        raise ValueError(
            f"z_th must have {len(t)} rows (times), got {len(z_th)}"
        )
    n_steps = int(round(t[-1] / lr))
    every = n_steps // (len(t) - 1)
    z, z_map, off = projector_gd(A, y, Pi, z0, W0, lr, n_steps, every)
    map_err, gap = np.abs(z / z_map - 1).max(), np.abs(z - z_th).max()
    return dict(z=z, off=off, map_err=map_err, gap=gap)


def saxe_gd(
    U0: object,
    V0: object,
    X: object,
    Y: object,
    lr: float,
    t_end: float,
    records: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`linear_gd_singular_values` up to the time ``t_end``, recorded
    ``records`` times: the times and the top singular values (Cor. 4)."""
    lr, t_end = positive("lr", lr), positive("t_end", t_end)
    n_steps = int(round(t_end / lr))
    every = n_steps // integer("records", records)
    sv = linear_gd_singular_values(U0, V0, X, Y, lr, n_steps, every)
    return lr * every * np.arange(len(sv)), sv
