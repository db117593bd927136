"""How deep and how wide a request's JSON may be, how long an error may be, and how large a
request head, through every door (issue 33: N5, N10, N12a).

One real ``noteseek serve`` (a subprocess on a free loopback port) for the HTTP tests, the real
``noteseek mcp`` over stdio for the MCP door. The routes are read from the server's own OpenAPI
document, so a route added later is covered without touching this file.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from noteseek.interfaces.http.connections import HEAD_LIMIT, LINGER_SECONDS
from noteseek.operations.json_shape import MAX_DEPTH, MAX_KEYS, text_problem, value_problem
from tests.mcp_client import call, error_of, mcp_project, run, session
from tests.test_serve import ServeProcess, serving_example_vault

SHORT = 2048
"""Most bytes an error response's body may take."""
MCP = "/mcp"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serving_example_vault(tmp_path_factory.mktemp("limits")) as running:
        yield running


@pytest.fixture(scope="module")
def json_routes(server: ServeProcess) -> list[str]:
    """Every route that takes a JSON body, from the OpenAPI document, and /mcp."""
    with server.client() as client:
        spec = client.get("/openapi.json").json()
    routes = [
        path
        for path, operations in spec["paths"].items()
        if "requestBody" in operations.get("post", {})
    ]
    assert {"/query_documents", "/memories", "/memories/flush", "/reindex"} <= set(routes)
    return [*routes, MCP]


def short_error(status: int, data: bytes, expected: int = 400) -> str:
    """The message of a short JSON error."""
    assert status == expected, data[:300]
    assert len(data) <= SHORT, f"{len(data):,} bytes: {data[:300]!r}"
    message = json.loads(data)["error"]
    assert isinstance(message, str) and "Traceback" not in message
    return message


def nested(levels: int) -> dict[str, Any]:
    """A query_documents body ``levels`` deep: the object, ``paths`` and lists inside it."""
    value: Any = "notes/*"
    for _ in range(levels - 1):
        value = [value]
    return {"query": "redis", "paths": value}


# -- depth ----------------------------------------------------------------------------------------


def test_deep_json_gets_a_short_400_on_every_json_route(
    server: ServeProcess, json_routes: list[str]
) -> None:
    bodies = {
        "arrays": b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "objects": b'{"a": ' * 5000 + b"1" + b"}" * 5000,
        "never closed": b"[" * 5000,
    }
    url = httpx.URL(server.url)
    conn = http.client.HTTPConnection(url.host, url.port, timeout=30)
    try:
        conn.request("GET", "/health")
        conn.getresponse().read()
        assert conn.sock is not None
        local = conn.sock.getsockname()
        for path in json_routes:
            for name, body in bodies.items():
                conn.request("POST", path, body=body, headers=HEADERS)
                response = conn.getresponse()
                message = short_error(response.status, response.read())
                assert "nested 5,00" in message and f"at most {MAX_DEPTH} levels" in message, (
                    path,
                    name,
                    message,
                )
                # The server answers the next request on the same connection.
                conn.request("GET", "/health")
                assert conn.getresponse().read() == b'{"status":"ok"}'
                assert conn.sock.getsockname() == local, f"{path} closed the connection"
    finally:
        conn.close()


def test_the_depth_limit_is_64_levels(server: ServeProcess) -> None:
    assert MAX_DEPTH == 64
    with server.client() as client:
        # At the limit the body reaches validation, which judges the value itself.
        at = client.post("/query_documents", json=nested(MAX_DEPTH))
        message = short_error(at.status_code, at.content)
        assert "paths" in message and "nested" not in message
        over = client.post("/query_documents", json=nested(MAX_DEPTH + 1))
        assert "nested 65 levels deep" in short_error(over.status_code, over.content)
        # A real request, a list two levels down, is untouched.
        fine = client.post("/query_documents", json=nested(2))
        assert fine.status_code == 200 and fine.json()["results"]


# -- keys -----------------------------------------------------------------------------------------


