"""Idle GPUs end to end over the fakes: the scheduler puts a training job's alarms when it reaches
`Training` and deletes them when its attempt ends, reconciliation puts missing ones and sweeps
orphans, and an alarm's notification (through the idle handler) stops the job, which ends failed."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

import pytest
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.errors import AlarmServiceError, ConfigError
from smq_lambda.governance.idle import AlarmPrefix, alarm_name
from smq_lambda.governance.idle_scope import EXEMPT_TAG
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.handlers.composition import idle_alarm_prefix
from smq_lambda.handlers.idle import handle as handle_idle
from smq_lambda.service.idle_stop import IdleStop
from smq_lambda.service.idle_watch import IdleWatch
from smq_lambda.settings import Settings

from tests.service.harness import POOL, World, queued_job, training_request
from tests.support.fakes import FakeIdleAlarms, FakeTrainingJob

TOPIC = "arn:aws:sns:us-east-1:000000000000:smq-idle"
PREFIX = AlarmPrefix("smq-idle-smq.")
OTHER_STACK = AlarmPrefix("smq-idle-smq-2.")
"""A second stack in the same account and Region, whose name starts with this one's."""


class IdleWorld(World):
    """The harness's world with idle alarms and the idle handler."""

    def __post_init__(self) -> None:
        self.alarms = FakeIdleAlarms(PREFIX)
        self.idle_watch = IdleWatch(self.alarms, TOPIC, PREFIX)
        super().__post_init__()
        self.idle_stop = IdleStop(
            store=self.store,
            training=self.sagemaker,
            alarms=self.alarms,
            policy=self.policy,
            clock=self.clock,
            prefix=PREFIX,
        )

    def training(self, name: str, instances: int = 1, *, pool: str = POOL, tags: tuple[str, ...] = ()) -> str:
        """Submit a job (with `tags` set to `true`) and take its attempt to `Training`; returns the
        training job's name."""
        self.clock.advance(seconds=1)
        queued = queued_job(name, priority=0, submitted_at=self.clock(), pool=pool, instances=instances)
        request = {
            **queued.request,
            "Tags": [*queued.request["Tags"], *({"Key": key, "Value": "true"} for key in tags)],
        }
        self.store.create(replace(queued, request=request))
        self.kick()
        self.progress(name, "InProgress", secondary_status="Starting")
        self.progress(name, "InProgress", secondary_status="Training")
        attempt = self.job(name).current_attempt
        assert attempt is not None
        return attempt.training_job_name

    def notify(self, name: str, state: str = "ALARM") -> dict[str, Any]:
        """CloudWatch's notification of alarm `name` entering `state`, delivered by SNS."""
        self.alarms.set_state(name, state)
        request = self.alarms.alarms.get(name, {})
        return handle_idle(sns_event(alarm_message(name, state, request.get("AlarmDescription"))), self.idle_stop)

    def outside(self, name: str, status: str, secondary: str, instances: int = 1) -> None:
        """A training job someone started directly reports `status`."""
        request = training_request(name, priority=0, instances=instances)
        request["Tags"] = []
        job = self.sagemaker.jobs.setdefault(name, FakeTrainingJob(name=name, request=request))
        job.status, job.secondary_status = status, secondary
        self.deliver(self.event(name))


def alarm_message(name: str, state: str, description: str | None) -> str:
    return json.dumps(
        {
            "AlarmName": name,
            "AlarmDescription": description,
            "NewStateValue": state,
            "NewStateReason": "Threshold Crossed: 3 datapoints were less than or equal to the threshold (1.0).",
            "StateChangeTime": "2024-01-01T01:00:00.000+0000",
            "OldStateValue": "OK",
        }
    )


def sns_event(message: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": f"{TOPIC}:{uuid.uuid4()}",
                "Sns": {
                    "Type": "Notification",
                    "MessageId": str(uuid.uuid4()),
                    "TopicArn": TOPIC,
                    "Subject": "ALARM",
                    "Message": message,
                    "Timestamp": "2024-01-01T01:00:00.000Z",
                    "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
                    "MessageAttributes": {},
                },
            }
        ]
    }


