"""Benchmarks of the package and the book; writes ``benchmarks/RESULTS.md``.

Usage (from the repository root, with the package importable)::

    .venv/bin/python benchmarks/run.py                 # everything (a-e)
    .venv/bin/python benchmarks/run.py --no-chapters   # a-c, < 3 min

Sections

(a) one closed ``(M, mu)`` step (``NQF.closed_step``, Theorem 2) against one
    explicit step on every neuron (``NQF.gd_step``) at widths 1e2..1e5,
    ``m = 50`` samples, ``p = 20``: time per step, measured ratio, the ratio
    the operation counts allow, equal predictions asserted after a few steps,
    and the closed step's time flat in ``d``;
(b) the compressed width-``(k_V + 1)`` twin (``nqf_lite.compress``, Theorem
    3) against the full model: time per explicit step, equal predictions
    asserted;
(c) the GLV machinery (``nqf_lite.dynamics.solvable``) at 1000 modes and
    ``eps`` from 1e-1 to 1e-30: the exact logistic (Eq. 39), the log-space
    integrator ``glv_integrate`` and an independent
    ``scipy.integrate.solve_ivp`` run, time and max relative error;
(d) per-chapter wall time and peak memory for every notebook of ``_toc.yml``,
    each in its own kernel process (``benchmarks/chapters.py``), and the
    whole book;
(e) with ``--fresh-clone``: ``git clone`` of this repository into a temporary
    folder and the README's test command (``bash scripts/run_tests.sh``) run
    there from nothing (its own ``.venv``), timed per step; without the flag
    the section says it was not run.

Not part of the tests: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from nqf_lite import compress, k_V, random_nqf  # noqa: E402
from nqf_lite.dynamics import solvable as S  # noqa: E402
from nqf_lite.dynamics.scaling import powerlaw_modes  # noqa: E402
from nqf_lite.book.seeding import rng  # noqa: E402


def _per_call(fn, min_time: float = 0.3, max_calls: int = 2000) -> float:
    """Best-of-3 mean seconds per call of ``fn()``."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time / 3 and n < max_calls:
        fn()
        n += 1
    n = max(n, 1)
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def machine() -> list[str]:
    import torch

    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(
            f"{i['internal_api']} ({i['num_threads']} threads)"
            for i in threadpool_info()
        )
    except ImportError:
        blas = "threadpoolctl not installed"
    return [
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- CPU: {cpu}, {os.cpu_count()} logical cores; load average "
        f"{os.getloadavg()[0]:.2f}",
        f"- Python {platform.python_version()}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads)",
        f"- BLAS/OpenMP pools: {blas}",
    ]


