"""Take the README's screenshot of the web page: `.venv/bin/python scripts/web-screenshot.py`.

Serves a copy of examples/vault with `noteseek serve` (embeddings on, so hybrid search and the
embedding bar show; the browser tests' server helper), searches "redis ttl" in Debian's headless
Chromium, opens the first result, shows why it ranked, and writes docs/img/web-page.png (or the
path given).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright  # noqa: E402
from tests.helpers import project  # noqa: E402
from tests.test_serve import serve_env  # noqa: E402
from tests.test_web import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "img" / "web-page.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shutil.copytree(REPO / "examples" / "vault", base / "vault")
        folder = base / "project"
        folder.mkdir()
        project(folder, {"notes": base / "vault"})
        env = serve_env(base / "home", NOTESEEK_EMBEDDING__ENABLED="true")
        server = Server(folder, env).start()
        try:
            server.wait_indexed(timeout=300)  # "ready" once every section has its vector
            shoot(server.url, out)
        finally:
            server.stop()
    print(f"wrote {out}")


def shoot(url: str, out: Path) -> None:
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 900},
            color_scheme="light",
        )
        page = context.new_page()
        page.goto(f"{url}/#/search?q=redis%20ttl")
        page.wait_for_selector("#results li.result")
        page.click("#result-0 .snippet")
        page.wait_for_selector("#doc-body .hit")
        page.wait_for_selector("#graph svg a.node.center")
        page.click("#result-0 .why-toggle")
        page.wait_for_selector("#why-0 table.explain")
        page.click("#q")  # focus back in the search box, as a person would leave it
        page.screenshot(path=str(out))
        context.close()


if __name__ == "__main__":
    main()
