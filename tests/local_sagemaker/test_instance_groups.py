"""A heterogeneous job on the process executor: one host per instance group, each with the
resourceconfig.json and SM_* variables of its group, and the job ends as SageMaker's does."""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

from conftest import BUCKET, Stack, aws, log_lines, script_job, unique

GROUPS = {
    "InstanceGroups": [
        {"InstanceGroupName": "trainer", "InstanceType": "ml.g5.xlarge", "InstanceCount": 2},
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.xlarge", "InstanceCount": 1},
    ],
    "VolumeSizeInGB": 30,
}


def model_files(env: dict[str, str], name: str) -> dict[str, bytes]:
    body = aws("s3", env).get_object(Bucket=BUCKET, Key=f"output/{name}/output/model.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(body["Body"].read()), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_each_group_runs_a_host_that_knows_its_group(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("hetero")
    process_stack.client.create_training_job(**script_job(aws_env, name, "groups.py", ResourceConfig=GROUPS))

    description = process_stack.wait(name)

    assert description["TrainingJobStatus"] == "Completed", description.get("FailureReason")
    files = model_files(aws_env, name)
    trainer, data = json.loads(files["algo-1.json"]), json.loads(files["algo-2.json"])
    assert (trainer["group"], trainer["instance_type"]) == ("trainer", "ml.g5.xlarge")
    assert (data["group"], data["instance_type"]) == ("data", "ml.c5.xlarge")
    assert trainer["hosts"] == data["hosts"] == ["algo-1", "algo-2"]
    assert trainer["instance_groups"] == data["instance_groups"] == ["trainer", "data"]
    assert (data["resourceconfig"]["current_host"], data["resourceconfig"]["current_group_name"]) == ("algo-2", "data")
    assert data["resourceconfig"]["instance_groups"][0] == {
        "instance_group_name": "trainer",
        "instance_type": "ml.g5.xlarge",
        "hosts": ["algo-1"],
    }
    lines = log_lines(aws_env, name)
    assert "algo-1 in trainer done" in lines and "algo-2 in data done" in lines


def test_one_failing_host_fails_the_job_and_stops_the_others(process_stack: Stack, aws_env: dict[str, str]) -> None:
    name = unique("hetero-fail")
    request: dict[str, Any] = script_job(
        aws_env, name, "groups.py", ResourceConfig=GROUPS, Environment={"FAIL_GROUP": "trainer"}
    )
    process_stack.client.create_training_job(**request)

    description = process_stack.wait(name)

    assert description["TrainingJobStatus"] == "Failed"
    assert "algo-1 in trainer failed on purpose" in description["FailureReason"]
    assert "algo-2 in data done" not in log_lines(aws_env, name)
