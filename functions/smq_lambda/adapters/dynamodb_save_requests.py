"""The requests that write a saved job: the UpdateItem of the attributes that change, the Put or
Delete of the job's listing items that goes with any write of its item (a create's too), and their
sending. The store decides which of them a save needs (the request attribute only when it changed,
the pools' live sets, the listings); this module says what each request is and what a refused one
means: VersionConflict, or a busy table tried again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from smq_lambda.adapters.dynamodb_errors import condition_failed, error_code, unavailable_as_typed
from smq_lambda.adapters.dynamodb_table import (
    CONDITION_FAILED_REASON,
    TRANSACTION_CANCELED,
    cancellation_codes,
    transaction_busy,
)
from smq_lambda.adapters.item_codec import IMMUTABLE_ATTRIBUTES, OPTIONAL_ATTRIBUTES, Item
from smq_lambda.adapters.pending_listing import listing_changes
from smq_lambda.domain.jobs.model import Job
from smq_lambda.errors import ServiceUnavailable, VersionConflict

SAVE_ROUNDS = 3
"""A save whose transaction met another on the same pool item (TransactionConflict) changed
nothing; it is tried again this many times before it is reported as ServiceUnavailable."""


def listing_actions(table: str, job: Job, item: Item) -> list[dict[str, Any]]:
    """The Put or Delete of each of the job's listing items a write of it makes (pending_listing)."""
    return [
        {"Put": {"TableName": table, "Item": listed}}
        if listed is not None
        else {"Delete": {"TableName": table, "Key": {"name": {"S": key}}}}
        for key, listed in listing_changes(job, item).items()
    ]


def job_update(table: str, job: Job, item: Item, expected_version: int, *, with_request: bool) -> dict[str, Any]:
    """The UpdateItem request that turns the stored item into `job`'s (`item`), if still at
    `expected_version`."""
    if not with_request:
        item = {attribute: value for attribute, value in item.items() if attribute != "request"}
    placeholders = {"#version": "version", "#job_id": "job_id"}
    values: dict[str, Any] = {":expected": {"N": str(expected_version)}, ":job_id": {"S": job.job_id}}
    sets = []
    for index, (attribute, value) in enumerate(sorted(item.items())):
        if attribute in IMMUTABLE_ATTRIBUTES:
            continue
        placeholders[f"#a{index}"] = attribute
        values[f":a{index}"] = value
        sets.append(f"#a{index} = :a{index}")
    removes = []
    for index, attribute in enumerate(OPTIONAL_ATTRIBUTES):
        if attribute not in item:
            placeholders[f"#r{index}"] = attribute
            removes.append(f"#r{index}")
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return {
        "TableName": table,
        "Key": {"name": {"S": job.name}},
        "UpdateExpression": expression,
        "ConditionExpression": "#version = :expected AND #job_id = :job_id",
        "ExpressionAttributeNames": placeholders,
        "ExpressionAttributeValues": values,
    }


def update_job(client: Any, update: Mapping[str, Any], name: str) -> None:
    """The job's conditional update alone; a failed condition is VersionConflict."""
    try:
        with unavailable_as_typed(transaction_busy):
            client.update_item(**update)
    except ClientError as exc:
        if condition_failed(exc):
            raise VersionConflict(name) from exc
        raise


def transact_job(client: Any, actions: list[dict[str, Any]], name: str) -> None:
    """One transaction whose first action is the job's conditional update; a failed condition is
    VersionConflict, and a conflict with another transaction or an unanswered call is tried
    again a few times under the same client token, so a try whose answer was lost but which
    landed succeeds again instead of failing its own condition (DynamoDB keeps the token ten
    minutes)."""
    token = uuid.uuid4().hex
    for round_number in range(SAVE_ROUNDS):
        try:
            with unavailable_as_typed(transaction_busy):
                client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
            return
        except ClientError as exc:
            if error_code(exc) == TRANSACTION_CANCELED and cancellation_codes(exc)[:1] == [CONDITION_FAILED_REASON]:
                raise VersionConflict(name) from exc
            raise
        except ServiceUnavailable:
            if round_number == SAVE_ROUNDS - 1:
                raise
            time.sleep(0.02 * 2**round_number)
