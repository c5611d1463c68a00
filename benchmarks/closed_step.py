"""Time one closed ``(M, mu)`` step against one explicit step on every neuron
(Theorem 2).

Usage (from the repository root)::

    .venv/bin/python benchmarks/closed_step.py [--m 50] [--p 20] [--repeats 7]

For ``m = 50`` samples and ``p = 20`` parameters per neuron it prints, at
widths ``d = 1e2 .. 1e5``, the wall time per call of ``NQF.gd_step`` (explicit:
``O(p² d)``), of ``NQF.closed_step`` (validated, including the realisability
check of ``(M, mu)``), of ``closed_step(..., trusted=True)``, and of one step
inside ``train_closed`` (validated once per loop), plus the ratio explicit /
closed.  Each time is the best over ``--repeats`` rounds of the mean over many
calls, so that other processes on a shared machine inflate it as little as
possible.  Before timing, five steps of both dynamics are compared (predictions
equal to 1e-9 relative).

Not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nqf_lite import random_nqf  # noqa: E402
from nqf_lite.book.seeding import rng  # noqa: E402

WIDTHS = (100, 1_000, 10_000, 100_000)


def per_call(fn, repeats: int, min_time: float = 0.05) -> float:
    """Best over ``repeats`` rounds of the mean wall time of ``fn()``
    (seconds)."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time:
        fn()
        n += 1
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=50)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    m, p, lr = args.m, args.p, 1e-3
    model = random_nqf(m, p, seed=rng("bench", "nqf"))
    y = rng("bench", "labels").standard_normal(m)
    print(
        f"m = {m}, p = {p}; load average {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} cores"
    )
    print(
        f"{'d':>8} {'explicit ms':>12} {'closed ms':>10} {'trusted ms':>11} "
        f"{'in loop ms':>11} {'ratio':>8}"
    )
    for d in WIDTHS:
        W0 = rng("bench", "W", d).standard_normal((p, d)) / np.sqrt(d)
        M0, mu0 = W0 @ W0.T, W0.sum(axis=1)
        W, M, mu = W0, M0, mu0
        for _ in range(5):
            W = model.gd_step(W, y, lr)
            M, mu = model.closed_step(M, mu, d, y, lr)
        f_exp, f_clo = model.predict_W(W), model.predict(M, mu)
        diff = float(np.max(np.abs(f_exp - f_clo)) / np.max(np.abs(f_exp)))
        assert diff < 1e-9, (
            f"closed and explicit predictions differ at d={d}: {diff:.3g}"
        )
        t_exp = per_call(lambda: model.gd_step(W0, y, lr), args.repeats)
        t_clo = per_call(
            lambda: model.closed_step(M0, mu0, d, y, lr), args.repeats
        )
        t_tru = per_call(
            lambda: model.closed_step(M0, mu0, d, y, lr, trusted=True),
            args.repeats,
        )
        t_loop = (
            per_call(
                lambda: model.train_closed(M0, mu0, d, y, lr, 100),
                args.repeats,
            )
            / 100
        )
        print(
            f"{d:>8.0e} {1e3 * t_exp:>12.3f} {1e3 * t_clo:>10.4f} "
            f"{1e3 * t_tru:>11.4f} {1e3 * t_loop:>11.4f} "
            f"{t_exp / t_clo:>8.0f}"
        )


if __name__ == "__main__":
    main()
