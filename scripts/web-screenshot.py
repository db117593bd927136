"""Take the README's screenshot of the web page: `.venv/bin/python scripts/web-screenshot.py`.

Serves a copy of examples/vault with `noteseek serve` (embeddings on, so hybrid search and the
embedding bar show), searches "redis ttl" in Debian's headless Chromium, opens the first result,
shows why it ranked, and writes docs/img/web-page.png (or the path given).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "img" / "web-page.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shutil.copytree(REPO / "examples" / "vault", base / "vault")
        (base / ".noteseek.toml").write_text('[roots.notes]\npath = "vault"\n', encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
        env.update(XDG_DATA_HOME=str(base / "data"), XDG_CONFIG_HOME=str(base / "config"))
        log = base / "serve.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "noteseek.interfaces.cli", "serve", "--port", "0"],
                cwd=base,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            url = wait_ready(proc, log)
            shoot(url, out)
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(30)
    print(f"wrote {out}")


def wait_ready(proc: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 300
    url = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"noteseek serve exited:\n{log.read_text()}")
        if not url:
            found = re.search(r"listening on (http://[\d.:]+)", log.read_text())
            url = found.group(1) if found else ""
        else:
            status = httpx.get(f"{url}/status", timeout=30).json()
            if status.get("status") == "ready" and status.get("documents"):
                return url
        time.sleep(0.5)
    sys.exit("the index was not ready within 5 minutes")


def shoot(url: str, out: Path) -> None:
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path="/usr/bin/chromium",
            headless=True,
            args=ARGS,
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
