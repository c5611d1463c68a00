"""The numbers, tables, map and plans of the course guide
(``book/course_guide.md``).

Everything is read from the book itself: the pages of every chapter (a chapter
may have more than one page, e.g. chapter 3 and its page 3.5), their prose,
figures, checked claims and exercises, the prerequisites named in each page's
"You need" box, and the running time and peak memory of each page measured by
``benchmarks/chapters.py`` (``benchmarks/chapters.json``).

The page imports this module; ``tests/test_course_guide.py`` checks what it
computes (every page counted, the plans add up, the map's boxes and arrows
never collide).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

# the book's index: pages, numbers, titles, labels
import editions  # noqa: E402

#: prose read carefully, with its equations
WORDS_PER_MINUTE = 200
#: the level of each chapter (our judgement, not a measurement)
LEVEL = {1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 6: 2, 7: 3, 8: 2, 9: 3, 10: 3, 11: 2}
#: a six-week course: (topic, chapters, what the week is about); every page of
#: a chapter is read
WEEKS = (
    (
        "The quadratic form",
        (1, 2),
        "why symmetry leaves a quadratic form; reading architecture off A(x)",
    ),
    (
        "Real networks",
        (3,),
        "when the NQF tracks a trained network: twins, ensembles, online "
        "teachers, real images",
    ),
    (
        "Closure and compression",
        (4, 5),
        "training on (M, μ); the width as a number; the small twin",
    ),
    (
        "Sudden learning and design",
        (6, 11),
        "switch-on times and plateaus; forecasting a layer from A(x)",
    ),
    (
        "Power laws and the limits",
        (7, 10),
        "crowded switch-ons merge into a scaling law; where the theory stops",
    ),
    ("Beyond: models and depth", (8, 9), "Table 3 as one object; deep stacks"),
)
#: a single 90-minute lecture: (what, minutes)
LECTURE = (
    ("teaser of chapter 1 and Theorem 1", 15),
    ("teaser of chapter 4 and the closed update", 20),
    ("the staircase of chapter 6", 25),
    ("the power law of chapter 7", 15),
    ("live: chapter 6 in Colab at another seed", 15),
)
LECTURE_MINUTES = 90


@dataclass
class PageRow:
    """One page of a chapter, as the guide counts it."""

    number: str  # "3", "3.5"
    chapter: int
    title: str
    doc: str
    needs: list[str]  # the page numbers its "You need" box names
    words: int
    read: int  # minutes
    run: float  # seconds, measured
    peak: int  # MB, measured
    figures: int
    claims: int
    coding: list[str] = field(default_factory=list)
    pen: int = 0


def _cells(page) -> list[dict]:
    return json.loads(page.path.read_text(encoding="utf-8"))["cells"]


def prose_words(cells: list[dict]) -> int:
    """Words of the markdown cells; display math is read, not counted; a role
    counts one word."""
    text = "\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\{[\w:\-]+\}`[^`]*`", "x", text)
    return len(re.findall(r"[A-Za-z][\w'’\-]*", text))


def page_title(book, page) -> str:
    """The page's title: the heading its number labels."""
    return next(
        t.title.strip()
        for t in book.labels.values()
        if t.kind == "section"
        and t.number == page.number
        and t.doc == page.doc
    )


def needs(
    book, page, cells: list[dict], number_of: dict[str, str]
) -> list[str]:
    """The pages named (by any reference role) in the page's "You need"
    paragraph."""
    for c in cells:
        source = "".join(c["source"])
        m = re.search(
            r"\*\*You need\*\*(.*?)(?:\n```|\n\n\*\*|\Z)", source, re.S
        )
        if not m:
            continue
        labels = re.findall(
            r"\{(?:ref|numref|eq)\}`(?:[^`<]*<)?([\w\-]+)>?`", m.group(1)
        )
        found = {
            number_of[book.labels[lab].doc]
            for lab in labels
            if lab in book.labels
        }
        found.discard(page.number)
        found = {
            n for n in found if n is not None and _key(n) < _key(page.number)
        }
        return sorted(found, key=_key)
    return []


