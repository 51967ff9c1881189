"""The process executor: real processes under the SageMaker container contract, on moto S3/Logs."""

from __future__ import annotations

import io
import json
import re
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from conftest import (
    BUCKET,
    Stack,
    aws,
    gpu_utilization,
    job_request,
    log_lines,
    s3_keys,
    script_job,
    unique,
    wait_for_gpu_utilization,
)


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody has reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


STARTUP_TIMEOUT_S = 60.0
"""How long a test waits for a training process to start and write or log something: Python's start
and imports, which took over 10 s on a loaded CI machine. A wait, not a speed check."""


def wait_for_file(path: Path, timeout: float = STARTUP_TIMEOUT_S) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return json.loads(path.read_text())


def wait_for_line(stack: Stack, name: str, pattern: str, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Wait until the job's local log copy shows `pattern` (the job has made progress)."""
    deadline = time.monotonic() + timeout
    while True:
        log = stack.workdir / "jobs" / name / "algo-1.log"
        if log.exists() and re.search(pattern, log.read_text()):
            return
        assert time.monotonic() < deadline, f"{name} never printed {pattern!r}"
        time.sleep(0.02)


def read_model(env: dict[str, str], name: str) -> dict[str, bytes]:
    body = aws("s3", env).get_object(Bucket=BUCKET, Key=f"output/{name}/output/model.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(body["Body"].read()), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_a_script_gets_the_container_contract(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("probe")
    s3 = aws("s3", aws_env)
    s3.put_object(Bucket=BUCKET, Key=f"data/{name}/train/a.csv", Body=b"1,2\n")
    s3.put_object(Bucket=BUCKET, Key=f"data/{name}/train/sub/b.csv", Body=b"3,4\n")
    checkpoints = {"S3Uri": f"s3://{BUCKET}/checkpoints/{name}"}
    channel = {
        "ChannelName": "train",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{BUCKET}/data/{name}/train"}},
    }
    request = script_job(
        aws_env,
        name,
        "probe.py",
        CheckpointConfig=checkpoints,
        InputDataConfig=[channel],
        Environment={"MY_SETTING": "on"},
        args={"epochs": 3, "lr": 0.1, "model-name": "vit", "fp16": True, "b": 8},
    )

    process_stack.client.create_training_job(**request)
    description = process_stack.wait(name)

    assert description["TrainingJobStatus"] == "Completed", description.get("FailureReason")
    assert description["ModelArtifacts"]["S3ModelArtifacts"] == (f"s3://{BUCKET}/output/{name}/output/model.tar.gz")
    report = json.loads(read_model(aws_env, name)["report.json"])
    opt_ml = process_stack.workdir / "jobs" / name / "opt" / "ml"
    assert report["argv"] == ["-b", "8", "--epochs", "3", "--fp16", "True", "--lr", "0.1", "--model-name", "vit"]
    assert report["cwd"] == str(opt_ml / "code")
    env = report["env"]
    assert json.loads(env["SM_HPS"]) == {"b": 8, "epochs": 3, "lr": 0.1, "model-name": "vit", "fp16": True}
    assert (env["SM_HP_EPOCHS"], env["SM_HP_MODEL-NAME"], env["SM_HP_FP16"]) == ("3", "vit", "true")
    assert env["SM_MODEL_DIR"] == str(opt_ml / "model")
    assert env["SM_CHANNEL_TRAIN"] == str(opt_ml / "input" / "data" / "train")
    assert env["SM_OUTPUT_DATA_DIR"] == str(opt_ml / "output" / "data")
    assert env["SMQ_CHECKPOINT_DIR"] == str(opt_ml / "checkpoints")
    assert json.loads(env["SM_CHANNELS"]) == ["train"]
    assert json.loads(env["SM_HOSTS"]) == ["algo-1"]
    assert (env["SM_CURRENT_HOST"], env["SM_NUM_GPUS"]) == ("algo-1", "0")
    assert int(env["SM_NUM_CPUS"]) >= 1
    assert json.loads(env["SM_USER_ARGS"]) == report["argv"]
    assert env["SM_MODULE_DIR"] == f"s3://{BUCKET}/source/{name}/sourcedir.tar.gz"
    assert json.loads(env["SM_TRAINING_ENV"])["job_name"] == name
    assert env["AWS_ENDPOINT_URL_S3"] == aws_env["AWS_ENDPOINT_URL_S3"]
    assert env["TRAINING_JOB_NAME"] == name
    assert report["config"]["hyperparameters.json"] == request["HyperParameters"]
    assert report["config"]["resourceconfig.json"]["current_host"] == "algo-1"
    assert report["config"]["inputdataconfig.json"]["train"]["TrainingInputMode"] == "File"
    assert report["train"] == {"a.csv": "1,2\n", "sub/b.csv": "3,4\n"}
    assert s3_keys(aws_env, f"checkpoints/{name}/") == [f"checkpoints/{name}/marker.txt"]
    assert s3_keys(aws_env, f"output/{name}/output/") == [
        f"output/{name}/output/model.tar.gz",
        f"output/{name}/output/output.tar.gz",
    ]
    assert "probe ok" in log_lines(aws_env, name)

    second = unique("probe-again")
    process_stack.client.create_training_job(
        **script_job(aws_env, second, "probe.py", CheckpointConfig=checkpoints, InputDataConfig=[channel])
    )
    assert process_stack.wait(second)["TrainingJobStatus"] == "Completed"
    assert f"found checkpoint {name}" in log_lines(aws_env, second)


def test_stop_sends_sigterm_and_keeps_the_checkpoint(make_stack: Any, aws_env: dict[str, str]) -> None:
    # The grace before SIGKILL outlasts every wait below: the job can only end because the script
    # exited on SIGTERM by itself.
    process_stack: Stack = make_stack(executor="process", stop_grace_seconds=3600.0)
    name = unique("trap")
    process_stack.client.create_training_job(
        **script_job(
            aws_env,
            name,
            "steps.py",
            args={"steps": 1000},
            CheckpointConfig={"S3Uri": f"s3://{BUCKET}/checkpoints/{name}"},
        )
    )
    wait_for_line(process_stack, name, r"step 3\b")

    process_stack.client.stop_training_job(TrainingJobName=name)
    description = process_stack.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Stopped", "Stopped")
    saved = aws("s3", aws_env).get_object(Bucket=BUCKET, Key=f"checkpoints/{name}/state.json")
    assert json.loads(saved["Body"].read())["step"] >= 3
    assert any(line.startswith("caught SIGTERM") for line in log_lines(aws_env, name))
    assert "ModelArtifacts" in description


@pytest.mark.slow  # a real process for seconds
def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(
    make_stack: Any, aws_env: dict[str, str], tmp_path: Path
) -> None:
    stack: Stack = make_stack(executor="process", stop_grace_seconds=1.0)
    name = unique("stubborn")
    pid_file = tmp_path / "pids.json"
    stack.client.create_training_job(
        **script_job(aws_env, name, "steps.py", args={"steps": 1000, "on-sigterm": "ignore", "pid-file": str(pid_file)})
    )
    pids = wait_for_file(pid_file)

    began = time.monotonic()
    stack.client.stop_training_job(TrainingJobName=name)
    description = stack.wait(name)

    assert time.monotonic() - began >= 1.0  # not killed before its grace period was over
    assert description["TrainingJobStatus"] == "Stopped"
    assert not alive(pids["main"])
    assert not alive(pids["child"])  # the whole process group went


def test_a_failing_script_fails_with_its_last_lines(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("crash")
    process_stack.client.create_training_job(**script_job(aws_env, name, "steps.py", args={"steps": 10, "fail-at": 2}))

    description = process_stack.wait(name)

    assert (description["TrainingJobStatus"], description["SecondaryStatus"]) == ("Failed", "Failed")
    reason = description["FailureReason"]
    assert reason.startswith("AlgorithmError: ExecuteUserScriptError")
    assert "ExitCode 3" in reason
    assert "step 2\nTraceback (most recent call last):\nRuntimeError: loss is NaN" in reason
    assert len(reason) <= 1024
    assert "ModelArtifacts" not in description
    process_stack.wait_events(name, "Failed")
    assert process_stack.events[-1]["detail"]["FailureReason"] == reason


@pytest.mark.slow  # a real process for seconds
def test_a_spot_interruption_resumes_the_process_from_its_checkpoint(
    process_stack: Stack, aws_env: dict[str, str]
) -> None:
    name = unique("spot")
    process_stack.client.create_training_job(
        **script_job(
            aws_env,
            name,
            "steps.py",
            args={"steps": 30},
            EnableManagedSpotTraining=True,
            StoppingCondition={"MaxRuntimeInSeconds": 600, "MaxWaitTimeInSeconds": 1200},
            CheckpointConfig={"S3Uri": f"s3://{BUCKET}/checkpoints/{name}"},
        )
    )
    wait_for_line(process_stack, name, r"step 5\b")

    process_stack.service.inject(name, "interrupt")
    description = process_stack.wait(name)

    assert description["TrainingJobStatus"] == "Completed", description.get("FailureReason")
    statuses = [t["Status"] for t in description["SecondaryStatusTransitions"]]
    assert statuses[statuses.index("Interrupted") :] == [
        "Interrupted",
        "Starting",
        "Downloading",
        "Training",
        "Uploading",
        "Completed",
    ]
    lines = log_lines(aws_env, name)
    resumed = [int(m.group(1)) for line in lines if (m := re.fullmatch(r"resumed from checkpoint step (\d+)", line))]
    assert len(resumed) == 1 and resumed[0] >= 5
    assert json.loads(read_model(aws_env, name)["model.json"]) == {"steps": 30}


def test_shutdown_leaves_no_process_behind(make_stack: Any, aws_env: dict[str, str], tmp_path: Path) -> None:
    stack: Stack = make_stack(executor="process", stop_grace_seconds=0.5)
    name = unique("orphan")
    pid_file = tmp_path / "pids.json"
    stack.client.create_training_job(
        **script_job(aws_env, name, "steps.py", args={"steps": 1000, "on-sigterm": "ignore", "pid-file": str(pid_file)})
    )
    pids = wait_for_file(pid_file)

    stack.service.shutdown()

    assert not alive(pids["main"]) and not alive(pids["child"])
    assert stack.statuses(name)[-1] == ("Stopped", "Stopped")


@pytest.mark.slow  # a real process for seconds
def test_container_entrypoint_runs_without_sagemaker_program(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("entry")
    process_stack.client.create_training_job(
        **job_request(
            name,
            AlgorithmSpecification={
                "TrainingImage": "local/image",
                "TrainingInputMode": "File",
                "ContainerEntrypoint": ["python", "-c"],
                "ContainerArguments": ["import os; print('hello from', os.environ['SM_CURRENT_HOST'])"],
            },
        )
    )

    assert process_stack.wait(name)["TrainingJobStatus"] == "Completed"
    assert "hello from algo-1" in log_lines(aws_env, name)


def test_a_job_with_nothing_to_run_is_rejected(process_stack: Stack) -> None:
    with pytest.raises(ClientError) as raised:
        process_stack.client.create_training_job(**job_request(unique("empty")))

    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert "sagemaker_program" in raised.value.response["Error"]["Message"]


@pytest.mark.slow  # a real process for seconds
def test_a_process_reports_the_gpu_utilization_its_request_names_until_it_hangs(
    process_stack: Stack, aws_env: dict[str, str]
) -> None:
    name = unique("gpu")
    resources = {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    process_stack.client.create_training_job(
        **script_job(
            aws_env,
            name,
            "steps.py",
            args={"steps": 1000},
            ResourceConfig=resources,
            Environment={"SMQ_LOCAL_GPU_UTILIZATION": "37.5"},
        )
    )
    wait_for_line(process_stack, name, r"step 1\b")
    working = [wait_for_gpu_utilization(aws_env, name, host, lambda seen: True) for host in (1, 2)]

    process_stack.service.inject(name, "hang")
    hung = [wait_for_gpu_utilization(aws_env, name, host, lambda seen: seen[0] == 0.0) for host in (1, 2)]

    assert working == [(37.5, 37.5), (37.5, 37.5)]
    assert hung == [(0.0, 37.5), (0.0, 37.5)]
    process_stack.client.stop_training_job(TrainingJobName=name)
    assert process_stack.wait(name)["TrainingJobStatus"] == "Stopped"


def test_a_process_reports_busy_gpus_unless_told_otherwise(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("busy")
    process_stack.client.create_training_job(**script_job(aws_env, name, "steps.py", args={"steps": 1000}))
    wait_for_line(process_stack, name, r"step 1\b")

    assert wait_for_gpu_utilization(aws_env, name, 1, lambda seen: True) == (100.0, 100.0)
    assert gpu_utilization(aws_env, name, 2) is None
    process_stack.client.stop_training_job(TrainingJobName=name)


@pytest.mark.parametrize("value", ["busy", "-1", "nan", "inf"])
def test_a_gpu_utilization_that_is_not_a_percentage_is_refused(
    process_stack: Stack, aws_env: dict[str, str], value: str
) -> None:
    request = script_job(aws_env, unique("bad-gpu"), "steps.py", Environment={"SMQ_LOCAL_GPU_UTILIZATION": value})

    with pytest.raises(ClientError) as raised:
        process_stack.client.create_training_job(**request)

    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert "SMQ_LOCAL_GPU_UTILIZATION" in raised.value.response["Error"]["Message"]
