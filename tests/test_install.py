"""Installing nqf_lite into a reader's environment replaces nothing the reader
has.

Colab publishes its runtime's packages (googlecolab/backend-info; a copy at a
recorded commit in ``tests/data/colab/``, see its SOURCE.md). That list is the
test data here:

- every requirement of ``nqf_lite[book]`` is met by the version Colab ships
  (CPU and GPU runtime), and the Python Colab runs is one ``pyproject.toml``
  declares; a failure names the package;
- pip's resolver, asked to install ``nqf_lite[book] @ git+file://<this
  repository>`` into an environment holding *every* package of the freeze at
  its version (recorded as installed distributions, metadata only, so nothing
  multi-GB is downloaded), plans to install nqf_lite alone;
- on Python 3.13 (Colab's), with Colab's torch recorded as installed, every
  other dependency resolves to binary wheels at Colab's versions
  (``--only-binary=:all:``, pip's dry-run);
- Binder installs only what a reader needs, at the build's versions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import colab_env  # noqa: E402

COLAB_DIR = ROOT / "tests" / "data" / "colab"
FREEZES = sorted(COLAB_DIR.glob("pip-freeze*.txt"))
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
    assert not names & {"ipywidgets", "ipython", "jupyter-book"}, (
        "widgets and the toolchain are extras"
    )


def test_book_extra_accepts_ipywidgets_7():
    book = _pyproject()["project"]["optional-dependencies"]["book"]
    widgets = next(d for d in book if d.lower().startswith("ipywidgets"))
    assert widgets.replace(" ", "") == "ipywidgets>=7.6"


def test_binder_installs_only_what_a_reader_needs_at_the_build_versions():
    binder = _pins(ROOT / "binder" / "requirements.txt")
    build = _pins(ROOT / "requirements.txt")
    assert "torch" in binder and "ipywidgets" in binder
    assert not [n for n in binder if TOOLCHAIN.match(n)], (
        f"build/test tools in Binder: {binder}"
    )
    differ = {
        n: (v, build.get(n)) for n, v in binder.items() if build.get(n) != v
    }
    assert not differ, f"Binder pins differ from requirements.txt: {differ}"
    text = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^\.\[book\]$", text, re.M), (
        "Binder installs nqf_lite with its reader extra"
    )
    assert "download.pytorch.org/whl/cpu" in text, (
        "the CPU build of torch (a bare torch is multi-GB)"
    )


def _fake_installed(site: Path, name: str, version: str) -> None:
    """Record ``name==version`` as installed (metadata only), as pip sees
    installed packages."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    )
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")


def _requirements() -> list[Requirement]:
    project = _pyproject()["project"]
    return [
        Requirement(r)
        for r in project["dependencies"]
        + project["optional-dependencies"]["book"]
    ]


def test_colab_freezes_are_the_published_ones():
    assert [f.name for f in FREEZES] == [
        "pip-freeze.gpu.txt",
        "pip-freeze.txt",
    ]
    source = (COLAB_DIR / "SOURCE.md").read_text(encoding="utf-8")
    assert re.search(r"googlecolab/backend-info", source) and re.search(
        r"\b[0-9a-f]{40}\b", source
    )
    for path in FREEZES:
        colab = colab_env.read_freeze(path)
        assert len(colab) > 500, f"{path.name}: {len(colab)} packages read"
        assert "torch" in colab and "ipywidgets" in colab


@pytest.mark.parametrize("freeze", FREEZES, ids=lambda p: p.stem)
def test_colab_ships_a_version_every_requirement_accepts(freeze):
    """A requirement Colab's list does not meet would make pip replace Colab's
    package."""
    colab = colab_env.read_freeze(freeze)
    unmet = []
    for req in _requirements():
        have = colab.get(canonicalize_name(req.name))
        if have is None or not req.specifier.contains(have, prereleases=True):
            unmet.append(f"{req.name}{req.specifier} (Colab has {have})")
    assert not unmet, (
        f"Colab ({freeze.name}) would have these replaced: {unmet}"
    )


def test_colab_python_is_declared():
    project = _pyproject()["project"]
    colab = Version(colab_env.python_version(COLAB_DIR / "os-info.txt"))
    assert SpecifierSet(project["requires-python"]).contains(colab), (
        f"requires-python {project['requires-python']} excludes Colab's "
        f"Python {colab}"
    )
    declared = {
        c.rsplit(" :: ", 1)[-1]
        for c in project["classifiers"]
        if "Python :: 3." in c
    }
    assert f"{colab.major}.{colab.minor}" in declared, (
        f"classifiers declare {sorted(declared)}"
    )


