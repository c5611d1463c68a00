"""Figures and explorers for every reader (issue 25): text alternatives, data,
keyboard.

- In the source: every figure cell carries a written text alternative
  (``mystnb.image.alt``), not its caption again, not a file name.
- On every page: every figure image has that alternative (never a file name or
  a hash), every explorer frame names its view, and every figure of a chapter
  links its data as CSV.
- By keyboard in Chromium: every explorer's control is reached with Tab,
  operated with the arrow keys (a slider) or Enter and Space (toggle buttons),
  shows a focus ring, has an accessible name, announces the new view in a live
  region, and lets Tab move on (no trap).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from urllib.request import urlopen

import pytest
from _axe import open_page, report

from test_every_page import HTML, ROOT, built_pages


#: a text alternative that is really a file name, a path or a hash
NOT_A_DESCRIPTION = re.compile(
    r"\.(png|jpe?g|svg|gif)\b|^[\w./-]*[0-9a-f]{12,}[\w./-]*$|^\s*$", re.I
)


def figure_cells() -> list[tuple[str, dict, str]]:
    out = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            mystnb = cell.get("metadata", {}).get("mystnb", {})
            if "figure" in mystnb:
                out.append((path.name, mystnb, "".join(cell["source"])))
    return out


def test_every_figure_cell_has_a_written_text_alternative():
    cells = figure_cells()
    assert len(cells) >= 60, f"only {len(cells)} figure cells found"
    bad = []
    for name, mystnb, _ in cells:
        alt = str(mystnb.get("image", {}).get("alt", "")).strip()
        caption = str(mystnb["figure"].get("caption", ""))
        fig = mystnb["figure"].get("name")
        if len(alt) < 60 or NOT_A_DESCRIPTION.search(alt):
            bad.append(
                f"{name} {fig}: no text alternative of its own ({alt[:40]!r})"
            )
        elif alt[:60] == caption[:60]:
            bad.append(
                f"{name} {fig}: the text alternative repeats the caption"
            )
        elif re.search(r"\{(eq|numref|ref|doc|cite)\}|\$", alt):
            bad.append(
                f"{name} {fig}: markup in the text alternative "
                "(it is read as plain text)"
            )
    assert not bad, (
        "figure cells without a proper mystnb.image.alt:\n  "
        + "\n  ".join(bad)
    )


@pytest.mark.parametrize(
    "alt, bad",
    [
        ("../_images/64d9a1b2c3d4e5f6a7b8.png", True),
        ("64d9a1b2c3d4e5f6a7b8", True),
        ("", True),
        ("Two panels of loss against step.", False),
    ],
)
def test_file_name_detector(alt, bad):
    assert bool(NOT_A_DESCRIPTION.search(alt)) is bad


FIGURES = r"""
() => Array.from(document.querySelectorAll('main figure'))
  .filter(f => f.querySelector('img')).map(f => {
  const imgs = Array.from(f.querySelectorAll('img'));
  const link = f.querySelector('p.figure-data a[href$=".csv"]');
  const cap = f.querySelector('figcaption');
  return {
    caption: cap ? cap.textContent.trim().slice(0, 40) : '(no caption)',
    alts: imgs.map(i => ({
      alt: i.getAttribute('alt'),
      frame: !!i.closest('.widget-image, .widget-subarea'),
      src: (i.getAttribute('src') || '').slice(0, 40)})),
    csv: link ? link.href : null,
    output: !!f.closest('.cell_output'),
  };
})
"""


#: the two halves of the pages, each visited on one worker (conftest.py,
#: _visit.py)
HALVES = [0, 1]


@pytest.mark.browser
@pytest.mark.parametrize("half", HALVES)
def test_every_figure_is_described_and_links_its_data(wide, half):
    from _visit import pages_of

    found: dict[str, list[str]] = {}
    csvs = []
    chapters = [p for p in pages_of(half) if p.startswith("notebooks/")]
    for doc in chapters:
        figures = wide(doc)["figures"]
        for fig in figures:
            for img in fig["alts"]:
                alt = img["alt"] or ""
                if len(alt) < 40 or NOT_A_DESCRIPTION.search(alt):
                    found.setdefault(doc, []).append(
                        f"{fig['caption']}: image {img['src']} "
                        f"alt={alt[:50]!r}"
                    )
                elif img["frame"] and not alt.startswith(
                    ("View for ", "Another view")
                ):
                    found.setdefault(doc, []).append(
                        f"{fig['caption']}: explorer frame without its view"
                    )
            if fig["output"] and not fig["csv"]:
                found.setdefault(doc, []).append(
                    f"{fig['caption']}: no link to its data (CSV)"
                )
            elif fig["csv"]:
                csvs.append((doc, fig["caption"], fig["csv"]))
    assert not found, report(
        found, "figures without a text alternative or without their data"
    )
    # every figure cell of these chapters links its data (both halves: >= 60,
    # the figure cells)
    cells = sum(
        1
        for name, _, _ in figure_cells()
        if f"notebooks/{Path(name).stem}" in chapters
    )
    assert len(csvs) >= cells, (
        f"only {len(csvs)} figures link their data, for {cells} figure cells"
    )
    for doc, caption, url in csvs:
        with urlopen(
            url
        ) as response:  # the local server: the data file is in the build
            rows = list(
                csv.reader(io.StringIO(response.read().decode("utf-8")))
            )
        assert rows[0][:5] == [
            "panel",
            "panel title",
            "x axis",
            "y axis",
            "series",
        ], (doc, caption)
        # every row names its panel: a title or axis labels (a heat map of
        # blocks has only a title)
        assert len(rows) > 2 and all(r[1] or r[2] or r[3] for r in rows[1:]), (
            f"{doc} {caption}: no data, or a panel without title or "
            "axis labels"
        )


#: the explorer's control, the elements around it, and what is shown
EXPLORER_STATE = r"""
(i) => {
  const fig = document.querySelectorAll('figure.explorer-live')[i];
  const shown = Array.from(
      fig.querySelectorAll('.widget-image img, img.widget-image'))
    .filter(img => img.getBoundingClientRect().width > 0);
  const live = fig.querySelector('[aria-live]');
  const a = document.activeElement;
  const style = getComputedStyle(a);
  return {
    shown: shown.map(img => img.getAttribute('alt') || ''),
    live: live ? live.textContent : null,
    inFigure: fig.contains(a),
    name: a.getAttribute('aria-label') || a.textContent.trim(),
    role: a.getAttribute('role') || a.tagName.toLowerCase(),
    outline: style.outlineStyle !== 'none'
      ? parseFloat(style.outlineWidth) : 0,
    outlineColor: style.outlineColor,
  };
}
"""

#: focus the last focusable element before the explorer's control, so that Tab
#: must reach it
FOCUS_BEFORE = r"""
(i) => {
  const fig = document.querySelectorAll('figure.explorer-live')[i];
  const control = fig.querySelector(
    '.noUi-handle, [role="slider"], .widget-toggle-buttons button');
  const all = Array.from(document.querySelectorAll(
      'a[href], button, [tabindex]:not([tabindex="-1"]), input, summary'))
    .filter(el => el.getBoundingClientRect().width > 0 && !el.disabled);
  const before = all.filter(el => el !== control && !control.contains(el)
    && (el.compareDocumentPosition(control)
        & Node.DOCUMENT_POSITION_FOLLOWING));
  let last = null;
  // the nearest that takes the focus
  for (let k = before.length - 1; k >= 0 && !last; k--) {
    if (before[k].checkVisibility && !before[k].checkVisibility()) continue;
    before[k].focus();
    if (document.activeElement === before[k]) last = before[k];
  }
  if (!last) return 'nothing focusable before the control';
  return `${control.className} `
    + `(Tab from ${last.tagName.toLowerCase()}.${last.className}, `
    + `focused: ${document.activeElement === last})`;
}
"""


def _explorer_pages() -> list[str]:
    return [
        p
        for p in built_pages()
        if "widget-view+json"
        in (HTML / f"{p}.html").read_text(encoding="utf-8")
    ]


@pytest.mark.browser
@pytest.mark.parametrize("doc", _explorer_pages())
def test_explorers_work_by_keyboard(doc, browser, site_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = open_page(context, site_url, doc)
        count = tab.locator("figure.explorer-live").count()
        assert count, f"{doc}: no explorer drawn"
        for i in range(count):
            kind = tab.evaluate(FOCUS_BEFORE, i)
            tab.keyboard.press("Tab")
            start = tab.evaluate(EXPLORER_STATE, i)
            where = f"{doc}, explorer {i + 1}"
            assert start["inFigure"], (
                f"{where}: Tab does not reach the control ({kind})"
            )
            assert start["name"], (
                f"{where}: the control has no accessible name"
            )
            assert start["outline"] >= 2, (
                f"{where}: no visible focus ring on the control"
            )
            assert len(start["shown"]) == 1
            if "noUi" in kind or start["role"] == "slider":
                keys = ["ArrowRight", "ArrowLeft", "ArrowLeft"]
            # toggle buttons: Tab to the next button, then Enter and Space
            # press it
            else:
                tab.keyboard.press("Tab")
                keys = ["Enter", "Shift+Tab", "Space"]
            views = {start["shown"][0]}
            for key in keys:
                tab.keyboard.press(key)
                tab.wait_for_timeout(150)
                state = tab.evaluate(EXPLORER_STATE, i)
                assert state["inFigure"], (
                    f"{where}: {key} moved the focus out of the explorer"
                )
                views.add(state["shown"][0])
            assert len(views) >= 2, (
                f"{where}: {keys} did not change the figure"
            )
            assert state["live"] and state["live"].startswith(
                "Figure shows"
            ), (
                f"{where}: the change is not announced "
                f"(live region: {state['live']!r})"
            )
            stops = tab.evaluate(
                "(i) => document.querySelectorAll('figure.explorer-live')[i]"
                ".querySelectorAll('button, a[href], "
                '[tabindex]:not([tabindex="-1"])\').length',
                i,
            )
            # Tab leaves the explorer: no keyboard trap
            for _ in range(stops + 2):
                tab.keyboard.press("Tab")
                if not tab.evaluate(EXPLORER_STATE, i)["inFigure"]:
                    break
            else:
                pytest.fail(
                    f"{where}: {stops + 2} Tabs do not leave the explorer "
                    "(keyboard trap)"
                )
        tab.close()
    finally:
        context.close()