# -----------------------------------------------------------------------------
# (a)
def closed_vs_explicit(m: int = 50, p: int = 20) -> list[str]:
    model = random_nqf(m, p, seed=rng("bench", "nqf"))
    y = rng("bench", "labels").standard_normal(m)
    lr = 1e-3
    rows = [
        "One call validates its arguments (for `closed_step`: that (M, mu) is "
        "realisable at width d); "
        "a training loop (`train`, `train_closed`) validates once and then "
        "only steps, recording the "
        "predictions at every step.",
        "",
        "| d | explicit `gd_step` call ms | closed `closed_step` call ms | "
        "call ratio "
        "| explicit step in `train` ms | closed step in `train_closed` ms | "
        "**loop ratio** "
        "| op-count ratio | max rel. pred. diff (5 steps) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    closed_times = []
    for d in (100, 1_000, 10_000, 100_000):
        W0 = rng("bench", "W", d).standard_normal((p, d)) / np.sqrt(d)
        M0, mu0 = W0 @ W0.T, W0.sum(axis=1)
        t_exp = _per_call(lambda: model.gd_step(W0, y, lr))
        t_clo = _per_call(lambda: model.closed_step(M0, mu0, d, y, lr))
        n_exp = max(
            5, min(2000, int(2e8 / (p * p * d)))
        )  # about 0.2 s of explicit steps
        t_exp_loop = (
            _per_call(lambda: model.train(W0, y, lr, n_exp), max_calls=20)
            / n_exp
        )
        t_clo_loop = (
            _per_call(
                lambda: model.train_closed(M0, mu0, d, y, lr, 2000),
                max_calls=20,
            )
            / 2000
        )
        closed_times.append(t_clo)
        W, M, mu = W0, M0, mu0
        for _ in range(5):
            W = model.gd_step(W, y, lr)
            M, mu = model.closed_step(M, mu, d, y, lr)
        f_exp, f_clo = model.predict_W(W), model.predict(M, mu)
        diff = float(np.max(np.abs(f_exp - f_clo)) / np.max(np.abs(f_exp)))
        assert diff < 1e-9, (
            f"closed and explicit predictions differ at d={d}: {diff:.3g}"
        )
        # multiply-adds: explicit = W W^T and W 1 (p^2 d + p d), H W (p^2 d),
        # update (p d), predictions and H from (M, mu) (2 m p^2); closed =
        # predictions and H (2 m p^2), HM, MH, HMH (4 p^3), outer products.
        ops_exp = 2 * p * p * d + 2 * p * d + 2 * m * p * p
        ops_clo = 2 * m * p * p + 4 * p**3 + 6 * p * p
        rows.append(
            f"| {d:.0e} | {1e3 * t_exp:.3f} | {1e3 * t_clo:.3f} | "
            f"{t_exp / t_clo:.1f} | {1e3 * t_exp_loop:.3f} "
            f"| {1e3 * t_clo_loop:.4f} | **{t_exp_loop / t_clo_loop:.0f}** | "
            f"{ops_exp / ops_clo:.1f} | {diff:.1e} |"
        )
    flat = max(closed_times) / min(closed_times)
    rows.append("")
    rows.append(
        f"Closed step, slowest/fastest over d = 1e2..1e5: {flat:.2f} (flat in "
        "d: the width is a number)."
    )
    return rows


# -----------------------------------------------------------------------------
# (b)
def compressed_vs_full(
    m: int = 50, p: int = 20, k: int = 5, d: int = 10_000, steps: int = 20
) -> list[str]:
    model = random_nqf(m, p, k=k, seed=rng("bench", "compress"))
    y = rng("bench", "compress-labels").standard_normal(m)
    lr = 1e-3
    W = rng("bench", "compress-W").standard_normal((p, d)) / np.sqrt(d)
    small, Ws, lrs = compress(model, W, lr)
    kv = k_V(model)
    t_full = _per_call(lambda: model.gd_step(W, y, lr))
    t_small = _per_call(lambda: small.gd_step(Ws, y, lrs))
    Wf, Wc = W, Ws
    for _ in range(steps):
        Wf, Wc = model.gd_step(Wf, y, lr), small.gd_step(Wc, y, lrs)
    ff, fc = model.predict_W(Wf), small.predict_W(Wc)
    diff = float(np.max(np.abs(ff - fc)) / np.max(np.abs(ff)))
    assert diff < 1e-8, f"compressed twin drifts: {diff:.3g}"
    return [
        f"m = {m}, p = {p}, k_V = {kv}, full width d = {d}, twin width "
        f"{Ws.shape[1]}.",
        "",
        "| model | width | ms per GD step |",
        "|---|---|---|",
        f"| full | {d} | {1e3 * t_full:.3f} |",
        f"| compressed twin (Thm 3) | {Ws.shape[1]} | {1e3 * t_small:.3f} |",
        "",
        f"Speed-up {t_full / t_small:.0f}x; max relative prediction "
        f"difference after {steps} steps: {diff:.1e}.",
    ]


# -----------------------------------------------------------------------------
# (c)
def glv_range(n_modes: int = 1000) -> list[str]:
    pm = powerlaw_modes(n_modes, 2.0, 0.8)
    r, c = pm.r, pm.C
    C = np.diag(c)
    rows = [
        f"{n_modes} modes, r_k = k^-0.8, V_k = k^-2 (Fig. 3 right); times up "
        "to t = 1.5 ln(1/eps)/r_1000 "
        "(all modes switched on); errors are max |z - z_exact|/z_exact over "
        "50 log-spaced times and all modes.",
        "",
        "| eps | exact Eq. 39 ms | `glv_integrate` (DOP853, ln z) s | its max "
        "rel. err | scipy `solve_ivp` on z' = z(r - c z) (ln z, vector) s | "
        "its max rel. err | finite |",
        "|---|---|---|---|---|---|---|",
    ]
    for eps in (1e-1, 1e-10, 1e-30):
        z0 = np.full(n_modes, eps)
        T = 1.5 * np.log(1 / eps) / r[-1]
        t = np.concatenate([[0.0], np.geomspace(1e-2, T, 49)])
        t0 = time.perf_counter()
        exact = S.feature_trajectory(t, r, c, z0)
        t_exact = time.perf_counter() - t0
        t0 = time.perf_counter()
        z_glv = S.glv_integrate(t, r, C, z0, method="DOP853", rtol=1e-10)
        t_glv = time.perf_counter() - t0
        t0 = time.perf_counter()
        sol = solve_ivp(
            lambda _s, u: r - c * np.exp(u),
            (0.0, T),
            np.log(z0),
            method="DOP853",
            t_eval=t,
            rtol=1e-10,
            atol=1e-10,
        )
        t_ivp = time.perf_counter() - t0
        z_ivp = np.exp(sol.y.T)
        err_glv = float(np.max(np.abs(z_glv - exact) / exact))
        err_ivp = float(np.max(np.abs(z_ivp - exact) / exact))
        finite = all(
            np.all(np.isfinite(z)) and np.all(z > 0)
            for z in (exact, z_glv, z_ivp)
        )
        rows.append(
            f"| {eps:.0e} | {1e3 * t_exact:.2f} | {t_glv:.2f} | {err_glv:.1e} "
            f"| {t_ivp:.2f} | {err_ivp:.1e} | {finite} |"
        )
    rows += [
        "",
        "The closed form is the reference. Both integrators use scipy's RMS "
        "error norm over all 1000 components, "
        "so one saturated fast mode (r = 1, stable with rate 1) may drift by "
        "far more than rtol while the "
        "steps grow long at late times: their worst relative error sits "
        "there, not at small z.",
    ]
    # discrete GLV over 1e5 GD steps (Eq. 21 in the eigenbasis), 50 modes, eps
    # = 1e-30
    lr, n = 1e-3, 100_000
    t0 = time.perf_counter()
    zd = S.gd_discrete_glv(r[:50], np.diag(c[:50]), np.full(50, 1e-30), lr, n)
    t_d = time.perf_counter() - t0
    exact = S.feature_trajectory([lr * n], r[:50], c[:50], np.full(50, 1e-30))[
        0
    ]
    rows += [
        "",
        f"`gd_discrete_glv`, 50 modes, eps = 1e-30, {n:.0e} steps of lr = "
        f"{lr}: {t_d:.2f} s, all finite: "
        f"{bool(np.all(np.isfinite(zd)))}, max rel. deviation from gradient "
        "flow at the end "
        f"{float(np.max(np.abs(zd[-1] - exact) / exact)):.1e} (an O(lr) "
        "discretisation effect).",
    ]
    return rows


# -----------------------------------------------------------------------------
# (d)
def chapters() -> list[str]:
    from chapters import (
        BOOK_SECONDS,
        CHAPTER_SECONDS,
        PEAK_BYTES,
        measure,
        toc_paths,
    )

    rows, total, _ = measure(toc_paths())
    head = [
        "Each notebook in a fresh kernel process (nbclient), peak RSS of the "
        "kernel's process tree sampled by psutil; "
        f"budgets {CHAPTER_SECONDS:.0f} s and {PEAK_BYTES / 1e9:.1f} GB per "
        f"chapter, {BOOK_SECONDS:.0f} s for the book.",
        "",
        "| chapter | wall s | kernel CPU s | peak MB | budget |",
        "|---|---|---|---|---|",
    ]
    return (
        head
        + rows
        + [
            f"| **whole book** | {total:.1f} | | | "
            f"{'ok' if total <= BOOK_SECONDS else 'OVER'} |"
        ]
    )


def fresh_clone() -> list[str]:
    """Clone the repository (committed state of HEAD) and time the test command
    from nothing."""
    import re
    import subprocess
    import tempfile

    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "clone", "-q", str(ROOT), tmp], check=True)
        t0 = time.perf_counter()
        run = subprocess.run(
            ["bash", "scripts/run_tests.sh"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        total = time.perf_counter() - t0
    (ROOT / "benchmarks" / "fresh_clone.log").write_text(
        run.stdout + run.stderr
    )
    steps = re.findall(r"^== (\d)/\d done in (\d+) s$", run.stdout, flags=re.M)
    lines = [
        f"Commit {head}, cloned into an empty folder; `bash "
        "scripts/run_tests.sh` there, including "
        f"creating `.venv` and installing the pinned requirements.",
        "",
        f"- exit status {run.returncode} "
        f"({'passed' if run.returncode == 0 else 'FAILED'}), "
        f"**{total:.0f} s** in all (budget: `.ci/run` under 30 min)",
    ]
    lines += [f"- step {n}: {s} s" for n, s in steps]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--no-chapters",
        action="store_true",
        help="skip section (d), the notebooks",
    )
    parser.add_argument(
        "--fresh-clone",
        action="store_true",
        help="section (e): clone the repository and time the test command "
        "there (~20 min)",
    )
    args = parser.parse_args(argv)
    out = [
        "# Benchmarks",
        "",
        "Written by `python benchmarks/run.py` (see its docstring).",
        "",
        "## Machine",
        "",
        *machine(),
        "",
    ]
    sections = [
        (
            "(a) Closed (M, mu) step vs explicit step (m = 50, p = 20)",
            closed_vs_explicit,
        ),
        (
            "(b) Compressed width-(k_V + 1) twin vs the full model",
            compressed_vs_full,
        ),
        ("(c) GLV machinery: 1000 modes, eps down to 1e-30", glv_range),
    ]
    if not args.no_chapters:
        sections.append(("(d) Chapters: time and peak memory", chapters))
    for title, fn in sections:
        t0 = time.perf_counter()
        print(f"{title} ...", flush=True)
        out += [
            f"## {title}",
            "",
            *fn(),
            "",
            f"_Section time: {time.perf_counter() - t0:.1f} s._",
            "",
        ]
    networks = ROOT / "benchmarks" / "networks.md"
    if (
        networks.exists()
    ):  # written by benchmarks/networks.py (minutes; run it on its own)
        out += [
            "## (f) An MNIST-size network",
            "",
            networks.read_text().rstrip(),
            "",
        ]
    out += [
        "## (e) Fresh clone",
        "",
        *(
            fresh_clone()
            if args.fresh_clone
            else ["Not run this time (`--fresh-clone` runs it)."]
        ),
        "",
    ]
    (ROOT / "benchmarks" / "RESULTS.md").write_text("\n".join(out))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
