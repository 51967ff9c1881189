"""The submission rules as a pure function: no AWS, every rule and the job it builds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from smq_lambda.domain.jobs.model import MAX_PRIORITY, MIN_PRIORITY
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.sagemaker.instance_groups import MAX_INSTANCE_COUNT
from smq_lambda.domain.sagemaker.request_shape import CREATE_TRAINING_JOB, input_shape
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy
from smq_lambda.service.submission import SubmissionPolicy, check_priority, new_job
from smq_lambda.settings import Settings

from tests.api.builders import ALICE, G5, OTHER_ROLE, P5, POOLS, ROLE, instance_groups, replaced, training_request
from tests.support.request_shapes import values_for

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
CONFIG = SchedulerConfig(pools=POOLS)
POLICY = SubmissionPolicy(checkpoint_s3_prefix="s3://bucket/ckpt/")


def submit(request: Any, *, config: SchedulerConfig = CONFIG, policy: SubmissionPolicy = POLICY) -> Any:
    return new_job(request, owner=ALICE, config=config, policy=policy, now=NOW, job_id="0123456789abcdef" * 2)


def refusal(request: Any, **kwargs: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        submit(request, **kwargs)
    return caught.value


def test_a_valid_request_becomes_a_pending_job() -> None:
    job = submit(training_request("vit", priority=7, instances=3))

    assert (job.name, job.state, job.priority, job.owner, job.version) == ("vit", JobState.PENDING, 7, ALICE, 1)
    assert (job.submitted_at, job.updated_at, dict(job.demand), job.attempts) == (NOW, NOW, {G5: 3}, ())
    assert job.request["CheckpointConfig"] == {"S3Uri": "s3://bucket/ckpt/vit/0123456789abcdef0123456789abcdef/"}


def test_the_request_itself_is_not_modified() -> None:
    request = training_request("vit")
    snapshot = replaced(request, "TrainingJobName", "vit")

    submit(request)

    assert request == snapshot


def test_no_checkpoint_is_added_without_a_prefix() -> None:
    assert "CheckpointConfig" not in submit(training_request("vit"), policy=SubmissionPolicy()).request


def test_job_ids_are_random_hex_when_not_given() -> None:
    ids = {
        new_job(training_request("vit"), owner=ALICE, config=CONFIG, policy=POLICY, now=NOW).job_id for _ in range(3)
    }
    assert len(ids) == 3 and all(len(job_id) == 32 and int(job_id, 16) >= 0 for job_id in ids)


@pytest.mark.parametrize(
    ("value", "priority"),
    [
        (None, 0),
        ("0", 0),
        ("+5", 5),
        ("-12", -12),
        (str(MAX_PRIORITY), MAX_PRIORITY),
        (str(MIN_PRIORITY), MIN_PRIORITY),
    ],
)
def test_priority_comes_from_the_priority_tag(value: str | None, priority: int) -> None:
    assert submit(training_request("vit", priority=value)).priority == priority


@pytest.mark.parametrize("value", ["", " 5", "5 ", "1e3", "0x10", "٣", "1_000", str(MAX_PRIORITY + 1), "9" * 200])
def test_priority_tag_must_be_a_plain_integer_in_range(value: str) -> None:
    assert refusal(training_request("vit", priority=value)).field == "Tags.priority"


def test_a_priority_tag_sagemaker_would_refuse_is_refused_as_a_tag() -> None:
    """A line feed is not a character SageMaker's tag pattern allows, whatever the tag."""
    assert refusal(training_request("vit", priority="5\n")).field == "Tags[1].Value"


@pytest.mark.parametrize("value", [0, MAX_PRIORITY, MIN_PRIORITY])
def test_check_priority_accepts_integers_in_range(value: int) -> None:
    assert check_priority(value) == value


@pytest.mark.parametrize("value", [True, 1.0, "1", None, MAX_PRIORITY + 1, MIN_PRIORITY - 1])
def test_check_priority_refuses_the_rest(value: Any) -> None:
    with pytest.raises(InvalidRequest) as caught:
        check_priority(value)
    assert caught.value.field == "priority"


def test_a_name_of_63_characters_is_accepted() -> None:
    assert submit(training_request("a" * 63)).name == "a" * 63


def test_an_algorithm_name_replaces_the_image() -> None:
    algorithm = {"AlgorithmName": "xgb", "TrainingInputMode": "Pipe"}
    request = replaced(training_request("vit"), "AlgorithmSpecification", algorithm)
    assert submit(request).name == "vit"


