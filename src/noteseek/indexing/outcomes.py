"""How a run's changed documents become outcomes (rows to write, or problems): everything
between a scan and the write.

A root of a kind with a bulk preparer (``KindSpec.preparer``: commits, read in one ``git log``
per root and run) hands the preparer all its documents at once; other documents are prepared
one at a time, in worker processes for large runs of files on disk, else here through their
source. Outcomes come back in no particular order between roots, in order within a run of
files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from noteseek.analysis import get_analyzer
from noteseek.indexing.pool import ParserPool, prepared_in_order
from noteseek.indexing.prepare import (
    BulkPreparer,
    Outcome,
    PrepareSettings,
    bulk_preparer,
    prepare_file,
)
from noteseek.parse import default_registry
from noteseek.sources.base import FoundFile, Source
from noteseek.sources.registry import spec_of

PARALLEL_MIN_FILES = 200
"""Below this many documents to prepare, starting worker processes costs more than it saves."""

Job = tuple[FoundFile, str | None]
"""A document to prepare, with the content hash the index holds for it (None: new)."""


def prepared(
    jobs: list[Job], sources: Mapping[str, Source], settings: PrepareSettings, workers: int
) -> Iterator[Outcome]:
    """An outcome per job, each document read through ``sources`` (by root)."""
    preparers = {
        root: prepare
        for root, source in sources.items()
        if (prepare := bulk_preparer(spec_of(source.kind).preparer)) is not None
    }
    bulk: dict[str, list[FoundFile]] = {}
    single: list[Job] = []
    for found, known in jobs:
        if found.root in preparers:
            bulk.setdefault(found.root, []).append(found)
        else:
            single.append((found, known))
    if bulk:
        yield from _bulk(bulk, sources, preparers, settings, workers)
    yield from _one_by_one(single, sources, settings, workers)


def _bulk(
    bulk: dict[str, list[FoundFile]],
    sources: Mapping[str, Source],
    preparers: Mapping[str, BulkPreparer],
    settings: PrepareSettings,
    workers: int,
) -> Iterator[Outcome]:
    analyzer = get_analyzer(settings.language, settings.stopwords)
    runs = [(sources[root], found, preparers[root]) for root, found in bulk.items()]
    if workers <= 1 or sum(map(len, bulk.values())) < PARALLEL_MIN_FILES:
        for source, found, prepare in runs:
            yield from prepare(source, found, analyzer, settings.max_chars, None)
        return
    # The source and this process read; the workers render, chunk and analyze.
    with ParserPool(max(1, workers - 1), settings) as pool:
        try:
            for source, found, prepare in runs:
                yield from prepare(source, found, analyzer, settings.max_chars, pool)
        except BaseException:
            pool.stop()
            raise


def _one_by_one(
    jobs: list[Job], sources: Mapping[str, Source], settings: PrepareSettings, workers: int
) -> Iterator[Outcome]:
    # Workers open documents themselves, so they only take runs whose documents all have
    # a place on disk (files); any other source is read here, through the source.
    on_disk = all(found.abspath for found, _ in jobs)
    if workers <= 1 or len(jobs) < PARALLEL_MIN_FILES or not on_disk:
        analyzer = get_analyzer(settings.language, settings.stopwords)
        registry = default_registry()

        def read(found: FoundFile, limit: int) -> bytes:
            return sources[found.root].read(found.path, limit)

        for found, known in jobs:
            yield prepare_file(found, known, settings, analyzer, registry, read)
        return
    with ParserPool(workers, settings) as pool:
        try:
            yield from prepared_in_order(pool, jobs, workers)
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or the write failed: do not wait for the
            # files already handed to the workers.
            pool.stop()
            raise
