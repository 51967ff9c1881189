"""Flexible jobs at submission, through the real handler on moto DynamoDB: `ResourceConfig.
InstancePreferences` (or the `smq:instance-preferences` tag that writes it) is queued under its first
preference and shown with every preference; what SageMaker would refuse, or the queue could never
run, is a 400 naming the field, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.placements.placement import Placement, pinned_request
from smq_lambda.domain.warm.warm_pools import warm_key_of
from smq_lambda.governance.policy import Policy
from smq_lambda.handlers.api import create_app, idempotency_store, lambda_handler
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, G5, P5, POOLS, TABLE, replaced, training_request
from tests.api.gateway import ApiGateway
from tests.api.refusals import assert_refused_and_nothing_written
from tests.support.fakes import FakeClock, FakeConfigSource, RecordingTrigger, StaticPolicySource

C5 = "ml.c5.xlarge"
"""An instance type with no pool (POOLS has G5 and P5; unpooled types are rejected)."""
TAG = "smq:instance-preferences"


def preferring(*preferences: tuple[str, int | None], **resources: Any) -> dict[str, Any]:
    """A flexible request; a None count is left out of its preference."""
    listed = [
        {"InstanceType": instance_type, **({} if count is None else {"InstanceCount": count})}
        for instance_type, count in preferences
    ]
    return training_request(
        "flex-job", ResourceConfig={"InstancePreferences": listed, "VolumeSizeInGB": 30, **resources}
    )


def tagged(value: str, **resources: Any) -> dict[str, Any]:
    """A request as SDK v2 writes it (one instance type and count), with the preferences tag after the team tag."""
    request = training_request("flex-job", instance_type=G5, instances=2)
    request["ResourceConfig"].update(resources)
    request["Tags"].append({"Key": TAG, "Value": value})
    return request


FLEXIBLE = preferring((P5, 2), (G5, 4))
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-plan"

REFUSALS: list[tuple[str, dict[str, Any], str, str]] = [
    ("beside an instance type", replaced(FLEXIBLE, "ResourceConfig.InstanceType", G5), "ResourceConfig.InstanceType", "cannot be given"),
    ("beside instance groups",
     replaced(FLEXIBLE, "ResourceConfig.InstanceGroups", [{"InstanceType": G5, "InstanceCount": 1, "InstanceGroupName": "g"}]),
     "ResourceConfig.InstanceGroups", "cannot be given"),
    ("an instance type twice", preferring((P5, 1), (G5, 1), (P5, 2)), "ResourceConfig.InstancePreferences[2].InstanceType", "earlier preference"),
    ("a count on some preferences only", preferring((P5, 1), (G5, None)), "ResourceConfig.InstancePreferences[1].InstanceCount", "every preference"),
    ("counts per preference and for the job", preferring((P5, 1), (G5, 2), InstanceCount=2), "ResourceConfig.InstanceCount", "cannot be given"),
    ("no count anywhere", preferring((P5, None), (G5, None)), "ResourceConfig.InstanceCount", "is required"),
    ("no instances", preferring((P5, 0)), "ResourceConfig.InstancePreferences[0].InstanceCount", "from 1"),
    ("a shared count of no instances", preferring((P5, None), InstanceCount=0), "ResourceConfig.InstanceCount", "from 1"),
    ("six preferences", preferring(*[(G5, 1)] * 6), "ResourceConfig.InstancePreferences", "5"),
    ("an unknown instance type", preferring((P5, 1), ("ml.zz.xlarge", 1)), "ResourceConfig.InstancePreferences[1].InstanceType", "closest"),
    ("none could ever run", preferring((C5, 1), (P5, 3)), "ResourceConfig.InstancePreferences", "no capacity pool"),
    ("a plan per preference and for the job",
     preferring((P5, 1), TrainingPlanArn=PLAN) | {"ResourceConfig": {"InstancePreferences": [{"InstanceType": P5, "InstanceCount": 1, "TrainingPlanArns": [PLAN]}], "TrainingPlanArn": PLAN}},
     "ResourceConfig.InstancePreferences[0].TrainingPlanArns", "cannot be given"),
    ("the tag beside InstancePreferences", {**FLEXIBLE, "Tags": [{"Key": TAG, "Value": G5}]}, "Tags[0].Key", "cannot be given"),
    ("the tag malformed", tagged("ml.g5.xlarge:two"), "Tags[1].Value", "TYPE:COUNT"),
    ("the tag empty", tagged(""), "Tags[1].Value", "1 to 5"),
    ("the tag naming an unknown type", tagged("ml.zz.xlarge:1"), "Tags[1].Value", "closest"),
    ("the tag naming a type twice", tagged(f"{G5}:1,{G5}:2"), "Tags[1].Value", "earlier preference"),
    ("the tag too large for every pool", tagged(f"{P5}:3,{G5}:5"), "Tags[1].Value", "is too many: that pool holds only"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "field", "rule"), [case[1:] for case in REFUSALS], ids=[case[0] for case in REFUSALS]
)
def test_what_sagemaker_or_the_queue_refuses_is_refused_and_nothing_written(
    api: ApiGateway,
    dump_table: Callable[[], list[dict[str, Any]]],
    trigger: RecordingTrigger,
    request_body: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    assert_refused_and_nothing_written(api, dump_table, trigger, request_body, field, rule)


ACCEPTED: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    ("counts per preference", FLEXIBLE, [{"instance_type": P5, "count": 2}, {"instance_type": G5, "count": 4}]),
    ("one count for the job", preferring((P5, None), (G5, None), InstanceCount=2),
     [{"instance_type": P5, "count": 2}, {"instance_type": G5, "count": 2}]),
    ("a preference that can never run beside one that can", preferring((C5, 1), (G5, 1)),
     [{"instance_type": C5, "count": 1}, {"instance_type": G5, "count": 1}]),
    ("managed spot (the queue pins each attempt)", {**FLEXIBLE, "EnableManagedSpotTraining": True},
     [{"instance_type": P5, "count": 2}, {"instance_type": G5, "count": 4}]),
    ("the tag, counts given", tagged(f"{P5}:2,{G5}:4"), [{"instance_type": P5, "count": 2}, {"instance_type": G5, "count": 4}]),
    ("the tag, spaces and the request's count", tagged(f"{P5}:1 {G5}"),
     [{"instance_type": P5, "count": 1}, {"instance_type": G5, "count": 2}]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "preferences"), [case[1:] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED]
)
def test_a_flexible_job_is_listed_under_its_first_preference_and_shows_every_one(
    api: ApiGateway, request_body: dict[str, Any], preferences: list[dict[str, Any]]
) -> None:
    added = api.add(request_body)

    assert added.status == 202, added.body
    job = api.get("flex-job").body
    assert job["instance_preferences"] == preferences
    assert (job["pool"], job["instances"]) == (preferences[0]["instance_type"], preferences[0]["count"])
    assert (job["selected_instance_type"], job["selected_instance_count"]) == (None, None)
    assert [listed["name"] for listed in api.list_jobs(pool=preferences[0]["instance_type"]).body["jobs"]] == [
        "flex-job"
    ]


def test_the_tag_is_written_as_instance_preferences_and_removed(api: ApiGateway) -> None:
    api.add(tagged(f"{P5}:2, {G5}"))

    stored = api.request("GET", "/jobs/flex-job", query={"include": "request"}).body["request"]

    assert stored["ResourceConfig"] == {
        "InstancePreferences": [{"InstanceType": P5, "InstanceCount": 2}, {"InstanceType": G5, "InstanceCount": 2}],
        "VolumeSizeInGB": 30,
    }
    assert stored["Tags"] == [{"Key": "team", "Value": "vision"}]


def test_a_pinned_job_has_no_preferences_and_no_selection(api: ApiGateway) -> None:
    api.add(training_request("pinned-job"))

    job = api.get("pinned-job").body

    assert (job["instance_preferences"], job["selected_instance_type"], job["selected_instance_count"]) == (
        [],
        None,
        None,
    )


def test_a_started_flexible_job_shows_the_preference_it_runs_at(
    api: ApiGateway, store: DynamoJobStore, clock: FakeClock
) -> None:
    api.add(FLEXIBLE)
    run_at(store, "flex-job", clock(), Placement(G5, 4))  # as a pass places it while P5 is full

    shown = api.get("flex-job").body

    assert (shown["selected_instance_type"], shown["selected_instance_count"]) == (G5, 4)
    assert (shown["pool"], shown["instances"], shown["state"]) == (G5, 4, "running")


def test_each_attempt_shows_its_placement_and_the_keep_alive_the_queue_sent(
    api: ApiGateway, store: DynamoJobStore, clock: FakeClock
) -> None:
    api.add(preferring((P5, 2), (G5, 4), KeepAlivePeriodInSeconds=1800))
    api.add(training_request("pinned-job"))
    run_at(store, "flex-job", clock(), Placement(G5, 4), keep_alive_s=600)
    run_at(store, "pinned-job", clock())

    (flexible,) = api.get("flex-job").body["attempts"]
    (pinned,) = api.get("pinned-job").body["attempts"]

    assert (flexible["instance_type"], flexible["instance_count"], flexible["keep_alive_s"]) == (G5, 4, 600)
    assert (pinned["instance_type"], pinned["instance_count"], pinned["keep_alive_s"]) == (G5, 1, None)
    assert api.get("pinned-job").body["selected_instance_type"] == G5


def test_each_preference_gets_the_warm_key_of_the_request_pinned_to_it() -> None:
    request = preferring((P5, 2), (G5, 4), KeepAlivePeriodInSeconds=1800)

    now = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    job = new_job(request, owner=ALICE, config=SchedulerConfig(pools=POOLS), policy=SubmissionPolicy(), now=now)

    keys = [placement.warm_key for placement in job.placements]
    assert keys == [warm_key_of(pinned_request(request, placement)) for placement in job.placements]
    assert None not in keys and len(set(keys)) == 2 and job.warm_key is None


def test_a_pool_filter_finds_a_pending_flexible_job_in_each_preference_and_a_started_one_where_it_runs(
    api: ApiGateway, store: DynamoJobStore, clock: FakeClock
) -> None:
    api.add(FLEXIBLE)

    def listed() -> dict[str, list[str]]:
        pages = {pool: api.list_jobs(pool=pool, state="all").body["jobs"] for pool in (P5, G5)}
        return {pool: [job["name"] for job in jobs] for pool, jobs in pages.items()}

    waiting = listed()
    run_at(store, "flex-job", clock(), Placement(G5, 4))

    assert waiting == {P5: ["flex-job"], G5: ["flex-job"]}
    assert listed() == {P5: [], G5: ["flex-job"]}


def run_at(
    store: DynamoJobStore, name: str, now: datetime, placement: Placement | None = None, keep_alive_s: int | None = None
) -> None:
    """Start and run a job at `placement` (None: a pinned job), the way a scheduling pass and SageMaker would."""
    job = store.get(name)
    assert job is not None
    at = lifecycle.start(job, now, reason="placed", placement=placement, keep_alive_s=keep_alive_s)
    started = store.save(at, expected_version=job.version)
    store.save(lifecycle.mark_running(started, now), expected_version=started.version)


GOVERNED = Policy(allowed_instance_types=(G5,), max_instance_count=3)


@pytest.mark.parametrize(
    ("request_body", "violations"),
    [
        (FLEXIBLE, [
            ("ResourceConfig.InstancePreferences[0].InstanceType", "allowed_instance_types"),
            ("ResourceConfig.InstancePreferences[1].InstanceCount", "max_instance_count"),
        ]),
        (tagged(f"{G5}:4"), [("ResourceConfig.InstancePreferences[0].InstanceCount", "max_instance_count")]),
    ],
    ids=["raw preferences", "the tag"],
)  # fmt: skip
def test_the_governance_limits_hold_for_every_preference(
    store: DynamoJobStore,
    config: FakeConfigSource,
    trigger: RecordingTrigger,
    policy: SubmissionPolicy,
    dynamodb: Any,
    dump_table: Callable[[], list[dict[str, Any]]],
    request_body: dict[str, Any],
    violations: list[tuple[str, str]],
) -> None:
    service = QueueService(store, config, trigger, policy=policy, governance=StaticPolicySource(GOVERNED))
    governed = ApiGateway(lambda_handler(lambda: create_app(service, idempotency_store(TABLE, dynamodb))))

    reply = governed.add(request_body)

    assert reply.status == 400, reply.body
    assert [(item["field"], item["rule"]) for item in reply.body["violations"]] == violations
    assert dump_table() == []
