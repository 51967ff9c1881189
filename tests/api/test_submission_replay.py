"""An identical add-job is answered from the first one only while the job it queued is still the
name's live job, and then with the job as it is now; once that job has ended (cancelled, failed
fast) the same request is a new submission, and the earlier job stays readable under its id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState

from tests.api.builders import run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock, RecordingTrigger


def fail(store: Any, name: str, now: datetime) -> None:
    """A start SageMaker refused for a lasting reason: the job fails at once."""
    job = store.get(name)
    started = store.save(lifecycle.start(job, now, reason="capacity free"), expected_version=job.version)
    failed = lifecycle.finish(
        started, JobState.FAILED, now, outcome=AttemptOutcome.REFUSED, reason="ValidationException: bad image"
    )
    store.save(failed, expected_version=started.version)


def test_an_identical_request_after_a_cancel_queues_a_new_job(api: ApiGateway, trigger: RecordingTrigger) -> None:
    request = training_request("resubmitted", priority=3)
    first = api.add(request)
    api.cancel("resubmitted")
    kicks = len(trigger.kicks)

    again = api.add(request)

    assert again.status == 202
    assert again.body["state"] == "pending"
    assert again.body["job_id"] != first.body["job_id"], "a new submission, not the replay of the cancelled one"
    assert again.body["earlier_job_ids"] == [first.body["job_id"]]
    assert api.get("resubmitted").body["state"] == "pending", "it is queued, as the answer says"
    assert len(trigger.kicks) == kicks + 1


def test_an_identical_request_after_a_fast_failure_queues_a_new_job(
    api: ApiGateway, store: Any, clock: FakeClock
) -> None:
    request = training_request("failed-fast", priority=3)
    first = api.add(request)
    fail(store, "failed-fast", clock())

    again = api.add(request)

    assert (again.status, again.body["state"]) == (202, "pending")
    assert again.body["job_id"] != first.body["job_id"]
    assert store.get("failed-fast").state is JobState.PENDING


def test_the_earlier_job_keeps_its_history_under_its_id(api: ApiGateway, store: Any, clock: FakeClock) -> None:
    request = training_request("kept", priority=3)
    first = api.add(request)
    fail(store, "kept", clock())
    api.add(request)

    earlier = api.request("GET", "/jobs/kept", query={"job_id": first.body["job_id"]})
    stored = store.get("kept", job_id=first.body["job_id"])

    assert earlier.status == 200
    assert (earlier.body["state"], earlier.body["reason"]) == ("failed", "ValidationException: bad image")
    assert [attempt["outcome"] for attempt in earlier.body["attempts"]] == ["refused"]
    assert stored is not None and [attempt.outcome for attempt in stored.attempts] == [AttemptOutcome.REFUSED]
    assert store.get("kept").earlier_job_ids == (first.body["job_id"],)


def test_a_retry_of_the_resubmission_is_answered_with_the_new_job(api: ApiGateway) -> None:
    request = training_request("twice", priority=3)
    api.add(request)
    api.cancel("twice")
    second = api.add(request)

    retried = api.add(request)

    assert retried.status == 202
    assert retried.body["job_id"] == second.body["job_id"], "a retry while the new job lives is its replay"


def test_a_replay_answers_the_job_as_it_is_now_never_a_stale_pending(
    api: ApiGateway, store: Any, clock: FakeClock, trigger: RecordingTrigger
) -> None:
    request = training_request("started", priority=3)
    first = api.add(request)
    run(store, "started", clock())
    kicks = len(trigger.kicks)

    again = api.add(request)

    assert again.status == 202
    assert (again.body["job_id"], again.body["state"]) == (first.body["job_id"], "running")
    assert again.body["position"] is None
    assert len(trigger.kicks) == kicks, "a replay queues nothing"
