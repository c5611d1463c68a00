"""The book's edition: one version, its date, its citation, and a reader's
problem report."""

from __future__ import annotations

import sys
import tomllib
import urllib.parse
from pathlib import Path

import pytest
import yaml

import nqf_lite
from nqf_lite.book import about

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import book_meta  # noqa: E402

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"
]["version"]


def test_changelog_dates_the_version_of_pyproject():
    releases = book_meta.releases()
    assert VERSION in releases, (
        f"book/changelog.md has no '## {VERSION} (date)' heading"
    )
    assert list(releases) == sorted(
        releases, key=lambda v: tuple(map(int, v.split("."))), reverse=True
    ), "the changelog lists versions newest first"
    assert book_meta.edition().version == VERSION


def test_changelog_without_the_version_is_an_error(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "changelog.md").write_text(
        "# Changelog\n\n## 0.0.1 (2020-01-01)\n"
    )
    for name in ("pyproject.toml", "_config.yml"):
        (tmp_path / name).write_text(
            (ROOT / name).read_text(encoding="utf-8"), encoding="utf-8"
        )
    with pytest.raises(ValueError, match=f"## {VERSION}"):
        book_meta.edition(tmp_path)


def test_citation_file_follows_pyproject_and_changelog():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    released = book_meta.releases()[VERSION]
    assert (
        cff["version"] == VERSION
        and cff["preferred-citation"]["version"] == VERSION
    )
    assert str(cff["date-released"]) == released
    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "repository"
    ]["url"]
    assert cff["repository-code"] == repo
    assert cff["url"] == book_meta.edition().published
    assert any(
        "2608.13335" in r.get("journal", "") for r in cff["references"]
    ), "cite the paper"


def test_package_version_and_repository():
    assert nqf_lite.__version__ == VERSION
    repo = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
        "repository"
    ]["url"]
    assert about.REPOSITORY == repo, "run scripts/set_repository_url.py"


def test_report_names_page_version_seed_and_packages(monkeypatch, capsys):
    monkeypatch.setenv("NQF_SEED", "7")
    text = about.report("04_closure")
    printed = capsys.readouterr().out
    assert printed.strip() == text.strip()
    for want in (
        "Page: 04_closure",
        f"version: {VERSION}",
        "NQF_SEED: 7",
        "python: 3.",
        "torch: 2.",
        "numpy: ",
    ):
        assert want in text, want
    url = text.rsplit("Report it here: ", 1)[1].strip()
    parts = urllib.parse.urlsplit(url)
    assert (
        f"{parts.scheme}://{parts.netloc}{parts.path}"
        == f"{about.REPOSITORY}/issues/new"
    )
    query = urllib.parse.parse_qs(parts.query)
    assert query["title"] == ["[04_closure] "] and query["labels"] == [
        "reader-report"
    ]
    assert (
        "NQF_SEED: 7" in query["body"][0]
        and "Page: 04_closure" in query["body"][0]
    )


def test_report_defaults_to_the_page_the_edition_opened(capsys):
    about.edition("06_sudden_learning", VERSION)
    assert "Page: 06_sudden_learning" in about.report(show=False)
    assert capsys.readouterr().out.startswith(
        f"Neural Quadratic Forms {VERSION}, 06_sudden_learning"
    )


def test_edition_warns_when_another_version_is_installed(monkeypatch, capsys):
    monkeypatch.setattr(about, "version", lambda: "9.9.9")
    line = about.edition("04_closure", VERSION)
    assert (
        f"written for version {VERSION}, and nqf_lite 9.9.9 is installed"
        in line
    )
    monkeypatch.setattr(about, "version", lambda: VERSION)
    assert "Note:" not in about.edition("04_closure", VERSION)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: about.report(3), "page"),
        (lambda: about.report("  "), "page"),
        (lambda: about.edition("04_closure", 2), "written_for"),
        (lambda: about.issue_url("t", None), "body"),
        (lambda: about.issue_url(1, "b"), "title"),
    ],
)
def test_bad_arguments_are_named(call, name):
    with pytest.raises(TypeError, match=name):
        call()


def test_notebook_editions_record_the_version():
    import json

    for nb in sorted((ROOT / "editions").glob("*/*.ipynb")):
        data = json.loads(nb.read_text(encoding="utf-8"))
        assert data["metadata"]["nqf_edition"]["version"] == VERSION, nb.name
        first = "".join(data["cells"][0]["source"])
        assert f"edition({nb.stem!r}, {VERSION!r})" in first, (
            f"{nb.name}: the first cell does not name its edition"
        )


def test_old_module_paths_forward_with_a_warning():
    import importlib
    import sys
    import warnings

    import nqf_lite.book.claims as new

    for name in ("nqf_lite.claims", "nqf_lite.architectures.mlp"):
        sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("nqf_lite.claims")
        mlp = importlib.import_module("nqf_lite.architectures.mlp")
    assert old is new
    assert mlp is importlib.import_module("nqf_lite.expansion.models.mlp")
    assert mlp.__spec__.name == "nqf_lite.expansion.models.mlp"
    msgs = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert any("nqf_lite.book.claims" in m for m in msgs)
    assert any("nqf_lite.expansion.models.mlp" in m for m in msgs)
