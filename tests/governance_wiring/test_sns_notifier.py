"""Notifications on SNS (moto): what a subscriber receives, message attributes included, and a
refused publish that is logged and reported, never raised (the change it reports stands)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from moto import mock_aws
from smq_lambda.adapters.sns_notifier import SnsNotifier
from smq_lambda.governance.notices import Notice, NoticeAction

from tests.support.aws import use_test_credentials

NOTIFICATION = Notice(
    job="by-hand",
    owner=None,
    team=None,
    action=NoticeAction.POLICY_STOP,
    subject="smq policy: stopped training job by-hand (required_tags)",
    message="Tags.project",
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield


def subscribed_queue(topic_arn: str) -> str:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="policy-notifications")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    boto3.client("sns").subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
    return url


def test_a_subscriber_receives_the_subject_and_message(aws: None) -> None:
    topic = boto3.client("sns").create_topic(Name="smq-PolicyTopic")["TopicArn"]
    queue = subscribed_queue(topic)

    assert SnsNotifier(topic, boto3.client("sns")).publish(NOTIFICATION) is True

    (received,) = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    envelope = json.loads(received["Body"])
    assert (envelope["Subject"], envelope["Message"]) == (NOTIFICATION.subject, NOTIFICATION.message)
    assert envelope["MessageAttributes"] == {
        "job": {"Type": "String", "Value": "by-hand"},
        "action": {"Type": "String", "Value": "policy-stop"},
    }


def test_a_refused_publish_is_logged_with_the_notification_and_reported(
    aws: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    missing = "arn:aws:sns:us-east-1:123456789012:no-such-topic"

    assert SnsNotifier(missing, boto3.client("sns")).publish(NOTIFICATION) is False

    (record,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert record.getMessage() == "could not publish a notification"
    assert (record.code, record.notification) == ("NotFound", NOTIFICATION.message)  # type: ignore[attr-defined]


def test_sns_out_of_reach_is_reported_not_raised(aws: None) -> None:
    client = boto3.client("sns")

    def unreachable(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    client.meta.events.register_first("before-send.sns", unreachable)

    assert SnsNotifier("arn:aws:sns:us-east-1:123456789012:t", client).publish(NOTIFICATION) is False