def test_heterogeneous_demand_keeps_group_order_and_sums_types() -> None:
    request = training_request("mix", ResourceConfig=instance_groups((P5, 1), (G5, 2), (P5, 1)))

    job = submit(request)

    assert list(job.demand.items()) == [(P5, 2), (G5, 2)]
    assert (job.where.pool, job.where.instances) == (P5, 2)


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        (instance_groups(*[(G5, 1)] * 6), "ResourceConfig.InstanceGroups"),
        (
            {"InstanceGroups": [{"InstanceType": G5, "InstanceCount": 1, "InstanceGroupName": "a"}] * 2},
            "ResourceConfig.InstanceGroups[1].InstanceGroupName",
        ),
        (
            {"InstanceGroups": [{"InstanceType": G5, "InstanceCount": 1}]},
            "ResourceConfig.InstanceGroups[0].InstanceGroupName",
        ),
        (
            {"InstanceGroups": [{"InstanceCount": 1, "InstanceGroupName": "a"}]},
            "ResourceConfig.InstanceGroups[0].InstanceType",
        ),
        ({"InstanceGroups": ["a"]}, "ResourceConfig.InstanceGroups[0]"),
        ({"InstanceType": G5, "InstanceCount": MAX_INSTANCE_COUNT + 1}, "ResourceConfig.InstanceCount"),
        ({"InstanceType": G5, "InstanceCount": 1, "VolumeSizeInGB": "30"}, "ResourceConfig.VolumeSizeInGB"),
        ("ml.g5.xlarge", "ResourceConfig"),
    ],
)
def test_resource_config_rules(resources: Any, field: str) -> None:
    assert refusal(training_request("vit", ResourceConfig=resources)).field == field


def test_a_pool_of_zero_instances_refuses_every_job() -> None:
    config = SchedulerConfig(pools={G5: 0})
    assert refusal(training_request("vit"), config=config).field == "ResourceConfig.InstanceCount"


def test_unpooled_types_pass_when_unlimited_and_pools_still_bound_their_types() -> None:
    config = SchedulerConfig(pools=POOLS, unpooled=UnpooledPolicy.UNLIMITED)

    assert dict(submit(training_request("cpu", instance_type="ml.c5.xlarge", instances=500), config=config).demand) == {
        "ml.c5.xlarge": 500
    }
    assert refusal(training_request("vit", instance_type=P5, instances=3), config=config).field == (
        "ResourceConfig.InstanceCount"
    )


def test_refusing_an_unknown_pool_lists_the_configured_ones() -> None:
    error = refusal(training_request("vit", instance_type="ml.c5.xlarge"))
    assert (error.field, G5 in error.message, P5 in error.message) == ("ResourceConfig.InstanceType", True, True)


def test_allowed_roles() -> None:
    policy = SubmissionPolicy(allowed_role_arns=frozenset({ROLE}))

    assert submit(training_request("vit"), policy=policy).name == "vit"
    assert refusal(training_request("vit", RoleArn=OTHER_ROLE), policy=policy).field == "RoleArn"
    assert submit(training_request("vit", RoleArn=OTHER_ROLE)).name == "vit"


