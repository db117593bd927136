"""SQLite schema, versioned by ``PRAGMA user_version``: migration N brings version N-1 to N.

The index is a cache of the files, so a database from a newer noteseek (a version we do not
know) is rebuilt rather than trusted.
"""

from __future__ import annotations

# The FTS table holds analyzed terms (see analysis.py), so its tokenizer only has to split on
# whitespace: every Unicode category but separators and controls is a token character.
FTS_TOKENIZER = "unicode61 remove_diacritics 0 categories 'L* N* Co M* P* S*'"

MIGRATIONS: list[str] = [
    # 1: the first schema. ``chunks_fts`` once had prefix indexes (``prefix = '2 3 4'``): they
    # made a cold index of the 14k-page corpus 17% slower (38.8 s against 30.6 s of writing)
    # and 105 MB larger, for prefix queries (``pow*``), which FTS5 answers from its terms
    # alone at most 2x slower (33 against 62 ms for ``new-ne*``). An index made with them keeps
    # them: nothing reads them apart from FTS5 itself.
    f"""
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE roots (
        id   INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL
    );
    CREATE TABLE files (
        id           INTEGER PRIMARY KEY,
        root_id      INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
        path         TEXT NOT NULL,
        doc_id       TEXT NOT NULL UNIQUE,
        title        TEXT NOT NULL,
        aliases      TEXT NOT NULL DEFAULT '[]',
        tags         TEXT NOT NULL DEFAULT '[]',
        frontmatter  TEXT NOT NULL DEFAULT '{{}}',
        mtime_ns     INTEGER NOT NULL,
        size         INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        modified     REAL NOT NULL,
        parser       TEXT NOT NULL DEFAULT '',
        warnings     TEXT NOT NULL DEFAULT '[]',
        indexed_at   REAL NOT NULL,
        UNIQUE (root_id, path)
    );
    CREATE INDEX files_hash ON files(content_hash);
    CREATE INDEX files_modified ON files(modified);
    CREATE TABLE chunks (
        id           INTEGER PRIMARY KEY,
        chunk_id     TEXT NOT NULL UNIQUE,
        file_id      INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        ordinal      INTEGER NOT NULL,
        heading_path TEXT NOT NULL,
        start_line   INTEGER NOT NULL,
        end_line     INTEGER NOT NULL,
        text         TEXT NOT NULL,
        content_hash TEXT NOT NULL
    );
    CREATE INDEX chunks_file ON chunks(file_id, ordinal);
    CREATE INDEX chunks_hash ON chunks(content_hash);
    CREATE TABLE tags (
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        tag     TEXT NOT NULL,
        PRIMARY KEY (file_id, tag)
    ) WITHOUT ROWID;
    CREATE INDEX tags_tag ON tags(tag);
    CREATE TABLE links (
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        target  TEXT NOT NULL,
        kind    TEXT NOT NULL,
        anchor  TEXT,
        display TEXT,
        line    INTEGER NOT NULL
    );
    CREATE INDEX links_file ON links(file_id);
    CREATE INDEX links_target ON links(target);
    CREATE TABLE problems (
        root_id  INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
        path     TEXT NOT NULL,
        severity TEXT NOT NULL,
        reason   TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL DEFAULT 0,
        size     INTEGER NOT NULL DEFAULT 0,
        at       REAL NOT NULL,
        PRIMARY KEY (root_id, path, reason)
    );
    CREATE TABLE runs (
        id       INTEGER PRIMARY KEY,
        started  REAL NOT NULL,
        finished REAL NOT NULL,
        summary  TEXT NOT NULL
    );
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        title, aliases, headings, tags, body, code,
        tokenize = "{FTS_TOKENIZER}"
    );
    CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        DELETE FROM chunks_fts WHERE rowid = old.id;
    END;
    """,
    # 2: vectors, keyed by (model, embedding input hash) and shared by identical chunks
    """
    ALTER TABLE chunks ADD COLUMN embed_key TEXT NOT NULL DEFAULT '';
    CREATE INDEX chunks_embed_key ON chunks(embed_key);
    CREATE TABLE vectors (
        model  TEXT NOT NULL,
        key    TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (model, key)
    ) WITHOUT ROWID;
    """,
    # 3: document-level keyword fields (one row per file, rowid = files.id), so a chunk's
    # keyword score can include how well its whole document matches
    f"""
    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, aliases, headings, tags, body, code,
        tokenize = "{FTS_TOKENIZER}"
    );
    CREATE TRIGGER files_fts_delete AFTER DELETE ON files BEGIN
        DELETE FROM docs_fts WHERE rowid = old.id;
    END;
    """,
    # 4: the kind of source each root is (files, memory, ...), so searches can keep memories
    # apart from documents inside retrieval
    """
    ALTER TABLE roots ADD COLUMN kind TEXT NOT NULL DEFAULT 'files';
    ALTER TABLE links ADD COLUMN context TEXT NOT NULL DEFAULT '';
    """,
    # 5: the link graph kept with the index (graph/sync.py): each document's resolved edges,
    # the keys its links looked up (to find the links a new, renamed or deleted document
    # affects), what the graph knew of each document, the files changed since (filled by
    # triggers, in the same transaction as the change), and the communities. An index from
    # before has every file marked changed: the next writer builds the graph.
    """
    CREATE TABLE graph_edges (
        file_id   INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        ordinal   INTEGER NOT NULL,
        target    TEXT NOT NULL,
        target_id INTEGER,
        type      TEXT NOT NULL,
        line      INTEGER NOT NULL,
        anchor    TEXT,
        context   TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (file_id, ordinal)
    ) WITHOUT ROWID;
    CREATE TABLE graph_keys (
        key     TEXT NOT NULL,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        PRIMARY KEY (key, file_id)
    ) WITHOUT ROWID;
    CREATE INDEX graph_keys_file ON graph_keys(file_id);
    CREATE TABLE graph_nodes (
        file_id INTEGER PRIMARY KEY,
        names   TEXT NOT NULL
    );
    CREATE TABLE graph_dirty (
        file_id INTEGER PRIMARY KEY
    );
    CREATE TABLE communities (
        file_id   INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
        community INTEGER NOT NULL
    );
    CREATE TRIGGER files_graph_insert AFTER INSERT ON files BEGIN
        INSERT OR IGNORE INTO graph_dirty(file_id) VALUES (new.id);
    END;
    CREATE TRIGGER files_graph_update
    AFTER UPDATE OF root_id, path, doc_id, title, aliases, content_hash ON files BEGIN
        INSERT OR IGNORE INTO graph_dirty(file_id) VALUES (new.id);
    END;
    CREATE TRIGGER files_graph_delete AFTER DELETE ON files BEGIN
        INSERT OR IGNORE INTO graph_dirty(file_id) VALUES (old.id);
    END;
    INSERT INTO graph_dirty(file_id) SELECT id FROM files;
    """,
    # 6: the vectors' keys apart from their blobs. Counting the chunks that have a vector, and
    # listing them, walked the vectors table itself (blobs and all: 250 MB at 165k vectors,
    # 0.2 s); over this index they take 0.02 s and 0.09 s.
    """
    CREATE INDEX vectors_keys ON vectors(model, key);
    """,
    # 7: the files whose keyword rows changed, in order (filled by triggers, in the same
    # transaction as the change), so a process holding the saved keyword postings
    # (store/sqlite/postings_state.py) knows which of its rows are out of date. Its ``id``
    # tells one index's log from another's; rows up to the last saved postings are removed.
    """
    CREATE TABLE keyword_log (
        seq     INTEGER PRIMARY KEY AUTOINCREMENT,
        file_id INTEGER NOT NULL
    );
    CREATE TRIGGER files_keyword_insert AFTER INSERT ON files BEGIN
        INSERT INTO keyword_log(file_id) VALUES (new.id);
    END;
    CREATE TRIGGER files_keyword_update AFTER UPDATE OF indexed_at ON files BEGIN
        INSERT INTO keyword_log(file_id) VALUES (new.id);
    END;
    CREATE TRIGGER files_keyword_delete AFTER DELETE ON files BEGIN
        INSERT INTO keyword_log(file_id) VALUES (old.id);
    END;
    INSERT OR REPLACE INTO meta(key, value) VALUES ('keyword_log', lower(hex(randomblob(8))));
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