@pytest.fixture
def world() -> IdleWorld:
    return IdleWorld(capacity={POOL: 20})


def test_an_attempt_is_watched_from_training_until_it_ends(world: IdleWorld) -> None:
    world.submit("train", 0)
    world.progress("train", "InProgress", secondary_status="Starting")
    assert world.alarms.alarms == {}
    attempt = world.job("train").current_attempt
    assert attempt is not None
    training_job = attempt.training_job_name
    world.progress("train", "InProgress", secondary_status="Training")
    alarm = world.alarms.alarms[alarm_name(PREFIX, training_job)]
    assert alarm["AlarmActions"] == [TOPIC]
    dimensions = alarm["Metrics"][0]["MetricStat"]["Metric"]["Dimensions"]
    assert dimensions == [{"Name": "Host", "Value": f"{training_job}/algo-1"}]
    world.progress("train", "Completed")
    assert world.job("train").state is JobState.COMPLETED
    assert world.alarms.alarms == {}


def test_every_host_is_watched_and_a_preempted_attempt_is_unwatched(world: IdleWorld) -> None:
    training_job = world.training("wide", instances=12)
    assert sorted(world.alarms.alarms) == [
        alarm_name(PREFIX, training_job, 1, 2),
        alarm_name(PREFIX, training_job, 2, 2),
    ]
    world.sagemaker.set_status(training_job, "Stopped")
    world.deliver(world.event(training_job))
    assert world.alarms.alarms == {}


def test_an_alarm_failure_never_fails_a_report(world: IdleWorld) -> None:
    world.alarms.fail = True
    world.training("train")
    assert world.job("train").state is JobState.RUNNING
    world.progress("train", "Completed")
    assert world.job("train").state is JobState.COMPLETED


def test_reconciliation_puts_missing_alarms_once_and_sweeps_orphans(world: IdleWorld) -> None:
    world.alarms.fail = True
    training_job = world.training("train")
    world.alarms.fail = False
    orphan = alarm_name(PREFIX, "someone-gone-1")
    world.alarms.put([{"AlarmName": orphan}])
    world.reconcile()
    assert sorted(world.alarms.alarms) == [alarm_name(PREFIX, training_job)]
    puts = world.alarms.put_calls
    world.reconcile()
    assert world.alarms.put_calls == puts


def test_another_stacks_alarms_are_never_swept_or_acted_on(world: IdleWorld) -> None:
    training_job = world.training("train")
    theirs = [alarm_name(OTHER_STACK, "someone-gone-1"), alarm_name(OTHER_STACK, training_job)]
    for name in theirs:
        world.alarms.alarms[name] = {"AlarmName": name}
    world.reconcile()
    assert sorted(world.alarms.alarms) == sorted([alarm_name(PREFIX, training_job), *theirs])
    assert world.notify(theirs[1]) == {"stopped": [], "deleted": [], "ignored": 1}
    assert world.job("train").state is JobState.RUNNING
    world.progress("train", "Completed")
    assert sorted(world.alarms.alarms) == sorted(theirs)


def test_the_sweep_keeps_outside_jobs_only_while_they_run_under_enforcement(world: IdleWorld) -> None:
    world.policy.policy = Policy(idle=IdlePolicy(enforce_outside_queue=True))
    world.outside("notebook-job", "InProgress", "Training")
    assert alarm_name(PREFIX, "notebook-job") in world.alarms.alarms
    world.reconcile()
    assert alarm_name(PREFIX, "notebook-job") in world.alarms.alarms
    world.sagemaker.jobs["notebook-job"].status = "Completed"
    world.reconcile()
    assert world.alarms.alarms == {}


def test_jobs_outside_the_queue_are_watched_only_under_enforcement(world: IdleWorld) -> None:
    world.outside("notebook-job", "InProgress", "Training")
    assert world.alarms.alarms == {}
    world.policy.policy = Policy(idle=IdlePolicy(enforce_outside_queue=True))
    world.outside("other-job", "InProgress", "Training", instances=3)
    assert list(world.alarms.alarms) == [alarm_name(PREFIX, "other-job")]
    world.outside("other-job", "Completed", "Completed", instances=3)
    assert world.alarms.alarms == {}


