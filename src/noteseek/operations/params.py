"""Every operation's parameters, declared once: names, aliases, bounds and defaults.

The CLI, MCP and HTTP validate with these models through :func:`parse_arguments`, so every
door accepts and refuses exactly the same arguments with the same message. A default of
``None`` means "the setting": ``top_k`` is ``search.top_k``, ``mode`` is ``search.mode``, and
the bounds are the settings fields' own (``config/ranges.py``), as the engine checks them.
Agents send what they are used to, so ``top_k`` also answers to ``top_n``, ``k`` and
``limit``; an unknown name is refused with the list of valid ones (a silently ignored
parameter is a silently wrong answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    WithJsonSchema,
)

from noteseek.config.ranges import EXPAND_CHARS, SCORE, SIMILARITY, TOP_K
from noteseek.operations.dates import WHEN_FORMS, When
from noteseek.operations.errors import Invalid
from noteseek.operations.json_shape import shown_names, value_problem
from noteseek.search.ask import Filter, SearchRequest
from noteseek.sources.registry import kinds_in_scope, scopes
from noteseek.sources.spec import DOCS_SCOPE

MAX_QUERY_CHARS = 4_000
MAX_HYPOTHESIS_CHARS = 8_000
MAX_DOCUMENT_LINES = 2_000
MAX_PATH_CHARS = 4_096
MAX_PATH_BYTES = 4_095
"""Longest path the system can look up (PATH_MAX, 4,096 bytes with the closing NUL)."""
MAX_NAME_BYTES = 255
"""Longest file or folder name (NAME_MAX): a longer one names nothing."""
CHUNK_ID_PATTERN = r"^[0-9a-f]{16}$"


def _scope(value: str) -> str:
    """A search scope the registered kinds answer (``docs``, ``memory``, ``commits``, ``all``)."""
    try:
        kinds_in_scope(value)
    except ValueError:
        raise ValueError(f"expected one of {', '.join(scopes())}") from None
    return value


class Params(BaseModel):
    """Strict: unknown names are errors; aliases are accepted (see ``parse_arguments``)."""

    # Validators and schemas are built on first use (one operation per CLI command).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def _typed(what: str) -> Any:
    """``true`` and ``"5"`` are not numbers: JSON's booleans would otherwise pass as 1 and 0,
    and text as the number it spells (a query string's numbers are converted by its door)."""

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"expected {what}, not true or false")
        if isinstance(value, str):
            raise ValueError(f"expected {what}, not text")
        return value

    return BeforeValidator(check)


Int = Annotated[int, _typed("an integer")]


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not a value here: leave the parameter out for its default")
    return value


NotNull = BeforeValidator(_not_null)
"""For a parameter whose default (None) means "the setting" and whose schema names one type:
leaving it out gives the setting, and an explicit null is refused, as the schema says (an
agent that follows the schema never sends one; one that does learns how to ask)."""
Float = Annotated[float, _typed("a number")]

Bool = Annotated[bool, Field(strict=True)]

KEYWORD_ONLY_HELP = (
    "Skip embeddings and keep the index keyword-only: later index runs, serve, mcp and watch "
    "do not embed until --embed."
)
EMBED_HELP = "Embed again: undo an earlier --keyword-only (meaning search on this index)."
EMBED_LATER_HELP = (
    "Index the files now and leave their embedding to a later run or a live writer (this run "
    "only: the index is not made keyword-only)."
)
"""true or false only: not 1, 0 or text that spells one."""


