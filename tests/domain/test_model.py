"""Facts derived from requests: demand, attempt names, the ordering key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.model import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    TRAINING_JOB_NAME_PATTERN,
    attempt_name,
    demand_of,
    order_key,
    scheduling_order,
)

names = st.from_regex(r"\A[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
job_ids = st.uuids().map(lambda value: value.hex)


@given(names, job_ids, st.integers(1, 999))
def test_attempt_names_are_valid_sagemaker_names(name: str, job_id: str, number: int) -> None:
    result = attempt_name(name, job_id, number)
    assert len(result) <= 63
    assert TRAINING_JOB_NAME_PATTERN.match(result)
    assert result == attempt_name(name, job_id, number)


@given(names, job_ids, st.integers(1, 998))
def test_attempts_of_one_job_never_share_a_name(name: str, job_id: str, number: int) -> None:
    assert attempt_name(name, job_id, number) != attempt_name(name, job_id, number + 1)


@given(names, job_ids, job_ids)
def test_a_resubmitted_name_gets_new_attempt_names(name: str, first: str, second: str) -> None:
    if first[:8] != second[:8]:
        assert attempt_name(name, first, 1) != attempt_name(name, second, 1)


def test_demand_of_a_plain_request_and_of_instance_groups() -> None:
    assert demand_of({"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}}) == {"ml.g5.xlarge": 2}
    groups = {
        "ResourceConfig": {
            "InstanceGroups": [
                {"InstanceGroupName": "gpu", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
                {"InstanceGroupName": "cpu", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 1},
                {"InstanceGroupName": "cpu2", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 3},
            ]
        }
    }
    assert demand_of(groups) == {"ml.p4d.24xlarge": 2, "ml.c5.18xlarge": 4}
    assert list(demand_of(groups)) == ["ml.p4d.24xlarge", "ml.c5.18xlarge"]


moments = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1)).map(lambda d: d.replace(tzinfo=UTC))


@given(
    st.tuples(st.integers(MIN_PRIORITY, MAX_PRIORITY), moments, names),
    st.tuples(st.integers(MIN_PRIORITY, MAX_PRIORITY), moments, names),
)
def test_the_index_sort_key_sorts_like_the_scheduling_order(a: tuple, b: tuple) -> None:
    assert (order_key(*a) < order_key(*b)) == (scheduling_order(*a) < scheduling_order(*b)) or a == b


def test_higher_priority_first_then_earlier_submission() -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    jobs = [(1, now, "late-high"), (0, now - timedelta(hours=1), "early-low"), (1, now - timedelta(seconds=1), "early-high")]
    assert [name for *_, name in sorted(jobs, key=lambda j: scheduling_order(*j))] == ["early-high", "late-high", "early-low"]
