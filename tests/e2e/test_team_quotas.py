"""End to end on the local stack with real processes (issue 11): team quotas loaded from a
configuration document file, as `smq local up --config FILE.json` loads it. Team a runs one job
within its quota and borrows team b's idle quota for a second; b's job, of lower priority, reclaims
b's quota by preempting a's borrowed job, although it ran far less than the 600 s minimum runtime
that protects jobs from preemption for priority under quotas; once b's job is done, a's job resumes
on b's quota from its checkpoint (a's first job holds a's quota until the test releases it) and
every job completes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, process_request, upload_source, wait_for

SCRIPTS = Path(__file__).parents[1] / "local_sagemaker" / "scripts"
"""steps.py: one step per --step-seconds, a checkpoint after each, saved on SIGTERM, resumed."""
RESUMED = re.compile(r"resumed from checkpoint step (\d+)")
CAUGHT = re.compile(r"caught SIGTERM at step (\d+)")
FINISHED = {"completed", "failed", "cancelled"}
STARTED = {"running", *FINISHED}
HOLD = """import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--until")
args = parser.parse_args()
print("holding", flush=True)
while not os.path.exists(args.until):
    time.sleep(0.05)
print("released", flush=True)
"""
"""hold.py: trains until the file named by --until exists, so the test decides when a1 is done."""
CONFIG = {
    "pools": {POOL: 2},
    "quotas": {
        "a": {"instances": {POOL: 1}, "sharing": "lend_and_borrow"},
        "b": {"instances": {POOL: 1}, "sharing": "lend_and_borrow"},
    },
}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    workdir = tmp_path_factory.mktemp("quota-stack")
    config_file = workdir / "config.json"
    config_file.write_text(json.dumps(CONFIG))
    options = LocalStackOptions(
        config=json.loads(config_file.read_text()),
        executor="process",
        workdir=workdir,
        stop_grace_seconds=3.0,
        reconcile_every_seconds=5,
    )
    with LocalStack(options) as running:
        yield running


@pytest.fixture(scope="module")
def steps_source(stack: LocalStack) -> str:
    return upload_source(stack, SCRIPTS, "code/steps.tar.gz")


@pytest.fixture(scope="module")
def hold_source(stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("hold")
    (directory / "hold.py").write_text(HOLD)
    return upload_source(stack, directory, "code/hold.tar.gz")


@pytest.fixture
def client(stack: LocalStack) -> SmqApiClient:
    return SmqApiClient(stack.api_url, region="us-east-1")


def team_job(
    name: str, source: str, program: str, *, team: str, priority: int, **hyperparameters: Any
) -> dict[str, Any]:
    request = process_request(
        name, priority=priority, source_uri=source, program=program, hyperparameters=hyperparameters
    )
    request["Tags"] = [{"Key": "priority", "Value": str(priority)}, {"Key": "team", "Value": team}]
    return request


def transitions(client: SmqApiClient, names: list[str], timeout: float = 60) -> dict[str, list[Any]]:
    """Each job's (state, reason) changes, polled quickly until the last of `names` runs (or ran).
    The reason a pass gives when it starts a job is its reason only while `starting` (running, it
    is SageMaker's status), and a preemption's while `preempting`; each of those windows is a whole
    event round trip (the local SageMaker's event through the bus and the scheduler queue): 0.5 s on
    an idle machine, more when loaded. The attempts keep the preemption's reason for good."""
    deadline = time.monotonic() + timeout
    seen: dict[str, list[Any]] = {name: [] for name in names}
    while True:
        for name in names:
            job = client.get_job(name)
            if not seen[name] or seen[name][-1] != (job["state"], job["reason"]):
                seen[name].append((job["state"], job["reason"]))
        if seen[names[-1]][-1][0] in STARTED:
            return seen
        assert time.monotonic() < deadline, f"{names[-1]} did not start in {timeout} s: {seen}"
        time.sleep(0.02)


def reason_when(seen: list[Any], state: str) -> str:
    reasons = [reason for seen_state, reason in seen if seen_state == state]
    assert reasons, f"never seen {state}: {seen}"
    return reasons[0]


def wait_until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)
    return found


def quota_rows(client: SmqApiClient) -> dict[str, dict[str, Any]]:
    return {row["team"]: row for row in client.get_quotas()["teams"] if row["pool"] == POOL}


def steps_in(stack: LocalStack, training_job: str, pattern: re.Pattern[str]) -> list[int]:
    return [int(step) for step in pattern.findall(stack.training_logs(training_job))]


def at(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_a_lender_reclaims_its_quota_and_the_borrowed_job_resumes_from_its_checkpoint(
    stack: LocalStack, client: SmqApiClient, steps_source: str, hold_source: str, tmp_path: Path
) -> None:
    # a1 runs until released, at the end: a2 can come back only on b's quota, once b1 is done.
    release = tmp_path / "release-a1"
    client.add_job(team_job("a1", hold_source, "hold.py", team="a", priority=5, until=str(release)))
    a1_start = reason_when(transitions(client, ["a1"])["a1"], "starting")
    assert a1_start.startswith("within a's quota: needs 1, a uses 0 of its quota of 1"), a1_start
    client.add_job(team_job("a2", steps_source, "steps.py", team="a", priority=5, steps=120, **{"step-seconds": 0.1}))
    a2_start = reason_when(transitions(client, ["a2"])["a2"], "starting")
    assert a2_start.startswith(f"borrowing 1 of b's {POOL} idle quota"), a2_start
    borrowed = wait_until(
        "a pass measures a2 borrowing", lambda: (rows := quota_rows(client))["a"]["borrowed"] and rows
    )
    assert (borrowed["a"]["in_use"], borrowed["a"]["borrowed"], borrowed["b"]["lent"]) == (2, 1, 1), borrowed
    first_attempt = client.get_job("a2")["training_job_name"]
    wait_until("a2's third checkpoint", lambda: "step 3" in stack.training_logs(first_attempt))

    client.add_job(team_job("b1", steps_source, "steps.py", team="b", priority=1, steps=5, **{"step-seconds": 0.1}))

    seen = transitions(client, ["a1", "a2", "b1"])
    assert reason_when(seen["a2"], "preempting").startswith("reclaimed for b/b1: a was borrowing"), seen["a2"]
    assert {state for state, _ in seen["a1"]} == {"running"}, "the job within a's own quota keeps running"
    assert reason_when(seen["b1"], "starting").startswith("within b's quota"), seen["b1"]
    b1 = wait_for(client, "b1", FINISHED, timeout=90)
    resumed_job = wait_for(client, "a2", {"running", *FINISHED}, timeout=90)
    assert len(resumed_job["attempts"]) == 2, resumed_job
    assert client.get_job("a1")["state"] == "running"
    release.touch()
    a2 = wait_for(client, "a2", FINISHED, timeout=90)
    a1 = wait_for(client, "a1", FINISHED, timeout=90)

    assert [job["state"] for job in (a1, a2, b1)] == ["completed"] * 3, (a1, a2, b1)
    assert [len(a1["attempts"]), len(b1["attempts"])] == [1, 1]
    first, second = a2["attempts"]
    assert (first["number"], first["training_job_name"], first["outcome"]) == (1, first_attempt, "preempted")
    assert first["reason"].startswith("reclaimed for b/b1"), first
    assert (second["number"], second["outcome"]) == (2, "completed"), second
    assert a2["attempt_count"] == 2 and a2["attempt_outcomes"] == {"preempted": 1, "completed": 1}, a2
    assert at(b1["attempts"][0]["started_at"]) < at(second["started_at"])
    assert at(second["started_at"]) >= at(b1["attempts"][0]["ended_at"]), "a2 resumes once b1 gives b's quota back"
    saved = steps_in(stack, first_attempt, CAUGHT)
    resumed = steps_in(stack, second["training_job_name"], RESUMED)
    assert saved and saved[0] >= 3, "attempt 1 saved a checkpoint when it was stopped"
    assert resumed == saved, "attempt 2 resumed from attempt 1's checkpoint"
    assert "training done" in stack.training_logs(second["training_job_name"])
