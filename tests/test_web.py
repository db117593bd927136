"""The web page in a real browser: headless Debian Chromium driven by Playwright.

The page is served by the real ``noteseek serve`` (a subprocess on a free loopback port, over a
copy of the example vault plus one hostile note, embeddings off) and used as a person would:
search, read, follow links, the graph, the keyboard, the status panel, the token form. The
browser is the system's ``/usr/bin/chromium`` (``scripts/test`` installs it on Debian); no
browser is ever downloaded. Without it these tests fail, saying so: they are never skipped.

Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import EXAMPLE_VAULT, REPO
from tests.git_repos import Repo
from tests.helpers import project, write
from tests.test_serve import serve_env

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
ARTIFACTS = REPO / "test-artifacts"
TOKEN = "page-token-0123456789abcdef"
WAIT_MS = 15_000

HOSTILE = """---
title: "Hostile <img src=x onerror=window.__pwned=1> zebrafish"
tags: [danger]
---
# Hostile <script>window.__pwned = 1</script> zebrafish

<script>window.__pwned = 1; alert("script")</script>
<img src="x" onerror="window.__pwned = 1; alert('img')">
<svg onload="window.__pwned = 1"><circle r="5"/></svg>
<iframe src="javascript:parent.__pwned = 1"></iframe>
<iframe srcdoc="<script>parent.__pwned = 1</script>"></iframe>
<a id="evil-link" href="javascript:window.__pwned = 1">click me</a>
<a href="  JaVaScRiPt:window.__pwned = 1">spaced</a>
<details open ontoggle="window.__pwned = 1"><summary>toggle</summary>zebrafish inside</details>
<div style="position:fixed;inset:0;background:red" onmouseover="window.__pwned = 1">cover</div>
<p id="q">clobbering the search box id</p>
<form action="javascript:window.__pwned = 1"><input autofocus onfocus="window.__pwned = 1"></form>
<math><mtext><table><mglyph><style><img src=x onerror="window.__pwned = 1"></style></mglyph>

[markdown js](javascript:window.__pwned=1) and [[x" onmouseover="window.__pwned=1|label]]
and ![pic](javascript:window.__pwned=1) zebrafish snippet <b onclick="window.__pwned=1">b</b>
"""


def _need_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the web page tests need Debian's Chromium "
            "(apt-get install chromium; scripts/test does this when run as root)",
            pytrace=False,
        )


# -- the server --------------------------------------------------------------------------------


@dataclass
class Server:
    """``noteseek serve --port 0`` in a subprocess; stopped by its PID."""

    folder: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""
    log_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_file = self.folder / "serve.log"

    def start(self) -> Server:
        with self.log_file.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "noteseek.interfaces.cli", "serve", "--port", "0"],
                cwd=self.folder,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while not self.url:
            found = re.search(r"listening on (http://[\d.:]+)", self.log())
            if found:
                self.url = found.group(1)
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"noteseek serve did not start:\n{self.log()}")
            else:
                time.sleep(0.05)
        return self

    def log(self) -> str:
        return self.log_file.read_text(encoding="utf-8", errors="replace")

    def status(self) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return dict(httpx.get(f"{self.url}/status", headers=headers, timeout=30).json())

    def wait_indexed(self, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status = self.status()
            except httpx.HTTPError:
                status = {}
            if status.get("status") == "ready" and status.get("documents", 0) > 0:
                return status
            time.sleep(0.1)
        raise AssertionError(f"the index was never ready:\n{self.log()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def make_vault(base: Path) -> Path:
    """The example vault in a git repository with two commits (its history is a root too)."""
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    write(vault / "notes" / "hostile.md", HOSTILE)
    write(vault / "notes" / "x<img src=x onerror=window.__pwned=1>.md", "# Odd name\n\nzebrafish\n")
    repo = Repo(vault)
    repo.commit("Import the example vault", day=1)
    redis = vault / "notes" / "redis.md"
    repo.commit(
        "Explain why cache entries vanish\n\nReaders kept asking where their keys went.",
        {"notes/redis.md": redis.read_text(encoding="utf-8") + "\nKeys vanish at their TTL.\n"},
        author=("Bo Lund", "bo@example.org"),
        day=30,
    )
    return vault


def start_server(base: Path, **env: str) -> Server:
    folder = base / "project"
    folder.mkdir()
    vault = make_vault(base)
    project(
        folder, {"notes": vault}, f'[roots.history]\npath = "{vault.as_posix()}"\nkind = "git"\n'
    )
    return Server(folder, serve_env(base / "home", **env)).start()


def indexed_server(base: Path) -> Iterator[Server]:
    """The page's server over the test vault, indexed; stopped afterwards."""
    running = start_server(base)
    try:
        running.wait_indexed()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from indexed_server(tmp_path_factory.mktemp("web"))


