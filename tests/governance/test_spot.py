"""Managed spot: interruptions counted from SageMaker's history, the on-demand request, the fallback
decision, and spot jobs SageMaker stopped at MaxWaitTimeInSeconds."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job, demand_of
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import placements_of
from smq_lambda.domain.placements.purchase import purchase_of
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.governance.actions import FailJob, FallBackToOnDemand, StayOnSpot
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.spot import (
    OnDemandCapacity,
    decide_max_wait,
    decide_spot_fallback,
    interruptions,
    is_spot,
    on_demand_request,
)

from .builders import NONCE, NOW, attempt_name, description, job, request, spot_request, transitions

G5 = "ml.g5.xlarge"
ROOMY = OnDemandCapacity({G5: 8})
"""The on-demand capacity of a queue where the builders' jobs may always fall back."""
INTERRUPTED_TWICE = transitions(
    "Starting", "Training", "Interrupted", "Starting", "Training", "Interrupted", "Starting"
)


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (transitions("Starting", "Downloading", "Training"), 0),
        (INTERRUPTED_TWICE, 2),
        ([{"Status": "Interrupted"}, "junk", {"Status": None}, {}], 1),
        ("not a list", 0),
        (None, 0),
    ],
)
def test_interruptions_are_counted_from_secondary_status_history(history: object, expected: int) -> None:
    assert interruptions({"SecondaryStatusTransitions": history}) == expected