def test_read_freeze_reads_versions_from_wheel_urls(tmp_path):
    freeze = tmp_path / "f.txt"
    freeze.write_text(
        "# comment\nNumPy==2.1.3\n"
        "torch @ "
        "https://example.org/whl/cpu/torch-2.11.0%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl\n"
        "google-colab @ file:///colabtools/dist/google_colab-1.0.0.tar.gz\n"
    )
    got = colab_env.read_freeze(freeze)
    assert got == {"numpy": Version("2.1.3"), "torch": Version("2.11.0+cpu")}
    freeze.write_text("numpy>=2\n")
    with pytest.raises(ValueError, match="numpy>=2"):
        colab_env.read_freeze(freeze)


def test_constraints_give_up_only_the_pins_a_stand_in_excludes():
    colab = {
        "setuptools": Version("75.2.0"),
        "numpy": Version("2.1.3"),
        "torch": Version("2.11.0+cpu"),
        "nvidia-nccl-cu12": Version("2.27.3"),
    }
    lines, given_up = colab_env.constraints(
        colab, [Requirement("setuptools>=77.0.3"), Requirement("numpy>=1")]
    )
    assert lines == ["numpy==2.1.3"]
    assert len(given_up) == 1 and given_up[0].startswith(
        "setuptools: Colab has 75.2.0"
    )


def _fake_environment(
    venv: Path, python: str, packages: dict[str, Version]
) -> Path:
    subprocess.run(
        [python, "-m", "venv", "--without-pip", str(venv)], check=True
    )
    site = next((venv / "lib").glob("python3*/site-packages"))
    for name, version in packages.items():
        _fake_installed(site, name, str(version))
    return venv / "bin" / "python"


def _dry_run(
    python: Path, requirement: str, report: Path, *extra: str
) -> dict[str, str]:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--dry-run",
        "--quiet",
        "--disable-pip-version-check",
        "--report",
        str(report),
        *extra,
        requirement,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return {
        item["metadata"]["name"].lower().replace("-", "_"): item["metadata"][
            "version"
        ]
        for item in json.loads(report.read_text())["install"]
    }


@pytest.mark.skipif(
    shutil.which("git") is None, reason="needs git for a git+file:// install"
)
@pytest.mark.parametrize("freeze", FREEZES, ids=lambda p: p.stem)
def test_installing_into_colab_changes_nothing(tmp_path, freeze):
    python = _fake_environment(
        tmp_path / "colab", sys.executable, colab_env.read_freeze(freeze)
    )
    planned = _dry_run(
        python, f"nqf_lite[book] @ git+file://{ROOT}", tmp_path / "report.json"
    )
    assert set(planned) == {"nqf_lite"}, (
        "installing nqf_lite into Colab would also install or replace "
        f"{planned}"
    )


def _python_313() -> str | None:
    pyenv = (
        Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    )
    candidates = sorted(pyenv.glob("3.13*/bin/python3.13"))
    if candidates:
        return str(candidates[-1])
    found = shutil.which(
        "python3.13"
    )  # not pyenv's shim, which fails when 3.13 is not selected
    return found if found and "shims" not in found else None


def test_every_dependency_resolves_on_colabs_python_313(tmp_path):
    """On a real Python 3.13, with Colab's torch recorded as installed, the
    rest resolves to wheels."""
    python313 = _python_313()
    if python313 is None:
        if os.environ.get("CI"):
            pytest.fail(
                "CI needs a Python 3.13 (pyenv) to check Colab's Python"
            )
        pytest.skip("no Python 3.13 on this machine")
    colab = colab_env.read_freeze(COLAB_DIR / "pip-freeze.txt")
    python = _fake_environment(
        tmp_path / "py313", python313, {"torch": colab["torch"]}
    )
    pins = tmp_path / "colab-pins.txt"
    pins.write_text(
        "\n".join(
            f"{n}=={v}"
            for n, v in colab.items()
            if not colab_env.CUDA_ONLY.match(n) and n != "torch"
        )
        + "\n"
    )
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(wheel_dir.glob("nqf_lite-*.whl"))
    planned = _dry_run(
        python,
        f"nqf_lite[book] @ {wheel.as_uri()}",
        tmp_path / "report.json",
        "--only-binary=:all:",
        "-c",
        str(pins),
    )
    assert "torch" not in planned, "Colab's torch would be replaced"
    for name in (
        "numpy",
        "scipy",
        "matplotlib",
        "ipython",
        "ipywidgets",
        "traitlets",
        "scikit_learn",
    ):
        want = colab[canonicalize_name(name)]
        assert Version(planned.get(name, str(want))) == want, (
            f"{name}: {planned.get(name)} != Colab's {want}"
        )
