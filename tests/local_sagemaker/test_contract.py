"""Pure parts of the container contract: decoding, arguments, environment, failure reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import job_request
from smq.local.sagemaker import ValidationError
from smq.local.sagemaker.contract import (
    JobPaths,
    command_line_args,
    container_env,
    decode_hyperparameters,
    entry_command,
    hosts,
    resource_config,
)
from smq.local.sagemaker.process import failure_reason
from smq.local.sagemaker.synthetic import synthetic_plan


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ('"train.py"', "train.py"),  # the SDK's encoding of a string
        ("train.py", "train.py"),  # a hand-written request
        ("10", 10),
        ("0.001", 0.001),
        ("true", True),
        ("True", "True"),  # not JSON: stays a string
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", [1, 2]),
        ("", ""),
        ('"\\"quoted\\""', '"quoted"'),
    ],
)
def test_hyperparameters_decode_like_the_training_toolkit(raw: str, decoded: Any) -> None:
    assert decode_hyperparameters({"key": raw}) == {"key": decoded}


def test_arguments_are_sorted_flags_with_toolkit_formatting() -> None:
    args = command_line_args({"lr": 0.1, "b": 8, "fp16": True, "name": "vit", "opts": {"y": 2, "x": 1}})

    assert args == ["-b", "8", "--fp16", "True", "--lr", "0.1", "--name", "vit", "--opts", "x=1,y=2"]


def test_the_program_runs_with_this_python_and_user_hyperparameters_only() -> None:
    request = job_request(
        "j",
        HyperParameters={
            "sagemaker_program": '"train.py"',
            "sagemaker_submit_directory": '"s3://b/s.tar.gz"',
            "sagemaker_region": '"us-east-1"',
            "epochs": "2",
        },
    )

    assert entry_command(request, "/venv/python") == ["/venv/python", "train.py", "--epochs", "2"]


def test_a_container_entrypoint_python_means_this_python() -> None:
    request = job_request("j")
    request["AlgorithmSpecification"] |= {
        "ContainerEntrypoint": ["python3", "run.py"],
        "ContainerArguments": ["--x", "1"],
    }

    assert entry_command(request, "/venv/python") == ["/venv/python", "run.py", "--x", "1"]


def test_the_environment_describes_channels_and_hyperparameters(tmp_path: Path) -> None:
    paths = JobPaths(tmp_path / "jobs" / "j")
    request = job_request(
        "j",
        HyperParameters={"sagemaker_program": '"t.py"', "lr": "0.5", "model-name": '"vit"'},
        InputDataConfig=[
            {"ChannelName": name, "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://b/{name}"}}}
            for name in ("validation", "train")
        ],
    )

    env = container_env(paths, request, job_arn="arn:j", host=hosts(request)[0])

    assert json.loads(env["SM_CHANNELS"]) == ["train", "validation"]
    assert env["SM_CHANNEL_VALIDATION"] == str(paths.channel_dir("validation"))
    assert json.loads(env["SM_HPS"]) == {"lr": 0.5, "model-name": "vit"}
    assert (env["SM_HP_LR"], env["SM_HP_MODEL-NAME"]) == ("0.5", "vit")
    assert env["SM_USER_ENTRY_POINT"] == "t.py" and env["SM_MODULE_NAME"] == "t"
    assert env["SM_CURRENT_INSTANCE_TYPE"] == "ml.g5.xlarge"
    training_env = json.loads(env["SM_TRAINING_ENV"])
    assert training_env["hyperparameters"] == {"lr": 0.5, "model-name": "vit"}
    assert training_env["additional_framework_parameters"] == {"sagemaker_program": "t.py"}
    assert all(isinstance(v, str) for v in env.values())


HETEROGENEOUS = job_request(
    "j",
    ResourceConfig={
        "InstanceGroups": [
            {"InstanceGroupName": "gpus", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
            {"InstanceGroupName": "cpus", "InstanceType": "ml.c5.xlarge", "InstanceCount": 4},
        ]
    },
    HyperParameters={"sagemaker_distribution_instance_groups": '["gpus"]'},
)


def test_a_job_without_groups_runs_one_host_of_the_homogeneous_cluster(tmp_path: Path) -> None:
    request = job_request("j")
    (host,) = hosts(request)

    config = resource_config(request, host)
    env = container_env(JobPaths(tmp_path), request, job_arn="arn:j", host=host)

    assert config == {
        "current_host": "algo-1",
        "current_instance_type": "ml.g5.xlarge",
        "current_group_name": "homogeneousCluster",
        "hosts": ["algo-1"],
        "instance_groups": [
            {"instance_group_name": "homogeneousCluster", "instance_type": "ml.g5.xlarge", "hosts": ["algo-1"]}
        ],
        "network_interface_name": "eth0",
    }
    assert (env["SM_CURRENT_INSTANCE_GROUP"], env["SM_IS_HETERO"], env["SM_HOSTS"]) == (
        "homogeneousCluster",
        "false",
        '["algo-1"]',
    )


def test_each_instance_group_runs_one_host_that_knows_its_group(tmp_path: Path) -> None:
    paths = JobPaths(tmp_path)
    gpus, cpus = hosts(HETEROGENEOUS)

    config = resource_config(HETEROGENEOUS, cpus)
    env = container_env(paths, HETEROGENEOUS, job_arn="arn:j", host=cpus)

    assert (gpus.name, gpus.group, cpus.name, cpus.group) == ("algo-1", "gpus", "algo-2", "cpus")
    assert config == {
        "current_host": "algo-2",
        "current_instance_type": "ml.c5.xlarge",
        "current_group_name": "cpus",
        "hosts": ["algo-1", "algo-2"],
        "instance_groups": [
            {"instance_group_name": "gpus", "instance_type": "ml.p4d.24xlarge", "hosts": ["algo-1"]},
            {"instance_group_name": "cpus", "instance_type": "ml.c5.xlarge", "hosts": ["algo-2"]},
        ],
        "network_interface_name": "eth0",
    }
    assert json.loads(env["SM_RESOURCE_CONFIG"]) == config
    assert env["SM_INPUT_CONFIG_DIR"] == str(paths.host_config_dir("algo-2"))
    assert paths.host_config_dir("algo-2") != paths.host_config_dir("algo-1") == paths.config_dir
    assert (env["SM_CURRENT_HOST"], env["SM_CURRENT_INSTANCE_TYPE"]) == ("algo-2", "ml.c5.xlarge")
    assert (env["SM_CURRENT_INSTANCE_GROUP"], env["SM_CURRENT_INSTANCE_GROUP_HOSTS"]) == ("cpus", '["algo-2"]')
    assert json.loads(env["SM_HOSTS"]) == ["algo-1", "algo-2"]
    assert json.loads(env["SM_INSTANCE_GROUPS"]) == ["gpus", "cpus"]
    assert json.loads(env["SM_INSTANCE_GROUPS_DICT"])["gpus"]["hosts"] == ["algo-1"]
    assert (env["SM_DISTRIBUTION_INSTANCE_GROUPS"], env["SM_IS_HETERO"]) == ('["gpus"]', "true")
    training_env = json.loads(env["SM_TRAINING_ENV"])
    assert (training_env["master_hostname"], training_env["is_master"]) == ("algo-1", False)
    assert training_env["current_instance_group"] == "cpus"


def test_a_failure_reason_keeps_the_last_lines_within_the_limit(tmp_path: Path) -> None:
    paths = JobPaths(tmp_path)
    tail = [f"line {i} " + "x" * 80 for i in range(20)] + ["ValueError: the real cause"]

    reason = failure_reason(paths, 1, tail, ["python", "train.py", "--" + "y" * 500])

    assert len(reason) <= 1024
    assert "ValueError: the real cause" in reason and "line 0 " not in reason
    assert "ExitCode 1" in reason


def test_a_script_written_failure_file_is_the_reason(tmp_path: Path) -> None:
    paths = JobPaths(tmp_path)
    paths.reset()
    paths.failure_file.write_text("CUDA out of memory\n")

    assert failure_reason(paths, 1, ["noise"], ["python"]) == ("AlgorithmError: CUDA out of memory")


def test_a_process_killed_by_a_signal_reports_128_plus_the_signal(tmp_path: Path) -> None:
    assert "ExitCode 137" in failure_reason(JobPaths(tmp_path), -9, [], ["python"])


@pytest.mark.parametrize(
    ("hyperparameters", "plan"),
    [
        ({}, (5.0, "complete")),
        ({"smq_synthetic_duration": "2.5", "smq_synthetic_outcome": "fail"}, (2.5, "fail")),
        ({"smq_synthetic_duration": '"3"', "smq_synthetic_outcome": '"hang"'}, (3.0, "hang")),
    ],
)
def test_synthetic_plans_decode_sdk_encoded_values(hyperparameters: dict[str, str], plan: tuple[float, str]) -> None:
    assert synthetic_plan(hyperparameters) == plan


@pytest.mark.parametrize(
    "hyperparameters",
    [
        {"smq_synthetic_duration": "-1"},
        {"smq_synthetic_duration": '"soon"'},
        {"smq_synthetic_outcome": "explode"},
    ],
)
def test_bad_synthetic_plans_are_rejected(hyperparameters: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        synthetic_plan(hyperparameters)