def test_the_on_demand_request_changes_only_the_spot_members() -> None:
    spot = spot_request()
    before = copy.deepcopy(spot)

    on_demand = on_demand_request(spot)

    assert spot == before
    assert on_demand["EnableManagedSpotTraining"] is False
    assert on_demand["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
    assert on_demand["CheckpointConfig"] == spot["CheckpointConfig"]
    assert {key: value for key, value in on_demand.items() if key not in ("EnableManagedSpotTraining",
                                                                         "StoppingCondition")} == {
        key: value for key, value in spot.items() if key not in ("EnableManagedSpotTraining", "StoppingCondition")
    }  # fmt: skip
    assert not is_spot(on_demand) and is_spot(spot)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
MEMBERS = st.dictionaries(st.text(min_size=1, max_size=12), JSON, max_size=6)


@given(MEMBERS, st.dictionaries(st.sampled_from(["MaxRuntimeInSeconds", "MaxWaitTimeInSeconds",
                                                 "MaxPendingTimeInSeconds"]), st.integers(1, 10**6)), st.booleans())  # fmt: skip
def test_the_transform_keeps_every_other_field(members: dict[str, Any], stopping: dict[str, int], spot: bool) -> None:
    original = {**members, "StoppingCondition": stopping, "EnableManagedSpotTraining": spot}
    before = copy.deepcopy(original)

    on_demand = on_demand_request(original)

    assert original == before
    assert on_demand["EnableManagedSpotTraining"] is False
    assert on_demand["StoppingCondition"] == {key: value for key, value in stopping.items()
                                              if key != "MaxWaitTimeInSeconds"}  # fmt: skip
    assert {key: value for key, value in on_demand.items() if key not in ("EnableManagedSpotTraining",
                                                                         "StoppingCondition")} == members  # fmt: skip
    on_demand_again = on_demand_request(on_demand)
    assert on_demand_again == on_demand
    for value in on_demand.values():
        assert all(
            value is not original_value for original_value in original.values() if isinstance(value, dict | list)
        )


SPOT_JOB = job(JobState.RUNNING, stored_request=spot_request())
SPOT_NAME = attempt_name(SPOT_JOB)


def interrupted(times: int, name: str = SPOT_NAME, status: str = "InProgress") -> dict[str, Any]:
    history = transitions(*(["Starting", "Training", "Interrupted"] * times), "Starting")
    return description(name, status, "Starting", SecondaryStatusTransitions=history)


def test_an_attempt_interrupted_more_than_the_limit_falls_back_to_on_demand() -> None:
    fallback = decide_spot_fallback(SPOT_JOB, interrupted(4), Policy(), ROOMY)

    assert isinstance(fallback, FallBackToOnDemand)
    assert (fallback.job_name, fallback.attempt, fallback.training_job_name) == ("vit", 1, SPOT_NAME)
    assert fallback.request == on_demand_request(SPOT_JOB.request)
    assert fallback.reason == (
        "spot fallback: attempt 1 was interrupted 4 times (limit 3); queued again on demand "
        "(EnableManagedSpotTraining false, MaxWaitTimeInSeconds removed) and resumes from its checkpoints in "
        "s3://bucket/ckpt/vit/abc/"
    )


@pytest.mark.parametrize(
    ("queued", "report", "policy", "falls_back"),
    [
        (SPOT_JOB, interrupted(3), Policy(), False),
        (SPOT_JOB, interrupted(1), Policy(spot_interruption_limit=0), True),
        (SPOT_JOB, interrupted(4, status="Stopping"), Policy(), False),
        (SPOT_JOB, interrupted(4, name="someone-else"), Policy(), False),
        (job(JobState.STARTING, stored_request=spot_request()), interrupted(4), Policy(), True),
        (job(JobState.PREEMPTING, stored_request=spot_request()), interrupted(4), Policy(), False),
        (job(JobState.STOPPING, stored_request=spot_request()), interrupted(4), Policy(), False),
        (job(JobState.RUNNING, stored_request=request()), interrupted(4), Policy(), False),
        (job(JobState.RUNNING, stored_request=on_demand_request(spot_request())), interrupted(9), Policy(), False),
        (job(JobState.RUNNING, stored_request=spot_request(Tags=[{"Key": "smq:spot-only", "Value": "true"}])),
         interrupted(9), Policy(), False),
    ],
    ids=["at the limit", "limit zero", "already stopping", "another training job", "starting", "preempting",
         "stopping", "on demand", "fallen back already", "spot only"],
)  # fmt: skip
def test_fallback_table(queued: Any, report: dict[str, Any], policy: Policy, falls_back: bool) -> None:
    assert isinstance(decide_spot_fallback(queued, report, policy, ROOMY), FallBackToOnDemand) is falls_back


def test_a_job_without_checkpoints_is_told_it_starts_over() -> None:
    without = spot_request()
    del without["CheckpointConfig"]
    queued = job(JobState.RUNNING, stored_request=without)

    fallback = decide_spot_fallback(queued, interrupted(4, name=attempt_name(queued)), Policy(), ROOMY)

    assert isinstance(fallback, FallBackToOnDemand)
    assert fallback.reason.endswith("starts over: the request has no CheckpointConfig")
    assert "CheckpointConfig" not in fallback.request


def stopped(name: str, secondary: str) -> TrainingJobStatus:
    return TrainingJobStatus(name=name, status="Stopped", secondary_status=secondary)


def test_a_spot_job_stopped_at_its_max_wait_time_is_queued_again_on_demand() -> None:
    fallback = decide_max_wait(SPOT_JOB, stopped(SPOT_NAME, "MaxWaitTimeExceeded"), ROOMY)

    assert fallback == FallBackToOnDemand(
        "vit", 1, SPOT_NAME, on_demand_request(SPOT_JOB.request),
        "spot fallback: SageMaker stopped attempt 1 at its MaxWaitTimeInSeconds (7200 s); queued again on demand "
        "(EnableManagedSpotTraining false, MaxWaitTimeInSeconds removed) and resumes from its checkpoints in "
        "s3://bucket/ckpt/vit/abc/",
    )  # fmt: skip


def test_a_spot_only_job_stopped_at_its_max_wait_time_fails_with_that_reason() -> None:
    spot_only = job(JobState.RUNNING, stored_request=spot_request(Tags=[{"Key": "smq:spot-only", "Value": "true"}]))

    failed = decide_max_wait(spot_only, stopped(attempt_name(spot_only), "MaxWaitTimeExceeded"), ROOMY)

    assert failed == FailJob(
        "vit", 1, AttemptOutcome.MAX_WAIT_TIME_EXCEEDED,
        "stopped by SageMaker: MaxWaitTimeInSeconds (7200 s) exceeded; a managed-spot job must finish, waits for "
        "spot capacity included, within it (tagged smq:spot-only: never on demand)",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("queued", "report"),
    [
        (SPOT_JOB, stopped(SPOT_NAME, "Stopped")),
        (SPOT_JOB, stopped(SPOT_NAME, "MaxRuntimeExceeded")),
        (SPOT_JOB, TrainingJobStatus(name=SPOT_NAME, status="InProgress", secondary_status="MaxWaitTimeExceeded")),
        (SPOT_JOB, stopped("someone-else", "MaxWaitTimeExceeded")),
        (job(JobState.PREEMPTING, stored_request=spot_request()), stopped(SPOT_NAME, "MaxWaitTimeExceeded")),
        (job(JobState.STOPPING, stored_request=spot_request()), stopped(SPOT_NAME, "MaxWaitTimeExceeded")),
        (job(JobState.PENDING, past_outcomes=["preempted"]), stopped(SPOT_NAME, "MaxWaitTimeExceeded")),
    ],
    ids=["plain stop", "max runtime", "not stopped", "another training job", "preempting", "stopping", "ended"],
)
def test_other_reports_are_not_max_wait(queued: Any, report: TrainingJobStatus) -> None:
    assert decide_max_wait(queued, report, ROOMY) is None


def running_spot(**resources: Any) -> Job:
    """A running spot job of `resources` (its ResourceConfig), its placements and demand as
    submission makes them, started at its first placement."""
    stored = spot_request(ResourceConfig={**resources, "VolumeSizeInGB": 50})
    pending = replace(job(JobState.PENDING, stored_request=stored), demand=demand_of(stored),
                      placements=placements_of(stored), purchase=purchase_of(stored))  # fmt: skip
    first = pending.placements[0] if pending.placements else None
    return lifecycle.mark_running(lifecycle.start(pending, NOW, reason="fits", nonce=NONCE, placement=first), NOW)


def flexible(*preferences: tuple[str, int]) -> Job:
    return running_spot(
        InstancePreferences=[{"InstanceType": kind, "InstanceCount": count} for kind, count in preferences]
    )


def grouped(*groups: tuple[str, int]) -> Job:
    return running_spot(
        InstanceGroups=[
            {"InstanceGroupName": f"g{n}", "InstanceType": kind, "InstanceCount": count}
            for n, (kind, count) in enumerate(groups)
        ]
    )


P5 = "ml.p5.48xlarge"


@pytest.mark.parametrize(
    ("queued", "capacity", "falls_back"),
    [
        (SPOT_JOB, OnDemandCapacity({G5: 1}), True),
        (SPOT_JOB, OnDemandCapacity({G5: 0, f"{G5}:spot": 8}), False),
        (running_spot(InstanceType=G5, InstanceCount=2), OnDemandCapacity({G5: 1}), False),
        (SPOT_JOB, OnDemandCapacity({}, unpooled_unlimited=True), True),
        (SPOT_JOB, OnDemandCapacity({}), False),
        (SPOT_JOB, OnDemandCapacity({G5: 0}, unpooled_unlimited=True), False),
        (flexible((G5, 1), (P5, 1)), OnDemandCapacity({G5: 0, P5: 1}), True),
        (flexible((G5, 1), (P5, 1)), OnDemandCapacity({G5: 0, P5: 0}), False),
        (grouped((G5, 1), (P5, 1)), OnDemandCapacity({G5: 1, P5: 1}), True),
        (grouped((G5, 1), (P5, 1)), OnDemandCapacity({G5: 1, P5: 0}), False),
    ],
    ids=["a pool holds it", "a pool of 0 beside a spot pool", "a pool too small", "unpooled, unlimited",
         "unpooled, rejected", "a pool of 0 while unpooled types are unlimited", "a later preference's pool",
         "no preference's pool", "every group's pool", "one group's pool of 0"],
)  # fmt: skip
def test_an_interrupted_job_falls_back_only_where_an_on_demand_pool_can_hold_it(
    queued: Any, capacity: OnDemandCapacity, falls_back: bool
) -> None:
    decision = decide_spot_fallback(queued, interrupted(4, name=attempt_name(queued)), Policy(), capacity)

    assert isinstance(decision, FallBackToOnDemand if falls_back else StayOnSpot)


def quotas(sharing: Sharing, borrow_limit: int | None = None, team: str = "nlp") -> Teams:
    """A queue whose team `team` has no on-demand quota of G5 beside `other`, which lends 2."""
    return Teams(
        quotas={
            team: Quota({G5: 0}, sharing=sharing, borrow_limit=borrow_limit),
            "other": Quota({G5: 2}, sharing=Sharing.LEND),
        }
    )


@pytest.mark.parametrize(
    ("teams", "falls_back"),
    [
        (quotas(Sharing.LEND_AND_BORROW), True),
        (quotas(Sharing.LEND_AND_BORROW, borrow_limit=1), True),
        (quotas(Sharing.LEND_AND_BORROW, borrow_limit=0), False),
        (quotas(Sharing.RESERVE), False),
        (quotas(Sharing.LEND), False),
        (quotas(Sharing.RESERVE, team="misspelt"), True),
    ],
    ids=["it may borrow", "within its borrow limit", "a borrow limit of 0", "its team reserves a quota of 0",
         "its team lends a quota of 0", "a team the configuration does not name: unassigned, which borrows"],
)  # fmt: skip
def test_an_interrupted_job_falls_back_only_where_its_team_may_ever_hold_it_on_demand(
    teams: Teams, falls_back: bool
) -> None:
    nlp = replace(SPOT_JOB, team="nlp")

    decision = decide_spot_fallback(nlp, interrupted(4), Policy(), OnDemandCapacity({G5: 2}, teams=teams))

    assert isinstance(decision, FallBackToOnDemand if falls_back else StayOnSpot)
    if not falls_back:
        assert "ml.g5.xlarge has no on-demand capacity for nlp (0 instances at most, it needs 1)" in decision.reason


def test_without_on_demand_capacity_it_stays_on_spot_and_says_why_once() -> None:
    stays = decide_spot_fallback(SPOT_JOB, interrupted(4), Policy(), OnDemandCapacity({G5: 0}))

    assert stays == StayOnSpot(
        "vit", 1,
        "stays on spot: interrupted more than 3 times (spot_interruption_limit 3), but ml.g5.xlarge has no "
        "on-demand capacity here (pool of 0 instances, it needs 1); SageMaker goes on restarting it on spot",
    )  # fmt: skip
    told = replace(SPOT_JOB, reason=stays.reason)
    assert decide_spot_fallback(told, interrupted(5), Policy(), OnDemandCapacity({G5: 0})) is None
    starting = job(JobState.STARTING, stored_request=spot_request())
    assert decide_spot_fallback(starting, interrupted(4), Policy(), OnDemandCapacity({G5: 0})) is None


@pytest.mark.parametrize(
    ("capacity", "why"),
    [
        (OnDemandCapacity({G5: 0}), "ml.g5.xlarge has no on-demand capacity here (pool of 0 instances, it needs 1)"),
        (
            OnDemandCapacity({}),
            "ml.g5.xlarge has no on-demand capacity here (no pool, and unpooled types are rejected)",
        ),
    ],
    ids=["a pool of 0", "no pool"],
)
def test_a_spot_job_stopped_at_its_max_wait_without_on_demand_capacity_fails_saying_why(
    capacity: OnDemandCapacity, why: str
) -> None:
    failed = decide_max_wait(SPOT_JOB, stopped(SPOT_NAME, "MaxWaitTimeExceeded"), capacity)

    assert failed == FailJob(
        "vit", 1, AttemptOutcome.MAX_WAIT_TIME_EXCEEDED,
        f"stopped by SageMaker: MaxWaitTimeInSeconds (7200 s) exceeded; it cannot move on demand: {why}; "
        "resubmit it to resume from its checkpoints in s3://bucket/ckpt/vit/abc/",
    )  # fmt: skip
