"""Sphinx extension: the claims ledger page.

Every chapter checks its predictions with :class:`nqf_lite.book.claims.Claims`,
which appends one JSON line per claim to ``$NQF_CLAIMS_DIR/<chapter>.jsonl``
while the notebook executes.  The directive ``{claims-ledger}`` marks where
the ledger table goes.  Sphinx reads (and so executes) every document before
it resolves and writes any of them, so the table is built at
``doctree-resolved``, when every chapter has run and written its records.

The build fails (a warning, an error under ``-W``, and an ``ExtensionError``
at ``build-finished``) when a recorded claim failed, a record is malformed,
or ``NQF_CLAIMS_DIR`` is set but holds no claim.  Without ``NQF_CLAIMS_DIR``
the page says that the ledger is produced by the book build.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
import math
import os
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from nqf_lite.book.claims import CLAIMS_DIR_ENV, KINDS, Claim

# The record schema has one source, nqf_lite.book.claims.Claim: fields without
# a default are required.
FIELDS = tuple(
    f.name
    for f in dataclasses.fields(Claim)
    if f.default is dataclasses.MISSING
    and f.default_factory is dataclasses.MISSING
)
#: Optional fields (records written before they existed still render): the
#: ensemble size, the seed-to-seed standard deviation, and the fraction of the
#: tolerance the measurement uses at the default seed.
OPTIONAL_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(Claim)
    if f.name not in FIELDS and f.name != "extra"
)
HEADERS = (
    "Claim (key)",
    "Source",
    "Prediction",
    "Measured (seeds)",
    "Criterion",
    "Margin",
    "Result",
)
WIDTHS = (36, 11, 11, 14, 16, 8, 7)
#: A claim using more than this fraction of its tolerance is flagged as tight.
TIGHT = 0.8
TIGHT_MARK = "⚠"

logger = logging.getLogger(__name__)


class claims_ledger_node(nodes.General, nodes.Element):
    """Placeholder replaced by the ledger table at ``doctree-resolved``."""


def read_claims(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Read every ``*.jsonl`` claim file in ``folder``.

    Parameters
    ----------
    folder : Path
        The ``NQF_CLAIMS_DIR`` of the build.

    Returns
    -------
    records : list of dict
        Valid records, sorted by chapter (file name) and kept in file order
        within a chapter; a repeated ``(chapter, key)`` keeps the last record.
    problems : list of str
        One message per missing folder, unreadable line or malformed record.
    """
    if not folder.is_dir():
        return [], [
            f"claims folder {folder} does not exist (no chapter recorded a "
            "claim)"
        ]
    records: dict[tuple[str, str], dict[str, Any]] = {}
    problems = []
    for path in sorted(folder.glob("*.jsonl")):
        for lineno, line in enumerate(
            path.read_text(encoding="utf-8").splitlines(), 1
        ):
            if not line.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: not valid JSON ({exc})")
                continue
            missing = [
                f for f in FIELDS if not isinstance(rec, dict) or f not in rec
            ]
            if missing:
                problems.append(
                    f"{where}: record lacks field(s) {', '.join(missing)}"
                )
                continue
            wrong = record_type_errors(rec)
            if wrong:
                problems.append(
                    f"{where}: malformed record: {'; '.join(wrong)}"
                )
                continue
            records.pop((rec["chapter"], rec["key"]), None)
            records[(rec["chapter"], rec["key"])] = rec
    ordered = sorted(
        records.values(), key=lambda r: r["chapter"]
    )  # stable: file order kept
    return ordered, problems


#: the type each required field of a record must have (measured: a number, or
#: null for NaN)
FIELD_TYPES = {
    "chapter": str,
    "key": str,
    "statement": str,
    "source": str,
    "prediction": str,
    "criterion": str,
    "passed": bool,
    "measured": (int, float, type(None)),
}


def record_type_errors(rec: dict[str, Any]) -> list[str]:
    """What is wrong with the field types of a record (empty when nothing
    is)."""
    out = [
        f"{name} must be {getattr(kind, '__name__', 'a number')}, got "
        f"{type(rec[name]).__name__}"
        for name, kind in FIELD_TYPES.items()
        if name in rec
        and (
            not isinstance(rec[name], kind)
            or (kind is not bool and isinstance(rec[name], bool))
        )
    ]
    if rec.get("kind", "prediction") not in KINDS:
        out.append(f"kind must be one of {KINDS}, got {rec.get('kind')!r}")
    return out