def _lookable(value: str) -> str:
    """A path the system can look up: no NUL, at most PATH_MAX bytes, names of at most NAME_MAX
    (a longer one makes ``stat`` fail with "File name too long", which is no reason for a 500)."""
    if "\x00" in value:
        raise ValueError("a path cannot hold a NUL character")
    size = len(value.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        raise ValueError(
            f"the path is {size:,} bytes long; a path holds at most {MAX_PATH_BYTES:,}"
        )
    for name in value.replace("\\", "/").split("/"):
        size = len(name.encode("utf-8", "surrogateescape"))
        if size > MAX_NAME_BYTES:
            shown = name if len(name) <= 40 else name[:37] + "..."
            raise ValueError(
                f"the name {shown!r} is {size:,} bytes long; a file or folder name holds at "
                f"most {MAX_NAME_BYTES}"
            )
    return value


def _inside_roots(value: str) -> str:
    """A document reference never climbs out of its root, nor carries a NUL or only spaces."""
    if not value.strip() or "\x00" in value:
        raise ValueError("give a document's path, as results give it")
    if ".." in value.replace("\\", "/").split("/"):
        raise ValueError("'..' is not allowed; give a path inside a root")
    return _lookable(value)


PathOnDisk = Annotated[str, AfterValidator(_lookable)]
"""A root name or a file or folder, as ``reindex`` and ``index`` take them."""


DocumentPath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="The document's path as results give it (root-relative), its doc_id "
        "(root/path), an absolute path inside a root, or its name: title, file name or "
        "alias (any case; a name several documents have is an 'ambiguous' error listing them).",
    ),
    AfterValidator(_inside_roots),
]


# Unset means "the setting"; the schema shows the type an agent should send, not an anyOf
# with null (which clients render as "integer or nothing" and some refuse to fill).
TopK = Annotated[
    Int | None,
    NotNull,
    Field(ge=TOP_K.low, le=TOP_K.high),
    WithJsonSchema({"type": "integer", **TOP_K.schema()}),
]
Mode = Annotated[
    Literal["hybrid", "keyword", "semantic"] | None,
    NotNull,
    WithJsonSchema({"type": "string", "enum": ["hybrid", "keyword", "semantic"]}),
]
Score = Annotated[float, _typed("a number"), Field(ge=SCORE.low, le=SCORE.high)]


def top_k_field() -> Any:
    return Field(
        default=None,
        validation_alias=AliasChoices("top_k", "top_n", "k", "limit"),
        description=f"Number of results, {TOP_K.low}-{TOP_K.high}; default search.top_k "
        "(10). Aliases: top_n, k, limit.",
    )


def listed(value: str | list[str] | None) -> list[str]:
    """A parameter that takes one value or a list, as a list."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


class SearchFilters(Params):
    """Narrowing every search accepts; pushed into retrieval, not applied afterwards."""

    paths: list[str] | None = Field(
        default=None, description="Only files matching these glob patterns (root-relative)."
    )
    tags: list[str] | None = Field(default=None, description="Only documents with every tag.")
    root: str | list[str] | None = Field(default=None, description="Only these roots.")
    after: When = Field(default=None, description=f"Modified on or after: {WHEN_FORMS}.")
    before: When = Field(default=None, description="Modified before (same forms).")
    where: list[str] | None = Field(
        default=None, description="Frontmatter conditions, key=value or key!=value."
    )
    excluded_files: list[str] | None = Field(
        default=None,
        description="Files to leave out (paths as results give them, or glob patterns), "
        "for example those already read.",
    )
    source: Annotated[str, AfterValidator(_scope)] = Field(
        default=DOCS_SCOPE,
        description="docs: the notes and docs (default); memory: agent memories; commits: git "
        "history (search_git_history groups it by commit); all: everything.",
        json_schema_extra={"enum": list[JsonValue](scopes())},
    )
    min_score: Score = Field(default=0.0, description="Drop results below this.")
    explain: Bool = Field(
        default=False,
        description="Add each result's explanation: every lane's rank and raw score, and what "
        "fusion and each later stage did to it.",
    )

    def filter(self) -> Filter:
        """The filters as the engine's search takes them."""
        return Filter(
            paths=self.paths or (),
            tags=self.tags or (),
            roots=listed(self.root),
            after=self.after,
            before=self.before,
            where=self.where or (),
            exclude_paths=self.excluded_files or (),
        )

    def request(self, query: str, **options: Any) -> SearchRequest:
        """The engine's request: these filters, the scope, ``min_score``, ``explain``, and
        the model's ``top_k``, ``mode`` and ``expand_chars`` where it has them."""
        for name in ("top_k", "mode", "expand_chars"):
            if name in type(self).model_fields:
                options.setdefault(name, getattr(self, name))
        return SearchRequest(
            query,
            filter=self.filter(),
            source=self.source,
            min_score=self.min_score,
            explain=self.explain,
            **options,
        )