def _key(number: str) -> tuple[int, ...]:
    return tuple(int(x) for x in number.split("."))


def measurements(root: Path = ROOT) -> dict[str, dict]:
    return json.loads(
        (root / "benchmarks" / "chapters.json").read_text(encoding="utf-8")
    )


def page_rows(
    root: Path = ROOT, exercises: dict | None = None
) -> list[PageRow]:
    """Every numbered page of the book (a chapter's later pages too),
    counted."""
    if exercises is None:
        from nqf_lite.book.exercises import EXERCISES as exercises
    book = editions.load_book(root)
    pages = [p for p in editions.chapters(book) if p.number]
    number_of = {p.doc: p.number for p in book.pages}
    times = measurements(root)
    missing = [
        Path(p.doc).name for p in pages if Path(p.doc).name not in times
    ]
    if missing:
        raise ValueError(
            f"benchmarks/chapters.json has no measurement of {missing}: run "
            "benchmarks/chapters.py"
        )
    rows = []
    for page in pages:
        cells = _cells(page)
        markdown = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        )
        code = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
        labels = set(re.findall(r":label:\s*(ex-ch[\w\-]+)", markdown))
        coding = sorted(k for k in exercises if k in labels)
        boxes = markdown.count("{exercise}")
        words = prose_words(cells)
        measured = times[Path(page.doc).name]
        rows.append(
            PageRow(
                number=page.number,
                chapter=int(page.number.split(".")[0]),
                title=page_title(book, page),
                doc=page.doc,
                needs=needs(book, page, cells, number_of),
                words=words,
                read=round(words / WORDS_PER_MINUTE),
                run=float(measured["wall_s"]),
                peak=int(measured["peak_mb"]),
                figures=sum(
                    bool(c.get("metadata", {}).get("mystnb", {}).get("figure"))
                    for c in cells
                ),
                claims=code.count("claims.check("),
                coding=coding,
                pen=max(boxes - len(coding), 0),
            )
        )
    return rows


# ----------------------------------------------------------------------------
# tables


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _link(row: PageRow) -> str:
    return f"{{doc}}`{row.number}. {_cell(row.title)} <../{row.doc}>`"


def level(n: int) -> str:
    return "●" * LEVEL.get(n, 2)


def chapter_table(rows: list[PageRow]) -> str:
    """The chapters at a glance, as a MyST table: a row per page (a chapter's
    later pages indented)."""
    lines = [
        "| Chapter | Needs | Reading | Running | Peak memory | Figures | "
        "Claims | Exercises (coding + pen) | Level |",
        "|:---|:---|---:|---:|---:|---:|---:|:---:|:---:|",
    ]
    for r in rows:
        first = "." not in r.number
        lines.append(
            f"| {_link(r) if first else '↳ ' + _link(r)} | "
            f"{', '.join(r.needs) or '—'} | {r.read} min "
            f"| {r.run:.0f} s | {r.peak} MB | {r.figures} | {r.claims} | "
            f"{len(r.coding)} + {r.pen} "
            f"| {level(r.chapter) if first else ''} |"
        )
    total = totals(rows)
    lines.append(
        f"| **All {len({r.chapter for r in rows})} chapters ({len(rows)} "
        f"pages)** | | **{total['read']} min** "
        f"| **{total['run']:.0f} s** | **{total['peak']} MB** | "
        f"**{total['figures']}** | **{total['claims']}** "
        f"| **{total['coding']} + {total['pen']}** | |"
    )
    return "\n".join(lines)


def totals(rows: list[PageRow]) -> dict[str, float]:
    return {
        "read": sum(r.read for r in rows),
        "run": sum(r.run for r in rows),
        "peak": max(r.peak for r in rows),
        "figures": sum(r.figures for r in rows),
        "claims": sum(r.claims for r in rows),
        "coding": sum(len(r.coding) for r in rows),
        "pen": sum(r.pen for r in rows),
        "words": sum(r.words for r in rows),
    }