def kind_of(record: dict[str, Any]) -> str:
    """``"prediction"``, ``"identity"`` or ``"code"`` (records without the
    field are predictions)."""
    return record.get("kind", "prediction")


def is_code_check(record: dict[str, Any]) -> bool:
    """A check of the code (true by construction), as opposed to a prediction
    of the theory."""
    return kind_of(record) == "code"


def is_identity(record: dict[str, Any]) -> bool:
    """An exact identity of the theory checked by an independent route (to
    round-off)."""
    return kind_of(record) == "identity"


#: the words a claim's ``source`` uses for a result this book derives beyond
#: the paper
BOOK_SOURCE = "this book"


def is_book_result(record: dict[str, Any]) -> bool:
    """True when the claim's source names a result of this book, not of the
    paper."""
    return BOOK_SOURCE in str(record.get("source", "")).lower()


#: the label a report opens its issue with
REPORT_LABEL = "claim"


def report_url(record: dict[str, Any], repository_url: str) -> str:
    """A link to a new issue of the book's repository, prefilled to report one
    claim.

    The title names the claim; the body holds what a maintainer needs to
    reproduce it: the chapter and key, the statement, the measured value, the
    criterion (the tolerance), the number of seeds and the base seed
    ``NQF_SEED`` of the build that measured it.

    Parameters
    ----------
    record : dict
        A claim record (the fields of :class:`nqf_lite.book.claims.Claim`).
    repository_url : str
        The repository's address, ``https://github.com/<owner>/<name>``
        (``_config.yml``).

    Returns
    -------
    str
        ``<repository_url>/issues/new?title=...&body=...&labels=claim``,
        URL-encoded.
    """
    seed = record.get("seed")
    body = "\n".join(
        [
            f"Claim `{record['key']}` of chapter `{record['chapter']}`: "
            f"{record['statement']}",
            "",
            f"- measured: {_fmt(record['measured'])}",
            f"- prediction: {record['prediction']}",
            f"- criterion (tolerance): {record['criterion']}",
            f"- seeds: {record.get('n_seeds', 1)}; base seed NQF_SEED = "
            f"{'unknown' if seed is None else seed}",
            f"- source: {record['source']}",
            "",
            "What looks wrong:",
            "",
        ]
    )
    query = urllib.parse.urlencode(
        {
            "title": f"Claim {record['key']} ({record['chapter']})",
            "body": body,
            "labels": REPORT_LABEL,
        },
        quote_via=urllib.parse.quote,
    )
    return f"{repository_url.rstrip('/')}/issues/new?{query}"


def ledger_problems(records: list[dict[str, Any]]) -> list[str]:
    """Messages for every failed claim, or for an empty ledger."""
    if not records:
        return ["the claims ledger is empty: no chapter recorded a claim"]
    return [
        f"claim {r['chapter']}:{r['key']} FAILED: {r['statement']} "
        f"(measured {_fmt(r['measured'])}, criterion {r['criterion']})"
        for r in records
        if r["passed"] is not True
    ]


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _kinds_text(records: list[dict[str, Any]], theory: str) -> str:
    """``"12 predictions<theory>, 3 identities and 2 checks of the code"``
    (absent kinds left out)."""
    code = sum(is_code_check(r) for r in records)
    ident = sum(is_identity(r) for r in records)
    parts = [f"{_count(len(records) - code - ident, 'prediction')}{theory}"]
    if ident:
        parts.append(f"{ident} identit{'y' if ident == 1 else 'ies'}")
    if code:
        parts.append(f"{_count(code, 'check')} of the code")
    return (
        parts[0]
        if len(parts) == 1
        else ", ".join(parts[:-1]) + " and " + parts[-1]
    )


def summary_text(
    records: list[dict[str, Any]], threshold: float = TIGHT
) -> str:
    """One sentence: how many predictions, identities and code checks, from how
    many chapters, how many pass and are tight.

    Predictions of the theory, exact identities (``kind == "identity"``) and
    checks of the code (``kind == "code"``) are counted apart, so the number of
    predictions is honest.  A claim is tight when it uses more than
    ``threshold`` of its tolerance (:func:`is_tight`); records without a margin
    never count as tight.
    """
    chapters = len({r["chapter"] for r in records})
    failed = sum(r["passed"] is not True for r in records)
    head = _kinds_text(records, " of the theory")
    head += f" checked in {_count(chapters, 'chapter')}: "
    text = head + (f"{failed} FAIL." if failed else "all pass.")
    tight = sum(is_tight(r, threshold) for r in records if r["passed"] is True)
    if tight:
        verb = "uses" if tight == 1 else "use"
        its = "its" if tight == 1 else "their"
        text += (
            f" {TIGHT_MARK} {tight} {verb} more than {threshold:.0%} of "
            f"{its} tolerance."
        )
    return text


