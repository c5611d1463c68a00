"""One source, many editions: each chapter notebook becomes its page, its
reader notebook and its student notebook (and its PDF, from the page).

- The **reader edition** (``editions/reader/<chapter>.ipynb``, opened by the
  Colab and Binder buttons) is the chapter in plain Markdown: boxes framed,
  solutions folded, references as the page reads them ("Fig. 4.1",
  "Theorem 2 of the paper", "(Ziyin et al., 2026)"), equations numbered, a
  glued number as ``⟨key⟩`` (its value is printed under the cell that
  computes it: the set-up cell calls ``show_numbers``).
- The **student edition** has no solution; each coding exercise is its
  scaffold and its check.

The sources are read by the parsers the build uses: ``sphinx_external_toc``
(contents), ``pybtex`` (bibliography), ``myst_parser``'s markdown-it parser
and directive parser (each token's source lines are edited, the rest is
kept as written), ``nbformat`` (notebooks).

**Numbers are Sphinx's, never derived here.**  At the end of every HTML
build this extension collects them from the environment
(:mod:`edition_numbers`) into the committed ``_ext/editions_numbers.json``.
``scripts/editions.py`` writes the editions from that file without a build,
and ``tests/test_editions.py`` (before any build) checks the committed
editions against it.  When a build finds numbers that differ from the file,
it rewrites the file and the editions, then fails (commit them): a stale
file cannot pass CI.  Until then a new label reads ``??`` in the editions
(``scripts/editions.py`` warns; the test and ``--check`` fail), so a
chapter that gains a label, a heading or a figure needs one build before
its editions can be committed.  The build also copies the editions into the
site, points the launch buttons at them and links them (and the chapter's
PDF) from the page.
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml
from docutils.parsers.rst import Directive
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.directives import parse_directive_text
from myst_parser.parsers.mdit import create_md_parser
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pybtex.database import parse_file
from pybtex.richtext import Text
from sphinx_external_toc.api import FileItem
from sphinx_external_toc.parsing import parse_toc_yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import book_meta  # noqa: E402  (the book's version and release date)
import edition_numbers  # noqa: E402  (Sphinx's numbers, committed)
from paper_boxes import KINDS, parse_title  # noqa: E402  (box titles)

EDITIONS = ("reader", "student")
EDITIONS_DIR, PDF_DIR = "editions", "pdf"
STUDENT_ZIP = "student-notebooks.zip"
ADMONITIONS = "note tip important warning seealso hint caution attention"
DIRECTIVE = ("fence", "colon_fence")  # with info "{name} argument"
#: markdown-it tokens of MyST-only markup: none may remain in an edition
MYST_TOKENS = ("myst_role", "myst_target", "math_block_label")
#: what a label names; kind: section, figure, equation, exercise or box
#: (``box``: its sphinx-proof kind), number as Sphinx gave it (or None)
Target = namedtuple("Target", "kind number title doc box")
Page = namedtuple("Page", "doc number path")  # a page of the contents


class EditionError(ValueError):
    """Markup the editions cannot render, or a label nobody defines."""


@dataclass
class Book:
    """What a chapter's references can point at."""

    root: Path
    pages: list[Page]  # the table of contents, in order (named pages)
    numbers: dict[str, Any]  # see edition_numbers.collect
    citations: dict[str, tuple[str, str]]  # key -> (authors, year)
    repository: str
    md: Any  # the markdown-it parser of the book's MyST configuration
    strict: bool = True  # unknown label: error (else "??" and a warning)
    missing: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        items = self.numbers["labels"].items()
        self.labels = {k: Target(**v) for k, v in items}


def toc_docs(root: Path) -> list[str]:
    """The pages the table of contents names, in reading order."""
    site = parse_toc_yaml(root / "_toc.yml")

    def walk(doc: str):
        yield doc
        for tree in site[doc].subtrees:
            for item in tree.items:
                if isinstance(item, FileItem):
                    yield from walk(str(item))

    return list(walk(site.root.docname))


def citations(paths: list[Path]) -> dict[str, tuple[str, str]]:
    """``key -> (authors as the page cites them, year)``, read by pybtex."""
    out = {}
    for path in paths:
        for key, entry in parse_file(path).entries.items():
            last = [
                Text.from_latex(" ".join(p.prelast_names + p.last_names))
                for p in entry.persons.get("author", [])
            ]
            last = [name.render_as("text") for name in last]
            authors = " and ".join(last) if len(last) < 3 else last[0]
            authors += " et al." if len(last) > 2 else ""
            out[key] = (authors, entry.fields.get("year", ""))
    return out


