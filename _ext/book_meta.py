"""The book's edition: version, release date, build date, commit, addresses.

One source for each: the version is ``[project].version`` of
``pyproject.toml``; its release date is the date in that version's heading of
the changelog (``book/changelog.md``: ``## 0.2.0 (2026-12-02)``); the
repository is ``repository.url`` of ``_config.yml``; the build date is today
(or ``SOURCE_DATE_EPOCH``, for a reproducible build), the commit git's
``HEAD``. Used by the page extension (``book_edition``), the notebook editions
and the PDF printer.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import tomllib
import urllib.parse
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "book" / "changelog.md"
#: ``## 0.2.0 (2026-12-02)``: one heading per version in the changelog
RELEASE = re.compile(
    r"^##\s+(?P<version>\d+\.\d+\.\d+)\s+\((?P<date>\d{4}-\d{2}-\d{2})\)", re.M
)


@dataclass(frozen=True)
class Edition:
    version: str
    released: str
    built: str
    commit: str
    repository: str
    seed: str

    @property
    def published(self) -> str:
        """The published book's address (GitHub Pages of the repository)."""
        owner, repo = self.repository.rstrip("/").split("/")[-2:]
        return f"https://{owner}.github.io/{repo}/"

    def issue_url(self, title: str, body: str, labels: str = "") -> str:
        query = {"title": title, "body": body}
        if labels:
            query["labels"] = labels
        return f"{self.repository}/issues/new?{urllib.parse.urlencode(query)}"


def version(root: Path = ROOT) -> str:
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]["version"]


def releases(root: Path = ROOT) -> dict[str, str]:
    """``{version: release date}`` from the changelog's headings."""
    text = (root / "book" / "changelog.md").read_text(encoding="utf-8")
    return {m["version"]: m["date"] for m in RELEASE.finditer(text)}


def repository(root: Path = ROOT) -> str:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return config["repository"]["url"]


def _commit(root: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _today() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (
        dt.datetime.fromtimestamp(int(epoch), dt.UTC)
        if epoch
        else dt.datetime.now(dt.UTC)
    )
    return when.date().isoformat()


@lru_cache(maxsize=None)
def edition(root: Path = ROOT) -> Edition:
    """The edition being built. Raises ``ValueError`` if the changelog lacks
    the version."""
    v = version(root)
    dates = releases(root)
    if v not in dates:
        raise ValueError(
            f"book/changelog.md has no heading '## {v} (YYYY-MM-DD)' for the "
            "version of pyproject.toml"
        )
    return Edition(
        version=v,
        released=dates[v],
        built=_today(),
        commit=_commit(root),
        repository=repository(root),
        seed=os.environ.get("NQF_SEED", "0") or "0",
    )
