"""Cold `noteseek search`: the whole process, on an already-indexed large vault.

    .venv/bin/python bench/cold_search.py [--vault synthetic|powershell|FOLDER] [--notes 13400]
        [--runs 10] [--mcp 3] [--keep DIR]

The vault is indexed keyword-only (`noteseek index --keyword-only`, through the CLI), then
`--runs` fresh `noteseek search QUERY` processes are timed end to end (interpreter start-up,
imports, opening the index, the link graph and communities for the community boost, which is
on by default, the search and the printing), each with another query, and the p50 and max are
printed, with the CPU time (user + system) of those processes, which a busy machine inflates
less than the wall time. With `--mcp N`, N fresh `noteseek mcp` servers are spawned with the
official SDK client and the time from spawn to the answer of their first `query_documents` is
printed too.

Vaults:

* `synthetic` (default): an Obsidian-style zettelkasten written by :func:`write_vault` with a
  fixed seed: `--notes` notes in 60 topic folders (a third of them with a subfolder), names of
  two or three words (some names repeat in other folders, as in real vaults), a third with
  frontmatter aliases, 3-10 links per note (full-path `[[Folder/Note]]` links as Obsidian
  writes them with "absolute path in vault", bare `[[Note]]`, `[[Note|label]]`, aliases,
  `[[Folder/Note#Heading]]`, and about 5% dangling links), most of them to notes of the same
  folder, under `## Concepts`, `## List` and `## Locations` sections, and 150-500 words of
  text drawn from a Zipf-distributed vocabulary of 6,000 words.
* `powershell`: `../shared/data/scale/windows-powershell-docs.tgz` unpacked (14,145 files
  with relative `.md` links).
* a folder: used as it is (indexed into a temporary index folder).

Queries are note names and pairs of words from the vault, drawn with a fixed seed.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TGZ = REPO.parent / "shared" / "data" / "scale" / "windows-powershell-docs.tgz"
SEED = 19

_SYLLABLES = [
    "ka",
    "ri",
    "to",
    "mo",
    "na",
    "le",
    "su",
    "vi",
    "da",
    "pe",
    "ro",
    "ga",
    "ni",
    "shi",
    "tu",
    "be",
    "lo",
    "fa",
    "me",
    "ze",
    "ha",
    "yo",
    "ki",
    "ru",
    "sa",
    "po",
    "mi",
    "ta",
    "ne",
    "ko",
    "bu",
    "di",
    "la",
    "se",
    "wo",
    "gu",
    "re",
    "ma",
    "fi",
    "ho",
]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def write_vault(folder: Path, notes: int, seed: int = SEED) -> int:
    """Write the synthetic zettelkasten (see the module docstring); returns the links."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 6000)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    topics = [w.capitalize() for w in rng.sample(vocab[:600], 60)]
    folders = [
        t if rng.random() < 0.67 else f"{t}/{rng.choice(vocab).capitalize()}" for t in topics
    ]
    names: list[tuple[str, str]] = []  # (folder, name)
    seen: set[tuple[str, str]] = set()
    while len(names) < notes:
        where = rng.choice(folders)
        if names and rng.random() < 0.04:  # a name that exists in another folder
            name = rng.choice(names)[1]
        else:
            name = " ".join(w.capitalize() for w in rng.sample(vocab, rng.randint(2, 3)))
        if (where, name) not in seen:
            seen.add((where, name))
            names.append((where, name))
    aliases = {
        i: rng.choice(vocab).capitalize() + " " + rng.choice(vocab)
        for i in range(notes)
        if rng.random() < 0.33
    }
    by_folder: dict[str, list[int]] = {}
    for i, (where, _) in enumerate(names):
        by_folder.setdefault(where, []).append(i)
    total = 0
    for i, (where, name) in enumerate(names):
        links: list[str] = []
        for _ in range(rng.randint(3, 10)):
            pool = by_folder[where] if rng.random() < 0.7 else range(notes)
            j = rng.choice(pool)
            tf, tn = names[j]
            r = rng.random()
            if r < 0.05:
                links.append(f"[[{rng.choice(vocab).capitalize()} {rng.choice(vocab)}]]")
            elif r < 0.55:
                links.append(f"[[{tf}/{tn}]]")
            elif r < 0.70:
                links.append(f"[[{tn}]]")
            elif r < 0.80:
                links.append(f"[[{tf}/{tn}|{rng.choice(vocab)}]]")
            elif r < 0.90 and j in aliases:
                links.append(f"[[{aliases[j]}]]")
            else:
                links.append(f"[[{tf}/{tn}#Concepts]]")
        total += len(links)

        def para(n: int) -> str:
            return " ".join(rng.choices(vocab, weights, k=n)).capitalize() + "."

        parts = []
        if i in aliases:
            parts.append(
                f"---\naliases: [{aliases[i]}]\ntags: [{where.split('/')[0].lower()}]\n---\n"
            )
        parts.append(para(rng.randint(40, 120)) + "\n")
        cut = len(links) // 2
        parts.append(
            "## Concepts\n\n" + para(rng.randint(30, 90)) + " " + " ".join(links[:cut]) + "\n"
        )
        parts.append(
            "## List\n\n"
            + "\n".join(f"- {para(rng.randint(5, 15))} {link}" for link in links[cut:])
            + "\n"
        )
        parts.append("## Locations\n\n" + para(rng.randint(30, 150)) + "\n")
        path = folder / where / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(parts), encoding="utf-8")
    return total


