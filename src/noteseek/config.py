"""Layered settings: built-in defaults < user file < project file < environment < flags.

* user file: ``$XDG_CONFIG_HOME/noteseek/config.toml`` (platformdirs' user config dir)
* project file: ``.noteseek.toml``, found from the working directory upwards
  (or given explicitly with ``--config``)
* environment: ``NOTESEEK_SECTION__KEY`` (``NOTESEEK_INDEX__MAX_FILE_SIZE=1000000``,
  ``NOTESEEK_ROOTS__NOTES__PATH=~/notes``)
* flags: whatever the command line sets

Each layer is read by a pydantic-settings source into a plain dict; the dicts are merged key by
key so :func:`load_settings` can say which layer every resolved value came from
(``noteseek config show``). Relative root paths and ``index.dir`` are resolved against the
folder of the file that set them (the working directory for environment and flags).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

PROJECT_FILE = ".noteseek.toml"
APP_NAME = "noteseek"
ENV_PREFIX = "NOTESEEK_"

Layer = Literal["default", "user", "project", "env", "flag"]
LAYERS: tuple[Layer, ...] = ("default", "user", "project", "env", "flag")


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message says where and why."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RootConfig(_Section):
    path: str = Field(description="Folder to index (~ and relative paths allowed).")
    include: list[str] = Field(
        default_factory=lambda: ["*.md", "*.markdown", "*.txt"],
        description="gitignore-style patterns of files to index.",
    )
    exclude: list[str] = Field(
        default_factory=list, description="gitignore-style patterns of files to skip."
    )


class IndexSettings(_Section):
    dir: str | None = Field(
        default=None,
        description="Index folder. Default: .noteseek/ beside the project file, else the "
        "user data dir keyed by the roots.",
    )
    max_file_size: int = Field(
        default=5_000_000, ge=1, description="Files larger than this (bytes) are skipped."
    )
    include_hidden: bool = Field(
        default=False, description="Also index hidden files and folders (names starting '.')."
    )
    gitignore: bool = Field(default=True, description="Honour .gitignore files inside roots.")
    follow_symlinks: bool = Field(
        default=True, description="Follow symbolic links (loops are detected and reported)."
    )
    workers: int = Field(
        default=0,
        ge=0,
        description="Processes that parse files; 0 = one per CPU core for large runs.",
    )


class ChunkingSettings(_Section):
    max_chars: int = Field(
        default=900,
        ge=200,
        le=20_000,
        description="Largest chunk in characters (sized for a 256-token embedding model).",
    )


class AnalysisSettings(_Section):
    language: str = Field(default="english", description="Snowball stemmer language.")
    stopwords: bool = Field(
        default=True,
        description="Drop the 33 classic English stop words (measured: +0.006 nDCG@10 on "
        "hugo-docs-kis, -0.001 on scifact-dev, and faster queries).",
    )


class EmbeddingSettings(_Section):
    enabled: bool = Field(
        default=True,
        description="Embed chunks for semantic and hybrid search. false = keyword search only "
        "(huge corpora, quick starts).",
    )
    provider: Literal["local", "remote"] = Field(
        default="local",
        description="local: a bundled ONNX model; remote: an OpenAI-compatible /v1/embeddings "
        "endpoint (Ollama, vLLM, llama.cpp server, hosted APIs).",
    )
    model: str = Field(
        default="bge-small-en",
        description="Local: bge-small-en (default, chosen by measurement) or minilm-l6. "
        "Remote: the model name the endpoint expects.",
    )
    threads: int = Field(
        default=0, ge=0, le=256, description="ONNX Runtime threads; 0 = one per core."
    )
    batch_size: int = Field(
        default=16, ge=1, le=256, description="Texts per model call (bounds peak memory)."
    )
    max_tokens: int = Field(
        default=256, ge=16, le=512, description="Longer chunks are truncated to this."
    )
    base_url: str = Field(
        default="http://127.0.0.1:11434/v1",
        description="Remote: the API base; /embeddings is appended.",
    )
    api_key_env: str = Field(
        default="NOTESEEK_EMBEDDING_API_KEY",
        description="Remote: the environment variable holding the API key (sent as a Bearer "
        "token; unset = no key).",
    )
    timeout: float = Field(default=30.0, gt=0, le=600, description="Remote: seconds per request.")
    retries: int = Field(
        default=4, ge=0, le=20, description="Remote: retries with exponential backoff."
    )
    query_prefix: str = Field(default="", description="Remote: text put before every query.")
    document_prefix: str = Field(
        default="", description="Remote: text put before every document chunk."
    )


class VectorSettings(_Section):
    dtype: Literal["float32", "float16"] = Field(
        default="float32",
        description="In-memory vector precision; float16 halves memory for a small loss.",
    )
    hnsw_threshold: int = Field(
        default=200_000,
        ge=0,
        description="From this many vectors on, search an HNSW graph (usearch, built in the "
        "background; exact until it is ready) instead of the exact matrix. Exact search "
        "costs about 16 ms at 200k vectors and grows linearly (bench/vector_search.py). "
        "0 = always exact.",
    )


class RerankSettings(_Section):
    enabled: bool = Field(
        default=False,
        description="Re-order the top fused results with the bundled cross-encoder "
        "(ms-marco-MiniLM-L-12-v2). Off by default: see docs/evaluation.md for its effect "
        "and docs/benchmarks.md for its cost.",
    )
    top_n: int = Field(default=20, ge=1, le=100, description="Results re-ranked per query.")
    max_tokens: int = Field(
        default=256, ge=32, le=512, description="Query plus section, truncated to this."
    )
    threads: int = Field(default=0, ge=0, le=256, description="ONNX Runtime threads; 0 = all.")


class WatchSettings(_Section):
    debounce_ms: int = Field(
        default=500,
        ge=10,
        le=60_000,
        description="Changes arriving within this many milliseconds are indexed as one batch "
        "(the last event per path wins).",
    )
    reconcile_interval: float = Field(
        default=3600.0,
        ge=0,
        description="Seconds between full reconciliations with the file system (stale files "
        "removed, missing ones added), besides the one at start. 0 disables.",
    )
    takeover_interval: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description="Seconds between a reader's attempts to take the writer role.",
    )


class ServeSettings(_Section):
    """``noteseek serve``: the HTTP API, MCP over streamable HTTP and the web page."""

    host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address to listen on. Any address other than loopback (127.0.0.1, ::1, "
        "localhost) requires serve.token.",
    )
    port: int = Field(default=8765, ge=0, le=65535, description="Port; 0 picks a free one.")
    token: SecretStr | None = Field(
        default=None,
        description="API token: every API and MCP request must send "
        "'Authorization: Bearer <token>'. Required off loopback. Prefer the environment "
        "(NOTESEEK_SERVE__TOKEN) to a file.",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins allowed to call the API from other pages "
        "(https://notes.example.org); empty = CORS off.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header names accepted (besides loopback names and the "
        "listening address), e.g. the machine's DNS name when listening on 0.0.0.0; "
        "'*' accepts any (turns the DNS-rebinding check off).",
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        le=64 * 1_048_576,
        description="Largest request body in bytes; larger requests get 413.",
    )

    @field_validator("token")
    @classmethod
    def _token_strength(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret = value.get_secret_value()
            if len(secret) < 16 or secret != secret.strip():
                raise ValueError(
                    "serve.token must hold at least 16 characters and no surrounding "
                    "whitespace (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
                )
        return value


class ColumnWeights(_Section):
    # Chosen on hugo-docs-kis (docs/evaluation.md): title 20 beat 10, 5, 3 and flat weights.
    title: float = Field(default=20.0, ge=0)
    aliases: float = Field(default=10.0, ge=0)
    headings: float = Field(default=5.0, ge=0)
    tags: float = Field(default=3.0, ge=0)
    body: float = Field(default=1.0, ge=0)
    code: float = Field(default=1.0, ge=0)


class SearchSettings(_Section):
    top_k: int = Field(default=10, ge=1, le=1000, description="Results returned by default.")
    weights: ColumnWeights = Field(
        default_factory=ColumnWeights, description="BM25 weight of each indexed field."
    )
    all_terms_first: int = Field(
        default=4,
        ge=0,
        description="For queries of up to this many words, documents holding every word "
        "rank first; longer (natural-language) queries rank by BM25 alone. 0 disables.",
    )
    common_term_fraction: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Words found in more than this share of chunks only count when no rarer "
        "word of the query matches; when every word is that common, documents naming them in "
        "title, aliases or tags come first. Keeps queries fast on large indexes.",
    )
    common_term_min: int = Field(
        default=2000,
        ge=0,
        description="...but only words found in at least this many chunks: small indexes "
        "rank every word.",
    )
    document_weight: float = Field(
        default=0.75,
        ge=0,
        le=1,
        description="Share of a chunk's keyword score that comes from how well its whole "
        "document matches (BM25 over the document); the rest is the chunk's own BM25. "
        "Chosen on scifact-dev and hugo-docs-kis (docs/evaluation.md). 0 = chunk only.",
    )
    mode: Literal["hybrid", "keyword", "semantic"] = Field(
        default="hybrid",
        description="hybrid fuses keyword and semantic lanes; either alone is available.",
    )
    candidates: int = Field(
        default=50,
        ge=1,
        le=2000,
        description="Results each lane fetches for fusion (at least top_k).",
    )
    # Chosen with bench/tune_hybrid.py on scifact-dev and hugo-docs-kis (docs/evaluation.md).
    rrf_k: float = Field(
        default=10.0, gt=0, description="Reciprocal Rank Fusion constant (k in 1/(k + rank))."
    )
    fusion: Literal["rrf", "score-aware"] = Field(
        default="rrf",
        description="rrf: weighted Reciprocal Rank Fusion with the fixed lane weights. "
        "score-aware: a lane whose raw scores are flat for this query (its best result does "
        "not stand out) gets a lower weight (formula in search/fusion.py). rrf by default: "
        "score-aware measured +0.005 nDCG@10 on hugo-docs-kis and -0.004 on the dendron set.",
    )
    flat_lane_z: float = Field(
        default=3.0,
        gt=0,
        description="score-aware fusion: a lane whose best score stands this many standard "
        "deviations above its mean keeps its full weight; flatter lanes get proportionally less.",
    )
    keyword_weight: float = Field(default=1.0, ge=0, description="Fusion weight of keyword.")
    semantic_weight: float = Field(default=1.5, ge=0, description="Fusion weight of semantic.")
    snippet_chars: int = Field(default=220, ge=40, le=5000)
    highlight: tuple[str, str] = Field(
        default=("**", "**"), description="Markers put around matched words in snippets."
    )
    community_boost: float = Field(
        default=1.1,
        ge=1.0,
        le=3.0,
        description="Results in the same link-graph community (Louvain) as the top result "
        "have their fused score multiplied by this; 1.0 turns it off. Measured: "
        "docs/evaluation.md.",
    )
    graph_weight: float = Field(
        default=0.0,
        ge=0.0,
        description="RRF weight of the graph lane (documents linked to the top results; "
        "search/graph_lane.py); 0 = off, as measured (docs/evaluation.md).",
    )
    graph_seeds: int = Field(
        default=3, ge=1, le=50, description="Graph lane: top documents whose links it follows."
    )
    graph_depth: int = Field(default=1, ge=1, le=2, description="Graph lane: links followed.")
    graph_method: Literal["neighbours", "ppr"] = Field(
        default="neighbours",
        description="Graph lane: linked documents scored by the seed's score and the edge type "
        "(neighbours), or personalised PageRank from the seeds (ppr).",
    )
    graph_edge_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "links_to": 1.0,
            "embeds": 1.0,
            "related": 1.0,
            "implements": 1.0,
            "tests": 1.0,
        },
        description="Graph lane (neighbours): weight of each edge type (links_to, embeds, "
        "related, implements, tests); a missing type counts 1.0, 0 ignores it.",
    )
    mmr_lambda: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Maximal marginal relevance over the top results: 1.0 = off (pure "
        "relevance); lower values trade relevance for variety between results. Measured: "
        "docs/evaluation.md.",
    )
    mmr_depth: int = Field(
        default=30, ge=2, le=500, description="How many top results MMR re-orders."
    )
    dedupe: bool = Field(
        default=False,
        description="Show a section whose text is identical to a better-ranked one (a copied "
        "note, a template) only once. Off by default: it measured slightly worse on the "
        "known-item sets, where the copy can be the note sought (docs/evaluation.md).",
    )
    expansion_terms: int = Field(
        default=0,
        ge=0,
        le=20,
        description="Query expansion: add this many words from the index's concept vocabulary "
        "nearest the query's embedding to the keyword lane (hybrid mode); 0 = off, as measured "
        "(docs/evaluation.md).",
    )
    expansion_min_cosine: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description="Least cosine between the query and an expansion word.",
    )
    hypothesis_keyword: bool = Field(
        default=True,
        description="search_with_hypothesis fuses keyword matches of the hypothesis with its "
        "vector matches (as hybrid search does); false: the vector lane alone.",
    )
    near_duplicate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Drop a section whose word 3-grams overlap a better-ranked one's by at least "
        "this Jaccard similarity (an edited copy); 0 = off.",
    )
    semantic_duplicate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Drop a section whose embedding has at least this cosine to a better-ranked "
        "one's (the same thing said again); 0 = off. Needs embeddings.",
    )
    max_per_document: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="At most this many sections per document in the results; 0 = no limit.",
    )
    recency: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Boost recently changed documents (search.recency_tiers). auto: only when "
        "the index's dates are trustworthy (not most of them within minutes of each other, "
        "as after a copy or a fresh checkout).",
    )
    recency_tiers: list[tuple[float, float]] = Field(
        default=[(7.0, 1.2), (30.0, 1.1)],
        description="(days, factor) pairs: a document changed within that many days has its "
        "fused score multiplied by the factor (the first tier that applies).",
    )


class Settings(BaseSettings):
    """Every setting noteseek reads. Sections mirror the TOML tables."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        nested_model_default_partial_update=True,
    )

    roots: dict[str, RootConfig] = Field(default_factory=dict)
    index: IndexSettings = Field(default_factory=IndexSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @field_validator("roots")
    @classmethod
    def _root_names(cls, value: dict[str, RootConfig]) -> dict[str, RootConfig]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(
                    f"root name {name!r} may only hold letters, digits, '_', '-' and '.'"
                )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings merges the layers itself (to know where each value came from) and
        # passes the result in as init arguments.
        return (init_settings,)


@dataclass
class LoadedConfig:
    """Resolved settings plus where they came from."""

    settings: Settings
    origins: dict[str, Layer]
    """Dotted key (``index.max_file_size``) -> the layer that set it."""
    user_file: Path
    project_file: Path | None
    index_dir: Path
    index_dir_reason: str
    files_read: list[Path] = field(default_factory=list)

    def flat(self) -> list[tuple[str, Any, Layer]]:
        """Every resolved leaf value with its layer, in a stable order."""
        rows: list[tuple[str, Any, Layer]] = []
        for key, value in _flatten(self.settings.model_dump(mode="json")).items():
            rows.append((key, value, self.origins.get(key, "default")))
        rows.append(("index.dir (resolved)", str(self.index_dir), "default"))
        return rows


def user_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def find_project_file(start: Path) -> Path | None:
    """The nearest ``.noteseek.toml`` in ``start`` or a parent folder."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def load_settings(
    cwd: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_file: Path | None = None,
) -> LoadedConfig:
    """Resolve settings from all layers. Raises :class:`ConfigError` with a clear message."""
    cwd = (cwd or Path.cwd()).resolve()
    user_path = user_file if user_file is not None else user_config_file()
    if config_file is not None:
        explicit = Path(config_file).expanduser()
        if not explicit.is_absolute():
            explicit = cwd / explicit
        if not explicit.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        project_path: Path | None = explicit
    else:
        project_path = find_project_file(cwd)

    layers: list[tuple[Layer, dict[str, Any]]] = []
    files_read: list[Path] = []
    for layer, path in (("user", user_path), ("project", project_path)):
        if path is not None and path.is_file():
            data = _read_toml(path)
            _resolve_paths(data, path.parent)
            layers.append((layer, data))  # type: ignore[arg-type]
            files_read.append(path)
    env_data = _read_env(environ)
    _resolve_paths(env_data, cwd)
    layers.append(("env", env_data))
    flag_data = _unflatten(dict(flags or {}))
    _resolve_paths(flag_data, cwd)
    layers.append(("flag", flag_data))

    merged: dict[str, Any] = {}
    origins: dict[str, Layer] = {}
    for layer, data in layers:
        _merge(merged, data)
        for key in _flatten(data):
            origins[key] = layer
    # A root's include/exclude defaults belong to the layer that defined the root.
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe_validation(exc, layers)) from None
    for name in settings.roots:
        root_layer = origins.get(f"roots.{name}.path", "default")
        for sub in ("include", "exclude"):
            origins.setdefault(f"roots.{name}.{sub}", root_layer)

    index_dir, reason = _index_dir(settings, project_path, origins)
    return LoadedConfig(settings, origins, user_path, project_path, index_dir, reason, files_read)


def default_index_dir(roots: Mapping[str, RootConfig]) -> Path:
    """The user-data index folder for a set of roots (no project file)."""
    key = "\n".join(f"{n}={Path(r.path).expanduser()}" for n, r in sorted(roots.items()))
    digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(sorted(roots)))[:40] or "index"
    return data_dir() / "indexes" / f"{slug}-{digest}"


def _index_dir(
    settings: Settings, project_file: Path | None, origins: Mapping[str, Layer]
) -> tuple[Path, str]:
    if settings.index.dir:
        return Path(settings.index.dir).expanduser(), f"index.dir ({origins.get('index.dir')})"
    if project_file is not None:
        return project_file.parent / ".noteseek", f"beside {project_file}"
    if settings.roots:
        return default_index_dir(settings.roots), "user data dir, keyed by the roots"
    return data_dir() / "indexes" / "default", "user data dir (no roots configured)"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        source = TomlConfigSettingsSource(Settings, toml_file=path)
        return dict(source())
    except Exception as exc:  # tomllib errors, permission errors
        raise ConfigError(f"{path}: {exc}") from None


def _read_env(environ: Mapping[str, str] | None) -> dict[str, Any]:
    if environ is None:
        environ = os.environ
    relevant = {k: v for k, v in environ.items() if k.upper().startswith(ENV_PREFIX)}
    if not relevant:
        return {}
    source = EnvSettingsSource(
        Settings, env_prefix=ENV_PREFIX, env_nested_delimiter="__", case_sensitive=False
    )
    source.env_vars = {k.lower(): v for k, v in relevant.items()}
    try:
        return dict(source())
    except Exception as exc:
        raise ConfigError(f"environment: {exc}") from None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    roots = data.get("roots")
    if isinstance(roots, dict):
        for root in roots.values():
            if isinstance(root, dict) and isinstance(root.get("path"), str):
                root["path"] = str(_resolve(root["path"], base))
    index = data.get("index")
    if isinstance(index, dict) and isinstance(index.get("dir"), str):
        index["dir"] = str(_resolve(index["dir"], base))


def _resolve(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path)


def _merge(into: dict[str, Any], data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value)
        else:
            into[key] = value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        if value is None:
            continue
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _describe_validation(exc: ValidationError, layers: list[tuple[Layer, dict[str, Any]]]) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        where = [layer for layer, data in layers if loc in _flatten(data)]
        source = f" (from {where[-1]})" if where else ""
        lines.append(f"  {loc}: {err['msg']}{source}")
    return "\n".join(lines)


def ad_hoc_root(path: Path, taken: Mapping[str, RootConfig]) -> tuple[str, RootConfig]:
    """A root for a folder given on the command line, named after the folder."""
    resolved = path.expanduser().resolve()
    for name, root in taken.items():
        if Path(root.path).expanduser().resolve() == resolved:
            return name, root
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", resolved.name).strip("-.") or "root"
    name = base
    n = 2
    while name in taken:
        name = f"{base}-{n}"
        n += 1
    return name, RootConfig(path=str(resolved))


INIT_TEMPLATE = """\
# noteseek project configuration. Every key is optional except a root's path.
# Precedence: built-in defaults < user file < this file < NOTESEEK_SECTION__KEY env < flags.
# `noteseek config show` prints every resolved value and where it came from.

# One table per folder to index. Relative paths are relative to this file.
[roots.notes]
path = "{path}"
# include = ["*.md", "*.markdown", "*.txt"]   # gitignore-style patterns
# exclude = ["archive/", "*.draft.md"]

[index]
# dir = ".noteseek"            # default: .noteseek/ beside this file
# max_file_size = 5000000      # bytes; larger files are skipped and reported
# include_hidden = false       # index hidden files and folders too
# gitignore = true             # honour .gitignore files
# follow_symlinks = true
# workers = 0                  # parser processes; 0 = one per core for large runs

[chunking]
# max_chars = 900              # sized for a 256-token embedding model

[analysis]
# language = "english"         # Snowball stemmer language
# stopwords = true             # drop 33 English stop words (measured, docs/evaluation.md)

[embedding]
# enabled = true               # false: keyword search only
# provider = "local"           # or "remote" (OpenAI-compatible /v1/embeddings)
# model = "bge-small-en"       # local: bge-small-en | minilm-l6; remote: the endpoint's name
# threads = 0                  # ONNX Runtime threads; 0 = one per core
# base_url = "http://127.0.0.1:11434/v1"   # remote only
# api_key_env = "NOTESEEK_EMBEDDING_API_KEY"  # remote only: env var holding the key

[vectors]
# dtype = "float32"            # or "float16" to halve memory
# hnsw_threshold = 200000      # from this many vectors on: HNSW instead of exact search

[watch]                        # noteseek mcp / watch / serve
# debounce_ms = 500            # changes within this window are one batch
# reconcile_interval = 3600    # seconds between full rescans; 0 disables

[serve]                        # noteseek serve
# host = "127.0.0.1"           # any other address requires a token
# port = 8765
# token = "..."                # better: NOTESEEK_SERVE__TOKEN in the environment
# cors_origins = []            # browser origins allowed to call the API; empty = CORS off
# allowed_hosts = []           # extra Host names (when listening on 0.0.0.0)
# max_body_bytes = 1048576

[search]
# mode = "hybrid"              # hybrid | keyword | semantic
# candidates = 50              # results each lane fetches for fusion
# rrf_k = 10
# keyword_weight = 1.0
# semantic_weight = 1.5
# document_weight = 0.75       # share of keyword score from the whole document's BM25
# top_k = 10
# all_terms_first = 4          # queries up to this many words: all-words matches first
# snippet_chars = 220
# highlight = ["**", "**"]
# [search.weights]             # BM25 weight per field (chosen on hugo-docs-kis)
# title = 20.0
# aliases = 10.0
# headings = 5.0
# tags = 3.0
# body = 1.0
# code = 1.0
"""
