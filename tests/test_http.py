"""The HTTP API of `noteseek serve`, route by route, over real HTTP to a real server.

One server (a subprocess on a free loopback port, embeddings off) serves a copy of the example
vault for the whole module; tests that change files or settings start their own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import write
from tests.test_serve import (
    ServeProcess,
    serve_env,
    serving,
    serving_example_vault,
    vault_project,
)

JSON_ERROR_CODES = {400, 401, 403, 404, 405, 409, 413, 415, 421, 422, 503}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serving_example_vault(tmp_path_factory.mktemp("http")) as running:
        yield running


@pytest.fixture
def client(server: ServeProcess) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def error_of(response: httpx.Response, status: int) -> str:
    """The JSON message of an error response (never a traceback)."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert "Traceback" not in body["error"]
    return str(body["error"])


# -- search ---------------------------------------------------------------------------------------


def test_health(client: httpx.Client) -> None:
    assert client.get("/health").json() == {"status": "ok"}


def test_query_documents_results_and_filters(client: httpx.Client) -> None:
    # The MCP tool's payload (tests/test_mcp.py checks its fields), with the same defaults.
    out = client.post("/query_documents", json={"query": "redis ttl expiry"}).json()
    assert (out["status"], out["mode"], out["query"]) == ("ready", "hybrid", "redis ttl expiry")
    assert 1 <= len(out["results"]) <= 10  # search.top_k
    first = out["results"][0]
    assert (first["doc_id"], first["lanes"], first["truncated"]) == (
        "notes/notes/redis.md",
        {"keyword": 1},
        False,
    )
    assert "Expiry and TTL" in first["heading_path"] and "EXPIRE" in first["content"]
    assert "explain" not in first  # only when asked for
    assert out["warnings"] == []
    # The MCP tool's aliases work the same.
    for alias in ("k", "limit", "top_k", "top_n"):
        got = client.post("/query_documents", json={"query": "redis", alias: 2}).json()
        assert len(got["results"]) == 2
    tagged = client.post(
        "/query_documents", json={"query": "cache", "tags": ["caching"], "top_n": 20}
    ).json()
    assert tagged["results"]
    assert all(r["path"] != "notes/kafka.md" for r in tagged["results"])
    only = client.post(
        "/query_documents", json={"query": "redis", "paths": ["notes/*"], "top_n": 20}
    ).json()
    assert only["results"]
    assert all(r["path"].startswith("notes/") for r in only["results"])
    without = client.post(
        "/query_documents",
        json={"query": "redis ttl", "excluded_files": ["notes/redis.md"], "top_n": 20},
    ).json()
    assert "notes/redis.md" not in {r["path"] for r in without["results"]}
    keyword = client.post("/query_documents", json={"query": "redis", "mode": "keyword"}).json()
    assert keyword["mode"] == "keyword"
    assert keyword["warnings"] == []


def test_explain_gives_each_lanes_contribution(client: httpx.Client) -> None:
    out = client.post(
        "/query_documents", json={"query": "redis ttl", "explain": True, "top_n": 3}
    ).json()
    for result in out["results"]:
        info = result["explain"]
        assert info["keyword"]["rank"] == result["lanes"]["keyword"]
        assert info["keyword"]["matched_terms"]
        fusion = info["fusion"]
        assert set(fusion["contributions"]) == {"keyword"}
        assert fusion["score"] == pytest.approx(result["score"], abs=1e-3)


def test_query_bad_inputs_get_precise_4xx(client: httpx.Client) -> None:
    missing = error_of(client.post("/query_documents", json={"top_n": 3}), 400)
    assert "query is required" in missing
    too_many = error_of(client.post("/query_documents", json={"query": "x", "top_n": 5000}), 400)
    assert "top_n" in too_many and "1000" in too_many and "5000" in too_many
    unknown = error_of(client.post("/query_documents", json={"query": "x", "colour": 1}), 400)
    assert "unknown parameter 'colour'" in unknown
    assert "explain" in unknown  # the valid names are listed, the HTTP extra included
    both = error_of(client.post("/query_documents", json={"query": "x", "k": 2, "top_n": 3}), 400)
    assert "both set top_k" in both
    mode = error_of(client.post("/query_documents", json={"query": "x", "mode": "fuzzy"}), 400)
    assert "mode" in mode and "fuzzy" in mode
    empty = error_of(client.post("/query_documents", json={"query": ""}), 400)
    assert "query" in empty
    not_json = client.post(
        "/query_documents", content=b"{query", headers={"content-type": "application/json"}
    )
    assert "not valid JSON" in error_of(not_json, 400)
    listed = client.post("/query_documents", json=["redis"])
    assert "JSON object" in error_of(listed, 400)
    # A form post (what a cross-site page can send without asking) is refused before parsing.
    plain = client.post(
        "/query_documents", content=b'{"query": "redis"}', headers={"content-type": "text/plain"}
    )
    assert "Content-Type: application/json" in error_of(plain, 415)
    # Values only the engine can judge: 400 with its message.
    after = error_of(client.post("/query_documents", json={"query": "x", "after": "soon"}), 400)
    assert "soon" in after
    root = error_of(client.post("/query_documents", json={"query": "x", "root": "nope"}), 400)
    assert "unknown root 'nope'" in root and "notes" in root
    where = error_of(
        client.post("/query_documents", json={"query": "x", "where": ["novalue"]}), 400
    )
    assert "novalue" in where