_MODE = Field(
    default=None,
    description="hybrid: keywords and meaning fused; keyword: exact words, identifiers, quoted "
    "phrases; semantic: meaning only. Default search.mode (hybrid).",
)
Expand = Annotated[
    Int | None,
    NotNull,
    Field(ge=EXPAND_CHARS.low, le=EXPAND_CHARS.high),
    WithJsonSchema({"type": "integer", **EXPAND_CHARS.schema()}),
]
_EXPAND = Field(
    default=None,
    description="Grow each result to its whole section, then neighbouring sections, within "
    f"this many characters ({EXPAND_CHARS.low}-{EXPAND_CHARS.high}); use it to read around a "
    "hit without another call. Default: as the searched kind ranks (search.expand_chars, 0, "
    "for documents; memory.expand_chars, 900, for memories).",
)


class QueryDocuments(SearchFilters):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    top_k: TopK = top_k_field()
    mode: Mode = _MODE
    expand_chars: Expand = _EXPAND


class QueryCompressed(SearchFilters):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    top_k: TopK = top_k_field()
    mode: Mode = _MODE
    min_score: Score = Field(default=0.3, description="Drop results below this.")
    similarity_threshold: Float = Field(
        default=0.85,
        ge=SIMILARITY.low,
        le=SIMILARITY.high,
        description="Drop a result whose text overlaps a better one at least this much.",
    )


class Hypothesis(SearchFilters):
    hypothesis: str = Field(
        min_length=1,
        max_length=MAX_HYPOTHESIS_CHARS,
        description="A passage that would answer the question, written as the note would say it.",
    )
    top_k: TopK = top_k_field()
    expand_chars: Expand = _EXPAND


class GetChunk(Params):
    chunk_id: str = Field(
        pattern=CHUNK_ID_PATTERN, description="A result's chunk_id (16 hex digits)."
    )


class GetDocument(Params):
    path: DocumentPath
    from_line: Int = Field(default=1, ge=1, description="First line to return (1-based).")
    max_lines: Int = Field(
        default=400,
        ge=1,
        le=MAX_DOCUMENT_LINES,
        description=f"Lines to return, 1-{MAX_DOCUMENT_LINES}.",
    )


class GetSection(Params):
    path: DocumentPath
    line: Int = Field(ge=1, description="A line of the document (1-based), as in path:line.")


class GetLinks(Params):
    path: DocumentPath


class RenderDocument(Params):
    path: DocumentPath


class GetNeighbourhood(Params):
    path: DocumentPath
    depth: Int = Field(default=1, ge=1, le=2, description="Links away from the document, 1-2.")


class NoParams(Params):
    pass


class Reindex(Params):
    paths: list[PathOnDisk] | None = Field(
        default=None,
        description="Root names, or files/folders inside roots; their roots are brought up "
        "to date. Default: every root.",
    )
    force: Bool = Field(default=False, description="Re-read files even if they look unchanged.")


class IndexRoots(Params):
    roots: list[PathOnDisk] | None = Field(
        default=None, description="Root names or folders (default: every root)."
    )
    force: Bool = Field(default=False, description="Re-read every file, even unchanged ones.")
    keyword_only: Bool = Field(default=False, description=KEYWORD_ONLY_HELP)
    embed: Bool = Field(default=False, description=EMBED_HELP)
    embed_later: Bool = Field(default=False, description=EMBED_LATER_HELP)


class Rebuild(Params):
    keyword_only: Bool = Field(default=False, description=KEYWORD_ONLY_HELP)
    embed: Bool = Field(default=False, description=EMBED_HELP)


