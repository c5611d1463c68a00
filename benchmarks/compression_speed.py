"""Time one training step four ways: what closure (Theorem 2) and compression
(Theorem 3) buy.

Usage::

    .venv/bin/python benchmarks/compression_speed.py [--width 1000] [--steps
    200] [--repeats 5] [--out FILE]

The set-up is chapter 5's (notebooks/05_compression.ipynb): the NQF of a
bias-free tanh network with k = 20 input features on m = 8 training inputs (p =
21, k_V = 9), a width-d layer at sigma = 0.01 and learning rate 0.05.  The same
predictions on the training set are produced by

* the real torch network of width d (autograd GD step),
* the explicit NQF of width d (``NQF.gd_step``, cost O(m p^2 d)),
* the closed (M, mu) recursion (``NQF.closed_step``, cost O(m p^2 + p^3),
  independent of d),
* the compressed twin of k_V + 1 neurons (``compress``, cost O(m p^2 k_V)).

For each, the mean wall time per step over ``--steps`` steps is measured, best
of ``--repeats`` repeats, on one torch thread.  The result is printed as a
markdown table (and written to ``--out`` when given).  Timings depend on the
machine and on its load; they are not a claim of the book and no test reads
them.  ``benchmarks/run.py`` collects them into ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nqf_lite import compress, expand_dataset, moments
from nqf_lite.expansion.models import mlp_module
from nqf_lite.book.seeding import rng

K, M_TRAIN, SIGMA, LR = 20, 8, 0.01, 0.05


def per_step(
    step: Callable[[Any], Any], state: Any, steps: int, repeats: int
) -> float:
    """Best-of-``repeats`` mean wall time (seconds) of ``steps`` calls of
    ``state = step(state)``."""
    best = np.inf
    for _ in range(repeats):
        s = state
        t0 = time.perf_counter()
        for _ in range(steps):
            s = step(s)
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def timings(width: int, steps: int, repeats: int) -> dict[str, float]:
    """Seconds per training step of the four equivalent descriptions of chapter
    5's layer."""
    data = rng("bench", "compression", "data")
    X = data.standard_normal((M_TRAIN, K))
    y = X @ (0.6 * data.standard_normal(K) / np.sqrt(K))
    nqf = expand_dataset(
        mlp_module(K, "tanh"), [torch.tensor(x) for x in X], p=K + 1
    )
    W0 = SIGMA * rng("bench", "compression", "init").standard_normal(
        (K + 1, width)
    )
    small, W_small, lr_small = compress(nqf, W0, LR)
    M0, mu0 = moments(W0)
    X_t, y_t = torch.tensor(X), torch.tensor(y)

    def torch_step(W: torch.Tensor) -> torch.Tensor:
        loss = ((torch.tanh(X_t @ W[:K]) @ W[K] - y_t) ** 2).mean()
        (grad,) = torch.autograd.grad(loss, W)
        return (W - LR * grad).detach().requires_grad_()

    return {
        f"real torch network, d = {width}": per_step(
            torch_step, torch.tensor(W0, requires_grad=True), steps, repeats
        ),
        f"explicit NQF, d = {width}": per_step(
            lambda W: nqf.gd_step(W, y, LR), W0, steps, repeats
        ),
        "closed (M, mu) recursion": per_step(
            lambda s: nqf.closed_step(*s, width, y, LR),
            (M0, mu0),
            steps,
            repeats,
        ),
        f"compressed twin, d' = {W_small.shape[1]}": per_step(
            lambda W: small.gd_step(W, y, lr_small), W_small, steps, repeats
        ),
    }


def table(times: dict[str, float]) -> str:
    """Markdown table: microseconds per step and speed-up against the explicit
    NQF."""
    base = next(t for name, t in times.items() if name.startswith("explicit"))
    rows = [
        "| training step | µs per step | speed-up vs explicit NQF |",
        "|---|---|---|",
    ]
    rows += [
        f"| {name} | {1e6 * t:.1f} | {base / t:.1f}× |"
        for name, t in times.items()
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--width",
        type=int,
        default=1000,
        help="width d of the layer (default 1000)",
    )
    parser.add_argument(
        "--steps", type=int, default=200, help="steps per timing (default 200)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="repeats; the best is kept (default 5)",
    )
    parser.add_argument(
        "--out", type=Path, help="also write the markdown table to this file"
    )
    args = parser.parse_args(argv)
    for name in ("width", "steps", "repeats"):
        if getattr(args, name) < 1:
            parser.error(
                f"--{name} must be a positive integer, got "
                f"{getattr(args, name)}"
            )
    if args.width <= 10:
        parser.error(
            "--width must exceed k_V + 1 = 10 (nothing to compress "
            f"otherwise), got {args.width}"
        )
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    text = table(timings(args.width, args.steps, args.repeats))
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
