"""Fixtures for the browser check: a local server for _build/html and headless
Chromium.

The book checked is the repository's (or the folder in ``NQF_BOOK_ROOT``).
Without Chromium (``apt-get install -y chromium``) or without a built book
(``bash scripts/build_book.sh``) these tests skip on a developer machine and
fail under CI (environment variable ``CI`` set), where both must be present.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import TIMEOUT_MS

#: The book's source folder; NQF_BOOK_ROOT points the check at another built
#: book.
ROOT = Path(
    os.environ.get("NQF_BOOK_ROOT") or Path(__file__).resolve().parents[2]
).resolve()
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(
            f"{reason} (CI is set, so the browser check must run)",
            pytrace=False,
        )
    pytest.skip(reason)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """Serve _build/html on 127.0.0.1 at a free port for the whole session."""
    if not (HTML / "index.html").is_file():
        _unavailable(
            f"no built book at {HTML}: build it first with "
            "`bash scripts/build_book.sh`"
        )
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Headless Debian Chromium driven by playwright."""
    if not CHROMIUM.exists():
        _unavailable(
            f"{CHROMIUM} not found: install it with "
            "`apt-get update && apt-get install -y chromium`"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable(
            "python package playwright is not installed "
            "(`pip install playwright`)"
        )
    with sync_playwright() as pw:
        instance = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, site_url):
    """A fresh tab (1200x900) that records page errors and requests leaving the
    machine."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.external = []
    tab.on("pageerror", lambda err: tab.errors.append(err))

    def _route(route) -> None:
        url = route.request.url
        if url.startswith(site_url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:  # the book must read offline: record and refuse anything else
            tab.external.append(url)
            route.abort()

    tab.route("**/*", _route)
    tab.set_default_timeout(TIMEOUT_MS)
    yield tab
    context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


# ------------------------------------------------------- one visit per page
# Every page is loaded once at 1280 px and once on a phone
# (tests/browser/_visit.py); the checks of a page read what its visit recorded.
# A test that reads the visits of a page (argument ``doc``) or of a half of the
# pages (argument ``half``) runs on the worker of that half.

VISIT_FIXTURES = {"wide", "phone"}


# before pytest-xdist's own hook, which reads the groups into the test ids
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    from _visit import half_of

    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if not VISIT_FIXTURES & set(getattr(item, "fixturenames", ())):
            continue
        if "half" in params:
            half = params["half"]
        elif "doc" in params:
            half = half_of(params["doc"])
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(name=f"site{half}"))
        if getattr(config.option, "loadgroup", False):
            _group_id(item, f"site{half}")


def _group_id(item, group: str) -> None:
    """Append ``@group`` to the test's id, as pytest-xdist does for
    ``--dist loadgroup``: xdist 3.8 writes ``item._nodeid``, which pytest 9
    no longer reads (its id is ``item._id``), so the groups had no effect."""
    if item.nodeid.rfind("@") > item.nodeid.rfind("]"):
        return  # xdist did it
    grouped = f"{item.nodeid}@{group}"
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # pytest < 9: the id is item._nodeid
        item._nodeid = grouped
        return
    item._id = coerce_node_id(grouped)


@pytest.fixture(scope="session")
def wide(browser, site_url, screenshots):
    """``wide(doc)``: the visit of ``doc`` at 1280 x 900 px (loaded once per
    session)."""
    from _axe import axe_source
    from _visit import wide_visit

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    visits: dict[str, object] = {}
    axe_js = functools.lru_cache(maxsize=1)(axe_source)

    def get(doc: str):
        if doc not in visits:
            visits[doc] = wide_visit(
                context, site_url, doc, screenshots, axe_js
            )
        return visits[doc]

    yield get
    context.close()


@pytest.fixture(scope="session")
def phone(browser, site_url):
    """``phone(doc)``: the visit of ``doc`` on a 390 x 800 px phone (loaded
    once per session)."""
    from _visit import phone_visit

    context = browser.new_context(
        viewport={"width": 390, "height": 800},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    visits: dict[str, object] = {}

    def get(doc: str):
        if doc not in visits:
            visits[doc] = phone_visit(context, site_url, doc)
        return visits[doc]

    yield get
    context.close()
