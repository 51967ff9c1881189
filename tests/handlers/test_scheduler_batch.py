"""The scheduler's SQS batches (handlers/scheduler.py `handle_batch`): every report of a batch is
applied, then one pass runs; a record whose report fails goes back to the queue alone, an unreadable
one is dropped, a failed pass sends the whole batch back. Driven with SQS events of the shape Lambda
gives a function consuming a queue (tests/events/scheduler_batch.json) over the in-memory fakes."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from smq.local.lambda_context import LambdaContext
from smq_lambda.adapters.sqs_trigger import TRIGGER_SOURCE, kick_body
from smq_lambda.governance.policy import Policy
from smq_lambda.handlers import scheduler as scheduler_handler
from smq_lambda.handlers.scheduler import handle_batch
from smq_lambda.handlers.scheduler_input import KICK_SOURCE

from tests.governance_wiring.test_outside_jobs import outside
from tests.service.harness import POOL, World
from tests.support.sqs import DOCUMENTED_RECORD_KEYS, FIXTURE, batch

KICK = kick_body("job added")


class Recorder:
    """Records the order of the scheduler's report and schedule calls."""

    def __init__(self, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in ("report", "report_outside", "schedule"):
            monkeypatch.setattr(world.scheduler, name, self._recording(name, getattr(world.scheduler, name)))

    def _recording(self, name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return real(*args, **kwargs)

        return call


def running(world: World, name: str) -> str:
    """Submit `name` and let it run; returns its training job's name."""
    world.submit(name, 0)
    world.progress(name, "InProgress")
    attempt = world.job(name).current_attempt
    assert attempt is not None and str(world.job(name).state) == "running"
    return attempt.training_job_name


def test_the_fixture_has_the_shape_lambda_documents() -> None:
    state_change, kick = FIXTURE["Records"]
    for item in FIXTURE["Records"]:
        assert set(item) == DOCUMENTED_RECORD_KEYS
        assert item["eventSource"] == "aws:sqs"
        assert item["md5OfBody"] == hashlib.md5(item["body"].encode()).hexdigest()
        assert set(item["attributes"]) >= {"ApproximateReceiveCount", "SentTimestamp", "SenderId"}
    documented = json.loads(
        (Path(__file__).resolve().parents[1] / "local_sagemaker" / "documented_event.json").read_text()
    )
    body = json.loads(state_change["body"])
    assert set(body) == {key for key in documented if not key.startswith("_")}
    assert set(body["detail"]) == set(documented["detail"])
    assert json.loads(kick["body"]) == {"source": "smq.api", "reason": "job kmeans added"}


def test_the_kick_the_api_sends_is_the_one_the_scheduler_reads() -> None:
    assert TRIGGER_SOURCE == KICK_SOURCE


def test_the_fixture_batch_is_applied_and_scheduled() -> None:
    """Its state change is about an attempt the queue does not know: nothing changes, nothing fails."""
    world = World(capacity={POOL: 1})

    summary = handle_batch(copy.deepcopy(FIXTURE), world.scheduler)

    assert (summary["records"], summary["failed"], summary["dropped"]) == (2, 0, 0)
    assert summary["batchItemFailures"] == [] and summary["job_errors"] == []
    assert summary["passes"] == 1


def test_every_report_of_a_batch_is_applied_before_its_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(capacity={POOL: 2})
    first, second = running(world, "first"), running(world, "second")
    world.submit("waiting", 0)
    world.sagemaker.set_status(first, "Completed")
    world.sagemaker.set_status(second, "Failed", failure_reason="AlgorithmError: boom")
    recorder = Recorder(world, monkeypatch)

    summary = handle_batch(batch(world.event(first), KICK, world.event(second), KICK, KICK), world.scheduler)

    assert recorder.calls == ["report", "report", "schedule"]
    assert summary["passes"] == 1
    assert summary["started"] == ["waiting"]  # the pass saw both pools' instances given back
    assert world.states() == {"first": "completed", "second": "failed", "waiting": "starting"}
    assert (summary["records"], summary["failed"], summary["dropped"], summary["batchItemFailures"]) == (5, 0, 0, [])


def test_a_record_whose_report_fails_goes_back_alone_and_the_others_are_applied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World(capacity={POOL: 2})
    broken, fine = running(world, "broken"), running(world, "fine")
    world.sagemaker.set_status(broken, "Completed")
    world.sagemaker.set_status(fine, "Completed")
    real_save = world.store.save

    def save(job: Any, *, expected_version: int) -> Any:
        if job.name == "broken":
            raise RuntimeError("DynamoDB fell over")
        return real_save(job, expected_version=expected_version)

    monkeypatch.setattr(world.store, "save", save)
    event = batch(world.event(broken), world.event(fine), KICK)

    summary = handle_batch(event, world.scheduler)

    assert summary["batchItemFailures"] == [{"itemIdentifier": event["Records"][0]["messageId"]}]
    assert (summary["records"], summary["failed"]) == (3, 1)
    assert summary["job_errors"] == ["broken"]
    assert world.states() == {"broken": "running", "fine": "completed"}
    assert summary["passes"] == 1

    monkeypatch.setattr(world.store, "save", real_save)  # SQS delivers it again, and now it applies
    again = handle_batch({"Records": [event["Records"][0]]}, world.scheduler)
    assert again["batchItemFailures"] == []
    assert world.states() == {"broken": "completed", "fine": "completed"}


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[1, 2]",
        '"a string"',
        json.dumps({"source": "aws.s3", "detail-type": "Object Created", "detail": {}}),
        json.dumps({"source": "aws.sagemaker", "detail-type": "SageMaker Endpoint State Change", "detail": {}}),
        json.dumps({"source": "aws.sagemaker", "detail-type": "SageMaker Training Job State Change"}),
        json.dumps(
            {
                "source": "aws.sagemaker",
                "detail-type": "SageMaker Training Job State Change",
                "detail": {"TrainingJobStatus": "Completed"},
            }
        ),
        json.dumps(
            {
                "source": "aws.sagemaker",
                "detail-type": "SageMaker Training Job State Change",
                "detail": {"TrainingJobName": "x", "TrainingJobStatus": "Completed", "Tags": ["not", "a", "map"]},
            }
        ),
    ],
)
def test_an_unreadable_record_is_dropped_not_failed_and_the_rest_goes_on(body: str) -> None:
    world = World(capacity={POOL: 1})
    done = running(world, "done")
    world.sagemaker.set_status(done, "Completed")

    summary = handle_batch(batch(body, world.event(done)), world.scheduler)

    assert (summary["dropped"], summary["failed"], summary["batchItemFailures"]) == (1, 0, [])
    assert world.states() == {"done": "completed"}
    assert summary["passes"] == 1


