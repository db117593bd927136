"""The format of an agent memory folder: which files are memories, what they may be called,
what their fields may hold, and how a file's text splits into frontmatter, title and body.

The layout is the one memsearch and OpenClaw write, plus mcp-markdown-ragdocs' named memories:
``MEMORY.md`` at the top (long-lived facts), ``memory/YYYY-MM-DD.md`` daily logs (OpenClaw also
writes ``memory/YYYY-MM-DD-<slug>.md`` session notes beside them), any other visible ``*.md`` as a
named memory, and ``.trash/`` for soft-deleted ones. The scanning source and the writer
(:mod:`noteseek.sources.memory.folder`) share these rules, so what one writes the other finds.

A name is a memory's path relative to the folder without ``.md``. Names arrive from agents
(MCP, HTTP), so they are untrusted: :func:`check_name` refuses anything that could leave the
folder, hide a file, collide with the layout or surprise a person reading the folder. Field
values arrive the same way and are cleaned by the ``clean_*`` functions. The reading and writing
of files is :class:`~noteseek.sources.memory.folder.MemoryFolder`'s.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from noteseek.parse.frontmatter import load_frontmatter
from noteseek.parse.inline import clean_tag
from noteseek.sources.base import WriteConflict, WriteNotFound, WriteRefused
from noteseek.sources.memory import names

MEMORY_TYPES: tuple[str, ...] = ("plan", "journal", "fact", "observation", "reflection")
"""The frontmatter ``type`` values of mcp-markdown-ragdocs' memory lane."""
MEMORY_STATUSES: tuple[str, ...] = ("active", "archived")
DAILY_DIR = "memory"
"""The folder of daily logs, ``memory/YYYY-MM-DD.md``."""
LONG_TERM = "MEMORY.md"
"""The long-term file at the top of the folder."""
TRASH = ".trash"
"""Soft-deleted memories, at the same relative path."""
LOCK_NAME = ".noteseek-memory.lock"
"""The lock file every writer takes (hidden, so never a memory)."""
MAX_NAME_BYTES = names.MAX_NAME_BYTES
MAX_SEGMENT_BYTES = names.MAX_SEGMENT_BYTES

MemoryKind = Literal["long_term", "daily", "memory"]


class MemoryFolderError(WriteRefused):
    """A memory operation was refused or failed; the message says what to do."""


class InvalidName(MemoryFolderError):
    """The name is not allowed (outside the folder, hidden, reserved, bad characters)."""


class NotFound(MemoryFolderError, WriteNotFound):
    """No memory (or trashed memory) has that name."""


class Conflict(MemoryFolderError, WriteConflict):
    """A different memory already has that name."""


class TooLarge(MemoryFolderError):
    """A text or a file would exceed the folder's size bounds."""


class Busy(MemoryFolderError, WriteConflict):
    """Another writer held the folder's lock for longer than the timeout."""


class InvalidMemory(MemoryFolderError):
    """A field value is not allowed, or a file cannot be used (invalid frontmatter, not UTF-8)."""


_DAILY_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(-[^/]+)?")
"""A daily log's stem: the date, or OpenClaw's ``date-slug`` session notes."""
_TRASH_STAMP_RE = re.compile(r"(.+)~(\d{8}T\d{6}(?:-\d+)?)")
"""A trashed file whose name was taken in the trash gets ``~stamp``; ``~`` is never in a name."""
_SPECIAL_CHARS = frozenset(" _-.")
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Characters that make a name display differently from what it is."""
# A name given with one of these suffixes meant a file that is not Markdown ("notes.txt" would
# otherwise become "notes.txt.md"). Other dotted names stay allowed: Dendron names like
# "project.atlas.plan" are common.
_SUFFIX_WORDS = (
    "markdown mdx md txt text rst org adoc asciidoc json jsonl yaml yml toml ini csv tsv html htm "
    "xml pdf doc docx py js ts sh log tmp bak swp lock"
)
_FOREIGN_SUFFIXES = frozenset(_SUFFIX_WORDS.split())


def daily_date(stem: str) -> dt.date | None:
    """The date of a daily log's stem (``2025-01-31`` or ``2025-01-31-slug``); None otherwise."""
    m = _DAILY_RE.fullmatch(stem)
    if m is None:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:  # 2025-02-30
        return None


def daily_name(day: dt.date) -> str:
    """The name of the daily log of ``day``."""
    return f"{DAILY_DIR}/{day.isoformat()}"