def test_an_idle_job_is_stopped_and_ends_failed_with_the_idle_reason(world: IdleWorld) -> None:
    training_job = world.training("train")
    result = world.notify(alarm_name(PREFIX, training_job))
    assert result["stopped"] == [training_job]
    stopping = world.job("train")
    assert stopping.state is JobState.STOPPING
    assert stopping.reason is not None and stopping.reason.startswith("idle GPU: every host at or below 1%")
    assert world.sagemaker.stop_calls == [training_job]
    world.finish_stops()
    failed = world.job("train")
    assert failed.state is JobState.FAILED
    assert failed.reason == stopping.reason
    assert failed.current_attempt is not None and failed.current_attempt.outcome == AttemptOutcome.IDLE_GPU
    assert world.alarms.alarms == {}
    assert world.states()["train"] == "failed"


def test_duplicate_and_late_notifications_change_nothing(world: IdleWorld) -> None:
    training_job = world.training("train")
    world.notify(alarm_name(PREFIX, training_job))
    world.notify(alarm_name(PREFIX, training_job))
    assert world.sagemaker.stop_calls == [training_job]
    world.finish_stops()
    ended = world.job("train")
    world.alarms.put([{"AlarmName": alarm_name(PREFIX, training_job)}])
    world.notify(alarm_name(PREFIX, training_job))
    assert world.job("train") == ended
    assert world.sagemaker.stop_calls == [training_job]


def test_a_notification_for_an_ended_attempt_deletes_its_alarm(world: IdleWorld) -> None:
    training_job = world.training("train")
    world.progress("train", "Stopped")
    assert world.job("train").state is JobState.CANCELLED
    late = alarm_name(PREFIX, training_job)
    world.alarms.put([{"AlarmName": late}])
    result = world.notify(late)
    assert result == {"stopped": [], "deleted": [late], "ignored": 0}
    assert world.sagemaker.stop_calls == []
    assert world.alarms.alarms == {}


def test_a_job_of_several_alarms_stops_only_when_every_part_is_idle(world: IdleWorld) -> None:
    training_job = world.training("wide", instances=12)
    world.alarms.set_state(alarm_name(PREFIX, training_job, 2, 2), "OK")
    world.notify(alarm_name(PREFIX, training_job, 1, 2))
    assert world.job("wide").state is JobState.RUNNING
    world.notify(alarm_name(PREFIX, training_job, 2, 2))
    assert world.job("wide").state is JobState.STOPPING


def test_ok_and_foreign_notifications_are_ignored(world: IdleWorld) -> None:
    training_job = world.training("train")
    assert world.notify(alarm_name(PREFIX, training_job), "OK")["stopped"] == []
    ops = handle_idle(sns_event(alarm_message("SchedulerErrors", "ALARM", None)), world.idle_stop)
    assert ops["ignored"] == 1
    assert handle_idle(sns_event("not json"), world.idle_stop)["ignored"] == 1
    assert handle_idle({"Records": [{"nope": 1}]}, world.idle_stop)["ignored"] == 1
    assert world.job("train").state is JobState.RUNNING


def test_idle_jobs_outside_the_queue_are_stopped_only_under_enforcement(world: IdleWorld) -> None:
    world.policy.policy = Policy(idle=IdlePolicy(enforce_outside_queue=True))
    world.outside("notebook-job", "InProgress", "Training")
    world.notify(alarm_name(PREFIX, "notebook-job"))
    assert world.sagemaker.stop_calls == ["notebook-job"]
    world.policy.policy = Policy()
    world.sagemaker.stop_calls.clear()
    world.notify(alarm_name(PREFIX, "notebook-job"))
    assert world.sagemaker.stop_calls == []
    assert world.alarms.alarms == {}


def test_a_notification_that_cannot_be_read_through_fails_for_redelivery(world: IdleWorld) -> None:
    training_job = world.training("wide", instances=12)
    world.alarms.set_state(alarm_name(PREFIX, training_job, 2, 2), "ALARM")
    world.alarms.fail = True
    with pytest.raises(AlarmServiceError):
        handle_idle(
            sns_event(alarm_message(alarm_name(PREFIX, training_job, 1, 2), "ALARM", None)),
            world.idle_stop,
        )
    assert world.job("wide").state is JobState.RUNNING


