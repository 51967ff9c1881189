"""The pass lease outlives no invocation: a pass killed at the scheduler's timeout frees scheduling
moments later. These tests tie the lease to template.yaml's `Timeout`, and check what every
invocation publishes (its metrics) through the real Lambda entry point."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from smq.local.lambda_context import LambdaContext
from smq.local.template import load_template
from smq_lambda.adapters.dynamodb_lease import DEFAULT_DURATION, EXPIRY_MARGIN, SCHEDULER_TIMEOUT, lease_duration
from smq_lambda.handlers import scheduler as scheduler_handler
from smq_lambda.scheduling.actions import StartJob
from smq_lambda.scheduling.decide import Decision
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service import passes

from tests.service.harness import POOL, World, queued_job
from tests.support.aws import TEMPLATE_PATH
from tests.support.fake_lease import InMemoryPassLease

KICK = {"source": "smq.api", "reason": "test"}
RECONCILE = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def template_timeout() -> timedelta:
    function = load_template(TEMPLATE_PATH)["Resources"]["SchedulerFunction"]
    return timedelta(seconds=int(function["Properties"]["Timeout"]))


@dataclass
class InvocationContext(LambdaContext):
    """A Lambda context whose remaining time the test sets (a real one counts down by the clock)."""

    remaining_millis: int = 0

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


class RecordingLease(InMemoryPassLease):
    """The in-memory lease, remembering how long each acquisition holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[timedelta] = []

    def try_acquire(self, owner: str, now: datetime, duration: timedelta | None = None) -> bool:
        acquired = super().try_acquire(owner, now, duration)
        if acquired:
            assert self.until is not None
            self.held.append(self.until - now)
        return acquired


def invoke(
    world: World, monkeypatch: pytest.MonkeyPatch, event: dict[str, Any], remaining: timedelta
) -> dict[str, Any]:
    """One invocation through the Lambda entry point (decorators, metrics), with `world`'s scheduler."""
    monkeypatch.setattr(scheduler_handler, "default_scheduler", lambda: world.scheduler)
    context = InvocationContext(function_name="smq-scheduler", remaining_millis=int(remaining.total_seconds() * 1000))
    return scheduler_handler.handler(event, context)


def test_the_lease_module_knows_the_scheduler_functions_timeout() -> None:
    assert template_timeout() == SCHEDULER_TIMEOUT
    assert DEFAULT_DURATION == template_timeout() + EXPIRY_MARGIN


def test_an_invocation_holds_the_lease_no_longer_than_the_templates_timeout_plus_the_margin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World(capacity={POOL: 1}, lease=RecordingLease())

    invoke(world, monkeypatch, KICK, remaining=template_timeout())

    assert world.lease.held == [template_timeout() + EXPIRY_MARGIN]


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_a_pass_killed_at_the_timeout_frees_the_lease_a_margin_later(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(capacity={POOL: 1}, lease=RecordingLease())
    remaining = timedelta(seconds=40)
    killed_at = world.clock() + remaining

    def killed() -> list[Any]:
        raise TimeoutError("Task timed out")

    world.store.in_use = killed  # type: ignore[method-assign]
    world.lease.abandon = lambda owner: None  # type: ignore[method-assign]  # a killed pass gives nothing up

    with pytest.raises(TimeoutError):
        invoke(world, monkeypatch, KICK, remaining=remaining)

    assert world.lease.held == [remaining + EXPIRY_MARGIN]
    assert not world.lease.try_acquire("next-pass", killed_at + EXPIRY_MARGIN)
    assert world.lease.try_acquire("next-pass", killed_at + EXPIRY_MARGIN + timedelta(seconds=1))


@pytest.mark.parametrize("remaining_millis", [0, 1, 999, 180_000])
def test_the_lease_lasts_the_remaining_time_plus_the_margin(remaining_millis: int) -> None:
    assert lease_duration(remaining_millis) == timedelta(milliseconds=remaining_millis) + EXPIRY_MARGIN


def emf_metrics(output: str) -> dict[tuple[str | None, str], list[float]]:
    """Metric values in the EMF lines powertools printed, by (pool dimension or None, name)."""
    values: dict[tuple[str | None, str], list[float]] = {}
    for line in output.splitlines():
        record = json.loads(line) if line.startswith("{") else {}
        if "_aws" not in record:
            continue
        for definition in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            value = record[definition["Name"]]
            key = (record.get("pool"), definition["Name"])
            values.setdefault(key, []).extend(value if isinstance(value, list) else [value])
    return values


def test_every_invocation_publishes_job_errors_stuck_jobs_and_pool_usage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress")
    world.submit("high", 5)
    world.later(16 * 60)
    world.store.create(queued_job("broken", priority=10, submitted_at=world.clock()))  # the new head
    real_save = world.store.save

    def save(job: Any, *, expected_version: int) -> Any:
        if job.name == "broken":
            raise RuntimeError("unexpected")
        return real_save(job, expected_version=expected_version)

    world.store.save = save  # type: ignore[method-assign]
    scheduler_handler.metrics.clear_metrics()
    capsys.readouterr()

    invoke(world, monkeypatch, KICK, remaining=template_timeout())

    published = emf_metrics(capsys.readouterr().out)
    assert published[(None, "JobErrors")] == [1.0]
    assert published[(None, "StuckJobs")] == [1.0]
    assert published[(POOL, "PoolInUse")] == [1.0]
    assert published[(POOL, "PoolCapacity")] == [1.0]

    monkeypatch.setattr(scheduler_handler, "default_outside_jobs", lambda: None)
    invoke(world, monkeypatch, RECONCILE, remaining=template_timeout())

    assert emf_metrics(capsys.readouterr().out)[(POOL, "QueueDepth")] == [2.0], "counted by reconciliation"


def test_a_pass_that_breaks_an_invariant_is_logged_and_counted_and_a_clean_one_counts_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    world = World(capacity={POOL: 1})
    world.submit("running", 0)
    world.progress("running", "InProgress")
    world.store.create(queued_job("waiting", priority=0, submitted_at=world.clock()))
    scheduler_handler.metrics.clear_metrics()
    capsys.readouterr()

    invoke(world, monkeypatch, KICK, remaining=template_timeout())
    assert emf_metrics(capsys.readouterr().out)[(None, "InvariantViolations")] == [0.0]

    def overcommitting(snapshot: Snapshot, now: datetime, config: SchedulerConfig, measured: Any = None) -> Decision:
        waiting = next(job for job in snapshot.jobs if job.name == "waiting")
        start = StartJob("waiting", waiting.next_attempt_number, "forced", placement=waiting.own_placement)
        return Decision([start], {})

    monkeypatch.setattr(passes, "decide_pass", overcommitting)
    summary = invoke(world, monkeypatch, KICK, remaining=template_timeout())

    assert emf_metrics(capsys.readouterr().out)[(None, "InvariantViolations")] == [1.0]
    assert summary["invariant_violations"] == [
        f"pool-over-capacity {POOL}: 2 instances held of 1 after starting waiting"
    ]
    logged = [record for record in caplog.records if record.getMessage() == "invariant violated"]
    assert [(record.invariant, record.subject) for record in logged] == [("pool-over-capacity", POOL)]
