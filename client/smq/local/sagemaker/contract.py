"""The SageMaker training container contract, rebuilt on the local file system.

A training script written for SageMaker reads its hyperparameters from its arguments and the
`SM_*` variables, its data from `SM_CHANNEL_*`, and writes `SM_MODEL_DIR` and its checkpoint
directory. This module builds exactly that for one job: the `/opt/ml`-style tree under the
job's work directory, the config files, the environment and the command line, following the
SageMaker training toolkit's conventions (decoding, argument order, variable names).

Hosts: one local process stands for each instance group, whatever its instance count, so a job
without groups runs one host (`algo-1`, group `homogeneousCluster`) and a heterogeneous job one host
per group (`algo-1`, `algo-2`, ... in the order of `ResourceConfig.InstanceGroups`). Each host sees
the cluster as it runs locally: `hosts` lists every running host, each group lists its one host, and
`current_host`, `current_group_name` and `current_instance_type` name its own. A group-aware entry
point forks on its group exactly as on SageMaker; data parallelism within a group is one process.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smq_lambda.domain.sagemaker.instance_groups import DISTRIBUTION_GROUPS_HYPERPARAMETER

HOST = "algo-1"
"""The first host; a job without instance groups has no other."""
HOMOGENEOUS_GROUP = "homogeneousCluster"
"""The group name SageMaker gives the instances of a job without instance groups."""
FRAMEWORK_PREFIX = "sagemaker_"
PROGRAM = "sagemaker_program"
SUBMIT_DIRECTORY = "sagemaker_submit_directory"
PYTHON_NAMES = ("python", "python3")


@dataclass(frozen=True)
class Host:
    """One host of a local job: it runs the entry point for its instance group."""

    name: str
    group: str
    instance_type: str


def hosts(request: Mapping[str, Any]) -> list[Host]:
    """The hosts a local job runs: one per instance group (see the module docstring)."""
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups") or [
        {"InstanceGroupName": HOMOGENEOUS_GROUP, "InstanceType": resources["InstanceType"]}
    ]
    return [
        Host(name=f"algo-{index + 1}", group=group["InstanceGroupName"], instance_type=group["InstanceType"])
        for index, group in enumerate(groups)
    ]


@dataclass(frozen=True)
class JobPaths:
    """One job's `/opt/ml` tree; `root` is `<workdir>/jobs/<job>`."""

    root: Path

    @property
    def opt_ml(self) -> Path:
        return self.root / "opt" / "ml"

    @property
    def input_dir(self) -> Path:
        return self.opt_ml / "input"

    @property
    def config_dir(self) -> Path:
        return self.input_dir / "config"

    @property
    def data_dir(self) -> Path:
        return self.input_dir / "data"

    @property
    def model_dir(self) -> Path:
        return self.opt_ml / "model"

    @property
    def output_dir(self) -> Path:
        return self.opt_ml / "output"

    @property
    def output_data_dir(self) -> Path:
        return self.output_dir / "data"

    @property
    def intermediate_dir(self) -> Path:
        return self.output_dir / "intermediate"

    @property
    def failure_file(self) -> Path:
        """Where a script may explain its failure; SageMaker uses it as the FailureReason."""
        return self.output_dir / "failure"

    @property
    def checkpoint_dir(self) -> Path:
        return self.opt_ml / "checkpoints"

    @property
    def code_dir(self) -> Path:
        return self.opt_ml / "code"

    def host_config_dir(self, host: str) -> Path:
        """A host's `input/config`: its `resourceconfig.json` names it. The first host's is the job's
        own; the others share the rest of the tree (as if on a shared file system)."""
        return self.config_dir if host == HOST else self.root / "hosts" / host / "config"

    def log_file(self, host: str = HOST) -> Path:
        """A local copy of everything a host printed, across attempts."""
        return self.root / f"{host}.log"

    def channel_dir(self, channel: str) -> Path:
        return self.data_dir / channel

    def reset(self) -> None:
        """Start an attempt on a fresh instance: nothing survives but what S3 holds."""
        shutil.rmtree(self.opt_ml, ignore_errors=True)
        for directory in (
            self.config_dir,
            self.data_dir,
            self.model_dir,
            self.output_data_dir,
            self.intermediate_dir,
            self.checkpoint_dir,
            self.code_dir,
        ):
            directory.mkdir(parents=True, exist_ok=True)


def decode_hyperparameters(raw: Mapping[str, str]) -> dict[str, Any]:
    """Decode values as the training toolkit does: JSON where it parses, else the raw string.

    The SageMaker SDK JSON-encodes every value (`"\\"train.py\\""`, `"10"`); hand-written
    requests usually don't (`"train.py"`). Both decode to what the user meant.
    """
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            decoded[key] = json.loads(value)
        except (TypeError, ValueError):
            decoded[key] = value
    return decoded


