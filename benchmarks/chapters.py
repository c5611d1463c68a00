"""Measure each chapter's execution time and peak memory (budget: 60 s, 1.5 GB; whole book 8 min).

Usage::

    .venv/bin/python benchmarks/chapters.py [notebooks/01_symmetry.ipynb ...]

Each notebook in ``_toc.yml`` (or those given) is executed by nbclient in a fresh kernel; a
sampler thread records the peak resident memory of the kernel process tree.  Results are
printed as a table (``benchmarks/run.py`` puts it into ``benchmarks/RESULTS.md``).  Not a
timed test: budgets are reported and the exit code is non-zero when one is exceeded.
"""

from __future__ import annotations

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
BOOK_SECONDS = 480.0
PEAK_BYTES = 1.5e9


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
    """Execute one notebook; return (wall seconds, peak RSS bytes, kernel CPU seconds)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    peak = [0]
    cpu = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            km = client.km
            pid = getattr(getattr(km, "provisioner", None), "pid", None) if km else None
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


def main(argv: list[str]) -> int:
    if argv:
        paths = [Path(a).resolve() for a in argv]
    else:
        out = subprocess.run([sys.executable, str(ROOT / "scripts" / "toc_notebooks.py")], capture_output=True, text=True, check=True)
        paths = [ROOT / line for line in out.stdout.split()]
    rows, total, ok = [], 0.0, True
    for path in paths:
        wall, peak, cpu = run(path)
        total += wall
        within = wall <= CHAPTER_SECONDS and peak <= PEAK_BYTES
        ok &= within
        rows.append(f"| {path.stem} | {wall:.1f} | {cpu:.1f} | {peak / 1e6:.0f} | {'ok' if within else 'OVER'} |")
        print(rows[-1], flush=True)
    ok &= total <= BOOK_SECONDS
    table = "\n".join(
        [
            f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {psutil.cpu_count()} cores.",
            "",
            "| chapter | wall s | kernel CPU s | peak MB | budget |",
            "|---|---|---|---|---|",
            *rows,
            f"| **all** | {total:.1f} | | | {'ok' if total <= BOOK_SECONDS else 'OVER'} |",
            "",
        ]
    )
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
