"""What the local stack reads from template.yaml about queues (client/smq/local/template/queues.py): the
queues in the order they can be created, their CreateQueue attributes, the event source mappings
that consume them, and the rules that put events on them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from smq.local.template import (
    QueueEventSource,
    TemplateError,
    event_rule_queues,
    load_template,
    matches,
    sqs_event_sources,
    sqs_queue_attributes,
    sqs_queues,
)

from tests.template.template_support import REQUIRED_PARAMETERS, TEMPLATE_PATH

DOCUMENTED_EVENT = json.loads(
    (Path(__file__).resolve().parents[1] / "local_sagemaker" / "documented_event.json").read_text()
)


def resolve(logical_id: str, attribute: str | None) -> str:
    return f"{logical_id}.{attribute}" if attribute else f"physical-{logical_id}"


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


def test_every_queue_is_created_after_its_dead_letter_queue(real: dict[str, Any]) -> None:
    order = sqs_queues(real)
    assert set(order) == {
        "SchedulerQueue",
        "SchedulerQueueDeadLetterQueue",
        "SchedulerDeadLetterQueue",
        "EventDeliveryDeadLetterQueue",
        "IdleStopDeadLetterQueue",
        "PriceRefreshDeadLetterQueue",
    }
    assert order.index("SchedulerQueueDeadLetterQueue") < order.index("SchedulerQueue")


def test_queue_attributes_are_the_templates(real: dict[str, Any]) -> None:
    attributes = sqs_queue_attributes(real, "SchedulerQueue", resolve, parameter_overrides=REQUIRED_PARAMETERS)
    redrive = json.loads(attributes.pop("RedrivePolicy"))
    assert attributes == {
        "VisibilityTimeout": "1080",
        "MessageRetentionPeriod": "86400",
        "SqsManagedSseEnabled": "true",
    }
    assert redrive == {"deadLetterTargetArn": "SchedulerQueueDeadLetterQueue.Arn", "maxReceiveCount": 5}


def test_queues_redriving_to_each_other_cannot_be_created(tmp_path: Path) -> None:
    def queue(target: str) -> dict[str, Any]:
        return {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": [target, "Arn"]}, "maxReceiveCount": 1}
            },
        }

    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump({"Resources": {"A": queue("B"), "B": queue("A")}}))
    with pytest.raises(TemplateError, match="redrive to each other"):
        sqs_queues(load_template(path))


def test_the_scheduler_consumes_its_queue(real: dict[str, Any]) -> None:
    expected = QueueEventSource(
        function="SchedulerFunction",
        handler="smq_lambda.handlers.scheduler.handler",
        queue="SchedulerQueue",
        batch_size=100,
        batching_window_seconds=1,
        report_batch_item_failures=True,
    )
    assert sqs_event_sources(real, parameter_overrides=REQUIRED_PARAMETERS) == [expected]
    overrides = {**REQUIRED_PARAMETERS, "SchedulerBatchSize": "7", "SchedulerBatchingWindowSeconds": "0"}
    (source,) = sqs_event_sources(real, parameter_overrides=overrides)
    assert (source.batch_size, source.batching_window_seconds) == (7, 0)


def test_sagemaker_state_changes_go_to_the_scheduler_queue(real: dict[str, Any]) -> None:
    ((pattern, queue),) = event_rule_queues(real)
    assert queue == "SchedulerQueue"
    assert matches(pattern, DOCUMENTED_EVENT)
    assert not matches(pattern, {**DOCUMENTED_EVENT, "detail-type": "SageMaker Endpoint State Change"})
    assert not matches(pattern, {**DOCUMENTED_EVENT, "source": "aws.s3"})


def test_patterns_other_than_exact_values_are_not_evaluated() -> None:
    assert matches({"detail": {"TrainingJobStatus": ["Completed"]}}, DOCUMENTED_EVENT)
    with pytest.raises(TemplateError, match="exact values"):
        matches({"source": [{"prefix": "aws."}]}, DOCUMENTED_EVENT)