@dataclass
class Week:
    number: int
    topic: str
    what: str
    chapters: tuple[int, ...]
    pages: list[PageRow]

    @property
    def read(self) -> int:
        return sum(p.read for p in self.pages)

    @property
    def run(self) -> float:
        return sum(p.run for p in self.pages)

    @property
    def coding(self) -> list[str]:
        return [k for p in self.pages for k in p.coding]

    @property
    def pen(self) -> int:
        return sum(p.pen for p in self.pages)


def plan(rows: list[PageRow], weeks=WEEKS) -> list[Week]:
    """The six-week plan, every page of each week's chapters counted; checked
    to add up."""
    out = [
        Week(i, topic, what, chs, [r for r in rows if r.chapter in chs])
        for i, (topic, chs, what) in enumerate(weeks, 1)
    ]
    check_plan(rows, out)
    return out


def check_plan(rows: list[PageRow], weeks: list[Week]) -> None:
    """Every page in exactly one week, and the weeks' sums equal the book's."""
    planned = [p.number for w in weeks for p in w.pages]
    assert sorted(planned, key=_key) == [r.number for r in rows], (
        f"the plan covers pages {sorted(planned, key=_key)}, the book has "
        f"{[r.number for r in rows]}"
    )
    total = totals(rows)
    assert sum(w.read for w in weeks) == total["read"], (
        "the weeks' reading does not add up"
    )
    assert abs(sum(w.run for w in weeks) - total["run"]) < 1e-9, (
        "the weeks' running does not add up"
    )
    assert sum(len(w.coding) for w in weeks) == total["coding"], (
        "the weeks' exercises do not add up"
    )
    assert sum(w.pen for w in weeks) == total["pen"], (
        "the weeks' pen exercises do not add up"
    )
    assert sum(m for _, m in LECTURE) == LECTURE_MINUTES, (
        "the lecture's parts do not add up to 90 min"
    )
    done: set[str] = set()
    for w in (
        weeks
    ):  # the plan follows the map: a page comes after every page it needs
        for p in sorted(w.pages, key=lambda p: _key(p.number)):
            missing = [n for n in p.needs if n not in done]
            assert not missing, (
                f"week {w.number}: page {p.number} needs {missing}, not read "
                "yet"
            )
            done.add(p.number)


def plan_table(weeks: list[Week]) -> str:
    lines = [
        "| Week | Topic | Pages | Reading | Running | Coding exercises to "
        "assign | Pen exercises |",
        "|:---:|:---|:---|---:|---:|:---|---:|",
    ]
    for w in weeks:
        pages = ", ".join(p.number for p in w.pages)
        assign = ", ".join(f"`{k}`" for k in w.coding) or "—"
        lines.append(
            f"| {w.number} | **{w.topic}**: {w.what} | {pages} | {w.read} min "
            f"| {w.run:.0f} s | {assign} | {w.pen} |"
        )
    lines.append(
        f"| **All** | | **{sum(len(w.pages) for w in weeks)} pages** | "
        f"**{sum(w.read for w in weeks)} min** "
        f"| **{sum(w.run for w in weeks):.0f} s** | "
        f"**{sum(len(w.coding) for w in weeks)}** "
        f"| **{sum(w.pen for w in weeks)}** |"
    )
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# the map


@dataclass
class Box:
    number: str
    x: float  # centre, inches
    y: float
    w: float
    h: float

    def contains(self, px: float, py: float, pad: float = 0.0) -> bool:
        return (
            abs(px - self.x) <= self.w / 2 + pad
            and abs(py - self.y) <= self.h / 2 + pad
        )


