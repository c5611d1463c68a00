"""One source, many editions: each chapter notebook becomes its page, its
reader notebook and its student notebook (and its PDF, from the page).

The **reader edition** (``editions/reader/<chapter>.ipynb``, opened by the
Colab and Binder buttons) is the chapter in plain Markdown: boxes framed,
solutions folded, references as the page reads them ("Fig. 4.1", "(Ziyin et
al., 2026)"), equations numbered, a glued number as ``⟨key⟩`` (printed by the
set-up cell's ``show_numbers``).  The **student edition** has no solution;
each coding exercise is its scaffold and its check.  The sources are read by
the build's parsers (``sphinx_external_toc``, ``pybtex``, ``myst_parser``'s
markdown-it and directive parsers: each token's source lines are edited, the
rest kept as written; ``nbformat``); the numbers are Sphinx's
(:mod:`edition_numbers`).  The build rewrites them and the editions, fails
if either changed (commit them), and links the editions from the site.
"""

from __future__ import annotations

import re
import shutil
import sys
import zipfile
from collections import namedtuple
from dataclasses import dataclass, field
from itertools import accumulate, product
from pathlib import Path
from typing import Any

import nbformat
import yaml
from docutils.parsers.rst.directives.body import Container
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.directives import parse_directive_text
from myst_parser.parsers.mdit import create_md_parser
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pybtex.database import parse_file
from pybtex.richtext import Text
from sphinx.errors import ExtensionError
from sphinx.util.nodes import split_explicit_title
from sphinx_external_toc.parsing import parse_toc_yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import book_meta  # noqa: E402  (the book's version and release date)
import edition_numbers  # noqa: E402  (Sphinx's numbers, committed)
from paper_boxes import KINDS, parse_title  # noqa: E402  (box titles)

EDITIONS = ("reader", "student")
EDITIONS_DIR = "editions"
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
    md: Any  # the markdown-it parser of the book's MyST configuration
    strict: bool = True  # unknown label: error (else "??" and a warning)
    missing: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        items = self.numbers["labels"].items()
        self.labels = {k: Target(**v) for k, v in items}


def toc_docs(root: Path) -> list[str]:
    """The pages the table of contents names, in reading order (the site
    map's, which sphinx_external_toc fills depth first)."""
    return list(parse_toc_yaml(root / "_toc.yml"))


def citations(paths: list[Path]) -> dict[str, tuple[str, str]]:
    """``key -> (authors as the page cites them, year)``, read by pybtex."""
    out = {}
    for path in paths:
        for key, entry in parse_file(path).entries.items():
            names = [
                " ".join(p.prelast_names + p.last_names)
                for p in entry.persons.get("author", [])
            ]
            names = [f"{names[0]} et al."] if len(names) > 2 else names
            authors = Text.from_latex(" and ".join(names)).render_as("text")
            out[key] = (authors, entry.fields.get("year", ""))
    return out


def load_book(root: Path = ROOT, strict: bool = True) -> Book:
    """The book at ``root``; its numbers from the committed file."""
    config = yaml.safe_load((root / "_config.yml").read_text("utf-8"))
    numbers, pages = edition_numbers.load(), []
    for doc in toc_docs(root):
        for path in (root / f"{doc}.ipynb", root / f"{doc}.md"):
            if path.is_file():
                first = (numbers["sections"].get(doc) or [[None]])[0]
                pages.append(Page(doc, first[0], path))
                break
    # the MyST extensions jupyter-book enables in Sphinx
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    myst = MdParserConfig(enable_extensions=extensions)
    md = create_md_parser(myst, RendererHTML)
    bib = citations([root / f for f in config.get("bibtex_bibfiles", [])])
    return Book(root, pages, numbers, bib, md, strict)


def chapters(book: Book) -> list[Page]:
    """The pages that have editions: the notebooks of the contents."""
    return [p for p in book.pages if p.path.suffix == ".ipynb"]


def _boxed(head: str, body: str) -> str:
    """A framed paragraph: a rule, the bold head, the body, a rule."""
    inner = f"\n\n{body.strip()}" if body.strip() else ""
    return f"\n\n---\n\n{head}{inner}\n\n---\n\n"


