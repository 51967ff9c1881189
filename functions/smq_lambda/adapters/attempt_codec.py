"""The parts of a job's item that are lists of maps: its attempts (each with its placement), a
flexible job's placements, and its history of notable changes (layout: item_codec.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smq_lambda.adapters.attribute_values import (
    Item,
    bounded_text,
    format_time,
    optional_n,
    optional_outcome,
    optional_s,
    optional_time,
    parse_time,
)
from smq_lambda.domain.jobs.model import Attempt, Change
from smq_lambda.domain.placements.placement import Placement


def attempt_to_map(attempt: Attempt) -> Item:
    entry: Item = {
        "number": {"N": str(attempt.number)},
        "training_job_name": {"S": attempt.training_job_name},
        "started_at": {"S": format_time(attempt.started_at)},
        "backfill": {"BOOL": attempt.backfill},
    }
    if attempt.ended_at is not None:
        entry["ended_at"] = {"S": format_time(attempt.ended_at)}
    if attempt.outcome is not None:
        entry["outcome"] = {"S": str(attempt.outcome)}
    if attempt.reason is not None:
        entry["reason"] = {"S": bounded_text(attempt.reason)}
    if attempt.warned_at is not None:
        entry["warned_at"] = {"S": format_time(attempt.warned_at)}
    if attempt.placement is not None:
        entry["placement"] = {"M": placement_to_map(attempt.placement)}
    if attempt.keep_alive_s is not None:
        entry["keep_alive_s"] = {"N": str(attempt.keep_alive_s)}
    return entry


def attempt_from_map(entry: Mapping[str, Mapping[str, Any]]) -> Attempt:
    return Attempt(
        number=int(entry["number"]["N"]),
        training_job_name=entry["training_job_name"]["S"],
        started_at=parse_time(entry["started_at"]["S"]),
        ended_at=optional_time(entry, "ended_at"),
        outcome=optional_outcome(entry, "outcome"),
        reason=optional_s(entry, "reason"),
        backfill=bool(entry["backfill"]["BOOL"]),
        warned_at=optional_time(entry, "warned_at"),
        placement=placement_from_map(entry["placement"]["M"]) if "placement" in entry else None,
        keep_alive_s=optional_n(entry, "keep_alive_s"),
    )


def placement_to_map(placement: Placement) -> Item:
    entry: Item = {"instance_type": {"S": placement.instance_type}, "count": {"N": str(placement.count)}}
    if placement.pool:
        entry["pool"] = {"S": placement.pool}
    if placement.training_plan_arns:
        entry["plans"] = {"L": [{"S": arn} for arn in placement.training_plan_arns]}
    if placement.spot:
        entry["spot"] = {"BOOL": True}
    if placement.training_plan_arn is not None:
        entry["plan"] = {"S": placement.training_plan_arn}
    if placement.warm_key is not None:
        entry["warm_key"] = {"S": placement.warm_key}
    if placement.warm_pool is not None:
        entry["warm_pool"] = {"S": placement.warm_pool}
    return entry


def placement_from_map(entry: Mapping[str, Mapping[str, Any]]) -> Placement:
    return Placement(
        instance_type=entry["instance_type"]["S"],
        count=int(entry["count"]["N"]),
        pool=optional_s(entry, "pool") or "",
        training_plan_arns=tuple(arn["S"] for arn in entry.get("plans", {"L": []})["L"]),
        spot=entry.get("spot", {}).get("BOOL", False),
        training_plan_arn=optional_s(entry, "plan"),
        warm_key=optional_s(entry, "warm_key"),
        warm_pool=optional_s(entry, "warm_pool"),
    )


def change_to_map(change: Change) -> Item:
    return {"at": {"S": format_time(change.at)}, "by": {"S": change.by}, "what": {"S": bounded_text(change.what)}}


def change_from_map(entry: Mapping[str, Mapping[str, Any]]) -> Change:
    return Change(at=parse_time(entry["at"]["S"]), by=entry["by"]["S"], what=entry["what"]["S"])
