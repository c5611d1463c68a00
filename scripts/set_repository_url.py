"""Point the book at another repository address: ``python
scripts/set_repository_url.py NEW_URL``.

``_config.yml``'s ``repository.url`` is the single source of the address.  The
chapters' hidden install cells (``pip install "nqf_lite @ git+<url>"``) and the
README's commands repeat it, because they must work in Colab without the
book's machinery; ``tests/test_book_structure.py`` checks that they agree, and
this script rewrites all of them at once:

- ``repository.url`` in ``_config.yml``;
- every occurrence of the old address (and of its published book,
  ``https://OWNER.github.io/REPO``) in ``README.md``, ``CITATION.cff``,
  ``nqf_lite/book/about.py``, ``book/*.md`` and ``notebooks/*.ipynb`` and
  ``editions/*/*.ipynb`` (the reader and student notebooks, which repeat the
  install cell), and the README's ``cd <old-name>`` after ``git clone``.

It prints what it changed.  ``--root`` points it at another checkout.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

URL = re.compile(r"https://[A-Za-z0-9.-]+(?:/[A-Za-z0-9._-]+)+")


def config_url(root: Path) -> str:
    """The repository address in ``_config.yml`` (``repository.url``)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    try:
        url = config["repository"]["url"]
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{root / '_config.yml'} has no repository.url"
        ) from exc
    if not isinstance(url, str) or not URL.fullmatch(url):
        raise ValueError(
            f"repository.url in _config.yml must be an https URL, got {url!r}"
        )
    return url


def check_url(url: str) -> str:
    """Return ``url`` without a trailing slash or ``.git``; raise
    ``ValueError`` if it is no https URL."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a string, got {url!r}")
    clean = url.strip().rstrip("/").removesuffix(".git")
    if not URL.fullmatch(clean):
        raise ValueError(
            f"url must look like https://github.com/OWNER/REPO, got {url!r}"
        )
    return clean


def published(url: str) -> str:
    """The published book's address for a repository address (GitHub Pages)."""
    owner, repo = url.rstrip("/").split("/")[-2:]
    return f"https://{owner}.github.io/{repo}"


def _replace(text: str, old: str, new: str) -> str:
    # the old address, not followed by more of a path or name (so a longer
    # address is left alone)
    return re.sub(
        re.escape(old) + r"(?![A-Za-z0-9_-]|\.[A-Za-z0-9])", new, text
    )


def targets(root: Path) -> list[Path]:
    """Files that repeat the address: README, prose pages and chapters."""
    files = [
        root / "README.md",
        root / "CITATION.cff",
        root / "nqf_lite" / "book" / "about.py",
        *sorted((root / "book").glob("*.md")),
        *sorted((root / "notebooks").glob("*.ipynb")),
        *sorted((root / "editions").glob("*/*.ipynb")),
    ]
    return [f for f in files if f.is_file()]


def set_repository_url(root: Path, new: str) -> list[Path]:
    """Rewrite the address everywhere under ``root``; return the files that
    changed."""
    new = check_url(new)
    old = config_url(root)
    changed = []
    config = root / "_config.yml"
    text = config.read_text(encoding="utf-8")
    updated, n = re.subn(
        r"(?m)^(\s+url:\s*)" + re.escape(old) + r"\s*$",
        lambda m: m.group(1) + new,
        text,
    )
    if n != 1:
        raise ValueError(
            f"expected one 'url: {old}' line under repository: in {config}, "
            f"found {n}"
        )
    if updated != text:
        config.write_text(updated, encoding="utf-8")
        changed.append(config)
    old_name, new_name = old.rsplit("/", 1)[1], new.rsplit("/", 1)[1]
    for path in targets(root):
        text = path.read_text(encoding="utf-8")
        updated = _replace(
            _replace(text, old, new), published(old), published(new)
        )
        if path.name == "README.md":
            updated = re.sub(
                rf"(git clone \S+ && cd ){re.escape(old_name)}\b",
                rf"\g<1>{new_name}",
                updated,
            )
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "url",
        help="the new repository address, e.g. https://github.com/OWNER/REPO",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the book's checkout (default: this repository)",
    )
    args = parser.parse_args(argv)
    try:
        changed = set_repository_url(args.root.resolve(), args.url)
    except (ValueError, TypeError) as exc:
        print(f"set_repository_url: {exc}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"rewrote {path.relative_to(args.root.resolve())}")
    print(f"{len(changed)} file(s) now point at {check_url(args.url)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
