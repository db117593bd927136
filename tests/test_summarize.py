"""The memory summarisers: the chat client and LLM summariser against a real HTTP server on
loopback, the extractive summariser with the bundled embedding model.

The chat server (tests/fake_openai_chat.py) is a fake, stated as such: no LLM can run in this
test environment, so a small process speaks the OpenAI chat API with canned answers and
records what it receives. Everything on the client's side of the socket is real.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from noteseek.config import ConfigError
from noteseek.embed.chat import ChatClient, ChatError
from noteseek.embed.onnx import MODELS, OnnxEmbedder
from noteseek.sources.memory.summarize import (
    DEFAULT_PROMPT,
    ChatSummarizer,
    ExtractiveSummarizer,
    Passage,
    Summarizer,
    Summary,
    load_prompt,
    split_sentences,
)

KEY = "sk-test-5f1c9a7e2b4d8c6f0a3e"
FAKE_SERVER = Path(__file__).with_name("fake_openai_chat.py")


# -- the fake chat server ------------------------------------------------------------------------


class FakeChat:
    """Drives the fake server process through its control routes."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.base_url = f"{root}/v1"

    def _post(self, path: str, payload: Any) -> None:
        httpx.post(self.root + path, json=payload, timeout=5).raise_for_status()

    def reset(self) -> None:
        self._post("/_reset", {})

    def script(self, *steps: dict[str, Any]) -> None:
        self._post("/_script", list(steps))

    def reply(self, content: str) -> None:
        self._post("/_reply", {"content": content})

    def requests(self) -> list[dict[str, Any]]:
        answer: list[dict[str, Any]] = httpx.get(self.root + "/_requests", timeout=5).json()
        return answer

    def client(self, **kw: Any) -> ChatClient:
        kw.setdefault("backoff", 0.01)
        return ChatClient(base_url=self.base_url, model="llama3.2:3b", **kw)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeChat]:
    proc = subprocess.Popen([sys.executable, str(FAKE_SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield FakeChat(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def chat(fake_server: FakeChat) -> FakeChat:
    fake_server.reset()
    return fake_server


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


# -- ChatClient ----------------------------------------------------------------------------------


def test_sends_model_messages_and_key_and_returns_the_first_choice(chat: FakeChat) -> None:
    chat.reply("- Sessions live in PostgreSQL 16.")
    messages = [{"role": "user", "content": "compress this"}]
    with chat.client(api_key=KEY) as client:
        assert client.complete(messages, max_tokens=300) == "- Sessions live in PostgreSQL 16."
    (request,) = chat.requests()
    assert request["body"] == {
        "model": "llama3.2:3b",
        "messages": messages,
        "temperature": 0.2,
        "max_tokens": 300,
    }
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"


def test_no_key_sends_no_authorization_header(chat: FakeChat) -> None:
    chat.client().complete([{"role": "user", "content": "x"}])
    assert "Authorization" not in chat.requests()[0]["headers"]


def test_a_server_error_is_retried_then_answered(chat: FakeChat) -> None:
    chat.script({"status": 500, "body": {"error": {"message": "model is loading"}}})
    client = chat.client(retries=2)
    assert client.complete([{"role": "user", "content": "x"}]).startswith("- 1 message")
    assert len(chat.requests()) == 2 and client.requests == 2


def test_retry_after_is_honoured(chat: FakeChat) -> None:
    chat.script(
        {
            "status": 429,
            "body": {"error": {"message": "slow down"}},
            "headers": {"Retry-After": "0.3"},
        }
    )
    started = time.monotonic()
    chat.client(retries=1).complete([{"role": "user", "content": "x"}])
    assert time.monotonic() - started >= 0.3
    assert len(chat.requests()) == 2


def test_gives_up_after_the_retries(chat: FakeChat) -> None:
    busy = {"status": 503, "body": {"error": {"message": "overloaded"}}}
    chat.script(busy, busy, busy, busy)
    with pytest.raises(ChatError, match=r"HTTP 503: overloaded \(gave up after 3 attempts\)"):
        chat.client(retries=2).complete([{"role": "user", "content": "x"}])
    assert len(chat.requests()) == 3


def test_unauthorised_fails_at_once_with_the_server_message_and_no_key(chat: FakeChat) -> None:
    # Hosted APIs echo (part of) a wrong key in their error body; it must not reach us.
    chat.script(
        {"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY}."}}}
    )
    client = chat.client(api_key=KEY, retries=3)
    with pytest.raises(ChatError) as caught:
        client.complete([{"role": "user", "content": "x"}])
    message = str(caught.value)
    assert len(chat.requests()) == 1
    assert f"{chat.base_url}/chat/completions" in message and "llama3.2:3b" in message
    assert "HTTP 401: Incorrect API key provided: ***." in message
    assert KEY not in message and KEY[:12] not in message


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({"raw": "<html>Bad Gateway</html"}, "the answer is not JSON: '<html>Bad Gateway"),
        ({"body": {"choices": []}}, "the answer has no choices"),
        ({"body": {"choices": [{"message": {"content": None}}]}}, "has no message content"),
        ({"body": ["not", "an", "object"]}, "not a chat completion"),
    ],
)
def test_malformed_answers_are_clear_errors(
    chat: FakeChat, step: dict[str, Any], expected: str
) -> None:
    chat.script(step)
    with pytest.raises(ChatError, match=expected.replace("(", r"\(")):
        chat.client(api_key=KEY).complete([{"role": "user", "content": "x"}])


