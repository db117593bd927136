"""How fast each `noteseek` command starts: the whole process, on an already-indexed vault.

    .venv/bin/python bench/starts.py --index-dir DIR [--hybrid-index-dir DIR] [--runs 7]
        [--noteseek CMD [--noteseek CMD2]] [--importtime]

Each round runs every start once, in turn (so a burst of load on a shared machine falls on all
of them alike; with two ``--noteseek`` commands, say an earlier release's environment and this
tree's, each start runs with both, their order swapped every round), and prints per start the
median and best wall time and the median CPU time (user + system of the process, which a busy
machine inflates less than the wall), with the target of issue 32:

* `--version` (0.15 s); `status`, `get DOC`, `links DOC` (0.3 s each);
* `search QUERY` on a keyword-only index (cold keyword search, 0.3 s) and, with
  `--hybrid-index-dir`, on an index with vectors (cold hybrid search, 0.8 s);
* `mcp`: spawn to the answers of `initialize` and `tools/list` with the official SDK client
  (0.6 s).

DOC is the document with the most backlinks (read from the index), queries rotate through a
fixed list. Bytecode is written on the first (untimed) run of each start, as an installed
package has it: the environment's PYTHONDONTWRITEBYTECODE is dropped for the children.

With `--importtime`, each command runs once more under `python -X importtime` and the import
time of each top-level package is printed (self time summed over its modules; noteseek by
subpackage), the table docs/benchmarks.md publishes.

The index folders are used as they are (the vault they index must be where they say); the
14k-note vault of issue 32 is `../shared/data/scale/windows-powershell-docs.tgz`, indexed
with `noteseek --index-dir DIR index FOLDER --keyword-only`.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

QUERIES = [
    "get the execution policy",
    "remove a dns server zone",
    "network adapter binding",
    "scheduled task trigger",
    "certificate enrollment policy",
    "hyper-v virtual switch",
    "bitlocker recovery password",
]
TARGETS = {
    "--version": 0.15,
    "status": 0.3,
    "get": 0.3,
    "links": 0.3,
    "search (keyword)": 0.3,
    "search (hybrid)": 0.8,
    "mcp initialize + tools/list": 0.6,
}


HOME = Path(tempfile.mkdtemp(prefix="noteseek-starts-"))
"""The children's user folders (the index used last, named indexes): the user's stay as they
are."""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_DATA_HOME"] = str(HOME / "data")
    env["XDG_CONFIG_HOME"] = str(HOME / "config")
    env.setdefault("NO_COLOR", "1")
    return env


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        argv, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def mcp_start(command: list[str], index_dir: Path, cwd: Path) -> tuple[float, float]:
    """Spawn `noteseek mcp` and time it to the tools/list answer (CPU: the server's)."""
    import anyio
    from mcp import Client, StdioServerParameters

    args = [*command[1:], "--index-dir", str(index_dir), "mcp"]
    params = StdioServerParameters(command=command[0], args=args, cwd=str(cwd), env=child_env())

    async def run() -> float:
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=60) as client:
            await client.list_tools()
            return time.perf_counter() - started

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = anyio.run(run)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def most_linked(index_dir: Path) -> str:
    db = sqlite3.connect(f"file:{index_dir / 'index.db'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT f.doc_id FROM graph_edges e JOIN files f ON f.id = e.target_id "
            "GROUP BY e.target_id ORDER BY count(*) DESC, f.doc_id LIMIT 1"
        ).fetchone()
        if row is None:
            row = db.execute("SELECT doc_id FROM files ORDER BY doc_id LIMIT 1").fetchone()
        return str(row[0])
    finally:
        db.close()


def starts(
    command: list[str], index_dir: Path, hybrid: Path | None
) -> dict[str, Callable[[int], list[str] | None]]:
    """Each start's argv for round ``i`` (None: the MCP start, timed by the SDK client)."""
    doc = most_linked(index_dir)
    on = [*command, "--index-dir", str(index_dir)]
    out: dict[str, Callable[[int], list[str] | None]] = {
        "--version": lambda i: [*command, "--version"],
        "status": lambda i: [*on, "status"],
        "get": lambda i: [*on, "get", doc],
        "links": lambda i: [*on, "links", doc],
        "search (keyword)": lambda i: [*on, "search", QUERIES[i % len(QUERIES)]],
    }
    if hybrid is not None:
        out["search (hybrid)"] = lambda i: [
            *command,
            "--index-dir",
            str(hybrid),
            "search",
            QUERIES[i % len(QUERIES)],
        ]
    out["mcp initialize + tools/list"] = lambda i: None
    return out


