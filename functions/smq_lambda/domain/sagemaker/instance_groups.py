"""The instances a CreateTrainingJob request asks for, and SageMaker's rules for heterogeneous clusters.

A request names one instance type and count, or `ResourceConfig.InstanceGroups` (a heterogeneous
cluster: named groups, each of one type), or `ResourceConfig.InstancePreferences` (a flexible job:
domain/sagemaker/instance_preferences.py). botocore's model states the shape (at most 5 groups, 5 group
names per channel); SageMaker checks the rest only when the queue starts the job, hours after it was
accepted, so the queue refuses these at submission (the SageMaker developer guide, "Train Using a
Heterogeneous Cluster", and the CreateTrainingJob reference):

- groups replace `InstanceType` and `InstanceCount`; they are listed, and their names are unique;
- managed warm pools (`ResourceConfig.KeepAlivePeriodInSeconds`) cannot be used with groups;
- a channel's `S3DataSource.InstanceGroupNames` (which groups get that data) names groups of the job,
  and only a job with groups has any;
- the groups a distribution runs on (the SageMaker SDK's `sagemaker_distribution_instance_groups`
  hyperparameter) are groups of the job.

Each error names the field as a dotted path and the rule it broke.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smq_lambda.errors import InvalidRequest

MAX_INSTANCE_COUNT = 10_000
"""Far beyond any account's training quota; it bounds the numbers the queue stores and adds up."""
DISTRIBUTION_GROUPS_HYPERPARAMETER = "sagemaker_distribution_instance_groups"
"""Where the SageMaker SDK puts `distribution={"instance_groups": [...]}`: a JSON list of group names."""


@dataclass(frozen=True)
class RequestedGroup:
    """One instance group of a request (a plain ResourceConfig is one group), with the fields to blame."""

    instance_type: str
    count: int
    type_field: str
    count_field: str


def requested_groups(request: Mapping[str, Any]) -> list[RequestedGroup]:
    """The groups `request` asks for, after SageMaker's rules for them (the module docstring).

    The request is assumed to fit botocore's shape. Raises InvalidRequest naming the first field that
    breaks a rule."""
    resources = request["ResourceConfig"]
    if "InstanceGroups" not in resources:
        check_channel_groups(request, names=None)
        return [_single_group(resources)]
    names, groups = _instance_groups(resources)
    if "KeepAlivePeriodInSeconds" in resources:
        raise _broken(
            "ResourceConfig.KeepAlivePeriodInSeconds",
            "cannot be given with ResourceConfig.InstanceGroups: SageMaker managed warm pools do not "
            "support heterogeneous clusters",
        )
    check_channel_groups(request, names)
    _check_distribution_groups(request, names)
    return groups


def _broken(field: str, rule: str) -> InvalidRequest:
    return InvalidRequest(field, f"{field} {rule}")


def _check_count(value: int, field: str) -> int:
    if 1 <= value <= MAX_INSTANCE_COUNT:
        return value
    raise _broken(field, f"must be an integer from 1 to {MAX_INSTANCE_COUNT}, not {value}")


def _single_group(resources: Mapping[str, Any]) -> RequestedGroup:
    path = "ResourceConfig"
    for member in ("InstanceType", "InstanceCount"):
        if member not in resources:
            raise _broken(f"{path}.{member}", f"is required (or {path}.InstanceGroups)")
    return RequestedGroup(
        instance_type=resources["InstanceType"],
        count=_check_count(resources["InstanceCount"], f"{path}.InstanceCount"),
        type_field=f"{path}.InstanceType",
        count_field=f"{path}.InstanceCount",
    )


def _instance_groups(resources: Mapping[str, Any]) -> tuple[list[str], list[RequestedGroup]]:
    """The group names in order, and the groups."""
    for member in ("InstanceType", "InstanceCount"):
        if member in resources:
            raise _broken(f"ResourceConfig.{member}", "cannot be given with ResourceConfig.InstanceGroups")
    if not resources["InstanceGroups"]:
        raise _broken("ResourceConfig.InstanceGroups", "must list at least one instance group")
    names: list[str] = []
    groups: list[RequestedGroup] = []
    for index, group in enumerate(resources["InstanceGroups"]):
        path = f"ResourceConfig.InstanceGroups[{index}]"
        if group["InstanceGroupName"] in names:
            raise _broken(f"{path}.InstanceGroupName", f"{group['InstanceGroupName']} names an earlier group too")
        names.append(group["InstanceGroupName"])
        groups.append(
            RequestedGroup(
                instance_type=group["InstanceType"],
                count=_check_count(group["InstanceCount"], f"{path}.InstanceCount"),
                type_field=f"{path}.InstanceType",
                count_field=f"{path}.InstanceCount",
            )
        )
    return names, groups


def check_channel_groups(request: Mapping[str, Any], names: list[str] | None) -> None:
    """Each channel's InstanceGroupNames name groups of the job (`names`; None for a job without groups)."""
    for index, channel in enumerate(request.get("InputDataConfig", ())):
        listed = channel["DataSource"].get("S3DataSource", {}).get("InstanceGroupNames", ())
        for position, name in enumerate(listed):
            field = f"InputDataConfig[{index}].DataSource.S3DataSource.InstanceGroupNames[{position}]"
            if names is None:
                raise _broken(field, f"names {name!r}, but the job has no ResourceConfig.InstanceGroups")
            if name not in names:
                raise _broken(field, f"names {name!r}, which is not an instance group of the job ({_listed(names)})")


def _check_distribution_groups(request: Mapping[str, Any], names: list[str]) -> None:
    field = f"HyperParameters.{DISTRIBUTION_GROUPS_HYPERPARAMETER}"
    raw = request.get("HyperParameters", {}).get(DISTRIBUTION_GROUPS_HYPERPARAMETER)
    if raw is None:
        return
    try:
        listed = json.loads(raw)
    except ValueError:
        listed = None
    if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
        raise _broken(field, f"must be a JSON list of instance group names, not {raw!r}")
    unknown = [name for name in listed if name not in names]
    if unknown:
        raise _broken(
            field, f"names {_listed(unknown)}, which the job's instance groups ({_listed(names)}) do not include"
        )


def _listed(names: list[str]) -> str:
    return ", ".join(repr(name) for name in names)