def test_the_prefix_is_the_environments_and_required() -> None:
    """No default: a bare `smq-idle-` would list, and sweep, every other stack's alarms."""
    env = {"SMQ_TABLE_NAME": "queue", "SMQ_POOLS_PARAMETER": "/smq/pools"}

    assert idle_alarm_prefix(Settings.from_env({**env, "SMQ_IDLE_ALARM_PREFIX": "smq-idle-smq."})) == PREFIX
    with pytest.raises(ConfigError):
        idle_alarm_prefix(Settings.from_env(env))
    with pytest.raises(ValueError):
        Settings.from_env({**env, "SMQ_IDLE_ALARM_PREFIX": "smq-idle-"})


def test_reconciliation_stops_a_job_whose_notification_was_lost(world: IdleWorld) -> None:
    """The idle-stop function failed on the notification three times (it went to the dead-letter
    queue); the alarm stays in ALARM and notifies no more."""
    training_job = world.training("train")
    world.training("busy")
    world.alarms.set_state(alarm_name(PREFIX, training_job), "ALARM")

    world.reconcile()

    stopping = world.job("train")
    assert stopping.state is JobState.STOPPING
    assert stopping.reason is not None and stopping.reason.startswith("idle GPU: every host at or below 1%")
    assert world.job("busy").state is JobState.RUNNING
    assert set(world.sagemaker.stop_calls) == {training_job}
    world.reconcile()
    world.notify(alarm_name(PREFIX, training_job))
    assert world.job("train") == stopping
    world.finish_stops()
    assert world.job("train").state is JobState.FAILED
    assert alarm_name(PREFIX, training_job) not in world.alarms.alarms


def test_reconciliation_stops_a_job_of_several_alarms_once_every_part_is_in_alarm(world: IdleWorld) -> None:
    wide = world.training("wide", instances=12)
    world.alarms.set_state(alarm_name(PREFIX, wide, 1, 2), "ALARM")
    world.reconcile()
    assert world.job("wide").state is JobState.RUNNING
    world.alarms.set_state(alarm_name(PREFIX, wide, 2, 2), "ALARM")
    world.reconcile()
    assert world.job("wide").state is JobState.STOPPING
    assert set(world.sagemaker.stop_calls) == {wide}


def test_a_failing_recheck_never_fails_reconciliation(world: IdleWorld) -> None:
    training_job = world.training("train")
    world.alarms.set_state(alarm_name(PREFIX, training_job), "ALARM")
    world.alarms.fail = True
    world.reconcile()
    assert world.job("train").state is JobState.RUNNING
    world.alarms.fail = False
    world.reconcile()
    assert world.job("train").state is JobState.STOPPING


def test_an_exempt_job_gets_no_alarm_and_is_never_stopped(world: IdleWorld) -> None:
    training_job = world.training("debug", tags=(EXEMPT_TAG,))
    assert world.alarms.alarms == {}
    world.alarms.put([{"AlarmName": alarm_name(PREFIX, training_job)}])
    world.alarms.set_state(alarm_name(PREFIX, training_job), "ALARM")
    world.reconcile()
    assert world.job("debug").state is JobState.RUNNING
    assert world.sagemaker.stop_calls == []
    assert world.alarms.alarms == {}


def test_a_job_without_gpus_is_watched_on_its_cpus_only_under_the_cpu_rule(world: IdleWorld) -> None:
    world.config.set_pools({POOL: 20, "ml.m5.xlarge": 4})
    world.policy.policy = Policy(idle=IdlePolicy(cpu_threshold_percent=5))
    training_job = world.training("etl", pool="ml.m5.xlarge")
    [alarm] = world.alarms.alarms.values()
    assert alarm["Metrics"][0]["MetricStat"]["Metric"]["MetricName"] == "CPUUtilization"
    assert alarm["Threshold"] == 5.0
    world.alarms.set_state(alarm_name(PREFIX, training_job), "ALARM")
    world.reconcile()
    stopping = world.job("etl")
    assert stopping.reason is not None and stopping.reason.startswith("idle CPU: every host at or below 5% CPU")
