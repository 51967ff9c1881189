"""`smq local demo` (`make demo`): the seed scenario on the local stack, with real trainer processes.

Capacity 2. job1 (priority 1), job2 (2), job3 (1) and job4 (3) are submitted a few seconds apart.
job4 preempts job1 (the lowest priority running job); job1 resumes from its checkpoint as soon as
job2 finishes, ahead of job3 (same priority, submitted later); all four complete.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from smq.api_client import SmqApiClient
from smq.formatting import status_table
from smq.local.stack import REGION, REPOSITORY, LocalStack, LocalStackOptions

POOL = "ml.m5.xlarge"
JOBS = (("job1", 1), ("job2", 2), ("job3", 1), ("job4", 3))
SUBMIT_GAP_SECONDS = 4.0
DEADLINE_SECONDS = 270.0
POLL_SECONDS = 0.5
FINISHED = ("completed", "failed", "cancelled")
TRAINER_HYPERPARAMETERS = {
    "embed-dim": 64,
    "depth": 4,
    "num-heads": 4,
    "patch-size": 8,
    "img-size": 32,
    "batch-size": 32,
    "max-steps": 1200,
    "checkpoint-every-steps": 100,
    "log-every": 50,
    "threads": 1,
    "seed": 0,
}
"""A ViT small enough that 1,200 steps take 30–60 s on one CPU core: long enough that job4 arrives
while job1 is still training, short enough for the whole demo to take a few minutes."""

RESUMED = re.compile(r"resumed from checkpoint step (\d+)")
STEP = re.compile(r"\bstep=(\d+)\b")


def demo_request(name: str, priority: int, source_uri: str, executor: str) -> dict[str, Any]:
    """The CreateTrainingJob request the SageMaker SDK would build for trainer/train.py."""
    hyperparameters = {key: json.dumps(value) for key, value in TRAINER_HYPERPARAMETERS.items()}
    hyperparameters["sagemaker_program"] = json.dumps("train.py")
    hyperparameters["sagemaker_submit_directory"] = json.dumps(source_uri)
    if executor == "synthetic":
        hyperparameters["smq_synthetic_duration"] = json.dumps("20")
    return {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "smq-local/pytorch-training:cpu", "TrainingInputMode": "File"},
        "HyperParameters": hyperparameters,
        "OutputDataConfig": {"S3OutputPath": "s3://smq-local/demo/output"},
        "ResourceConfig": {"InstanceType": POOL, "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 1800},
        "Tags": [{"Key": "priority", "Value": str(priority)}, {"Key": "project", "Value": "smq-demo"}],
    }


def upload_trainer(stack: LocalStack) -> str:
    """Pack trainer/ the way the SDK packs `source_dir` and put it in the local S3."""
    archive = shutil.make_archive(str(stack.workdir / "sourcedir"), "gztar", root_dir=REPOSITORY / "trainer")
    key = "demo/source/sourcedir.tar.gz"
    stack.boto3_client("s3").upload_file(archive, stack.bucket, key)
    return f"s3://{stack.bucket}/{key}"


class QueueView:
    """Prints the queue state table whenever a job's state, priority or attempts change."""

    def __init__(self, client: SmqApiClient) -> None:
        self._client = client
        self._last: tuple[Any, ...] | None = None
        self.jobs: list[dict[str, Any]] = []

    def refresh(self, *, heading: str | None = None) -> None:
        self.jobs = self._client.list_jobs(state="all")
        fingerprint = tuple((job["name"], job["state"], job["priority"], len(job["attempts"])) for job in self.jobs)
        if heading is None and fingerprint == self._last:
            return
        self._last = fingerprint
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        print(f"\n[{stamp}] {heading or 'queue changed'}")
        print(status_table(self.jobs, datetime.now(UTC)), flush=True)

    def all_finished(self) -> bool:
        return len(self.jobs) == len(JOBS) and all(job["state"] in FINISHED for job in self.jobs)


