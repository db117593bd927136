"""The page's routes in the real app (``create_app``): the page, /render and /graph.

One app over a copy of the example vault plus a second root (embeddings off) serves the module,
in process through Starlette's test client; the browser tests (test_web.py) drive the page
itself against ``noteseek serve``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from noteseek.config import ServeSettings
from noteseek.interfaces.http import create_app
from noteseek.interfaces.web.routes import CONTENT_SECURITY_POLICY
from noteseek.operations import Runtime
from tests.conftest import EXAMPLE_VAULT
from tests.helpers import engine_for, project, write

TOKEN = "web-page-token-0123456789"
BASE = "http://127.0.0.1"


def build_app(base: Path, token: str | None = None) -> tuple[FastAPI, Runtime]:
    vault = base / "vault"
    if not vault.exists():
        shutil.copytree(EXAMPLE_VAULT, vault)
        write(base / "other" / "notes" / "redis-copy.md", "# Copy\n\nSee [[Nowhere]].\n")
        write(base / "other" / "shared.md", "# Other shared\n")
        write(vault / "shared.md", "# Vault shared\n")
        (base / "outside.md").write_text("# Secret outside\n\nsecret-outside-text\n")
        (vault / "notes" / "escape.md").symlink_to(base / "outside.md")
        folder = base / "project"
        folder.mkdir()
        project(folder, {"vault": vault, "other": base / "other"})
        with engine_for(folder) as engine:
            engine.index()
    folder = base / "project"

    def load() -> Any:
        with engine_for(folder) as engine:
            return engine.config

    runtime = Runtime(load, watch=False)
    return create_app(runtime, ServeSettings(token=token)), runtime


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web")


@pytest.fixture(scope="module")
def app(base: Path) -> Iterator[FastAPI]:
    app, _live = build_app(base)
    with TestClient(app, base_url=BASE):  # runs the lifespan: the index opens
        yield app


@pytest.fixture
def client(app: FastAPI) -> TestClient:
    return TestClient(app, base_url=BASE)


def error_of(response: Any, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    assert "Traceback" not in body["error"]
    return str(body["error"])


# -- the page ----------------------------------------------------------------------------------


def test_the_page_and_its_files_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert page.headers["x-frame-options"] == "DENY"
    assert '<script src="/static/app.js"' in page.text
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere
    js = client.get("/static/app.js")
    assert js.status_code == 200
    assert js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" in js.text
    assert client.get("/static/style.css").headers["content-type"].startswith("text/css")
    assert "prefers-color-scheme: dark" in client.get("/static/style.css").text
    error_of(client.get("/static/http.py"), 404)
    assert client.get("/static/..%2F__init__.py").status_code == 404


def test_static_files_make_no_requests_elsewhere() -> None:
    static = Path(__file__).resolve().parent.parent / "src/noteseek/interfaces/web/static"
    for file in static.iterdir():
        text = file.read_text(encoding="utf-8")
        for scheme in ("http://", "https://", "//fonts", "//cdn"):
            # The SVG namespace is a name, not a request.
            cleaned = text.replace("http://www.w3.org/2000/svg", "")
            assert scheme not in cleaned, (file.name, scheme)


# -- /render -----------------------------------------------------------------------------------


def test_render_gives_safe_html_headings_links_and_backlinks(client: TestClient) -> None:
    response = client.get("/render/vault/notes/redis.md")
    assert response.status_code == 200, response.text
    doc = response.json()
    assert (doc["doc_id"], doc["root"], doc["path"], doc["title"]) == (
        "vault/notes/redis.md",
        "vault",
        "notes/redis.md",
        "Redis",
    )
    headings = {h["text"]: h for h in doc["headings"]}
    assert headings["Expiry and TTL"]["id"] == "ns-expiry-and-ttl"
    assert headings["Expiry and TTL"]["level"] == 2
    assert f'id="{headings["Expiry and TTL"]["id"]}"' in doc["html"]
    # [[Rate limiting|rate limiter]] resolved through the link graph.
    assert 'href="#/doc/vault/notes/rate-limiting.md"' in doc["html"]
    assert ">rate limiter</a>" in doc["html"]
    # [[Caching strategies#Stampede protection]]
    assert 'href="#/doc/vault/notes/caching-strategies.md?a=stampede-protection"' in doc["html"]
    assert "title: Redis" not in doc["html"]
    outgoing = {(o["doc_id"], o["type"]) for o in doc["outgoing"]}
    assert ("vault/notes/caching-strategies.md", "related") in outgoing
    assert ("vault/notes/postgresql.md", "related") in outgoing
    backlinks = {b["doc_id"] for b in doc["backlinks"]}
    assert "vault/notes/caching-strategies.md" in backlinks
    assert all(b["line"] >= 1 for b in doc["backlinks"])
    # The same document by its root-relative path.
    assert client.get("/render/notes/redis.md").json()["doc_id"] == "vault/notes/redis.md"


def test_a_result_line_range_maps_onto_rendered_blocks(client: TestClient) -> None:
    hit = client.post("/query_documents", json={"query": "redis ttl expiry", "top_n": 1}).json()
    first = hit["results"][0]
    doc = client.get(f"/render/{first['doc_id']}").json()
    lines = [int(n) for n in _attr_values(doc["html"], "data-line")]
    assert any(first["start_line"] <= n <= first["end_line"] for n in lines), (first, lines)


def _attr_values(html: str, name: str) -> list[str]:
    import re

    return re.findall(rf'{name}="([^"]*)"', html)


def test_missing_notes_are_marked_and_listed_as_placeholders(client: TestClient) -> None:
    doc = client.get("/render/vault/projects/atlas.md").json()
    assert 'ns-missing" href="#/search?q=Feature%20flags"' in doc["html"]
    placeholders = [o for o in doc["outgoing"] if o["doc_id"] is None]
    assert {"placeholder": "feature flags", "title": None}.items() <= placeholders[0].items()
    # ![[Caching strategies]] is an embed edge and an in-app link.
    assert any(o["type"] == "embeds" for o in doc["outgoing"])
    assert "ns-embed" in doc["html"]


def test_a_text_file_renders_as_numbered_lines(client: TestClient) -> None:
    doc = client.get("/render/vault/snippets/curl-cheatsheet.txt").json()
    assert 'class="ns-plain"' in doc["html"]
    assert doc["headings"] == []


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("notes/..%2F..%2Foutside.md", 400),
        ("vault/notes/%2e%2e/%2e%2e/outside.md", 400),
        ("nothere.md", 404),
        ("/etc/passwd", 404),
        ("shared.md", 409),
        ("x" * 5000, 400),
        ("%00", 400),
        ("%20", 400),
        ("~nosuchuser-noteseek/x.md", 404),
    ],
)
def test_render_refuses_paths_outside_the_index(client: TestClient, path: str, status: int) -> None:
    message = error_of(client.get(f"/render/{path}"), status)
    if status == 409:
        assert "vault/shared.md" in message and "other/shared.md" in message
    if ".." in path or "%2e" in path:
        assert "'..' is not allowed" in message


def test_a_symbolic_link_out_of_its_root_is_never_read(client: TestClient) -> None:
    response = client.get("/render/vault/notes/escape.md")
    assert response.status_code == 404, response.text
    assert "secret-outside-text" not in response.text
    assert client.get("/graph/vault/notes/escape.md").status_code == 404


# -- /graph ------------------------------------------------------------------------------------


def test_graph_of_a_note_and_its_second_ring(client: TestClient) -> None:
    one = client.get("/graph/vault/notes/redis.md").json()
    ids = [n["id"] for n in one["nodes"]]
    assert ids[0] == "vault/notes/redis.md"
    assert one["nodes"][0]["center"] is True and one["nodes"][0]["depth"] == 0
    assert sum(n["center"] for n in one["nodes"]) == 1
    assert "vault/notes/caching-strategies.md" in ids
    assert {n["depth"] for n in one["nodes"][1:]} == {1}
    assert one["edges"]
    for edge in one["edges"]:
        assert edge["source"] in ids and edge["target"] in ids
    two = client.get("/graph/vault/notes/redis.md", params={"depth": 2}).json()
    two_ids = {n["id"] for n in two["nodes"]}
    assert set(ids) < two_ids
    assert {n["depth"] for n in two["nodes"]} == {0, 1, 2}
    atlas = client.get("/graph/vault/projects/atlas.md").json()
    missing = [n for n in atlas["nodes"] if n["placeholder"]]
    assert {"id": "?feature flags", "path": None, "title": "feature flags"}.items() <= (
        missing[0].items()
    )


@pytest.mark.parametrize("depth", ["0", "3", "x"])
def test_graph_depth_is_one_or_two(client: TestClient, depth: str) -> None:
    assert "depth" in error_of(client.get(f"/graph/notes/redis.md?depth={depth}"), 400)


# -- the token and the schema -----------------------------------------------------------------


def test_data_routes_need_the_token_and_the_page_does_not(base: Path) -> None:
    app, _live = build_app(base, token=TOKEN)
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/").status_code == 200
        assert client.get("/static/app.js").status_code == 200
        for path in ("/render/notes/redis.md", "/graph/notes/redis.md"):
            assert "token" in error_of(client.get(path), 401)
            wrong = client.get(path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            good = client.get(path, headers={"Authorization": f"Bearer {TOKEN}"})
            assert good.status_code == 200, good.text


def test_openapi_describes_the_page_routes(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "/" not in spec["paths"] and "/static/{name}" not in spec["paths"]
    render = spec["paths"]["/render/{path}"]["get"]
    assert render["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RenderOut"
    }
    assert {"400", "404", "409", "503"} <= set(render["responses"])
    graph = spec["paths"]["/graph/{path}"]["get"]
    assert [p["name"] for p in graph["parameters"]] == ["path", "depth"]
    assert set(spec["components"]["schemas"]["GraphOut"]["properties"]) == {
        "nodes",
        "edges",
        "truncated",
    }


class Loopback:
    """The app as schemathesis reaches it: already started (no second lifespan), and every
    request addressed to 127.0.0.1 (the app refuses other Host names)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"host"]
        await self.app({**scope, "headers": [*headers, (b"host", b"127.0.0.1")]}, receive, send)


def test_schemathesis_finds_no_server_error_or_schema_mismatch(app: FastAPI) -> None:
    # Schema-valid paths may still be refused with 400: a schema cannot say that `..` or a
    # blank path never names a document (tests/test_http_schema.py, the same rule for the API).
    config = schemathesis.Config.from_str(
        '[checks.positive_data_acceptance]\nexpected-statuses = ["2xx", "400", "401", "404", '
        '"409", "503"]\n'
    )
    schema = schemathesis.openapi.from_asgi("/openapi.json", Loopback(app), config=config)
    checked: list[str] = []
    options = settings(
        max_examples=50, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )

    for path in ("/render/{path}", "/graph/{path}"):

        @options
        @given(case=schema[path]["GET"].as_strategy())
        def check(case: Any) -> None:
            case.call_and_validate()
            checked.append(case.formatted_path)

        check()
    assert len(checked) >= 40
