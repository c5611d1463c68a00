"""Print the notebooks listed in _toc.yml, one path per line (used by the test command)."""

from pathlib import Path

import yaml


def entries(node):
    if isinstance(node, dict):
        if "file" in node:
            yield node["file"]
        for value in node.values():
            yield from entries(value)
    elif isinstance(node, list):
        for item in node:
            yield from entries(item)


root = Path(__file__).resolve().parent.parent
toc = yaml.safe_load((root / "_toc.yml").read_text())
for name in [toc["root"], *entries(toc.get("parts", toc.get("chapters", [])))]:
    path = root / f"{name}.ipynb"
    if path.exists():
        print(path.relative_to(root))
