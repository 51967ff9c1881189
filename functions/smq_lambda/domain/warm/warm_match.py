"""When a training job may run on the instances a finished job keeps warm (SageMaker managed warm pools).

One rule for both sides: the queue uses it to start a pending job on a warm pool, the local
SageMaker service to decide whether a new job reuses a retained cluster.

Source: SageMaker Developer Guide, "Train Using SageMaker Managed Warm Pools", section "Matching
training jobs": the next job is a match when these values are identical:
`RoleArn`; `ResourceConfig` `InstanceCount`, `InstanceType`, `VolumeKmsKeyId`, `VolumeSizeInGB`;
`VpcConfig` `SecurityGroupIds`, `Subnets`; `EnableInterContainerTrafficEncryption`;
`EnableNetworkIsolation`. Its "Considerations" add that warm pools cannot be used with heterogeneous
clusters (`InstanceGroups`) or spot instances, so such a request matches nothing; and "Maximum warm
pool duration" that each subsequent job must itself give `KeepAlivePeriodInSeconds` (checked by
whoever reuses, with `keep_alive_seconds`). (Identical ABAC session tags, a further condition the
guide names, come from the caller's session, not the request: outside this rule.)

Values are compared as SageMaker treats them: an absent flag is false, an absent or empty KMS key is
the default key, and VPC subnets and security groups are sets. A flexible request must be pinned
first (domain/placement.pinned_request): a request that still lists `InstancePreferences` has no
single instance type and matches nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

KEEP_ALIVE_MEMBER = "KeepAlivePeriodInSeconds"


def may_use_warm_pool(request: Mapping[str, Any]) -> bool:
    """Whether SageMaker can keep or reuse a warm pool for this request at all."""
    resources = request.get("ResourceConfig") or {}
    return (
        bool(resources.get("InstanceType"))
        and not resources.get("InstanceGroups")
        and not resources.get("InstancePreferences")
        and request.get("EnableManagedSpotTraining") is not True
    )


def keep_alive_seconds(request: Mapping[str, Any]) -> int:
    """How long the request asks SageMaker to keep its instances warm after it ends (0: not at all)."""
    return int((request.get("ResourceConfig") or {}).get(KEEP_ALIVE_MEMBER) or 0)


def warm_pool_key(request: Mapping[str, Any]) -> str:
    """A stable digest of exactly the members the matching criteria compare, normalised."""
    resources = request.get("ResourceConfig") or {}
    vpc = request.get("VpcConfig") or {}
    members = {
        "RoleArn": request.get("RoleArn"),
        "InstanceCount": resources.get("InstanceCount"),
        "InstanceType": resources.get("InstanceType"),
        "VolumeKmsKeyId": resources.get("VolumeKmsKeyId") or None,
        "VolumeSizeInGB": resources.get("VolumeSizeInGB"),
        "SecurityGroupIds": sorted(set(vpc.get("SecurityGroupIds") or ())),
        "Subnets": sorted(set(vpc.get("Subnets") or ())),
        "EnableInterContainerTrafficEncryption": request.get("EnableInterContainerTrafficEncryption") is True,
        "EnableNetworkIsolation": request.get("EnableNetworkIsolation") is True,
    }
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def matches(retained: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    """Whether `candidate` may run on the warm pool `retained`'s job left (symmetric)."""
    return (
        may_use_warm_pool(retained)
        and may_use_warm_pool(candidate)
        and warm_pool_key(retained) == warm_pool_key(candidate)
    )