def _details(summary: str, body: str) -> str:
    """A folded paragraph: the summary in bold, the body when opened."""
    summary = f"<details>\n<summary><b>{summary}</b></summary>"
    return f"\n\n{summary}\n\n{body.strip()}\n\n</details>\n\n"


@dataclass
class Chapter:
    """One chapter's edition as it is rendered: its MyST Markdown as plain
    Jupyter Markdown, and what the rendering has met so far."""

    book: Book
    doc: str
    edition: str
    glued: dict[str, str] = field(default_factory=dict)  # key -> format
    headings: int = 0  # the page's headings rendered so far
    solution: str | None = None  # in a gated solution: its title

    def error(self, message: str) -> EditionError:
        """The error ``message`` about this chapter."""
        return EditionError(f"{self.doc}: {message}")

    def target(self, label: str, role: str) -> Target:
        """What ``label`` names (not strict: ``??`` if the numbers lack
        it); the std domain's labels are lower case."""
        labels = self.book.labels
        if target := labels.get(label) or labels.get(label.lower()):
            return target
        if self.book.strict:
            raise self.error(f"{{{role}}} to unknown label {label!r}")
        self.book.missing.add(label)
        return Target("?", "??", label, "", "")

    def role(self, name: str, body: str) -> str:
        """The text the page shows for the role ``{name}`body```."""
        if name == "glue:text":
            key, _, spec = body.partition(":")
            self.glued.setdefault(key, spec)
            return f"⟨{key}⟩"
        if name in ("cite", "cite:p", "cite:t"):
            refs = []  # (authors, year)
            for key in (k.strip() for k in body.split(",")):
                if key not in self.book.citations:
                    raise self.error(f"{{cite}} of unknown {key!r}")
                refs.append(self.book.citations[key])
            if name == "cite:t":
                return "; ".join(f"{who} ({year})" for who, year in refs)
            return f"({'; '.join(f'{who}, {year}' for who, year in refs)})"
        explicit, text, label = split_explicit_title(body.strip())  # t <l>
        text = text if explicit else ""
        if name == "term":
            return text or label
        if name not in ("eq", "numref", "ref", "prf:ref"):
            raise self.error(f"role {{{name}}} has no rendering")
        target = self.target(label, name)
        number, kind = target.number, target.kind
        if name in ("eq", "numref"):
            if number is None:
                raise self.error(f"{{{name}}} to unnumbered {label!r}")
            fmt = "equation" if name == "eq" else kind
            text = text or self.book.numbers["formats"].get(fmt, "%s")
            return text.replace("%s", number).replace("{number}", number)
        if text:
            return text
        if name == "prf:ref" and kind == "box":
            return parse_title(target.box, target.title)[0]
        if kind == "section" and number:
            what = "Chapter" if "." not in number else "Section"
            return f"{what} {number}, *{target.title}*"
        return target.title

    def roles(self, text: str, children: list, pos: int, edits: list) -> int:
        """Add to ``edits`` the ``(start, end, new)`` of the roles among an
        inline token's ``children``, found in ``text`` in order from
        ``pos`` (as the role plugin scans them); return where the last one
        ends."""
        for child in children:
            if child.type == "code_inline":  # a role in code is not a role
                code = f"{child.markup}{child.content}{child.markup}"
                at = text.find(code, pos)
                pos = pos if at < 0 else at + len(code)
            elif child.type == "myst_role":
                name = child.meta["name"]
                role = rf"\{{{re.escape(name)}\}}(`+)(?!`).+?\1"
                if not (found := re.compile(role, re.S).search(text, pos)):
                    raise self.error(f"cannot place role {{{name}}}")
                edits.append((*found.span(), self.role(name, child.content)))
                pos = found.end()
        return pos

    def directive(self, name: str, arg: str, content: str) -> str:
        """A directive as Markdown: boxes framed, solutions and dropdowns
        folded (a gated solution's start notes its title for the code
        cells up to its end)."""
        # MyST splits every directive as a container's: an argument, options
        parsed = parse_directive_text(
            Container, arg, content, validate_options=False
        )
        body = self.markdown("\n".join(parsed.body), top=False)
        arg = self.markdown("".join(parsed.arguments), top=False)
        kind, options = name.removeprefix("prf:"), parsed.options
        if name == "admonition":
            if "dropdown" in (options.get("class") or "").split():
                return _details(arg, body)
            return _boxed(f"**{arg}**", body)
        if name.startswith("prf:") and kind in KINDS:
            head, box_name = parse_title(kind, arg)
            if " (this book)" in arg:
                head = f"{kind.title()} (this book)"
            box_name = f" — {box_name}" if box_name else ""
            return _boxed(f"**{head}**{box_name}", body)
        if name == "prf:proof":
            return f"\n\n*Proof.* {body} ∎\n\n"
        if name == "exercise":
            number = self.target(options.get("label", ""), name).number
            arg = f" ({arg})" if arg else ""
            return _boxed(f"**Exercise {number}**{arg}", body)
        if name == "solution-end":
            self.solution = None
            return ""
        if name not in ("solution", "solution-start"):
            raise self.error(f"directive {{{name}}} has no rendering")
        title = f"Solution to Exercise {self.target(arg, name).number}"
        note = "the code below is folded; open it to read it."
        if name == "solution":
            note = _details(title, body)
        else:  # its code cells follow, up to solution-end
            self.solution, note = title, f"**{title}**: {note}"
        return note if self.edition == "reader" else ""

    def heading(self) -> str:
        """The number Sphinx gives the page's next heading, as it follows
        the heading's ``#``."""
        sections = self.book.numbers["sections"].get(self.doc, [])
        if self.headings >= len(sections) and self.book.strict:
            raise self.error("more headings than the built page")
        number = (sections[self.headings :] or [[None]])[0][0]
        self.headings += 1
        return f" {number}{'.' if '.' not in number else ''}" if number else ""

    def math_label(self, lines: list[str], label: str) -> str:
        r"""``$$ ... $$ (label)`` as ``$$ ... \tag{number} $$``."""
        tag = rf"\tag{{{self.target(label, 'eq').number}}}"
        last = lines[-1][: lines[-1].rindex("$$")]
        if last.strip():  # on the line of the closing $$
            return "\n".join([*lines[:-1], f"{last.rstrip()} {tag} $$"])
        return "\n".join([*lines[:-1], f"{last}{tag}", f"{last}$$"])

    def markdown(self, text: str, top: bool = True) -> str:
        """MyST ``text`` as plain Jupyter Markdown: each token's source
        lines edited; ``top``: headings numbered (not in a box)."""
        lines = text.split("\n")
        starts = [0, *accumulate(len(line) + 1 for line in lines)]
        edits, pos = [], 0
        for tok in self.book.md.parse(text):
            a, b = tok.map or (0, 0)
            new = None  # the token's source lines, rewritten
            if tok.type == "heading_open" and top:
                at = text.index(tok.markup, starts[a]) + len(tok.markup)
                edits.append((at, at, self.heading()))
            elif tok.type == "inline":
                start = max(pos, starts[a])  # the roles are found in order
                pos = self.roles(text, tok.children, start, edits)
            elif tok.type == "myst_target":
                new = ""
            elif tok.type == "math_block_label":
                new = self.math_label(lines[a:b], tok.info)
            elif tok.type in ("fence", "colon_fence") and tok.info[:1] == "{":
                name, _, arg = tok.info[1:].partition("}")  # {name} argument
                new = self.directive(name, arg.strip(), tok.content)
            if new is not None:
                end = min(starts[b], len(text))
                edits.append((starts[a], end, new and new + "\n"))
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")

    def cells(self, cells: list) -> list:
        """The edition's cells of the chapter's ``cells`` (after the install
        cell): markdown rendered, figures captioned, hidden code folded, the
        solutions folded (reader) or removed (student)."""
        out, reader = [], self.edition == "reader"
        for cell in cells:
            text, cid = cell.source, cell["id"]
            tags = set(cell.metadata.get("tags", []))
            if cell.cell_type == "markdown":
                if (rendered := self.markdown(text)).strip():
                    out.append(new_markdown_cell(rendered, id=cid))
            elif "scaffold" in tags:
                out += [] if reader else [_code(cid, text)]
            elif self.solution is not None:
                out += [_code(cid, text, self.solution)] if reader else []
            elif "solution" in tags:
                raise self.error(f"solution cell {cid} is not gated")
            else:
                out += self.code(cell, tags)
        if self.solution is not None:
            raise self.error(f"{self.solution} not ended")
        return out

    def code(self, cell: Any, tags: set[str]) -> list:
        """A code cell of the page: folded if the page hides it, followed
        by its figure's caption and description if it draws one."""
        mystnb = cell.metadata.get("mystnb", {})
        label = mystnb.get("figure", {}).get("name")
        number = label and self.target(label, "figure").number
        title = None
        if {"hide-input", "remove-cell", "remove-input"} & tags:
            title = "Code (folded on the page)"
            if number:
                title = f"Code of Fig. {number}"
            elif "claims.check(" in cell.source:
                title = "Checks of the claims"
        out = [_code(cell["id"], cell.source, title)]
        if label:
            caption = self.markdown(mystnb["figure"].get("caption", ""))
            caption = f"**Fig. {number}.** {caption}"
            if alt := mystnb.get("image", {}).get("alt"):  # its text
                caption += f"\n\n*Figure description:* {alt}"
            out.append(new_markdown_cell(caption, id=f"{cell['id']}-caption"))
        return out


