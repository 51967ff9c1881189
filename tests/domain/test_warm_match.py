"""The warm-pool matching rule: each documented criterion separates two requests, everything else
(hyperparameters, image, data, the order of VPC lists, absent against default values) does not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.placements.placement import Placement, pinned_request
from smq_lambda.domain.warm.warm_match import keep_alive_seconds, matches, may_use_warm_pool, warm_pool_key

Request = dict[str, Any]


def base() -> Request:
    return {
        "TrainingJobName": "first",
        "RoleArn": "arn:aws:iam::123456789012:role/train",
        "AlgorithmSpecification": {"TrainingImage": "image:1", "TrainingInputMode": "File"},
        "HyperParameters": {"lr": "0.1"},
        "ResourceConfig": {
            "InstanceType": "ml.g5.xlarge",
            "InstanceCount": 2,
            "VolumeSizeInGB": 50,
            "VolumeKmsKeyId": "key-1",
            "KeepAlivePeriodInSeconds": 600,
        },
        "VpcConfig": {"SecurityGroupIds": ["sg-1", "sg-2"], "Subnets": ["subnet-1", "subnet-2"]},
        "EnableNetworkIsolation": False,
        "EnableInterContainerTrafficEncryption": False,
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    }


def changed(change: Callable[[Request], object]) -> Request:
    request = copy.deepcopy(base())
    change(request)
    return request


DIFFERENT = {
    "RoleArn": lambda r: r.update(RoleArn="arn:aws:iam::123456789012:role/other"),
    "InstanceCount": lambda r: r["ResourceConfig"].update(InstanceCount=1),
    "InstanceType": lambda r: r["ResourceConfig"].update(InstanceType="ml.g5.2xlarge"),
    "VolumeKmsKeyId": lambda r: r["ResourceConfig"].update(VolumeKmsKeyId="key-2"),
    "VolumeKmsKeyId absent": lambda r: r["ResourceConfig"].pop("VolumeKmsKeyId"),
    "VolumeSizeInGB": lambda r: r["ResourceConfig"].update(VolumeSizeInGB=100),
    "SecurityGroupIds": lambda r: r["VpcConfig"].update(SecurityGroupIds=["sg-1"]),
    "Subnets": lambda r: r["VpcConfig"].update(Subnets=["subnet-3", "subnet-2"]),
    "VpcConfig absent": lambda r: r.pop("VpcConfig"),
    "EnableNetworkIsolation": lambda r: r.update(EnableNetworkIsolation=True),
    "EnableInterContainerTrafficEncryption": lambda r: r.update(EnableInterContainerTrafficEncryption=True),
}

SAME = {
    "hyperparameters": lambda r: r.update(HyperParameters={"lr": "0.01"}),
    "training image": lambda r: r["AlgorithmSpecification"].update(TrainingImage="image:2"),
    "job name": lambda r: r.update(TrainingJobName="second"),
    "output path": lambda r: r.update(OutputDataConfig={"S3OutputPath": "s3://bucket/other"}),
    "runtime": lambda r: r.update(StoppingCondition={"MaxRuntimeInSeconds": 60}),
    "keep-alive period": lambda r: r["ResourceConfig"].update(KeepAlivePeriodInSeconds=60),
    "subnet order": lambda r: r["VpcConfig"].update(Subnets=["subnet-2", "subnet-1"]),
    "security group order": lambda r: r["VpcConfig"].update(SecurityGroupIds=["sg-2", "sg-1"]),
    "network isolation absent is false": lambda r: r.pop("EnableNetworkIsolation"),
    "traffic encryption absent is false": lambda r: r.pop("EnableInterContainerTrafficEncryption"),
    "spot false": lambda r: r.update(EnableManagedSpotTraining=False),
}


@pytest.mark.parametrize("change", DIFFERENT.values(), ids=DIFFERENT.keys())
def test_a_job_differing_in_one_criterion_does_not_match(change: Callable[[Request], object]) -> None:
    assert not matches(base(), changed(change))
    assert warm_pool_key(base()) != warm_pool_key(changed(change))


@pytest.mark.parametrize("change", SAME.values(), ids=SAME.keys())
def test_a_job_differing_only_outside_the_criteria_matches(change: Callable[[Request], object]) -> None:
    assert matches(base(), changed(change))
    assert warm_pool_key(base()) == warm_pool_key(changed(change))


def test_an_empty_kms_key_is_the_default_key() -> None:
    empty = changed(lambda r: r["ResourceConfig"].update(VolumeKmsKeyId=""))
    absent = changed(lambda r: r["ResourceConfig"].pop("VolumeKmsKeyId"))
    assert matches(empty, absent)


NEVER_WARM = {
    "managed spot": lambda r: r.update(EnableManagedSpotTraining=True),
    "instance groups": lambda r: r.update(
        ResourceConfig={
            "InstanceGroups": [{"InstanceGroupName": "a", "InstanceType": "ml.g5.xlarge", "InstanceCount": 2}],
            "VolumeSizeInGB": 50,
        }
    ),
    "unpinned preferences": lambda r: r.update(
        ResourceConfig={
            "InstancePreferences": [{"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}],
            "VolumeSizeInGB": 50,
        }
    ),
}


@pytest.mark.parametrize("change", NEVER_WARM.values(), ids=NEVER_WARM.keys())
def test_what_sagemaker_keeps_no_warm_pool_for_matches_nothing(change: Callable[[Request], object]) -> None:
    request = changed(change)
    assert not may_use_warm_pool(request)
    assert not matches(request, request)
    assert not matches(base(), request)
    assert not matches(request, base())


def test_a_flexible_request_pinned_to_the_warm_type_matches() -> None:
    flexible = base()
    flexible["ResourceConfig"] = {
        "InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"}, {"InstanceType": "ml.g5.xlarge"}],
        "InstanceCount": 2,
        "VolumeSizeInGB": 50,
        "VolumeKmsKeyId": "key-1",
    }
    assert matches(base(), pinned_request(flexible, Placement("ml.g5.xlarge", 2)))
    assert not matches(base(), pinned_request(flexible, Placement("ml.p5.48xlarge", 2)))


@pytest.mark.parametrize(
    ("resources", "seconds"),
    [({"KeepAlivePeriodInSeconds": 600}, 600), ({"KeepAlivePeriodInSeconds": 0}, 0), ({}, 0)],
)
def test_keep_alive_seconds(resources: dict[str, int], seconds: int) -> None:
    assert keep_alive_seconds({"ResourceConfig": resources}) == seconds
    assert keep_alive_seconds({}) == 0


identifiers = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4)


@given(groups=identifiers, subnets=identifiers, permute=st.randoms())
def test_the_key_ignores_the_order_and_repeats_of_vpc_lists(
    groups: list[str], subnets: list[str], permute: Any
) -> None:
    first = changed(lambda r: r.update(VpcConfig={"SecurityGroupIds": groups, "Subnets": subnets}))
    shuffled_groups, shuffled_subnets = groups[:], subnets[:]
    permute.shuffle(shuffled_groups)
    permute.shuffle(shuffled_subnets)
    second = changed(lambda r: r.update(VpcConfig={"SecurityGroupIds": shuffled_groups, "Subnets": shuffled_subnets}))
    assert warm_pool_key(first) == warm_pool_key(second)