def memory_kind(rel_path: str) -> MemoryKind | None:
    """What the file at ``rel_path`` (POSIX, relative to the memory folder) is: the long-term
    file, a daily log, a named memory, or None when it is not a memory at all (not ``.md``,
    hidden, in the trash, or under ``memory/`` without a daily log's name)."""
    if not rel_path.endswith(".md"):
        return None
    parts = rel_path.split("/")
    if any(not part or part.startswith((".", "~")) for part in parts):
        return None
    if rel_path == LONG_TERM:
        return "long_term"
    if parts[0] == DAILY_DIR:
        return "daily" if len(parts) == 2 and daily_date(parts[1][:-3]) else None
    return "memory"


def holds_one_text(kind: MemoryKind | None) -> bool:
    """Whether a file of this kind is one memory's text, as found when a new memory's text is
    looked for among the others: a daily log (a day of entries) never is, and so is never
    hashed for that (an append would otherwise hash the whole day again: 100 ms at 550 KB)."""
    return kind is not None and kind != "daily"


def check_name(name: object, *, new: bool = False) -> str:
    """``name`` as a memory name (a trailing ``.md`` removed), or :class:`InvalidName`.

    Every name must stay inside the folder and clear of hidden, backup, trash and layout names;
    ``new`` also holds the name of a memory about to be created to the characters a person can
    read and type everywhere (letters, digits, space, ``_ - .``), in NFC, each folder and file
    name within ``MAX_SEGMENT_BYTES`` and none a Windows device name, none looking like the
    layout's names (:mod:`~noteseek.sources.memory.names`), and keeps creation out of
    ``memory/``, where only :meth:`MemoryFolder.append` writes. Whether the path really stays
    inside once symbolic links are followed is checked by the folder, which knows where it is,
    and so is whether it looks like a name already there.
    """
    if not isinstance(name, str):
        raise InvalidName(f"a memory name must be a string, not {type(name).__name__}")
    if new:
        name = names.nfc(name)
    if name[-3:].lower() == ".md":
        name = name[:-3]
    if not name:
        raise InvalidName("the memory name is empty: give a relative path such as 'projects/atlas'")
    shown = repr(name)
    for char in name:
        if unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _BIDI_CONTROLS:
            raise InvalidName(
                f"memory name {shown} contains the control character U+{ord(char):04X}; "
                "use letters, digits, spaces, '_', '-' and '.'"
            )
    if (size := names.utf8_size(name)) > MAX_NAME_BYTES:
        raise InvalidName(
            f"memory name is {size:,} bytes long in UTF-8; at most {MAX_NAME_BYTES:,} are allowed"
        )
    if "\\" in name:
        raise InvalidName(f"memory name {shown} contains a backslash; separate folders with '/'")
    if name.startswith("/"):
        raise InvalidName(
            f"memory name {shown} is absolute; give a path relative to the memory folder, "
            "such as 'projects/atlas'"
        )
    parts = name.split("/")
    if "" in parts:
        raise InvalidName(f"memory name {shown} has an empty segment (a doubled or trailing '/')")
    for part in parts:
        _check_segment(part, shown, new)
    _check_layout(name, parts, shown, new)
    return name


def _check_segment(part: str, shown: str, new: bool) -> None:
    if part in (".", ".."):
        raise InvalidName(
            f"memory name {shown} contains '{part}'; a memory name cannot leave or skip folders"
        )
    if part == TRASH:
        raise InvalidName(
            f"memory name {shown} is in {TRASH}/, where deleted memories are kept; "
            "use restore to bring one back"
        )
    if part.startswith("."):
        raise InvalidName(
            f"memory name {shown}: segment {part!r} starts with '.' (hidden names are never "
            "memories)"
        )
    if part.startswith("~"):
        raise InvalidName(
            f"memory name {shown}: segment {part!r} starts with '~', which marks backup and "
            "temporary files"
        )
    if not new:
        return
    if (size := names.utf8_size(part)) > MAX_SEGMENT_BYTES:
        start = part if len(part) <= 24 else part[:21] + "..."
        raise InvalidName(
            f"memory name: segment {start!r} is {size} bytes long in UTF-8 ({len(part)} "
            f"characters); a folder or file name holds at most {MAX_SEGMENT_BYTES} bytes"
        )
    device = names.device_name(part)
    if device is not None:
        raise InvalidName(
            f"memory name {shown}: {part!r} is the Windows device name {device.upper()}, "
            "which no file can have on Windows (with any extension); choose another name"
        )
    for char in part:
        if not (char in _SPECIAL_CHARS or unicodedata.category(char)[0] in "LM" or char.isdigit()):
            raise InvalidName(
                f"memory name {shown} contains {char!r}; use letters, digits, spaces, "
                "'_', '-' and '.'"
            )
    if part != part.strip(" "):
        raise InvalidName(f"memory name {shown}: segment {part!r} starts or ends with a space")
    if part.endswith("."):
        raise InvalidName(f"memory name {shown}: segment {part!r} ends with '.'")