def load_book(root: Path = ROOT, numbers=None, strict: bool = True) -> Book:
    """The book at ``root``; its numbers from the committed file."""
    config = yaml.safe_load((root / "_config.yml").read_text("utf-8"))
    numbers = numbers or edition_numbers.load()
    pages = []
    for doc in toc_docs(root):
        for path in (root / f"{doc}.ipynb", root / f"{doc}.md"):
            if path.is_file():
                first = (numbers["sections"].get(doc) or [[None]])[0]
                pages.append(Page(doc, first[0], path))
                break
    parse = config.get("parse", {})
    myst = MdParserConfig(
        enable_extensions=set(parse.get("myst_enable_extensions", [])),
        dmath_double_inline=parse.get("myst_dmath_double_inline", False),
    )
    bib = [root / f for f in config.get("bibtex_bibfiles", [])]
    md = create_md_parser(myst, RendererHTML)
    url = config["repository"]["url"]
    return Book(root, pages, numbers, citations(bib), url, md, strict)


def chapters(book: Book) -> list[Page]:
    """The pages that have editions: the notebooks of the contents."""
    return [p for p in book.pages if p.path.suffix == ".ipynb"]


# ---------------------------------------------------------------- MyST text


@dataclass
class Context:
    """What rendering one chapter's markdown needs."""

    book: Book
    doc: str
    edition: str
    glued: dict[str, str] = field(default_factory=dict)  # key -> format
    heading: int = 0  # the page's headings rendered so far


def _target(ctx: Context, label: str, role: str) -> Target:
    labels = ctx.book.labels  # the std domain's labels are lower case
    target = labels.get(label) or labels.get(label.lower())
    if target is None and ctx.book.strict:
        raise EditionError(f"{ctx.doc}: {{{role}}} to unknown label {label!r}")
    if target is None:
        ctx.book.missing.add(label)
    return target or Target("?", "??", label, "", "")


def _role(ctx: Context, name: str, body: str) -> str:
    if name == "glue:text":
        key, _, spec = body.partition(":")
        ctx.glued.setdefault(key, spec)
        return f"⟨{key}⟩"
    if name in ("cite", "cite:p", "cite:t"):
        refs = []
        for key in (k.strip() for k in body.split(",")):
            if key not in ctx.book.citations:
                raise EditionError(f"{ctx.doc}: {{cite}} of unknown {key!r}")
            authors, year = ctx.book.citations[key]
            t = name == "cite:t"
            refs.append(f"{authors} ({year})" if t else f"{authors}, {year}")
        return "; ".join(refs) if name == "cite:t" else f"({'; '.join(refs)})"
    if name == "math":
        return f"${body}$"
    text, sep, label = body.rstrip().rpartition("<")  # "text <label>"
    if not (sep and label.endswith(">") and text.strip()):
        text, label = "", body.strip() + ">"
    text, label = text.strip(), label[:-1].strip()
    if name == "term":
        return text or label
    if name not in ("eq", "numref", "ref", "prf:ref"):
        raise EditionError(f"{ctx.doc}: role {{{name}}} has no rendering")
    target = _target(ctx, label, name)
    number, kind = target.number, target.kind
    if name in ("eq", "numref") and number is None:
        raise EditionError(f"{ctx.doc}: {{{name}}} to unnumbered {label!r}")
    if text and name in ("eq", "numref"):
        return text.replace("%s", number).replace("{number}", number)
    formats = ctx.book.numbers["formats"]
    if text:
        return text
    if name == "eq" or (name == "numref" and kind == "equation"):
        return formats["equation"].format(number=number)
    if name == "numref":
        return formats.get(kind, "%s").replace("%s", number)
    if name == "prf:ref" and kind == "box":
        return parse_title(target.box, target.title)[0]
    if kind == "section" and number:
        what = "Chapter" if "." not in number else "Section"
        return f"{what} {number}, *{target.title}*"
    return target.title


