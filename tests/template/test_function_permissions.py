"""Every AWS call a function makes is one its role allows: each function's paths run over moto with
its real handler and the template's environment, and every recorded call's actions and resource
ARNs are checked against that function's statements in template.yaml (tests/template/iam_policy.py).

A permission missing from a function's policy fails here; in AWS it would fail only in a deployed
stack (AccessDenied), often on a path no one watches, such as the idle stop."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from smq.local.event_router import scheduled_event
from smq.local.lambda_context import LambdaContext
from smq.local.stack_options import ACCOUNT, REGION, LocalStackOptions
from smq_lambda.adapters.cloudwatch_alarms import CloudWatchIdleAlarms
from smq_lambda.adapters.dynamodb_budget_marks import MARK_PREFIX
from smq_lambda.adapters.dynamodb_costs import ATTEMPT_PREFIX, DAY_PREFIX
from smq_lambda.adapters.dynamodb_spot_rates import SPOT_INTERRUPTIONS_KEY
from smq_lambda.adapters.dynamodb_store import DynamoJobStore
from smq_lambda.adapters.dynamodb_warm_pools import warm_pool_key
from smq_lambda.adapters.price_source import PRICES_KEY
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.idle import AlarmPrefix, alarm_name
from smq_lambda.service.idle_watch import IdleWatch

from tests.api.builders import ALICE
from tests.api.gateway import api_event
from tests.service.harness import POOL, World, training_request
from tests.support.sqs import batch
from tests.template.function_calls import ROLE, RecordedStack, recorded_stack
from tests.template.iam_policy import Call, denied

COSTED = "ml.g5.2xlarge"
"""The pool of the cost and spot paths: jobs of the other tests never wait in it."""
WARM = "ml.g5.4xlarge"
"""The pool of the warm-pool path, one instance: a warm pool there leaves a job ahead without room."""
CONFIG = {
    "pools": {POOL: 24, COSTED: 2, WARM: 1},
    "prices": {COSTED: 1.5, WARM: 3.0},
    "cost_tags": ["project"],
    "budgets": {"vision": {"monthly_usd": 1, "warn_at": [0.5]}},
    "spot": {"adaptive": {"max_interruptions_per_hour": 100}},
}
"""Every cost section, so attempt ends price, record under a cost tag and warn the team `vision`;
adaptive spot, so every pass reads the spot-interruption book."""


@pytest.fixture(scope="module")
def stack() -> Iterator[RecordedStack]:
    with recorded_stack(LocalStackOptions(config=CONFIG)) as recorded:
        yield recorded


def _world(stack: RecordedStack) -> World:
    """A scheduler over the stack's table and alarms (its own calls are not recorded): it puts jobs
    in the states the functions act on."""
    session = boto3.session.Session()
    prefix = AlarmPrefix(stack.resources.idle_alarm_prefix)
    topic = stack.resources.topic_arn("IdleAlarmTopic")
    return World(
        capacity={POOL: 24},
        store=DynamoJobStore("smq-queue", session.client("dynamodb")),
        idle_watch=IdleWatch(CloudWatchIdleAlarms(session.client("cloudwatch"), prefix), topic, prefix),
    )


def _notification(stack: RecordedStack, alarm: str) -> dict[str, Any]:
    """SNS's delivery of CloudWatch's notification that `alarm` went into ALARM."""
    topic = stack.resources.topic_arn("IdleAlarmTopic")
    cloudwatch = boto3.session.Session().client("cloudwatch")
    described = cloudwatch.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
    message = {
        "AlarmName": alarm,
        "AlarmDescription": described[0].get("AlarmDescription") if described else None,
        "NewStateValue": "ALARM",
        "NewStateReason": "Threshold Crossed",
        "StateChangeTime": "2024-01-01T01:00:00.000+0000",
        "OldStateValue": "OK",
    }
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": f"{topic}:{uuid.uuid4()}",
                "Sns": {
                    "Type": "Notification",
                    "MessageId": str(uuid.uuid4()),
                    "TopicArn": topic,
                    "Subject": "ALARM",
                    "Message": json.dumps(message),
                    "Timestamp": "2024-01-01T01:00:00.000Z",
                    "MessageAttributes": {},
                },
            }
        ]
    }


def _idle_stop(stack: RecordedStack, event: dict[str, Any]) -> dict[str, Any]:
    from smq_lambda.handlers import idle

    with stack.running("IdleStopFunction"):
        return idle.handler(event, LambdaContext.for_function("smq-IdleStopFunction"))


def test_the_idle_stop_function_may_do_what_each_of_its_paths_does(stack: RecordedStack) -> None:
    """A queued job's attempt on one host and on 12 (two alarms: the other one's state is read),
    the same notification while the job stops and after it ended, and a training job outside the
    queue."""
    world = _world(stack)
    prefix = AlarmPrefix(stack.resources.idle_alarm_prefix)
    cloudwatch = boto3.session.Session().client("cloudwatch")
    for name, instances in (("idle-one-host", 1), ("idle-wide", 12)):
        world.submit(name, 0, instances=instances)
        world.progress(name, "InProgress", secondary_status="Starting")
        world.progress(name, "InProgress", secondary_status="Training")
    alarms = {}
    for name, parts in (("idle-one-host", 1), ("idle-wide", 2)):
        attempt = world.job(name).current_attempt
        assert attempt is not None
        names = [alarm_name(prefix, attempt.training_job_name, part, parts) for part in range(1, parts + 1)]
        names = names if parts > 1 else [alarm_name(prefix, attempt.training_job_name)]
        for other in names[1:]:
            cloudwatch.set_alarm_state(AlarmName=other, StateValue="ALARM", StateReason="idle")
        alarms[name] = names[0]
        outcome = _idle_stop(stack, _notification(stack, names[0]))
        assert outcome["stopped"] == [attempt.training_job_name], outcome
        assert world.job(name).state is JobState.STOPPING
        _idle_stop(stack, _notification(stack, names[0]))
    for name in alarms:
        world.sagemaker.jobs[world.job(name).attempts[-1].training_job_name].status = "Stopping"
    world.finish_stops()
    for alarm in alarms.values():
        _idle_stop(stack, _notification(stack, alarm))
    _idle_stop(stack, _notification(stack, alarm_name(prefix, "started-outside-the-queue")))
    operations = {call.operation for call in stack.calls["IdleStopFunction"]}
    assert operations >= {"GetItem", "BatchGetItem", "DescribeAlarms", "DeleteAlarms", "StopTrainingJob"}
    refused = denied(stack.policy("IdleStopFunction"), stack.calls["IdleStopFunction"], stack.arns)
    assert not refused, "\n".join(refused)


def _api(stack: RecordedStack, method: str, path: str, body: Any = None, **query: str) -> dict[str, Any]:
    from smq_lambda.handlers import api

    event = api_event(method, path, body=None if body is None else json.dumps(body), query=query or None)
    with stack.running("ApiFunction"):
        response = api.handler(event, LambdaContext.for_function("smq-api"))
    return {"status": response["statusCode"], "body": json.loads(response["body"] or "null")}


def _request(name: str, priority: int, instances: int = 1, *, pool: str = POOL, **tags: str) -> dict[str, Any]:
    request = training_request(name, priority=priority, instances=instances, pool=pool)
    request["RoleArn"] = ROLE
    request["CheckpointConfig"] = {"S3Uri": f"s3://smq-local/checkpoints/{name}/"}
    request["Tags"] += [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def _flexible(name: str, priority: int, *types: str) -> dict[str, Any]:
    """A request preferring one instance of each of `types`, in order: a pending job listed in each
    type's pool (adapters/pending_listing.py)."""
    request = _request(name, priority)
    request["ResourceConfig"] = {
        "InstancePreferences": [{"InstanceType": kind, "InstanceCount": 1} for kind in types],
        "VolumeSizeInGB": 30,
    }
    return request