def _check_layout(name: str, parts: list[str], shown: str, new: bool) -> None:
    """The names the layout reserves: ``memory/`` holds daily logs only (written by append).
    A new name may not differ from ``MEMORY`` or ``memory/`` only in letter case (one file on
    a case-insensitive disk), nor carry the suffix of a file that is not Markdown; existing
    files with such names, made by hand, stay usable."""
    if parts[0] == DAILY_DIR and len(parts) > 1:
        if len(parts) != 2 or _DAILY_RE.fullmatch(parts[1]) is None:
            raise InvalidName(
                f"memory name {shown} is reserved: '{DAILY_DIR}/' holds only daily logs named "
                f"{DAILY_DIR}/YYYY-MM-DD; put named memories in another folder"
            )
        if daily_date(parts[1]) is None:
            raise InvalidName(f"memory name {shown}: {parts[1][:10]} is not a real date")
        if new:
            raise InvalidName(
                f"memory name {shown} is a daily log; daily logs are written by append, "
                "one entry at a time"
            )
    if not new:
        return
    if names.skeleton(name) == names.skeleton("memory") and name != LONG_TERM[:-3]:
        raise InvalidName(
            f"memory name {shown} looks like the long-term file MEMORY ("
            f"{names.why_alike(name, 'MEMORY')}); use 'MEMORY' or another name"
        )
    if parts[0] != DAILY_DIR and names.skeleton(parts[0]) == DAILY_DIR and len(parts) > 1:
        raise InvalidName(
            f"memory name {shown}: folder {parts[0]!r} looks like the daily-log folder "
            f"'{DAILY_DIR}/' ({names.why_alike(parts[0], DAILY_DIR)}); choose another folder"
        )
    stem, dot, suffix = parts[-1].rpartition(".")
    if dot and stem and suffix.lower() in _FOREIGN_SUFFIXES:
        raise InvalidName(
            f"memory name {shown} names a .{suffix} file; memories are Markdown files: "
            f"use {name[: -len(suffix) - 1]!r} (stored as {name[: -len(suffix) - 1]}.md)"
        )


def trash_stamp(when: dt.datetime) -> str:
    """The suffix that tells apart a memory deleted again while an older copy is in the trash."""
    return when.strftime("%Y%m%dT%H%M%S")


def trash_versions(entries: Iterable[str], stem: str) -> list[str]:
    """The stems among a trash folder's ``entries`` that are deleted copies of ``stem``, most
    recently deleted first (a copy without a stamp is the oldest: while it is in the trash,
    later copies get a stamp)."""
    found: list[tuple[tuple[str, int], str]] = []
    for entry in entries:
        if entry.endswith(".md") and not entry.startswith("."):
            original, stamp = split_trash_name(entry[:-3])
            if original == stem:
                when, _, n = (stamp or "").partition("-")
                found.append(((when, int(n or 1)), entry[:-3]))
    return [name for _, name in sorted(found, reverse=True)]


def split_trash_name(trash_rel: str) -> tuple[str, str | None]:
    """(original name, stamp or None) of a name relative to the trash, e.g. ``a/b~20250101T…``."""
    head, _, last = trash_rel.rpartition("/")
    m = _TRASH_STAMP_RE.fullmatch(last)
    if m is None:
        return trash_rel, None
    return (f"{head}/{m.group(1)}" if head else m.group(1)), m.group(2)


# -- the text of a memory file -----------------------------------------------------------------

_FENCE_RE = re.compile(r"-{3,}[ \t]*")
_CLOSING_FENCE_RE = re.compile(r"^-{3,}[ \t]*$\n?", re.MULTILINE)
_HEADING_RE = re.compile(r"(?:[ \t]*\n)*(# [^\n]*)(?:\n|\Z)")
_RELATED_RE = re.compile(r"(?:\A|\n+)Related: \[\[[^\n]*\]\][ \t]*\n*\Z")
_SECTION_RE = re.compile(r"^#{1,6}[ \t][^\n]*$", re.MULTILINE)
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(yaml.SafeDumper):
    """Writes timestamps as ISO 8601 with a ``T`` (PyYAML's default puts a space there), and
    never as anchors (``created_at`` and ``updated_at`` are often the same object)."""

    def ignore_aliases(self, data: Any) -> bool:
        return isinstance(data, dt.date) or bool(super().ignore_aliases(data))


