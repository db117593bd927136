"""Recency: tiers multiply the fused score; untrustworthy dates switch it off in auto mode."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from noteseek.engine import SearchRequest
from noteseek.search.recency import DAY, dates_trustworthy, factor
from tests.helpers import engine_for, project, write

TIERS = [(7.0, 1.2), (30.0, 1.1)]


@pytest.mark.parametrize(
    ("age_days", "expected"), [(0, 1.2), (6.9, 1.2), (7.5, 1.1), (29, 1.1), (31, 1.0), (-3, 1.2)]
)
def test_factor_by_age(age_days: float, expected: float) -> None:
    now = 1_800_000_000.0
    assert factor(now - age_days * DAY, now, TIERS) == expected


def test_dates_from_a_bulk_copy_are_not_trusted() -> None:
    now = 1_800_000_000.0
    copied = [now + i for i in range(100)]  # all within two minutes
    written = [now - i * 3 * DAY for i in range(100)]
    assert not dates_trustworthy(copied)
    assert dates_trustworthy(written)
    assert dates_trustworthy(copied[:90] + written[:10]) is False
    assert dates_trustworthy(copied[:50] + written[:50]) is True


def notes(tmp_path: Path, spread: bool) -> Path:
    folder = tmp_path / "notes"
    now = time.time()
    for i in range(12):
        # Two notes per word level, so equal keyword scores; one recent, one old.
        path = write(folder / f"n{i:02d}.md", f"# Note {i}\n\nquokka habitat survey {i}\n")
        when = now - (i * 40 * DAY if spread else 100 * DAY)
        os.utime(path, (when, when))
    recent = write(folder / "fresh.md", "# Fresh\n\nquokka habitat survey\n")
    os.utime(recent, (now - DAY, now - DAY))
    return project(tmp_path, {"notes": folder})


def test_auto_boosts_recent_notes_when_dates_spread(tmp_path: Path) -> None:
    folder = notes(tmp_path, spread=True)
    with engine_for(folder, **{"search.recency": "auto"}) as engine:
        engine.index()
        res = engine.search(
            SearchRequest("quokka habitat survey", top_k=13, mode="keyword", explain=True)
        )
    by_path = {h.path: h for h in res.hits}
    assert by_path["fresh.md"].explain["fusion"]["recency_factor"] == 1.2
    assert "recency_factor" not in by_path["n11.md"].explain["fusion"]  # 440 days old
    assert res.hits[0].path in {"fresh.md", "n00.md"}  # both changed within 7 days
    assert all(0 <= h.score <= 1 for h in res.hits)
    with engine_for(folder, **{"search.recency": "off"}) as engine:
        off = engine.search(
            SearchRequest("quokka habitat survey", top_k=13, mode="keyword", explain=True)
        )
    assert all("recency_factor" not in h.explain["fusion"] for h in off.hits)


def test_auto_is_off_when_dates_look_copied_and_on_forces_it(tmp_path: Path) -> None:
    folder = notes(tmp_path, spread=False)  # 12 of 13 notes share one time
    with engine_for(folder, **{"search.recency": "auto"}) as engine:
        engine.index()
        auto = engine.search(SearchRequest("quokka", top_k=13, mode="keyword", explain=True))
    assert all("recency_factor" not in h.explain["fusion"] for h in auto.hits)
    with engine_for(folder, **{"search.recency": "on"}) as engine:
        forced = engine.search(SearchRequest("quokka", top_k=13, mode="keyword", explain=True))
    boosted = [h.path for h in forced.hits if "recency_factor" in h.explain["fusion"]]
    assert boosted == ["fresh.md"]
    assert forced.hits[0].path == "fresh.md"


def test_after_a_change_the_dates_verdict_is_read_again_in_the_background(
    tmp_path: Path,
) -> None:
    """A server taking writes does not re-read every document's date on each search: after a
    change the last verdict answers while a new one is read apart, and the next searches
    follow it (here: the notes' dates made to look copied, so the boost turns off)."""
    folder = notes(tmp_path, spread=True)
    with engine_for(folder, **{"search.recency": "auto"}) as engine:
        engine.index()
        values = engine._state.values
        assert values.dates_trusted()
        now = time.time() - 100 * DAY
        for path in (tmp_path / "notes").glob("*.md"):
            write(path, path.read_text(encoding="utf-8") + "\nCopied.\n")
            os.utime(path, (now, now))
        engine.index()
        values._dates_trusted.throttle = 0.0
        values.dates_trusted()  # the last verdict, while the new one is read
        values._dates_trusted.join(30)
        assert not values.dates_trusted()
        res = engine.search(SearchRequest("quokka", top_k=13, mode="keyword", explain=True))
    assert all("recency_factor" not in h.explain["fusion"] for h in res.hits)
