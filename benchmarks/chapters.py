"""Measure each chapter's execution time and peak memory (budget: 60 s, 1 GB;
whole book 5 min).

Usage::

    .venv/bin/python benchmarks/chapters.py [notebooks/01_symmetry.ipynb ...]

Each notebook in ``_toc.yml`` (or those given) is executed by nbclient in a
fresh kernel; a sampler thread records the peak resident memory of the kernel
process tree. Results are printed as a table (``benchmarks/run.py`` puts it
into ``benchmarks/RESULTS.md``) and written to ``benchmarks/chapters.json``,
which the course guide reads for its running times.  Not a timed test: budgets
are reported and the exit code is non-zero when one is exceeded. The memory
budget is Binder's: mybinder.org guarantees 1 GB to a session (and stops it at
2 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_SECONDS = 60.0
BOOK_SECONDS = 300.0
PEAK_BYTES = 1.0e9
JSON = ROOT / "benchmarks" / "chapters.json"


def _tree_rss(pid: int) -> int:
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run(path: Path) -> tuple[float, int, float]:
    """Execute one notebook; return (wall seconds, peak RSS bytes, kernel CPU
    seconds)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    peak = [0]
    cpu = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            km = client.km
            pid = (
                getattr(getattr(km, "provisioner", None), "pid", None)
                if km
                else None
            )
            if pid:
                peak[0] = max(peak[0], _tree_rss(pid))
                try:
                    t = psutil.Process(pid).cpu_times()
                    cpu[0] = max(cpu[0], t.user + t.system)
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.1)

    thread = threading.Thread(target=sample, daemon=True)
    start = time.perf_counter()
    thread.start()
    try:
        client.execute()
    finally:
        done.set()
        thread.join()
    return time.perf_counter() - start, peak[0], cpu[0]


def toc_paths() -> list[Path]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "toc_notebooks.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    return [ROOT / line for line in out.stdout.split()]


def measure(paths: list[Path]) -> tuple[list[str], float, bool]:
    """Run each notebook; return its table rows, the total wall time, and
    whether budgets hold.

    The measurements are also merged into ``benchmarks/chapters.json`` (read by
    the course guide).
    """
    rows, total, ok = [], 0.0, True
    record = json.loads(JSON.read_text()) if JSON.is_file() else {}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for path in paths:
        wall, peak, cpu = run(path)
        record[path.stem] = {
            "wall_s": round(wall, 1),
            "peak_mb": round(peak / 1e6),
            "measured": stamp,
            "cores": psutil.cpu_count(),
        }
        total += wall
        within = wall <= CHAPTER_SECONDS and peak <= PEAK_BYTES
        ok &= within
        rows.append(
            f"| {path.stem} | {wall:.1f} | {cpu:.1f} | {peak / 1e6:.0f} | "
            f"{'ok' if within else 'OVER'} |"
        )
        print(rows[-1], flush=True)
    JSON.write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n")
    return rows, total, ok and total <= BOOK_SECONDS


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] if argv else toc_paths()
    rows, total, ok = measure(paths)
    table = "\n".join(
        [
            f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
            f"on {psutil.cpu_count()} cores.",
            "",
            "| chapter | wall s | kernel CPU s | peak MB | budget |",
            "|---|---|---|---|---|",
            *rows,
            f"| **all** | {total:.1f} | | | "
            f"{'ok' if total <= BOOK_SECONDS else 'OVER'} |",
            "",
        ]
    )
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