def queries(folder: Path, count: int) -> list[str]:
    rng = random.Random(SEED)
    files = sorted(folder.rglob("*.md"))
    out: list[str] = []
    while len(out) < count:
        path = rng.choice(files)
        if rng.random() < 0.5:
            out.append(path.stem)
        else:
            words = path.read_text(encoding="utf-8", errors="replace").split()
            words = [w for w in words if w.isalpha() and len(w) > 3]
            if len(words) >= 2:
                at = rng.randrange(len(words) - 1)
                out.append(f"{words[at]} {words[at + 1]}")
    return out


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one process, start to exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def _mcp_first_query(project: Path, query: str) -> float:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noteseek.interfaces.cli", "mcp", "--no-watch"],
        cwd=str(project),
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=120) as client:
        await client.call_tool("query_documents", {"query": query})
        return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vault", default="synthetic")
    ap.add_argument("--notes", type=int, default=13400)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--mcp", type=int, default=0, help="first queries of fresh MCP servers")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the project in this folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noteseek-cold-") as tmp:
        project = args.keep or Path(tmp)
        project.mkdir(parents=True, exist_ok=True)
        vault = project / "vault"
        if args.vault not in ("synthetic", "powershell"):
            vault = Path(args.vault).resolve()
        elif not vault.exists():
            started = time.perf_counter()
            if args.vault == "synthetic":
                links = write_vault(vault, args.notes)
                print(f"wrote {args.notes} notes, {links} links", end="")
            else:
                if not TGZ.is_file():
                    print(f"skip: {TGZ} not found (the shared data folder is absent)")
                    return 0
                vault.mkdir()
                with tarfile.open(TGZ) as tar:
                    tar.extractall(vault, filter="data")
                print("unpacked the powershell docs", end="")
            print(f" in {time.perf_counter() - started:.1f}s")
        (project / ".noteseek.toml").write_text(
            f'[roots.notes]\npath = "{vault.as_posix()}"\n\n[index]\ndir = "index"\n',
            encoding="utf-8",
        )
        env = {**os.environ, "XDG_DATA_HOME": str(project / "xdg"), "NO_COLOR": "1"}
        cli = [sys.executable, "-m", "noteseek.interfaces.cli"]
        took, _ = timed([*cli, "index", "--keyword-only"], project, env)
        files = sum(1 for _ in vault.rglob("*.md"))
        print(f"index --keyword-only ({files} .md files): {took:.1f}s")
        asked = queries(vault, args.runs + 1)
        timed([*cli, "search", asked[-1]], project, env)  # the page cache, as a user's would be
        runs = [timed([*cli, "search", q], project, env) for q in asked[: args.runs]]
        times, cpu = [r[0] for r in runs], [r[1] for r in runs]
        print(
            f"cold `noteseek search` x{len(times)}: p50 {statistics.median(times):.2f}s, "
            f"max {max(times):.2f}s (CPU user+sys p50 {statistics.median(cpu):.2f}s, "
            f"max {max(cpu):.2f}s; load average {os.getloadavg()[0]:.1f})"
        )
        if args.mcp:
            import anyio

            first = [anyio.run(_mcp_first_query, project, q) for q in asked[: args.mcp]]
            print(
                f"`noteseek mcp` spawn to first query_documents x{len(first)}: "
                f"p50 {statistics.median(first):.2f}s, max {max(first):.2f}s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