# -- the browser -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 900},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            context.close()


@dataclass
class Watched:
    """A page and what went wrong in it: script errors, dialogs, blocked content, requests
    to anywhere but the server."""

    page: Any
    base: str
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)

    def goto(self, hash_part: str = "") -> None:
        self.page.goto(self.base + "/" + hash_part)

    def load(self, hash_part: str) -> None:
        """Load the page afresh. Going to the URL it already shows only changes nothing (no
        hashchange, no new request), so a test polling for something new must reload."""
        self.page.goto("about:blank")
        self.goto(hash_part)

    def check_clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs
        assert self.foreign == [], self.foreign


def watched_page(context: Any, base: str) -> Watched:
    page = context.new_page()
    w = Watched(page, base)
    page.on("pageerror", lambda exc: w.errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: (
            w.errors.append(f"console: {msg.text}")
            # The browser logs every 4xx answer; the page shows those itself.
            if msg.type == "error" and "responded with a status of 4" not in msg.text
            else None
        ),
    )

    def on_dialog(dialog: Any) -> None:
        w.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith((base, "data:", "about:"))
            else w.foreign.append(request.url)
        ),
    )
    return w


@pytest.fixture
def web(browser_context: Any, server: Server) -> Iterator[Watched]:
    w = watched_page(browser_context, server.url)
    try:
        yield w
        w.check_clean()
    finally:
        w.page.close()


def search(w: Watched, query: str) -> Any:
    page = w.page
    page.fill("#q", query)
    page.press("#q", "Enter")
    page.wait_for_selector("#results li.result")
    return page.locator("#results li.result")


def hash_of(page: Any) -> str:
    return unquote(page.evaluate("location.hash"))


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


# -- tests -------------------------------------------------------------------------------------


def test_search_shows_highlighted_results(web: Watched) -> None:
    web.goto()
    page = web.page
    results = search(web, "redis ttl")
    assert re.match(
        r"\d+ results for “redis ttl” \(hybrid, [\d.]+ ms\)", page.inner_text("#result-count")
    )
    assert page.get_attribute("#result-count", "aria-live") == "polite"
    first = results.first
    assert first.locator(".result-title").inner_text() == "Redis"
    assert "Expiry and TTL" in first.locator(".where").inner_text()
    marks = [m.lower() for m in first.locator(".snippet mark").all_inner_texts()]
    assert marks and set(marks) <= {"redis", "ttl"}, marks
    assert "**" not in first.locator(".snippet").inner_text()
    assert first.locator(".lane").first.inner_text() == "keyword #1"
    assert hash_of(page) == "#/search?q=redis+ttl"
    # The name in the corner starts again from nothing; back returns to the results.
    page.click(".brand")
    expect(page.locator("#results li")).to_have_count(0)
    expect(page.locator("#reader-empty")).to_be_visible()
    assert page.input_value("#q") == ""
    page.go_back()
    expect(page.locator("#results li.result").first).to_be_visible()
    assert page.input_value("#q") == "redis ttl"


