"""SageMaker's rules for a flexible request (`ResourceConfig.InstancePreferences`), and the
`smq:instance-preferences` tag that writes one for whoever cannot write the request member itself
(SDK v2 estimators and `smq submit --prefer` set tags, not ResourceConfig).

SageMaker checks these only when a job is created, hours after the queue accepted it, so the queue
refuses them at submission (the CreateTrainingJob reference, as botocore's model documents it):

- `InstancePreferences` cannot be given with `InstanceType`, `InstanceGroups` or
  `InstancePlacementConfig`;
- an instance type appears at most once in the list;
- `InstanceCount` is given on every preference and not in `ResourceConfig`, or in `ResourceConfig`
  and on no preference;
- a preference's `TrainingPlanArns` cannot be given with the job-level `ResourceConfig.TrainingPlanArn`.

SageMaker also refuses `InstancePreferences` with `EnableManagedSpotTraining`; the queue takes that
combination, since it pins every attempt to one preference (domain/placements/placement.py) and SageMaker never
receives the list.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from smq_lambda.domain.sagemaker.instance_groups import MAX_INSTANCE_COUNT, RequestedGroup, check_channel_groups
from smq_lambda.errors import InvalidRequest

PREFERENCES_MEMBER = "InstancePreferences"

PREFERENCES_TAG = "smq:instance-preferences"
"""`ml.p4d.24xlarge:2,ml.g5.48xlarge:4`: instance types in order, separated by commas or spaces, each
with an optional count (else the request's `ResourceConfig.InstanceCount`). SageMaker's tag pattern
has no comma, so clients that check it need spaces; the queue takes both, since it removes the tag
before SageMaker sees the request."""
MAX_PREFERENCES = 5
"""SageMaker's limit on `InstancePreferences` (botocore's model)."""
EXCLUDED_MEMBERS = ("InstanceType", "InstanceGroups", "InstancePlacementConfig")
_TAG_ENTRY = re.compile(r"(?P<type>[^:\s]+)(?::(?P<count>[0-9]+))?")
_TAG_SEPARATOR = re.compile(r"\s*,\s*|\s+")
_PATH = f"ResourceConfig.{PREFERENCES_MEMBER}"


def requested_preferences(request: Mapping[str, Any]) -> list[RequestedGroup]:
    """Each preference of a flexible request, in its order, with its count and the fields to blame,
    after SageMaker's rules (the module docstring). The request is assumed to fit botocore's shape."""
    resources = request["ResourceConfig"]
    for member in EXCLUDED_MEMBERS:
        if member in resources:
            raise _broken(f"ResourceConfig.{member}", f"cannot be given with {_PATH}")
    preferences: Sequence[Mapping[str, Any]] = resources[PREFERENCES_MEMBER]
    check_channel_groups(request, names=None)
    _check_counts_given_once(resources, preferences)
    requested: list[RequestedGroup] = []
    for index, preference in enumerate(preferences):
        path = f"{_PATH}[{index}]"
        instance_type = preference["InstanceType"]
        if any(earlier.instance_type == instance_type for earlier in requested):
            raise _broken(f"{path}.InstanceType", f"{instance_type} is an earlier preference too")
        if "TrainingPlanArns" in preference and "TrainingPlanArn" in resources:
            raise _broken(f"{path}.TrainingPlanArns", "cannot be given with ResourceConfig.TrainingPlanArn")
        count_field = f"{path}.InstanceCount" if "InstanceCount" in preference else "ResourceConfig.InstanceCount"
        count = preference.get("InstanceCount", resources.get("InstanceCount"))
        if not 1 <= count <= MAX_INSTANCE_COUNT:
            raise _broken(count_field, f"must be an integer from 1 to {MAX_INSTANCE_COUNT}, not {count}")
        requested.append(RequestedGroup(instance_type, count, f"{path}.InstanceType", count_field))
    return requested


def _check_counts_given_once(resources: Mapping[str, Any], preferences: Sequence[Mapping[str, Any]]) -> None:
    counted = ["InstanceCount" in preference for preference in preferences]
    if all(counted) and "InstanceCount" in resources:
        raise _broken("ResourceConfig.InstanceCount", f"cannot be given when every preference of {_PATH} has its own")
    if any(counted) and not all(counted):
        missing = counted.index(False)
        raise _broken(
            f"{_PATH}[{missing}].InstanceCount",
            "is required: every preference gives InstanceCount, or none does and ResourceConfig.InstanceCount does",
        )
    if not any(counted) and "InstanceCount" not in resources:
        raise _broken("ResourceConfig.InstanceCount", f"is required (or InstanceCount on every preference of {_PATH})")


def with_tagged_preferences(request: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """`request` with its `smq:instance-preferences` tag written as `ResourceConfig.InstancePreferences`
    (every preference with its count; `InstanceType`, `InstanceCount` and the tag removed), and the
    tag's field to blame for what is wrong with the preferences; `request` itself and None without
    the tag. The request is assumed to fit botocore's shape."""
    index = _tag_index(request)
    if index is None:
        return request, None
    tags: Sequence[Mapping[str, str]] = request["Tags"]
    resources = request.get("ResourceConfig") or {}
    for member in (PREFERENCES_MEMBER, "InstanceGroups"):
        if member in resources:
            raise _broken(f"Tags[{index}].Key", f"{PREFERENCES_TAG} cannot be given with ResourceConfig.{member}")
    field = f"Tags[{index}].Value"
    preferences = parse_preferences_tag(tags[index]["Value"], resources.get("InstanceCount"), field)
    converted = copy.deepcopy(dict(request))
    converted["Tags"] = [tag for position, tag in enumerate(tags) if position != index]
    written = converted.setdefault("ResourceConfig", {})
    written.pop("InstanceType", None)
    written.pop("InstanceCount", None)
    written[PREFERENCES_MEMBER] = preferences
    return converted, field


