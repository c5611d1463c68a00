"""Helpers shared by the browser tests (imported by name: pytest puts this
folder on sys.path)."""

from __future__ import annotations

#: how long a page may take to load and settle: two browsers share two cores in
#: the test command
TIMEOUT_MS = 120_000


def settle(page, idle_ms: int = 15_000) -> None:
    """Wait until the network is idle, for at most ``idle_ms``.

    The page has loaded when this is called; what each test checks (MathJax
    typeset, images complete, widgets drawn) it waits for explicitly.  An idle
    network is only a head start: on a loaded machine one stalled connection of
    the local server can keep Chromium from ever calling the network idle.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_load_state("networkidle", timeout=idle_ms)
    except PlaywrightTimeout:
        pass
