"""Release against release: earlier commits and the working tree, alternately, in one run.

    .venv/bin/python bench/releases.py --base 2c36e53 --base b670d14 [--rounds 2]
        [--vault FOLDER | --corpus TGZ] [--queries 500] [--work DIR] [--no-hybrid]

Each version is installed into an environment of its own under ``--work``: an earlier commit
is checked out with ``git worktree add --detach``, the working tree is this repository as it
is; each gets a virtual environment with the package installed by pip (``--no-deps``) and
the dependencies shared from this interpreter's environment (a ``.pth`` file), so versions
differ only in noteseek's own code. Then, round after round (the versions' order reversed
every other round, so load from other work on the machine falls on all of them alike):

* **cold keyword index**: ``noteseek --index-dir NEW index VAULT --keyword-only``, wall time;
* **unchanged re-index**: the same command again (nothing changed), wall time;
* **MCP start to tools/list**: ``noteseek --index-dir D mcp`` spawned by the official SDK
  client, wall time to the tools/list answer;
* **cold CLI search**: one ``noteseek --index-dir D search QUERY`` process, wall time (median
  of three queries);
* **keyword and hybrid latency by the held-out method**: ``noteseek --index-dir D search
  --queries F --json --top-k 10 --mode M``, p50 and p95 of the ``took_ms`` of every query.
  The queries are the titles and descriptions of the vault's notes (front matter), drawn
  with a fixed seed.

Hybrid needs vectors: embedding the 14k corpus takes a quarter of an hour per version, so
each version's keyword index is copied and given the same vectors for every chunk (drawn
from a hash of the chunk's embedding key around the real model's vector of one sentence, so
queries meet them above the model's cosine floor as they meet real vectors; see
:func:`with_vectors`) and brought up to date by the version itself (``noteseek index``:
nothing to embed; the newer versions save their vector matrix). The query is embedded by the
real model; the vector lane's work is that of real vectors of the same shape, its ranking is
not (this measures speed, never quality). The lanes of one search are printed per version.

The worktrees stay registered with the repository for the next run; ``git worktree remove
WORK/src-COMMIT`` removes them.

Printed: per measure, each version's median over the rounds, and the ratio of the working
tree to each base (below 1: the working tree is faster). Runs take long: a cold keyword index
of the 14k corpus is about a minute per version on a quiet 2-core machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TGZ = REPO.parent / "shared" / "data" / "scale" / "windows-powershell-docs.tgz"
SEED = 32
MODEL = "bge-small-en-v1/int8"
DIMENSION = 384
COLD_QUERIES = ["get the execution policy", "remove a dns server zone", "scheduled task trigger"]


@dataclass
class Version:
    label: str
    commit: str | None
    """None: the working tree."""
    env: Path
    results: dict[str, list[float]] = field(default_factory=dict)

    @property
    def command(self) -> list[str]:
        return [str(self.env / "bin" / "python"), "-m", "noteseek.interfaces.cli"]

    def add(self, measure: str, value: float) -> None:
        self.results.setdefault(measure, []).append(value)


def sh(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, text=True, capture_output=True)


def install(work: Path, commit: str | None) -> Version:
    """A worktree of ``commit`` (or this tree) installed into a virtual environment."""
    label = commit or "work"
    name = commit or "work"
    source = REPO
    if commit is not None:
        source = work / f"src-{commit}"
        if not source.exists():
            sh(["git", "-C", str(REPO), "worktree", "add", "--detach", str(source), commit])
    env = work / f"env-{name}"
    if not env.exists():
        sh([sys.executable, "-m", "venv", str(env)])
    site = sh(
        [
            str(env / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ]
    ).stdout.strip()
    Path(site, "zz-shared-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    sh([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(source)])
    return Version(label, commit, env)


def child_env(work: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("NOTESEEK_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        XDG_DATA_HOME=str(work / "home" / "data"),
        XDG_CONFIG_HOME=str(work / "home" / "config"),
        NO_COLOR="1",
    )
    return env


def timed(
    argv: list[str], work: Path, ok: tuple[int, ...] = (0,), limit: float | None = None
) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        argv,
        cwd=work,
        env=child_env(work),
        capture_output=True,
        text=True,
        check=False,
        timeout=limit,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def mcp_start(version: Version, index: Path, work: Path) -> float:
    import anyio
    from mcp import Client, StdioServerParameters

    command = version.command
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "--index-dir", str(index), "mcp"],
        cwd=str(work),
        env=child_env(work),
    )

    async def run() -> float:
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=120) as client:
            await client.list_tools()
            return time.perf_counter() - started

    return anyio.run(run)


def latency(version: Version, index: Path, queries: Path, mode: str, work: Path) -> list[float]:
    argv = [*version.command, "--index-dir", str(index), "search", "--queries", str(queries)]
    _, out = timed([*argv, "--json", "--top-k", "10", "--mode", mode], work, ok=(0, 1))
    return [float(json.loads(line)["took_ms"]) for line in out.splitlines() if line.strip()]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def held_out_queries(vault: Path, count: int, path: Path) -> Path:
    """Titles and descriptions from the notes' front matter, ``count`` of them, seeded."""
    found: set[str] = set()
    pattern = re.compile(r"^(title|description):\s*(.+?)\s*$", re.MULTILINE)
    for note in sorted(vault.rglob("*.md")):
        head = note.read_text(encoding="utf-8", errors="replace")[:2000]
        if not head.startswith("---"):
            continue
        for _, value in pattern.findall(head.split("\n---", 1)[0]):
            text = value.strip("'\"")
            if 3 <= len(text) <= 200:
                found.add(text)
    chosen = random.Random(SEED).sample(sorted(found), min(count, len(found)))
    with path.open("w", encoding="utf-8") as out:
        for i, text in enumerate(chosen):
            out.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
    return path


