"""Structure of the book: every chapter is listed, clean, installable anywhere and asserts its claims."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def toc_notebooks() -> list[str]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "toc_notebooks.py")], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def test_every_chapter_is_in_the_toc():
    listed = set(toc_notebooks())
    assert len(NOTEBOOKS) >= 7
    missing = [p.name for p in NOTEBOOKS if str(p.relative_to(ROOT)) not in listed]
    assert not missing, f"notebooks not in _toc.yml: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_is_committed_without_outputs(path):
    dirty = [i for i, c in enumerate(cells(path)) if c["cell_type"] == "code" and (c["outputs"] or c["execution_count"])]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_first_cell_installs_nqf_lite_and_is_hidden(path):
    first = cells(path)[0]
    assert first["cell_type"] == "code"
    assert "remove-cell" in first.get("metadata", {}).get("tags", [])
    text = source(first)
    assert "import nqf_lite" in text and "except ImportError" in text and "git+https://" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_registers_claims_under_its_own_name(path):
    code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
    assert f'Claims("{path.stem}")' in code, f"{path.name} must create Claims({path.stem!r})"
    assert code.count("claims.check(") >= 5, f"{path.name}: a chapter checks at least five claims"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_has_label_title_exercises_and_no_local_paths(path):
    md = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")
    assert re.search(r"^\(ch\d+-[\w-]+\)=\s*\n# \d+\. ", md, flags=re.M), "label line then a numbered title"
    assert md.count("```{exercise}") >= 2 and md.count("```{solution}") >= 2
    code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
    assert "/work/" not in code and "from myst_nb" not in code
