#!/usr/bin/env python3
"""Colab's published package list as test data, and a reader's environment
built from it.

Colab publishes the packages of its runtime (``pip freeze``) in the public
repository googlecolab/backend-info; ``tests/data/colab/`` holds a copy at a
recorded commit (see its ``SOURCE.md``; ``scripts/refresh_colab_freeze.sh``
replaces it with the newest one). This script

- reads the freeze with ``packaging`` (``name==version`` lines and ``name @
  url`` lines whose wheel file names carry the version, as Colab's torch does);
- ``env VENV``: makes the reader's environment of the test command (step 3)
  from the freeze, on the machine's Python: Colab's pip, and Colab's version of
  every package a chapter touches (torch, the scientific stack, IPython,
  traitlets, ipykernel, ipywidgets, ...) and of everything those pull in. Where
  this machine cannot have Colab's version (its Python, its CUDA-free torch)
  the nearest one is used, and every deviation is printed;
- ``diff VENV``: prints, package by package, how an environment differs from
  the freeze.

Run it with the build's Python (``.venv/bin/python scripts/colab_env.py env
_build/reader-venv``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import venv
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
FREEZE = ROOT / "tests" / "data" / "colab" / "pip-freeze.txt"
#: the packages of Colab that the chapters touch, and the kernel and driver
#: that run them
READER_PACKAGES = (
    "numpy",
    "scipy",
    "matplotlib",
    "scikit-learn",
    "tqdm",
    "ipython",
    "traitlets",
    "ipykernel",
    "ipywidgets",
    "widgetsnbextension",
    "jupyter_client",
    "jupyter_core",
    "matplotlib-inline",
    "nbclient",
    "nbformat",
)
#: this machine's stand-in for Colab's torch: the CPU wheel on its disk (Colab:
#: 2.11.0+cpu)
TORCH_HERE = "2.13.0"
#: CUDA builds and their companions: not available here, never installed
CUDA_ONLY = re.compile(
    r"^(nvidia-.*|triton|torchaudio|torchvision|torchcodec|torchao)$"
)


def read_freeze(path: Path = FREEZE) -> dict[str, Version]:
    """``{canonical name: version}`` of a ``pip freeze`` file (comments and
    editables skipped)."""
    out: dict[str, Version] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-e")):
            continue
        req = Requirement(line)
        name = canonicalize_name(req.name)
        if req.url:
            file = req.url.rsplit("/", 1)[-1].split("#")[0].replace("%2B", "+")
            if file.endswith(".whl"):
                out[name] = parse_wheel_filename(file)[1]
            continue  # a source tree or a git URL carries no version
        pins = [s for s in req.specifier if s.operator == "=="]
        if len(pins) != 1:
            raise ValueError(
                f"{path.name}: cannot read a version from {line!r}"
            )
        out[name] = Version(pins[0].version)
    return out


def python_version(os_info: Path = FREEZE.with_name("os-info.txt")) -> str:
    """Colab's Python (``3.13.15``), from the published ``os-info.txt``."""
    m = re.search(
        r"^Python (\d+\.\d+\.\d+)", os_info.read_text(encoding="utf-8"), re.M
    )
    if m is None:
        raise ValueError(f"{os_info}: no 'Python X.Y.Z' line")
    return m.group(1)


def _run(*cmd: str) -> str:
    return subprocess.run(
        cmd, check=True, capture_output=True, text=True
    ).stdout


def installed(python: Path) -> dict[str, Version]:
    """``{canonical name: version}`` of what the environment of ``python``
    holds."""
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({d.metadata['Name']: d.version for d in "
        "m.distributions()}))"
    )
    return {
        canonicalize_name(k): Version(v)
        for k, v in json.loads(_run(str(python), "-I", "-c", code)).items()
    }


def requirements_of(python: Path, dist: str) -> list[Requirement]:
    """The unconditional requirements of an installed distribution."""
    code = (
        "import importlib.metadata as m, json; "
        f"print(json.dumps(m.requires({dist!r}) or []))"
    )
    reqs = [
        Requirement(r) for r in json.loads(_run(str(python), "-I", "-c", code))
    ]
    return [
        r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})
    ]


def constraints(
    colab: dict[str, Version], overrides: list[Requirement]
) -> tuple[list[str], list[str]]:
    """Colab's pins as pip constraints, less those a stand-in's requirement
    excludes.

    Returns the constraint lines and one line per pin given up (the deviations
    the stand-ins force).
    """
    lines, given_up = [], []
    needs = {canonicalize_name(r.name): r for r in overrides}
    for name, version in sorted(colab.items()):
        if CUDA_ONLY.match(name) or name == "torch" or version.local:
            continue
        req = needs.get(name)
        if req is not None and not req.specifier.contains(
            version, prereleases=True
        ):
            given_up.append(
                f"{name}: Colab has {version}, torch {TORCH_HERE} requires "
                f"{req.specifier}"
            )
            continue
        lines.append(f"{name}=={version}")
    return lines, given_up


def deviations(
    colab: dict[str, Version], have: dict[str, Version]
) -> list[str]:
    """One line per package of ``have`` whose version is not Colab's (or that
    Colab lacks)."""
    out = []
    for name, version in sorted(have.items()):
        want = colab.get(name)
        if want is None:
            out.append(f"{name} {version}: not in Colab's list")
        elif want != version:
            out.append(f"{name} {version}: Colab has {want}")
    return out


def make_env(target: Path, freeze: Path = FREEZE) -> int:
    colab = read_freeze(freeze)
    python = target / "bin" / "python"
    stamp = target / ".colab-freeze"
    freeze_text = freeze.read_text(encoding="utf-8")
    key = f"{freeze_text}|{TORCH_HERE}|{READER_PACKAGES}|{sys.version}"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == key:
        print(f"[colab] {target} is up to date")
        return 0
    if target.exists():
        subprocess.run(["rm", "-rf", str(target)], check=True)
    venv.create(target, with_pip=True)
    pip = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    print(
        f"[colab] Python {sys.version.split()[0]} here; Colab runs Python "
        f"{python_version()}"
    )
    subprocess.run([*pip, f"pip=={colab['pip']}"], check=True)
    # torch first: its requirements decide which of Colab's pins cannot hold
    # beside it
    subprocess.run([*pip, "--no-deps", f"torch=={TORCH_HERE}"], check=True)
    lines, given_up = constraints(colab, requirements_of(python, "torch"))
    cfile = target / "colab-constraints.txt"
    cfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run(
        [*pip, "-c", str(cfile), f"torch=={TORCH_HERE}", *READER_PACKAGES],
        check=True,
    )
    have = installed(python)
    print(
        f"[colab] {len(have)} packages installed; where they differ from "
        "Colab's list:"
    )
    print(
        f"[colab]   torch {have['torch']}: Colab has {colab['torch']} (the "
        "CPU wheel on this machine's disk)"
    )
    for line in given_up:
        print(f"[colab]   pin given up: {line}")
    for line in deviations(colab, have):
        if not line.startswith("torch "):
            print(f"[colab]   {line}")
    stamp.write_text(key, encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("env", "diff"):
        p = sub.add_parser(name)
        p.add_argument("venv", type=Path)
        p.add_argument("--freeze", type=Path, default=FREEZE)
    args = parser.parse_args()
    if args.command == "env":
        return make_env(args.venv, args.freeze)
    for line in deviations(
        read_freeze(args.freeze), installed(args.venv / "bin" / "python")
    ):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