def tag_value_field(request: Mapping[str, Any]) -> str | None:
    """`Tags[i].Value` of the `smq:instance-preferences` tag, in any request; None without it."""
    index = _tag_index(request)
    return None if index is None else f"Tags[{index}].Value"


def _tag_index(request: Mapping[str, Any]) -> int | None:
    tags = request.get("Tags")
    if not isinstance(tags, list):
        return None
    return next(
        (index for index, tag in enumerate(tags) if isinstance(tag, Mapping) and tag.get("Key") == PREFERENCES_TAG),
        None,
    )


def parse_preferences_tag(value: str, default_count: object, field: str) -> list[dict[str, Any]]:
    """The preferences `value` lists (`TYPE[:COUNT],...`); a type without a count takes `default_count`
    (the request's `ResourceConfig.InstanceCount`). Raises InvalidRequest naming `field`."""
    entries = _TAG_SEPARATOR.split(value.strip())
    if not 1 <= len(entries) <= MAX_PREFERENCES or not all(entries):
        raise _broken(
            field,
            f"must list 1 to {MAX_PREFERENCES} instance types, separated by commas or spaces, each TYPE or TYPE:COUNT "
            f"(e.g. ml.p4d.24xlarge:2,ml.g5.48xlarge:4), not {value!r}",
        )
    preferences: list[dict[str, Any]] = []
    for entry in entries:
        match = _TAG_ENTRY.fullmatch(entry)
        if match is None:
            raise _broken(field, f"{entry!r} is not TYPE or TYPE:COUNT (e.g. ml.g5.48xlarge:4)")
        count = int(match["count"]) if match["count"] is not None else default_count
        if not isinstance(count, int) or isinstance(count, bool):
            raise _broken(
                field, f"gives no count for {match['type']} and the request has no ResourceConfig.InstanceCount"
            )
        preferences.append({"InstanceType": match["type"], "InstanceCount": count})
    return preferences


def blamed_on_tag(error: InvalidRequest, tag_field: str | None) -> InvalidRequest:
    """`error` about the preferences a tag wrote, blamed on the tag (what its writer can fix);
    any other error as it is."""
    if tag_field is None or error.field is None or not error.field.startswith(_PATH):
        return error
    return InvalidRequest(tag_field, f"{tag_field} ({PREFERENCES_TAG}, written as {_PATH}): {error}")


def _broken(field: str, rule: str) -> InvalidRequest:
    return InvalidRequest(field, f"{field} {rule}")
