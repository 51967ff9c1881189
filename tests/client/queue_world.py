"""The real API handler and scheduler over the shared in-memory fakes, served by the local API front.

Client tests talk HTTP to the same handler code Lambda runs (routing, validation, views, errors);
only the store, the configuration and SageMaker are fakes. The world moves on when a test says so
(`progress`, `finish_stops`), so every step a client observes is deterministic.
"""

from __future__ import annotations

import contextlib
import io
import logging
from datetime import timedelta
from typing import Any

from smq.local.api_front import ApiFront
from smq_lambda.domain.jobs.model import Job
from smq_lambda.handlers.api import create_app, lambda_handler
from smq_lambda.handlers.scheduler import handle
from smq_lambda.service.cost_reports import CostReports
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.scheduler import Scheduler, SchedulerPorts

from tests.support.fake_costs import InMemoryCostRecords, StaticPriceSource
from tests.support.fake_lease import InMemoryPassLease
from tests.support.fakes import (
    FakeClock,
    FakeConfigSource,
    FakeTrainingService,
    InMemoryJobStore,
    InMemoryPassSummaries,
    RecordingTrigger,
)

HANDLER_LOG = logging.getLogger("smq")
"""The handlers' powertools logger writes JSON lines to stdout; CLI tests read stdout."""
POOL = "ml.m5.xlarge"
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
BUCKET = "smq-client-test"


def training_request(name: str, *, priority: int | None = None, pool: str = POOL, instances: int = 1) -> dict[str, Any]:
    """A CreateTrainingJob request the queue accepts, shaped like the SDK's."""
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "local/trainer:latest", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/output"},
        "ResourceConfig": {"InstanceType": pool, "InstanceCount": instances, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "HyperParameters": {"sagemaker_program": '"train.py"', "epochs": "3", "model": '"vit_tiny"'},
        "Tags": [{"Key": "team", "Value": "vision"}],
    }
    if priority is not None:
        request["Tags"].append({"Key": "priority", "Value": str(priority)})
    return request


class QueueWorld:
    """`with QueueWorld({"ml.m5.xlarge": 1}) as world:` — `world.url` is the API's base URL.

    The handlers print their metrics (EMF lines) to stdout, which the CLI tests read, so each
    invocation runs with stdout redirected; the client that called is blocked meanwhile, so
    nothing else prints.
    """

    def __init__(self, capacity: dict[str, int]) -> None:
        self.clock = FakeClock()
        self.store = InMemoryJobStore()
        self.sagemaker = FakeTrainingService(clock=self.clock)
        self.config = FakeConfigSource(capacity)
        self.pass_summaries = InMemoryPassSummaries()
        self.scheduler = Scheduler(
            SchedulerPorts(
                store=self.store,
                training=self.sagemaker,
                config=self.config,
                lease=InMemoryPassLease(),
                clock=self.clock,
                pass_summaries=self.pass_summaries,
            )
        )
        self.trigger = RecordingTrigger(on_kick=lambda _reason: self.kick())
        self.cost_records = InMemoryCostRecords()
        self.prices = StaticPriceSource()
        """No prices until a test sets some."""
        service = QueueService(
            self.store,
            self.config,
            self.trigger,
            pass_summaries=self.pass_summaries,
            prices=self.prices,
            clock=self._tick,
        )
        app = create_app(
            service, costs=CostReports(self.cost_records, self.store, self.config, self.prices, clock=self.clock)
        )
        handler = lambda_handler(lambda: app)

        def quiet_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            with contextlib.redirect_stdout(io.StringIO()):
                return handler(event, context)

        self.front = ApiFront(quiet_handler)

    def __enter__(self) -> QueueWorld:
        self._handler_log_level = HANDLER_LOG.level
        HANDLER_LOG.setLevel(logging.WARNING)
        self.front.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.front.shutdown()
        HANDLER_LOG.setLevel(self._handler_log_level)

    @property
    def url(self) -> str:
        return self.front.url

    def _tick(self):  # type: ignore[no-untyped-def]
        """Each API call happens a second after the last, so submission order is strict."""
        return self.clock.advance(seconds=1)

    def kick(self) -> dict[str, Any]:
        return self._pass({"source": "smq.api", "reason": "test"})

    def _pass(self, event: dict[str, Any]) -> dict[str, Any]:
        """One scheduler invocation, its metrics kept off stdout (see `quiet_handler`)."""
        with contextlib.redirect_stdout(io.StringIO()):
            return handle(event, self.scheduler)

    def job(self, name: str) -> Job:
        job = self.store.get(name)
        assert job is not None, name
        return job

    def attempt_name(self, name: str) -> str:
        attempt = self.job(name).current_attempt
        assert attempt is not None, f"{name} has no attempt"
        return attempt.training_job_name

    def progress(self, name: str, status: str, **details: Any) -> None:
        """SageMaker moves the job's current attempt to `status` and reports it."""
        training_job_name = self.attempt_name(name)
        self.clock.advance(timedelta(seconds=1))
        self.sagemaker.set_status(training_job_name, status, **details)
        self._pass(self.sagemaker.state_change_event(training_job_name))

    def finish_stops(self) -> None:
        """SageMaker completes every stop it was asked for, and reports it."""
        for training_job_name, job in list(self.sagemaker.jobs.items()):
            if job.status == "Stopping":
                self.sagemaker.set_status(training_job_name, "Stopped")
                self._pass(self.sagemaker.state_change_event(training_job_name))