def test_sixty_thousand_unknown_keys_get_a_short_400_on_every_json_route(
    server: ServeProcess, json_routes: list[str]
) -> None:
    body = json.dumps({"query": "redis", **{f"k{i}": 1 for i in range(60_000)}}).encode()
    assert 700_000 < len(body) < 1_048_576  # under serve.max_body_bytes: the keys are refused
    with server.client() as client:
        for path in json_routes:
            response = client.post(path, content=body, headers=HEADERS)
            message = short_error(response.status_code, response.content)
            assert "60,001 keys" in message and f"at most {MAX_KEYS:,}" in message, path
        assert client.get("/health").json() == {"status": "ok"}


def test_the_key_limit_counts_every_object_and_the_message_names_a_few(
    server: ServeProcess,
) -> None:
    assert MAX_KEYS == 10_000
    with server.client() as client:
        # 10,000 keys in all (query and 9,999 unknown ones): the parameters are judged, and
        # the message names five and counts the rest.
        at = {"query": "redis", **{f"k{i}": 1 for i in range(MAX_KEYS - 1)}}
        message = short_error(*_post(client, "/query_documents", at))
        assert "unknown parameters 'k0', 'k1', 'k2', 'k3', 'k4' and 9,994 more" in message
        assert "valid parameters: " in message and "excluded_files" in message
        # Keys inside nested objects count as well.
        spread = {"query": "redis", "where": [{f"k{i}": 1} for i in range(MAX_KEYS - 1)]}
        message = short_error(*_post(client, "/query_documents", spread))
        assert "10,001 keys" in message
        # Long unknown names are quoted cut.
        message = short_error(*_post(client, "/query_documents", {"query": "x", "y" * 99: 1}))
        assert "'" + "y" * 37 + "...'" in message


def _post(client: httpx.Client, path: str, body: object) -> tuple[int, bytes]:
    response = client.post(path, json=body)
    return response.status_code, response.content


# -- any message ----------------------------------------------------------------------------------


def test_every_error_message_stays_short(server: ServeProcess) -> None:
    with server.client() as client:
        # 300,000 wrong items: five are described and the rest counted.
        ints = {"query": "x", "paths": [1] * 300_000}
        message = short_error(*_post(client, "/query_documents", ints))
        assert "paths.0: input should be a valid string" in message
        assert "and 299,995 more problems" in message
        # An engine message quoting a 200 KB value keeps its start and its end.
        root = {"query": "x", "root": "r" * 200_000}
        message = short_error(*_post(client, "/query_documents", root))
        assert message.startswith("unknown root 'rrr")
        assert "characters left out" in message and "notes" in message.rsplit("...]", 1)[1]
        # Escapes count: 50,000 control characters are no longer either.
        control = {"query": "x", "root": "\x01" * 50_000}
        short_error(*_post(client, "/query_documents", control))
        # A memory name that is too long, on another route.
        name = {"name": "n" * 100_000, "content": "x"}
        message = short_error(*_post(client, "/memories", name))
        assert "name" in message


# -- the request head -----------------------------------------------------------------------------

HEAD_START = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "
HEAD_END = b"\r\n\r\n"


def head_of(size: int) -> bytes:
    """A request head of exactly ``size`` bytes, its blank line included."""
    return HEAD_START + b"a" * (size - len(HEAD_START) - len(HEAD_END)) + HEAD_END


