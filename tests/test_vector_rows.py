"""The rows of the in-memory vector index (store/vector_rows.py): each distinct vector held
once, chunks pointing at it, and every search and update equal to one row per chunk."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pytest

from noteseek.store.exact import exact_top
from noteseek.store.vector_rows import VectorRows, from_stored, updated

DIM = 8
Stored = list[tuple[int, str, bytes]]


def unit(rng: np.random.Generator) -> bytes:
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def stored_rows(rng: np.random.Generator, rowids: Sequence[int], pool: list[bytes]) -> Stored:
    """Chunks whose vectors are drawn from ``pool`` (so many are shared)."""
    return [(rowid, key(b), b) for rowid in rowids for b in [pool[int(rng.integers(len(pool)))]]]


def key(blob: bytes) -> str:
    """The embedding key: a hex digest naming the vector, as the real one names a text."""
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def per_chunk(stored: Stored) -> dict[int, np.ndarray]:
    return {r: np.frombuffer(b, dtype=np.float32) for r, _, b in stored}


def check_equal(state: VectorRows, stored: Stored) -> None:
    """The state holds exactly these chunks with these vectors, each vector once."""
    assert sorted(state.ids.tolist()) == sorted(r for r, _, _ in stored)
    held = state.vectors_for([r for r, _, _ in stored])
    for rowid, vector in per_chunk(stored).items():
        assert np.array_equal(held[rowid], vector)
    assert state.distinct == len({b for _, _, b in stored})
    assert len(set(state.vkeys.tolist())) == state.distinct


def brute(stored: Stored, q: np.ndarray, k: int, allowed: set[int] | None = None) -> list:
    scored = [
        (round(float(v @ q), 5), r)
        for r, v in per_chunk(stored).items()
        if allowed is None or r in allowed
    ]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return scored[:k]


def search(state: VectorRows, q: np.ndarray, k: int, allowed: set[int] | None = None) -> list:
    mask = None if allowed is None else np.isin(state.ids, sorted(allowed))
    through = None if mask is None else state.distinct_mask(mask)
    rows = np.arange(state.distinct) if through is None else np.flatnonzero(through)
    top = [(int(rows[i]), s) for i, s in exact_top(state.matrix[rows], q, k)]
    return [(round(s, 5), r) for r, s in state.expand(top, k, mask=mask)]


def test_shared_vectors_are_held_once_and_found_for_every_chunk() -> None:
    rng = np.random.default_rng(1)
    pool = [unit(rng) for _ in range(7)]
    stored = stored_rows(rng, range(1, 61), pool)
    state = from_stored(stored, DIM, np.float32)
    check_equal(state, stored)
    assert state.distinct <= 7 < state.size
    for seed in range(5):
        q = np.frombuffer(unit(np.random.default_rng(100 + seed)), dtype=np.float32)
        for k in (1, 5, 20, 60, 100):
            assert search(state, q, k) == brute(stored, q, k)
        allowed = set(range(1, 61, 3))
        assert search(state, q, 10, allowed) == brute(stored, q, 10, allowed)


@pytest.mark.parametrize("seed", range(6))
def test_updates_equal_a_state_read_afresh(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pool = [unit(rng) for _ in range(12)]
    stored = stored_rows(rng, range(1, 41), pool)
    state = from_stored(stored, DIM, np.float32)
    next_id = 41
    for _ in range(5):
        # Some chunks go, some come (sharing old vectors, new ones, or both), some are
        # rewritten under their rowid with another vector.
        keep = [r for r in stored if rng.random() > 0.3]
        pool += [unit(rng) for _ in range(int(rng.integers(0, 3)))]
        fresh = stored_rows(rng, range(next_id, next_id + int(rng.integers(0, 15))), pool)
        next_id += 15
        rewritten = [(r, key(pool[-1]), pool[-1]) for r, _, _ in keep[:2]]
        stored = rewritten + keep[2:] + fresh
        by_id = {r: (r, k, b) for r, k, b in stored}
        current = sorted((r, k) for r, k, _ in stored)
        update = updated(
            state, current, lambda ids, by_id=by_id: [by_id[i] for i in ids], DIM, np.float32
        )
        before = set(state.vkeys.tolist())
        state = update.state
        check_equal(state, stored)
        after = set(state.vkeys.tolist())
        assert set(update.gone.tolist()) == before - after
        assert set(update.added.tolist()) == after - before
        assert update.added_matrix.shape == (update.added.size, DIM)
        q = np.frombuffer(unit(rng), dtype=np.float32)
        assert search(state, q, 10) == brute(stored, q, 10)


def test_an_update_with_nothing_new_keeps_the_state() -> None:
    rng = np.random.default_rng(3)
    stored = stored_rows(rng, range(1, 11), [unit(rng) for _ in range(4)])
    state = from_stored(stored, DIM, np.float32)
    same = updated(state, [(r, k) for r, k, _ in stored], lambda ids: [], DIM, np.float32)
    assert same.state is state and same.changed == 0