ANCHOR = "Windows PowerShell cmdlet reference: syntax, parameters, examples and notes"
_EMBED = (
    "import json, sys\n"
    "from noteseek.embed.onnx import MODELS, OnnxEmbedder\n"
    "e = OnnxEmbedder(MODELS['bge-small-en'], threads=1)\n"
    "print(json.dumps([float(x) for x in e.embed_documents([sys.argv[1]])[0]]))\n"
)


def anchor_vector(version: Version, work: Path) -> list[float]:
    """The real model's vector of :data:`ANCHOR`: the fake vectors lean towards it."""
    _, out = timed([str(version.env / "bin" / "python"), "-c", _EMBED, ANCHOR], work)
    return [float(x) for x in json.loads(out)]


def with_vectors(
    version: Version, keyword: Path, hybrid: Path, vault: Path, work: Path, anchor: list[float]
) -> None:
    """A copy of ``keyword`` with the same unit vector for each embedding key in every
    version, as the configured model's, brought up to date by ``version`` itself.

    Each vector is the real model's vector of :data:`ANCHOR` plus noise drawn from a hash of
    the key, at a cosine of 0.75-0.98 to it: real queries then meet them at cosines around the
    model's calibrated floor and above (0.5), as real vectors do, so the vector lane hands
    fusion a full list; pure noise would be dropped under the floor and make hybrid look
    cheap."""
    if hybrid.exists():
        shutil.rmtree(hybrid)
    shutil.copytree(keyword, hybrid, ignore=shutil.ignore_patterns("writer.lock"))
    import numpy as np

    centre = np.asarray(anchor, dtype=np.float64)
    centre /= np.linalg.norm(centre)

    db = sqlite3.connect(hybrid / "index.db")
    try:
        keys = [r[0] for r in db.execute("SELECT DISTINCT embed_key FROM chunks ORDER BY 1")]
        with db:
            for start in range(0, len(keys), 4096):
                part = keys[start : start + 4096]
                seeds = [int(hashlib.sha256(k.encode()).hexdigest()[:8], 16) for k in part]
                rows = np.stack([_leaning(centre, np.random.default_rng(s)) for s in seeds])
                db.executemany(
                    "INSERT OR REPLACE INTO vectors(model, key, vector) VALUES (?, ?, ?)",
                    [(MODEL, k, rows[i].tobytes()) for i, k in enumerate(part)],
                )
            db.execute("DELETE FROM meta WHERE key = 'keyword_only'")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (MODEL,))
            choice = json.dumps({"model": "bge-small-en", "provider": "local"})
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_choice', ?)", (choice,))
    finally:
        db.close()
    # Nothing is left to embed: a version that embedded anything here would take hours.
    timed([*version.command, "--index-dir", str(hybrid), "index", str(vault)], work, limit=900)