def margin_of(record: dict[str, Any]) -> float | None:
    """The record's margin as a float, or ``None`` (absent, null or not a
    number)."""
    value = record.get("margin")
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def is_tight(record: dict[str, Any], threshold: float = TIGHT) -> bool:
    """True when the claim uses more than ``threshold`` of its tolerance
    (margin > threshold)."""
    m = margin_of(record)
    return m is not None and m > threshold


def margin_text(record: dict[str, Any]) -> str:
    """The margin as a percentage (``"37 %"``, with a no-break space), ``"∞"``,
    or ``"—"`` when unknown."""
    m = margin_of(record)
    if m is None:
        return "—"
    if math.isinf(m):
        return "∞"
    return f"{100 * m:.0f}\u00a0%"  # no line break between the number and %


def seeds_text(record: dict[str, Any]) -> str | None:
    """The ensemble behind a measurement: ``"5 seeds, sd 0.012"``, ``"1
    seed"``.

    ``None`` for a record written before ``n_seeds`` existed.
    """
    n = record.get("n_seeds")
    if n is None:
        return None
    text = f"{n} seed{'' if n == 1 else 's'}"
    spread = record.get("spread")
    return text if spread is None else f"{text}, sd {_fmt(spread)}"


def _fmt(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f"{v:.4g}" if math.isfinite(v) else str(v)


def _cell(content: nodes.Node | str) -> nodes.entry:
    entry = nodes.entry()
    if isinstance(content, str):
        content = nodes.paragraph(text=content)
    elif not isinstance(content, nodes.paragraph):
        content = nodes.paragraph("", "", content)
    entry += content
    return entry


def ledger_table(
    records: Iterable[dict[str, Any]],
    chapter_link: Callable[[str], tuple[str, str] | None],
    chapter_rows: bool = True,
    report: Callable[[dict[str, Any]], str] | None = None,
) -> nodes.table:
    """Build the ledger as a docutils table (a pure function of its inputs).

    Records are grouped by chapter: a chapter row (class ``claims-chapter``,
    one cell spanning the table, linking to the chapter) heads the rows of its
    claims.  A claim row shows the statement with its key below it, the paper
    source, the prediction, the measured value (with the number of seeds and
    the seed-to-seed spread below it, when recorded), the criterion, the margin
    (the fraction of the tolerance used; marked with ``⚠`` above
    :data:`TIGHT`) and the result.

    Parameters
    ----------
    records : iterable of dict
        Claim records with the keys in :data:`FIELDS`, sorted by chapter.
    chapter_link : callable
        ``chapter_link(chapter) -> (title, refuri)`` for a chapter page, or
        ``None`` when the chapter has no page (then its name is shown).
    chapter_rows : bool, default True
        Head each chapter's claims with a chapter row (off when the table
        sits under its chapter's own heading, as in :func:`ledger_sections`).
    report : callable, optional
        ``report(record) -> url``: under the key, a "report" link to that
        address (a prefilled new issue, :func:`report_url`).

    Returns
    -------
    docutils.nodes.table
        One header row, then per chapter one chapter row and one row per
        claim; a claim row's id is ``claim-<chapter>-<key>`` and its classes
        ``claim-pass`` or ``claim-fail``, plus ``claim-tight`` for a claim
        using more than :data:`TIGHT` of its tolerance.
    """
    table = nodes.table(classes=["claims-ledger"])
    group = nodes.tgroup(cols=len(HEADERS))
    table += group
    for width in WIDTHS:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for h in HEADERS:
        row += _cell(h)
    head += row
    group += head
    body = nodes.tbody()
    chapter = None
    for r in records:
        if chapter_rows and r["chapter"] != chapter:
            chapter = r["chapter"]
            link = chapter_link(chapter)
            label = (
                nodes.Text(chapter)
                if link is None
                else nodes.reference(
                    "", link[0], internal=True, refuri=link[1]
                )
            )
            heading = nodes.row(classes=["claims-chapter"])
            cell = _cell(nodes.strong("", "", label))
            cell["morecols"] = len(HEADERS) - 1
            heading += cell
            body += heading
        ok = r["passed"] is True
        tight = is_tight(r)
        row = nodes.row(
            ids=[nodes.make_id(f"claim-{r['chapter']}-{r['key']}")],
            classes=["claim-pass" if ok else "claim-fail"]
            + (["claim-tight"] if tight else []),
        )
        claim = _cell(str(r["statement"]))
        claim += nodes.paragraph(
            "", "", nodes.literal(text=r["key"]), classes=["claim-key"]
        )
        if report is not None:
            claim += nodes.paragraph(
                "",
                "",
                nodes.reference(
                    "", "report", refuri=report(r), internal=False
                ),
                classes=["claim-report"],
            )
        row += claim
        source = _cell(str(r["source"]))
        if is_book_result(r):
            source["classes"].append("claim-book-result")
        row += source
        row += _cell(str(r["prediction"]))
        measured = _cell(_fmt(r["measured"]))
        seeds = seeds_text(r)
        if seeds is not None:
            measured += nodes.paragraph(text=seeds, classes=["claim-seeds"])
        row += measured
        row += _cell(str(r["criterion"]))
        margin = margin_text(r)
        row += _cell(
            nodes.strong(text=f"{TIGHT_MARK}\u00a0{margin}")
            if tight
            else margin
        )
        row += _cell(nodes.strong(text="pass" if ok else "FAIL"))
        body += row
    group += body
    return table


def chapter_summary(records: list[dict[str, Any]]) -> str:
    """``"17 predictions, 3 identities and 2 checks of the code: all pass"``
    for one chapter's records."""
    text = _kinds_text(records, "")
    failed = sum(r["passed"] is not True for r in records)
    return text + (f": {failed} FAIL" if failed else ": all pass")


def book_results(
    records: list[dict[str, Any]],
    chapter_link: Callable[[str], tuple[str, str] | None],
) -> list[nodes.Node]:
    """The claims on results this book derives beyond the paper, as a folded
    list of links.

    Every record whose ``source`` names "this book" (:func:`is_book_result`) is
    listed with its chapter, its statement and its source, linked to its row of
    the ledger; an empty list when there is none.
    """
    mine = [r for r in records if is_book_result(r)]
    if not mine:
        return []
    items = []
    for r in mine:
        link = chapter_link(r["chapter"])
        title = html.escape(link[0] if link else r["chapter"])
        anchor = nodes.make_id(f"claim-{r['chapter']}-{r['key']}")
        items.append(
            "<li><a "
            f'href="#{anchor}"><code>{html.escape(r["key"])}</code></a> '
            f"({title}): "
            f"{html.escape(str(r['statement']))} <em>Source: "
            f"{html.escape(str(r['source']))}</em></li>"
        )
    return [
        nodes.raw(
            "",
            '<details class="claims-book-results">'
            f"<summary>Source: this book — {_count(len(mine), 'claim')} on "
            "results the book derives "
            "beyond the paper</summary><ul>"
            + "".join(items)
            + "</ul></details>",
            format="html",
        )
    ]


def ledger_sections(
    records: list[dict[str, Any]],
    chapter_link: Callable[[str], tuple[str, str] | None],
    report: Callable[[dict[str, Any]], str] | None = None,
) -> list[nodes.Node]:
    """The ledger grouped by chapter, each chapter folded (an HTML
    ``<details>``).

    A chapter's fold is headed by its title (linked) and its counts; inside,
    the table of its predictions, then, apart, the table of its identities and
    the table of its checks of the code.  A chapter with a failed claim is
    shown open.  ``report`` as in
    :func:`ledger_table`.
    """
    out: list[nodes.Node] = []
    chapters: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        chapters.setdefault(r["chapter"], []).append(r)
    for chapter, recs in chapters.items():
        link = chapter_link(chapter)
        title = html.escape(link[0] if link else chapter)
        head = (
            f'<a href="{html.escape(link[1])}">{title}</a>' if link else title
        )
        failed = any(r["passed"] is not True for r in recs)
        out.append(
            nodes.raw(
                "",
                "<details "
                f'class="claims-chapter-group"{" open" if failed else ""}>'
                f"<summary>{head} — "
                f"{html.escape(chapter_summary(recs))}</summary>",
                format="html",
            )
        )
        predictions = [r for r in recs if kind_of(r) == "prediction"]
        identities = [r for r in recs if is_identity(r)]
        code = [r for r in recs if is_code_check(r)]
        if predictions:
            out.append(
                ledger_table(
                    predictions,
                    chapter_link,
                    chapter_rows=False,
                    report=report,
                )
            )
        if identities:
            out.append(
                nodes.paragraph(
                    text="Identities (exact, checked by an independent route "
                    "to round-off):",
                    classes=["claims-identity"],
                )
            )
            out.append(
                ledger_table(
                    identities, chapter_link, chapter_rows=False, report=report
                )
            )
        if code:
            out.append(
                nodes.paragraph(
                    text="Checks of the code (true by construction):",
                    classes=["claims-code"],
                )
            )
            out.append(
                ledger_table(
                    code, chapter_link, chapter_rows=False, report=report
                )
            )
        out.append(nodes.raw("", "</details>", format="html"))
    return out


def _claims_dir() -> Path | None:
    folder = os.environ.get(CLAIMS_DIR_ENV)
    return Path(folder).resolve() if folder else None


class ClaimsLedgerDirective(SphinxDirective):
    """``{claims-ledger}``: where the generated ledger table goes."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        docs = getattr(self.env, "claims_ledger_docs", set())
        docs.add(self.env.docname)
        self.env.claims_ledger_docs = docs
        return [claims_ledger_node()]


def _find_chapter_doc(app: Sphinx, chapter: str) -> str | None:
    candidates = [f"notebooks/{chapter}", chapter]
    candidates += sorted(
        d for d in app.env.found_docs if d.rsplit("/", 1)[-1] == chapter
    )
    return next((d for d in candidates if d in app.env.found_docs), None)


def _resolve(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    placeholders = list(doctree.findall(claims_ledger_node))
    if not placeholders:
        return
    folder = _claims_dir()
    if folder is None:
        note = nodes.paragraph(
            text=(
                "This ledger is generated by the book build: it executes "
                "every chapter with "
                f"{CLAIMS_DIR_ENV} set and lists here each claim the chapters "
                "checked."
            )
        )
        for node in placeholders:
            node.replace_self(note.deepcopy())
        return
    records, problems = read_claims(folder)
    problems += ledger_problems(records)
    for msg in problems:
        logger.warning(msg, location=docname, type="claims", subtype="ledger")

    @functools.cache  # one warning per missing chapter, not per row
    def chapter_link(chapter: str) -> tuple[str, str] | None:
        doc = _find_chapter_doc(app, chapter)
        if doc is None:
            logger.warning(
                f"claims of chapter {chapter!r} have no page in the book",
                location=docname,
                type="claims",
                subtype="chapter",
            )
            return None
        title = (
            app.env.titles[doc].astext() if doc in app.env.titles else chapter
        )
        return title, app.builder.get_relative_uri(docname, doc)

    repository = _repository_url(app)
    report = (
        None
        if repository is None
        else functools.partial(_report_of, repository)
    )
    sections = book_results(records, chapter_link) + ledger_sections(
        records, chapter_link, report
    )
    summary = nodes.paragraph(classes=["claims-ledger-summary"])
    summary += nodes.strong(text=summary_text(records))
    for node in placeholders:
        node.replace_self(
            [summary.deepcopy()] + [s.deepcopy() for s in sections]
        )


def _report_of(repository: str, record: dict[str, Any]) -> str:
    return report_url(record, repository)


def _repository_url(app: Sphinx) -> str | None:
    """The book's repository address: the theme's ``repository_url``, else
    ``_config.yml``."""
    url = (getattr(app.config, "html_theme_options", None) or {}).get(
        "repository_url"
    )
    if url:
        return str(url)
    config = Path(app.srcdir) / "_config.yml"
    if config.is_file():
        import yaml

        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        url = (data.get("repository") or {}).get("url")
    return str(url) if url else None


def _always_reread(
    app: Sphinx, env: Any, added: set, changed: set, removed: set
) -> list[str]:
    """Re-read the ledger page every build: its content lives outside the
    sources."""
    return sorted(getattr(env, "claims_ledger_docs", set()) - removed)


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "claims_ledger_docs", set()).discard(docname)


def _merge(app: Sphinx, env: Any, docnames: set, other: Any) -> None:
    docs = getattr(env, "claims_ledger_docs", set())
    docs |= getattr(other, "claims_ledger_docs", set())
    env.claims_ledger_docs = docs


def _fail_build(app: Sphinx, exception: Exception | None) -> None:
    """Fail the build after writing when the ledger has a problem."""
    if exception is not None or not getattr(
        app.env, "claims_ledger_docs", None
    ):
        return
    folder = _claims_dir()
    if folder is None:
        return
    records, problems = read_claims(folder)
    problems += ledger_problems(records)
    if problems:
        raise ExtensionError("claims ledger: " + "; ".join(problems))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(claims_ledger_node)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("doctree-resolved", _resolve)
    app.connect("env-get-outdated", _always_reread)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _fail_build)
    return {
        "version": "1.0",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
