"""bench/milvus_scale.py on a tiny vault: its stand-in embedder, query sampler and one run per
backend (the numbers it prints at scale are in docs/benchmarks.md, never asserted here)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.helpers import bench_script, write


def bench() -> ModuleType:
    return bench_script("milvus_scale")


def page(title: str, synopsis: str, body: str) -> str:
    return (
        f"---\ndescription: Use this topic to help manage Windows.\ntitle: {title}\n---\n\n"
        f"# {title}\n\n## SYNOPSIS\n{synopsis}\n\n## DESCRIPTION\n{body}\n"
    )


def test_the_stand_in_embedder_is_deterministic_unit_length_and_keeps_neighbours() -> None:
    embedder = bench().HashedEmbedder()
    texts = [
        "Gets the zone transfer policies on a DNS server",
        "Removes a zone transfer policy from a DNS server",
        "Creates a virtual hard disk for a virtual machine",
    ]
    rows = embedder.embed_documents(texts)
    assert rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(rows, bench().HashedEmbedder().embed_documents(texts))
    query = embedder.embed_query("DNS zone transfer policy")
    assert float(rows[0] @ query) > float(rows[2] @ query)
    assert float(rows[1] @ query) > float(rows[2] @ query)


def test_queries_are_titles_synopses_and_real_descriptions_never_boilerplate() -> None:
    text = page("Get-Thing", "Gets a thing from a place.", "Body.")
    assert sorted(bench().page_queries(text)) == ["Get-Thing", "Gets a thing from a place."]
    own = "---\ntitle: About\ndescription: What the module does\n---\nText.\n"
    assert sorted(bench().page_queries(own)) == ["About", "What the module does"]


def test_take_is_the_shortest_prefix_reaching_the_size() -> None:
    pages = [Path("a.md"), Path("b.md"), Path("c.md")]
    counts = {"a.md": 5, "b.md": 7, "c.md": 3}
    assert bench().take(pages, counts, 6) == pages[:2]
    assert bench().take(pages, counts, 100) == pages


@pytest.mark.parametrize("backend", ["sqlite", "milvus"])
def test_one_run_indexes_times_every_mode_and_measures_milvus_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    corpus = tmp_path / "corpus"
    write(corpus / "dns.md", page("Get-DnsZone", "Gets DNS zones.", "Lists zones on a server."))
    write(corpus / "vm.md", page("New-VHD", "Creates a virtual hard disk.", "A disk for a VM."))
    spec = {
        "backend": backend,
        "corpus": str(corpus),
        "place": str(tmp_path / backend),
        "queries": ["DNS zones"] * 5 + ["Get-DnsZone", "virtual hard disk"],
        "budget": 0,
    }
    assert bench().child(spec) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["files"] == 2 and out["chunks"] >= 2
    assert out["vectors"] == out["chunks"]
    assert out["index_s"] > 0 and out["standin_s"] > 0
    for mode in ("keyword", "semantic", "hybrid"):
        assert out["queries"][mode]["n"] == 2
        assert out["queries"][mode]["empty"] == 0
    if backend == "milvus":
        parts = out["per_chunk"]["bytes"]
        assert out["per_chunk"]["sampled"] == out["chunks"]
        assert parts["dense vector (384 x float32 + key)"] > 384 * 4
        assert parts["chunk scalar fields (all)"] > parts["  of which chunk text"] > 0
        assert parts["sparse keyword vector"] > 0
        assert (tmp_path / backend / "milvus.db").exists()
    else:
        assert "per_chunk" not in out