@dataclass
class MapLayout:
    boxes: dict[str, Box]
    arrows: list[
        tuple[str, str, list[tuple[float, float]]]
    ]  # (from, to, polyline)
    depth: dict[str, int]
    width: float
    height: float


def depths(rows: list[PageRow]) -> dict[str, int]:
    """The depth of a page: the longest chain of prerequisites before it."""
    depth: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: _key(r.number)):
        depth[r.number] = 1 + max(
            (depth[n] for n in r.needs if n in depth), default=-1
        )
    return depth


BOX_W, BOX_H, COL_GAP, ROW_GAP, DUMMY_W = 1.5, 0.5, 0.2, 0.3, 0.16


def direct_edges(rows: list[PageRow]) -> list[tuple[str, str]]:
    """The arrows of the map: each prerequisite that no longer chain of
    prerequisites implies."""
    needs = {r.number: set(r.needs) for r in rows}

    def reaches(a: str, b: str, skip: tuple[str, str]) -> bool:
        stack, seen = [b], set()
        while stack:
            v = stack.pop()
            for u in needs[v]:
                if (u, v) == skip or u in seen:
                    continue
                if u == a:
                    return True
                seen.add(u)
                stack.append(u)
        return False

    return [
        (a, r.number)
        for r in rows
        for a in r.needs
        if not reaches(a, r.number, (a, r.number))
    ]


def layout(rows: list[PageRow]) -> MapLayout:
    """A layered drawing, top to bottom: row k holds the pages of depth k.

    An arrow that skips rows runs through its own slot in each row it crosses
    (a dummy node), so no arrow passes through a box; the order within a row is
    chosen by barycentre sweeps (fewer crossings).  Coordinates are in inches,
    y upwards.
    """
    depth = depths(rows)
    nrow = max(depth.values()) + 1
    edges = direct_edges(rows)
    layers: list[list[str]] = [[] for _ in range(nrow)]
    for r in rows:
        layers[depth[r.number]].append(r.number)
    chains: dict[tuple[str, str], list[str]] = {}
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for a, b in edges:
        chain = [a]
        for k in range(depth[a] + 1, depth[b]):
            dummy = f"~{a}>{b}@{k}"
            layers[k].append(dummy)
            chain.append(dummy)
        chain.append(b)
        chains[(a, b)] = chain
        for u, v in zip(chain, chain[1:]):
            succ.setdefault(u, []).append(v)
            pred.setdefault(v, []).append(u)

    def sweep(
        k: int, neighbours: dict[str, list[str]], other: list[str]
    ) -> None:
        place = {v: i for i, v in enumerate(other)}
        here = {v: i for i, v in enumerate(layers[k])}
        key = {
            v: sum(place[u] for u in neighbours[v]) / len(neighbours[v])
            if neighbours.get(v)
            else here[v]
            for v in layers[k]
        }
        layers[k].sort(key=lambda v: (key[v], here[v]))

    for _ in range(6):
        for k in range(1, nrow):
            sweep(k, pred, layers[k - 1])
        for k in range(nrow - 2, -1, -1):
            sweep(k, succ, layers[k + 1])

    def span(v: str) -> float:
        return DUMMY_W if v.startswith("~") else BOX_W

    widths = [
        sum(span(v) for v in layer) + COL_GAP * (len(layer) - 1)
        for layer in layers
    ]
    width = max(widths)
    height = nrow * BOX_H + (nrow - 1) * ROW_GAP
    coords: dict[str, tuple[float, float]] = {}
    for k, layer in enumerate(layers):
        y = height - k * (BOX_H + ROW_GAP) - BOX_H / 2
        x = (width - widths[k]) / 2
        for v in layer:
            coords[v] = (x + span(v) / 2, y)
            x += span(v) + COL_GAP
    boxes = {
        v: Box(v, *coords[v], BOX_W, BOX_H)
        for v in coords
        if not v.startswith("~")
    }
    arrows = []
    for (a, b), chain in chains.items():
        pts = [(coords[a][0], coords[a][1] - BOX_H / 2)]
        for v in chain[1:-1]:
            pts += [
                (coords[v][0], coords[v][1] + BOX_H / 2),
                (coords[v][0], coords[v][1] - BOX_H / 2),
            ]
        pts.append((coords[b][0], coords[b][1] + BOX_H / 2))
        arrows.append((a, b, pts))
    return MapLayout(boxes, arrows, depth, width, height)