def _find_roles(ctx: Context, text: str, children: list, pos: int, edits):
    """Add to ``edits`` the ``(start, end, new)`` of the roles among an
    inline token's ``children``, found in ``text`` in order from ``pos``;
    return where the last one ends."""
    for child in children:
        if child.type == "code_inline":  # a role in code is not a role
            code = f"{child.markup}{child.content}{child.markup}"
            at = text.find(code, pos)
            pos = pos if at < 0 else at + len(code)
        if child.type != "myst_role":
            continue
        name = child.meta["name"]
        at = text.find(f"{{{name}}}`", pos)
        start = at + len(name) + 2
        ticks = len(text[start:]) - len(text[start:].lstrip("`"))
        pos = text.find("`" * ticks, start + ticks) + ticks
        if at < 0 or pos < ticks:
            raise EditionError(f"{ctx.doc}: cannot place role {{{name}}}")
        edits.append((at, pos, _role(ctx, name, child.content)))
    return pos


def _apply(text: str, edits: list) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def render_inline(ctx: Context, text: str) -> str:
    """One line of MyST (a title, a directive's argument) as Markdown."""
    edits: list = []
    tokens = ctx.book.md.parseInline(text)
    _find_roles(ctx, text, tokens[0].children if tokens else [], 0, edits)
    return _apply(text, edits)


def _boxed(head: str, body: str) -> str:
    """A framed paragraph: a rule, the bold head, the body, a rule."""
    inner = f"\n\n{body.strip()}" if body.strip() else ""
    return f"\n\n---\n\n{head}{inner}\n\n---\n\n"


def _details(summary: str, body: str) -> str:
    summary = f"<details>\n<summary><b>{summary}</b></summary>"
    return f"\n\n{summary}\n\n{body.strip()}\n\n</details>\n\n"


class _AnyDirective(Directive):
    """How MyST splits any directive: one argument, options, a body."""

    optional_arguments, final_argument_whitespace = 1, True
    has_content, option_spec = True, {"label": str}


def _directive(ctx: Context, name: str, arg: str, content: str) -> str:
    parsed = parse_directive_text(
        _AnyDirective, arg, content, validate_options=False
    )
    arg = parsed.arguments[0] if parsed.arguments else ""
    label = parsed.options.get("label", "")
    body = _render(ctx, "\n".join(parsed.body), top=False)
    kind = name.removeprefix("prf:")
    if name == "admonition":
        title = render_inline(ctx, arg)
        if "dropdown" in (parsed.options.get("class") or "").split():
            return _details(title, body)
        return _boxed(f"**{title}**", body)
    if name in ADMONITIONS.split():
        return _boxed(f"**{name.title()}**", body)
    if name.startswith("prf:") and kind in KINDS:
        head, box_name = parse_title(kind, arg)
        if " (this book)" in arg:
            head = f"{kind.title()} (this book)"
        box_name = f" — {render_inline(ctx, box_name)}" if box_name else ""
        return _boxed(f"**{head}**{box_name}", body)
    if name == "prf:proof":
        return f"\n\n*Proof.* {body.strip()} ∎\n\n"
    if name == "exercise":
        number = _target(ctx, label, "exercise").number
        title = f" ({render_inline(ctx, arg)})" if arg else ""
        return _boxed(f"**Exercise {number}**{title}", body)
    if name == "solution":
        number = _target(ctx, arg.strip(), "solution").number
        if ctx.edition == "student":
            return ""
        return _details(f"Solution to Exercise {number}", body)
    if name in ("solution-start", "solution-end"):
        return ""  # a gated solution's cells: see edition()
    raise EditionError(f"{ctx.doc}: directive {{{name}}} has no rendering")


def _heading(ctx: Context, markup: str, title: str) -> str:
    """A page heading with the number Sphinx gives it (in page order)."""
    sections = ctx.book.numbers["sections"].get(ctx.doc, [])
    if ctx.heading >= len(sections) and ctx.book.strict:
        raise EditionError(f"{ctx.doc}: more headings than the built page")
    number = sections[ctx.heading][0] if ctx.heading < len(sections) else 0
    ctx.heading += 1
    if number:
        markup += f" {number}{'.' if '.' not in number else ''}"
    return f"{markup} {render_inline(ctx, title)}"


def _math_label(ctx: Context, lines: list[str], label: str) -> str:
    r"""``$$ ... $$ (label)`` as ``$$ ... \tag{number} $$``."""
    tag = rf"\tag{{{_target(ctx, label, 'eq').number}}}"
    last = lines[-1][: lines[-1].rindex("$$")]
    if last.strip():  # on the line of the closing $$
        return "\n".join([*lines[:-1], f"{last.rstrip()} {tag} $$"])
    return "\n".join([*lines[:-1], f"{last}{tag}", f"{last}$$"])


