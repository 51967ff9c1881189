"""The queue table in template.yaml is the one the contract describes (the local stack builds its
table from the same resource, so this is the one place the shape is pinned)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from smq_lambda.adapters.item_codec import from_item, to_item
from smq_lambda.domain.jobs.model import Attempt

from tests.adapters.builders import T0, job
from tests.support.aws import pending_index_attributes


def index(properties: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [gsi for gsi in properties["GlobalSecondaryIndexes"] if gsi["IndexName"] == name]
    return found


def test_queue_table_matches_the_contract(template: dict[str, Any]) -> None:
    table = template["Resources"]["QueueTable"]
    properties = table["Properties"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["KeySchema"] == [{"AttributeName": "name", "KeyType": "HASH"}]
    assert {d["AttributeName"]: d["AttributeType"] for d in properties["AttributeDefinitions"]} == {
        "name": "S",
        "pending_pool": "S",
        "pending_team": "S",
        "order_key": "S",
        "state": "S",
        "owner_state": "S",
        "attempt_end_day": "S",
        "attempt_end": "S",
    }
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert "TableName" not in properties  # CloudFormation names it; functions get it from SMQ_TABLE_NAME


def test_pending_index_returns_a_pools_pending_jobs_in_scheduling_order(template: dict[str, Any]) -> None:
    gsi = index(template["Resources"]["QueueTable"]["Properties"], "pending-by-pool")
    assert gsi["KeySchema"] == [
        {"AttributeName": "pending_pool", "KeyType": "HASH"},
        {"AttributeName": "order_key", "KeyType": "RANGE"},
    ]
    projected = set(gsi["Projection"]["NonKeyAttributes"])
    assert gsi["Projection"]["ProjectionType"] == "INCLUDE"
    assert {"request", "history"}.isdisjoint(projected), "a pass reads queue fronts of it: no request, no history"


def test_a_job_decoded_from_the_pending_index_has_what_a_scheduling_decision_reads() -> None:
    """Every attribute the codec reads of a pending job is projected, except the request and the
    history, which the scheduler reads by key before it writes."""
    pending = replace(
        job("summary", priority=3, groups=[("ml.p5.48xlarge", 2), ("ml.g5.xlarge", 1)]),
        reason="waiting",
        not_before=T0,
        updated_at=T0,
        attempts=(Attempt(1, "x-1", T0, T0, "refused", "throttled"),),
        earlier_attempts=2,
        team="vision",
        expected_duration_s=5400,
        max_runtime_s=86400,
    )
    item = to_item(pending, ttl_days=7)
    summary = from_item({key: value for key, value in item.items() if key in pending_index_attributes()})

    assert summary == pending, "Job equality ignores the request"
    assert summary.request == {}


def test_state_index_lists_a_states_jobs_in_order(template: dict[str, Any]) -> None:
    properties = template["Resources"]["QueueTable"]["Properties"]
    gsi = index(properties, "by-state")
    assert gsi["KeySchema"] == [
        {"AttributeName": "state", "KeyType": "HASH"},
        {"AttributeName": "order_key", "KeyType": "RANGE"},
    ]
    assert gsi["Projection"] == {"ProjectionType": "ALL"}
    assert len(properties["GlobalSecondaryIndexes"]) == 5


def test_owner_index_lists_one_owners_jobs_of_a_state_in_order(template: dict[str, Any]) -> None:
    gsi = index(template["Resources"]["QueueTable"]["Properties"], "by-owner")
    assert gsi["KeySchema"] == [
        {"AttributeName": "owner_state", "KeyType": "HASH"},
        {"AttributeName": "order_key", "KeyType": "RANGE"},
    ]
    assert gsi["Projection"] == {"ProjectionType": "ALL"}, "listings return whole jobs"


def test_team_index_returns_one_teams_pending_jobs_of_a_pool_with_the_pending_projection(
    template: dict[str, Any],
) -> None:
    properties = template["Resources"]["QueueTable"]["Properties"]
    gsi = index(properties, "pending-by-team")
    assert gsi["KeySchema"] == [
        {"AttributeName": "pending_team", "KeyType": "HASH"},
        {"AttributeName": "order_key", "KeyType": "RANGE"},
    ]
    assert gsi["Projection"] == index(properties, "pending-by-pool")["Projection"]


def test_queue_history_survives_stack_deletion(template: dict[str, Any]) -> None:
    table = template["Resources"]["QueueTable"]
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")


def test_attempt_end_index_holds_what_a_timeline_draws_and_not_the_request(template: dict[str, Any]) -> None:
    """GET /attempts decodes whole jobs from it: every attribute the codec needs is projected, and
    neither the request nor the history is."""
    properties = template["Resources"]["QueueTable"]["Properties"]
    gsi = index(properties, "by-attempt-end")
    assert gsi["KeySchema"] == [
        {"AttributeName": "attempt_end_day", "KeyType": "HASH"},
        {"AttributeName": "attempt_end", "KeyType": "RANGE"},
    ]
    assert gsi["Projection"]["ProjectionType"] == "INCLUDE"
    projected = {"name", "attempt_end_day", "attempt_end", *gsi["Projection"]["NonKeyAttributes"]}
    assert {"request", "history"}.isdisjoint(projected)
    ended = replace(
        job("ran", priority=3),
        attempts=(Attempt(1, "ran-1", T0, T0, "preempted", "preempted for x"),),
        updated_at=T0,
        team="vision",
    )
    item = to_item(ended, ttl_days=7)
    assert from_item({key: value for key, value in item.items() if key in projected}) == ended
