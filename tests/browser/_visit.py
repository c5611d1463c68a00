"""One visit per page and width: each page of the book is loaded once at 1280
px and once on a phone, and every check of that page reads what its visit
recorded.

The checks live in their test files (test_pages.py, test_every_page.py,
test_figures_a11y.py, test_a11y.py, test_phone.py); this module opens the page
once and runs their measurements in an order that keeps each one as it was on a
page of its own: first what only reads the page (the reader's checks, the
launch links, the ledger, the figures), then the survey (which opens the folds
to measure them, and closes them again), then axe-core (light and dark at 1280
px, then 320 px, where the visit ends).  A part that raises is recorded: the
check that needs it fails with the error, the other checks of the page still
run.

The pages are split in two halves (even and odd positions in
:func:`test_every_page.built_pages`): conftest.py sends every test of one half
to the same pytest-xdist worker, so that each page is visited once, on one
worker.
"""

from __future__ import annotations

import functools
import time
import traceback
from pathlib import Path

import pytest
from _support import TIMEOUT_MS, settle

#: wait at most this long (ms) for static/book.js to mark the boxes that scroll
#: on a phone
PHONE_SETTLE_MS = 5_000


@functools.cache
def _pages() -> tuple[str, ...]:
    from test_every_page import built_pages

    return tuple(built_pages())


def half_of(doc: str) -> int:
    """The half of the pages ``doc`` belongs to (0 or 1): its position in the
    build, modulo 2."""
    pages = _pages()
    return pages.index(doc) % 2 if doc in pages else 0


def pages_of(half: int) -> list[str]:
    return list(_pages()[half::2])


class Visit(dict):
    """What one visit recorded: ``visit[part]`` is a part's data, or fails the
    test with its error."""

    def __getitem__(self, part: str):
        if "error" in self:
            pytest.fail(
                f"{self['doc']}: the page could not be visited:\n"
                f"{dict.__getitem__(self, 'error')}",
                pytrace=False,
            )
        errors = dict.get(self, "errors_of", {})
        if part in errors:
            pytest.fail(
                f"{self['doc']}: {part}:\n{errors[part]}", pytrace=False
            )
        return dict.__getitem__(self, part)


def _part(visit: Visit, name: str, fn, *args) -> None:
    try:
        visit[name] = fn(*args)
    except Exception:  # noqa: BLE001
        # recorded: the check that needs this part fails with it
        visit.setdefault("errors_of", {})[name] = traceback.format_exc(limit=6)


def _local_only(tab, site_url: str, external: list[str]) -> None:
    """Serve the page from the local server only: record and refuse anything
    else."""

    def _route(route) -> None:
        url = route.request.url
        if url.startswith(site_url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:  # the book must read offline
            external.append(url)
            route.abort()

    tab.route("**/*", _route)
    tab.set_default_timeout(TIMEOUT_MS)


def wide_visit(
    context, site_url: str, doc: str, screenshots: Path, axe_js
) -> Visit:
    """Load ``doc`` at 1280 x 900 px once and record what every check of the
    page needs."""
    import test_every_page as every
    import test_figures_a11y as figures
    import test_pages as pages
    from _axe import NO_TRANSITIONS, check_loaded, wait_ready

    visit = Visit(doc=doc)
    tab = context.new_page()
    uncaught, errors, external = [], [], []

    def _error(err) -> None:
        uncaught.append(err)
        errors.append(f"uncaught: {err}")

    def _console(msg) -> None:
        if msg.type == "error":
            url = (msg.location or {}).get("url", "")
            errors.append(
                f"console: {msg.text[:200]}"
                + (f" ({url.rsplit('/', 1)[-1]})" if url else "")
            )

    tab.on("pageerror", _error)
    tab.on("console", _console)
    _local_only(tab, site_url, external)
    try:
        response = tab.goto(f"{site_url}/{doc}.html", wait_until="load")
        visit["status"] = response.status if response is not None else None
        settle(tab)
        # what a reader sees (test_pages.py): waits for the math and the images
        # itself
        _part(visit, "clean", pages.read_cleanly, tab, doc)
        # explorers drawn, stylesheets applied (the survey and axe need them)
        wait_ready(tab)
        pages.shoot(tab, doc, screenshots)
        visit["external"] = list(external)
        visit["uncaught"] = list(uncaught)
        if doc in pages.CHAPTERS:
            _part(visit, "launch", pages.launch_links, tab, doc)
        if doc == pages.LEDGER:
            _part(visit, "ledger", pages.ledger_state, tab)
        if doc.startswith("notebooks/"):
            _part(visit, "figures", tab.evaluate, figures.FIGURES)
        # the survey (test_every_page.py) opens the folds to measure them, then
        # closes them again
        _part(visit, "survey", every.measure, tab)
        visit["survey_errors"] = list(errors)
        # axe-core last: it switches colour modes and narrows the page to 320
        # px
        tab.add_style_tag(content=NO_TRANSITIONS)
        _part(visit, "a11y", check_loaded, tab, axe_js())
    except Exception:  # noqa: BLE001
        # the page did not load: every check of it fails with this
        visit["error"] = traceback.format_exc(limit=6)
    finally:
        tab.close()
    return visit


def phone_visit(context, site_url: str, doc: str) -> Visit:
    """Load ``doc`` on a phone once: what sticks out, then (a chapter) a tap on
    its first figure."""
    import test_phone as phone

    visit = Visit(doc=doc)
    tab = context.new_page()
    _local_only(tab, site_url, [])
    try:
        tab.goto(f"{site_url}/{doc}.html", wait_until="load")
        settle(tab)
        if tab.locator(".math").count():
            tab.wait_for_function(
                "() => window.MathJax && MathJax.startup"
                " && MathJax.startup.promise"
            )
            tab.evaluate("() => MathJax.startup.promise.then(() => true)")
        tab.wait_for_function(
            "() => Array.from(document.images).every(img => img.complete)",
            polling=200,
        )
        # static/book.js marks the boxes that scroll once the math is typeset
        # (and every 0.5 s for 10 s): measure until nothing is cut or uncued,
        # for at most PHONE_SETTLE_MS
        deadline = time.monotonic() + PHONE_SETTLE_MS / 1000
        while True:
            cut = tab.evaluate(phone.CUT)
            if (
                not (cut["page"] or cut["uncued"] or cut["cut"])
                or time.monotonic() > deadline
            ):
                break
            tab.wait_for_timeout(150)
        visit["cut"] = cut
        if doc.startswith("notebooks/"):
            _part(visit, "tap", phone.tap_first_figure, tab)
    except Exception:  # noqa: BLE001
        visit["error"] = traceback.format_exc(limit=6)
    finally:
        tab.close()
    return visit