def _render(ctx: Context, text: str, top: bool = True) -> str:
    """MyST ``text`` as Markdown: each token's source lines edited."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    tokens = ctx.book.md.parse(text)
    edits: list = []
    pos = 0  # the roles are found in order

    def replace(a: int, b: int, new: str) -> None:
        end = starts[b] if b < len(lines) else len(text)
        edits.append((starts[a], end, new + "\n" if new else ""))

    for i, tok in enumerate(tokens):
        a, b = tok.map or (0, 0)
        after_heading = i and tokens[i - 1].type == "heading_open"
        if tok.type == "heading_open" and top:
            replace(a, b, _heading(ctx, tok.markup, tokens[i + 1].content))
        elif tok.type == "inline" and not (after_heading and top):
            start = max(pos, starts[a])
            pos = _find_roles(ctx, text, tok.children, start, edits)
        elif tok.type == "myst_target":
            replace(a, b, "")
        elif tok.type == "math_block_label":
            replace(a, b, _math_label(ctx, lines[a:b], tok.info))
        elif tok.type in DIRECTIVE and tok.info[:1] == "{":
            name, _, arg = tok.info[1:].partition("}")
            replace(a, b, _directive(ctx, name, arg.strip(), tok.content))
    out = _apply(text, edits)
    while "\n\n\n" in out:
        out = out.replace("\n\n\n", "\n\n")
    return out


def render_markdown(ctx: Context, text: str) -> str:
    """A chapter's MyST markdown as plain Jupyter Markdown."""
    out = _render(ctx, text).strip("\n")
    for t in ctx.book.md.parse(out):
        inner = [c.type for c in t.children or []]
        directive = t.type in DIRECTIVE and t.info[:1] == "{"
        if t.type in MYST_TOKENS or set(inner) & set(MYST_TOKENS) or directive:
            line = out.split("\n")[t.map[0]]
            raise EditionError(f"{ctx.doc}: MyST markup left: {line!r}")
    return out


# ------------------------------------------------------------------- cells


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _code(cell_id: str, text: str, hidden_title: str | None = None) -> Any:
    """A code cell; with a title, folded (Jupyter) and a form (Colab)."""
    if hidden_title is None:
        return new_code_cell(text, id=cell_id)
    metadata = {"cellView": "form", "jupyter": {"source_hidden": True}}
    text = f"# @title {hidden_title}\n{text}"
    return new_code_cell(text, id=cell_id, metadata=metadata)


INTRO = """*{number}Neural Quadratic Forms: an executable book*, version \
{release.version} ({release.released}; {book.repository}). This is \
the **{edition} edition**: \
{what}

Run the cells from the top (in Colab: *Runtime → Run all*); the first one \
installs `nqf_lite` if it is missing. Numbers the text quotes read ⟨name⟩: \
each is printed under the cell that computes it. Every claim the text makes \
is checked by the code, for any random seed: run `%env NQF_SEED=7` before \
the first cell to redraw every random quantity."""
WHAT = {
    "reader": "the same text, code and checks as the page, in plain notebook "
    "form. Solutions are folded: click *Solution* to open one.",
    "student": "the solutions are removed. Each coding exercise has a cell "
    "that says `...  # your code`: complete it, then run the check cell below "
    "it, which answers right, or wrong with a hint.",
}
SETUP = """{install}

# Which edition this is; nqf_lite.book.about.report() prints a problem
# report
from nqf_lite.book.about import edition

edition({stem!r}, {release.version!r})

# Numbers the text quotes, with the format the page prints them in
from nqf_lite.book.claims import show_numbers

show_numbers({{
{spec}}})
"""


def _intro(ctx: Context, number: str | None) -> str:
    number = f"Chapter {number} of " if number else ""
    release = book_meta.edition(ctx.book.root)
    what = WHAT[ctx.edition]
    return INTRO.format(number=number, release=release, book=ctx.book,
                        edition=ctx.edition, what=what)  # fmt: skip


def _setup_cell(ctx: Context, install: str) -> Any:
    """The install cell, then ``edition(...)`` and ``show_numbers(...)``."""
    install = install.rstrip("\n").replace('"nqf_lite @', '"nqf_lite[book] @')
    spec = "".join(f"    {k!r}: {v!r},\n" for k, v in ctx.glued.items())
    release = book_meta.edition(ctx.book.root)
    text = SETUP.format(install=install, stem=Path(ctx.doc).name,
                        release=release, spec=spec)  # fmt: skip
    return _code("edition-setup", text, "Set-up: run this cell first")


