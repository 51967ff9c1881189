"""Heterogeneous clusters at submission, through the real handler on moto DynamoDB: what SageMaker
refuses for `ResourceConfig.InstanceGroups` is a 400 naming the field and the rule, and nothing is
written; what it takes is queued in every pool its groups use."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.api.builders import G5, P5, instance_groups, replaced, training_request
from tests.api.gateway import ApiGateway
from tests.api.refusals import assert_refused_and_nothing_written
from tests.support.fakes import RecordingTrigger

HETEROGENEOUS = training_request("hetero-job", ResourceConfig=instance_groups((P5, 1), (G5, 2)))
"""Groups `group-0` (one P5) and `group-1` (two G5)."""


def channel(*group_names: str) -> dict[str, Any]:
    """A training channel whose data goes to the named groups only."""
    source: dict[str, Any] = {"S3DataType": "S3Prefix", "S3Uri": "s3://smq-test-bucket/train"}
    if group_names:
        source["InstanceGroupNames"] = list(group_names)
    return {"ChannelName": "train", "DataSource": {"S3DataSource": source}}


def distributed_on(request: dict[str, Any], *group_names: str) -> dict[str, Any]:
    """`request` with the SageMaker SDK's `distribution={"instance_groups": [...]}` hyperparameter."""
    hyperparameters = {**request["HyperParameters"], "sagemaker_distribution_instance_groups": json.dumps(group_names)}
    return replaced(request, "HyperParameters", hyperparameters)


CHANNELS = "InputDataConfig[0].DataSource.S3DataSource.InstanceGroupNames"
DISTRIBUTION = "HyperParameters.sagemaker_distribution_instance_groups"

REFUSALS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "a managed warm pool",
        replaced(HETEROGENEOUS, "ResourceConfig.KeepAlivePeriodInSeconds", 600),
        "ResourceConfig.KeepAlivePeriodInSeconds",
        "warm pools",
    ),
    (
        "a managed warm pool of no seconds",
        replaced(HETEROGENEOUS, "ResourceConfig.KeepAlivePeriodInSeconds", 0),
        "ResourceConfig.KeepAlivePeriodInSeconds",
        "warm pools",
    ),
    (
        "two groups of one name",
        replaced(HETEROGENEOUS, "ResourceConfig.InstanceGroups", [HETEROGENEOUS["ResourceConfig"]["InstanceGroups"][0]] * 2),
        "ResourceConfig.InstanceGroups[1].InstanceGroupName",
        "earlier group",
    ),
    (
        "six groups, one more than SageMaker takes",
        training_request("hetero-job", ResourceConfig=instance_groups(*[(G5, 1)] * 6)),
        "ResourceConfig.InstanceGroups",
        "5",
    ),
    ("no group", training_request("hetero-job", ResourceConfig={"InstanceGroups": []}), "ResourceConfig.InstanceGroups", "at least one"),
    (
        "an instance type beside the groups",
        replaced(HETEROGENEOUS, "ResourceConfig.InstanceType", G5),
        "ResourceConfig.InstanceType",
        "cannot be given",
    ),
    (
        "a channel for a group the job lacks",
        {**HETEROGENEOUS, "InputDataConfig": [channel("group-1", "group-9")]},
        f"{CHANNELS}[1]",
        "'group-9'",
    ),
    (
        "a channel for groups of a job without any",
        training_request("hetero-job", InputDataConfig=[channel("group-0")]),
        f"{CHANNELS}[0]",
        "no ResourceConfig.InstanceGroups",
    ),
    (
        "a channel for six groups",
        {**HETEROGENEOUS, "InputDataConfig": [channel(*["group-0"] * 6)]},
        CHANNELS,
        "5",
    ),
    ("a distribution over a group the job lacks", distributed_on(HETEROGENEOUS, "dnn"), DISTRIBUTION, "'dnn'"),
    (
        "a distribution that is not a list",
        replaced(HETEROGENEOUS, "HyperParameters", {"sagemaker_distribution_instance_groups": '"group-0"'}),
        DISTRIBUTION,
        "JSON list",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "field", "rule"), [case[1:] for case in REFUSALS], ids=[case[0] for case in REFUSALS]
)
def test_what_sagemaker_refuses_for_instance_groups_is_refused_and_nothing_written(
    api: ApiGateway,
    dump_table: Callable[[], list[dict[str, Any]]],
    trigger: RecordingTrigger,
    request_body: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    assert_refused_and_nothing_written(api, dump_table, trigger, request_body, field, rule)


@pytest.mark.parametrize(
    "request_body",
    [
        HETEROGENEOUS,
        {**HETEROGENEOUS, "InputDataConfig": [channel("group-1")]},
        distributed_on(HETEROGENEOUS, "group-0"),
        training_request("hetero-job", InputDataConfig=[channel()]),
    ],
    ids=["plain groups", "a channel for one group", "a distribution over one group", "no groups, no group names"],
)
def test_what_sagemaker_takes_is_queued(api: ApiGateway, request_body: dict[str, Any]) -> None:
    assert api.add(request_body).status == 202

    assert api.get("hetero-job").body["state"] == "pending"
