"""The page as a person sees it: screenshots in headless Chromium, desktop and phone, light
and dark, written where a person can open them (``build/screenshots/``, git-ignored; the
folder is printed).

Each screenshot is of a search with its results and of the first result opened. What is
checked is what a glance at them would catch: results are shown, nothing is wider than a
390-pixel phone screen (no sideways scrolling), every control fits its screen, and the dark
scheme really is dark (and the light one light). The server and the browser are those of
``tests/test_web.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import REPO
from tests.test_web import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, Server, _need_chromium, indexed_server

SHOTS = REPO / "build" / "screenshots"
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
QUERY = "redis ttl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from indexed_server(tmp_path_factory.mktemp("shots"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


def luminance(css_colour: str) -> float:
    """0 (black) to 1 (white), from ``rgb(r, g, b)``."""
    r, g, b = (int(part) for part in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def overflow(page: Any) -> dict[str, Any]:
    """How far the page is wider than its screen, and the visible elements that stick out."""
    result: dict[str, Any] = page.evaluate(
        """() => {
          const width = document.documentElement.clientWidth;
          const out = [];
          for (const e of document.querySelectorAll('body *')) {
            const r = e.getBoundingClientRect();
            if (r.width && r.height && getComputedStyle(e).visibility !== 'hidden'
                && (r.right > width + 1 || r.left < -1)
                && !e.closest('pre, .visually-hidden, .skip, table')) {
              out.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className}: ` +
                       `${Math.round(r.left)}..${Math.round(r.right)}`);
            }
          }
          return {extra: document.documentElement.scrollWidth - width, out: out.slice(0, 8)};
        }"""
    )
    return result


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_page_at_each_size_and_scheme(
    browser: Any, server: Server, size: str, scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    width, height = SIZES[size]
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{server.url}/#/search?q={QUERY.replace(' ', '%20')}")
        page.wait_for_selector("#results li.result")
        SHOTS.mkdir(parents=True, exist_ok=True)
        shot = SHOTS / f"search-{size}-{scheme}.png"
        page.screenshot(path=str(shot))
        results = page.locator("#results li.result")
        assert results.count() >= 2
        assert results.first.locator(".result-title").inner_text() == "Redis"
        assert results.first.locator(".result-title").is_visible()
        assert overflow(page) == {"extra": 0, "out": []}
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        text = page.evaluate("getComputedStyle(document.body).color")
        if scheme == "dark":
            assert luminance(background) < 0.2 < 0.7 < luminance(text), (background, text)
        else:
            assert luminance(background) > 0.8 > 0.3 > luminance(text), (background, text)

        page.click("#result-0 .result-title")
        page.wait_for_selector("#doc-body .hit")
        note = SHOTS / f"note-{size}-{scheme}.png"
        page.screenshot(path=str(note))
        assert page.locator("#doc-body .hit").first.is_visible()
        assert overflow(page) == {"extra": 0, "out": []}
        assert errors == []
        with capsys.disabled():
            print(f"\n  screenshots: {shot} {note.name}")
    finally:
        context.close()
