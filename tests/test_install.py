"""Installing nqf_lite into a reader's environment replaces nothing the reader has.

Colab ships a recent CUDA torch (with torchvision built against it), ipywidgets 7.7 and the
scientific stack. Installing nqf_lite there must install nqf_lite and nothing else. The proof is
pip's own resolver: in a fresh virtual environment that holds a torch newer than the book's pin
(2.14.1, as Colab ships it; 2.13.0 is pinned in requirements.txt), ipywidgets 7.7.5 and current numpy/scipy/matplotlib/IPython/scikit-learn (recorded as
installed distributions, so nothing multi-GB is downloaded), ``pip install --dry-run --report``
of ``nqf_lite[book] @ git+file://<this repository>`` must plan to install exactly one package,
nqf_lite. Also: Binder installs only what a reader needs, at the build's versions.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what Colab has installed before a chapter runs (versions newer than, or as new as, the build's)
COLAB = {
    "torch": "2.14.1",  # newer than the pin (a machine-wide pip constraint may cap it here)
    "ipywidgets": "7.7.5",
    "numpy": "2.4.6",
    "scipy": "1.17.1",
    "matplotlib": "3.11.2",
    "ipython": "9.18.1",
    "scikit-learn": "1.9.1",
}
#: the build and test toolchain: none of it belongs in a reader's environment
TOOLCHAIN = re.compile(
    r"^(jupyter-book|jupyter_book|sphinx|myst|pydata-sphinx|pytest|nbval|playwright|hypothesis|ruff|pypdf"
    r"|coverage|docutils)",
    re.I,
)


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line.strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_library_requirements_have_no_upper_caps():
    deps = _pyproject()["project"]["dependencies"]
    capped = [d for d in deps if "<" in d or "==" in d or "~=" in d]
    assert not capped, f"upper caps replace a reader's packages: {capped}"
    names = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower() for d in deps}
    assert {"torch", "numpy", "matplotlib", "scipy"} <= names
    assert not names & {"ipywidgets", "ipython", "jupyter-book"}, "widgets and the toolchain are extras"


def test_book_extra_accepts_ipywidgets_7():
    book = _pyproject()["project"]["optional-dependencies"]["book"]
    widgets = next(d for d in book if d.lower().startswith("ipywidgets"))
    assert widgets.replace(" ", "") == "ipywidgets>=7.6"


def test_binder_installs_only_what_a_reader_needs_at_the_build_versions():
    binder = _pins(ROOT / "binder" / "requirements.txt")
    build = _pins(ROOT / "requirements.txt")
    assert "torch" in binder and "ipywidgets" in binder
    assert not [n for n in binder if TOOLCHAIN.match(n)], f"build/test tools in Binder: {binder}"
    differ = {n: (v, build.get(n)) for n, v in binder.items() if build.get(n) != v}
    assert not differ, f"Binder pins differ from requirements.txt: {differ}"
    text = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^\.\[book\]$", text, re.M), "Binder installs nqf_lite with its reader extra"
    assert "download.pytorch.org/whl/cpu" in text, "the CPU build of torch (a bare torch is multi-GB)"


def _fake_installed(site: Path, name: str, version: str) -> None:
    """Record ``name==version`` as installed (metadata only), as pip sees installed packages."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git for a git+file:// install")
def test_installing_into_a_colab_like_environment_changes_nothing(tmp_path):
    venv = tmp_path / "colab"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    for name, version in COLAB.items():
        _fake_installed(site, name, version)
    report = tmp_path / "report.json"
    cmd = [
        sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--dry-run",
        "--quiet", "--report", str(report), f"nqf_lite[book] @ git+file://{ROOT}",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    planned = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert set(planned) == {"nqf_lite"} or set(planned) == {"nqf-lite"}, (
        f"installing nqf_lite would also install or replace {planned}"
    )
