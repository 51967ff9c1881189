"""Trace lines of flexible jobs (`preferences`): what is accepted, the round trip, and errors that
name the line and the field."""

from __future__ import annotations

import json
import re

import pytest
from smq_lambda.replay.trace_job import TraceJob, TracePreference
from smq_lambda.simulation.trace import TraceError, check_pools, parse_trace, write_trace

P5, G5 = "ml.p5.48xlarge", "ml.g5.48xlarge"
PREFERENCES = [{"pool": P5, "instances": 2}, {"pool": G5, "instances": 4, "duration_s": 9000}]
GOOD = {"name": "vit", "submit_s": 0, "priority": 1, "duration_s": 7200, "preferences": PREFERENCES}


def line(**changes: object) -> str:
    document = {**GOOD, **changes}
    return json.dumps({key: value for key, value in document.items() if value is not ...})


def test_a_flexible_line_is_its_first_preference_with_the_others_as_alternatives() -> None:
    [job] = parse_trace([line()])

    assert (job.pool, job.instances, job.duration_s) == (P5, 2, 7200.0)
    assert job.alternatives == (TracePreference(G5, 4, 9000.0),)
    assert job.preferences == (TracePreference(P5, 2, 7200.0), TracePreference(G5, 4, 9000.0))
    assert job.duration_at(G5, 4) == 9000.0
    assert job.duration_at(G5, 8) == 7200.0  # a place it does not prefer: its own duration


def test_the_first_preference_may_train_longer_than_the_jobs_duration() -> None:
    [job] = parse_trace([line(preferences=[{"pool": P5, "instances": 2, "duration_s": 3600}, PREFERENCES[1]])])

    assert (job.duration_s, job.alternatives[0].duration_s) == (3600.0, 9000.0)


def test_a_single_preference_is_a_pinned_job() -> None:
    [job] = parse_trace([line(preferences=[PREFERENCES[1]])])

    assert (job.pool, job.instances, job.duration_s, job.alternatives) == (G5, 4, 9000.0, ())


@pytest.mark.parametrize(
    "preferences",
    [
        PREFERENCES,
        [{"pool": P5, "instances": 2, "duration_s": 100}, {"pool": G5, "instances": 4}],
        [{"pool": G5, "instances": 1}, {"pool": G5, "instances": 2}, {"pool": P5, "instances": 1}],
    ],
)
def test_a_flexible_trace_reads_back_as_written(preferences: list[dict[str, object]]) -> None:
    jobs = parse_trace([line(preferences=preferences, checkpoint_every_s=600)])

    assert parse_trace(write_trace(jobs).splitlines()) == jobs


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"pool": P5}, "field 'pool': a job gives either 'preferences' or 'pool' and 'instances', not both"),
        ({"instances": 2}, "field 'instances': a job gives either 'preferences'"),
        ({"preferences": []}, "field 'preferences': must be a non-empty list of preferences"),
        ({"preferences": {"pool": P5}}, "field 'preferences': must be a non-empty list of preferences"),
        ({"preferences": [PREFERENCES[0], "g5"]}, "field 'preferences[1]': must be a JSON object, not str"),
        ({"preferences": [{"pool": P5}]}, "field 'preferences[0].instances': is required"),
        ({"preferences": [{"instances": 1}]}, "field 'preferences[0].pool': is required"),
        ({"preferences": [PREFERENCES[0], {"pool": "", "instances": 1}]}, "field 'preferences[1].pool': must be a"),
        ({"preferences": [{"pool": P5, "instances": 0}]}, "field 'preferences[0].instances': must be at least 1"),
        ({"preferences": [{"pool": P5, "instances": 1.5}]}, "field 'preferences[0].instances': must be an integer"),
        (
            {"preferences": [{"pool": P5, "instances": 1, "duration_s": 0}]},
            "field 'preferences[0].duration_s': must be greater than 0",
        ),
        ({"preferences": [{"pool": P5, "instances": 1, "gpus": 8}]}, "field 'preferences[0].gpus': unknown field"),
        ({"preferences": [PREFERENCES[0], PREFERENCES[0]]}, "field 'preferences[1]': repeats 2 × ml.p5.48xlarge"),
        ({"duration_s": ...}, "field 'duration_s': is required"),
        ({"max_runtime_s": 8000}, "field 'max_runtime_s': must be at least duration_s (9000), not 8000"),
    ],
)
def test_a_bad_flexible_line_names_its_line_and_field(changes: dict[str, object], where: str) -> None:
    with pytest.raises(TraceError, match=r"^line 1, " + re.escape(where)):
        parse_trace([line(**changes)])


@pytest.mark.parametrize(
    ("pools", "where"),
    [
        ({P5: 8}, "field 'preferences[1].pool': 'ml.g5.48xlarge' is not a configured pool"),
        ({P5: 1, G5: 8}, "field 'preferences[0].instances': 2 is more than ml.p5.48xlarge holds (1)"),
        ({P5: 8, G5: 3}, "field 'preferences[1].instances': 4 is more than ml.g5.48xlarge holds (3)"),
    ],
)
def test_every_preference_must_fit_a_configured_pool(pools: dict[str, int], where: str) -> None:
    jobs = parse_trace(["", line()])

    with pytest.raises(TraceError, match=r"^line 2, " + re.escape(where)):
        check_pools(jobs, pools)


def test_a_pinned_job_writes_pool_and_instances_as_before() -> None:
    job = TraceJob("a", 0.0, 0, P5, 2, 60.0)

    assert json.loads(write_trace([job])) == {
        "name": "a",
        "submit_s": 0.0,
        "priority": 0,
        "pool": P5,
        "instances": 2,
        "duration_s": 60.0,
    }
