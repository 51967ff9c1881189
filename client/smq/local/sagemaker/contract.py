"""The SageMaker training container contract, rebuilt on the local file system.

A training script written for SageMaker reads its hyperparameters from its arguments and the
`SM_*` variables, its data from `SM_CHANNEL_*`, and writes `SM_MODEL_DIR` and its checkpoint
directory. This module builds exactly that for one job: the `/opt/ml`-style tree under the
job's work directory, the config files, the environment and the command line, following the
SageMaker training toolkit's conventions (decoding, argument order, variable names).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "algo-1"
FRAMEWORK_PREFIX = "sagemaker_"
PROGRAM = "sagemaker_program"
SUBMIT_DIRECTORY = "sagemaker_submit_directory"
PYTHON_NAMES = ("python", "python3")


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

    @property
    def log_file(self) -> Path:
        """A local copy of everything the job printed, across attempts."""
        return self.root / f"{HOST}.log"

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


def instance_type(request: Mapping[str, Any]) -> str:
    """The type of the first (or only) instance group: the one `algo-1` runs on."""
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups")
    return groups[0]["InstanceType"] if groups else resources["InstanceType"]


def instance_count(request: Mapping[str, Any]) -> int:
    """Every instance of the job, all groups together: the hosts `algo-1..algo-N` SageMaker
    publishes host metrics for, even though one local process stands for all of them."""
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups")
    return sum(group["InstanceCount"] for group in groups) if groups else resources["InstanceCount"]


def resource_config(request: Mapping[str, Any]) -> dict[str, Any]:
    """`resourceconfig.json`: a single host, whatever the instance count, because one local
    process stands for the whole cluster."""
    groups = request["ResourceConfig"].get("InstanceGroups")
    group = groups[0].get("InstanceGroupName", "homogeneousCluster") if groups else ("homogeneousCluster")
    kind = instance_type(request)
    return {
        "current_host": HOST,
        "current_instance_type": kind,
        "current_group_name": group,
        "hosts": [HOST],
        "instance_groups": [{"instance_group_name": group, "instance_type": kind, "hosts": [HOST]}],
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
    """`input/config/*.json` as SageMaker writes them (hyperparameters as the raw strings)."""
    files = {
        "hyperparameters.json": request.get("HyperParameters", {}),
        "resourceconfig.json": resource_config(request),
        "inputdataconfig.json": input_data_config(request),
    }
    for name, content in files.items():
        (paths.config_dir / name).write_text(json.dumps(content, indent=2))


def container_env(paths: JobPaths, request: Mapping[str, Any], *, job_arn: str) -> dict[str, str]:
    """The `SM_*` variables (plus `SMQ_CHECKPOINT_DIR`) a training script sees."""
    decoded = decode_hyperparameters(request.get("HyperParameters", {}))
    hyperparameters = user_hyperparameters(decoded)
    program = str(decoded.get(PROGRAM, ""))
    channels = sorted(c["ChannelName"] for c in request.get("InputDataConfig", []))
    channel_dirs = {name: str(paths.channel_dir(name)) for name in channels}
    num_cpus = os.cpu_count() or 1
    training_env = {
        "additional_framework_parameters": {k: v for k, v in decoded.items() if k.startswith(FRAMEWORK_PREFIX)},
        "channel_input_dirs": channel_dirs,
        "current_host": HOST,
        "current_instance_type": instance_type(request),
        "hosts": [HOST],
        "hyperparameters": hyperparameters,
        "input_config_dir": str(paths.config_dir),
        "input_data_config": input_data_config(request),
        "input_dir": str(paths.input_dir),
        "is_master": True,
        "job_name": request["TrainingJobName"],
        "log_level": 20,
        "master_hostname": HOST,
        "model_dir": str(paths.model_dir),
        "module_dir": str(decoded.get(SUBMIT_DIRECTORY, paths.code_dir)),
        "module_name": program.removesuffix(".py"),
        "network_interface_name": "eth0",
        "num_cpus": num_cpus,
        "num_gpus": 0,
        "output_data_dir": str(paths.output_data_dir),
        "output_dir": str(paths.output_dir),
        "output_intermediate_dir": str(paths.intermediate_dir),
        "resource_config": resource_config(request),
        "user_entry_point": program,
    }
    env = {
        "SM_MODEL_DIR": str(paths.model_dir),
        "SM_INPUT_DIR": str(paths.input_dir),
        "SM_INPUT_CONFIG_DIR": str(paths.config_dir),
        "SM_OUTPUT_DIR": str(paths.output_dir),
        "SM_OUTPUT_DATA_DIR": str(paths.output_data_dir),
        "SM_OUTPUT_INTERMEDIATE_DIR": str(paths.intermediate_dir),
        "SM_CHANNELS": _env_value(channels),
        "SM_HPS": _env_value(hyperparameters),
        "SM_HOSTS": _env_value([HOST]),
        "SM_CURRENT_HOST": HOST,
        "SM_CURRENT_INSTANCE_TYPE": instance_type(request),
        "SM_NUM_GPUS": "0",
        "SM_NUM_CPUS": str(num_cpus),
        "SM_NETWORK_INTERFACE_NAME": "eth0",
        "SM_LOG_LEVEL": "20",
        "SM_USER_ARGS": _env_value(command_line_args(hyperparameters)),
        "SM_USER_ENTRY_POINT": program,
        "SM_MODULE_NAME": program.removesuffix(".py"),
        "SM_MODULE_DIR": training_env["module_dir"],
        "SM_RESOURCE_CONFIG": _env_value(resource_config(request)),
        "SM_INPUT_DATA_CONFIG": _env_value(input_data_config(request)),
        "SM_FRAMEWORK_PARAMS": _env_value(training_env["additional_framework_parameters"]),
        "SM_TRAINING_ENV": _env_value(training_env),
        "TRAINING_JOB_NAME": request["TrainingJobName"],
        "TRAINING_JOB_ARN": job_arn,
        "SMQ_CHECKPOINT_DIR": str(paths.checkpoint_dir),
        "PYTHONUNBUFFERED": "1",
    }
    env.update({f"SM_CHANNEL_{name.upper()}": path for name, path in channel_dirs.items()})
    env.update({f"SM_HP_{key.upper()}": _env_value(v) for key, v in hyperparameters.items()})
    return env


def _env_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