# YAML's plain timestamp form (the implicit resolver's pattern): only such text can be written
# without a ``!!timestamp`` tag and still read back as a timestamp.
_PLAIN_TIMESTAMP_RE = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"
)


def _represent_datetime(dumper: yaml.SafeDumper, value: dt.datetime) -> yaml.Node:
    """A plain ISO 8601 timestamp, never a tagged one (issue 44, R15): an offset with seconds
    (a historical local mean time) is not YAML's timestamp form, so such a time is written in
    UTC; anything still outside the form is written as a string."""
    text = value.isoformat()
    if not _PLAIN_TIMESTAMP_RE.fullmatch(text) and value.utcoffset() is not None:
        text = value.astimezone(dt.UTC).isoformat()
    if _PLAIN_TIMESTAMP_RE.fullmatch(text):
        return dumper.represent_scalar("tag:yaml.org,2002:timestamp", text)
    return dumper.represent_str(text)


def _represent_mapping(dumper: yaml.SafeDumper, value: dict[Any, Any]) -> yaml.Node:
    """Mappings in block style, nested ones too (lists of plain values stay ``[a, b]``)."""
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=False)


_Dumper.add_representer(dt.datetime, _represent_datetime)
_Dumper.add_representer(dict, _represent_mapping)


@dataclass(frozen=True, slots=True)
class MemoryText:
    """A memory file's text split at its frontmatter."""

    yaml: str | None
    """The frontmatter's YAML; None when the file has none."""
    body: str
    """Everything after the frontmatter's closing line."""
    frontmatter: dict[str, Any]


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(YAML, rest) when the first line opens frontmatter that a later line closes, as the
    Markdown parser reads it; (None, text) otherwise."""
    first, newline, rest = text.partition("\n")
    if not newline or not _FENCE_RE.fullmatch(first):
        return None, text
    m = _CLOSING_FENCE_RE.search(rest)
    if m is None:
        return None, text
    return rest[: m.start()], rest[m.end() :]


def parse_text(text: str, name: str, consequence: str) -> MemoryText:
    yaml_text, body = split_frontmatter(text)
    if yaml_text is None:
        return MemoryText(None, text, {})
    warnings: list[str] = []
    frontmatter = load_frontmatter(yaml_text, warnings)
    if warnings:
        raise InvalidMemory(f"{name}: {'; '.join(warnings)}; {consequence}")
    return MemoryText(yaml_text, body, frontmatter)


def raw_frontmatter(yaml_text: str | None) -> dict[Any, Any]:
    """The frontmatter as YAML loads it (dates stay dates), to write it back unchanged."""
    data = yaml.load(yaml_text, Loader=_YAML_LOADER) if yaml_text else None
    return data if isinstance(data, dict) else {}


def render_frontmatter(frontmatter: dict[Any, Any]) -> str:
    dumped = yaml.dump(
        frontmatter,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=1 << 16,
    )
    return f"---\n{dumped}---\n"


def decode_text(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMemory(
            f"{name} is not valid UTF-8 (byte {exc.start}); fix it by hand"
        ) from exc
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def split_heading(body: str) -> tuple[str | None, str]:
    """(the leading ``# title`` line, the text after it); (None, body) without one."""
    m = _HEADING_RE.match(body)
    return (m.group(1), body[m.end() :]) if m else (None, body)


def take_title(title: str | None, text: str) -> tuple[str | None, str]:
    """(title, text) of a new memory: without a title, a text's leading ``# heading`` is its
    title, as a reader of the file would take it (and the text is what follows it)."""
    if title is None:
        top, rest = split_heading(text)
        if heading_title(top) is not None:
            return heading_title(top), rest.strip()
    return title, text


def heading_title(heading: str | None) -> str | None:
    if heading is None:
        return None
    return re.sub(r"[ \t]+#+[ \t]*$", "", heading[2:]).strip() or None


def core_text(text: str) -> str:
    """A memory's own text, without the Related line that create appends (its last line: only
    that line is matched, as the pattern tried at every line of a long text took 50 ms)."""
    body = text.rstrip("\n")
    line = body.rfind("\n") + 1
    if not body.startswith("Related: [[", line):
        return text
    cut = len(body[:line].rstrip("\n"))
    return text[:cut] + _RELATED_RE.sub("", text[cut:])


def add_paragraph(rest: str, extra: str) -> str:
    """``rest`` with ``extra`` as its last paragraph, above a final Related line if any (the
    links stay last, where create put them)."""
    m = _RELATED_RE.search(rest)
    cut = m.start() if m else len(rest)
    return "\n\n".join(p for p in (rest[:cut].strip("\n"), extra, rest[cut:].strip("\n")) if p)


def normalise(text: str) -> str:
    return " ".join(text.split())


def has_entry(log: str, text: str) -> bool:
    """Whether a daily log already holds ``text`` as an entry (a section's whole text)."""
    log = log.replace("\r\n", "\n")
    if f"\n\n{text}\n" in log:
        return True
    want = normalise(text)
    if want and not re.search(r"\s+".join(map(re.escape, want.split(" "))), log):
        # No section can equal ``text`` (its words, apart by any white space, are nowhere in
        # the log): one search, where normalising every section of a long day's log took 40 ms
        # an append at 550 KB.
        return False
    return any(normalise(section) == want for section in _SECTION_RE.split(log))


# -- values ------------------------------------------------------------------------------------


def check_choice(what: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidMemory(f"{what} {value!r} is not one of: {', '.join(allowed)}")
    return value


def clean_text(what: str, text: object, limit: int) -> str:
    if not isinstance(text, str):
        raise InvalidMemory(f"the {what} must be a string, not {type(text).__name__}")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise InvalidMemory(f"the {what} is empty: give the text to remember")
    if "\x00" in text:
        raise InvalidMemory(f"the {what} contains a NUL character")
    try:
        size = len(text.encode())
    except UnicodeEncodeError as exc:
        raise InvalidMemory(f"the {what} is not valid Unicode ({exc.reason})") from exc
    if size > limit:
        raise TooLarge(
            f"the {what} is {size} bytes of UTF-8; the limit is {limit} bytes: shorten it or "
            "split it into several memories"
        )
    return text


def clean_title(title: object) -> str | None:
    if title is None:
        return None
    if not isinstance(title, str) or not title.strip():
        raise InvalidMemory(f"title {title!r} must be a non-empty string")
    title = title.strip()
    if len(title) > 200 or any(ord(c) < 32 for c in title):
        raise InvalidMemory("a title is one line of at most 200 characters")
    return title


def clean_tags(tags: Iterable[str] | str) -> list[str]:
    """Tags as written in frontmatter: a leading ``#`` dropped, each once (case apart)."""
    items = [t for t in re.split(r"[,\s]+", tags) if t] if isinstance(tags, str) else list(tags)
    out: dict[str, str] = {}
    for item in items:
        tag = clean_tag(item.strip().lstrip("#")) if isinstance(item, str) else None
        if not tag or re.search(r"[\s,\[\]]", tag):
            raise InvalidMemory(
                f"tag {item!r} is not a tag: a word with at least one letter, no spaces or "
                "commas ('/' nests: project/atlas)"
            )
        out.setdefault(tag.casefold(), tag)
    return list(out.values())


def clean_links(links: Iterable[str] | str) -> list[str]:
    """Link targets (document names or paths), each once; ``[[x]]`` is taken as ``x``."""
    out: dict[str, None] = {}
    for item in [links] if isinstance(links, str) else list(links):
        target = (
            item.strip().removeprefix("[[").removesuffix("]]").strip()
            if isinstance(item, str)
            else ""
        )
        if not target or len(target) > 500 or re.search(r"[\[\]|\x00-\x1f]", target):
            raise InvalidMemory(
                f"link {item!r} is not a document name: one line, no '[', ']' or '|'"
            )
        out[target] = None
    return list(out)


def local_time(value: dt.datetime) -> dt.datetime:
    """An aware datetime; a naive one is local time."""
    return value if value.tzinfo is not None else value.astimezone()


def as_datetime(value: Any) -> dt.datetime | None:
    """A frontmatter timestamp (ISO 8601 text, or a date) as an aware datetime."""
    if isinstance(value, dt.datetime):
        return local_time(value)
    if isinstance(value, dt.date):
        return local_time(dt.datetime.combine(value, dt.time()))
    if not isinstance(value, str):
        return None
    try:
        return local_time(dt.datetime.fromisoformat(value.strip()))
    except ValueError:
        return None


def parse_trash_name(name: str) -> tuple[str, str]:
    """(name inside the trash, original name) of a trash name ``.trash/a/b[~stamp]``."""
    inner = name[len(TRASH) + 1 :]
    inner = inner[:-3] if inner[-3:].lower() == ".md" else inner
    original, stamp = split_trash_name(inner)
    checked = check_name(original)
    if checked != original:
        raise InvalidName(f"trash name {name!r} is not one that delete gives")
    return (original if stamp is None else f"{original}~{stamp}"), original


# -- records -------------------------------------------------------------------------------------