def test_results_are_grouped_by_document(web: Watched, server: Server) -> None:
    """One result per document; its further matching sections are listed under it."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    api = httpx.post(
        f"{server.url}/query_documents", json={"query": "redis"}, headers=headers, timeout=30
    ).json()
    docs = [r["doc_id"] for r in api["results"]]
    assert len(docs) == len(set(docs))
    grouped = [r for r in api["results"] if r.get("also")]
    assert grouped, api["results"]
    web.goto()
    results = search(web, "redis")
    rank = api["results"].index(grouped[0])
    also = results.nth(rank).locator(".also")
    expect(also).to_have_count(1)
    text = also.inner_text()
    assert text.startswith("also in this document: ")
    assert grouped[0]["also"][0]["heading_path"][-1] in text


def test_why_shows_each_lanes_contribution(web: Watched) -> None:
    web.goto("#/search?q=redis%20ttl")
    page = web.page
    page.wait_for_selector("#results li.result")
    toggle = page.locator("#result-0 .why-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    row = page.locator("#why-0 table.explain tbody tr").first
    assert row.locator("th").inner_text() == "keyword"
    assert row.locator("td").nth(0).inner_text() == "#1"
    assert "BM25" in row.locator("td").nth(1).inner_text()
    assert float(row.locator("td").nth(2).inner_text()) > 0
    assert "Matched terms: " in page.inner_text("#why-0")
    toggle.click()
    assert page.locator("#why-0").is_hidden()


def test_opening_a_result_shows_the_note_at_that_section(web: Watched) -> None:
    web.goto("#/search?q=redis%20ttl")
    page = web.page
    page.wait_for_selector("#results li.result")
    href = page.get_attribute("#result-0 .result-title", "href")
    found = re.search(r"line=(\d+)&end=(\d+)", href or "")
    assert found, href
    start, end = int(found.group(1)), int(found.group(2))
    page.click("#result-0 .snippet")
    page.wait_for_selector("#doc-body .hit")
    assert hash_of(page).startswith("#/doc/notes/notes/redis.md?line=")
    assert page.inner_text("#doc-path") == "notes / notes/redis.md"
    lines = page.eval_on_selector_all(
        "#doc-body .hit", "els => els.map(e => [+e.dataset.line, +e.dataset.lineEnd])"
    )
    assert lines and all(a <= end and b >= start for a, b in lines), (lines, start, end)
    assert page.locator("#doc-body .hit").first.is_visible()
    in_view = page.eval_on_selector(
        "#doc-body .hit",
        "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }",
    )
    assert in_view
    page.screenshot(path=str(artifact("web-result-open.png")))


def test_following_a_wikilink_and_reading_backlinks(web: Watched) -> None:
    web.goto("#/doc/notes/notes/redis.md")
    page = web.page
    page.wait_for_selector("#doc-body h1")
    page.click("#doc-body a.ns-wikilink:has-text('rate limiter')")
    expect(page.locator("#doc-path")).to_have_text("notes / notes/rate-limiting.md")
    assert hash_of(page) == "#/doc/notes/notes/rate-limiting.md"
    assert page.inner_text("#doc-title") == "Rate limiting"
    backlinks = page.locator("#backlinks li a")
    assert "Redis" in backlinks.all_inner_texts()
    assert page.inner_text("#backlinks-count") == f"({backlinks.count()})"
    # A backlink opens the linking note at the line of the link.
    page.click("#backlinks li a:text-is('Redis')")
    expect(page.locator("#doc-path")).to_have_text("notes / notes/redis.md")
    page.wait_for_selector("#doc-body .hit")
    assert page.locator("#doc-body .hit a.ns-wikilink:has-text('rate limiter')").count() == 1
    # Back and forward follow the hash.
    page.go_back()
    expect(page.locator("#doc-path")).to_have_text("notes / notes/rate-limiting.md")
    page.go_forward()
    expect(page.locator("#doc-path")).to_have_text("notes / notes/redis.md")
    # A missing note is marked, and clicking it searches for its name.
    web.goto("#/doc/notes/projects/atlas.md")
    expect(page.locator("#doc-path")).to_have_text("notes / projects/atlas.md")
    missing = page.locator("#doc-body a.ns-missing", has_text="Feature flags")
    assert missing.count() == 1
    missing.click()
    page.wait_for_selector("#result-count:has-text('Feature flags')")
    assert page.input_value("#q") == "Feature flags"


def remember(server: Server, name: str, content: str) -> None:
    """Write a memory through the running server's API."""
    made = httpx.post(
        f"{server.url}/memories",
        json={"name": name, "content": content},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert made.status_code == 201, made.text


def test_a_memory_linking_to_a_note_shows_in_its_backlinks(web: Watched, server: Server) -> None:
    remember(server, "go-plan", "Plan to rewrite the [[go]] notes with examples.")
    page = web.page
    deadline = time.monotonic() + 20
    while True:
        web.load("#/doc/notes/notes/go.md")
        expect(page.locator("#doc-path")).to_have_text("notes / notes/go.md")
        expect(page.locator("#backlinks-count")).to_have_text(re.compile(r"\(\d+\)"))
        memory = page.locator("#backlinks li.memory")
        if memory.count():
            break
        assert time.monotonic() < deadline, "the memory never showed in the backlinks"
        time.sleep(0.2)
    assert memory.locator(".ns-memory").inner_text().lower() == "memory"
    assert "rewrite the [[go]] notes" in memory.locator(".ns-context").inner_text()
    assert "refactors" in memory.inner_text()


def test_searching_agent_memory_from_the_page(web: Watched, server: Server) -> None:
    remember(server, "okapi", "The okapi lives in the Ituri rainforest.")
    page = web.page
    deadline = time.monotonic() + 20
    while True:
        web.load("#/search?q=okapi+ituri&mode=keyword&source=memory")
        expect(page.locator("#result-count")).to_contain_text("result")
        if page.locator("#results li", has_text="memory/okapi.md").count():
            break
        assert time.monotonic() < deadline, "the memory was never found"
        time.sleep(0.2)
    assert page.input_value("#f-source") == "memory"
    # Document search (the default) leaves memories out.
    page.select_option("#f-source", "docs")
    page.click("button.primary:has-text('Search')")
    expect(page.locator("#result-count")).to_contain_text("No results")
    assert "source=" not in hash_of(page)


def test_git_history_from_the_page(web: Watched) -> None:
    web.goto("#/search?q=cache+entries+vanish&mode=keyword&source=commits")
    page = web.page
    expect(page.locator("#result-count")).to_contain_text("result")
    first = page.locator("#results li.result").first
    expect(first.locator(".result-title")).to_contain_text("Explain why cache entries vanish")
    assert re.fullmatch(r"[0-9a-f]{10} Explain.*", first.locator(".result-title").inner_text())
    meta = first.locator(".commit-meta").inner_text()
    assert meta.startswith("2023-12-14 · Bo Lund · 1 file +2")
    assert "notes/redis.md" in first.locator(".where").inner_text()
    assert page.input_value("#f-source") == "commits"
    first.locator(".result-title").click()
    expect(page.locator("#doc-title")).to_have_text("Explain why cache entries vanish")
    assert page.locator("#doc-path").inner_text().startswith("history / ")
    expect(page.locator("#doc-body")).to_contain_text("+Keys vanish at their TTL.")
    expect(page.locator("#doc-body")).to_contain_text("Readers kept asking")
    page.screenshot(path=str(artifact("web-commit-open.png")))
    # A note found by search says when it last changed, and by whom.
    web.goto("#/search?q=redis+ttl")
    expect(page.locator("#result-0 .changed")).to_have_text("Changed 2023-12-14 by Bo Lund")


def test_a_note_is_read_again_when_opened_again(web: Watched, server: Server) -> None:
    web.goto("#/doc/notes/notes/go.md")
    page = web.page
    expect(page.locator("#doc-path")).to_have_text("notes / notes/go.md")
    note = server.folder.parent / "vault" / "notes" / "go.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nA freshly appended line.\n")
    lines = len(note.read_text(encoding="utf-8").splitlines())
    web.page.evaluate(f"location.hash = '#/doc/notes/notes/go.md?line={lines}'")
    expect(page.locator("#doc-body .hit")).to_have_text("A freshly appended line.")


