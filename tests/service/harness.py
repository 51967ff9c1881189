"""A scheduler wired to in-memory fakes, driven the way Lambda drives it: through the handler."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from smq_lambda.domain.jobs.lifecycle import DEFAULT_RETRY_LIMITS, StartRetryLimits
from smq_lambda.domain.jobs.model import Job, demand_of
from smq_lambda.domain.jobs.states import LIVE_STATES, JobState
from smq_lambda.handlers.scheduler import handle
from smq_lambda.ports import CostRecords, DurationStore, JobStore, PriceSource, TrainingEndListener
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.support.fake_lease import InMemoryPassLease
from tests.support.fake_spot_rates import InMemorySpotInterruptionBook
from tests.support.fake_team_usage import InMemoryTeamUsageHistory
from tests.support.fakes import (
    FakeClock,
    FakeConfigSource,
    FakeTrainingJob,
    FakeTrainingService,
    InMemoryJobStore,
    InMemoryPassSummaries,
    RecordingNotifier,
    StaticPolicySource,
)

POOL = "ml.p5.48xlarge"


def training_request(name: str, *, priority: int, pool: str = POOL, instances: int = 1) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "local/trainer:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {"InstanceType": pool, "InstanceCount": instances, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CheckpointConfig": {"S3Uri": f"s3://bucket/checkpoints/{name}/"},
        "Tags": [{"Key": "priority", "Value": str(priority)}],
    }


def queued_job(name: str, *, priority: int, submitted_at, pool: str = POOL, instances: int = 1) -> Job:
    request = training_request(name, priority=priority, pool=pool, instances=instances)
    return Job(
        name=name,
        job_id=uuid.uuid4().hex,
        state=JobState.PENDING,
        priority=priority,
        submitted_at=submitted_at,
        demand=demand_of(request),
        owner="arn:aws:iam::000000000000:user/alice",
        request=request,
    )


@dataclass
class World:
    """Fakes of every port plus the scheduler; `store` may be swapped for the DynamoDB store."""

    capacity: dict[str, int]
    backfill: bool = False
    clock: FakeClock = field(default_factory=FakeClock)
    store: JobStore = field(default_factory=InMemoryJobStore)
    lease: Any = field(default_factory=InMemoryPassLease)
    retry_limits: StartRetryLimits = DEFAULT_RETRY_LIMITS
    policy: StaticPolicySource = field(default_factory=StaticPolicySource)
    idle_watch: IdleWatch | None = None
    team_usage: InMemoryTeamUsageHistory = field(default_factory=InMemoryTeamUsageHistory)
    notifier: RecordingNotifier = field(default_factory=RecordingNotifier)
    stack: str | None = None
    """The stack's name (`smq:stack`); None: a stack that tells no other smq stack apart."""
    training_end_listeners: list[TrainingEndListener] = field(default_factory=list)
    cost_records: CostRecords | None = None
    prices: PriceSource | None = None
    """The teams' spend and the prices hold budgets read; None: no budget holds a job."""
    durations: DurationStore | None = None
    """Where completed jobs' durations are learned; None: estimates know tags and max runtimes only."""
    spot_interruptions: InMemorySpotInterruptionBook = field(default_factory=InMemorySpotInterruptionBook)

    def __post_init__(self) -> None:
        self.sagemaker = FakeTrainingService(clock=self.clock)
        self.config = FakeConfigSource(self.capacity, backfill=self.backfill)
        self.pass_summaries = InMemoryPassSummaries()
        self.scheduler = Scheduler(
            SchedulerPorts(
                store=self.store,
                training=self.sagemaker,
                config=self.config,
                lease=self.lease,
                clock=self.clock,
                pass_summaries=self.pass_summaries,
                retry_limits=self.retry_limits,
                policy=self.policy,
                idle_watch=self.idle_watch,
                team_usage=self.team_usage,
                notifier=self.notifier,
                stack=self.stack,
                training_end_listeners=self.end_listeners(),
                cost_records=self.cost_records,
                prices=self.prices,
                durations=self.durations,
                spot_interruptions=self.spot_interruptions,
            )
        )

    def end_listeners(self) -> list[TrainingEndListener]:
        """The listeners the scheduler tells of attempts' ends: a subclass adds those it builds on
        this world's fakes (which exist by then)."""
        return self.training_end_listeners

    def submit(self, name: str, priority: int, *, pool: str = POOL, instances: int = 1) -> Job:
        self.clock.advance(seconds=1)
        job = self.store.create(
            queued_job(name, priority=priority, submitted_at=self.clock(), pool=pool, instances=instances)
        )
        self.kick()
        return job

    def kick(self) -> dict[str, Any]:
        """The API's asynchronous invocation after an accepted call."""
        return handle({"source": "smq.api", "reason": "test"}, self.scheduler)

    def reconcile(self) -> dict[str, Any]:
        return handle({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}, self.scheduler)

    def event(self, training_job_name: str) -> dict[str, Any]:
        return self.sagemaker.state_change_event(training_job_name)

    def deliver(self, event: dict[str, Any]) -> dict[str, Any]:
        return handle(event, self.scheduler)

    def progress(self, job_name: str, status: str, **details: Any) -> dict[str, Any]:
        """SageMaker moves the job's current attempt to `status`; its event is delivered."""
        attempt = self.job(job_name).current_attempt
        assert attempt is not None
        self.clock.advance(seconds=1)
        self.sagemaker.set_status(attempt.training_job_name, status, **details)
        return self.deliver(self.event(attempt.training_job_name))

    def finish_stops(self) -> None:
        """SageMaker completes every stop it was asked for, and reports it."""
        for name in list(self.sagemaker.jobs):
            if self.sagemaker.jobs[name].status == "Stopping":
                self.sagemaker.set_status(name, "Stopped")
                self.deliver(self.event(name))

    def job(self, name: str) -> Job:
        job = self.store.get(name)
        assert job is not None, name
        return job

    def states(self) -> dict[str, str]:
        return {job.name: str(job.state) for job in self.all_jobs()}

    def all_jobs(self) -> list[Job]:
        jobs: list[Job] = []
        token = None
        while True:
            page = self.store.list_jobs(states=list(JobState), limit=100, next_token=token)
            jobs.extend(page.jobs)
            token = page.next_token
            if token is None:
                return jobs

    def live_jobs(self) -> list[Job]:
        return [job for job in self.all_jobs() if job.state in LIVE_STATES]

    def later(self, seconds: float) -> None:
        self.clock.advance(timedelta(seconds=seconds))


def started_outside_the_queue(
    world: World, name: str, status: str, *, tagged_job: str, tagged_attempt: int
) -> dict[str, Any]:
    """A training job someone created directly, wearing a queue job's tags; returns its event."""
    request = {
        "TrainingJobName": name,
        "ResourceConfig": {"InstanceType": POOL, "InstanceCount": 1, "VolumeSizeInGB": 30},
        "Tags": [{"Key": "smq:job", "Value": tagged_job}, {"Key": "smq:attempt", "Value": str(tagged_attempt)}],
    }
    world.sagemaker.jobs[name] = FakeTrainingJob(name=name, request=request, status=status, secondary_status=status)
    return world.event(name)