def _code(cell_id: str, text: str, hidden_title: str | None = None) -> Any:
    """A code cell; with a title, folded (Jupyter) and a form (Colab)."""
    if hidden_title is None:
        return new_code_cell(text, id=cell_id)
    metadata = {"cellView": "form", "jupyter": {"source_hidden": True}}
    text = f"# @title {hidden_title}\n{text}"
    return new_code_cell(text, id=cell_id, metadata=metadata)


INTRO = """*{chapter}Neural Quadratic Forms: an executable book*, version \
{release.version} ({release.released}; {release.repository}). This is \
the {what}

Run the cells from the top (in Colab: *Runtime → Run all*); the first one \
installs `nqf_lite` if it is missing. Numbers the text quotes read ⟨name⟩: \
each is printed under the cell that computes it. Every claim the text makes \
is checked by the code, for any random seed: run `%env NQF_SEED=7` before \
the first cell to redraw every random quantity."""
WHAT = {
    "reader": "**reader edition**: the same text, code and checks as the "
    "page, in plain notebook form. Solutions are folded: click *Solution* to "
    "open one.",
    "student": "**student edition**: the solutions are removed. Each coding "
    "exercise has a cell that says `...  # your code`: complete it, then run "
    "the check cell below it, which answers right, or wrong with a hint.",
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


def edition(book: Book, doc: str, name: str) -> Any:
    """The ``name`` edition ("reader" or "student") of chapter ``doc``: its
    cells after a set-up cell (the install cell's, then the edition and the
    numbers it quotes), a note on the edition after the title."""
    if name not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {name!r}")
    nb = nbformat.read(book.root / f"{doc}.ipynb", as_version=4)
    install, *cells = nb.cells or [new_code_cell()]
    if "remove-cell" not in install.metadata.get("tags", []):
        raise EditionError(f"{doc}: the first cell must be the install cell")
    chapter, release = Chapter(book, doc, name), book_meta.edition(book.root)
    cells = chapter.cells(cells)
    sections = book.numbers["sections"].get(doc, [])
    if book.strict and chapter.headings != len(sections):
        raise chapter.error("the built page has other headings")
    number = (sections or [[None]])[0][0]
    number = f"Chapter {number} of " if number else ""
    intro = INTRO.format(chapter=number, release=release, what=WHAT[name])
    at = next(i for i, c in enumerate(cells) if c.cell_type == "markdown")
    cells.insert(at + 1, new_markdown_cell(intro, id="edition-note"))
    install = install.source.rstrip("\n")
    install = install.replace('"nqf_lite @', '"nqf_lite[book] @')
    spec = "".join(f"    {k!r}: {v!r},\n" for k, v in chapter.glued.items())
    setup = SETUP.format(
        install=install, stem=Path(doc).name, release=release, spec=spec
    )
    setup = _code("edition-setup", setup, "Set-up: run this cell first")
    source = {"edition": name, "source": f"{doc}.ipynb"}
    result = new_notebook(cells=[setup, *cells])
    result.metadata = {
        "kernelspec": nb.metadata["kernelspec"],
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True},
        "nqf_edition": {**source, "version": release.version},
    }
    nbformat.validate(result)
    return result


