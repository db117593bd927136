"""Evidence recall: did a search return the lines that answer a question?

A memory benchmark (LoCoMo written as daily logs, ``../shared/data/memory/locomo-dev``) judges
lines, not documents: one daily log holds a whole day of talk, so finding the right file says
little; finding the turn that answers is what an agent needs. The folder holds

* ``queries.jsonl``: ``{"_id", "text", "conversation", "category"}`` per question;
* ``evidence.tsv``: header ``query-id conversation file line``, one row per answering line
  (``file`` relative to the conversation's folder, ``line`` 1-based);
* one folder per conversation (``conv-26/memory/YYYY-MM-DD.md`` ...), each indexed on its own.

A question is found at k when one of the top k results lies in an evidence line's file and its
line range covers that line. Results are plain line ranges (:class:`Retrieved`), so scoring
needs no engine and is tested on synthetic runs.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EvidenceLine",
    "EvidenceSet",
    "MemoryQuery",
    "RecallReport",
    "Retrieved",
    "first_covering_rank",
    "found_ranks",
    "load_evidence_set",
    "recall_report",
]


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """One question, asked of one conversation's memory folder."""

    query_id: str
    text: str
    conversation: str
    category: int
    """LoCoMo's category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop."""


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """A line that answers a question: ``file`` (POSIX, relative to the conversation's
    folder, as search results give paths relative to their root) and its 1-based ``line``."""

    file: str
    line: int


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One search result as scoring sees it: a file and an inclusive 1-based line range.

    ``chars`` is the result's length, for recall within a character budget (what an agent
    pays to read the results); 0 when unknown.
    """

    path: str
    start_line: int
    end_line: int
    chars: int = 0

    def covers(self, evidence: EvidenceLine) -> bool:
        return self.path == evidence.file and self.start_line <= evidence.line <= self.end_line


@dataclass(frozen=True)
class EvidenceSet:
    """A loaded benchmark: its questions (in file order) and each one's answering lines."""

    folder: Path
    queries: dict[str, MemoryQuery]
    evidence: dict[str, tuple[EvidenceLine, ...]]

    @property
    def conversations(self) -> list[str]:
        """Conversation names in the order their first question appears."""
        return list(dict.fromkeys(q.conversation for q in self.queries.values()))

    def folder_of(self, conversation: str) -> Path:
        """The folder to index for ``conversation``'s questions."""
        return self.folder / conversation

    def queries_of(self, conversation: str) -> list[MemoryQuery]:
        return [q for q in self.queries.values() if q.conversation == conversation]


