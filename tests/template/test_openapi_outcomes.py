"""The OpenAPI document names every way an attempt can end, and nothing else."""

from __future__ import annotations

from typing import Any

from smq_lambda.domain.jobs.outcomes import AttemptOutcome


def test_the_attempt_outcome_enum_is_every_attempt_outcome_or_null(openapi_doc: dict[str, Any]) -> None:
    outcome = openapi_doc["components"]["schemas"]["Attempt"]["properties"]["outcome"]
    assert set(outcome["enum"]) == {*(str(value) for value in AttemptOutcome), None}
