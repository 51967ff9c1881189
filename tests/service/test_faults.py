"""Faults injected into every AWS call of a scenario, one at a time: whatever fails, once the next
events and a reconciliation have run, the queue's invariants hold, and every job still ends.

The scenario runs through the real services (the API's QueueService, the scheduler's handler) over
the in-memory fakes of the ports, each wrapped in one FaultPlan: submissions, SageMaker events (one
delivered twice), a preemption by a higher-priority job, cancels of running jobs, reconciliations.
A fault-free run counts the calls; then, for every N, the N-th call fails once with each kind of
fault it can suffer (tests/support/faults.py). An invocation that hit the fault may fail; no other
may, and at every moment SageMaker and the table keep the invariants of tests/scheduling/invariants.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from smq_lambda.domain.jobs.states import ACTIVE_STATES
from smq_lambda.errors import JobConflict, JobNotFound, ServiceUnavailable, VersionConflict
from smq_lambda.handlers.scheduler import handle
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.scheduling.invariants import TrainingJobView, Violation, check_queue_against_sagemaker
from tests.service.harness import queued_job, training_request
from tests.support.fake_lease import InMemoryPassLease
from tests.support.fakes import (
    EPOCH,
    FakeClock,
    FakeConfigSource,
    FakeTrainingJob,
    FakeTrainingService,
    InMemoryJobStore,
    InMemoryPassSummaries,
    RecordingTrigger,
    StaticPolicySource,
)
from tests.support.faults import FaultKind, FaultPlan, FaultyPort, kinds_for

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
CAPACITY = {P5: 2, G5: 1}
OWNER = "arn:aws:iam::000000000000:user/alice"
KICK = {"source": "smq.api", "reason": "test"}
RECONCILE = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
RECONCILE_EVERY = timedelta(minutes=10)
"""Time between the reconciliations after the scenario: longer than the pass lease and the start
backoff, so a lease whose holder failed has expired and a refused start may be tried again."""
DRAIN_ROUNDS = 10
API_ANSWERS = (JobNotFound, JobConflict, VersionConflict)
"""Errors the API answers with a 4xx: a correct answer (e.g. cancelling a job whose submission
failed), not a failure."""


class FaultedQueue:
    """The queue's services over fakes whose every call goes through `plan`; the scenario's own reads
    (and SageMaker's moves) go to the fakes directly and are not counted."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self.clock = FakeClock()
        self.store = InMemoryJobStore()
        self.sagemaker = FakeTrainingService(clock=self.clock)
        self.trigger = RecordingTrigger()
        store = FaultyPort("store", self.store, plan)
        config = FaultyPort("config", FakeConfigSource(CAPACITY), plan)
        self.scheduler = Scheduler(
            SchedulerPorts(
                store=store,
                training=FaultyPort("training", self.sagemaker, plan),
                config=config,
                lease=FaultyPort("lease", InMemoryPassLease(), plan),
                clock=self.clock,
                pass_summaries=FaultyPort("usage", InMemoryPassSummaries(), plan),
                policy=FaultyPort("policy", StaticPolicySource(), plan),
            )
        )
        ids = itertools.count(1)
        self.api = QueueService(store, config, self.trigger, clock=self.clock, new_id=lambda: f"{next(ids):032x}")
        self.accepted: list[str] = []
        self.failures: list[str] = []
        self.delivered: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ the API's side

    def submit(self, name: str, priority: int, *, pool: str = P5, instances: int = 1) -> None:
        def call() -> None:
            self.api.submit(training_request(name, priority=priority, pool=pool, instances=instances), OWNER)
            self.accepted.append(name)

        self._invoke(f"submit {name}", call)
        self._run_kicks()

    def cancel(self, name: str) -> None:
        self._invoke(f"cancel {name}", lambda: self.api.cancel(name, OWNER))
        self._run_kicks()

    def _run_kicks(self) -> None:
        """The scheduler invocations the API asked for (asynchronous in Lambda: their failures are not
        the API call's)."""
        while self.trigger.kicks:
            reason = self.trigger.kicks.pop(0)
            self._invoke(f"pass ({reason})", lambda: handle(KICK, self.scheduler))

    # ------------------------------------------------------------------ SageMaker's side

    def sagemaker_reports_running(self) -> None:
        """The InProgress event of every training job not reported yet."""
        reported = {
            (event["detail"]["TrainingJobName"], event["detail"]["TrainingJobStatus"]) for event in self.delivered
        }
        for training_job in self._training_jobs("InProgress"):
            if (training_job.name, "InProgress") not in reported:
                self._deliver(training_job.name)

    def sagemaker_finishes_stops(self) -> None:
        for training_job in self._training_jobs("Stopping"):
            self.sagemaker.set_status(training_job.name, "Stopped")
            self._deliver(training_job.name)

    def sagemaker_completes(self, job_name: str) -> None:
        for training_job in self._training_jobs("InProgress"):
            if training_job.tags["smq:job"] == job_name:
                self.sagemaker.set_status(training_job.name, "Completed")
                self._deliver(training_job.name)

    def deliver_again(self) -> None:
        """At-least-once delivery: the last event (if a fault left one) arrives a second time."""
        if not self.delivered:
            return
        event = self.delivered[-1]
        self._invoke(f"event {event['detail']['TrainingJobName']} again", lambda: handle(event, self.scheduler))

    def reconcile(self) -> None:
        self._invoke("reconciliation", lambda: handle(RECONCILE, self.scheduler))

    def _deliver(self, training_job_name: str) -> None:
        event = self.sagemaker.state_change_event(training_job_name)
        self.delivered.append(event)
        status = event["detail"]["TrainingJobStatus"]
        self._invoke(f"event {training_job_name} {status}", lambda: handle(event, self.scheduler))

    def _training_jobs(self, status: str) -> list[FakeTrainingJob]:
        """In an order that does not depend on job ids: by job, then attempt."""
        jobs = [job for job in self.sagemaker.jobs.values() if job.status == status]
        return sorted(jobs, key=lambda job: (job.tags["smq:job"], int(job.tags["smq:attempt"])))

    # ------------------------------------------------------------------ after the scenario

    def settle(self) -> None:
        """No more faults; the next scheduled reconciliation runs, and the two sides agree."""
        self.plan.armed = False
        self.clock.advance(RECONCILE_EVERY)
        self.reconcile()
        self.check(settled=True)

    def drain(self) -> None:
        """SageMaker finishes whatever runs, reconciliation follows, until no job is left active."""
        for _ in range(DRAIN_ROUNDS):
            if not self.active():
                return
            self.clock.advance(RECONCILE_EVERY)
            for training_job in self._training_jobs("InProgress"):
                self.sagemaker.set_status(training_job.name, "Completed")
                self._deliver(training_job.name)
            self.sagemaker_finishes_stops()
            self.reconcile()

    def active(self) -> dict[str, str]:
        return {job.name: str(job.state) for job in self.store.all_jobs() if job.state in ACTIVE_STATES}

    def check(self, *, settled: bool = False) -> None:
        views = [TrainingJobView.of(job.name, job.status, job.request) for job in self.sagemaker.jobs.values()]
        check_queue_against_sagemaker(self.store.all_jobs(), views, CAPACITY, submitted=self.accepted, settled=settled)

    def _invoke(self, what: str, step: Callable[[], object]) -> None:
        """One Lambda invocation (or API call). It may fail only if it is the one that hit the fault.
        Afterwards the invariants must hold."""
        self.clock.advance(seconds=1)
        hit_before = self.plan.fired is not None
        try:
            step()
        except API_ANSWERS:
            pass
        except Exception as exc:
            if hit_before or self.plan.fired is None:
                self.failures.append(f"{what}: {type(exc).__name__}: {exc}")
        try:
            self.check()
        except Violation as violation:
            raise Violation(f"after {what}: {violation}") from None


def run_scenario(queue: FaultedQueue) -> None:
    queue.submit("low-a", 1)
    queue.submit("low-b", 1)
    queue.submit("g-one", 0, pool=G5)
    queue.sagemaker_reports_running()
    queue.submit("high", 5, instances=2)  # preempts low-a and low-b
    queue.cancel("g-one")  # stops a running job
    queue.sagemaker_finishes_stops()  # low-a, low-b back to pending, high starts, g-one cancelled
    queue.deliver_again()
    queue.sagemaker_reports_running()
    queue.submit("g-two", 0, pool=G5)
    queue.sagemaker_completes("high")  # low-a and low-b start again
    queue.reconcile()
    queue.sagemaker_reports_running()
    queue.cancel("low-a")
    queue.sagemaker_finishes_stops()
    queue.sagemaker_completes("low-b")
    queue.reconcile()


def fault_free_calls() -> list[str]:
    plan = FaultPlan()
    run_scenario(FaultedQueue(plan))
    return plan.calls


FAULT_FREE_CALLS = fault_free_calls()
CASES = [
    pytest.param(number, kind, id=f"{number}-{call}-{kind}")
    for number, call in enumerate(FAULT_FREE_CALLS, start=1)
    for kind in kinds_for(call)
]


def test_the_fault_free_scenario_preempts_cancels_and_finishes() -> None:
    """What the faults below interrupt: a run that exercises every port and every kind of change."""
    queue = FaultedQueue(FaultPlan())
    run_scenario(queue)

    jobs = {job.name: job for job in queue.store.all_jobs()}
    assert {name: str(job.state) for name, job in jobs.items()} == {
        "low-a": "cancelled", "low-b": "completed", "g-one": "cancelled", "high": "completed", "g-two": "running",
    }  # fmt: skip
    assert [attempt.outcome for attempt in jobs["low-a"].attempts] == ["preempted", "stopped"]
    ports = {call.partition(".")[0] for call in queue.plan.calls}
    assert ports == {"store", "training", "config", "lease", "usage", "policy"}
    assert {"training.start_attempt", "training.stop", "training.describe", "store.create"} <= set(queue.plan.calls)
    queue.settle()
    queue.drain()
    assert not queue.failures
    assert not queue.active()


@pytest.mark.parametrize(
    ("kind", "performed", "raised"),
    [
        (FaultKind.REFUSED, False, ServiceUnavailable),
        (FaultKind.UNEXPECTED, False, RuntimeError),
        (FaultKind.LOST_ANSWER, True, ServiceUnavailable),
    ],
)
def test_the_plan_fails_only_the_nth_call_once_and_a_lost_answer_after_its_effect(
    kind: FaultKind, performed: bool, raised: type[Exception]
) -> None:
    plan = FaultPlan(at=2, kind=kind)
    store = InMemoryJobStore()
    faulty = FaultyPort("store", store, plan)
    faulty.create(queued_job("first", priority=0, submitted_at=EPOCH))

    with pytest.raises(raised):
        faulty.create(queued_job("second", priority=0, submitted_at=EPOCH))
    faulty.create(queued_job("third", priority=0, submitted_at=EPOCH))

    assert plan.calls == ["store.create"] * 3
    assert plan.fired == "store.create"
    assert [job.name for job in store.all_jobs()] == sorted(["first", "third", *(["second"] if performed else [])])


@pytest.mark.slow  # every call of the scenario times every fault kind: the full suite runs it
@pytest.mark.parametrize(("number", "kind"), CASES)
def test_after_any_one_fault_and_a_reconciliation_the_queue_holds_and_drains(number: int, kind: FaultKind) -> None:
    queue = FaultedQueue(FaultPlan(at=number, kind=kind))

    run_scenario(queue)
    queue.settle()
    queue.drain()

    assert queue.plan.fired == FAULT_FREE_CALLS[number - 1]
    assert not queue.failures, f"only the invocation that hit the fault may fail: {queue.failures}"
    assert not queue.active(), f"jobs still active after {DRAIN_ROUNDS} reconciliations: {queue.active()}"
    assert all(queue.store.get(name) is not None for name in queue.accepted)
