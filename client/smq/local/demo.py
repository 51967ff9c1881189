"""`smq local demo` (`make demo`): the seed scenario on the local stack, with real trainer processes.

Capacity 2. job1 (priority 1), job2 (2), job3 (1) and job4 (3) are submitted a few seconds apart
(with the real trainer, job4 once job1 has saved a checkpoint). job4 preempts job1 (the lowest priority running job); job1 resumes from its checkpoint as soon as
job2 finishes, ahead of job3 (same priority, submitted later); all four complete.

First, unless told not to, a warm-up round of WARM_UP_JOBS jobs of the same family (`smq:family`)
and training length completes, so that the queue has learned how long such a job takes: the
scenario's start estimates are then bands, and the demo ends with a table of each one against the
start that followed (demo_estimates.py).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from smq_lambda.forecast.durations import FAMILY_TAG

from smq.api_client import SmqApiClient
from smq.errors import SmqError
from smq.formatting import status_table
from smq.local.demo_estimates import HEADERS as ESTIMATE_HEADERS
from smq.local.demo_estimates import EstimateLog, EstimateRow, estimate_rows
from smq.local.stack import REGION, REPOSITORY, LocalStack, LocalStackOptions

POOL = "ml.m5.xlarge"
JOBS = (("job1", 1), ("job2", 2), ("job3", 1), ("job4", 3))
VICTIM, PREEMPTOR = "job1", "job4"
CHECKPOINT_SAVED = "checkpoint saved"
"""What the trainer logs once a checkpoint is written: with the real trainer, job4 is submitted only
after job1 logged it (at most CHECKPOINT_WAIT_SECONDS), so job1 always has a step to resume from."""
CHECKPOINT_WAIT_SECONDS = 120.0
WARM_UP_JOBS = ("warmup1", "warmup2", "warmup3")
FAMILY = "tiny-vit"
"""The `smq:family` of every job of the demo: the warm-up's durations are the scenario's history."""
DEADLINE_SECONDS = 480.0
"""The longest a round (the warm-up, or the scenario) may take before the demo gives up: room for
job1's double length resumed on a loaded machine (a suite beside it took the scenario past 270 s)."""
POLL_SECONDS = 0.5
FINISHED = ("completed", "failed", "cancelled")
TRAINER_HYPERPARAMETERS = {
    "embed-dim": 64,
    "depth": 4,
    "num-heads": 4,
    "patch-size": 8,
    "img-size": 32,
    "batch-size": 32,
    "checkpoint-every-steps": 100,
    "log-every": 50,
    "threads": 1,
    "seed": 0,
}
"""A ViT small enough that a step takes 25–50 ms on one CPU core; how many steps a job trains is
the pace's."""


@dataclass(frozen=True)
class Pace:
    """How fast the scenario goes: the gap between submissions, and how long a job trains, in seconds
    with the synthetic executor, in steps with the real trainer (1,200 steps take 30–60 s on one
    core, and a job's first seconds go to starting Python and importing torch).

    job4 must arrive, and its preemption land, while job1 still trains. Fixed gaps cannot promise
    that on a loaded machine, where one submission may stall for ten seconds or more, so job1 trains
    `victim_length` times as long as the others: the margin grows with the pace, not with luck."""

    submit_gap_s: float = 4.0
    synthetic_training_s: float = 20.0
    trainer_steps: int = 1200
    victim_length: float = 2.0

    def steps(self, name: str) -> int:
        return round(self.trainer_steps * self._length(name))

    def synthetic_seconds(self, name: str) -> float:
        return self.synthetic_training_s * self._length(name)

    def _length(self, name: str) -> float:
        return self.victim_length if name == VICTIM else 1.0


DEMO_PACE = Pace()

RESUMED = re.compile(r"resumed from checkpoint step (\d+)")
STEP = re.compile(r"\bstep=(\d+)\b")