def _figure(ctx: Context, cell: Any) -> tuple[str | None, Any]:
    """A code cell's figure: ``(number, caption cell)``, or two Nones."""
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    if not (label := mystnb.get("figure", {}).get("name")):
        return None, None
    number = _target(ctx, label, "figure").number
    caption = render_markdown(ctx, mystnb["figure"].get("caption", ""))
    text = f"**Fig. {number}.** {caption}"
    if alt := mystnb.get("image", {}).get("alt"):  # its text alternative
        text += f"\n\n*Figure description:* {alt}"
    return number, new_markdown_cell(text, id=f"{cell['id']}-caption")


def _gate(ctx: Context, text: str) -> tuple[str, str] | None:
    """``(directive, label)`` of a ``{solution-start}``/``-end`` cell."""
    for tok in ctx.book.md.parse(text):
        name, _, arg = tok.info[1:].partition("}")
        if tok.info[:1] == "{" and name in ("solution-start", "solution-end"):
            return name, arg.strip()
    return None


def edition(book: Book, doc: str, name: str) -> Any:
    """The ``name`` edition ("reader" or "student") of chapter ``doc``."""
    if name not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {name!r}")
    nb = nbformat.read(book.root / f"{doc}.ipynb", as_version=4)
    ctx, cells, out = Context(book, doc, name), nb.cells, []
    if not cells or "remove-cell" not in _tags(cells[0]):
        raise EditionError(f"{doc}: the first cell must be the install cell")
    solution = None  # the exercise of a gated solution's cells
    for cell in cells[1:]:
        text, tags, cid = cell.source, _tags(cell), cell["id"]
        if cell.cell_type == "markdown":
            gate = _gate(ctx, text)
            if gate and gate[0] == "solution-start":
                solution = gate[1]
                number = _target(ctx, solution, "solution-start").number
                note = f"**Solution to Exercise {number}**: the code below "
                note += "is folded; open it to read it."
                if name == "reader":
                    out.append(new_markdown_cell(note, id=cid))
            elif gate:
                solution = None
            elif (rendered := render_markdown(ctx, text)).strip():
                out.append(new_markdown_cell(rendered, id=cid))
        elif "scaffold" in tags:
            if name == "student":
                out.append(_code(cid, text))
        elif solution is not None:
            number = _target(ctx, solution, "solution").number
            if name == "reader":
                out.append(_code(cid, text, f"Solution to Exercise {number}"))
        elif "solution" in tags:
            raise EditionError(f"{doc}: solution cell {cid} is not gated")
        else:
            number, caption = _figure(ctx, cell)
            title = None
            if {"hide-input", "remove-cell", "remove-input"} & set(tags):
                title = "Code (folded on the page)"
                if number:
                    title = f"Code of Fig. {number}"
                elif "claims.check(" in text:
                    title = "Checks of the claims"
            out += [_code(cid, text, title)] + ([caption] if caption else [])
    if solution is not None:
        raise EditionError(f"{doc}: {{solution-start}} {solution} not ended")
    sections = book.numbers["sections"].get(doc, [])
    if book.strict and ctx.heading != len(sections):
        raise EditionError(f"{doc}: the built page has other headings")
    at = next(i for i, c in enumerate(out) if c.cell_type == "markdown")
    number = sections[0][0] if sections else None
    out.insert(
        at + 1, new_markdown_cell(_intro(ctx, number), id="edition-note")
    )
    out.insert(0, _setup_cell(ctx, cells[0].source))
    version = book_meta.edition(book.root).version
    result = new_notebook(cells=out)
    kernel = {"name": "python3", "display_name": "Python 3"}
    source = {"edition": name, "source": f"{doc}.ipynb", "version": version}
    result.metadata = {
        "kernelspec": nb.metadata.get("kernelspec")
        or {**kernel, "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True},
        "nqf_edition": source,
    }
    nbformat.validate(result)
    return result


def edition_path(root: Path, doc: str, name: str) -> Path:
    return root / EDITIONS_DIR / name / f"{Path(doc).name}.ipynb"


def dumps(nb: Any) -> str:
    return nbformat.writes(nb).rstrip("\n") + "\n"


def write_all(book: Book) -> list[Path]:
    """(Re)write every edition of every chapter; return what changed."""
    changed, wanted = [], set()
    for doc in (p.doc for p in chapters(book)):
        for name in EDITIONS:
            wanted.add(path := edition_path(book.root, doc, name))
            text = dumps(edition(book, doc, name))
            if not path.is_file() or path.read_text("utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    for stale in (book.root / EDITIONS_DIR).glob("*/*.ipynb"):
        if stale not in wanted:
            stale.unlink()
            changed.append(stale)
    return changed


# --------------------------------------------------------- Sphinx extension


def _build_finished(app: Any, exception: Exception | None) -> None:
    """Sphinx's numbers into the committed file (the editions rewritten and
    the build failed if they changed); the editions into the site."""
    if exception is not None or app.builder.name != "html":
        return
    from sphinx.errors import ExtensionError

    root, path = Path(app.srcdir), edition_numbers.NUMBERS_FILE
    docs = toc_docs(root)
    numbers = edition_numbers.dumps(edition_numbers.collect(app.env, docs))
    stale = [path] if path.read_text("utf-8") != numbers else []
    path.write_text(numbers, encoding="utf-8")
    stale += write_all(load_book(root))
    out = Path(app.outdir) / EDITIONS_DIR
    shutil.copytree(root / EDITIONS_DIR, out, dirs_exist_ok=True)
    with zipfile.ZipFile(out / STUDENT_ZIP, "w", zipfile.ZIP_DEFLATED) as z:
        for nb in sorted((root / EDITIONS_DIR / "student").glob("*.ipynb")):
            z.write(nb, f"nqf-student-notebooks/{nb.name}")
    if stale:
        names = ", ".join(str(p.relative_to(root)) for p in stale)
        raise ExtensionError(
            f"editions: the build numbers the book otherwise; rewritten "
            f"(review and commit them): {names}"
        )


#: the download menu of a chapter: (file, text, icon, tooltip)
DOWNLOADS = (
    ("{editions}/reader/{stem}.ipynb", "reader notebook", "book-open",
     "The chapter as a notebook for Jupyter or Colab"),
    ("{editions}/student/{stem}.ipynb", "student notebook", "user-graduate",
     "The chapter without solutions, exercises as scaffolds"),
    ("{pdf}/{stem}.pdf", "PDF", "file-pdf", "This chapter as a PDF"),
    ("{pdf}/book.pdf", "PDF (whole book)", "file-pdf",
     "The whole book as one PDF"),
)  # fmt: skip


def _launch_and_downloads(app, pagename, templatename, context, doctree):
    """Launch buttons open the reader edition; the download menu offers
    every edition and the PDFs; the page links them under its title."""
    if not (Path(app.srcdir) / f"{pagename}.ipynb").is_file():
        return
    up, stem = "../" * pagename.count("/"), Path(pagename).name
    url = [
        up + f.format(editions=EDITIONS_DIR, pdf=PDF_DIR, stem=stem)
        for f, *_ in DOWNLOADS
    ]
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if f"{pagename}.ipynb" in button.get("url", ""):
                button["url"] = button["url"].replace(
                    f"{pagename}.ipynb", url[0].removeprefix(up)
                )
        if group.get("label") == "download-buttons":
            group["buttons"] = [
                dict(
                    type="link",
                    url=u,
                    text=text,
                    icon=f"fas fa-{icon}",
                    tooltip=tip,
                    label=f"download-{text.replace(' ', '-')}-button",
                )
                for u, (_, text, icon, tip) in zip(url, DOWNLOADS)
            ]
    links = (
        '<p class="chapter-editions">This chapter as a <a class="reference '
        f'download" href="{url[0]}" download>reader notebook</a>, a <a '
        f'class="reference download" href="{url[1]}" download>student '
        'notebook</a> (no solutions) or a <a class="reference download" '
        f'href="{url[2]}">PDF</a>; run it in Colab or Binder from the rocket '
        "menu above.</p>"
    )
    context["body"] = context.get("body", "").replace(
        "</h1>", "</h1>" + links, 1
    )


def setup(app: Any) -> dict[str, Any]:
    # after the theme's buttons
    app.connect("html-page-context", _launch_and_downloads, priority=600)
    app.connect("build-finished", _build_finished)
    safe = {"parallel_read_safe": True, "parallel_write_safe": True}
    return {"version": "2.0", **safe}