class Migrate(Params):
    to: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="Where to copy the index: http(s)://host:19530 (a Milvus Server or "
        "Zilliz Cloud), milvus:PATH or a path ending in .db (a Milvus Lite file), "
        "sqlite:FOLDER or any other path (the embedded SQLite index in that folder).",
    )
    replace: Bool = Field(
        default=False, description="Delete what the target holds first (refused otherwise)."
    )
    collection: str | None = Field(
        default=None,
        max_length=40,
        description="The Milvus target's collection prefix (default: milvus.collection).",
    )


# -- validation --------------------------------------------------------------------------------


def accepted_names(model: type[Params]) -> dict[str, str]:
    """Every name the model accepts (fields and their aliases) -> the field it sets."""
    accepted: dict[str, str] = {}
    for field_name, info in model.model_fields.items():
        accepted[field_name] = field_name
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            for choice in alias.choices:
                if isinstance(choice, str):
                    accepted[choice] = field_name
    return accepted


def parse_arguments(
    operation: str, model: type[Params], arguments: Mapping[str, Any] | None
) -> Any:
    """Validate a call's arguments: aliases accepted, unknown names and bad values refused.

    Raises :class:`~noteseek.operations.errors.Invalid` with one precise line.
    """
    args = dict(arguments or {})
    # Before anything walks the values (pydantic and json.dumps recurse): too deep or too wide.
    too_big = value_problem(args)
    if too_big is not None:
        raise Invalid(f"invalid arguments for {operation}: {too_big}")
    fields = model.model_fields
    accepted = accepted_names(model)
    unknown = [k for k in args if k not in accepted]
    if unknown:
        valid = ", ".join(_describe_field(f, fields[f]) for f in fields) or "none"
        raise Invalid(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} "
            f"{shown_names(unknown)} for {operation}; valid parameters: {valid}"
        )
    for key, value in args.items():
        _check_unicode(operation, key, value)
    seen: dict[str, str] = {}
    for key in args:
        target = accepted[key]
        if target in seen:
            raise Invalid(f"{seen[target]!r} and {key!r} both set {target}; give one")
        seen[target] = key
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        raise Invalid(
            f"invalid arguments for {operation}: " + describe_errors(exc.errors())
        ) from None


def _check_unicode(operation: str, key: str, value: Any) -> None:
    """Refuse text holding a lone surrogate (JSON's ``"\\udcff"``, or command-line bytes that
    are not UTF-8): it is not Unicode, SQLite cannot bind it and the tokenizer raises on it.
    Pydantic lets it through in some fields and not others, so every door checks here."""
    items = enumerate(value) if isinstance(value, list | tuple) else [(None, value)]
    for index, item in items:
        if not isinstance(item, str):
            continue
        try:
            item.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = key if index is None else f"{key}.{index}"
            raise Invalid(
                f"invalid arguments for {operation}: {where}: the text holds "
                f"{item[exc.start]!r} at {exc.start}, a lone surrogate, which is not Unicode "
                "(bytes that were not UTF-8?)"
            ) from None


def _describe_field(name: str, info: Any) -> str:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        others = [c for c in alias.choices if isinstance(c, str) and c != name]
        if others:
            return f"{name} (or {', '.join(others)})"
    return name


SHOWN_ERRORS = 5
"""Validation errors a message describes; it counts the rest (a list of 300,000 bad items
gets a line, not 5 MB)."""


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's validation errors as one precise line: where, what, and the value given."""
    parts = []
    for err in errors[:SHOWN_ERRORS]:
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"{loc} is required")
            continue
        given = err.get("input")
        shown = json.dumps(given, default=str)[:80] if given is not None else "null"
        message = str(err["msg"])
        message = message.removeprefix("Value error, ")
        parts.append(f"{loc}: {message[:1].lower() + message[1:]} (got {shown})")
    more = len(errors) - len(parts)
    return "; ".join(parts) + (f"; and {more:,} more problems" if more else "")


def input_schema(model: type[Params]) -> dict[str, Any]:
    """The JSON schema of a parameter model, without pydantic's generated titles."""
    schema = model.model_json_schema(by_alias=False)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "default" in prop and prop["default"] is None:
            del prop["default"]  # unset means "the setting", as the description says
    return schema
