"""The README's Python examples run as a reader copies them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_python_examples():
    assert _blocks(), "README.md lost its Python examples"


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_readme_example_runs(i, capsys, recwarn):
    code = _blocks()[i]
    exec(compile(code, f"README.md block {i}", "exec"), {"__name__": "readme"})
    # an example must not lean on an old import path (they warn)
    moved = [w for w in recwarn if "moved to nqf_lite." in str(w.message)]
    assert not moved, [str(w.message) for w in moved]