def _refused(stack: RecordedStack, function: str) -> list[str]:
    return denied(stack.policy(function), stack.calls[function], stack.arns)


def _items(call: Call) -> set[str]:
    """The keys (`name`) of the queue table's items a DynamoDB call names, alone, in a transaction
    or in a batch."""
    params = call.params
    requests = [params, *(request for item in params.get("TransactItems", []) for request in item.values())]
    keys = [request[part] for request in requests for part in ("Key", "Item") if part in request]
    keys += [key for table in params.get("RequestItems", {}).values() for key in table.get("Keys", [])]
    return {key["name"]["S"] for key in keys}


def _touched(stack: RecordedStack, function: str, operations: set[str]) -> set[str]:
    """The items `function` named in a call of one of `operations`."""
    return {
        name
        for call in stack.calls[function]
        if call.service == "dynamodb" and call.operation in operations
        for name in _items(call)
    }


def _day_dimensions(items: set[str]) -> set[str]:
    """The report dimensions of the cost records' day items among `items` (`#costs#<day>#<dimension>`)."""
    return {name.rsplit("#", 1)[-1] for name in items if name.startswith(DAY_PREFIX)}


WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}
READS = {"GetItem", "BatchGetItem"}


def test_the_api_function_may_do_what_each_of_its_routes_does(stack: RecordedStack) -> None:
    """Submit (accepted, replayed, refused), list by state and by owner, read one, reprioritize,
    cancel, and read the pools and quotas."""
    assert _api(stack, "POST", "/add-job", _request("api-job", 3))["status"] == 202
    assert _api(stack, "POST", "/add-job", _request("api-job", 3))["status"] in (200, 202)
    assert _api(stack, "POST", "/add-job", {"TrainingJobName": "api-bad"})["status"] == 400
    assert _api(stack, "GET", "/jobs")["status"] == 200
    assert _api(stack, "GET", "/jobs", state="pending")["status"] == 200
    assert _api(stack, "GET", "/jobs", owner=ALICE)["status"] == 200
    assert _api(stack, "GET", "/jobs/api-job")["status"] == 200
    assert _api(stack, "PATCH", "/jobs/api-job", {"priority": 5})["status"] == 200
    assert _api(stack, "GET", "/pools")["status"] == 200
    assert _api(stack, "GET", "/quotas")["status"] == 200
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    assert _api(stack, "GET", "/attempts", **{"from": an_hour_ago})["status"] == 200
    assert _api(stack, "DELETE", "/jobs/api-job")["status"] == 202
    assert _api(stack, "POST", "/add-job", _flexible("api-flexible", 3, "ml.g5.xlarge", POOL))["status"] == 202
    assert _api(stack, "DELETE", "/jobs/api-flexible")["status"] == 202
    operations = {call.operation for call in stack.calls["ApiFunction"]}
    assert operations >= {"PutItem", "GetItem", "Query", "UpdateItem", "DeleteItem", "GetParameter", "SendMessage"}
    refused = _refused(stack, "ApiFunction")
    assert not refused, "\n".join(refused)