def test_a_body_over_the_limit_gets_413(client: httpx.Client) -> None:
    big = json.dumps({"query": "x" * (1_100_000)})
    response = client.post(
        "/query_documents", content=big, headers={"content-type": "application/json"}
    )
    assert "serve.max_body_bytes" in error_of(response, 413)

    # Without a Content-Length (chunked), the limit holds as the body arrives.
    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"x" * 100_000

    chunked = client.post(
        "/query_documents", content=chunks(), headers={"content-type": "application/json"}
    )
    error_of(chunked, 413)
    # Just under the limit is parsed (and refused for what it says, not its size).
    under = json.dumps({"query": "x" * 5000})
    assert (
        client.post(
            "/query_documents", content=under, headers={"content-type": "application/json"}
        ).status_code
        == 400
    )


def test_the_stream_sends_each_result_then_done(client: httpx.Client) -> None:
    body = {"query": "redis ttl expiry", "top_n": 4, "mode": "keyword"}
    plain = client.post("/query_documents", json=body).json()
    events: list[tuple[str, dict]] = []
    with client.stream("POST", "/query_documents_stream", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                assert name is not None
                events.append((name, json.loads(line.removeprefix("data: "))))
                name = None
    names = [n for n, _ in events]
    assert names == ["result"] * len(plain["results"]) + ["done"]
    results = [data for n, data in events if n == "result"]
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert [r["chunk_id"] for r in results] == [r["chunk_id"] for r in plain["results"]]
    done = events[-1][1]
    assert done["results"] == len(results)
    assert done["status"] == "ready"
    assert done["mode"] == "keyword"
    assert done["took_ms"] >= 0 and done["elapsed_ms"] >= done["took_ms"]
    # Bad input is a JSON error, not a broken stream.
    bad = client.post("/query_documents_stream", json={"query": "x", "top_n": 0})
    assert "top_n" in error_of(bad, 400)


def test_search_with_hypothesis_needs_vectors(client: httpx.Client) -> None:
    # Embeddings are off on this server: the semantic lane says what is missing.
    response = client.post(
        "/search_with_hypothesis", json={"hypothesis": "Keys expire after their TTL runs out."}
    )
    message = error_of(response, 400)
    assert "embedding" in message.lower()
    assert "hypothesis" in error_of(client.post("/search_with_hypothesis", json={}), 400)


# -- reading ---------------------------------------------------------------------------------------


def test_get_chunk(client: httpx.Client) -> None:
    hit = client.post("/query_documents", json={"query": "redis ttl"}).json()["results"][0]
    chunk = client.get(f"/chunks/{hit['chunk_id']}").json()
    assert chunk["kind"] == "chunk"
    assert chunk["chunk_ids"] == [hit["chunk_id"]]
    assert chunk["doc_id"] == hit["doc_id"]
    assert (chunk["start_line"], chunk["end_line"]) == (hit["start_line"], hit["end_line"])
    assert hit["content"] in chunk["text"]
    assert "no chunk with id 0123456789abcdef" in error_of(
        client.get("/chunks/0123456789abcdef"), 404
    )
    assert "chunk_id" in error_of(client.get("/chunks/not-an-id"), 400)


def test_get_document_pages_through_lines(client: httpx.Client) -> None:
    whole = client.get("/documents/notes/redis.md").json()
    assert whole["doc_id"] == "notes/notes/redis.md"
    assert whole["title"] == "Redis"
    assert whole["from_line"] == 1
    assert whole["to_line"] == whole["total_lines"] > 10
    assert whole["more"] is False
    part = client.get("/documents/notes/redis.md", params={"from_line": 3, "max_lines": 4}).json()
    assert (part["from_line"], part["to_line"]) == (3, 6)
    assert part["more"] is True
    assert part["content"].split("\n") == whole["content"].split("\n")[2:6]
    by_id = client.get("/documents/notes/notes/redis.md").json()
    assert by_id["content"] == whole["content"]
    past = error_of(client.get("/documents/notes/redis.md", params={"from_line": 10_000}), 400)
    assert "from_line 10000" in past
    assert "max_lines" in error_of(
        client.get("/documents/notes/redis.md", params={"max_lines": 0}), 400
    )
    assert "from_line" in error_of(
        client.get("/documents/notes/redis.md", params={"from_line": "two"}), 400
    )
    assert "no indexed document" in error_of(client.get("/documents/notes/nothing.md"), 404)
    # Git-ignored drafts are not in the index, so not readable either.
    error_of(client.get("/documents/drafts/secret-draft.md"), 404)


@pytest.mark.parametrize(
    "raw_path",
    [
        "/documents/%2e%2e/%2e%2e/etc/passwd",
        "/documents/notes/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/documents/notes/..%2f..%2f..%2fetc%2fpasswd",
        "/documents/..%5c..%5cetc%5cpasswd",
    ],
)
def test_path_traversal_is_refused(client: httpx.Client, raw_path: str) -> None:
    # Sent as is: httpx would otherwise resolve the dots before they reach the server.
    response = client.send(
        client.build_request("GET", httpx.URL(client.base_url, raw_path=raw_path.encode()))
    )
    message = error_of(response, 400)
    assert "'..' is not allowed" in message
    assert "root:" not in response.text  # nothing of /etc/passwd


def test_absolute_paths_outside_the_roots_are_not_documents(client: httpx.Client) -> None:
    response = client.send(
        client.build_request("GET", httpx.URL(client.base_url, raw_path=b"/documents//etc/passwd"))
    )
    assert "not a document inside the indexed roots" in error_of(response, 404)


# -- server routes ---------------------------------------------------------------------------------


def test_links_sections_neighbourhood_and_compressed_search(client: httpx.Client) -> None:
    # Operations the page and agents share: the same answers over HTTP as over MCP and the CLI.
    links = client.get("/links/notes/redis.md").json()
    assert links["doc_id"] == "notes/notes/redis.md"
    assert links["outgoing"] and links["backlinks"]
    assert {"doc_id", "placeholder", "title", "type", "line", "anchor"} <= set(links["outgoing"][0])
    section = client.get("/sections/notes/redis.md", params={"line": 12}).json()
    assert section["kind"] == "section" and section["start_line"] <= 12 <= section["end_line"]
    assert "EXPIRE" in section["text"]
    graph = client.get("/graph/notes/redis.md", params={"depth": 2}).json()
    assert graph["nodes"][0]["center"] is True and graph["edges"]
    assert "line" in error_of(client.get("/sections/notes/redis.md"), 400)
    assert "unknown parameter 'colour'" in error_of(
        client.get("/links/notes/redis.md", params={"colour": "red"}), 400
    )
    compressed = client.post(
        "/query_documents_compressed", json={"query": "redis cache", "min_score": 0.2}
    ).json()
    info = compressed["compression"]
    assert info["kept"] == len(compressed["results"])
    assert all(r["score"] >= 0.2 for r in compressed["results"])


def test_status(client: httpx.Client) -> None:
    status = client.get("/status").json()
    assert status["status"] == "ready"
    assert status["documents"] == 36
    assert status["chunks"] > status["documents"]
    roots = {r["name"]: r for r in status["roots"]}
    assert roots["notes"]["kind"] == "files" and roots["memory"]["kind"] == "memory"
    assert roots["memory"]["files"] == 0  # the memory folder is created by the first write
    # A file indexed with a warning is not a failed file: the two are counted apart.
    assert (
        (status["failed_files"], status["warned_files"]) == (0, 1) == (0, len(status["failures"]))
    )
    reasons = {f["path"]: f["reason"] for f in status["failures"]}
    assert "no body text" in reasons["notes/kafka.md"]
    assert status["embedding"]["enabled"] is False
    assert status["queue"] == {"paths": 0, "jobs": 0}
    assert status["service"]["role"] == "writer"
    assert status["service"]["watcher"]["running"] is True


def test_reindex_then_status(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    with serving(folder, "--no-watch") as server, server.client() as client:
        server.wait_ready(client)
        write(vault / "notes" / "zebra.md", "# Zebra\n\nStripes of the quagga.\n")
        assert client.post("/query_documents", json={"query": "quagga"}).json()["results"] == []
        accepted = client.post("/reindex", json={"paths": ["notes"], "force": True})
        assert accepted.status_code == 202
        job = accepted.json()["job"]
        assert job["kind"] == "reindex" and job["force"] is True and job["roots"] == ["notes"]
        deadline = time.monotonic() + 20
        while True:
            jobs = {j["id"]: j for j in client.get("/status").json()["service"]["jobs"]}
            if jobs[job["id"]]["state"] == "done":
                break
            assert time.monotonic() < deadline, jobs
            time.sleep(0.05)
        assert jobs[job["id"]]["result"]["added"] == 1
        found = client.post("/query_documents", json={"query": "quagga"}).json()["results"]
        assert [r["path"] for r in found] == ["notes/zebra.md"]
        outside = error_of(client.post("/reindex", json={"paths": ["/etc"]}), 400)
        assert "neither a root" in outside
        assert "'..' is not allowed" in error_of(
            client.post("/reindex", json={"paths": ["notes/../.."]}), 400
        )
        assert "force" in error_of(client.post("/reindex", json={"force": "yes please"}), 400)


def test_unknown_routes_and_methods_are_json(client: httpx.Client) -> None:
    assert "/openapi.json" in error_of(client.get("/api/nothing-here"), 404)
    assert "GET is not allowed" in error_of(client.get("/query_documents"), 405)


def test_dns_rebinding_is_refused(client: httpx.Client) -> None:
    rebound = client.get("/status", headers={"Host": "attacker.example:8765"})
    assert "attacker.example" in error_of(rebound, 421)
    assert client.get("/health", headers={"Host": "10.1.2.3:8765"}).status_code == 200
    port = httpx.URL(str(client.base_url)).port
    # The page itself (same origin) may call the API; another origin may not.
    same = client.get("/status", headers={"Origin": f"http://127.0.0.1:{port}"})
    assert same.status_code == 200
    other = client.get("/status", headers={"Origin": "http://127.0.0.1:9"})
    assert "not allowed" in error_of(other, 403)


def test_openapi_declares_every_route_with_request_and_response_schemas(
    client: httpx.Client,
) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    expected = {
        ("post", "/query_documents"): {"200", "400", "401", "413", "415", "503"},
        ("post", "/query_documents_stream"): {"200", "400", "413", "415", "503"},
        ("post", "/search_with_hypothesis"): {"200", "400", "413", "503"},
        ("get", "/chunks/{chunk_id}"): {"200", "404", "503"},
        ("get", "/documents/{path}"): {"200", "404", "409", "503"},
        ("get", "/sections/{path}"): {"200", "404", "409", "503"},
        ("get", "/links/{path}"): {"200", "404", "409", "503"},
        ("get", "/graph/{path}"): {"200", "404", "409", "503"},
        ("post", "/query_documents_compressed"): {"200", "400", "413", "415", "503"},
        ("get", "/health"): {"200"},
        ("get", "/status"): {"200", "503"},
        ("post", "/reindex"): {"202", "400", "409", "503"},
    }
    for (method, path), codes in expected.items():
        operation = paths[path][method]
        assert codes <= set(operation["responses"]), (path, operation["responses"])
        for code, entry in operation["responses"].items():
            content = entry.get("content") or {}
            assert content, (path, code)
            schema = next(iter(content.values()))["schema"]
            assert schema, (path, code)
            if code.startswith(("4", "5")):
                assert schema == {"$ref": "#/components/schemas/ErrorResponse"}
        if method == "post":
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            assert body["additionalProperties"] is False
    query = paths["/query_documents"]["post"]["requestBody"]["content"]["application/json"]
    assert query["schema"]["required"] == ["query"]
    props = query["schema"]["properties"]
    assert props["top_k"]["maximum"] == 1000 and "explain" in props
    result = spec["components"]["schemas"]["SearchResult"]
    assert {"chunk_id", "path", "score", "lanes", "content"} <= set(result["required"])
    assert "/mcp" not in paths


@pytest.mark.embeddings
def test_semantic_routes_with_embeddings(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    env = serve_env(folder / "home", NOTESEEK_EMBEDDING__ENABLED="true")
    with serving(folder, env=env) as server, server.client() as client:
        deadline = time.monotonic() + 120
        while True:
            status = client.get("/status").json()
            embedding = status.get("embedding") or {}
            if status["status"] == "ready" and embedding.get("total"):
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert embedding["embedded"] == embedding["total"] == status["chunks"]
        hyde = client.post(
            "/search_with_hypothesis",
            json={"hypothesis": "A key is deleted automatically once its time to live runs out."},
        ).json()
        assert hyde["mode"] == "hybrid"  # keyword matches of the hypothesis are fused in
        assert "notes/redis.md" in [r["path"] for r in hyde["results"][:3]]
        assert all(set(r["lanes"]) <= {"semantic", "keyword"} for r in hyde["results"])
        assert any("semantic" in r["lanes"] for r in hyde["results"])
        explained = client.post(
            "/query_documents", json={"query": "redis ttl", "explain": True, "top_n": 3}
        ).json()
        first = explained["results"][0]["explain"]
        assert set(first["fusion"]["contributions"]) == {"keyword", "semantic"}
        assert first["semantic"]["cosine"] > 0
        fusion = first["fusion"]
        total = sum(fusion["contributions"].values()) * fusion.get("community_factor", 1.0)
        assert total == pytest.approx(fusion["fused"], abs=1e-5)