def test_a_slow_answer_times_out(chat: FakeChat) -> None:
    chat.script({"delay": 2.0}, {"delay": 2.0})
    started = time.monotonic()
    with pytest.raises(ChatError, match=r"timed out after 0.2 s \(gave up after 2 attempts\)"):
        chat.client(timeout=0.2, retries=1).complete([{"role": "user", "content": "x"}])
    assert time.monotonic() - started < 1.5


def test_a_refused_connection_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = ChatClient(base_url=url, model="m", api_key=KEY, retries=1, backoff=0.01)
    with pytest.raises(ChatError, match="cannot connect") as caught:
        client.complete([{"role": "user", "content": "x"}])
    assert url in str(caught.value) and KEY not in str(caught.value)


def test_the_key_is_never_shown_nor_logged(
    chat: FakeChat, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = chat.client(api_key=KEY, retries=1)
    assert KEY not in repr(client) and "api_key=set" in repr(client)
    chat.script({"status": 502, "body": {"error": {"message": f"proxy saw Bearer {KEY}"}}})
    client.complete([{"role": "user", "content": "x"}])  # one retry, logged
    assert "retrying" in caplog.text and "proxy saw Bearer ***" in caplog.text
    assert KEY not in caplog.text
    secret_url = ChatClient(base_url="http://user:hunter2@127.0.0.1:1/v1", model="m")
    assert "hunter2" not in repr(secret_url)


def test_a_model_name_is_required() -> None:
    with pytest.raises(ChatError, match="model name"):
        ChatClient(base_url="http://127.0.0.1:1/v1", model="")


# -- ChatSummarizer ------------------------------------------------------------------------------

MEMORIES = [
    Passage("memory/2026-11-18", "- Decided to move sessions to PostgreSQL 16.", 3, 3),
    Passage(
        "memory/2026-11-19", "- The migration ran on staging.\n- Deploys are on Fridays.", 3, 4
    ),
    Passage("auth-decisions", "Refresh tokens expire after 30 days."),
]


def sent_prompt(chat: FakeChat) -> str:
    (request,) = chat.requests()
    (message,) = request["body"]["messages"]
    assert message["role"] == "user"
    content: str = message["content"]
    return content


def test_chat_summary_labels_passages_by_source_with_the_default_prompt(chat: FakeChat) -> None:
    chat.reply("- Sessions moved to PostgreSQL 16 (2026-11-18).\n- Deploys: Fridays.")
    summarizer = ChatSummarizer(chat.client(api_key=KEY))
    assert isinstance(summarizer, Summarizer) and summarizer.name == "llm:llama3.2:3b"
    summary = summarizer.summarize(MEMORIES, max_chars=2000)
    assert summary == Summary(
        "- Sessions moved to PostgreSQL 16 (2026-11-18).\n- Deploys: Fridays.",
        ["memory/2026-11-18", "memory/2026-11-19", "auth-decisions"],
        "llm:llama3.2:3b",
    )
    prompt = sent_prompt(chat)
    assert prompt.startswith(DEFAULT_PROMPT.split("{memories}")[0])
    assert "--- memory/2026-11-18 (lines 3-3) ---\n- Decided to move sessions" in prompt
    assert "--- auth-decisions ---\nRefresh tokens expire after 30 days." in prompt
    assert prompt.index("2026-11-18") < prompt.index("2026-11-19") < prompt.index("auth-")


def test_a_prompt_file_places_the_memories_or_gets_them_appended(
    chat: FakeChat, tmp_path: Path
) -> None:
    (tmp_path / "p.md").write_text("Facts only.\n\n{memories}\n\nEnd of memories.\n")
    ChatSummarizer(chat.client(), prompt=load_prompt(tmp_path / "p.md")).summarize(
        MEMORIES[:1], max_chars=500
    )
    assert sent_prompt(chat) == (
        "Facts only.\n\n--- memory/2026-11-18 (lines 3-3) ---\n"
        "- Decided to move sessions to PostgreSQL 16.\n\nEnd of memories.\n"
    )
    chat.reset()
    ChatSummarizer(chat.client(), prompt="Facts only.\n").summarize(MEMORIES[:1], max_chars=500)
    assert sent_prompt(chat).startswith("Facts only.\n\n--- memory/2026-11-18")


def test_input_over_budget_drops_the_oldest_passages(chat: FakeChat) -> None:
    summarizer = ChatSummarizer(chat.client(), max_input_chars=170)  # the two newest fit
    summary = summarizer.summarize(MEMORIES, max_chars=500)
    prompt = sent_prompt(chat)
    assert "2026-11-18" not in prompt and "2026-11-19" in prompt and "auth-decisions" in prompt
    assert summary.sources == ["memory/2026-11-19", "auth-decisions"]
    chat.reset()
    huge = Passage("memory/2026-11-21", "word " * 1000)
    ChatSummarizer(chat.client(), max_input_chars=300).summarize([huge], max_chars=500)
    memories = sent_prompt(chat)[len(DEFAULT_PROMPT.split("{memories}")[0]) :]
    assert len(memories.strip()) <= 300 and memories.strip().endswith("…")


def test_the_answer_is_cleaned_and_cut_at_a_line_within_max_chars(chat: FakeChat) -> None:
    bullets = "\n".join(f"- fact number {i} about the session store" for i in range(20))
    chat.reply(f"<think>The user wants bullets.</think>\n```markdown\n{bullets}\n```")
    summary = ChatSummarizer(chat.client()).summarize(MEMORIES, max_chars=200)
    assert len(summary.text) <= 200 and summary.text.startswith("- fact number 0")
    assert summary.text.splitlines()[-1].endswith("store")  # no half bullet
    assert "<think>" not in summary.text and "```" not in summary.text
    assert chat.requests()[0]["body"]["max_tokens"] == 256


def test_nothing_to_summarise_asks_no_model(chat: FakeChat) -> None:
    summary = ChatSummarizer(chat.client()).summarize([], max_chars=500)
    assert summary == Summary("", [], "llm:llama3.2:3b") and chat.requests() == []


def test_an_empty_answer_is_an_error(chat: FakeChat) -> None:
    chat.reply("<think>hmm</think>\n  ")
    with pytest.raises(ChatError, match="no summary text"):
        ChatSummarizer(chat.client()).summarize(MEMORIES, max_chars=500)


def test_load_prompt_reports_missing_unreadable_and_empty_files(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("Summarise:\n{memories}\n")
    assert load_prompt(tmp_path / "ok.md") == "Summarise:\n{memories}\n"
    with pytest.raises(ConfigError, match="does not exist"):
        load_prompt(tmp_path / "nope.md")
    with pytest.raises(ConfigError, match="is a folder"):
        load_prompt(tmp_path)
    (tmp_path / "blank.md").write_text("  \n\n")
    with pytest.raises(ConfigError, match="is empty"):
        load_prompt(tmp_path / "blank.md")
    (tmp_path / "latin1.md").write_bytes("Résumé".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_prompt(tmp_path / "latin1.md")


# -- sentences -----------------------------------------------------------------------------------


def test_split_sentences_reads_markdown_memory_layouts() -> None:
    text = (
        "---\ntype: journal\ntags: [auth]\n---\n# 2026-11-20\n\n## 09:12 session\n\n"
        "- Decided on **PostgreSQL 16**. See [[auth-decisions|the decision]] for why.\n"
        "- [ ] Rotate the signing key before Dec. 1 this year. It expires then.\n"
        "  A continuation line of that task.\n"
        "**Caroline:** I went to a support group yesterday. Thanks!\n\n"
        "> A quoted line about the [docs](https://example.org) page.\n\n"
        "```python\nprint('Code is dropped entirely.')\n```\n"
        "| a table | row |\n|---|---|\n"
    )
    got = [(s.line, s.display, s.text) for s in split_sentences([Passage("m", text, 1, 20)])]
    assert got == [
        (9, "Decided on **PostgreSQL 16**.", "Decided on PostgreSQL 16."),
        (9, "See [[auth-decisions|the decision]] for why.", "See the decision for why."),
        (
            10,
            "[ ] Rotate the signing key before Dec. 1 this year.",
            "Rotate the signing key before Dec. 1 this year.",
        ),
        (10, "It expires then.", "It expires then."),
        (10, "A continuation line of that task.", "A continuation line of that task."),
        (
            12,
            "**Caroline:** I went to a support group yesterday.",
            "I went to a support group yesterday.",
        ),
        (
            14,
            "A quoted line about the [docs](https://example.org) page.",
            "A quoted line about the docs page.",
        ),
    ]


# -- ExtractiveSummarizer ------------------------------------------------------------------------

NOTES = [
    Passage(
        "memory/2026-11-18",
        "# 2026-11-18\n\n## 10:02 session\n\n"
        "- Decided to move the session store from Redis to PostgreSQL 16, because Redis lost "
        "sessions on every restart.\n"
        "- The auth service issues refresh tokens that expire after 30 days.\n"
        "- [ ] Write the migration script for the sessions table.\n"
        "- Alice prefers pull requests under 400 lines.\n",
        1,
        8,
    ),
    Passage(
        "memory/2026-11-19",
        "# 2026-11-19\n\n"
        "- The session store migration to PostgreSQL ran on staging without errors.\n"
        "- Deploys run every Friday at 16:00 UTC.\n"
        "- We had pizza for lunch with the whole team today.\n"
        "- The sessions table in PostgreSQL got an index on user_id and expires_at.\n\n"
        "```sql\nCREATE INDEX sessions_user ON sessions (user_id, expires_at);\n```\n",
        1,
        10,
    ),
    Passage(
        "memory/2026-11-20",
        "# 2026-11-20\n\n"
        "- The production session store now runs on PostgreSQL 16 and Redis was switched off.\n"
        "- The deploy happens every Friday at 16:00 UTC.\n"
        "- Bob will review the auth changes on Monday.\n",
        1,
        5,
    ),
    Passage(
        "auth-decisions",
        "## Sessions\n\nSessions are stored in PostgreSQL, not Redis, since 2026-11-20. Refresh "
        "tokens expire after 30 days and access tokens after 15 minutes.\n",
        1,
        3,
    ),
]
DEPLOYS = (
    "- Deploys run every Friday at 16:00 UTC.",
    "- The deploy happens every Friday at 16:00 UTC.",
)


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(MODELS["bge-small-en"], threads=1)


@pytest.mark.embeddings
def test_extractive_summary_drops_near_duplicates_and_keeps_the_bound(
    embedder: OnnxEmbedder,
) -> None:
    summarizer = ExtractiveSummarizer(embedder.embed_documents)
    assert isinstance(summarizer, Summarizer) and summarizer.name == "extractive"
    deploys = embedder.embed_documents([d[2:] for d in DEPLOYS])
    assert float(deploys[0] @ deploys[1]) >= summarizer.threshold  # near-duplicates indeed
    everything = summarizer.summarize(NOTES, max_chars=10_000)
    lines = everything.text.splitlines()
    assert sum(line in DEPLOYS for line in lines) == 1
    assert all(line.startswith("- ") for line in lines)
    assert not any("CREATE INDEX" in line or line.startswith("- #") for line in lines)
    assert everything.sources == [
        "memory/2026-11-18",
        "memory/2026-11-19",
        "memory/2026-11-20",
        "auth-decisions",
    ]
    # In the order of the input, whatever their rank.
    sentences = split_sentences(NOTES)
    positions = [[s.display for s in sentences].index(line[2:]) for line in lines]
    assert positions == sorted(positions)
    for budget in (60, 90, 150, 300, 450):
        summary = summarizer.summarize(NOTES, max_chars=budget)
        assert 0 < len(summary.text) <= budget
        shown = summary.text.splitlines()
        chosen = [s.source for s in sentences if f"- {s.display}" in shown]
        assert summary.sources == list(dict.fromkeys(chosen))
        assert summary == summarizer.summarize(NOTES, max_chars=budget)  # deterministic
    tiny = summarizer.summarize(NOTES, max_chars=30)
    assert len(tiny.text) <= 30 and tiny.text.endswith("…") and len(tiny.sources) == 1


@pytest.mark.embeddings
def test_the_most_central_sentence_comes_first(embedder: OnnxEmbedder) -> None:
    sentences = split_sentences(NOTES)
    vectors = embedder.embed_documents([s.text for s in sentences])
    similarity = vectors @ vectors.T
    mean_to_others = (similarity.sum(axis=1) - 1) / (len(sentences) - 1)
    central = sentences[int(np.argmax(mean_to_others))].display
    assert "session store" in central or "Sessions are stored" in central  # the notes' theme
    pure = ExtractiveSummarizer(embedder.embed_documents, small_talk=0.0)
    assert pure.summarize(NOTES, max_chars=len(central) + 2).text == f"- {central}"
    default = ExtractiveSummarizer(embedder.embed_documents).summarize(NOTES, max_chars=300)
    assert "pizza" not in default.text and "PostgreSQL" in default.text


@pytest.mark.embeddings
def test_small_talk_gives_way_to_what_was_said(embedder: OnnxEmbedder) -> None:
    chat_log = Passage(
        "memory/2023-05-08",
        "## 13:56 conversation with Caroline and Melanie\n\n"
        "**Caroline:** Hey Mel! Good to see you! How have you been?\n\n"
        "**Melanie:** Hey Caroline! Good to see you! I'm swamped with the kids and work.\n\n"
        "**Caroline:** I went to an LGBTQ support group yesterday and it was so powerful.\n\n"
        "**Melanie:** Wow, that's so cool! Thanks for sharing that with me!\n\n"
        "**Caroline:** I'm researching adoption agencies, since I want to give kids a home.\n\n"
        "**Melanie:** That's awesome, I'm so proud of you! You're doing amazing!\n\n"
        "**Caroline:** Thanks so much, I really appreciate your kind words!\n",
    )
    summary = ExtractiveSummarizer(embedder.embed_documents).summarize([chat_log], max_chars=220)
    assert "adoption agencies" in summary.text and "support group" in summary.text
    assert "proud of you" not in summary.text and "kind words" not in summary.text


def test_extractive_empty_input_and_many_sentences_fast() -> None:
    rng = np.random.default_rng(7)
    table: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        for t in texts:
            if t not in table:
                v = rng.standard_normal(384).astype(np.float32)
                table[t] = v / np.linalg.norm(v)
        return np.vstack([table[t] for t in texts])

    summarizer = ExtractiveSummarizer(embed, max_sentences=5000)
    assert summarizer.summarize([], max_chars=500) == Summary("", [], "extractive")
    assert summarizer.summarize([Passage("m", "# Only a heading\n")], max_chars=500).text == ""
    passages = [
        Passage(
            f"memory/day-{d}",
            "\n".join(f"- Note {d}-{i} says fact {i * d} holds." for i in range(100)),
        )
        for d in range(40)
    ]
    embed([s.text for s in split_sentences(passages)])  # embedding is not what is timed
    started = time.process_time()  # CPU time: a busy machine does not stretch it
    summary = summarizer.summarize(passages, max_chars=2000)
    assert time.process_time() - started < 1.0  # 4,000 sentences (0.2 s here)
    assert 0 < len(summary.text) <= 2000
    seen: list[int] = []

    def counting(texts: list[str]) -> np.ndarray:
        seen.append(len(texts))
        return embed(texts)

    ExtractiveSummarizer(counting, max_sentences=100).summarize(passages, max_chars=2000)
    assert max(seen) == 100


def test_a_base_url_must_be_http() -> None:
    with pytest.raises(ChatError, match="must start with http:// or https://"):
        ChatClient(base_url="localhost:11434/v1", model="m")
    with pytest.raises(ChatError, match="not ftp://"):
        ChatClient(base_url="ftp://127.0.0.1/v1", model="m")
