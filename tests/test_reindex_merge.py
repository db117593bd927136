"""Reindex requests made while a reindex job still waits are merged into it (issue 44 item 4):
an agent that asks three times in a row gets one job, told so, not three full runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import project, write
from tests.mcp_client import call, eventually, run, session

FILES = 1000
"""Enough files that a forced reindex runs for seconds on a slow machine: the requests below
arrive while it runs, so the job they queue cannot have started."""


def _jobs(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["id"]: job for job in status["service"]["jobs"]}


def test_three_reindex_calls_while_one_waits_are_one_job(tmp_path: Path) -> None:
    notes, more = tmp_path / "notes", tmp_path / "more"
    for i in range(FILES):
        write(notes / f"n{i:04}.md", f"# Note {i}\n\nSome text about topic {i}.\n")
    write(more / "extra.md", "# Extra\n\nA second root.\n")
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": notes, "more": more}, "[embedding]\nenabled = false\n")

    async def main() -> None:
        async with session(folder, "--no-watch") as client:

            async def indexed() -> bool:
                status = await call(client, "index_status")
                return bool(status["status"] == "ready" and status["documents"] == FILES + 1)

            await eventually(indexed, timeout=120)

            # A forced run of every root occupies the writer...
            running = (await call(client, "reindex", {"force": True}))["job"]

            async def started() -> bool:
                state = str(_jobs(await call(client, "index_status"))[running["id"]]["state"])
                assert state != "done", "the forced run ended before the test could ask"
                return state == "running"

            await eventually(started, timeout=60, step=0.02)

            # ...so these three wait in the queue: the first queues a job, the others join it.
            first = await call(client, "reindex", {"paths": ["notes"]})
            second = await call(client, "reindex", {"paths": ["more"]})
            third = await call(client, "reindex", {"paths": ["notes"]})
            status = await call(client, "index_status")
            jobs = _jobs(status)
            assert jobs[running["id"]]["state"] == "running", "the three calls came too late"

            queued = first["job"]
            assert queued["id"] != running["id"] and queued["state"] == "queued"
            assert first.get("merged_into") is None
            for answer in (second, third):
                assert answer["job"]["id"] == queued["id"]
                assert answer["merged_into"] == queued["id"]
                assert f"merged into queued job {queued['id']}" in answer["hint"]
            # The job covers every request: the union of their roots, once each.
            assert third["job"]["roots"] == ["notes", "more"]
            assert third["job"]["requests"] == 3 and third["job"]["force"] is False
            assert status["queue"]["jobs"] == 1
            assert [j["id"] for j in jobs.values() if j["kind"] == "reindex"] == [
                running["id"],
                queued["id"],
            ]

            async def done() -> bool:
                job = _jobs(await call(client, "index_status"))[queued["id"]]
                return bool(job["state"] == "done")

            await eventually(done, timeout=120)
            final = await call(client, "index_status")
            assert final["queue"]["jobs"] == 0
            reindexes = [j for j in final["service"]["jobs"] if j["kind"] == "reindex"]
            assert [j["id"] for j in reindexes] == [running["id"], queued["id"]]
            assert sorted(reindexes[1]["result"]["roots"]) == ["more", "notes"]

            # Once that job has run, a new request queues a new job again.
            later = await call(client, "reindex", {"paths": ["more"]})
            assert later["job"]["id"] not in (running["id"], queued["id"])
            assert later.get("merged_into") is None

    run(main)
