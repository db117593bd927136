"""Git keyword indexing on a history of large commits (issue 32 item 5).

    .venv/bin/python bench/git_large_commits.py [--tgz PATH] [--per-commit 20] [--edits 200]
        [--rounds 2] [--keep DIR]

The shared repository (dendron-site, 4,301 commits) changes about 270 lines a commit. A
history of large commits is made here from real text: the 14,145 pages of
``../shared/data/scale/windows-powershell-docs.tgz`` added ``--per-commit`` pages a commit, in
path order (a documentation import, about 700 commits), then ``--edits`` commits that each
rewrite one heading in 20 pages drawn at random (seed 32). Each round indexes the repository
keyword-only into a fresh index, as one root of kind ``git`` (``Engine.index``, the parser
processes as configured), and prints the commits, the lines changed per commit (``git log
--shortstat``) and commits per second of the run; the best round counts.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from noteseek.engine import open_engine

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TGZ = REPO.parent / "shared" / "data" / "scale" / "windows-powershell-docs.tgz"
SEED = 32


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def build_history(corpus: Path, repo: Path, per_commit: int, edits: int) -> list[Path]:
    """The import commits, then the edit commits; the pages in path order."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bench@example.org")
    git(repo, "config", "user.name", "bench")
    pages = sorted(p.relative_to(corpus) for p in corpus.rglob("*.md"))
    for start in range(0, len(pages), per_commit):
        part = pages[start : start + per_commit]
        for page in part:
            (repo / page).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(corpus / page, repo / page)
        git(repo, "add", "-A")
        message = f"docs: import {part[0].parent.name} and {len(part) - 1} more pages"
        git(repo, "commit", "-q", "-m", message)
    rng = random.Random(SEED)
    for round_ in range(1, edits + 1):
        for page in rng.sample(pages, min(20, len(pages))):
            path = repo / page
            text = path.read_text(encoding="utf-8", errors="replace")
            path.write_text(text.replace("\n## ", f"\n## Revised {round_}: ", 1), encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"docs: revise headings, round {round_}")
    return pages


def lines_per_commit(repo: Path) -> tuple[int, float]:
    commits = int(git(repo, "rev-list", "--count", "HEAD"))
    stat = git(repo, "log", "--shortstat", "--format=")
    changed = sum(int(n) for n in re.findall(r"(\d+) (?:insertion|deletion)", stat))
    return commits, changed / max(1, commits)


def index_once(repo: Path, work: Path) -> tuple[int, float]:
    """Commits indexed and the run's seconds, keyword-only into a fresh index."""
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir()
    (project / ".noteseek.toml").write_text(
        f'[roots.history]\npath = "{repo.as_posix()}"\nkind = "git"\n\n'
        f'[index]\ndir = "{(project / "index").as_posix()}"\n',
        encoding="utf-8",
    )
    engine = open_engine(project, environ={"HOME": str(work / "home")})
    try:
        started = time.perf_counter()
        report = engine.index(["history"], keyword_only=True)
        seconds = time.perf_counter() - started
    finally:
        engine.close()
    return report.added, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    ap.add_argument("--per-commit", type=int, default=20)
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = ap.parse_args()
    if not args.tgz.is_file():
        print(f"skip: {args.tgz} not found (the shared data folder is absent)")
        return 0
    with tempfile.TemporaryDirectory(prefix="noteseek-git-large-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        with tarfile.open(args.tgz) as tar:
            tar.extractall(corpus, filter="data")
        repo = args.keep or work / "repo"
        if not (repo / ".git").is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            build_history(corpus, repo, args.per_commit, args.edits)
        commits, lines = lines_per_commit(repo)
        print(f"history: {commits} commits, {lines:,.0f} lines changed per commit")
        best = 0.0
        for round_ in range(1, args.rounds + 1):
            added, seconds = index_once(repo, work)
            rate = added / seconds
            best = max(best, rate)
            print(f"round {round_}: {added} commits in {seconds:.2f} s: {rate:.0f} commits/s")
        print(f"best: {best:.0f} commits/s (target 500)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