def demo_request(name: str, priority: int, source_uri: str, executor: str, pace: Pace = DEMO_PACE) -> dict[str, Any]:
    """The CreateTrainingJob request the SageMaker SDK would build for trainer/train.py."""
    hyperparameters = {key: json.dumps(value) for key, value in TRAINER_HYPERPARAMETERS.items()}
    hyperparameters["max-steps"] = json.dumps(pace.steps(name))
    hyperparameters["sagemaker_program"] = json.dumps("train.py")
    hyperparameters["sagemaker_submit_directory"] = json.dumps(source_uri)
    if executor == "synthetic":
        hyperparameters["smq_synthetic_duration"] = json.dumps(f"{pace.synthetic_seconds(name):g}")
    return {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "smq-local/pytorch-training:cpu", "TrainingInputMode": "File"},
        "HyperParameters": hyperparameters,
        "OutputDataConfig": {"S3OutputPath": "s3://smq-local/demo/output"},
        "ResourceConfig": {"InstanceType": POOL, "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 1800},
        "Tags": [
            {"Key": "priority", "Value": str(priority)},
            {"Key": "project", "Value": "smq-demo"},
            {"Key": FAMILY_TAG, "Value": FAMILY},
        ],
    }


def upload_trainer(stack: LocalStack) -> str:
    """Pack trainer/ the way the SDK packs `source_dir` and put it in the local S3."""
    archive = shutil.make_archive(str(stack.workdir / "sourcedir"), "gztar", root_dir=REPOSITORY / "trainer")
    key = "demo/source/sourcedir.tar.gz"
    stack.boto3_client("s3").upload_file(archive, stack.bucket, key)
    return f"s3://{stack.bucket}/{key}"


class QueueView:
    """Prints the queue state table of one round's jobs whenever a job's state, priority or attempts
    change, and notes the first estimate each job is given for each wait."""

    def __init__(self, client: SmqApiClient, names: Collection[str], estimates: EstimateLog | None = None) -> None:
        self._client = client
        self._names = frozenset(names)
        self._estimates = estimates
        self._last: tuple[Any, ...] | None = None
        self.jobs: list[dict[str, Any]] = []

    def submitted(self, answer: dict[str, Any], heading: str) -> None:
        """The submission answer may already carry the job's first estimate."""
        if self._estimates is not None:
            self._estimates.note(answer, datetime.now(UTC))
        self.refresh(heading=heading)

    def refresh(self, *, heading: str | None = None) -> None:
        self.jobs = [job for job in self._client.list_jobs(state="all") if job["name"] in self._names]
        if self._estimates is not None:
            self._estimates.note_all(self.jobs, datetime.now(UTC))
        fingerprint = tuple((job["name"], job["state"], job["priority"], len(job["attempts"])) for job in self.jobs)
        if heading is None and fingerprint == self._last:
            return
        self._last = fingerprint
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        print(f"\n[{stamp}] {heading or 'queue changed'}")
        print(status_table(self.jobs, datetime.now(UTC)), flush=True)

    def all_finished(self) -> bool:
        return len(self.jobs) == len(self._names) and all(job["state"] in FINISHED for job in self.jobs)


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


@dataclass(frozen=True)
class DemoRun:
    summaries: list[Summary]
    estimates: list[EstimateRow]
    """The scenario's start estimates against its starts (empty if no pass estimated any)."""
    problems: list[str]
    """What went wrong with the scenario; empty when all four completed and job1 resumed."""


def run_demo(workdir: Path, executor: str = "process", *, warm_up: bool = True, pace: Pace = DEMO_PACE) -> int:
    """Run the scenario; 0 when all four complete and job1 resumed from a checkpoint step > 0."""
    return 1 if play_demo(workdir, executor, warm_up=warm_up, pace=pace).problems else 0