SHAPE_CASES: list[tuple[str, Any, str]] = [
    # The four the issue reproduced: each was queued with a 202, and failed when its turn came.
    ("numeric hyperparameter", replaced(training_request("vit"), "HyperParameters", {"lr": 0.1}), "HyperParameters.lr"),
    ("numeric environment value", training_request("vit", Environment={"SEED": 7}), "Environment.SEED"),
    ("null volume size", replaced(training_request("vit"), "ResourceConfig.VolumeSizeInGB", None), "ResourceConfig.VolumeSizeInGB"),
    ("string input config", training_request("vit", InputDataConfig="s3://bucket/train"), "InputDataConfig"),
    # More that no hand-written rule covered.
    ("boolean spot flag as a string", training_request("vit", EnableManagedSpotTraining="yes"), "EnableManagedSpotTraining"),
    ("misspelt member", training_request("vit", HyperParameter={"lr": "0.1"}), "HyperParameter"),
    ("channel without a source", training_request("vit", InputDataConfig=[{"ChannelName": "train"}]), "InputDataConfig[0].DataSource"),
    ("vpc of no subnets", training_request("vit", VpcConfig={"SecurityGroupIds": ["sg-1"], "Subnets": []}), "VpcConfig.Subnets"),
    ("31 retries", training_request("vit", RetryStrategy={"MaximumRetryAttempts": 31}), "RetryStrategy.MaximumRetryAttempts"),
    ("runtime beyond an int", replaced(training_request("vit"), "StoppingCondition.MaxRuntimeInSeconds", 2**31), "StoppingCondition.MaxRuntimeInSeconds"),
    ("tag of a symbol", replaced(training_request("vit"), "Tags", [{"Key": "mood", "Value": "🙂"}]), "Tags[0].Value"),
    ("hyperparameter key too long", replaced(training_request("vit"), "HyperParameters", {"k" * 257: "1"}), "HyperParameters"),
    ("instance type misspelt", training_request("vit", instance_type="ml.g5.xlarg"), "ResourceConfig.InstanceType"),
    ("output over https elsewhere", replaced(training_request("vit"), "OutputDataConfig.S3OutputPath", "ftp://b/o"), "OutputDataConfig.S3OutputPath"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_body", "field"), [case[1:] for case in SHAPE_CASES], ids=[case[0] for case in SHAPE_CASES]
)
def test_nested_members_are_checked_against_sagemakers_shape(request_body: Any, field: str) -> None:
    error = refusal(request_body)
    assert (error.field, error.message.startswith(field)) == (field, True)


def test_the_s3_uri_rule_is_sagemakers_which_allows_https() -> None:
    """The hand-copied rules had drifted: the API took https:// output paths, the local service did not."""
    request = replaced(training_request("vit"), "OutputDataConfig.S3OutputPath", "https://bucket.s3.amazonaws.com/out")
    assert submit(request).name == "vit"


def test_a_request_of_every_shape_sagemaker_takes_is_queued_unchanged() -> None:
    request = training_request(
        "full",
        InputDataConfig=[
            {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/t"}}}
        ],
        Environment={"PYTHONUNBUFFERED": "1"},
        EnableManagedSpotTraining=True,
        StoppingCondition={"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
        RetryStrategy={"MaximumRetryAttempts": 2},
    )

    job = submit(request)

    assert {key: value for key, value in job.request.items() if key != "CheckpointConfig"} == request


@pytest.mark.parametrize(
    ("tags", "field"),
    [
        ([{"Key": f"k{i}", "Value": "v"} for i in range(48)], "Tags"),
        ([{"Key": "smq:team", "Value": "x"}], "Tags[0].Key"),
        ([{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}], "Tags[1].Key"),
    ],
    ids=["room for the queue's three tags", "the queue's prefix", "a key twice"],
)
def test_the_queues_own_tag_rules(tags: list[dict[str, str]], field: str) -> None:
    assert refusal(training_request("vit", Tags=tags)).field == field


def test_forty_seven_tags_leave_room_for_the_queues() -> None:
    assert submit(training_request("vit", Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(47)])).name == "vit"


@pytest.mark.parametrize(
    ("member", "value", "field"),
    [
        ("RoleArn", "arn:aws:iam::12345678901:role/short-account", "RoleArn"),
        ("RoleArn", "arn:aws:iam::123456789012:user/alice", "RoleArn"),
        (
            "AlgorithmSpecification",
            {"TrainingImage": "img", "TrainingInputMode": "Stream"},
            "AlgorithmSpecification.TrainingInputMode",
        ),
        (
            "AlgorithmSpecification",
            {"TrainingImage": 5, "TrainingInputMode": "File"},
            "AlgorithmSpecification.TrainingImage",
        ),
        ("OutputDataConfig", {"S3OutputPath": "s3://"}, "OutputDataConfig.S3OutputPath"),
        ("OutputDataConfig", {"S3OutputPath": "s3://b/" + "k" * 1024}, "OutputDataConfig.S3OutputPath"),
        ("StoppingCondition", {"MaxWaitTimeInSeconds": 1.5}, "StoppingCondition.MaxWaitTimeInSeconds"),
        ("StoppingCondition", [], "StoppingCondition"),
        ("CheckpointConfig", {"S3Uri": "s3://b/c", "LocalPath": 3}, "CheckpointConfig.LocalPath"),
        ("Tags", [{"Key": "", "Value": "v"}], "Tags[0].Key"),
        ("Tags", [{"Key": "k" * 129, "Value": "v"}], "Tags[0].Key"),
        ("Tags", [{"Key": "k", "Value": "v" * 257}], "Tags[0].Value"),
        ("Tags", [{"Key": "smq:attempt", "Value": "1"}], "Tags[0].Key"),
        ("Tags", [{"Key": f"k{i}", "Value": "v"} for i in range(51)], "Tags"),
        ("Tags", ["priority=5"], "Tags[0]"),
    ],
)
def test_member_rules(member: str, value: Any, field: str) -> None:
    error = refusal(training_request("vit", **{member: value}))
    assert (error.field, error.message.startswith(field)) == (field, True)


def test_policy_from_settings() -> None:
    settings = Settings.from_env(
        {
            "SMQ_TABLE_NAME": "t",
            "SMQ_POOLS_PARAMETER": "p",
            "SMQ_ALLOWED_ROLE_ARNS": f"{ROLE}, {OTHER_ROLE}",
            "SMQ_CHECKPOINT_S3_PREFIX": "s3://b/p",
        }
    )
    assert SubmissionPolicy.from_settings(settings) == SubmissionPolicy(frozenset({ROLE, OTHER_ROLE}), "s3://b/p")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(values_for(input_shape(CREATE_TRAINING_JOB), depth=4))
def test_any_request_becomes_a_job_or_an_invalid_request(request: Any) -> None:
    """The queue's own rules read members the shape check has vouched for: nothing else escapes."""
    try:
        job = submit(request)
    except InvalidRequest as error:
        assert error.message
    else:
        assert job.request["TrainingJobName"] == job.name


def test_an_instance_type_newer_than_botocore_is_queued_when_it_has_a_pool() -> None:
    """A configured pool says the type exists, even if the bundled model's enum predates it."""
    future = "ml.p9.96xlarge"
    assert refusal(training_request("vit", instance_type=future)).field == "ResourceConfig.InstanceType"
    job = submit(training_request("vit", instance_type=future), config=SchedulerConfig(pools={future: 2}))
    assert dict(job.demand) == {future: 1}