def edition_path(root: Path, doc: str, name: str) -> Path:
    """Where the ``name`` edition of chapter ``doc`` is committed."""
    return root / EDITIONS_DIR / name / f"{Path(doc).name}.ipynb"


def dumps(nb: Any) -> str:
    """A notebook as its file's text."""
    return nbformat.writes(nb).rstrip("\n") + "\n"


def write_all(book: Book, write: bool = True) -> list[Path]:
    """(Re)write every edition of every chapter, remove those of no chapter
    (``write=False``: only compare); return the files out of date."""
    texts = {}  # the editions as they should read
    for page, name in product(chapters(book), EDITIONS):
        nb = edition(book, page.doc, name)
        texts[edition_path(book.root, page.doc, name)] = dumps(nb)
    files = (book.root / EDITIONS_DIR).glob("*/*.ipynb")
    old = {path: path.read_text("utf-8") for path in files}
    changed = [p for p in {**texts, **old} if texts.get(p) != old.get(p)]
    for path in changed if write else []:
        if path not in texts:  # an edition of no chapter
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(texts[path], encoding="utf-8")
    return changed


def _build_finished(app: Any, exception: Exception | None) -> None:
    """Sphinx's numbers into the committed file (the editions rewritten and
    the build failed if they changed); the editions into the site."""
    if exception is not None or app.builder.name != "html":
        return
    root, path = Path(app.srcdir), edition_numbers.NUMBERS_FILE
    numbers = edition_numbers.collect(app.env, toc_docs(root))
    stale = [path] if edition_numbers.save(numbers) else []
    stale += write_all(load_book(root))
    out = Path(app.outdir) / EDITIONS_DIR
    shutil.copytree(root / EDITIONS_DIR, out, dirs_exist_ok=True)
    zipped = out / "student-notebooks.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        for nb in sorted((root / EDITIONS_DIR / "student").glob("*.ipynb")):
            z.write(nb, f"nqf-student-notebooks/{nb.name}")
    if stale:
        names = ", ".join(str(p.relative_to(root)) for p in stale)
        raise ExtensionError(
            f"editions: the build numbers the book otherwise; rewritten "
            f"(review and commit them): {names}"
        )


