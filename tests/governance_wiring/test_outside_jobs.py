"""Training jobs the queue did not start, through the scheduler handler: stopped once when they break
the policy, with one notification, on their `Starting` event or, when that was lost, by
reconciliation's sweep; the queue's own attempts and compliant jobs left alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.errors import TrainingServiceError
from smq_lambda.governance.idle import AlarmPrefix, parse_alarm_name
from smq_lambda.governance.limits import UNKNOWN_CREATOR
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.handlers.scheduler import handle
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.service.outside_jobs import SWEEP_LOOKBACK, OutsideJobs

from tests.service.harness import POOL, World, training_request
from tests.support.fakes import FakeIdleAlarms, FakeTrainingJob, RecordingNotifier, StaticPolicySource

RECONCILE = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
TAGGED = Policy(required_tags=("project",))
SMALL = Policy(allowed_instance_types=("ml.g5.xlarge",), max_instance_count=1)
PREFIX = AlarmPrefix("smq-idle-staging.")
IDLE_TOPIC = "arn:aws:sns:us-east-1:000000000000:smq-idle"


@dataclass
class Outside:
    world: World
    notifier: RecordingNotifier
    service: OutsideJobs

    def start_directly(self, name: str, *, tags: dict[str, str] | None = None, instances: int = 1) -> None:
        """A training job created with boto3, not through the queue (reported `Starting`)."""
        request = training_request(name, priority=0, instances=instances)
        request["Tags"] = [{"Key": key, "Value": value} for key, value in (tags or {}).items()]
        self.world.sagemaker.jobs[name] = FakeTrainingJob(name=name, request=request, created=self.world.clock())

    def deliver(self, name: str, *, secondary_status: str | None = None) -> dict[str, Any]:
        event = self.world.event(name)
        if secondary_status is not None:
            event["detail"]["SecondaryStatus"] = secondary_status
        return handle(event, self.world.scheduler, outside_jobs=self.service)

    def reconcile(self) -> dict[str, Any]:
        return handle(RECONCILE, self.world.scheduler, outside_jobs=self.service)


def outside(
    policy: Policy,
    *,
    notifier: RecordingNotifier | None = None,
    world: World | None = None,
    stack: str | None = None,
) -> Outside:
    """`stack`: the name of the stack under test (its scheduler's and its outside jobs' governance)."""
    world = world or World(capacity={POOL: 2}, stack=stack)
    notifier = notifier or RecordingNotifier()
    service = OutsideJobs(
        store=world.store,
        training=world.sagemaker,
        policy=StaticPolicySource(policy),
        notifier=notifier,
        clock=world.clock,
        stack=stack,
    )
    return Outside(world, notifier, service)


@pytest.mark.parametrize(
    ("policy", "tags", "instances", "rules"),
    [
        (TAGGED, {}, 1, "required_tags"),
        (TAGGED, {"project": " "}, 1, "required_tags"),
        (SMALL, {}, 2, "allowed_instance_types, max_instance_count"),
        (Policy(required_tags=("project", "owner")), {"owner": "alice"}, 1, "required_tags"),
    ],
)
def test_a_violating_job_outside_the_queue_is_stopped_and_notified_once(
    policy: Policy, tags: dict[str, str], instances: int, rules: str
) -> None:
    case = outside(policy)
    case.start_directly("by-hand", tags=tags, instances=instances)

    assert case.deliver("by-hand")["job_errors"] == []

    assert case.world.sagemaker.stop_calls == ["by-hand"]
    (sent,) = case.notifier.sent
    assert sent.subject == f"smq policy: stopped training job by-hand ({rules})"
    assert "by-hand" in sent.message and f"Started by: {UNKNOWN_CREATOR}" in sent.message
    for rule in rules.split(", "):
        assert f"(rule {rule})" in sent.message


@pytest.mark.parametrize(
    ("policy", "tags", "secondary_status"),
    [
        (TAGGED, {"project": "vision"}, None),  # compliant
        (Policy(), {}, None),  # the default policy requires nothing
        (TAGGED, {}, "Downloading"),  # only the Starting report is acted on
        (TAGGED, {}, "Training"),
        (TAGGED, {}, "Stopping"),
    ],
)
def test_compliant_jobs_and_later_reports_change_nothing(
    policy: Policy, tags: dict[str, str], secondary_status: str | None
) -> None:
    case = outside(policy)
    case.start_directly("by-hand", tags=tags)

    case.deliver("by-hand", secondary_status=secondary_status)

    assert case.world.sagemaker.stop_calls == []
    assert case.notifier.sent == []


def test_a_duplicate_starting_event_stops_and_notifies_nothing_more() -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    event = case.world.event("by-hand")

    for _ in range(3):
        handle(event, case.world.scheduler, outside_jobs=case.service)

    assert case.world.sagemaker.stop_calls == ["by-hand"]
    assert len(case.notifier.sent) == 1


def test_the_queues_own_attempts_are_never_stopped_by_the_policy() -> None:
    """The queue checked them at add-job; a policy tightened since applies to new submissions."""
    case = outside(TAGGED)
    case.world.submit("queued", 0)
    attempt = case.world.job("queued").current_attempt
    assert attempt is not None

    case.deliver(attempt.training_job_name)

    assert case.world.sagemaker.stop_calls == []
    assert case.notifier.sent == []


def test_a_job_wearing_a_queued_jobs_tags_is_still_outside_the_queue() -> None:
    case = outside(TAGGED)
    case.world.submit("victim", 0)
    victim = case.world.job("victim")
    case.start_directly("forged", tags={"smq:job": "victim", "smq:attempt": "1"})

    case.deliver("forged")

    assert case.world.sagemaker.stop_calls == ["forged"]
    assert case.world.job("victim") == victim


def test_a_failed_notification_does_not_undo_the_stop() -> None:
    case = outside(TAGGED, notifier=RecordingNotifier(fail=True))
    case.start_directly("by-hand")

    assert case.deliver("by-hand")["job_errors"] == []

    assert case.world.sagemaker.stop_calls == ["by-hand"]
    assert case.world.sagemaker.jobs["by-hand"].status == "Stopping"


def test_without_a_topic_the_job_is_still_stopped() -> None:
    world = World(capacity={POOL: 2})
    service = OutsideJobs(
        store=world.store, training=world.sagemaker, policy=StaticPolicySource(TAGGED), notifier=None, clock=world.clock
    )
    case = Outside(world, RecordingNotifier(), service)
    case.start_directly("by-hand")

    result = service.check(world.event("by-hand")["detail"])

    assert world.sagemaker.stop_calls == ["by-hand"]
    assert result.stopped is not None and not result.notified


def failing(operation: str) -> Callable[..., Any]:
    def fail(*_: Any) -> Any:
        raise TrainingServiceError(operation, "ThrottlingException", "Rate exceeded")

    return fail


def test_when_describe_fails_the_job_is_stopped_anyway(monkeypatch: pytest.MonkeyPatch) -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    monkeypatch.setattr(case.world.sagemaker, "describe", failing("DescribeTrainingJob"))

    result = case.service.check(case.world.event("by-hand")["detail"])

    assert case.world.sagemaker.stop_calls == ["by-hand"]
    assert result.notified


def test_a_stop_that_fails_is_not_announced(monkeypatch: pytest.MonkeyPatch) -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    monkeypatch.setattr(case.world.sagemaker, "stop", failing("StopTrainingJob"))

    result = case.service.check(case.world.event("by-hand")["detail"])

    assert result.stopped is None
    assert case.notifier.sent == []


def test_an_unexpected_error_is_one_job_error_and_the_pass_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")

    def broken(*_: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(case.service, "check", broken)
    summary = case.deliver("by-hand")

    assert summary["job_errors"] == ["by-hand"]
    assert summary["passes"] == 1


def test_a_job_gone_from_sagemaker_is_not_stopped() -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    event = case.world.event("by-hand")
    del case.world.sagemaker.jobs["by-hand"]

    handle(event, case.world.scheduler, outside_jobs=case.service)

    assert case.world.sagemaker.stop_calls == []


def test_the_describe_answer_decides_whether_the_stop_already_landed() -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    event = case.world.event("by-hand")
    case.world.sagemaker.jobs["by-hand"].status = "Stopping"
    case.world.sagemaker.jobs["by-hand"].secondary_status = "Stopping"
    assert case.world.sagemaker.describe("by-hand") == TrainingJobStatus("by-hand", "Stopping", "Stopping")

    handle(event, case.world.scheduler, outside_jobs=case.service)

    assert case.notifier.sent == []


def test_a_violating_job_whose_starting_event_was_lost_is_stopped_by_reconciliation() -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    case.world.sagemaker.set_status("by-hand", "InProgress", secondary_status="Training")
    case.world.clock.advance(minutes=5)

    for _ in range(3):
        assert case.reconcile()["job_errors"] == []

    assert case.world.sagemaker.stop_calls == ["by-hand"]
    (sent,) = case.notifier.sent
    assert sent.subject == "smq policy: stopped training job by-hand (required_tags)"


def test_the_sweep_leaves_compliant_jobs_queue_attempts_and_jobs_older_than_its_lookback() -> None:
    case = outside(TAGGED)
    case.start_directly("before-the-lookback")
    case.world.clock.advance(seconds=SWEEP_LOOKBACK.total_seconds() + 1)
    case.start_directly("compliant", tags={"project": "vision"})
    case.world.submit("queued", 0)

    assert case.reconcile()["job_errors"] == []

    assert case.world.sagemaker.stop_calls == []
    assert case.notifier.sent == []


def test_a_job_wearing_a_queued_jobs_tags_is_swept_like_any_outside_job() -> None:
    case = outside(TAGGED)
    case.world.submit("victim", 0)
    case.start_directly("forged", tags={"smq:job": "victim", "smq:attempt": "1"})

    case.reconcile()

    assert case.world.sagemaker.stop_calls == ["forged"]


def test_a_sweep_that_cannot_list_stops_nothing_and_fails_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    monkeypatch.setattr(case.world.sagemaker, "in_progress_since", failing("ListTrainingJobs"))

    summary = case.reconcile()

    assert summary["job_errors"] == [] and summary["passes"] == 1
    assert case.world.sagemaker.stop_calls == []


# ---------------------------------------------------------------- several smq stacks in one account

STAGING = "staging"
PRODUCTION_ATTEMPT = "train-0123456789ab-1"
PRODUCTION_TAGS = {"smq:job": "train", "smq:attempt": "1", "smq:stack": "production"}


@pytest.mark.parametrize(
    ("stack", "tags", "stopped"),
    [
        pytest.param(STAGING, PRODUCTION_TAGS, False, id="another stack's attempt"),
        pytest.param(STAGING, {"smq:stack": "production"}, False, id="tagged by another stack"),
        pytest.param(STAGING, {"smq:job": "train", "smq:attempt": "1"}, True, id="no stack tag: as before"),
        pytest.param(STAGING, {**PRODUCTION_TAGS, "smq:stack": STAGING}, True, id="claims this stack"),
        pytest.param(None, PRODUCTION_TAGS, True, id="a stack without a name tells none apart"),
    ],
)
@pytest.mark.parametrize("found_by", ["event", "sweep"])
def test_a_stack_never_stops_another_smq_stacks_attempt(
    stack: str | None, tags: dict[str, str], stopped: bool, found_by: str
) -> None:
    """Staging's policy requires a tag production's attempt lacks: staging leaves it to production."""
    case = outside(TAGGED, stack=stack)
    case.start_directly(PRODUCTION_ATTEMPT, tags=tags)

    result = case.deliver(PRODUCTION_ATTEMPT) if found_by == "event" else case.reconcile()

    assert result["job_errors"] == []
    assert case.world.sagemaker.stop_calls == ([PRODUCTION_ATTEMPT] if stopped else [])
    assert len(case.notifier.sent) == int(stopped)


def test_another_stacks_attempt_counts_as_outside_usage_of_the_pool() -> None:
    """It holds instances of the account; the passes count them against this stack's pool."""
    case = outside(TAGGED, stack=STAGING)
    case.start_directly(PRODUCTION_ATTEMPT, tags=PRODUCTION_TAGS, instances=2)

    case.deliver(PRODUCTION_ATTEMPT)

    assert case.world.store.in_use().outside == {POOL: 2}


