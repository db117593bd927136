"""Evaluation datasets: BEIR folders and vault folders with queries and qrels.

* BEIR: ``corpus.jsonl`` ({"_id", "title", "text"}), ``queries.jsonl`` ({"_id", "text"}),
  ``qrels/<split>.tsv`` (``query-id corpus-id score`` with a header). The corpus is written out
  as one Markdown file per document (``<_id>.md``: title as H1, then the text) so it goes
  through exactly the indexing path notes take.
* Vault: a ``vault/`` folder of notes, ``queries.jsonl`` and ``qrels/<split>.tsv`` whose corpus
  ids are vault-relative paths. Instead of ``vault/``, a ``vault.txt`` may name the folder (a
  path relative to the dataset folder): a query set kept in the repository over notes that
  are not (``eval/hugo-questions``).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Dataset:
    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str
    vault: Path | None
    """The folder to index: the vault itself, or None for a BEIR corpus to materialise."""
    corpus_file: Path | None

    def doc_id_of(self, path: str) -> str:
        """The qrels id of an indexed root-relative path."""
        if self.vault is not None:
            return path
        return _unsafe_id(path.removesuffix(".md"))


def load_dataset(folder: Path, split: str | None = None) -> Dataset:
    folder = Path(folder)
    qrels_dir = folder / "qrels"
    if not qrels_dir.is_dir():
        raise FileNotFoundError(f"{folder}: no qrels/ folder")
    splits = sorted(p.stem for p in qrels_dir.glob("*.tsv"))
    if split is None:
        split = next(
            (s for s in ("test", "dev", "train") if s in splits), splits[0] if splits else ""
        )
    qrels_file = qrels_dir / f"{split}.tsv"
    if not qrels_file.is_file():
        raise FileNotFoundError(f"{folder}: no qrels/{split}.tsv (have: {', '.join(splits)})")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                item = json.loads(line)
                if str(item["_id"]) in qrels:
                    queries[str(item["_id"])] = str(item["text"])
    vault = folder / "vault"
    pointer = folder / "vault.txt"
    if not vault.is_dir() and pointer.is_file():
        vault = (folder / pointer.read_text(encoding="utf-8").strip()).resolve()
        if not vault.is_dir():
            raise FileNotFoundError(f"{pointer}: {vault} is not a folder")
    corpus = folder / "corpus.jsonl"
    return Dataset(
        folder.name,
        queries,
        {q: r for q, r in qrels.items() if q in queries},
        split,
        vault if vault.is_dir() else None,
        corpus if corpus.is_file() else None,
    )


def materialise_corpus(corpus_file: Path, target: Path) -> int:
    """Write a BEIR corpus as Markdown files; returns the number of documents."""
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    with corpus_file.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            doc = json.loads(line)
            title = str(doc.get("title") or "").strip()
            body = str(doc.get("text") or "").strip()
            text = (f"# {title}\n\n" if title else "") + body + "\n"
            (target / f"{_safe_id(str(doc['_id']))}.md").write_text(text, encoding="utf-8")
            n += 1
    return n


def _safe_id(doc_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", lambda m: f"%{ord(m.group()):02X}", doc_id)


def _unsafe_id(name: str) -> str:
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), name)