def test_the_graph_shows_the_neighbourhood_and_its_nodes_navigate(web: Watched) -> None:
    web.goto("#/doc/notes/notes/redis.md")
    page = web.page
    page.wait_for_selector("#graph svg a.node.center")
    assert page.get_attribute("#graph a.node.center", "aria-label") == "Redis"
    one = page.locator("#graph a.node").count()
    assert one >= 6
    assert page.locator("#graph line.edge").count() >= one - 1
    page.select_option("#graph-depth", "2")
    expect(page.locator("#graph a.node.depth-2").first).to_be_attached()
    assert page.locator("#graph a.node").count() > one
    page.click("#graph a.node[data-id='notes/notes/caching-strategies.md']")
    expect(page.locator("#doc-path")).to_have_text("notes / notes/caching-strategies.md")
    page.wait_for_selector("#graph a.node.center[aria-label='Caching strategies']")


def test_the_keyboard_drives_search_and_results(web: Watched) -> None:
    web.goto()
    page = web.page
    page.click("body")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("caching")
    page.keyboard.press("Enter")
    page.wait_for_selector("#results li.result")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.id") == "result-0"
    assert page.get_attribute("#result-0", "aria-current") == "true"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.id") == "result-1"
    assert page.get_attribute("#result-0", "aria-current") is None
    assert page.get_attribute("#result-1", "aria-current") == "true"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowDown")
    second = page.get_attribute("#result-1 .result-title", "href") or ""
    page.keyboard.press("Enter")
    expect(page).to_have_url(web.base + "/" + second)
    page.wait_for_selector("#doc-body .hit")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "q"
    # "/" typed into the search box is text, not the shortcut.
    page.keyboard.press("End")
    page.keyboard.type("/x")
    assert page.input_value("#q") == "caching/x"


def test_filters_narrow_the_results(web: Watched) -> None:
    web.goto()
    page = web.page
    page.click("#filters summary")
    page.fill("#f-path", "daily/")
    results = search(web, "redis")
    paths = results.locator(".where").all_inner_texts()
    assert paths and all(p.startswith("notes/daily/") for p in paths), paths
    assert "path=daily%2F" in page.evaluate("location.hash")
    page.fill("#f-after", "not a date")
    page.press("#q", "Enter")
    page.wait_for_selector("#warnings .error")
    assert "cannot read the date 'not a date'" in page.inner_text("#warnings .error")
    assert page.locator("#results li.result").count() == 0


