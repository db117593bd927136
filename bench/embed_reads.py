"""What the embedding model reads (``embedding.reads``): the embedding pass, end to end, on the
same chunks, markdown (the chunk as written, as before) against prose (no link addresses; code only
where the chunk is mostly code).

    .venv/bin/python bench/embed_reads.py [--work DIR] [--rounds 2] [--powershell 1500]

Each corpus is indexed keyword-only once per side; every round then copies that index once per
side and runs ``noteseek --index-dir COPY index CORPUS --embed --json`` with
``NOTESEEK_EMBEDDING__READS`` set, alternating the settings, so both embed the same pending
chunks on the same machine in one run. With ``--previous DIR`` (a source tree of the previous
release), that release takes the place of ``markdown``: the release against this tree. It
prints the pass's chunks/s (the indexer's own count of distinct inputs embedded, over its own
seconds), the best round of each, and the ratio.

Corpora (each skipped with a message when its data is absent): hugo-docs-kis's vault, a
deterministic sample of the PowerShell docs (every k-th file of the 14k), and SciFact's
abstracts written as notes (prose without markup: the lever should change nothing there).
"""

from __future__ import annotations

import argparse
import itertools
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
    if not out.is_dir():  # the first abstracts, written as the evaluation writes them
        from noteseek.eval.datasets import materialise_corpus

        part = work / "scifact-part.jsonl"
        with open(corpus, encoding="utf-8") as fh:
            part.write_text("".join(itertools.islice(fh, abstracts)), "utf-8")
        materialise_corpus(part, out)
    return out


def run(argv: list[str], reads: str | None = None, source: Path | None = None) -> dict[str, object]:
    """``argv`` run with ``embedding.reads`` set, or from the source tree ``source``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    if reads:
        env["NOTESEEK_EMBEDDING__READS"] = reads
    if source is not None:
        env["PYTHONPATH"] = str(source / "src")
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
    ap.add_argument(
        "--previous",
        type=Path,
        help="a source tree of the previous release (git worktree add DIR REV): it takes the "
        "place of markdown, each side indexing the corpus keyword-only itself",
    )
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
        sides: dict[str, tuple[str | None, Path | None]] = {
            "markdown": ("markdown", None),
            "prose": ("prose", None),
        }
        if args.previous:
            sides["markdown"] = (None, args.previous)
        bases = {}
        for side, (_, source) in sides.items():
            base = args.work / "index" / f"{name.split()[0]}-{side}"
            shutil.rmtree(base, ignore_errors=True)
            on = [*NOTESEEK, "--index-dir", str(base)]
            run([*on, "index", str(corpus), "--keyword-only", "--json"], None, source)
            bases[side] = base
        best: dict[str, tuple[float, int, float]] = {}
        for _ in range(args.rounds):
            for side, (reads, source) in sides.items():
                copy = args.work / "index" / f"copy-{side}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(bases[side], copy)
                on = [*NOTESEEK, "--index-dir", str(copy)]
                out = run([*on, "index", str(corpus), "--embed", "--json"], reads, source)
                report = out["embedding"]
                assert isinstance(report, dict)
                embedded, seconds = int(report["embedded"]), float(report["seconds"])
                rate = embedded / seconds
                print(f"  {name} {side}: {embedded} in {seconds:.1f} s, {rate:.1f}/s", flush=True)
                if rate > best.get(side, (0.0, 0, 0.0))[0]:
                    best[side] = (rate, embedded, seconds)
                shutil.rmtree(copy)
        before, after = best["markdown"], best["prose"]
        rows.append((name, before, after))
    first = "previous release" if args.previous else "markdown"
    print(f"\n| corpus | {first}: inputs, s, chunks/s | prose: inputs, s, chunks/s | ratio |")
    print("|---|---:|---:|---:|")
    for name, (r0, n0, s0), (r1, n1, s1) in rows:
        print(
            f"| {name} | {n0:,}, {s0:.1f}, {r0:.1f} | {n1:,}, {s1:.1f}, {r1:.1f} | {r1 / r0:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