def test_the_api_function_has_no_sagemaker_permission(stack: RecordedStack) -> None:
    """GET /pools reads what the last pass published; the API never reaches SageMaker."""
    assert not [action for action in stack.policy("ApiFunction").actions() if action.lower().startswith("sagemaker:")]


def _scheduler(stack: RecordedStack, event: dict[str, Any]) -> Any:
    from smq_lambda.handlers import scheduler

    with stack.running("SchedulerFunction"):
        return scheduler.handler(event, LambdaContext.for_function("smq-scheduler"))


def _training_job(name: str) -> Any:
    """moto's record of a training job (moto's jobs never leave Completed on their own)."""
    from moto.sagemaker.models import sagemaker_backends

    return sagemaker_backends[ACCOUNT][REGION].training_jobs[name]


def _attempt(stack: RecordedStack, job: str) -> str:
    reply = _api(stack, "GET", f"/jobs/{job}")["body"]
    return str(reply["attempts"][-1]["training_job_name"])


def _state_change(name: str, **more: Any) -> dict[str, Any]:
    """SageMaker's event for moto's training job `name` as it now is, on the scheduler queue, with
    the members moto does not keep (`more`: billable time, transitions, warm pool status)."""
    job = _training_job(name)
    detail = {
        "TrainingJobName": name,
        "TrainingJobArn": job.arn,
        "TrainingJobStatus": job.training_job_status,
        "SecondaryStatus": job.secondary_status,
        "ResourceConfig": job.resource_config,
        "Tags": {tag["Key"]: tag["Value"] for tag in job.tags or []},
        "SecondaryStatusTransitions": [],
        **more,
    }
    return batch(
        {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "SageMaker Training Job State Change",
            "source": "aws.sagemaker",
            "account": ACCOUNT,
            "time": "2030-01-01T00:00:00Z",
            "region": REGION,
            "resources": [job.arn],
            "detail": detail,
        }
    )


