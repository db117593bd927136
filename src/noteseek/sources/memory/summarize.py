"""Summarisers for agent memory: passages in, a short Markdown bullet list out (memory flush).

Two stand behind one interface (:class:`Summarizer`):

* :class:`ChatSummarizer` asks any OpenAI-compatible chat model (Ollama, llama.cpp, vLLM, a
  hosted API) to compress the passages, with a prompt a user may replace.
* :class:`ExtractiveSummarizer` needs no LLM, so flush works on a fresh machine: it splits the
  passages into sentences, embeds them, and keeps the most central ones (those closest in
  meaning to everything else), skipping near-duplicates of sentences already kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from noteseek.config import ConfigError
from noteseek.embed.base import Vectors, normalize
from noteseek.embed.chat import ChatClient, ChatError
from noteseek.parse.dialect import WIKILINK_RE, split_wikilink


@dataclass(frozen=True)
class Passage:
    """A piece of a document to summarise; ``source`` names the document ("memory/2026-11-20")."""

    source: str
    text: str
    start_line: int = 0
    end_line: int = 0


@dataclass
class Summary:
    text: str
    """Markdown bullets; empty when there was nothing to summarise."""
    sources: list[str]
    """The distinct sources the summary draws on, in order of first appearance."""
    method: str
    """``extractive`` or ``llm:<model>``."""


@runtime_checkable
class Summarizer(Protocol):
    name: str

    def summarize(self, passages: Sequence[Passage], *, max_chars: int) -> Summary:
        """A summary of ``passages`` whose text is at most ``max_chars`` characters long."""
        ...


# -- sentences ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    source: str
    text: str
    """Plain text, what is embedded (no Markdown markup, speaker or task box)."""
    display: str
    """The Markdown a summary shows: the speaker, task box and links are kept."""
    line: int
    """Line of the block it starts in (counted from the passage's ``start_line``)."""


_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# Headings, table rows, HTML comments, thematic breaks and setext underlines, link definitions.
_SKIP_RE = re.compile(r"^\s{0,3}(#{1,6}(\s|$)|\||<!--|([-*_=]\s*){3,}$|\[[^\]]+\]:\s)")
_QUOTE_RE = re.compile(r"^\s{0,3}>\s?")
_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_TASK_RE = re.compile(r"^\[([ xX])\]\s+")
_SPEAKER_RE = re.compile(r"^\*\*([^*\n]{1,60}?)(?::\*\*|\*\*:)\s+")
# A sentence ends at . ! ? (and closing quotes or brackets) before a capital, digit or quote.
_BOUNDARY_RE = re.compile(r"[.!?…]+[\"'”’)\]*_]*\s+(?=[\"'“‘(\[*_`]*[A-Z0-9])")
_LAST_WORD_RE = re.compile(r"(\w[\w.]*)$")
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "e.g", "i.e", "inc", "ltd", "jr", "sr", "cf"}
    | {"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)
_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP_RE = re.compile(r"\*\*|__|`")
_WORD_RE = re.compile(r"\w+")
_SPACE_RE = re.compile(r"\s+")


@dataclass
class _Block:
    line: int
    speaker: str = ""
    task: str = ""
    parts: list[str] = field(default_factory=list)


def split_sentences(passages: Sequence[Passage], *, min_words: int = 3) -> list[Sentence]:
    """The sentences of ``passages`` in order, with their Markdown structure removed.

    Headings, code blocks, tables and front matter are dropped; bullets, quotes and task boxes
    are unwrapped; ``**Speaker:** text`` lines keep their speaker on each sentence's display.
    Sentences of fewer than ``min_words`` words ("Thanks!", "Hey Mel!") are left out.
    """
    out: list[Sentence] = []
    for passage in passages:
        for block in _blocks(passage.text, passage.start_line):
            text = _SPACE_RE.sub(" ", " ".join(block.parts)).strip()
            for i, sentence in enumerate(_sentences(text)):
                plain = _plain(sentence)
                if len(_WORD_RE.findall(plain)) < min_words:
                    continue
                task = block.task if i == 0 else ""
                display = f"{block.speaker}{task}{sentence}"
                out.append(Sentence(passage.source, plain, display, block.line))
    return out


def _blocks(text: str, first_line: int) -> Iterator[_Block]:
    lines = text.splitlines()
    start = _front_matter_end(lines)
    block: _Block | None = None
    fence = ""
    for number, raw in enumerate(lines[start:], start=first_line + start):
        if fence:
            if raw.strip().startswith(fence):
                fence = ""
            continue
        line = raw
        while _QUOTE_RE.match(line):
            line = _QUOTE_RE.sub("", line, count=1)
        opening = _FENCE_RE.match(line)
        if opening or not line.strip() or _SKIP_RE.match(line):
            if block:
                yield block
            block = None
            fence = opening.group(1) if opening else ""
            continue
        item = _ITEM_RE.match(line)
        speaker = _SPEAKER_RE.match(line[item.end() :] if item else line)
        if item or speaker or block is None:
            if block:
                yield block
            block = _Block(number)
            line = line[item.end() :] if item else line.strip()
            task = _TASK_RE.match(line)
            if task:
                block.task, line = f"[{task.group(1)}] ", line[task.end() :]
            speaker = _SPEAKER_RE.match(line)
            if speaker:
                block.speaker, line = f"**{speaker.group(1)}:** ", line[speaker.end() :]
        block.parts.append(line.strip())
    if block:
        yield block


def _front_matter_end(lines: list[str]) -> int:
    """How many leading lines a YAML front matter block takes (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY_RE.finditer(text):
        word = _LAST_WORD_RE.search(text, start, match.start())
        before = word.group(1).lower() if word else ""
        if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
            continue  # "Dr. Smith", "J. Doe", "e.g. Redis"
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _plain(markdown: str) -> str:
    text = WIKILINK_RE.sub(_link_words, markdown)
    text = _LINK_RE.sub(r"\1", text)
    return _SPACE_RE.sub(" ", _MARKUP_RE.sub("", text)).strip()


def _link_words(match: re.Match[str]) -> str:
    """What a wikilink reads as: its label, else its target (or heading)."""
    parts = split_wikilink(match.group(2))
    if parts is None:
        return ""
    target, anchor, display = parts
    return display or target or anchor or ""


# -- extractive --------------------------------------------------------------------------------

Embed = Callable[[list[str]], Vectors]
"""Texts to float32 rows of unit length (an embedder's ``embed_documents``)."""


def centrality(vectors: Vectors) -> npt.NDArray[np.float64]:
    """Each row's mean cosine similarity to every other row.

    This is degree centrality on the complete graph weighted by cosine, chosen over LexRank's
    power iteration for two reasons: a random walk on an undirected weighted graph has its
    stationary distribution proportional to the weighted degree, so undamped continuous
    LexRank ranks exactly like this; and the sum of a row's cosines to all rows is its dot
    product with the sum of the rows, so it costs O(n·d) instead of an n×n matrix.
    """
    n = len(vectors)
    if n < 2:
        return np.ones(n)
    rows = vectors.astype(np.float64)
    own = np.einsum("ij,ij->i", rows, rows)  # 1 for unit rows, 0 for empty texts' zero rows
    result: npt.NDArray[np.float64] = (rows @ rows.sum(axis=0) - own) / (n - 1)
    return result


class ExtractiveSummarizer:
    """Central sentences, near-duplicates and small talk left out, in their original order.

    Needs no LLM. Each sentence scores its :func:`centrality` minus ``small_talk`` times its
    highest cosine to a few fixed small-talk sentences ("Thanks so much for sharing!"): in
    dialogue-like logs small talk is the largest cluster, so centrality alone would fill the
    summary with it (measured on LoCoMo's chats), while notes of facts barely change. The
    best-scoring sentences are taken greedily while they fit ``max_chars``, skipping any too
    similar to one already taken (the threshold form of maximal marginal relevance).

    Too similar means a cosine of at least ``redundancy`` once rescaled so that the
    embedder's cosine for unrelated sentences maps to 0 and identity to 1: models differ
    widely there (bge-small puts unrelated sentences near 0.45, MiniLM near 0.05), and a raw
    0.85 would make bge merge sentences that merely share a topic. That level is measured
    once per summariser on fixed unrelated sentences, not on the input, whose sentences may
    all share one topic.

    Deterministic: ties go to the earlier sentence. At most ``max_sentences`` sentences are
    considered, spread evenly over the input so every period of it still counts; the cap
    bounds the embedding cost (the bundled model embeds about 100 sentences a second on one
    core), since scoring and selection take milliseconds even for thousands of sentences.
    """

    name = "extractive"

    def __init__(
        self,
        embed: Embed,
        *,
        redundancy: float = 0.85,
        small_talk: float = 1.0,
        max_sentences: int = 1000,
        min_words: int = 3,
    ) -> None:
        self.embed = embed
        self.redundancy = redundancy
        self.small_talk = small_talk
        self.max_sentences = max(1, max_sentences)
        self.min_words = min_words
        self._calibration: tuple[float, Vectors] | None = None

    @property
    def threshold(self) -> float:
        """The raw cosine at which two sentences count as saying the same thing."""
        unrelated = self._calibrate()[0]
        return unrelated + self.redundancy * (1.0 - unrelated)

    def summarize(self, passages: Sequence[Passage], *, max_chars: int) -> Summary:
        sentences = _spread(split_sentences(passages, min_words=self.min_words), self.max_sentences)
        if not sentences or max_chars <= 0:
            return Summary("", [], self.name)
        vectors = self._vectors([s.text for s in sentences])
        scores = self.scores(vectors)
        chosen = self._select(sentences, vectors, scores, max_chars)
        if not chosen:  # not even one sentence fits: the best one, cut short
            best = sentences[int(np.argmax(scores))]
            clipped = _clip(best.display, max_chars - 2)
            if not clipped.strip("…"):
                return Summary("", [], self.name)
            return Summary(f"- {clipped}", [best.source], self.name)
        picked = [sentences[i] for i in sorted(chosen)]
        text = "\n".join(f"- {s.display}" for s in picked)
        return Summary(text, list(dict.fromkeys(s.source for s in picked)), self.name)

    def scores(self, vectors: Vectors) -> npt.NDArray[np.float64]:
        """Each sentence's score: centrality, less its likeness to small talk."""
        scores = centrality(vectors)
        if self.small_talk and len(vectors):
            chatter = (vectors @ self._calibrate()[1].T).max(axis=1).astype(np.float64)
            scores = scores - self.small_talk * chatter
        return scores

    def _calibrate(self) -> tuple[float, Vectors]:
        """The embedder's cosine for unrelated sentences, and the small-talk vectors."""
        if self._calibration is None:
            vectors = self._vectors([*_UNRELATED, *_SMALL_TALK])
            unrelated, n = vectors[: len(_UNRELATED)], len(_UNRELATED)
            level = float((unrelated @ unrelated.T).sum() - n) / (n * (n - 1))
            self._calibration = (min(max(level, 0.0), 0.9), vectors[n:])
        return self._calibration

    def _vectors(self, texts: list[str]) -> Vectors:
        """One row per text; a text repeated in the input is embedded once."""
        unique = list(dict.fromkeys(texts))
        matrix = np.asarray(self.embed(unique), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(unique):
            raise ValueError(
                f"the embedder gave an array of shape {matrix.shape} for {len(unique)} texts"
            )
        where = {text: i for i, text in enumerate(unique)}
        return normalize(matrix[[where[t] for t in texts]])

    def _select(
        self,
        sentences: list[Sentence],
        vectors: Vectors,
        scores: npt.NDArray[np.float64],
        max_chars: int,
    ) -> list[int]:
        sizes = [len(s.display) + 2 for s in sentences]  # "- " before each
        smallest = min(sizes)
        threshold = self.threshold
        chosen: list[int] = []
        used = -1  # no newline before the first line
        for i in np.argsort(-scores, kind="stable").tolist():
            if used + 1 + sizes[i] > max_chars:
                continue
            if chosen and float(np.max(vectors[chosen] @ vectors[i])) >= threshold:
                continue
            chosen.append(i)
            used += 1 + sizes[i]
            if used + 1 + smallest > max_chars:
                break
        return chosen


_UNRELATED = (
    "The recipe needs two eggs and a cup of flour.",
    "Our train to Lyon leaves from platform four at nine.",
    "Quarterly revenue grew by eight percent.",
    "The cat sleeps on the windowsill all afternoon.",
    "Tighten the bolts before you mount the wheel.",
    "The museum opens an exhibition of Dutch paintings.",
    "She scored twice in the second half of the match.",
    "Water boils at a lower temperature on a mountain.",
)
"""Sentences about nothing in common: their mean cosine is the embedder's level for
unrelated text."""

_SMALL_TALK = (
    "That's great to hear!",
    "Thanks so much for sharing that with me.",
    "You're doing an amazing job, I'm so proud of you.",
    "Sounds like a lot of fun!",
    "Take care and talk to you soon.",
    "I really appreciate your support and kind words.",
    "Wow, that's really cool.",
    "How have you been lately?",
    "Good to see you again!",
)


def _spread(items: list[Sentence], cap: int) -> list[Sentence]:
    """At most ``cap`` items, evenly spaced over ``items``, in order."""
    if len(items) <= cap:
        return items
    return [items[i] for i in (np.arange(cap) * len(items) // cap).tolist()]


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


# -- chat model --------------------------------------------------------------------------------

DEFAULT_PROMPT = """\
You compress the memory notes of an AI agent. Summarise the memories below into a concise \
Markdown bullet list of the durable facts, decisions and open tasks they contain. Keep names, \
dates, numbers, file paths and [[links]] exactly as written. Leave out small talk and anything \
a later memory supersedes (memories are listed oldest first). Answer with the bullet list \
only: no preamble, no closing remarks.

{memories}
"""

MEMORIES = "{memories}"
"""Where a prompt wants the passages; a prompt without it gets them appended."""

_THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_WRAPPING_FENCE_RE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)


class ChatSummarizer:
    """A summary written by a chat model behind an OpenAI-compatible endpoint.

    Passages are labelled by source and sent oldest first, in the order given (flush passes
    them in date order). When they exceed ``max_input_chars`` the oldest are left out whole,
    because a later memory is likelier to be current (a decision revised, a task closed);
    ``Summary.sources`` lists only what was sent. The answer is cleaned (a reasoning model's
    ``<think>`` block and a fence around the whole answer removed) and cut to ``max_chars`` at
    a line break, so no bullet is left half-written.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        prompt: str | None = None,
        max_input_chars: int = 24_000,
    ) -> None:
        self.client = client
        self.prompt = prompt if prompt is not None else DEFAULT_PROMPT
        self.max_input_chars = max(1, max_input_chars)
        self.name = f"llm:{client.model}"

    def summarize(self, passages: Sequence[Passage], *, max_chars: int) -> Summary:
        sent = self._fitting(passages)
        if not sent or max_chars <= 0:
            return Summary("", [], self.name)
        memories = "\n\n".join(_label(p) for p in sent)
        if MEMORIES in self.prompt:
            content = self.prompt.replace(MEMORIES, memories)
        else:
            content = f"{self.prompt.rstrip()}\n\n{memories}"
        answer = self.client.complete(
            [{"role": "user", "content": content}], max_tokens=max(256, max_chars // 2)
        )
        text = _trim(_clean(answer), max_chars)
        if not text:
            raise ChatError(
                f"{self.client.endpoint} (model {self.client.model}): the model answered with "
                "no summary text"
            )
        return Summary(text, list(dict.fromkeys(p.source for p in sent)), self.name)

    def _fitting(self, passages: Sequence[Passage]) -> list[Passage]:
        """The newest passages whose labelled text fits the input budget, oldest first."""
        kept: list[Passage] = []
        used = 0
        for passage in reversed(passages):
            if not passage.text.strip():
                continue
            size = len(_label(passage)) + 2
            if used + size > self.max_input_chars:
                if not kept:  # the newest alone is too long: its start
                    room = self.max_input_chars - len(_label(Passage(passage.source, "")))
                    kept.append(_with_text(passage, _clip(passage.text, max(room, 0))))
                break
            kept.append(passage)
            used += size
        return kept[::-1]


def _label(passage: Passage) -> str:
    lines = ""
    if passage.start_line and passage.end_line:
        lines = f" (lines {passage.start_line}-{passage.end_line})"
    return f"--- {passage.source}{lines} ---\n{passage.text.strip()}"


def _with_text(passage: Passage, text: str) -> Passage:
    return Passage(passage.source, text, passage.start_line, passage.end_line)


def _clean(answer: str) -> str:
    text = _THINK_RE.sub("", answer).strip()
    fenced = _WRAPPING_FENCE_RE.match(text)
    return fenced.group(1).strip() if fenced else text


def _trim(text: str, max_chars: int) -> str:
    """``text`` within ``max_chars``: whole lines when the first fits, else its start."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars + 1].rfind("\n")
    if cut > 0:
        return text[:cut].rstrip()
    return _clip(text, max_chars)


def load_prompt(path: Path) -> str:
    """The text of a prompt file (``flush.prompt_file``); ConfigError says what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"prompt file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"prompt file {path} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"prompt file {path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"prompt file {path} cannot be read: {exc.strerror or exc}") from None
    if not text.strip():
        raise ConfigError(f"prompt file {path} is empty")
    return text
