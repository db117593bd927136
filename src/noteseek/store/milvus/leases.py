"""Leases kept in Milvus: which writer may write a root, the graph, and blocks of ids.

Several writers (processes, machines) may write one index in Milvus at once, each on its own
roots. What they must not share is coordinated by leases stored in the ``leases`` collection,
so the coordination works across machines (a lock file guards one machine's folder only):

* ``root:NAME``: the writer of a root. Only its holder writes the root's files, chunks, its
  keyword statistics (per-root rows, summed when read) and its ``root:NAME`` meta row, so two
  writers never read-modify-write one row. Held while the handle indexes (renewed by a thread);
  released when it closes; a holder that dies stops renewing and its lease expires.
* ``graph``: the writer that brings the kept link graph up to date (one at a time).
* ``ids:START``: a block of ids (file ids, chunk row ids, generations) owned for good by the
  writer that claimed it; ids are handed out from the block locally, so writers never collide
  and one writer's ids stay consecutive (as the SQLite backend's).

Milvus has no compare-and-swap, so a claim is a row of its own and the winner is decided by
reading back, with Strong consistency (a read sees every write acknowledged before it began):

1. read the resource's rows: a live row (unexpired) of another writer means it is taken:
   held, by whom is reported; not yet held, another writer is claiming it right now (step 4);
2. delete the resource's expired rows (a holder that died or stopped renewing);
3. write a claim row: its own primary key (resource + a random token), expiry now + ttl;
4. read the rows again: when its row is the only live one, the claimant holds the resource
   and marks its row held; otherwise it deletes its row and, after a random pause, tries again.

At most one claimant wins: if A's and B's claims both won, each read saw only its own row. Say
A's write was acknowledged first; B read after its own write was acknowledged, so after A's,
and saw A's row (A deletes it only when it gives up). "Lowest (time, token) wins" alone would
not be safe: a claim stamped earlier but written later beats one that already read itself
alone, so colliding claimants both withdraw and retry after random pauses instead.

Why blocks for ids, rather than ids hashed to 64 bits or a writer number in the high bits:
hashed ids may collide (rarely, but a collision merges two files' rows) and scatter one
writer's ids, so rows that tie on score would order differently from the SQLite backend
(parity) and from run to run; a writer number needs the same claim as a block, and blocks
keep a lone writer's ids exactly 1, 2, 3 ... as before. A block costs one claim per 65,536
ids (two writes, two reads); ids left in a block when its writer exits are never reused.

Why per-root statistics rather than per-writer deltas: a root has one writer at a time (its
lease), so its rows are read, changed and written back by that writer alone; their number is
bounded by terms x roots, so there is nothing to compact, and a reader sums a handful of rows
per query term.

A holder renews its rows every ``ttl / 4`` while their expiry is more than half the ttl away
by its own clock, and only if they are still there; a row gone or another writer's held row
means the lease was lost, and the holder's next commit fails (:class:`LeaseLost`) instead of
writing: before each commit a handle holding leases checks them (one query). Expired rows are
taken over by the next claimant, and so are the rows of a holder on the claimant's own
machine whose process no longer runs (killed: no need to wait for its lease to run out; as
the local writer lock, machines are told apart by host name). This assumes the writers'
clocks agree to well within half the ttl (60 s by default) and no holder stalls that long
between a check and its write.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noteseek.store.errors import StoreError, WriterConflict
from noteseek.store.milvus.schema import safe_key

LEASE_SECONDS = 60.0
"""How long a claim lives without being renewed."""
ATTEMPTS = 8
"""Claims of a contended resource before giving up (each after a random pause)."""
FOREVER = 1e300
"""The expiry of a claim held for good (an id block)."""
BLOCK = 65_536
"""Ids per block claimed at once."""
SEP = "|"


class LeaseHeld(WriterConflict):
    """Another writer holds the resource; ``holder`` says who."""

    def __init__(self, resource: str, holder: Holder) -> None:
        self.resource = resource
        self.holder = holder
        what = f"root {resource[5:]!r}" if resource.startswith("root:") else f"the {resource}"
        super().__init__(
            f"{what} of this Milvus index is being written by {holder.describe()}; "
            "wait for it to finish (or stop it), then try again"
        )


class LeaseLost(StoreError):
    """A lease this handle held expired or was taken over: its writes stop."""


@dataclass(frozen=True, slots=True)
class Holder:
    """One claim row as read back."""

    resource: str
    token: str
    host: str
    pid: int
    command: str
    claimed: float
    expires: float
    held: bool

    def describe(self) -> str:
        who = f"noteseek {self.command}" if self.command else "a noteseek writer"
        until = time.strftime("%H:%M:%S", time.localtime(self.expires))
        return f"{who} (pid {self.pid} on {self.host}, lease renewed until {until})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "host": self.host,
            "pid": self.pid,
            "command": self.command,
            "since": self.claimed,
            "expires": self.expires,
        }


def _holder(row: dict[str, Any]) -> Holder:
    info = row.get("holder") or {}
    return Holder(
        str(row["resource"]),
        str(row["token"]),
        str(info.get("host", "")),
        int(info.get("pid", 0)),
        str(info.get("command", "")),
        float(row["claimed"]),
        float(row["expires"]),
        bool(row["held"]),
    )


def _command() -> str:
    """The noteseek command this process runs (``index``, ``watch`` ...), for messages;
    empty in a program that is not noteseek's command line."""
    argv = sys.argv or [""]
    program = Path(argv[0])
    if program.name != "noteseek" and program.parts[-3:] != ("interfaces", "cli", "__main__.py"):
        return ""
    return next((a for a in argv[1:] if not a.startswith("-")), "")