def test_duplicated_and_reordered_records_in_one_batch_change_nothing_wrongly() -> None:
    world = World(capacity={POOL: 1})
    world.submit("job", 0)
    training_job = world.job("job").current_attempt.training_job_name  # type: ignore[union-attr]
    world.sagemaker.set_status(training_job, "InProgress", secondary_status="Starting")
    starting = world.event(training_job)
    world.sagemaker.set_status(training_job, "InProgress", secondary_status="Training")
    training = world.event(training_job)
    world.sagemaker.set_status(training_job, "Completed")
    completed = world.event(training_job)
    world.submit("next", 0)

    summary = handle_batch(batch(completed, training, completed, starting, training, KICK, completed), world.scheduler)

    assert (summary["failed"], summary["dropped"], summary["job_errors"]) == (0, 0, [])
    job = world.job("job")
    assert str(job.state) == "completed"
    assert [attempt.training_job_name for attempt in job.attempts] == [training_job]
    # A late "InProgress" of the ended attempt may ask SageMaker to stop it, which stops nothing.
    assert set(world.sagemaker.stop_calls) <= {training_job}
    assert world.sagemaker.jobs[training_job].status == "Completed"
    assert summary["started"] == ["next"]
    assert len(world.sagemaker.start_calls) == 2


def test_a_failed_pass_fails_the_invocation_so_the_whole_batch_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(capacity={POOL: 1})
    done = running(world, "done")
    world.sagemaker.set_status(done, "Completed")

    def schedule(**_: Any) -> Any:
        raise TimeoutError("DynamoDB did not answer")

    monkeypatch.setattr(world.scheduler, "schedule", schedule)
    monkeypatch.setattr(scheduler_handler, "default_scheduler", lambda: world.scheduler)
    monkeypatch.setattr(scheduler_handler, "default_outside_jobs", lambda: None)

    with pytest.raises(TimeoutError):
        scheduler_handler.handler(batch(world.event(done), KICK), LambdaContext(function_name="smq-scheduler"))
    assert world.states() == {"done": "completed"}  # applied before the pass; applying again changes nothing


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_entry_point_answers_lambda_with_the_batch_item_failures_only(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(capacity={POOL: 1})
    monkeypatch.setattr(scheduler_handler, "default_scheduler", lambda: world.scheduler)
    monkeypatch.setattr(scheduler_handler, "default_outside_jobs", lambda: None)
    context = LambdaContext(function_name="smq-scheduler")

    assert scheduler_handler.handler(copy.deepcopy(FIXTURE), context) == {"batchItemFailures": []}
    reconciled = scheduler_handler.handler(
        {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}, context
    )
    assert reconciled["passes"] == 1 and "batchItemFailures" not in reconciled
    assert scheduler_handler.handler({"source": "smq.api", "reason": "a direct kick"}, context)["passes"] == 1


def test_the_policy_is_applied_to_a_job_outside_the_queue_in_a_batch() -> None:
    case = outside(Policy(required_tags=("project",)))
    case.start_directly("by-hand")
    event = case.world.event("by-hand")

    summary = handle_batch(batch(event, event), case.world.scheduler, outside_jobs=case.service)

    assert summary["batchItemFailures"] == []
    assert case.world.sagemaker.stop_calls == ["by-hand"]
    assert len(case.notifier.sent) == 1
