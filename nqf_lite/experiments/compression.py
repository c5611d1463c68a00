"""The runs of the compression chapter: a layer and its compressed twin
(Theorem 3), a real tanh network against its twin (App. B.5), and the error
of a twin that is too small (Corollary 3).

- :func:`train_with_twin`: a width-``d`` NQF and its twin side by side on the
  training and the test inputs;
- :func:`final_test_gap`: the twin's gap on test inputs after closed GD;
- :func:`tanh_network_errors`: real bias-free tanh networks against the twins
  of their NQF;
- :func:`in_subspace`, :func:`lipschitz_step`, :func:`corollary3_twins`,
  :func:`growth_exponent`: Corollary 3 (Eqs. 237-244).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nqf_lite._checks import as_array, integer, nqf, positive, weights, width
from nqf_lite.dynamics.compression import (
    compress,
    compression_residual,
    data_subspace,
    k_V,
)
from nqf_lite.expansion.form import NQF
from nqf_lite.expansion.order import moments
from nqf_lite.experiments.train import descend

__all__ = [
    "corollary3_twins",
    "final_test_gap",
    "growth_exponent",
    "in_subspace",
    "lipschitz_step",
    "tanh_network_errors",
    "train_with_twin",
]


def _gap(*pairs: tuple[np.ndarray, np.ndarray]) -> float:
    """The largest entry of ``|a - b|`` over the pairs ``(a, b)``."""
    return max(np.max(np.abs(a - b)) for a, b in pairs)


def train_with_twin(
    model: NQF,
    test: NQF,
    twin: tuple[NQF, np.ndarray, float],
    W: object,
    y: np.ndarray,
    lr: float,
    steps: int,
    batches: Sequence[np.ndarray] | None = None,
) -> tuple[float, float, np.ndarray]:
    """Train a width-``d`` NQF and its twin side by side (Theorem 3).

    Both take ``steps`` (S)GD steps on the same minibatches; the twin's test
    predictions use the test structure with the twin's rescaling,
    ``(d'/d) A(x_test)``.

    Parameters
    ----------
    model : NQF
        The width-``d`` model on the training inputs.
    test : NQF
        The same network's NQF on the test inputs.
    twin : (NQF, ndarray, float)
        ``(small_model, W_small, lr_small)`` of
        :func:`~nqf_lite.dynamics.compression.compress`.
    W : array_like, shape (p, d)
    y : ndarray
        Training targets.
    lr : float
    steps : int
    batches : sequence of int arrays, optional
        One minibatch a step; full batch when omitted.

    Returns
    -------
    gap_train, gap_test : float
        Largest ``|f - f_twin|`` over the steps on the training and the test
        inputs.
    history : ndarray, shape (steps, 4)
        The first prediction of the model and the twin on the training
        inputs, then on the test inputs, after every step.
    """
    model, test = nqf("model", model), nqf("test", test)
    W, steps = weights("W", W, model.p), integer("steps", steps)
    if batches is not None and len(batches) < steps:
        raise ValueError(f"batches must hold at least {steps} minibatches")
    small, W_small, lr_small = twin
    scale = W_small.shape[1] / W.shape[1]
    test_small = NQF(test.A * scale, g=test.g, B=test.B, f0=test.f0)
    preds = []
    for t in range(steps):
        batch = None if batches is None else batches[t]
        W = model.gd_step(W, y, lr, batch=batch)
        W_small = small.gd_step(W_small, y, lr_small, batch=batch)
        pairs = (
            (model, W),
            (small, W_small),
            (test, W),
            (test_small, W_small),
        )
        preds.append([m.predict_W(w) for m, w in pairs])
    gap_train = _gap(*((f[0], f[1]) for f in preds))
    gap_test = _gap(*((f[2], f[3]) for f in preds))
    history = [[f.ravel()[0] for f in p] for p in preds]
    return gap_train, gap_test, np.array(history)


def final_test_gap(
    model: NQF, test: NQF, W: object, y: np.ndarray, lr: float, steps: int
) -> float:
    """The twin's largest gap on the test inputs after ``steps`` GD steps.

    The width-``d`` layer and its twin
    (:func:`~nqf_lite.dynamics.compression.compress`) run the closed
    dynamics (Theorem 2, exact); Theorem 3 binds them on the training inputs
    only.

    Parameters
    ----------
    model, test : NQF
        The network's NQF on the training and on the test inputs.
    W : array_like, shape (p, d)
    y : ndarray
    lr : float
    steps : int

    Returns
    -------
    float
    """
    model, test = nqf("model", model), nqf("test", test)
    W, steps = weights("W", W, model.p), integer("steps", steps)
    d = W.shape[1]
    small, W_small, lr_small = compress(model, W, lr)
    d_small = W_small.shape[1]
    (M, mu), _ = model.train_closed(*moments(W), d, y, lr, steps)
    (M_s, mu_s), _ = small.train_closed(
        *moments(W_small), d_small, y, lr_small, steps
    )
    test_small = NQF(test.A * d_small / d, g=test.g, B=test.B, f0=test.f0)
    return _gap((test.predict(M, mu), test_small.predict(M_s, mu_s)))


def tanh_network_errors(
    model: NQF,
    X: object,
    y: np.ndarray,
    W_init: object,
    lr: float,
    steps: int,
) -> np.ndarray:
    """Real bias-free tanh networks against the twins of their NQF (App. B.5).

    Each member ``W_init[j]`` (``k + 1`` rows: the input weights ``u_i``,
    then the readouts ``v_i``) is a network ``sum_i v_i tanh(u_i . x)``,
    trained by full-batch GD in torch on the mean squared error; next to it
    the twin of ``model`` (:func:`~nqf_lite.dynamics.compression.compress`)
    started from the same weights.

    Parameters
    ----------
    model : NQF
        The network's NQF on the rows of ``X`` (Proposition 1).
    X : array_like, shape (m, k)
    y : ndarray, shape (m,)
    W_init : array_like, shape (members, k + 1, d)
    lr : float
    steps : int

    Returns
    -------
    ndarray, shape (members,)
        Each member's largest ``|f_real - f_twin|`` over the steps and inputs.
    """
    model = nqf("model", model)
    X, W_init = as_array("X", X, ndim=2), as_array("W_init", W_init, ndim=3)
    k = X.shape[1]
    if W_init.shape[1] != k + 1 or model.p != k + 1:
        raise ValueError(
            f"W_init must have shape (members, {k + 1}, d) and model p = "
            f"{k + 1}, got {W_init.shape} and p = {model.p}"
        )
    X_t, y_t = torch.tensor(X), torch.tensor(y)

    def real_net(W: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(torch.einsum("nk,skd->snd", X_t, W[:, :k]))
        return torch.einsum("snd,sd->sn", hidden, W[:, k])

    def real_loss(W: torch.Tensor) -> torch.Tensor:
        return ((real_net(W) - y_t) ** 2).mean(dim=1).sum()

    twins = (compress(model, W, lr) for W in W_init)
    f_twin = np.stack(
        [tw.train(w, y, lr_s, steps)[1][1:] for tw, w, lr_s in twins]
    )
    f_real = []
    descend(
        W_init,
        real_loss,
        lr,
        steps,
        callback=lambda t, W: f_real.append(real_net(W).numpy()),
    )
    err = np.abs(np.stack(f_real, axis=1) - f_twin)
    return np.max(err, axis=(1, 2))


def in_subspace(model: NQF, V: np.ndarray) -> NQF:
    """The NQF restricted to its data subspace, in the coordinates ``V^T w``.

    Its moments are ``V^T M V`` and ``V^T mu``: the dynamics of ``(PMP,
    P mu)`` (Theorem 3; the state of Corollary 3).

    Parameters
    ----------
    model : NQF
    V : ndarray, shape (p, k_V)
        Orthonormal basis of the data subspace
        (:func:`~nqf_lite.dynamics.compression.data_subspace`).

    Returns
    -------
    NQF
        Of neuron size ``k_V``.
    """
    model = nqf("model", model)
    V = as_array("V", V, ndim=2)
    if V.shape[0] != model.p:
        raise ValueError(f"V must have {model.p} rows, got {V.shape}")
    A, B = (np.einsum("pi,npq,qj->nij", V, T, V) for T in (model.A, model.B))
    return NQF(A, g=model.g @ V, B=B, f0=model.f0)


def lipschitz_step(
    model: NQF,
    M: np.ndarray,
    mu: np.ndarray,
    y: np.ndarray,
    d: int,
    lr: float,
    h: float = 1e-7,
) -> float:
    """Operator norm of the Jacobian of one closed GD step (Theorem 2) in the
    norm ``|E_M|_F + |E_mu|`` of Corollary 3 (Eq. 237).

    Central finite differences of ``closed_step`` along an orthonormal basis
    of the state space (the symmetric ``q x q`` matrices and ``R^q``); the
    norm of the block Jacobian is bounded by the larger column sum of its
    blocks' spectral norms. ``1 + lr L`` of Corollary 3 is its value.

    Parameters
    ----------
    model : NQF
    M, mu : ndarray
        The state at which the step is differentiated.
    y : ndarray
    d : int
        Width.
    lr : float
    h : float
        Finite-difference step.

    Returns
    -------
    float
    """
    model, d = nqf("model", model), width("d", d)
    lr, h = positive("lr", lr), positive("h", h)
    q = model.p
    iu = np.triu_indices(q)
    # orthonormal basis of the symmetric q x q matrices
    basis = [np.zeros((q, q)) for _ in iu[0]]
    for E, i, j in zip(basis, *iu):
        E[i, j] = E[j, i] = 1.0 if i == j else np.sqrt(0.5)
    S = np.array(basis)

    def step(dM: np.ndarray, dmu: np.ndarray) -> np.ndarray:
        # the probes may leave the realisable set (by h): the map is a
        # polynomial defined there too, so its check is skipped
        M1, mu1 = model.closed_step(M + dM, mu + dmu, d, y, lr, trusted=True)
        return np.concatenate([np.einsum("aij,ij->a", S, M1), mu1])

    dirs = [(E, np.zeros(q)) for E in S]
    dirs += [(np.zeros((q, q)), e) for e in np.eye(q)]
    diff = [(step(h * a, h * b) - step(-h * a, -h * b)) for a, b in dirs]
    J = np.column_stack([dJ / (2 * h) for dJ in diff])
    n = len(S)

    def norm(block: np.ndarray) -> float:
        return np.linalg.norm(block, 2)

    return max(
        norm(J[:n, :n]) + norm(J[n:, :n]), norm(J[:n, n:]) + norm(J[n:, n:])
    )


def corollary3_twins(
    model: NQF,
    W: object,
    y: np.ndarray,
    lr: float,
    steps: int,
    every: int = 5,
) -> dict:
    """The twins of ``d' = 2, ..., k_V + 1`` neurons of one layer under GD,
    against the layer's projected state (Corollary 3, Eqs. 237-244).

    The layer's state ``(V^T M V, V^T mu)`` follows the closed dynamics
    (Theorem 2) of :func:`in_subspace`; ``L = (max lipschitz_step - 1) / lr``
    over every ``every``-th step of that trajectory; each twin
    (:func:`~nqf_lite.dynamics.compression.compress` with ``width=d'``) is
    trained explicitly and measured by the error norm of Eq. 237,
    ``e_t = |(d'/d) M~_t - P M_t P|_F + |mu~_t - P mu_t|``.

    Parameters
    ----------
    model : NQF
    W : array_like, shape (p, d)
    y : ndarray
    lr : float
    steps : int
    every : int

    Returns
    -------
    dict
        ``"L"``: the Lipschitz constant; ``"twins"``: for each ``d'``, the
        tuple ``(e0, e_t, f_pair)`` of the initial error of
        :func:`~nqf_lite.dynamics.compression.compression_residual` (Eq.
        240), the errors at ``t = 0..steps`` and, at every ``t``, the first
        training prediction of the layer and of the twin (shape
        ``(steps + 1, 2)``).
    """
    model = nqf("model", model)
    W = weights("W", W, model.p)
    steps, every = integer("steps", steps), integer("every", every)
    d = W.shape[1]
    V = data_subspace(model)
    inner = in_subspace(model, V)
    traj = [moments(V.T @ W)]
    for _ in range(steps):
        traj.append(inner.closed_step(*traj[-1], d, y, lr))
    lips = [
        lipschitz_step(inner, *traj[t], y, d, lr)
        for t in range(0, steps, every)
    ]
    member = {"L": (max(lips) - 1) / lr, "twins": {}}
    for ds in range(2, k_V(model) + 2):
        twin, W_s, lr_s = compress(model, W, lr, width=ds)
        e_t, f_pair = [], []
        for t, (M_t, mu_t) in enumerate(traj):
            M_s, mu_s = moments(V.T @ W_s)
            e_M, e_mu = ds / d * M_s - M_t, mu_s - mu_t
            e_t.append(np.linalg.norm(e_M) + np.linalg.norm(e_mu))
            f_pair.append(
                (inner.predict(M_t, mu_t)[0], twin.predict_W(W_s)[0])
            )
            if t < steps:
                W_s = twin.gd_step(W_s, y, lr_s)
        e0 = compression_residual(model, W, ds)
        member["twins"][ds] = (e0, np.array(e_t), np.array(f_pair))
    return member


def growth_exponent(e_t: object, lr: float) -> float:
    """The smallest ``L`` with ``e_t <= e_0 exp(lr L t)`` at every step.

    ``max_t ln(e_t / e_0) / (lr t)`` over ``t >= 1``: the measured rate that
    the bound of Corollary 3 (Eq. 244) must exceed.

    Parameters
    ----------
    e_t : array_like, shape (T + 1,)
        Positive errors at ``t = 0..T``, ``T >= 1``.
    lr : float

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> round(growth_exponent([1.0, np.e, np.e**2], 0.5), 12)
    2.0
    """
    e_t = as_array("e_t", e_t, ndim=1)
    lr = positive("lr", lr)
    if e_t.size < 2 or np.any(e_t <= 0):
        raise ValueError("e_t must hold at least two positive errors")
    t = np.arange(e_t.size)
    return float(np.max(np.log(e_t[1:] / e_t[0]) / (lr * t[1:])))