FIELDS = ["pk", "resource", "kind", "token", "holder", "claimed", "expires", "held", "n", "m"]


class Leases:
    """The leases one store handle claims, holds and renews.

    ``client`` gives the handle's client, which the renewing thread shares (gRPC calls from
    several threads are safe). The leases have a lock of their own, taken around every change
    of what is held and every call they make: renewal never waits for the handle's lock, which
    an index run holds for a commit after commit (a Milvus Lite index of 200k chunks lost its
    lease that way, the renewing thread starved for more than three quarters of the ttl). The
    handle takes this lock only inside its own, never the other way round.
    """

    def __init__(
        self,
        client: Callable[[], Any],
        collection: str,
        *,
        ttl: float = LEASE_SECONDS,
    ) -> None:
        self._client = client
        self._lock = threading.RLock()
        self.collection = collection
        self.ttl = ttl
        self.token = secrets.token_hex(8)
        self.info = {"host": socket.gethostname(), "pid": os.getpid(), "command": _command()}
        self.held: dict[str, float] = {}
        """Resource -> the expiry of this handle's claim on it."""
        self._since: dict[str, float] = {}
        self.lost: dict[str, str] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _call(self, call: Callable[[Any], Any]) -> Any:
        with self._lock:
            return call(self._client())

    # -- reading ------------------------------------------------------------------------------

    def _rows(self, expr: str) -> list[dict[str, Any]]:
        return list(
            self._call(
                lambda c: c.query(
                    self.collection, filter=expr, output_fields=FIELDS, consistency_level="Strong"
                )
            )
        )

    def _claims(self, resource: str) -> list[dict[str, Any]]:
        return self._rows(f"resource == {_lit(resource)}")

    def holders(self, kind: str | None = None) -> list[Holder]:
        """The live held claims (of one kind; else every kind but id blocks), oldest first."""
        expr = "held == 1 and " + (f"kind == {_lit(kind)}" if kind else 'kind != "ids"')
        now = time.time()
        found = [_holder(r) for r in self._rows(expr) if float(r["expires"]) > now]
        return sorted(found, key=lambda h: (h.claimed, h.resource))

    # -- claiming -----------------------------------------------------------------------------

    def _pk(self, resource: str) -> str:
        return safe_key(f"{resource}{SEP}{self.token}")  # deleted as read back

    def _write(self, resource: str, kind: str, expires: float, held: bool, n: int, m: int) -> None:
        since = self._since.setdefault(resource, time.time())
        row = {
            "pk": self._pk(resource),
            "resource": resource,
            "kind": kind,
            "token": self.token,
            "holder": self.info,
            "claimed": since,
            "expires": expires,
            "held": int(held),
            "n": n,
            "m": m,
            "_v": [0.0, 1.0],
        }
        self._call(lambda c: c.upsert(self.collection, [row]))

    def _delete(self, pks: list[str]) -> None:
        if pks:
            self._call(lambda c: c.delete(self.collection, ids=pks))

    def try_claim(
        self, resource: str, kind: str, *, forever: bool = False, n: int = 0, m: int = 0
    ) -> Holder | None:
        """Claim ``resource`` (the module docstring's protocol); None when this handle holds
        it now, else the holder (or the other claimant) that keeps it."""
        for attempt in range(ATTEMPTS):
            with self._lock:
                won, live = self._claim_once(resource, kind, forever, n, m)
            if won:
                return None
            held = [r for r in live if r["held"]]
            if held:
                return _holder(held[0])
            if attempt == ATTEMPTS - 1:
                return _holder(live[0]) if live else None
            time.sleep(random.uniform(0.02, 0.2) * (attempt + 1))
        return None  # pragma: no cover - the loop returns

    def _dead(self, row: dict[str, Any]) -> bool:
        """Whether a claim's holder is a process of this machine that no longer runs (killed:
        its lease need not run out first). Another machine's holders are never judged."""
        info = row.get("holder") or {}
        pid = int(info.get("pid", 0))
        if info.get("host") != self.info["host"] or pid <= 0 or pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # it runs, as another user
            return False
        return False

    def _claim_once(
        self, resource: str, kind: str, forever: bool, n: int, m: int
    ) -> tuple[bool, list[dict[str, Any]]]:
        """One claim: (won, the other live claims seen)."""
        if resource in self.held:
            return True, []
        now = time.time()
        rows = self._claims(resource)
        gone = [r for r in rows if float(r["expires"]) <= now or self._dead(r)]
        live = [r for r in rows if r not in gone and r["token"] != self.token]
        if live:
            return False, live
        self._delete([str(r["pk"]) for r in gone])
        expires = FOREVER if forever else now + self.ttl
        self._write(resource, kind, expires, False, n, m)
        rows = self._claims(resource)
        now = time.time()
        others = [r for r in rows if float(r["expires"]) > now and r["token"] != self.token]
        if not others and any(r["token"] == self.token for r in rows):
            self._write(resource, kind, expires, True, n, m)
            if forever:
                self._since.pop(resource, None)
            else:
                self.held[resource] = expires
                self.lost.pop(resource, None)
                self._start_renewing()
            return True, []
        self._delete([self._pk(resource)])
        self._since.pop(resource, None)
        return False, others

    def acquire(self, resource: str, kind: str, wait: float = 0.0) -> None:
        """Hold ``resource``, waiting up to ``wait`` seconds for its holder; else
        :class:`LeaseHeld` naming the holder."""
        deadline = time.monotonic() + wait
        while True:
            holder = self.try_claim(resource, kind)
            if holder is None:
                return
            if time.monotonic() >= deadline:
                raise LeaseHeld(resource, holder)
            time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))

    @contextlib.contextmanager
    def holding(self, resource: str, kind: str, wait: float) -> Iterator[None]:
        """Hold ``resource`` for a block (released after, unless it was held before)."""
        before = resource in self.held
        self.acquire(resource, kind, wait)
        try:
            yield
        finally:
            if not before:
                self.release([resource])

    def release(self, resources: list[str] | None = None) -> None:
        """Give up some leases (all when None)."""
        with self._lock:
            names = list(self.held) if resources is None else resources
            for name in names:
                self.held.pop(name, None)
                self.lost.pop(name, None)
                self._since.pop(name, None)
            self._delete([self._pk(n) for n in names])
            if not self.held:
                self._stop.set()

    # -- id blocks ----------------------------------------------------------------------------

    def claim_block(self, size: int, floor: int) -> tuple[int, int]:
        """Claim the next free block of at least ``size`` ids above ``floor``: (first, end)."""
        while True:
            rows = self._rows('kind == "ids"')
            start = max([floor, 1, *(int(r["m"]) for r in rows)])
            end = start + max(size, BLOCK)
            if self.try_claim(f"ids:{start}", "ids", forever=True, n=start, m=end) is None:
                return start, end

    # -- keeping ------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise :class:`LeaseLost` unless every lease held is still this handle's (called
        under the handle's lock, before a commit)."""
        with self._lock:
            self._check()

    def _check(self) -> None:
        if not self.held and not self.lost:
            return
        now = time.time()
        if not self.lost:
            expired = [r for r, e in self.held.items() if e <= now]
            if not expired:
                # The renewing thread keeps them; look in Milvus only when it is behind.
                margin = self.ttl / 2
                if all(e - now > margin for e in self.held.values()):
                    return
                self._renew()
            for resource in expired:
                self.lost[resource] = "its lease expired"
                self.held.pop(resource, None)
        if self.lost:
            resource, why = next(iter(self.lost.items()))
            raise LeaseLost(
                f"this writer lost the lease on {resource} ({why}); another writer may have "
                "taken it over: nothing more was written"
            )

    def renew(self) -> None:
        """Extend every lease held, if still this handle's (else it is marked lost)."""
        with self._lock:
            self._renew()

    def _renew(self) -> None:
        if not self.held:
            return
        now = time.time()
        rows = self._rows(f"resource in {_in(list(self.held))}")
        for resource, expires in list(self.held.items()):
            mine = [r for r in rows if r["resource"] == resource and r["token"] == self.token]
            taken = [
                r
                for r in rows
                if r["resource"] == resource
                and r["token"] != self.token
                and r["held"]
                and float(r["expires"]) > now
            ]
            if not mine or taken or expires - now < self.ttl / 4:
                self.lost.setdefault(resource, "its claim is gone or ran out before renewal")
                self.held.pop(resource, None)
                continue
            new = now + self.ttl
            self._write(resource, str(mine[0].get("kind") or "root"), new, True, 0, 0)
            self.held[resource] = new

    def _start_renewing(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_loop, name="noteseek-lease", daemon=True, args=(self._stop,)
        )
        self._thread.start()

    def _renew_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl / 4):
            with contextlib.suppress(Exception):  # a failed renewal shows at the next check
                self.renew()

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):  # the rows expire anyway
            self.release()


def _lit(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _in(values: list[str]) -> str:
    return "[" + ",".join(_lit(v) for v in values) + "]"