def user_hyperparameters(decoded: Mapping[str, Any]) -> dict[str, Any]:
    """The script's own hyperparameters: the SDK's `sagemaker_*` ones are for the platform."""
    return {k: v for k, v in decoded.items() if not k.startswith(FRAMEWORK_PREFIX)}


def command_line_args(hyperparameters: Mapping[str, Any]) -> list[str]:
    """`--key value` pairs in key order, one-letter keys as `-k`, maps as `k=v,k=v`."""
    args: list[str] = []
    for key in sorted(hyperparameters):
        value = hyperparameters[key]
        args.append(f"-{key}" if len(key) == 1 else f"--{key}")
        if isinstance(value, Mapping):
            args.append(",".join(f"{k}={v}" for k, v in sorted(value.items())))
        else:
            args.append(str(value))
    return args


def has_entry_point(request: Mapping[str, Any]) -> bool:
    decoded = decode_hyperparameters(request.get("HyperParameters", {}))
    spec = request.get("AlgorithmSpecification", {})
    return bool(decoded.get(PROGRAM)) or bool(spec.get("ContainerEntrypoint"))


def entry_command(request: Mapping[str, Any], python: str) -> list[str]:
    """The process to run: the SDK's `sagemaker_program` with the hyperparameters as arguments,
    else `AlgorithmSpecification.ContainerEntrypoint` + `ContainerArguments` (a leading
    `python`/`python3` means this interpreter, whose environment has the project installed)."""
    decoded = decode_hyperparameters(request.get("HyperParameters", {}))
    program = decoded.get(PROGRAM)
    if program:
        program = str(program)
        args = command_line_args(user_hyperparameters(decoded))
        if program.endswith(".py"):
            return [python, program, *args]
        if program.endswith(".sh"):
            return ["/bin/sh", program, *args]
        return [f"./{program}", *args]
    spec = request["AlgorithmSpecification"]
    entrypoint = list(spec["ContainerEntrypoint"])
    if entrypoint[0] in PYTHON_NAMES:
        entrypoint[0] = python
    return [*entrypoint, *spec.get("ContainerArguments", [])]


def instance_count(request: Mapping[str, Any]) -> int:
    """Every instance of the job, all groups together: the hosts `algo-1..algo-N` SageMaker
    publishes host metrics for, even though one local process stands for all of them."""
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups")
    return sum(group["InstanceCount"] for group in groups) if groups else resources["InstanceCount"]


def resource_config(request: Mapping[str, Any], host: Host) -> dict[str, Any]:
    """`resourceconfig.json` for `host`, as SageMaker writes it for instance groups."""
    cluster = hosts(request)
    return {
        "current_host": host.name,
        "current_instance_type": host.instance_type,
        "current_group_name": host.group,
        "hosts": [each.name for each in cluster],
        "instance_groups": [
            {"instance_group_name": each.group, "instance_type": each.instance_type, "hosts": [each.name]}
            for each in cluster
        ],
        "network_interface_name": "eth0",
    }


def input_data_config(request: Mapping[str, Any]) -> dict[str, Any]:
    default_mode = request["AlgorithmSpecification"]["TrainingInputMode"]
    config: dict[str, Any] = {}
    for channel in request.get("InputDataConfig", []):
        source = channel["DataSource"]["S3DataSource"]
        entry = {
            "TrainingInputMode": channel.get("InputMode", default_mode),
            "S3DistributionType": source.get("S3DataDistributionType", "FullyReplicated"),
            "RecordWrapperType": channel.get("RecordWrapperType", "None"),
        }
        if "ContentType" in channel:
            entry["ContentType"] = channel["ContentType"]
        config[channel["ChannelName"]] = entry
    return config


def write_config(paths: JobPaths, request: Mapping[str, Any]) -> None:
    """Every host's `input/config/*.json` as SageMaker writes them (hyperparameters as the raw strings)."""
    for host in hosts(request):
        files = {
            "hyperparameters.json": request.get("HyperParameters", {}),
            "resourceconfig.json": resource_config(request, host),
            "inputdataconfig.json": input_data_config(request),
        }
        config_dir = paths.host_config_dir(host.name)
        config_dir.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (config_dir / name).write_text(json.dumps(content, indent=2))