def test_the_scheduler_function_may_do_what_each_of_its_paths_does(stack: RecordedStack) -> None:
    """Start a job, watch it training (idle alarms), preempt it for a higher priority, stop a job
    outside the queue that breaks the policy (and tell the policy topic), apply a stop, and sweep
    alarms, through reconciliation ticks and a batch from the scheduler queue."""
    setup = boto3.session.Session()
    setup.client("ssm").put_parameter(
        Name=stack.resources.policy_parameter, Value=json.dumps({"required_tags": ["project"]}), Overwrite=True
    )
    assert _api(stack, "POST", "/add-job", _request("sched-low", 1, instances=20, project="p"))["status"] == 202
    flexible = {**_flexible("sched-flexible", 0, "ml.g5.xlarge", POOL), "Tags": _request("x", 0, project="p")["Tags"]}
    assert _api(stack, "POST", "/add-job", flexible)["status"] == 202
    _scheduler(stack, scheduled_event())
    assert _api(stack, "GET", "/jobs/sched-flexible")["body"]["state"] == "starting"
    low = _attempt(stack, "sched-low")
    _training_job(low).training_job_status, _training_job(low).secondary_status = "InProgress", "Training"
    _scheduler(stack, _state_change(low))
    assert _api(stack, "POST", "/add-job", _request("sched-high", 9, instances=10, project="p"))["status"] == 202
    _scheduler(stack, batch({"source": "smq.api", "reason": "test"}))
    outside = _request("outside-the-queue", 0)
    for key in ("CheckpointConfig",):
        outside.pop(key)
    setup.client("sagemaker").create_training_job(**{**outside, "Tags": []})
    _training_job("outside-the-queue").training_job_status = "InProgress"
    _training_job("outside-the-queue").secondary_status = "Starting"
    _scheduler(stack, scheduled_event())
    _training_job(low).training_job_status, _training_job(low).secondary_status = "Stopped", "Stopped"
    _scheduler(stack, _state_change(low))
    _scheduler(stack, scheduled_event())
    operations = {call.operation for call in stack.calls["SchedulerFunction"]}
    assert operations >= {
        "CreateTrainingJob",
        "DescribeTrainingJob",
        "StopTrainingJob",
        "ListTrainingJobs",
        "PutMetricAlarm",
        "DescribeAlarms",
        "Publish",
        "TransactWriteItems",
    }, operations
    refused = _refused(stack, "SchedulerFunction")
    assert not refused, "\n".join(refused)


NO_FAILURES: dict[str, list[Any]] = {"batchItemFailures": []}
"""The scheduler's answer to a batch whose every state change it applied."""


def _transition(status: str) -> dict[str, str]:
    return {"Status": status, "StartTime": "2030-01-01T00:00:00Z", "StatusMessage": status}


def test_the_scheduler_function_may_count_spot_interruptions_and_record_costs(stack: RecordedStack) -> None:
    """A spot attempt reports an interruption (the spot-interruption book), then ends: its cost is
    recorded in the cost records (the attempt and its team, owner and cost tag days), and its spend
    crosses the team's warning threshold (the budget mark, a notice on the policy topic)."""
    request = _request("costed-spot", 0, pool=COSTED, project="p", team="vision")
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"]["MaxWaitTimeInSeconds"] = 7200
    assert _api(stack, "POST", "/add-job", request)["status"] == 202
    _scheduler(stack, batch({"source": "smq.api", "reason": "test"}))
    attempt = _attempt(stack, "costed-spot")
    _training_job(attempt).training_job_status, _training_job(attempt).secondary_status = "InProgress", "Training"
    transitions = [_transition(status) for status in ("Starting", "Training", "Interrupted", "Training")]
    assert _scheduler(stack, _state_change(attempt, SecondaryStatusTransitions=transitions)) == NO_FAILURES
    _training_job(attempt).training_job_status, _training_job(attempt).secondary_status = "Completed", "Completed"
    ended = {"SecondaryStatusTransitions": transitions, "BillableTimeInSeconds": 3600, "TrainingTimeInSeconds": 3600}
    assert _scheduler(stack, _state_change(attempt, **ended)) == NO_FAILURES
    assert _api(stack, "GET", "/jobs/costed-spot")["body"]["state"] == "completed"
    written = _touched(stack, "SchedulerFunction", WRITES)
    spot_book = SPOT_INTERRUPTIONS_KEY["name"]["S"]
    assert {spot_book, f"{ATTEMPT_PREFIX}{attempt}"} <= written, written
    assert _day_dimensions(written) >= {"team", "owner", "tag:project"}
    assert any(name.startswith(f"{MARK_PREFIX}vision#") for name in written), written
    assert spot_book in _touched(stack, "SchedulerFunction", READS)
    published = [call for call in stack.calls["SchedulerFunction"] if call.operation == "Publish"]
    assert any(call.params["TopicArn"] == stack.resources.topic_arn("PolicyTopic") for call in published)
    refused = _refused(stack, "SchedulerFunction")
    assert not refused, "\n".join(refused)


