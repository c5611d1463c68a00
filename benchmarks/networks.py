"""An MNIST-size network in nqf_lite: expansion, a closed step, a forecast, and
two baselines.

Usage (from the repository root)::

    .venv/bin/python benchmarks/networks.py [--repeats 2] [--quick]
        [--threads 1]

The network is ``nn.Sequential(nn.Linear(784, 64), nn.Tanh(), nn.Linear(64,
10))`` on ``m = 60,000`` synthetic inputs in ``[0, 1]^784`` (the size of
MNIST's training set; no download) with one-hot labels.  Every measurement runs
in a fresh Python process (its peak resident memory is that process's
``ru_maxrss``, torch and numpy included) and is repeated ``--repeats`` times:

- ``expand``: :func:`nqf_lite.expand_dataset` (factored, Proposition 1, float32
  storage);
- ``steps``: one closed step inside ``train_closed`` (validated once per loop),
  one validated ``closed_step`` call, one ``gd_step`` at width 64, and
  ``predict_learning``;
- ``hessian``: the plain torch baseline, ``vmap(hessian)`` of the two-unit
  function at ``W = 0`` on a few inputs (what a dense expansion computes per
  input), extrapolated to 60,000;
- ``sgd``: one full-batch step of ``torch.optim.SGD`` on the network itself
  (float32);
- growth with the width ``H`` and the number of inputs ``m``.

Every measurement process runs with ``--threads`` BLAS and torch threads
(``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``torch.set_num_threads``; default 1), so that its CPU time is the work done,
not the threads spinning on a loaded machine; each row records the load
average when it was measured.

Not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from math import nan

ROOT = Path(__file__).resolve().parent.parent


def _net(H: int):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, H), nn.Tanh(), nn.Linear(H, 10))


def _data(m: int):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((m, 784), dtype=np.float32)
    Y = np.eye(10)[rng.integers(0, 10, m)]
    return X, Y


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def part_expand(H: int, m: int) -> dict:
    import numpy as np

    import nqf_lite as nl

    X, _ = _data(m)
    net = _net(H)
    base = _peak_mb()
    t, c = time.perf_counter(), time.process_time()
    nqf = nl.expand_dataset(net, X, dtype=np.float32, progress=False)
    return {
        "expand_s": time.perf_counter() - t,
        "expand_cpu_s": time.process_time() - c,
        "peak_mb": _peak_mb(),
        "before_mb": base,
        "nqf_mb": nqf.nbytes / 2**20,
        "inputs_mb": X.nbytes / 2**20,
    }


def part_steps(H: int, m: int) -> dict:
    import warnings

    import numpy as np

    import nqf_lite as nl

    X, Y = _data(m)
    net = _net(H)
    nqf = nl.expand_dataset(net, X, dtype=np.float32, progress=False)
    units = nl.module_units(net)
    W = 1e-3 * np.random.default_rng(1).standard_normal((units.p, units.d))
    M, mu = nl.moments(W)
    lr = 0.05
    out = {}

    def timed(name, fn, k=1):
        t, c = time.perf_counter(), time.process_time()
        fn()
        out[name + "_s"] = (time.perf_counter() - t) / k
        out[name + "_cpu_s"] = (time.process_time() - c) / k

    timed(
        "train_closed_per_step",
        lambda: nqf.train_closed(M, mu, units.d, Y, lr, 5, record="loss"),
        5,
    )
    timed(
        "closed_step_validated", lambda: nqf.closed_step(M, mu, units.d, Y, lr)
    )
    timed("gd_step", lambda: nqf.gd_step(W, Y, lr))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timed("forecast", lambda: nl.predict_learning(nqf, y=Y, W0=W, lr=lr))
    out["peak_mb"] = _peak_mb()
    return out


def part_hessian(H: int, n_inputs: int = 4) -> dict:
    import torch

    net = _net(H).double()
    X, _ = _data(n_inputs)
    w1, b1, w2 = (
        net[0].weight.detach(),
        net[0].bias.detach(),
        net[2].weight.detach(),
    )
    c = net[2].bias.detach()
    p = 784 + 1 + 10

    def two_units(
        theta, x
    ):  # units 0 and 1 from theta, the others zero (the point W = 0)
        u = theta.reshape(2, p)
        hidden = torch.tanh(u[:, :784] @ x + u[:, 784])
        return c + u[:, 785:].T @ hidden

    hess = torch.func.vmap(torch.func.hessian(two_units), in_dims=(None, 0))
    theta0 = torch.zeros(2 * p, dtype=torch.float64)
    del w1, b1, w2
    Xt = torch.tensor(X, dtype=torch.float64)
    t = time.perf_counter()
    hess(theta0, Xt[:1])
    first = time.perf_counter() - t
    t, c = time.perf_counter(), time.process_time()
    hess(theta0, Xt)
    per = (time.perf_counter() - t) / n_inputs
    return {
        "first_s": first,
        "per_input_s": per,
        "per_input_cpu_s": (time.process_time() - c) / n_inputs,
        "extrapolated_60000_h": per * 60000 / 3600,
        "dense_A_per_input_mb": 10 * p * p * 8 / 2**20,
        "peak_mb": _peak_mb(),
    }


def part_sgd(H: int, m: int) -> dict:
    import torch

    X, Y = _data(m)
    net = _net(H)
    Xt, Yt = torch.tensor(X), torch.tensor(Y, dtype=torch.float32)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)

    def step():
        opt.zero_grad()
        loss = ((net(Xt) - Yt) ** 2).sum(1).mean()
        loss.backward()
        opt.step()

    step()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(5):
        step()
    return {
        "sgd_step_s": (time.perf_counter() - t) / 5,
        "sgd_step_cpu_s": (time.process_time() - c) / 5,
        "peak_mb": _peak_mb(),
    }


PARTS = {
    "expand": part_expand,
    "steps": part_steps,
    "hessian": part_hessian,
    "sgd": part_sgd,
}


THREADS = 1
_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run(part: str, **kw) -> dict:
    """``part`` in a fresh process with :data:`THREADS` BLAS and torch
    threads; its results with the load average after it."""
    cmd = [sys.executable, __file__, "--part", part, "--kw", json.dumps(kw)]
    env = dict(os.environ, **{v: str(THREADS) for v in _THREAD_VARS})
    out = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, check=True, env=env
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["load"] = os.getloadavg()[0]
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part")
    ap.add_argument("--kw", default="{}")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--quick", action="store_true", help="skip the growth tables"
    )
    ap.add_argument(
        "--threads", type=int, default=1, help="BLAS and torch threads"
    )
    args = ap.parse_args()
    if args.part:
        sys.path.insert(0, str(ROOT))
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        print(json.dumps(PARTS[args.part](**json.loads(args.kw))))
        return
    global THREADS
    THREADS = args.threads
    results: dict = {
        "threads": THREADS,
        "main": [],
        "growth_width": [],
        "growth_inputs": [],
    }
    for r in range(args.repeats):
        row = {"repeat": r}
        row.update(
            {f"expand.{k}": v for k, v in run("expand", H=64, m=60000).items()}
        )
        row.update(
            {f"steps.{k}": v for k, v in run("steps", H=64, m=60000).items()}
        )
        row.update(
            {f"hessian.{k}": v for k, v in run("hessian", H=64).items()}
        )
        row.update(
            {f"sgd.{k}": v for k, v in run("sgd", H=64, m=60000).items()}
        )
        row["load_average"] = os.getloadavg()[0]
        results["main"].append(row)
        print(json.dumps(row), flush=True)
        if args.quick or r > 0:  # the growth tables once
            continue
        for H in (16, 64, 256):
            g = {"H": H, "repeat": r}
            g.update(
                {
                    f"expand.{k}": v
                    for k, v in run("expand", H=H, m=60000).items()
                }
            )
            g.update(
                {
                    f"steps.{k}": v
                    for k, v in run("steps", H=H, m=60000).items()
                }
            )
            g.update(
                {f"sgd.{k}": v for k, v in run("sgd", H=H, m=60000).items()}
            )
            g["load_average"] = os.getloadavg()[0]
            results["growth_width"].append(g)
            print(json.dumps(g), flush=True)
        for m in (6000, 20000, 60000):
            g = {"m": m, "repeat": r}
            g.update(
                {f"expand.{k}": v for k, v in run("expand", H=64, m=m).items()}
            )
            g.update(
                {f"steps.{k}": v for k, v in run("steps", H=64, m=m).items()}
            )
            g["load_average"] = os.getloadavg()[0]
            results["growth_inputs"].append(g)
            print(json.dumps(g), flush=True)
    (ROOT / "benchmarks" / "networks.json").write_text(
        json.dumps(results, indent=1)
    )
    (ROOT / "benchmarks" / "networks.md").write_text(
        "\n".join(render(results)) + "\n"
    )


def _f(x: float, nd: int = 2) -> str:
    return f"{x:.{nd}f}"


def _span(rows: list, key: str, nd: int = 2) -> str:
    """``lo-hi`` of ``key`` over ``rows`` (``lo`` alone when equal)."""
    vals = [r[key] for r in rows if key in r]
    if not vals:
        return "n/a"
    lo, hi = _f(min(vals), nd), _f(max(vals), nd)
    return lo if lo == hi else f"{lo}-{hi}"


def _met(rows: list, key: str, goal: float) -> str:
    vals = [r[key] for r in rows if key in r]
    if not vals:
        return "not measured"
    return "met" if max(vals) <= goal else f"NOT met (goal {goal:g})"


def summary(results: dict) -> list[str]:
    """The goals of issue 28 against the measurements, in CPU time (the
    work done) and in wall time (under the load of the shared machine)."""
    main = results["main"]
    every = main + results["growth_width"] + results["growth_inputs"]
    loads = [r["load_average"] for r in every if "load_average" in r]
    ex, cl, fc = (
        "expand.expand",
        "steps.train_closed_per_step",
        "steps.forecast",
    )
    return [
        "",
        f"Summary ({len(main)} repeats of the main row, "
        f"{results.get('threads', '?')} BLAS/torch thread(s), load average "
        f"{_f(min(loads), 1)}-{_f(max(loads), 1)} while measuring):",
        "",
        f"- expansion of 60,000 inputs: {_span(main, ex + '_cpu_s')} s of "
        f"CPU ({_span(main, ex + '_s')} s wall), peak "
        f"{_span(main, 'expand.peak_mb', 0)} MB: goal <= 60 s "
        f"{_met(main, ex + '_s', 60.0)}, <= 1 GB "
        f"{_met(main, 'expand.peak_mb', 1024.0)};",
        f"- one closed step in `train_closed`: {_span(main, cl + '_cpu_s')} "
        f"s of CPU ({_span(main, cl + '_s')} s wall): goal <= 1 s "
        f"{_met(main, cl + '_cpu_s', 1.0)} in CPU time;",
        f"- one forecast (`predict_learning`): {_span(main, fc + '_cpu_s')} s "
        f"of CPU ({_span(main, fc + '_s')} s wall): goal <= 1 s "
        f"{_met(main, fc + '_cpu_s', 1.0)} in CPU time;",
        f"- torch SGD step on the network: {_span(main, 'sgd.sgd_step_cpu_s')}"
        f" s of CPU; `vmap(hessian)` baseline "
        f"{_span(main, 'hessian.per_input_cpu_s')} s of CPU an input "
        f"({_span(main, 'hessian.extrapolated_60000_h', 0)} h of wall time "
        "for 60,000 inputs at the measured rate).",
    ]


def render(results: dict) -> list[str]:
    """Markdown of :func:`main`'s results (read by ``benchmarks/run.py`` into
    ``RESULTS.md``)."""
    out = [
        "`nn.Sequential(nn.Linear(784, 64), nn.Tanh(), nn.Linear(64, 10))` on "
        "60,000 synthetic inputs in "
        "[0, 1]^784 with one-hot labels (`benchmarks/networks.py`; each "
        "measurement in a fresh process, "
        "wall time and the process's CPU time, peak resident memory including "
        "torch; "
        f"{results.get('threads', 'unset')} BLAS/torch thread(s) per process, "
        "set explicitly). Goals: expansion "
        "<= 60 s and <= 1 GB on 2 cores; one closed step and one forecast <= "
        "1 s.",
        "",
        "| repeat | load avg | expand s (CPU s) | expand peak MB (before) | "
        "coefficients MB (inputs MB) "
        "| closed step in `train_closed` s (CPU) | `closed_step` call s (CPU) "
        "| `gd_step` s (CPU) "
        "| forecast s (CPU) | torch SGD step s (CPU) | `vmap(hessian)` "
        "s/input (CPU) | its 60,000 inputs, h "
        "| dense A MB/input |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["main"]:
        g = r.get
        out.append(
            f"| {r['repeat']} | {_f(g('load_average', float('nan')), 1)} "
            f"| {_f(g('expand.expand_s'))} "
            f"({_f(g('expand.expand_cpu_s', float('nan')))}) "
            f"| {g('expand.peak_mb'):.0f} ({g('expand.before_mb'):.0f}) "
            f"| {g('expand.nqf_mb'):.0f} ({g('expand.inputs_mb'):.0f}) "
            f"| {_f(g('steps.train_closed_per_step_s'))} "
            f"({_f(g('steps.train_closed_per_step_cpu_s', float('nan')))}) "
            f"| {_f(g('steps.closed_step_validated_s'))} "
            f"({_f(g('steps.closed_step_validated_cpu_s', float('nan')))}) "
            f"| {_f(g('steps.gd_step_s'))} "
            f"({_f(g('steps.gd_step_cpu_s', float('nan')))}) "
            f"| {_f(g('steps.forecast_s'))} "
            f"({_f(g('steps.forecast_cpu_s', float('nan')))}) "
            f"| {_f(g('sgd.sgd_step_s'))} "
            f"({_f(g('sgd.sgd_step_cpu_s', float('nan')))}) "
            f"| {_f(g('hessian.per_input_s'))} "
            f"({_f(g('hessian.per_input_cpu_s', float('nan')))}) "
            f"| {g('hessian.extrapolated_60000_h'):.0f} | "
            f"{g('hessian.dense_A_per_input_mb'):.0f} |"
        )
    if results["growth_width"]:
        out += [
            "",
            "Growth with the hidden width H (m = 60,000):",
            "",
            "| H | load avg | expand s (CPU) | peak MB | closed step s (CPU) "
            "| forecast s (CPU) | torch SGD step s (CPU) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in results["growth_width"]:
            g = r.get
            out.append(
                f"| {r['H']} | {_f(g('load_average', nan), 1)} "
                f"| {_f(g('expand.expand_s'))} "
                f"({_f(g('expand.expand_cpu_s', float('nan')))}) "
                f"| {g('expand.peak_mb'):.0f} "
                f"| {_f(g('steps.train_closed_per_step_s'))} "
                f"({_f(g('steps.train_closed_per_step_cpu_s', nan))}) "
                f"| {_f(g('steps.forecast_s'))} "
                f"({_f(g('steps.forecast_cpu_s', float('nan')))}) "
                f"| {_f(g('sgd.sgd_step_s'))} "
                f"({_f(g('sgd.sgd_step_cpu_s', float('nan')))}) |"
            )
    if results["growth_inputs"]:
        out += [
            "",
            "Growth with the number of inputs m (H = 64):",
            "",
            "| m | load avg | expand s (CPU) | peak MB | coefficients MB "
            "| closed step s (CPU) | forecast s (CPU) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in results["growth_inputs"]:
            g = r.get
            out.append(
                f"| {r['m']:,} | {_f(g('load_average', nan), 1)} "
                f"| {_f(g('expand.expand_s'))} "
                f"({_f(g('expand.expand_cpu_s', float('nan')))}) "
                f"| {g('expand.peak_mb'):.0f} | {g('expand.nqf_mb'):.0f} "
                f"| {_f(g('steps.train_closed_per_step_s'))} "
                f"({_f(g('steps.train_closed_per_step_cpu_s', nan))}) "
                f"| {_f(g('steps.forecast_s'))} "
                f"({_f(g('steps.forecast_cpu_s', float('nan')))}) |"
            )
    return out + summary(results)


if __name__ == "__main__":
    main()