def test_another_stacks_report_never_lands_on_this_stacks_job_of_that_name() -> None:
    """Even one under this stack's own attempt name: a report tagged by another stack is not about
    this stack's job, whatever job and attempt it names."""
    case = outside(TAGGED, stack=STAGING)
    case.world.submit("train", 0)
    running = case.world.job("train")
    assert running.current_attempt is not None
    event = case.world.event(running.current_attempt.training_job_name)
    event["detail"]["TrainingJobStatus"] = "Completed"
    event["detail"]["Tags"] = {**PRODUCTION_TAGS, "smq:attempt": str(running.current_attempt.number)}

    case.world.deliver(event)

    assert case.world.job("train") == running


def test_another_stacks_attempt_gets_no_idle_alarm_when_outside_jobs_are_watched() -> None:
    alarms = FakeIdleAlarms(PREFIX)
    world = World(capacity={POOL: 2}, stack=STAGING, idle_watch=IdleWatch(alarms, IDLE_TOPIC, PREFIX))
    world.policy.policy = Policy(idle=IdlePolicy(enforce_outside_queue=True))
    case = outside(Policy(), world=world, stack=STAGING)
    case.start_directly(PRODUCTION_ATTEMPT, tags=PRODUCTION_TAGS)
    case.start_directly("by-hand")
    for name in (PRODUCTION_ATTEMPT, "by-hand"):
        world.sagemaker.jobs[name].secondary_status = "Training"
        case.deliver(name)

    assert [ref.training_job_name for ref in map(partial(parse_alarm_name, PREFIX), alarms.alarms)] == ["by-hand"]