def test_the_api_function_may_read_the_cost_records(stack: RecordedStack) -> None:
    """GET /costs by team (the month), by owner (access rules decide whose rows) and by cost tag
    (the last 30 days): the cost records' day items, the running jobs' accruals and the prices in force."""
    assert _api(stack, "GET", "/costs")["status"] == 200
    assert _api(stack, "GET", "/costs", by="owner")["status"] == 200
    assert _api(stack, "GET", "/costs", by="tag:project", since="30d")["status"] == 200
    read = _touched(stack, "ApiFunction", READS)
    assert _day_dimensions(read) >= {"team", "owner", "tag:project"}
    assert PRICES_KEY["name"]["S"] in read
    refused = _refused(stack, "ApiFunction")
    assert not refused, "\n".join(refused)


def test_the_scheduler_function_may_end_a_warm_pool_for_a_job_ahead(stack: RecordedStack) -> None:
    """An attempt ends keeping its instance warm; a job that cannot reuse it waits for that
    instance, so the pass ends the warm pool (UpdateTrainingJob, KeepAlivePeriodInSeconds 0) and
    marks it released; reconciliation then asks SageMaker about the warm pool, and ends it no
    second time."""
    kept = _request("warm-kept", 0, pool=WARM, project="p")
    kept["ResourceConfig"]["KeepAlivePeriodInSeconds"] = 600
    assert _api(stack, "POST", "/add-job", kept)["status"] == 202
    _scheduler(stack, batch({"source": "smq.api", "reason": "test"}))
    warm = _attempt(stack, "warm-kept")
    assert _scheduler(stack, _state_change(warm, WarmPoolStatus={"Status": "Available"})) == NO_FAILURES
    assert _api(stack, "GET", "/jobs/warm-kept")["body"]["state"] == "completed"
    assert _api(stack, "POST", "/add-job", _request("warm-ahead", 5, pool=WARM, project="p"))["status"] == 202
    _scheduler(stack, batch({"source": "smq.api", "reason": "test"}))
    assert _api(stack, "GET", "/jobs/warm-ahead")["body"]["state"] == "pending"
    _scheduler(stack, scheduled_event())
    updates = [call.params for call in stack.calls["SchedulerFunction"] if call.operation == "UpdateTrainingJob"]
    assert updates == [{"TrainingJobName": warm, "ResourceConfig": {"KeepAlivePeriodInSeconds": 0}}]
    assert warm_pool_key(warm) in _touched(stack, "SchedulerFunction", {"UpdateItem"})
    refused = _refused(stack, "SchedulerFunction")
    assert not refused, "\n".join(refused)


def test_the_price_refresh_function_may_read_the_price_list_and_write_the_prices(stack: RecordedStack) -> None:
    """The daily refresh: the Price List's training prices for the stack's region, into `#prices`."""
    from smq_lambda.handlers import price_refresh

    with stack.running("PriceRefreshFunction"):
        outcome = price_refresh.handler(scheduled_event(), LambdaContext.for_function("smq-PriceRefreshFunction"))
    assert outcome["prices"] == 1, outcome
    operations = {call.operation for call in stack.calls["PriceRefreshFunction"]}
    assert operations == {"GetProducts", "PutItem"}, operations
    assert _touched(stack, "PriceRefreshFunction", WRITES) == {PRICES_KEY["name"]["S"]}
    refused = _refused(stack, "PriceRefreshFunction")
    assert not refused, "\n".join(refused)