#: the download menu of a chapter ({}: its name): file, text, icon, tooltip
DOWNLOADS = (
    ("editions/reader/{}.ipynb", "reader notebook", "book-open",
     "The chapter as a notebook for Jupyter or Colab"),
    ("editions/student/{}.ipynb", "student notebook", "user-graduate",
     "The chapter without solutions, exercises as scaffolds"),
    ("pdf/{}.pdf", "PDF", "file-pdf", "This chapter as a PDF"),
    ("pdf/book.pdf", "PDF (whole book)", "file-pdf",
     "The whole book as one PDF"),
)  # fmt: skip
LINKS = (
    '<p class="chapter-editions">This chapter as a <a class="reference '
    'download" href="{0}" download>reader notebook</a>, a <a class="reference'
    ' download" href="{1}" download>student notebook</a> (no solutions) or a '
    '<a class="reference download" href="{2}">PDF</a>; run it in Colab or '
    "Binder from the rocket menu above.</p>"
)


def _launch_and_downloads(app, pagename, templatename, context, doctree):
    """Launch buttons open the reader edition; the download menu offers
    every edition and the PDFs; the page links them under its title."""
    if not (Path(app.srcdir) / f"{pagename}.ipynb").is_file():
        return
    up, source = "../" * pagename.count("/"), f"{pagename}.ipynb"
    files = [f.format(Path(pagename).name) for f, *_ in DOWNLOADS]
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if source in button.get("url", ""):
                button["url"] = button["url"].replace(source, files[0])
        if group.get("label") == "download-buttons":
            group["buttons"] = [
                {"type": "link", "url": up + file, "text": text,
                 "icon": f"fas fa-{icon}", "tooltip": tip,
                 "label": f"download-{text.replace(' ', '-')}-button"}
                for file, (_, text, icon, tip) in zip(files, DOWNLOADS)
            ]  # fmt: skip
    links = LINKS.format(*(up + file for file in files))
    body = context.get("body", "")
    context["body"] = body.replace("</h1>", "</h1>" + links, 1)


def setup(app: Any) -> dict[str, Any]:
    # after the theme's buttons
    app.connect("html-page-context", _launch_and_downloads, priority=600)
    app.connect("build-finished", _build_finished)
    safe = {"parallel_read_safe": True, "parallel_write_safe": True}
    return {"version": "2.0", **safe}