def play_demo(workdir: Path, executor: str = "process", *, warm_up: bool = True, pace: Pace = DEMO_PACE) -> DemoRun:
    """Run the warm-up round (if asked) and the scenario, printing the queue as it goes and the
    summary and estimate tables at the end."""
    from tabulate import tabulate

    shutil.rmtree(workdir, ignore_errors=True)
    options = LocalStackOptions(
        capacity={POOL: 2}, executor=executor, workdir=workdir, stop_grace_seconds=60, reconcile_every_seconds=10
    )
    print(f"Starting the local stack ({executor} executor, pool {POOL} with 2 instances)...", flush=True)
    with LocalStack(options) as stack:
        client = SmqApiClient(stack.api_url, region=REGION)
        source = upload_trainer(stack)
        if warm_up:
            _warm_up(client, source, executor, pace)
        estimates = EstimateLog()
        view = QueueView(client, [name for name, _ in JOBS], estimates)
        began = time.monotonic()
        for name, priority in JOBS:
            if name == PREEMPTOR and executor == "process":
                _await_checkpoint(view, stack, VICTIM, until=time.monotonic() + CHECKPOINT_WAIT_SECONDS)
            answer = client.add_job(demo_request(name, priority, source, executor, pace))
            view.submitted(answer, heading=f"submitted {name} (priority {priority})")
            _watch(view, until=time.monotonic() + pace.submit_gap_s)
        _watch(view, until=began + DEADLINE_SECONDS, stop_when_finished=True)
        summaries = [summarize(job, stack.training_logs) for job in sorted(view.jobs, key=lambda job: job["name"])]
        elapsed = time.monotonic() - began

    print(f"\nSummary after {elapsed:.0f} s")
    headers = ["Job", "State", "Attempts", "Waiting", "Running", "Resumed from step", "Steps redone"]
    print(tabulate([summary.row() for summary in summaries], headers=headers), flush=True)
    rows = estimate_rows(estimates, view.jobs)
    if rows:
        print("\nStart estimates, as first given for each wait, against the starts that followed")
        print(tabulate([row.cells() for row in rows], headers=ESTIMATE_HEADERS), flush=True)
    return DemoRun(summaries, rows, _verdict(summaries, executor, pace))


def _warm_up(client: SmqApiClient, source: str, executor: str, pace: Pace) -> None:
    """Jobs of the scenario's family and length, run to completion: the history its estimates learn from."""
    view = QueueView(client, WARM_UP_JOBS)
    began = time.monotonic()
    for name in WARM_UP_JOBS:
        client.add_job(demo_request(name, 0, source, executor, pace))
    view.refresh(heading=f"warm-up: submitted {', '.join(WARM_UP_JOBS)} (family {FAMILY}) to learn its durations")
    _watch(view, until=began + DEADLINE_SECONDS, stop_when_finished=True)
    if not view.all_finished():
        raise SmqError(f"the warm-up round did not finish within {DEADLINE_SECONDS:.0f} s")


def _await_checkpoint(view: QueueView, stack: LocalStack, name: str, *, until: float) -> None:
    """Watch the queue until `name`'s running attempt has saved a checkpoint, so the preemption that
    follows shows a resume mid-training however slowly the machine starts Python and torch."""
    while time.monotonic() < until:
        view.refresh()
        job = next((job for job in view.jobs if job["name"] == name), None)
        attempts = (job or {}).get("attempts") or []
        if attempts and CHECKPOINT_SAVED in stack.training_logs(attempts[-1]["training_job_name"]):
            return
        time.sleep(POLL_SECONDS)


def _watch(view: QueueView, *, until: float, stop_when_finished: bool = False) -> None:
    while time.monotonic() < until:
        view.refresh()
        if stop_when_finished and view.all_finished():
            return
        time.sleep(POLL_SECONDS)


def _verdict(summaries: list[Summary], executor: str, pace: Pace) -> list[str]:
    problems = [f"{summary.name} ended {summary.state}" for summary in summaries if summary.state != "completed"]
    job1 = next(summary for summary in summaries if summary.name == "job1")
    if job1.attempts < 2:
        problems.append("job1 was not preempted")
    elif executor == "process" and not any(0 < step < pace.steps(VICTIM) for step in job1.resumed_from):
        problems.append("job1 did not resume mid-training from a checkpoint")
    for problem in problems:
        print(f"demo failed: {problem}")
    if not problems:
        print("\nAll four jobs completed; job4 preempted job1, which resumed from its checkpoint.")
    return problems
