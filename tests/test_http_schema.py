"""schemathesis against the served /openapi.json: generated requests, valid and invalid, to
every operation of a live server (with a token); no 5xx, and every response conforms to its
declared status codes, content types and schemas."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.test_serve import TOKEN, ServeProcess, serving_example_vault

AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Schema-valid data must never get 413/415 (or a 5xx). It may get 400: a schema cannot say
# which roots exist or which strings are dates, and the engine refuses those precisely; 404
# for chunk ids and paths that are well-formed but not in the index; 409 for a memory name
# that an earlier generated request already took (writes never overwrite); 431 for a path of
# 4,096 characters that percent-encoding makes over 16 KiB. Invalid data may get 431 too (a
# path far over its length in the request line); otherwise schemathesis' defaults (a 5xx fails
# its own check).
CONFIG = schemathesis.Config.from_str(
    """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "404", "409", "431"]

[checks.negative_data_rejection]
expected-statuses = [
    "400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "431", "5xx"
]
"""
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serving_example_vault(
        tmp_path_factory.mktemp("schema"),
        "--no-watch",
        headers=AUTH,
        NOTESEEK_SERVE__TOKEN=TOKEN,
    ) as running:
        yield running


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_conforms_to_the_schema(served: ServeProcess, mode: GenerationMode) -> None:
    """Valid (positive) and invalid (negative) requests, 25 per operation and mode.

    The operations are driven one by one with hypothesis (schemathesis' pytest loader for
    fixtures does not work with pytest 9).
    """
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json", config=CONFIG)
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {operation.label for operation in operations}
    assert {
        "GET /health",
        "POST /query_documents",
        "POST /query_documents_stream",
        "POST /search_with_hypothesis",
        "GET /chunks/{chunk_id}",
        "GET /documents/{path}",
        "GET /status",
        "POST /reindex",
    } <= labels
    for operation in operations:
        inputs = [operation.path_parameters, operation.query, operation.body]
        if mode is GenerationMode.NEGATIVE and not any(len(i) for i in inputs):
            continue  # nothing to make invalid (GET /health, GET /status)

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=25,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=AUTH, timeout=30)

        check()
