"""The docs say what the code does: the README's tool and route tables match the operations
table, so a new operation that is not documented (or a documented one that is gone) fails."""

from __future__ import annotations

import re
from pathlib import Path

from noteseek.operations import http_operations, mcp_operations

README = Path(__file__).resolve().parent.parent / "README.md"


def _rows(header: str) -> list[str]:
    """The first cells of the Markdown table under the row ``header``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def test_the_readme_lists_every_mcp_tool_and_no_other() -> None:
    documented = {re.match(r"`(\w+)\(", cell).group(1) for cell in _rows("| Tool | What it does |")}  # type: ignore[union-attr]
    assert documented == set(mcp_operations())


def test_the_readme_lists_every_http_route_and_no_other() -> None:
    documented = set()
    for cell in _rows("| Route | What it does |"):
        m = re.match(r"`(?:(GET|POST) )?(/[^`?]*)", cell)
        assert m, cell
        documented.add((m.group(1), m.group(2)))
    generated = {
        (op.http.method, op.http.path.replace(":path}", "}"))
        for op in http_operations().values()
        if op.http is not None
    }
    extra = {("POST", "/query_documents_stream"), ("GET", "/health"), (None, "/mcp")}
    assert documented == generated | extra


ARCHITECTURE = README.parent / "docs" / "architecture.md"
PACKAGE = README.parent / "src" / "noteseek"


def _documented_modules() -> set[str]:
    """The .py files of the module tree in docs/architecture.md, as paths under the package."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text[text.index("```\nsrc/noteseek/") + 4 :]
    block = block[: block.index("```")]
    found: set[str] = set()
    folders: list[str] = []
    for line in block.splitlines()[1:]:
        m = re.match(r"^( +)([\w.]+/|[\w.]+\.py)(?:\s|$)", line)
        if not m or len(m.group(1)) > 16:
            continue  # a description running on to the next line
        depth = len(m.group(1)) // 2 - 1
        del folders[depth:]
        name = m.group(2)
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        else:
            found.add("/".join([*folders, name]))
    return found


def test_the_architecture_tree_is_the_package() -> None:
    # A package's __init__.py that is only a docstring holds nothing to document.
    actual = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" or len(p.read_text(encoding="utf-8").splitlines()) > 2
    }
    documented = _documented_modules()
    assert not actual - documented, (
        f"modules missing from docs/architecture.md: {actual - documented}"
    )
    assert not documented - actual, f"documented modules that do not exist: {documented - actual}"
