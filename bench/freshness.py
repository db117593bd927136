"""Freshness: time from saving a note to finding the change, through `noteseek mcp`.

    .venv/bin/python bench/freshness.py [--rounds 10]

Starts the server (official SDK client over stdio) on a copy of the bundled example vault with
embeddings on, waits until the index is complete and the writer idle, then per round saves a
new version of a note atomically (temporary file renamed over it) and polls every 20 ms:
keyword freshness is until a query for a word that only the new text holds returns the note;
semantic freshness is until a semantic-only query, phrased without that word, returns it in
the top 5. Either counts only when the returned section holds the new text (the note's older
version does not count). At the end it prints the server process's RSS (psutil).
Target (issue 5): keyword <= 1.5 s, semantic <= 3 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
FACTS = [
    (
        "pangolin",
        "Pangolin scales are made of keratin, like human fingernails.",
        "what are the armour plates of scaly anteaters made of",
    ),
    (
        "axolotl",
        "An axolotl can regrow a lost limb within a few weeks.",
        "which salamander regenerates missing legs",
    ),
    (
        "okapi",
        "The okapi is the only living relative of the giraffe.",
        "closest living cousin of giraffes",
    ),
    (
        "tardigrade",
        "Tardigrades survive the vacuum of space in a dried-out state.",
        "tiny animals that live through exposure to outer space",
    ),
    (
        "narwhal",
        "The narwhal's tusk is a tooth with millions of nerve endings.",
        "sensitive spiral tooth of an arctic whale",
    ),
    (
        "quokka",
        "Quokkas live on Rottnest Island off Western Australia.",
        "small marsupial island near Perth",
    ),
    (
        "capybara",
        "Capybaras are the largest rodents and live in herds near water.",
        "biggest rodent species living in groups by rivers",
    ),
    (
        "platypus",
        "The platypus lays eggs and hunts with electroreception.",
        "egg-laying mammal that senses electric fields",
    ),
    (
        "mantis",
        "A mantis shrimp punch accelerates like a small-calibre bullet.",
        "crustacean with an extremely fast strike",
    ),
    (
        "kakapo",
        "The kakapo is a flightless, nocturnal parrot from New Zealand.",
        "night-active parrot that cannot fly",
    ),
]


async def finds(client: Client, args: dict, word: str) -> bool:
    """Whether the note comes back holding the new text (not an older version of it)."""
    result = await client.call_tool("query_documents", args)
    return any(
        r["path"] == "notes/fresh.md" and word in r["content"].lower()
        for r in result.structured_content["results"]
    )


async def wait_ready(client: Client) -> None:
    while True:
        result = await client.call_tool("index_status", {})
        s = result.structured_content
        if s["status"] == "ready" and s["embedding"]["pending"] == 0 and s["documents"]:
            return
        await anyio.sleep(0.2)


async def run(rounds: int, folder: Path) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "noteseek.interfaces.cli", "mcp"], cwd=str(folder)
    )
    note = folder / "vault" / "notes" / "fresh.md"
    keyword: list[float] = []
    semantic: list[float] = []
    async with Client(params, read_timeout_seconds=60) as client:
        await wait_ready(client)
        for word, fact, question in FACTS[:rounds]:
            await anyio.sleep(1.0)  # the writer is idle again
            tmp = note.with_name(".fresh.md.tmp")
            tmp.write_text(f"# Field notes\n\n{fact}\n", encoding="utf-8")
            saved = time.perf_counter()
            os.replace(tmp, note)
            found_k = found_s = None
            while found_k is None or found_s is None:
                if found_k is None and await finds(
                    client, {"query": word, "mode": "keyword", "top_n": 5}, word
                ):
                    found_k = time.perf_counter() - saved
                if found_s is None and await finds(
                    client, {"query": question, "mode": "semantic", "top_n": 5}, word
                ):
                    found_s = time.perf_counter() - saved
                if time.perf_counter() - saved > 30:
                    raise SystemExit(f"not found within 30 s: {word}")
                await anyio.sleep(0.02)
            keyword.append(found_k)
            semantic.append(found_s)
            print(f"{word:11s} keyword {found_k * 1000:6.0f} ms  semantic {found_s * 1000:6.0f} ms")
        status = (await client.call_tool("index_status", {})).structured_content
        rss = psutil.Process(status["service"]["pid"]).memory_info().rss / 1e6
        print(f"server (writer) RSS after the rounds: {rss:.0f} MB")
    return keyword, semantic


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=len(FACTS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noteseek-fresh-") as tmp:
        folder = Path(tmp)
        shutil.copytree(REPO / "examples" / "vault", folder / "vault")
        (folder / ".noteseek.toml").write_text('[roots.notes]\npath = "vault"\n')
        keyword, semantic = anyio.run(run, args.rounds, folder)
    for name, values in (("keyword", keyword), ("semantic", semantic)):
        print(
            f"{name}: median {statistics.median(values) * 1000:.0f} ms, "
            f"max {max(values) * 1000:.0f} ms over {len(values)} saves"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
