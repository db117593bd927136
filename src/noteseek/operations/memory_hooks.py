"""What a coding agent's hooks get from noteseek without asking: an orientation when a session
starts, the memories that answer each prompt, and the session captured when it stops.

The agents' hook payloads (Claude Code's: ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``prompt`` for UserPromptSubmit, ``source`` for SessionStart) are read by
the door (``interfaces/cli/hook.py``, before any of this is imported); these functions take
the opened engine and the payload's fields and return the text to give the agent.
Progressive disclosure: a prompt gets a few short hits, each with the ``path:line`` to open
(``noteseek get``, MCP ``get_section``); a captured session names its transcript, the whole of
what was said.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.config.ranges import EXPAND_CHARS
from noteseek.operations.params import MAX_QUERY_CHARS
from noteseek.search.ask import SearchRequest
from noteseek.search.relevance import content_words
from noteseek.sources.memory import MEMORY_SCOPE
from noteseek.sources.memory.sessions import (
    SessionEntry,
    session_title,
    valid_session_id,
    without_session_lines,
)
from noteseek.sources.memory.transcript import read_transcript
from noteseek.sources.spec import ALL_SCOPE

if TYPE_CHECKING:
    from noteseek.engine import Engine
    from noteseek.operations.context import Context
    from noteseek.operations.memory_params import RecallPrompt
    from noteseek.types import Hit

_CHAT = (
    "thanks thank please sure great good fine nice cool continue go ahead looks look lgtm "
    "done proceed next right agreed perfect awesome yep nope"
)
CHAT_WORDS = frozenset(_CHAT.split())
"""Words of a chat turn that say nothing about its subject: a prompt of only these ("thanks,
looks good") recalls nothing."""
MIN_SNIPPET_CHARS = 120
HEADER = (
    "noteseek memories that may bear on this prompt (open one with `noteseek get PATH:LINE` "
    "or get_section; search_memories for more):"
)


def orientation(engine: Engine) -> str:
    """A session's first words from noteseek: how many memories there are and how to ask."""
    root = engine.memory_root()
    folder = engine.memory_folder(root)
    stats = folder.stats()
    newest = f", the newest from {stats.newest:%Y-%m-%d}" if stats.newest else ""
    if not stats.memories:
        return (
            f"noteseek: the memory folder {folder.path} is empty. Save what is worth keeping "
            "with the create_memory tool (or `noteseek memory add`); each session is "
            "summarised into memory/YYYY-MM-DD.md when it stops."
        )
    return (
        f"noteseek: {stats.memories} memories in {folder.path}{newest}. The ones that match "
        "each prompt are shown with it; for more, search_memories (MCP) or `noteseek memory "
        "search`, and open a result's path:line with get_section or `noteseek get`."
    )


def recall(engine: Engine, prompt: str) -> str:
    """The memories that answer ``prompt`` as the agent is shown them: at most
    ``hooks.prompt_results`` within ``hooks.prompt_chars``, each with its ``path:line``;
    empty when none holds enough of its content words (``hooks.min_terms``)."""
    shown = recalled(engine, prompt)
    if not shown:
        return ""
    return "\n".join([HEADER, *(f"- {hit.path}:{hit.start_line}: {text}" for hit, text in shown)])


def recalled(engine: Engine, prompt: str) -> list[tuple[Hit, str]]:
    """The results :func:`recall` shows, each with the text shown (cut to its share)."""
    hooks = engine.settings.hooks
    analyzer = engine.analyzer()
    words = [w for w in content_words(prompt, analyzer) if w not in CHAT_WORDS]
    terms = {t for w in words for t in analyzer.terms(w)}
    if not terms or hooks.prompt_results == 0:
        return []
    need = min(hooks.min_terms, len(terms))
    room = hooks.prompt_chars - len(HEADER)
    each = max(MIN_SNIPPET_CHARS, room // hooks.prompt_results)
    # Keyword: on held-out LoCoMo logs meaning added nothing for memories (docs/evaluation.md),
    # and it needs no model, so a cold hook answers in well under a second.
    request = SearchRequest(
        " ".join(words)[:MAX_QUERY_CHARS],
        top_k=hooks.prompt_results * 4,
        mode="keyword",
        source=ALL_SCOPE if hooks.documents else MEMORY_SCOPE,
        with_text=True,
        snippets=False,
        # Each result grows around what matched to the share of the budget it may fill.
        expand_chars=int(min(each, EXPAND_CHARS.high)),
    )
    kept: list[Hit] = []
    for hit in engine.search(request).hits:
        if not hit.text:  # its section is in a better result's grown text
            continue
        held = set(analyzer.terms(" ".join([hit.title, *hit.heading_path, hit.text])))
        if len(terms & held) >= need:
            kept.append(hit)
        if len(kept) == hooks.prompt_results:
            break
    if not kept:
        return []
    each = room // len(kept)
    shown = []
    for hit in kept:
        space = each - 1 - len(f"- {hit.path}:{hit.start_line}: ")
        if space < MIN_SNIPPET_CHARS // 2:
            break
        shown.append((hit, _shortened(hit.text or "", space)))
    return shown


def capture(
    engine: Engine, session_id: str, transcript_path: str, *, when: dt.datetime | None = None
) -> str:
    """Summarise the session's transcript into its one entry of the daily log; what was done,
    in one line."""
    if not session_id or not transcript_path:
        return "nothing to capture: the payload names no session_id or transcript_path"
    if not valid_session_id(session_id):
        raise ValueError(
            "the session id is not an id (letters, digits and -_. only, at most 128 "
            "characters): nothing captured"
        )
    path = Path(transcript_path).expanduser()
    transcript = read_transcript(path)
    turns = transcript.turns
    if not turns:
        return f"nothing to capture: {path} holds no user or assistant turns"
    if not any(t.role == "assistant" for t in turns):
        # A prompt that was never answered (the session was closed, or failed, at once) says
        # nothing worth keeping; its entry would be the prompt alone, again and again.
        return f"nothing to capture: {path} holds no answer from the agent yet"
    if engine.memories.session_turns(session_id, when=when) == len(turns):
        return f"session {session_id} is captured up to its last turn already"
    from noteseek.sources.memory.summarize import Passage

    passages = [Passage(f"{t.role} turn", t.text, t.line, t.line) for t in turns]
    limit = engine.settings.hooks.capture_chars
    summary = engine.memories.summarizer().summarize(passages, max_chars=limit).text
    summary = without_session_lines(summary)
    if not summary.strip():
        summary = _shortened(turns[-1].text, limit)
    first = next((t.text for t in turns if t.role == "user"), turns[0].text)
    moment = when.astimezone() if when is not None else dt.datetime.now().astimezone()
    entry = SessionEntry(
        session_id,
        len(turns),
        _shown_path(path),
        session_title(first),
        summary,
        f"{moment:%H:%M}",
    )
    written = engine.memories.record_session(entry, when=moment)
    return f"{written.result.message} ({len(turns)} turns; {written.indexed})"


def _shortened(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 3)].rsplit(" ", 1)[0] + "..."


def _shown_path(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return (
        "~" + text[len(home) :] if home not in ("", "/") and text.startswith(home + "/") else text
    )


def recall_memories(ctx: Context, p: RecallPrompt) -> dict[str, Any]:
    """:func:`recall` as an operation: what ``noteseek hook prompt`` asks a running server."""
    return {"text": recall(ctx.engine, p.prompt)}