def test_the_status_panel_shows_the_index(web: Watched, server: Server) -> None:
    status = server.status()
    web.goto()
    page = web.page
    expect(page.locator("#st-docs")).to_have_text(f"{status['documents']:,}")
    assert page.inner_text("#st-chunks") == f"{status['chunks']:,}"
    # The example vault has one file indexed with a warning (no body text) and none failed.
    assert (status["failed_files"], status["warned_files"]) == (0, 1)
    assert page.inner_text("#st-failed") == "0"
    assert page.inner_text("#st-warned") == "1"
    assert page.inner_text("#st-state") == "ready"
    assert page.inner_text("#st-emb-text") == "off"  # embeddings are off in these tests
    assert page.inner_text("#status-pill") == f"{status['documents']} notes · ready"


def test_a_hostile_note_stays_inert(web: Watched) -> None:
    page = web.page
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', e =>"
        " window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    web.goto("#/search?q=zebrafish")
    page.wait_for_selector("#results li.result")
    titles = page.locator("#results .result-title").all_inner_texts()
    assert "Hostile <img src=x onerror=window.__pwned=1> zebrafish" in titles
    assert any(
        "x<img src=x onerror=window.__pwned=1>.md" in w
        for w in page.locator("#results .where").all_inner_texts()
    )
    page.click(
        "#results .result-title:text-is('Hostile <img src=x onerror=window.__pwned=1> zebrafish')"
    )
    page.wait_for_selector("#doc-body h1")
    body = page.locator("#doc-body")
    assert "zebrafish inside" in body.inner_text()
    # Deferred handlers (onerror, onload, ontoggle) would run within a few hundred ms.
    page.wait_for_timeout(300)
    page.hover("#doc-body")
    found = page.evaluate(
        """() => {
          const all = [...document.querySelectorAll('*')];
          return {
            pwned: typeof window.__pwned,
            handlers: all.flatMap(e => [...e.attributes].filter(a => /^on/i.test(a.name))
              .map(a => e.tagName + ' ' + a.name)),
            js: all.filter(e => /^\\s*javascript:/i.test(e.getAttribute('href') || '')
              || /^\\s*javascript:/i.test(e.getAttribute('src') || '')).length,
            dangerous: document.querySelectorAll('#doc-body :is(script, iframe, svg, img, style,'
              + ' form, input, object, embed, math, [style])').length,
            scripts: document.scripts.length,
            searchBox: document.querySelectorAll('#q').length,
            violations: window.__violations,
          };
        }"""
    )
    assert found == {
        "pwned": "undefined",
        "handlers": [],
        "js": 0,
        "dangerous": 0,
        "scripts": 1,  # app.js
        "searchBox": 1,  # the note's id="q" became ns-q
        "violations": [],
    }
    # The odd file name opens too, and its name is shown as text (the example vault is a note
    # vault, so the file name is also the title; its H1 "Odd name" is an alias).
    web.goto("#/search?q=zebrafish")
    page.click("#results .result-title:text-is('x<img src=x onerror=window.__pwned=1>')")
    expect(page.locator("#doc-path")).to_contain_text("x<img src=x onerror=window.__pwned=1>.md")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    page.screenshot(path=str(artifact("web-hostile-note.png")))


def test_the_token_form_then_live_updates(tmp_path: Path, browser_context: Any) -> None:
    running = start_server(tmp_path, NOTESEEK_SERVE__TOKEN=TOKEN)
    try:
        before = running.wait_indexed()
        w = watched_page(browser_context, running.url)
        page = w.page
        try:
            w.goto()
            page.wait_for_selector("#token-form:not([hidden])")
            assert page.evaluate("document.activeElement.id") == "token"
            page.fill("#token", "wrong-token")
            page.press("#token", "Enter")
            page.wait_for_selector("#token-error:has-text('not accepted')")
            page.fill("#token", TOKEN)
            page.press("#token", "Enter")
            page.wait_for_selector("#token-form[hidden]", state="attached")
            expect(page.locator("#st-docs")).to_have_text(str(before["documents"]))
            assert page.evaluate("sessionStorage.getItem('noteseek.token')") == TOKEN
            assert search(w, "redis ttl").count() > 0
            # The panel follows the index: a new note is counted within a few polls.
            write(running.folder.parent / "vault" / "notes" / "brand-new.md", "# New\n\nfresh\n")
            expect(page.locator("#st-docs")).to_have_text(
                str(before["documents"] + 1), timeout=30_000
            )
            w.check_clean()
        finally:
            page.close()
    finally:
        running.stop()
