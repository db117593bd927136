"""What the embedding model reads (``embedding.reads``): the embedding pass, end to end, on the
same chunks, markdown (the chunk as written, as before) against prose (no link addresses; code only
where the chunk is mostly code).

    .venv/bin/python bench/embed_reads.py [--work DIR] [--rounds 2] [--powershell 1500]

Each corpus is indexed keyword-only once; every round then copies that index once per setting
and runs ``noteseek --index-dir COPY index CORPUS --embed --json`` with
``NOTESEEK_EMBEDDING__READS`` set, alternating the settings, so both embed the same pending
chunks on the same machine in one run. It prints the pass's chunks/s (the indexer's own count
of distinct inputs embedded, over its own seconds), the best round of each, and the ratio.

Corpora (each skipped with a message when its data is absent): hugo-docs-kis's vault, a
deterministic sample of the PowerShell docs (every k-th file of the 14k), and SciFact's
abstracts written as notes (prose without markup: the lever should change nothing there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
NOTESEEK = [sys.executable, "-m", "noteseek.interfaces.cli"]


def hugo(work: Path) -> Path | None:
    vault = DATA / "hugo-docs-kis" / "vault"
    return vault if vault.is_dir() else None


def powershell(work: Path, files: int) -> Path | None:
    archive = DATA / "scale" / "windows-powershell-docs.tgz"
    if not archive.is_file():
        return None
    out = work / f"powershell-{files}"
    if out.is_dir():
        return out
    with tarfile.open(archive) as tar:
        members = sorted(
            (m for m in tar.getmembers() if m.isfile() and m.name.endswith(".md")),
            key=lambda m: m.name,
        )
        step = max(1, len(members) // files)
        for member in members[::step][:files]:
            member.name = member.name.lstrip("/")
            tar.extract(member, out, filter="data")
    return out


def scifact(work: Path, abstracts: int = 1000) -> Path | None:
    corpus = DATA / "scifact-dev" / "corpus.jsonl"
    if not corpus.is_file():
        return None
    out = work / "scifact"
    if out.is_dir():
        return out
    out.mkdir(parents=True)
    with open(corpus, encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if n >= abstracts:
                break
            d = json.loads(line)
            (out / f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n", "utf-8")
    return out


def run(argv: list[str], reads: str | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    if reads:
        env["NOTESEEK_EMBEDDING__READS"] = reads
    proc = subprocess.run(argv, env=env, text=True, capture_output=True)
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/noteseek-embed-reads"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--powershell", type=int, default=1500, help="files sampled from the 14k")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpora = {
        "hugo-docs-kis": hugo(args.work),
        f"powershell ({args.powershell} files)": powershell(args.work, args.powershell),
        "scifact (1,000 abstracts)": scifact(args.work),
    }
    rows = []
    for name, corpus in corpora.items():
        if corpus is None:
            print(f"skip {name}: its data is not in ../shared/data")
            continue
        base = args.work / "index" / name.split()[0]
        shutil.rmtree(base, ignore_errors=True)
        run([*NOTESEEK, "--index-dir", str(base), "index", str(corpus), "--keyword-only", "--json"])
        best: dict[str, tuple[float, int, float]] = {}
        for _ in range(args.rounds):
            for reads in ("markdown", "prose"):
                copy = args.work / "index" / f"copy-{reads}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(base, copy)
                on = [*NOTESEEK, "--index-dir", str(copy)]
                out = run([*on, "index", str(corpus), "--embed", "--json"], reads)
                report = out["embedding"]
                assert isinstance(report, dict)
                embedded, seconds = int(report["embedded"]), float(report["seconds"])
                rate = embedded / seconds
                print(f"  {name} {reads}: {embedded} in {seconds:.1f} s, {rate:.1f}/s", flush=True)
                if rate > best.get(reads, (0.0, 0, 0.0))[0]:
                    best[reads] = (rate, embedded, seconds)
                shutil.rmtree(copy)
        before, after = best["markdown"], best["prose"]
        rows.append((name, before, after))
    print("\n| corpus | markdown: inputs, s, chunks/s | prose: inputs, s, chunks/s | ratio |")
    print("|---|---:|---:|---:|")
    for name, (r0, n0, s0), (r1, n1, s1) in rows:
        print(
            f"| {name} | {n0:,}, {s0:.1f}, {r0:.1f} | {n1:,}, {s1:.1f}, {r1:.1f} | {r1 / r0:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