@dataclass
class Summary:
    name: str
    state: str
    attempts: int
    waiting_seconds: float
    running_seconds: float
    resumed_from: list[int]
    steps_redone: int

    def row(self) -> list[Any]:
        resumed = ", ".join(str(step) for step in self.resumed_from) or "-"
        return [
            self.name,
            self.state,
            self.attempts,
            f"{self.waiting_seconds:.0f} s",
            f"{self.running_seconds:.0f} s",
            resumed,
            self.steps_redone,
        ]


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def summarize(job: dict[str, Any], logs_of: Callable[[str], str]) -> Summary:
    """Attempts, time waiting and running, and the steps each resumed attempt had to redo."""
    waiting = running = 0.0
    ready = _time(job["submitted_at"])
    resumed_from: list[int] = []
    redone = 0
    previous_last_step: int | None = None
    for attempt in job["attempts"]:
        started, ended = _time(attempt["started_at"]), _time(attempt["ended_at"])
        if ready and started:
            waiting += (started - ready).total_seconds()
        if started and ended:
            running += (ended - started).total_seconds()
        ready = ended
        logs = logs_of(attempt["training_job_name"])
        resumed = [int(step) for step in RESUMED.findall(logs)]
        if resumed:
            resumed_from.append(resumed[0])
            if previous_last_step is not None:
                redone += max(previous_last_step - resumed[0], 0)
        steps = [int(step) for step in STEP.findall(logs)]
        previous_last_step = max(steps) if steps else previous_last_step
    return Summary(job["name"], job["state"], len(job["attempts"]), waiting, running, resumed_from, redone)


def run_demo(workdir: Path, executor: str = "process") -> int:
    """Run the scenario; 0 when all four complete and job1 resumed from a checkpoint step > 0."""
    from tabulate import tabulate

    shutil.rmtree(workdir, ignore_errors=True)
    options = LocalStackOptions(
        capacity={POOL: 2}, executor=executor, workdir=workdir, stop_grace_seconds=60, reconcile_every_seconds=10
    )
    print(f"Starting the local stack ({executor} executor, pool {POOL} with 2 instances)...", flush=True)
    with LocalStack(options) as stack:
        client = SmqApiClient(stack.api_url, region=REGION)
        source = upload_trainer(stack)
        view = QueueView(client)
        began = time.monotonic()
        for name, priority in JOBS:
            client.add_job(demo_request(name, priority, source, executor))
            view.refresh(heading=f"submitted {name} (priority {priority})")
            _watch(view, until=time.monotonic() + SUBMIT_GAP_SECONDS)
        _watch(view, until=began + DEADLINE_SECONDS, stop_when_finished=True)
        summaries = [summarize(job, stack.training_logs) for job in sorted(view.jobs, key=lambda job: job["name"])]
        elapsed = time.monotonic() - began

    print(f"\nSummary after {elapsed:.0f} s")
    headers = ["Job", "State", "Attempts", "Waiting", "Running", "Resumed from step", "Steps redone"]
    print(tabulate([summary.row() for summary in summaries], headers=headers), flush=True)
    return _verdict(summaries, executor)


def _watch(view: QueueView, *, until: float, stop_when_finished: bool = False) -> None:
    while time.monotonic() < until:
        view.refresh()
        if stop_when_finished and view.all_finished():
            return
        time.sleep(POLL_SECONDS)


def _verdict(summaries: list[Summary], executor: str) -> int:
    problems = [f"{summary.name} ended {summary.state}" for summary in summaries if summary.state != "completed"]
    job1 = next(summary for summary in summaries if summary.name == "job1")
    if job1.attempts < 2:
        problems.append("job1 was not preempted")
    elif executor == "process" and not any(
        0 < step < TRAINER_HYPERPARAMETERS["max-steps"] for step in job1.resumed_from
    ):
        problems.append("job1 did not resume mid-training from a checkpoint")
    for problem in problems:
        print(f"demo failed: {problem}")
    if not problems:
        print("\nAll four jobs completed; job4 preempted job1, which resumed from its checkpoint.")
    return 1 if problems else 0
