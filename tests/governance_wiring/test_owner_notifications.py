"""Owners hear of every change the queue or its governance makes to their job: preemption, spot
fallback, retry, idle stop, low-utilization warning and a policy stop, each published once with the
attributes a team's SNS filter policy matches on, however often the event behind it is delivered;
a publish that fails never undoes the change."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from smq_lambda.adapters.sns_notifier import SnsNotifier
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.idle import alarm_name
from smq_lambda.governance.notices import Notice, NoticeAction
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.service.idle_stop import IdleStop

from tests.governance_wiring.test_outside_jobs import TAGGED, outside
from tests.service.harness import POOL, World
from tests.service.test_governance_lifecycle import INFRASTRUCTURE, interrupt, report, running_spot_job
from tests.service.test_idle_gpu import PREFIX, IdleWorld
from tests.support.aws import use_test_credentials
from tests.support.fakes import RecordingNotifier

ALICE = "arn:aws:iam::000000000000:user/alice"
BOB = "arn:aws:iam::000000000000:user/bob"
WARN = Policy(idle=IdlePolicy(warn_below_percent=30.0))


class NotifiedIdleWorld(IdleWorld):
    """The idle world whose idle-stop function publishes to the world's notifier."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.idle_stop = IdleStop(
            store=self.store,
            training=self.sagemaker,
            alarms=self.alarms,
            policy=self.policy,
            clock=self.clock,
            prefix=PREFIX,
            notifier=self.notifier,
        )


def actions(notifier: RecordingNotifier) -> list[tuple[str, NoticeAction]]:
    return [(notice.job, notice.action) for notice in notifier.sent]


# ---------------------------------------------------------------- SNS: attributes and filter policies


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield


def subscribed_queue(topic_arn: str, name: str, filter_policy: dict[str, list[str]]) -> str:
    """An SQS queue subscribed to the topic with `filter_policy` on the message attributes."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    boto3.client("sns").subscribe(
        TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"FilterPolicy": json.dumps(filter_policy)}
    )
    return url


def received(url: str) -> list[dict[str, object]]:
    messages = boto3.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    return [json.loads(message["Body"]) for message in messages.get("Messages", [])]


def notice(job: str, owner: str, team: str | None, action: NoticeAction) -> Notice:
    return Notice(job=job, owner=owner, team=team, action=action, subject=f"smq: job {job}", message=f"{job}: {action}")


def test_each_subscriber_receives_only_what_its_filter_policy_selects(aws: None) -> None:
    topic = boto3.client("sns").create_topic(Name="smq-PolicyTopic")["TopicArn"]
    alices = subscribed_queue(topic, "alice", {"owner": [ALICE]})
    vision = subscribed_queue(topic, "vision", {"team": ["vision"]})
    stops = subscribed_queue(topic, "ops", {"action": ["idle-stop", "policy-stop"]})
    notifier = SnsNotifier(topic, boto3.client("sns"))

    for sent in (
        notice("a", ALICE, "vision", NoticeAction.PREEMPTED),
        notice("b", BOB, "vision", NoticeAction.RETRY),
        notice("c", BOB, None, NoticeAction.IDLE_STOP),
    ):
        assert notifier.publish(sent) is True

    assert [message["Message"] for message in received(alices)] == ["a: preempted"]
    assert sorted(str(message["Message"]) for message in received(vision)) == ["a: preempted", "b: retry"]
    (stop,) = received(stops)
    assert stop["Subject"] == "smq: job c"
    assert stop["MessageAttributes"] == {
        "owner": {"Type": "String", "Value": BOB},
        "job": {"Type": "String", "Value": "c"},
        "action": {"Type": "String", "Value": "idle-stop"},
    }


# ---------------------------------------------------------------- each action once, whatever is delivered twice


def test_a_preemption_is_published_once_to_the_preempted_jobs_owner() -> None:
    world = World(capacity={POOL: 1})
    world.submit("low", 0)
    world.progress("low", "InProgress", secondary_status="Training")
    world.submit("high", 9)
    world.kick()
    world.reconcile()
    low_attempt = world.job("low").attempts[-1].training_job_name
    event = world.event(low_attempt)
    world.deliver(event)
    world.deliver(event)

    (preempted,) = world.notifier.sent
    assert (preempted.job, preempted.action) == ("low", NoticeAction.PREEMPTED)
    assert preempted.attributes() == {"owner": world.job("low").owner, "job": "low", "action": "preempted"}
    assert world.job("low").reason is not None and world.job("low").reason in preempted.message

    world.finish_stops()
    world.kick()
    assert actions(world.notifier) == [("low", NoticeAction.PREEMPTED)]


def test_a_spot_fallback_is_published_once_however_often_its_event_comes() -> None:
    world = World(capacity={POOL: 1})
    world.policy.policy = Policy(spot_interruption_limit=0)
    first = running_spot_job(world)
    decisive = interrupt(world, first, restart=False)
    world.deliver(decisive)
    world.deliver(decisive)
    world.reconcile()

    assert actions(world.notifier) == [("a", NoticeAction.SPOT_FALLBACK)]
    assert world.notifier.sent[0].message.count("spot fallback: attempt 1 was interrupted 1 times") == 1


def test_a_retry_is_published_once_however_often_its_failure_is_reported() -> None:
    world = World(capacity={POOL: 1})
    world.submit("a", 0)
    first = world.job("a").attempts[0].training_job_name
    failure = report(world, first, "Failed", failure_reason=INFRASTRUCTURE)
    world.deliver(failure)
    world.deliver(failure)
    world.reconcile()

    assert actions(world.notifier) == [("a", NoticeAction.RETRY)]
    assert world.job("a").attempts[0].outcome == "infrastructure-failure"


def test_an_idle_stop_is_published_once_for_duplicate_notifications() -> None:
    world = NotifiedIdleWorld(capacity={POOL: 2})
    training_job = world.training("train")
    world.notify(alarm_name(PREFIX, training_job))
    world.notify(alarm_name(PREFIX, training_job))
    world.finish_stops()

    (stopped,) = world.notifier.sent
    assert (stopped.job, stopped.action, stopped.owner) == ("train", NoticeAction.IDLE_STOP, world.job("train").owner)
    assert "idle GPU: every host at or below 1%" in stopped.message


def test_a_low_utilization_warning_reaches_the_owner_once_per_attempt_and_the_job_runs_on() -> None:
    world = NotifiedIdleWorld(capacity={POOL: 2})
    world.policy.policy = WARN
    training_job = world.training("train")
    warning = alarm_name(PREFIX, training_job, warning=True)
    assert warning in world.alarms.alarms

    world.notify(warning)
    world.notify(warning)
    world.notify(warning, "OK")
    world.notify(warning)

    (warned,) = world.notifier.sent
    assert (warned.job, warned.action) == ("train", NoticeAction.LOW_UTILIZATION)
    assert "every host below 30% GPU utilization for 12 consecutive periods of 300 s" in warned.message
    job = world.job("train")
    assert job.state is JobState.RUNNING and world.sagemaker.stop_calls == []
    assert job.current_attempt is not None and job.current_attempt.warned_at is not None
    assert job.history[-1].what == warned.message.split("\n\n")[1]


def test_a_policy_stop_outside_the_queue_is_published_with_its_action_and_job() -> None:
    case = outside(TAGGED)
    case.start_directly("by-hand")
    case.deliver("by-hand")
    case.deliver("by-hand")

    (stopped,) = case.notifier.sent
    assert stopped.attributes() == {"job": "by-hand", "action": "policy-stop"}


# ---------------------------------------------------------------- a failed publish undoes nothing


def test_a_failed_publish_never_undoes_a_preemption() -> None:
    world = World(capacity={POOL: 1}, notifier=RecordingNotifier(fail=True))
    world.submit("low", 0)
    world.progress("low", "InProgress", secondary_status="Training")
    world.submit("high", 9)

    assert world.job("low").state is JobState.PREEMPTING
    world.finish_stops()
    world.kick()
    assert world.job("high").state is JobState.STARTING


def test_a_failed_publish_never_undoes_an_idle_stop_or_a_warning() -> None:
    world = NotifiedIdleWorld(capacity={POOL: 2}, notifier=RecordingNotifier(fail=True))
    world.policy.policy = WARN
    warned_job = world.training("warned")
    stopped_job = world.training("stopped")

    world.notify(alarm_name(PREFIX, warned_job, warning=True))
    world.notify(alarm_name(PREFIX, stopped_job))

    warned = world.job("warned").current_attempt
    assert warned is not None and warned.warned_at is not None
    assert world.job("stopped").state is JobState.STOPPING
    assert world.sagemaker.stop_calls == [stopped_job]