def cluster_env(request: Mapping[str, Any], host: Host) -> dict[str, Any]:
    """Where `host` stands in the cluster, by the training toolkit's names: each is a member of
    `SM_TRAINING_ENV`, and those the toolkit exports are `SM_<NAME>` too (`CLUSTER_VARIABLES`)."""
    cluster = hosts(request)
    decoded = decode_hyperparameters(request.get("HyperParameters", {}))
    listed = decoded.get(DISTRIBUTION_GROUPS_HYPERPARAMETER, [])
    distributed = listed if isinstance(listed, list) else []
    distribution_hosts = [each.name for each in cluster if each.group in distributed]
    master = (distribution_hosts or [cluster[0].name])[0]
    return {
        "hosts": [each.name for each in cluster],
        "current_host": host.name,
        "current_instance_type": host.instance_type,
        "current_instance_group": host.group,
        "current_instance_group_hosts": [host.name],
        "instance_groups": [each.group for each in cluster],
        "instance_groups_dict": {
            each.group: {"instance_group_name": each.group, "instance_type": each.instance_type, "hosts": [each.name]}
            for each in cluster
        },
        "distribution_instance_groups": distributed,
        "is_hetero": len(cluster) > 1,
        "master_hostname": master,
        "is_master": host.name == master,
    }


CLUSTER_VARIABLES = (
    "hosts",
    "current_host",
    "current_instance_type",
    "current_instance_group",
    "current_instance_group_hosts",
    "instance_groups",
    "instance_groups_dict",
    "distribution_instance_groups",
    "is_hetero",
)
"""The members of `cluster_env` the training toolkit exports as `SM_*` variables."""


def container_env(paths: JobPaths, request: Mapping[str, Any], *, job_arn: str, host: Host) -> dict[str, str]:
    """The `SM_*` variables (plus `SMQ_CHECKPOINT_DIR`) a training script on `host` sees."""
    cluster = cluster_env(request, host)
    config_dir = paths.host_config_dir(host.name)
    decoded = decode_hyperparameters(request.get("HyperParameters", {}))
    hyperparameters = user_hyperparameters(decoded)
    program = str(decoded.get(PROGRAM, ""))
    channels = sorted(c["ChannelName"] for c in request.get("InputDataConfig", []))
    channel_dirs = {name: str(paths.channel_dir(name)) for name in channels}
    num_cpus = os.cpu_count() or 1
    training_env = {
        "additional_framework_parameters": {k: v for k, v in decoded.items() if k.startswith(FRAMEWORK_PREFIX)},
        "channel_input_dirs": channel_dirs,
        **cluster,
        "hyperparameters": hyperparameters,
        "input_config_dir": str(config_dir),
        "input_data_config": input_data_config(request),
        "input_dir": str(paths.input_dir),
        "job_name": request["TrainingJobName"],
        "log_level": 20,
        "model_dir": str(paths.model_dir),
        "module_dir": str(decoded.get(SUBMIT_DIRECTORY, paths.code_dir)),
        "module_name": program.removesuffix(".py"),
        "network_interface_name": "eth0",
        "num_cpus": num_cpus,
        "num_gpus": 0,
        "output_data_dir": str(paths.output_data_dir),
        "output_dir": str(paths.output_dir),
        "output_intermediate_dir": str(paths.intermediate_dir),
        "resource_config": resource_config(request, host),
        "user_entry_point": program,
    }
    env = {
        "SM_MODEL_DIR": str(paths.model_dir),
        "SM_INPUT_DIR": str(paths.input_dir),
        "SM_INPUT_CONFIG_DIR": str(config_dir),
        "SM_OUTPUT_DIR": str(paths.output_dir),
        "SM_OUTPUT_DATA_DIR": str(paths.output_data_dir),
        "SM_OUTPUT_INTERMEDIATE_DIR": str(paths.intermediate_dir),
        "SM_CHANNELS": _env_value(channels),
        "SM_HPS": _env_value(hyperparameters),
        "SM_NUM_GPUS": "0",
        "SM_NUM_CPUS": str(num_cpus),
        "SM_NETWORK_INTERFACE_NAME": "eth0",
        "SM_LOG_LEVEL": "20",
        "SM_USER_ARGS": _env_value(command_line_args(hyperparameters)),
        "SM_USER_ENTRY_POINT": program,
        "SM_MODULE_NAME": program.removesuffix(".py"),
        "SM_MODULE_DIR": training_env["module_dir"],
        "SM_RESOURCE_CONFIG": _env_value(resource_config(request, host)),
        "SM_INPUT_DATA_CONFIG": _env_value(input_data_config(request)),
        "SM_FRAMEWORK_PARAMS": _env_value(training_env["additional_framework_parameters"]),
        "SM_TRAINING_ENV": _env_value(training_env),
        "TRAINING_JOB_NAME": request["TrainingJobName"],
        "TRAINING_JOB_ARN": job_arn,
        "SMQ_CHECKPOINT_DIR": str(paths.checkpoint_dir),
        "PYTHONUNBUFFERED": "1",
    }
    env.update({f"SM_{name.upper()}": _env_value(cluster[name]) for name in CLUSTER_VARIABLES})
    env.update({f"SM_CHANNEL_{name.upper()}": path for name, path in channel_dirs.items()})
    env.update({f"SM_HP_{key.upper()}": _env_value(v) for key, v in hyperparameters.items()})
    return env


def _env_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
