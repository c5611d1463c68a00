#!/usr/bin/env python3
"""Run reader editions as a reader runs them: in a fresh environment, twice in
one kernel.

Run with the reader environment's Python (``scripts/reader_env.sh`` makes it):
it has torch, ipywidgets 7.7 and a kernel, but neither nqf_lite nor
jupyter-book. For each notebook, in an empty working directory and without any
of the build's variables:

1. the edition's set-up cell installs ``nqf_lite[book]`` from ``--repo`` (a
   ``git+file://`` URL of this repository, in place of the GitHub address the
   edition carries);
2. every cell runs from the top, then every cell runs again in the same kernel
   (a reader re-running cells); no cell may raise;
3. what the reader sees works with the reader's IPython and ipywidgets (Colab:
   IPython 7.34, ipywidgets 7.7.1): the first cell prints which edition this
   is, the numbers the text quotes are printed under their cells (an IPython
   post-run-cell hook), and an explorer shows its widget;
4. no package the reader had is added, removed or changed (the whole
   environment is compared, nqf_lite aside), and the versions of torch,
   ipywidgets, numpy, matplotlib, scipy and IPython are printed before and
   after.

Prints one line per notebook and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import subprocess
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

#: what the reader had before: installing nqf_lite must not change these
KEPT = ("torch", "ipywidgets", "numpy", "matplotlib", "scipy", "ipython")
INSTALL_URL = re.compile(r"git\+https://[^\s\"']+")
#: variables of the build and the tests that a reader does not have
BUILD_VARIABLES = (
    "NQF_CLAIMS_DIR",
    "PYTHONPATH",
    "IPYTHONDIR",
    "NQF_BOOK_ROOT",
    "PYTHONHASHSEED",
)


def environment() -> dict[str, str]:
    """Every installed distribution and its version, nqf_lite aside."""
    out = {
        d.metadata["Name"].lower().replace("_", "-"): d.version
        for d in md.distributions()
    }
    out.pop("nqf-lite", None)
    return out


def seen_by_reader(nb: nbformat.NotebookNode, outputs: str) -> str | None:
    """What the reader must see in the first run's outputs, or None when all of
    it is there."""
    if (
        "Neural Quadratic Forms" not in outputs
        or "nqf_lite.book.about.report()" not in outputs
    ):
        return "the first cell did not print which edition this is"
    setup = nb.cells[0].source
    if (
        "show_numbers({\n    '" in setup
        and "Numbers quoted in the text" not in outputs
    ):
        return (
            "no number the text quotes was printed (the post-run-cell hook "
            "did not run)"
        )
    if any(
        "slider_explorer" in c.source
        for c in nb.cells
        if c.cell_type == "code"
    ):
        if "application/vnd.jupyter.widget-view+json" not in outputs:
            return "an explorer showed no widget"
    return None


def versions() -> dict[str, str | None]:
    out = {}
    for name in KEPT:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def reader_notebook(path: Path, repo: str) -> nbformat.NotebookNode:
    """The edition with its install cell pointed at ``repo`` instead of
    GitHub."""
    nb = nbformat.read(path, as_version=4)
    setup = nb.cells[0]
    if "%pip install" not in setup.source or not INSTALL_URL.search(
        setup.source
    ):
        raise SystemExit(
            f"{path.name}: the first cell does not install nqf_lite from git"
        )
    setup.source = INSTALL_URL.sub(f"git+{repo}", setup.source)
    return nb


def run_twice(
    path: Path, repo: str, timeout: int, save: Path | None = None
) -> tuple[str, float, str | None]:
    """Execute every cell of ``path``, then every cell again, in one kernel:
    (name, seconds, error)."""
    nb = reader_notebook(path, repo)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="reader-") as cwd:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": cwd}},
        )
        try:
            with client.setup_kernel(cwd=cwd):
                for run in (1, 2):
                    for index, cell in enumerate(nb.cells):
                        if cell.cell_type == "code":
                            client.execute_cell(cell, index)
                    if run == 1:
                        first_outputs = json.dumps(
                            [c.get("outputs", []) for c in nb.cells],
                            default=str,
                        )
        # a broad except on purpose: report the cell's error, whatever it is
        except Exception as exc:
            return (
                path.name,
                time.perf_counter() - t0,
                f"{type(exc).__name__}: {str(exc)[-1500:]}",
            )
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, save / path.name)
    if "image/png" not in first_outputs:
        return path.name, time.perf_counter() - t0, "no figure was drawn"
    missing = seen_by_reader(nb, first_outputs)
    if missing is not None:
        return path.name, time.perf_counter() - t0, missing
    return path.name, time.perf_counter() - t0, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument(
        "--repo",
        required=True,
        help="git URL of nqf_lite, e.g. file:///path/to/clone",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument(
        "--save",
        type=Path,
        help="write the executed notebooks (second run) here",
    )
    args = parser.parse_args()
    for name in BUILD_VARIABLES:
        os.environ.pop(name, None)
    os.environ.setdefault(
        "NQF_EXERCISES_STRICT", "1"
    )  # the reader editions hold the solutions
    # a reader starts without nqf_lite: the edition's set-up cell must install
    # it (again, here)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "uninstall",
            "--quiet",
            "--yes",
            "nqf_lite",
        ],
        check=False,
    )
    before, whole_before = versions(), environment()
    print(
        f"[reader] before: {before} ({len(whole_before)} packages)", flush=True
    )
    # the first notebook's set-up cell installs nqf_lite, once, before the
    # others run beside it
    first, rest = args.notebooks[0], args.notebooks[1:]
    results = [run_twice(first, args.repo, args.timeout, args.save)]
    print(
        f"[reader] {results[0][0]}: {results[0][1]:.0f} s "
        f"{'ok' if results[0][2] is None else 'FAILED'}",
        flush=True,
    )
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, seconds, error in pool.map(
            lambda p: run_twice(p, args.repo, args.timeout, args.save), rest
        ):
            results.append((name, seconds, error))
            print(
                f"[reader] {name}: {seconds:.0f} s "
                f"{'ok' if error is None else 'FAILED'}",
                flush=True,
            )
    after, whole_after = versions(), environment()
    print(
        f"[reader] after:  {after} ({len(whole_after)} packages)", flush=True
    )
    changed = {
        name: (whole_before.get(name), whole_after.get(name))
        for name in sorted(set(whole_before) | set(whole_after))
        if whole_before.get(name) != whole_after.get(name)
    }
    if changed:
        print(
            "[reader] installing nqf_lite changed the reader's packages "
            f"(before, after): {changed}",
            file=sys.stderr,
        )
        return 1
    failed = [(n, e) for n, _, e in results if e is not None]
    for name, error in failed:
        print(f"[reader] {name} FAILED: {error}", file=sys.stderr)
    if after != before:
        print(
            "[reader] installing nqf_lite changed the reader's packages: "
            f"{before} -> {after}",
            file=sys.stderr,
        )
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