def import_table(
    command: list[str], argv_of: dict[str, list[str] | None], index_dir: Path, cwd: Path
) -> None:
    """Import time per top-level package (noteseek by subpackage), per start."""
    python = command[0] if command[1:2] == ["-m"] else sys.executable
    rows: dict[str, collections.Counter[str]] = {}
    for name, argv in argv_of.items():
        # The MCP server: started with stdin at its end, it imports what it answers with.
        rest = ["--index-dir", str(index_dir), "mcp"] if argv is None else argv[len(command) :]
        args = ["-m", "noteseek.interfaces.cli", *rest]
        proc = subprocess.run(
            [python, "-X", "importtime", *args],
            cwd=cwd,
            env=child_env(),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        counts: collections.Counter[str] = collections.Counter()
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _, module = line.split(":", 1)[1].split("|")
            parts = module.strip().split(".")
            key = ".".join(parts[:2]) if parts[0] == "noteseek" else parts[0]
            counts[key] += int(self_us)
        rows[name] = counts
    slowest = {p: max(counts[p] for counts in rows.values()) for c in rows.values() for p in c}
    shown = sorted(slowest, key=lambda p: -slowest[p])[:18]
    names = list(rows)
    print("\nimport time, ms (self time summed per package; -X importtime, one run each)\n")
    print("| package | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for package in shown:
        cells = [f"{rows[n][package] / 1000:.0f}" if rows[n][package] else "-" for n in names]
        print(f"| {package} | " + " | ".join(cells) + " |")
    totals = [f"**{sum(rows[n].values()) / 1000:.0f}**" for n in names]
    print("| **all imports** | " + " | ".join(totals) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index-dir", type=Path, required=True, help="a keyword-only index")
    ap.add_argument("--hybrid-index-dir", type=Path, help="an index with vectors")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument(
        "--noteseek",
        action="append",
        help="the command to time (default: this interpreter's noteseek); give it twice to "
        "time two versions alternately (an earlier release's environment, say)",
    )
    ap.add_argument("--importtime", action="store_true")
    args = ap.parse_args()
    commands = [
        shlex.split(c) for c in args.noteseek or [f"{sys.executable} -m noteseek.interfaces.cli"]
    ]
    cwd = Path.cwd()
    index_dir = args.index_dir.resolve()
    hybrid = args.hybrid_index_dir.resolve() if args.hybrid_index_dir else None
    plans = [starts(command, index_dir, hybrid) for command in commands]
    walls: list[dict[str, list[float]]] = [{name: [] for name in plan} for plan in plans]
    cpus: list[dict[str, list[float]]] = [{name: [] for name in plan} for plan in plans]
    for round_ in range(args.runs + 1):  # round 0 writes bytecode and warms the page cache
        for name in plans[0]:
            order = range(len(plans)) if round_ % 2 else reversed(range(len(plans)))
            for i in order:
                argv = plans[i][name](round_)
                if argv is None:
                    wall, cpu = mcp_start(commands[i], index_dir, cwd)
                else:
                    wall, cpu = timed(argv, cwd)
                if round_:
                    walls[i][name].append(wall)
                    cpus[i][name].append(cpu)
    load = os.getloadavg()
    print(f"{args.runs} runs each, alternating; load average {load[0]:.2f} {load[1]:.2f}")
    for i, command in enumerate(commands):
        print(f"[{i + 1}] {' '.join(command)}")
    print()
    head = " | ".join(
        f"[{i + 1}] wall median / best s | [{i + 1}] CPU median s" for i in range(len(commands))
    )
    print(f"| start | {head} | target s |")
    print("|---|" + "---:|---:|" * len(commands) + "---:|")
    for name in plans[0]:
        cells = [
            f"{statistics.median(walls[i][name]):.3f} / {min(walls[i][name]):.3f} | "
            f"{statistics.median(cpus[i][name]):.3f}"
            for i in range(len(commands))
        ]
        print(f"| {name} | " + " | ".join(cells) + f" | {TARGETS[name]} |")
    if args.importtime:
        for i, command in enumerate(commands):
            argvs = {name: argv_of(0) for name, argv_of in plans[i].items()}
            print(f"\n[{i + 1}] {' '.join(command)}")
            import_table(command, argvs, index_dir, cwd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