def exchange(server: ServeProcess, data: bytes, pieces: int = 1) -> tuple[socket.socket, bytes]:
    """Send ``data`` (in ``pieces``, a few milliseconds apart), then read until the server
    stops sending. Any reset or broken pipe fails: the close must be clean."""
    sock = socket.create_connection(("127.0.0.1", httpx.URL(server.url).port), timeout=10)
    step = -(-len(data) // pieces)
    for start in range(0, len(data), step):
        sock.sendall(data[start : start + step])
        if pieces > 1:
            time.sleep(0.005)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return sock, received


def status_and_body(raw: bytes) -> tuple[int, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


@pytest.mark.parametrize("pieces", [1, 70], ids=["one piece", "70 pieces"])
def test_a_head_over_16_kib_gets_431_however_it_arrives(server: ServeProcess, pieces: int) -> None:
    sock, raw = exchange(server, head_of(70_000), pieces)
    sock.close()
    message = short_error(*status_and_body(raw), expected=431)
    assert f"over {HEAD_LIMIT} bytes" in message
    assert b"connection: close" in raw.lower()
    with server.client() as client:
        assert client.get("/health").json() == {"status": "ok"}


def test_the_head_limit_is_exact_in_one_piece(server: ServeProcess) -> None:
    assert HEAD_LIMIT == 16 * 1024
    for size, expected in ((HEAD_LIMIT, 200), (HEAD_LIMIT + 1, 431)):
        sock = socket.create_connection(("127.0.0.1", httpx.URL(server.url).port), timeout=10)
        with sock:
            sock.sendall(head_of(size))
            raw = sock.recv(65536)
        assert status_and_body(raw)[0] == expected, (size, raw[:200])


def test_a_refused_head_closes_after_lingering(server: ServeProcess) -> None:
    """The server reads and drops what follows a refused head for a while, then closes even
    if the client never does."""
    sock, raw = exchange(server, head_of(70_000))
    with sock:
        assert status_and_body(raw)[0] == 431
        sock.sendall(b"x" * 10_000)  # dropped: no reset while the server lingers
        time.sleep(LINGER_SECONDS + 1)
        with pytest.raises(OSError):  # closed by now: the peer resets what comes next
            for _ in range(50):
                sock.sendall(b"x" * 1000)
                time.sleep(0.02)


# -- MCP over stdio -------------------------------------------------------------------------------


def test_the_mcp_door_refuses_deep_and_wide_arguments_briefly(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:
            # 100 levels: under the SDK's own parser limit (200), so the arguments reach us.
            deep = nested(100)
            message = await error_of(client, "query_documents", deep)
            assert f"nested more than {MAX_DEPTH} levels deep" in message
            wide = {"query": "x", **{f"k{i}": 1 for i in range(600)}}
            message = await error_of(client, "query_documents", wide)
            assert len(message.encode()) <= SHORT
            assert "'k0', 'k1', 'k2', 'k3', 'k4' and 595 more for query_documents" in message
            wider = {"query": "x", **{f"k{i}": 1 for i in range(20_000)}}
            message = await error_of(client, "query_documents", wider)
            assert f"more than {MAX_KEYS:,} keys" in message and len(message) <= SHORT
            # The server is still there.
            assert (await call(client, "index_status"))["status"] in ("ready", "indexing")

    run(main)


# -- the checks themselves ------------------------------------------------------------------------


def _reference(value: Any, depth: int = 1) -> tuple[int, int]:
    """Depth and key count by plain recursion (fine for the small values below)."""
    if isinstance(value, dict | list):
        children = list(value.values()) if isinstance(value, dict) else value
        found = [_reference(child, depth + 1) for child in children]
        keys = len(value) if isinstance(value, dict) else 0
        return max([depth, *(d for d, _ in found)]), keys + sum(k for _, k in found)
    return 0, 0


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    # Strings full of what a byte scan could mistake for structure.
    pieces = ["[", "]", "{", "}", ":", '"', "\\", '\\"', "\\\\", "é", "\x00", "\u2028", "a"]
    roll = rnd.random()
    if depth == 0 and roll < 0.3:  # around the limit: 55 to 75 levels of lists and objects
        value = _random_value(rnd, 1)
        for level in range(rnd.randint(55, 75)):
            value = [value] if level % 3 else {"k": value, "[": "]"}
        return value
    if depth > 8 or roll < 0.25:
        return "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 5)))
    if roll < 0.35:
        return rnd.choice([0, -1.5e3, True, None])
    if roll < 0.75:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {
        "".join(rnd.choice(pieces) for _ in range(3)) + str(i): _random_value(rnd, depth + 1)
        for i in range(rnd.randint(0, 3))
    }


def test_the_byte_scan_agrees_with_a_parser_on_tricky_text() -> None:
    rnd = random.Random(33)
    for _ in range(3000):
        value = _random_value(rnd)
        depth, keys = _reference(value)
        expected = depth > MAX_DEPTH or keys > MAX_KEYS
        for encoding, ascii_only in (("utf-8", True), ("utf-8", False), ("utf-16", False)):
            body = json.dumps(value, ensure_ascii=ascii_only).encode(encoding)
            found = text_problem(body)
            assert (found is not None) == expected, (value, found)
            if depth > MAX_DEPTH and keys <= MAX_KEYS:
                assert found is not None and f"nested {depth} levels deep" in found
        assert (value_problem(value) is not None) == expected
