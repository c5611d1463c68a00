"""axe-core for the accessibility check: installed from the npm registry, run
on a loaded page.

``tests/browser/package.json`` pins axe-core; :func:`axe_source` installs it
with ``npm ci`` into ``tests/browser/node_modules`` (git-ignored) the first
time a test needs it, under a file lock so that two pytest workers install it
once, and returns the script's text. :func:`run_axe` injects it into a page and
returns the violations of the WCAG 2.0 and 2.1 level A and AA rules, one
readable line per failing element.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
AXE = HERE / "node_modules" / "axe-core" / "axe.min.js"
#: the WCAG 2.1 AA conformance target: every level A and AA rule of WCAG 2.0
#: and 2.1
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def _install() -> None:
    npm = shutil.which("npm")
    if npm is None:
        msg = (
            "npm not found: install Node.js (`apt-get install -y nodejs npm`)"
            " for the axe-core check"
        )
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    with open(
        Path(tempfile.gettempdir()) / "nqf-book-axe-install.lock", "w"
    ) as lock:
        # the other pytest worker may be installing it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if AXE.is_file():
            return
        cmd = [
            npm,
            "ci",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--prefix",
            str(HERE),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode or not AXE.is_file():
            pytest.fail(
                f"`{' '.join(cmd)}` failed:\n{done.stdout[-2000:]}\n"
                f"{done.stderr[-2000:]}",
                pytrace=False,
            )


def axe_source() -> str:
    """The text of axe.min.js (installed from the npm registry on first
    use)."""
    if not AXE.is_file():
        _install()
    return AXE.read_text(encoding="utf-8")


RUN = """
async ([tags, rules, exclude]) => {
  const only = rules && rules.length ? {type: 'rule', values: rules}
                                     : {type: 'tag', values: tags};
  const context = exclude && exclude.length
    ? {include: [['html']], exclude: exclude.map(e => [e])} : document;
  const result = await axe.run(
    context, {runOnly: only, resultTypes: ['violations']});
  const lines = [];
  for (const v of result.violations) {
    for (const node of v.nodes) {
      const target = node.target
        .map(t => Array.isArray(t) ? t.join(' >> ') : t).join(' ');
      const why = (node.failureSummary || '').split('\\n').slice(1, 2)
        .join(' ').trim();
      lines.push(`${v.id} [${v.impact}] ${target}: ${why}`.slice(0, 400));
    }
  }
  return lines;
}
"""

#: the rules that depend on colour alone: what the dark mode can break
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def run_axe(
    page,
    source: str,
    rules: list[str] | None = None,
    exclude: list[str] | None = None,
) -> list[str]:
    """Violations on ``page``: ``"rule [impact] target: why"`` per element.

    By default every rule tagged WCAG 2.0 / 2.1 A or AA runs on the whole page;
    ``rules`` runs only those rules, ``exclude`` leaves out the elements
    matching those CSS selectors.
    """
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source)
    return page.evaluate(RUN, [TAGS, rules or [], exclude or []])


#: no colour transitions: axe measures contrast from computed colours, which a
#: transition blurs
NO_TRANSITIONS = (
    "*, *::before, *::after "
    "{ transition: none !important; animation: none !important; }"
)


def wait_ready(tab) -> None:
    """Wait until a loaded tab is typeset, its images complete, its explorers
    drawn and its stylesheets applied (axe measures computed colours)."""
    if tab.locator(".math").count() or tab.locator("mjx-container").count():
        tab.wait_for_function(
            "() => window.MathJax && MathJax.startup"
            " && MathJax.startup.promise"
        )
        tab.evaluate("() => MathJax.startup.promise.then(() => true)")
    tab.wait_for_function(
        "() => Array.from(document.images).every(img => img.complete)",
        polling=200,
    )
    views = tab.locator(
        'script[type="application/vnd.jupyter.widget-view+json"]'
    ).count()
    if views:
        tab.wait_for_function(
            "() => document.querySelectorAll('figure.explorer-live')"
            f".length >= {views}"
        )
    # every stylesheet applied and the theme's colour mode set (axe measures
    # computed colours)
    tab.wait_for_function(
        """() => document.documentElement.dataset.theme && Array.from(
             document.querySelectorAll('link[rel="stylesheet"]'))
             .every(l => l.sheet)""",
        polling=100,
    )


def open_page(context, site_url: str, doc: str):
    """A tab on ``doc`` (page path without .html), loaded, typeset, images
    complete, explorers drawn."""
    from _support import TIMEOUT_MS, settle

    tab = context.new_page()
    tab.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(site_url)
            or route.request.url.startswith(("data:", "blob:"))
            else route.abort()
        ),
    )
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(f"{site_url}/{doc}.html", wait_until="load")
    settle(tab, idle_ms=5_000)
    wait_ready(tab)
    tab.add_style_tag(content=NO_TRANSITIONS)
    return tab


def set_mode(tab, mode: str) -> None:
    """Switch the pydata theme's colour mode (``light`` or ``dark``) as its
    switch does."""
    tab.evaluate(
        """(mode) => { document.documentElement.dataset.theme = mode;
                       document.documentElement.dataset.mode = mode; }""",
        mode,
    )
    tab.wait_for_timeout(50)


def report(found: dict[str, list[str]], what: str, limit: int = 12) -> str:
    lines = [f"{len(found)} page(s) with {what}:"]
    for doc, items in sorted(found.items()):
        lines.append(f"  {doc}.html ({len(items)}):")
        lines += [f"    - {item}" for item in items[:limit]]
        if len(items) > limit:
            lines.append(f"    ... and {len(items) - limit} more")
    return "\n".join(lines)


WIDE = {"width": 1280, "height": 900}
#: WCAG's reflow width: 1280 CSS px at 400 % zoom
NARROW = {"width": 320, "height": 640}
#: the article's own content: its colours do not change with the width, so at
#: 320 px the colour rules check only the page's furniture (header, sidebars,
#: drawers), which the width rearranges
ARTICLE = ".bd-article"

#: visible elements that end right of the viewport (or start left of it)
#: outside a box that scrolls
STICK_OUT = r"""
() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width + 1) {
    out.push('the page scrolls sideways: '
      + `${document.documentElement.scrollWidth} px in ${width} px`);
  }
  const clips = el => ['auto', 'scroll', 'hidden', 'clip'].includes(
    getComputedStyle(el).overflowX);
  const clipped = el => {
    for (let p = el.parentElement; p && p !== document.body;
         p = p.parentElement) {
      if (clips(p)) return true;
    }
    return false;
  };
  const name = el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}`
    + `${[...el.classList].slice(0, 2).map(c => '.' + c).join('')}`;
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('mjx-assistive-mml, .figure-zoom, script, style, '
                   + 'dialog:not([open])')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (getComputedStyle(el).visibility === 'hidden') continue;
    if ((r.right > width + 1 || r.left < -1) && !clipped(el)) {
      out.push(
        `${name(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} px: `
        + el.textContent.trim().replace(/\s+/g, ' ').slice(0, 50));
    }
  }
  return [...new Set(out)].slice(0, 30);
}
"""


def check_page(
    context, site_url: str, doc: str, source: str
) -> dict[str, list[str]]:
    """Open ``doc`` once and check it (:func:`check_loaded`)."""
    tab = open_page(context, site_url, doc)
    try:
        return check_loaded(tab, source)
    finally:
        tab.close()


def check_loaded(tab, source: str) -> dict[str, list[str]]:
    """Check a page opened at 1280 px (:func:`open_page`) at 1280 px and 320
    px, light and dark.

    Returns ``{what: problems}``: the axe violations of each width and mode,
    and at 320 px the elements that stick out of the viewport (WCAG 1.4.10,
    Reflow).  At 1280 px in light mode every WCAG A/AA rule runs; in dark mode
    the colour rules.  At 320 px every rule runs again in light mode (scrolling
    boxes, the narrow header), the colour rules on the page's furniture only.
    The tab is left at 320 px.
    """
    found: dict[str, list[str]] = {}
    set_mode(tab, "light")
    found["1280 px, light"] = run_axe(tab, source)
    set_mode(tab, "dark")
    found["1280 px, dark"] = run_axe(tab, source, rules=COLOUR_RULES)
    set_mode(tab, "light")
    tab.set_viewport_size(NARROW)
    tab.evaluate("() => window.dispatchEvent(new Event('resize'))")
    tab.wait_for_timeout(400)
    found["320 px, sticking out"] = tab.evaluate(STICK_OUT)
    # the rules a tag selection runs (axe leaves out its experimental ones),
    # colour aside
    rules = tab.evaluate(
        """(tags) => axe.getRules(tags)
             .filter(r => !r.tags.includes('experimental')
                          && r.ruleId !== 'color-contrast')
             .map(r => r.ruleId)""",
        TAGS,
    )
    found["320 px, light"] = run_axe(tab, source, rules=rules)
    found["320 px, light"] += run_axe(
        tab, source, rules=COLOUR_RULES, exclude=[ARTICLE]
    )
    set_mode(tab, "dark")
    found["320 px, dark"] = run_axe(
        tab, source, rules=COLOUR_RULES, exclude=[ARTICLE]
    )
    return {k: list(dict.fromkeys(v)) for k, v in found.items() if v}


def page_report(doc: str, found: dict[str, list[str]], limit: int = 25) -> str:
    lines = [
        f"{doc}.html: WCAG 2.1 AA failures (axe-core rule [impact] "
        "element: why; or what sticks out):"
    ]
    for what, items in found.items():
        lines.append(f"  {what} ({len(items)}):")
        lines += [f"    - {item}" for item in items[:limit]]
        if len(items) > limit:
            lines.append(f"    ... and {len(items) - limit} more")
    return "\n".join(lines)