def load_evidence_set(folder: Path) -> EvidenceSet:
    """Read ``queries.jsonl`` and ``evidence.tsv`` from ``folder``.

    Raises FileNotFoundError for a missing file and ValueError for a malformed row (naming the
    file and line), so a damaged download is not scored as if it were the benchmark.
    """
    folder = Path(folder)
    queries: dict[str, MemoryQuery] = {}
    queries_file = folder / "queries.jsonl"
    with queries_file.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                query = MemoryQuery(
                    str(item["_id"]),
                    str(item["text"]),
                    str(item["conversation"]),
                    int(item["category"]),
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{queries_file}:{number}: not a question ({exc})") from exc
            queries[query.query_id] = query
    evidence: dict[str, list[EvidenceLine]] = {}
    evidence_file = folder / "evidence.tsv"
    with evidence_file.open(encoding="utf-8", newline="") as fh:
        for number, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or row[0] == "query-id":
                continue
            try:
                query_id, conversation, file, line = row
                located = EvidenceLine(file, int(line))
            except ValueError as exc:
                raise ValueError(f"{evidence_file}:{number}: not an evidence row ({exc})") from exc
            known = queries.get(query_id)
            if known is None or known.conversation != conversation or located.line < 1:
                raise ValueError(
                    f"{evidence_file}:{number}: {query_id} {conversation} {file}:{line} "
                    "does not match a question of queries.jsonl"
                )
            evidence.setdefault(query_id, []).append(located)
    return EvidenceSet(folder, queries, {q: tuple(lines) for q, lines in evidence.items()})


def first_covering_rank(
    results: Sequence[Retrieved], evidence: Iterable[EvidenceLine]
) -> int | None:
    """The 1-based rank of the first result covering any evidence line; None when none does."""
    lines = list(evidence)
    for rank, result in enumerate(results, 1):
        if any(result.covers(line) for line in lines):
            return rank
    return None


def found_ranks(
    run: Mapping[str, Sequence[Retrieved]], evidence_set: EvidenceSet
) -> dict[str, int | None]:
    """Each judged question's :func:`first_covering_rank` (for paired comparisons of runs)."""
    return {
        query_id: first_covering_rank(results, evidence_set.evidence[query_id])
        for query_id, results in run.items()
        if evidence_set.evidence.get(query_id)
    }


def _within_budget(results: Sequence[Retrieved], budget: int) -> int:
    """How many leading results fit in ``budget`` characters together (at least one)."""
    total = 0
    for count, result in enumerate(results):
        total += result.chars
        if total > budget:
            return max(1, count)
    return len(results)


@dataclass
class RecallReport:
    """Evidence recall of one run: the share of questions found at each k, overall and per
    category, and within character budgets (the results an agent reads for that many
    characters, whatever the chunk size)."""

    queries: int
    recall: dict[int, float]
    per_category: dict[int, dict[int, float]]
    category_queries: dict[int, int]
    budget_recall: dict[int, float] = field(default_factory=dict)
    mean_chars: dict[int, float] = field(default_factory=dict)
    """Mean total characters of the top k results (what reading them costs), per k."""
    unjudged: list[str] = field(default_factory=list)
    """Questions of the run with no evidence line: left out of every share."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "recall": {f"@{k}": round(v, 4) for k, v in self.recall.items()},
            "per_category": {
                str(c): {
                    "queries": self.category_queries[c],
                    **{f"@{k}": round(v, 4) for k, v in by_k.items()},
                }
                for c, by_k in self.per_category.items()
            },
            "budget_recall": {f"{b}_chars": round(v, 4) for b, v in self.budget_recall.items()},
            "mean_chars": {f"@{k}": round(v) for k, v in self.mean_chars.items()},
            "unjudged": self.unjudged,
        }


def recall_report(
    run: Mapping[str, Sequence[Retrieved]],
    evidence_set: EvidenceSet,
    ks: Sequence[int] = (5, 10),
    budgets: Sequence[int] = (),
) -> RecallReport:
    """Score ``run`` (question id -> its results, best first) at each k and character budget.

    Only the run's questions count (a run over one conversation is scored on that
    conversation). A question id the set does not know is a ValueError: it means the run and
    the set disagree, which a silent zero would hide.
    """
    if any(k < 1 for k in ks) or any(b < 1 for b in budgets):
        raise ValueError("every k and budget must be at least 1")
    unknown = [q for q in run if q not in evidence_set.queries]
    if unknown:
        raise ValueError(f"questions not in the evidence set: {', '.join(unknown[:5])}")
    found: dict[int, list[str]] = {k: [] for k in ks}
    in_budget: dict[int, int] = dict.fromkeys(budgets, 0)
    read: dict[int, int] = dict.fromkeys(ks, 0)
    by_category: dict[int, list[str]] = {}
    unjudged: list[str] = []
    for query_id, results in run.items():
        lines = evidence_set.evidence.get(query_id, ())
        if not lines:
            unjudged.append(query_id)
            continue
        by_category.setdefault(evidence_set.queries[query_id].category, []).append(query_id)
        for k in ks:
            read[k] += sum(r.chars for r in results[:k])
        rank = first_covering_rank(results, lines)
        if rank is None:
            continue
        for k in ks:
            if rank <= k:
                found[k].append(query_id)
        for budget in budgets:
            if rank <= _within_budget(results, budget):
                in_budget[budget] += 1
    judged = sum(len(ids) for ids in by_category.values())

    def share(hits: int, total: int) -> float:
        return hits / total if total else 0.0

    per_category = {
        category: {k: share(len(set(ids) & set(found[k])), len(ids)) for k in ks}
        for category, ids in sorted(by_category.items())
    }
    return RecallReport(
        queries=judged,
        recall={k: share(len(found[k]), judged) for k in ks},
        per_category=per_category,
        category_queries={c: len(ids) for c, ids in sorted(by_category.items())},
        budget_recall={b: share(n, judged) for b, n in in_budget.items()},
        mean_chars={k: share(n, judged) for k, n in read.items()},
        unjudged=unjudged,
    )
