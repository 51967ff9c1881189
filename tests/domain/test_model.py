"""Facts derived from requests (demand, attempt names, the ordering key), and what keeps a job bounded."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.lifecycle import StartRetryLimits
from smq_lambda.domain.jobs.model import (
    ATTEMPT_NONCE_BYTES,
    MAX_HISTORY,
    MAX_INLINE_ATTEMPTS,
    MAX_PRIORITY,
    MIN_PRIORITY,
    TRAINING_JOB_NAME_PATTERN,
    Attempt,
    Change,
    Job,
    attempt_name,
    demand_of,
    is_another_stacks,
    order_key,
    scheduling_order,
    with_attempt,
)
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState

names = st.from_regex(r"\A[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
nonces = st.binary(min_size=ATTEMPT_NONCE_BYTES, max_size=ATTEMPT_NONCE_BYTES).map(bytes.hex)


@given(names, nonces, st.integers(1, 10**6))
def test_attempt_names_are_valid_sagemaker_names(name: str, nonce: str, number: int) -> None:
    result = attempt_name(name, nonce, number)
    assert len(result) <= 63
    assert TRAINING_JOB_NAME_PATTERN.match(result)
    assert result == attempt_name(name, nonce, number)


@given(names, nonces, st.integers(1, 998))
def test_attempts_of_one_job_never_share_a_name(name: str, nonce: str, number: int) -> None:
    assert attempt_name(name, nonce, number) != attempt_name(name, nonce, number + 1)


@given(names, nonces, nonces)
def test_attempts_with_other_random_parts_get_other_names(name: str, first: str, second: str) -> None:
    if first != second:
        assert attempt_name(name, first, 1) != attempt_name(name, second, 1)


def test_an_attempts_name_cannot_be_predicted_from_what_get_jobs_shows() -> None:
    """Everything `GET /jobs` shows about a job (its name, id, attempts and their names) is the same
    for two identical jobs; the names their next attempts get differ, and so cannot be derived from
    it: nobody can create the name before the queue does. (They were `<name>-<id[:8]>-<number>`.)"""
    job = _pending()
    first = lifecycle.start(job, T0, reason="fits")
    again = lifecycle.start(job, T0, reason="fits")

    assert first.current_attempt is not None and again.current_attempt is not None
    assert first.current_attempt.training_job_name != again.current_attempt.training_job_name
    assert job.job_id[:8] not in first.current_attempt.training_job_name
    assert len(first.current_attempt.training_job_name) <= 63
    assert TRAINING_JOB_NAME_PATTERN.match(first.current_attempt.training_job_name)


@pytest.mark.parametrize(
    ("tags", "stack", "another"),
    [
        ({"smq:stack": "production"}, "staging", True),
        ({"smq:stack": "production", "smq:job": "train", "smq:attempt": "1"}, "staging", True),
        ({"smq:stack": "staging"}, "staging", False),
        ({"smq:stack": "Staging"}, "staging", True),
        ({"smq:job": "train", "smq:attempt": "1"}, "staging", False),
        ({}, "staging", False),
        ({"smq:stack": "production"}, None, False),
    ],
    ids=["another stack", "another stack's attempt", "this stack", "names are exact", "no stack tag (legacy)",
         "no tags", "a stack without a name"],
)  # fmt: skip
def test_which_training_jobs_another_smq_stack_governs(tags: dict[str, str], stack: str | None, another: bool) -> None:
    assert is_another_stacks(tags, stack) is another


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


moments = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1)).map(
    lambda d: d.replace(tzinfo=UTC)
)


@given(
    st.tuples(st.integers(MIN_PRIORITY, MAX_PRIORITY), moments, names),
    st.tuples(st.integers(MIN_PRIORITY, MAX_PRIORITY), moments, names),
)
def test_the_index_sort_key_sorts_like_the_scheduling_order(a: tuple, b: tuple) -> None:
    assert (order_key(*a) < order_key(*b)) == (scheduling_order(*a) < scheduling_order(*b)) or a == b


def test_higher_priority_first_then_earlier_submission() -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    jobs = [
        (1, now, "late-high"),
        (0, now - timedelta(hours=1), "early-low"),
        (1, now - timedelta(seconds=1), "early-high"),
    ]
    assert [name for *_, name in sorted(jobs, key=lambda j: scheduling_order(*j))] == [
        "early-high",
        "late-high",
        "early-low",
    ]


# ------------------------------------------------------------------ bounded attempts and history

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NEVER_GIVE_UP = StartRetryLimits(max_refusals=10**9, max_duration=timedelta.max)


def _pending(name: str = "often-preempted") -> Job:
    return Job(name=name, job_id="0123456789abcdef", state=JobState.PENDING, priority=0, submitted_at=T0,
               demand={"ml.g5.xlarge": 1}, owner="arn:aws:iam::123456789012:user/alice")  # fmt: skip


def _cycle(job: Job, now: datetime, outcome: str) -> Job:
    """One more attempt: started, then refused or preempted back to pending."""
    started = lifecycle.start(job, now, reason="fits")
    if outcome == "refused":
        return lifecycle.refuse_start(started, now, reason="capacity", lasting=False, limits=NEVER_GIVE_UP)
    stopping = lifecycle.request_stop(lifecycle.mark_running(started, now), now, preempt=True, reason="preempted")
    return lifecycle.requeue(stopping, now, outcome="preempted", reason="preempted")


def test_a_job_started_a_thousand_times_keeps_only_its_recent_attempts_and_counts_the_rest() -> None:
    job = _pending()
    for number in range(1, 1001):
        job = _cycle(job, T0 + timedelta(minutes=number), "refused" if number % 3 else "preempted")

    assert len(job.attempts) == MAX_INLINE_ATTEMPTS
    assert job.attempt_count == 1000
    assert [attempt.number for attempt in job.attempts] == list(range(1000 - MAX_INLINE_ATTEMPTS + 1, 1001))
    assert job.next_attempt_number == 1001
    assert job.earlier_attempts == 1000 - MAX_INLINE_ATTEMPTS
    assert job.attempt_outcomes == {"refused": 667, "preempted": 333}
    assert sum(job.earlier_outcomes.values()) == job.earlier_attempts


def test_the_attempt_after_the_thousandth_is_named_for_its_number_and_is_the_current_one() -> None:
    job = _pending()
    for number in range(1, 1001):
        job = _cycle(job, T0 + timedelta(minutes=number), "preempted")

    started = lifecycle.start(job, T0 + timedelta(days=1), reason="fits", nonce="0123456789ab")

    assert started.current_attempt is not None
    assert started.current_attempt.number == 1001
    assert started.current_attempt.is_open
    assert started.current_attempt.training_job_name == attempt_name(job.name, "0123456789ab", 1001)
    assert len(started.attempts) == MAX_INLINE_ATTEMPTS
    assert started.attempts[:-1] == job.attempts[1:]


@given(st.lists(st.sampled_from(["refused", "preempted"]), max_size=3 * MAX_INLINE_ATTEMPTS))
def test_numbering_and_names_stay_unique_however_many_attempts_are_folded(outcomes: list[str]) -> None:
    job = _pending()
    names: set[str] = set()
    for index, outcome in enumerate(outcomes, start=1):
        job = _cycle(job, T0 + timedelta(minutes=index), outcome)
        assert job.current_attempt is not None
        names.add(job.current_attempt.training_job_name)

    assert job.attempt_count == len(outcomes) == len(names)
    assert len(job.attempts) == min(len(outcomes), MAX_INLINE_ATTEMPTS)
    assert sum(job.attempt_outcomes.values()) == len(outcomes)


def test_an_attempt_folded_without_an_outcome_counts_as_unknown() -> None:
    open_attempts = tuple(Attempt(number, f"run-{number}", T0) for number in range(1, MAX_INLINE_ATTEMPTS + 1))
    job = replace(_pending(), attempts=open_attempts)

    grown = with_attempt(job, Attempt(MAX_INLINE_ATTEMPTS + 1, "run-next", T0))

    assert grown.earlier_outcomes == {AttemptOutcome.UNKNOWN: 1}
    assert grown.attempts[0].number == 2


def test_a_priority_change_is_recorded_with_who_made_it() -> None:
    job = _pending()

    changed = lifecycle.reprioritize(job, T0 + timedelta(minutes=5), 40, by="arn:aws:iam::123456789012:user/ops")

    assert changed.priority == 40
    assert changed.version == job.version + 1
    assert changed.history == (
        Change(at=T0 + timedelta(minutes=5), by="arn:aws:iam::123456789012:user/ops", what="priority 0 → 40"),
    )


def test_history_keeps_only_the_most_recent_changes() -> None:
    job = _pending()
    for priority in range(1, 2 * MAX_HISTORY + 1):
        job = lifecycle.reprioritize(job, T0 + timedelta(minutes=priority), priority, by="ops")

    assert len(job.history) == MAX_HISTORY
    assert job.history[-1].what == f"priority {2 * MAX_HISTORY - 1} → {2 * MAX_HISTORY}"
    assert job.history[0].what == f"priority {MAX_HISTORY} → {MAX_HISTORY + 1}"
