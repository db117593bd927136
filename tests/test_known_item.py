"""The Dendron known-item set builder (bench/dendron_known_item.py) on small vaults."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from tests.conftest import shared
from tests.helpers import bench_script, write


def builder() -> ModuleType:
    return bench_script("dendron_known_item")


def note(desc: str, body: str, extra: str = "") -> str:
    return f"---\nid: x\ntitle: T\n{desc}\n{extra}updated: 1\n---\n\n{body}\n"


def test_queries_are_unique_descriptions_removed_from_the_indexed_copy(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(
        vault / "a.md",
        note("desc: How to publish a site", "Body A.", "excerpt: 'How to publish a site'\n"),
    )
    write(vault / "b.c.md", note("desc: >-\n  Long description\n  over two lines", "Body B."))
    write(vault / "empty.md", note("desc: ''", "Body E."))
    write(vault / "dup1.md", note("desc: Same words", "Body D1."))
    write(vault / "dup2.md", note("desc: same words", "Body D2."))
    write(vault / ".hidden" / "h.md", note("desc: Hidden note", "Body H."))
    out = tmp_path / "set"
    notes, queries = builder().build(vault, out)
    assert (notes, queries) == (5, 2)
    got = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    qrels = (out / "qrels" / "test.tsv").read_text().splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore"
    pairs = {q["text"]: row.split("\t")[1] for q, row in zip(got, qrels[1:], strict=True)}
    assert pairs == {
        "How to publish a site": "a.md",
        "Long description over two lines": "b.c.md",
    }
    a = (out / "vault" / "a.md").read_text()
    assert "publish" not in a  # desc and the excerpt that repeated it are gone
    assert a.startswith("---\nid: x\ntitle: T\nupdated: 1\n---\n") and "Body A." in a
    b = (out / "vault" / "b.c.md").read_text()
    assert "description" not in b and "two lines" not in b and "updated: 1" in b
    # Notes without a usable query are indexed unchanged.
    assert (out / "vault" / "dup1.md").read_text() == (vault / "dup1.md").read_text()
    assert (out / "vault" / "empty.md").read_text() == (vault / "empty.md").read_text()


def test_the_real_dendron_vault(tmp_path: Path) -> None:
    vault = shared("vaults/dendron-site/vault")
    notes, queries = builder().build(vault, tmp_path / "set")
    assert notes > 1000
    assert 200 <= queries <= 260
    leaked = 0
    for line in (tmp_path / "set" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        rel = line.split("\t")[1]
        head = (tmp_path / "set" / "vault" / rel).read_text().split("\n---\n")[0]
        leaked += "desc:" in head
    assert leaked == 0