def _leaning(centre: Any, rng: Any) -> Any:
    """A unit vector at a cosine of 0.75-0.98 (drawn by ``rng``) to the unit ``centre``."""
    import numpy as np

    noise = rng.standard_normal(DIMENSION)
    noise -= noise.dot(centre) * centre
    noise /= np.linalg.norm(noise)
    cosine = rng.uniform(0.75, 0.98)
    return (cosine * centre + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


def one_round(
    versions: list[Version],
    vault: Path,
    queries: Path,
    work: Path,
    anchor: list[float] | None,
    first: bool,
) -> None:
    for version in versions:
        name = version.commit or "work"
        index = work / "idx" / name
        if index.exists():
            shutil.rmtree(index)
        on = [*version.command, "--index-dir", str(index)]
        seconds, _ = timed([*on, "index", str(vault), "--keyword-only"], work)
        version.add("cold keyword index, s", seconds)
        seconds, _ = timed([*on, "index", str(vault), "--keyword-only"], work)
        version.add("unchanged re-index, s", seconds)
        version.add("MCP start to tools/list, s", mcp_start(version, index, work))
        colds = [timed([*on, "search", q], work, ok=(0, 1))[0] for q in COLD_QUERIES]
        version.add("cold CLI search (keyword), s", statistics.median(colds))
        took = latency(version, index, queries, "keyword", work)
        version.add("keyword p50, ms", percentile(took, 0.5))
        version.add("keyword p95, ms", percentile(took, 0.95))
        if anchor is not None:
            with_v = work / "idx" / f"{name}-hybrid"
            if first or not with_v.exists():
                with_vectors(version, index, with_v, vault, work, anchor)
            on_h = [*version.command, "--index-dir", str(with_v)]
            if first:
                _, out = timed([*on_h, "search", ANCHOR, "--json", "--top-k", "10"], work)
                lanes = json.loads(out).get("lanes", {})
                print(f"  {version.label}: hybrid lanes for the anchor query {lanes}", flush=True)
            colds = [timed([*on_h, "search", q], work, ok=(0, 1))[0] for q in COLD_QUERIES]
            version.add("cold CLI search (hybrid), s", statistics.median(colds))
            took = latency(version, with_v, queries, "hybrid", work)
            version.add("hybrid p50, ms", percentile(took, 0.5))
            version.add("hybrid p95, ms", percentile(took, 0.95))
        print(f"  {version.label}: done", flush=True)


def report(versions: list[Version], rounds: int, queries: int, vault: Path) -> None:
    work = versions[-1]
    bases = versions[:-1]
    load = os.getloadavg()
    print(
        f"\n{rounds} round(s), versions alternated; vault {vault} "
        f"({sum(1 for _ in vault.rglob('*.md'))} .md files); {queries} held-out queries; "
        f"load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
    )
    head = " | ".join(v.label for v in versions)
    ratios = " | ".join(f"work / {b.label}" for b in bases)
    print(f"| measure (median of rounds) | {head} | {ratios} |")
    print("|---|" + "---:|" * (len(versions) + len(bases)))
    for measure in work.results:
        cells = [f"{statistics.median(v.results[measure]):.3f}" for v in versions]
        ours = statistics.median(work.results[measure])
        shares = [f"{ours / statistics.median(b.results[measure]):.2f}" for b in bases]
        print(f"| {measure} | " + " | ".join(cells + shares) + " |")
    print("\nevery round:")
    for v in versions:
        print(
            f"  {v.label}: "
            + json.dumps({k: [round(x, 3) for x in xs] for k, xs in v.results.items()})
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--base", action="append", required=True, help="an earlier commit (repeat)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--vault", type=Path, help="a folder of notes (default: --corpus unpacked)")
    ap.add_argument("--corpus", type=Path, default=TGZ)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--work", type=Path, default=Path("/tmp/noteseek-releases"))
    ap.add_argument("--no-hybrid", dest="hybrid", action="store_false")
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    vault = args.vault
    if vault is None:
        vault = work / "corpus"
        if not vault.exists():
            with tarfile.open(args.corpus) as tar:
                tar.extractall(vault, filter="data")
    vault = vault.resolve()
    print("installing:", ", ".join([*args.base, "working tree"]), flush=True)
    versions = [install(work, commit) for commit in args.base] + [install(work, None)]
    queries = held_out_queries(vault, args.queries, work / "queries.jsonl")
    anchor = anchor_vector(versions[-1], work) if args.hybrid else None
    for round_ in range(args.rounds):
        order = versions if round_ % 2 == 0 else list(reversed(versions))
        print(f"round {round_ + 1}: " + ", ".join(v.label for v in order), flush=True)
        one_round(order, vault, queries, work, anchor, round_ == 0)
        report(versions, round_ + 1, args.queries, vault)  # a long run is never all lost
    return 0


if __name__ == "__main__":
    sys.exit(main())