def _segments_intersect_box(p, q, box: Box, pad: float = 0.02) -> bool:
    """Does the segment p-q meet the (padded) rectangle of ``box``?
    (Liang-Barsky clipping.)"""
    x0, x1 = box.x - box.w / 2 - pad, box.x + box.w / 2 + pad
    y0, y1 = box.y - box.h / 2 - pad, box.y + box.h / 2 + pad
    dx, dy = q[0] - p[0], q[1] - p[1]
    t0, t1 = 0.0, 1.0
    for pk, qk in (
        (-dx, p[0] - x0),
        (dx, x1 - p[0]),
        (-dy, p[1] - y0),
        (dy, y1 - p[1]),
    ):
        if pk == 0:
            if qk < 0:
                return False
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
    return t0 < t1


def collisions(lay: MapLayout) -> list[str]:
    """Every overlap of two boxes and every arrow through a box that is not its
    end; [] when clean."""
    out = []
    boxes = list(lay.boxes.values())
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if (
                abs(a.x - b.x) < (a.w + b.w) / 2
                and abs(a.y - b.y) < (a.h + b.h) / 2
            ):
                out.append(f"boxes {a.number} and {b.number} overlap")
    for a, b, pts in lay.arrows:
        for box in boxes:
            if box.number in (a, b):
                continue
            if any(
                _segments_intersect_box(p, q, box)
                for p, q in zip(pts, pts[1:])
            ):
                out.append(f"the arrow {a} → {b} crosses box {box.number}")
    return out


def wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines


def draw(rows: list[PageRow], ax=None):
    """Draw the map (matplotlib); return (figure, layout). Raises if two shapes
    collide."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path as MPath

    lay = layout(rows)
    bad = collisions(lay)
    if bad:
        raise AssertionError("; ".join(bad))
    by = {r.number: r for r in rows}
    fig = plt.figure(figsize=(lay.width + 0.1, lay.height + 0.1))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-0.05, lay.width + 0.05)
    ax.set_ylim(-0.05, lay.height + 0.05)
    ax.set_axis_off()
    for a, b, pts in lay.arrows:
        codes = [MPath.MOVETO] + [MPath.LINETO] * (len(pts) - 1)
        ax.add_patch(
            FancyArrowPatch(
                path=MPath(pts, codes),
                arrowstyle="-|>",
                mutation_scale=9,
                color="#6b6b6b",
                lw=0.8,
                shrinkA=0,
                shrinkB=1,
            )
        )
    for number, box in lay.boxes.items():
        sub = "." in number
        ax.add_patch(
            FancyBboxPatch(
                (box.x - box.w / 2, box.y - box.h / 2),
                box.w,
                box.h,
                boxstyle="round,pad=0,rounding_size=0.06",
                facecolor="#f3f6fb" if sub else "#e6eef9",
                edgecolor="#3b6ea8",
                lw=0.9,
                linestyle="--" if sub else "-",
            )
        )
        head = f"Page {number}" if sub else f"Chapter {number}"
        ax.text(
            box.x,
            box.y + box.h / 2 - 0.11,
            head,
            ha="center",
            va="center",
            fontsize=7.5,
            fontweight="bold",
        )
        lines = wrap(by[number].title, 30)
        if len(lines) > 2:
            lines = [lines[0], " ".join(lines[1:])]
        ax.text(
            box.x,
            box.y - 0.08,
            "\n".join(lines),
            ha="center",
            va="center",
            fontsize=7,
            linespacing=1.1,
        )
    return fig, lay
