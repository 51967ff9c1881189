"""Governance decides purely: no AWS library, no adapter, and its inputs come back unchanged."""

from __future__ import annotations

import ast
import copy
import subprocess
import sys
from pathlib import Path

import smq_lambda.governance
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.idle import alarm_requests, decide_idle, orphaned
from smq_lambda.governance.idle_notifications import parse_notification
from smq_lambda.governance.limits import check_outside_job
from smq_lambda.governance.policy import IdlePolicy, Policy
from smq_lambda.governance.retry import decide_failure
from smq_lambda.governance.spot import OnDemandCapacity, decide_spot_fallback

from .builders import PREFIX, TOPIC, attempt_name, description, job, spot_request, transitions

GOVERNANCE = Path(smq_lambda.governance.__file__).parent
AWS_MODULES = ("boto3", "botocore", "aws_lambda_powertools", "sagemaker", "moto", "aiobotocore")
ALLOWED_INSIDE = ("domain", "governance", "errors", "ports", "scheduling")


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_governance_module_imports_aws_or_the_edges() -> None:
    offenders = {
        path.name: sorted(
            name
            for name in imported_modules(path)
            if name.split(".")[0] in AWS_MODULES
            or (name.startswith("smq_lambda.") and name.split(".")[1] not in ALLOWED_INSIDE)
        )
        for path in GOVERNANCE.glob("*.py")
    }

    assert {name: found for name, found in offenders.items() if found} == {}


def test_importing_governance_loads_no_aws_library() -> None:
    modules = ", ".join(
        f"smq_lambda.governance.{path.stem}" for path in GOVERNANCE.glob("*.py") if path.stem != "__init__"
    )
    probe = f"import sys, {modules}; print(sorted(m for m in sys.modules if m.split('.')[0] in {AWS_MODULES!r}))"

    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"


def test_decisions_do_not_change_their_inputs() -> None:
    policy = Policy(required_tags=("team",), max_instance_count=1, idle=IdlePolicy(enforce_outside_queue=True))
    spot = job(JobState.RUNNING, stored_request=spot_request())
    name = attempt_name(spot)
    history = transitions(*(["Training", "Interrupted"] * 5), "Starting")
    running = description(name, "InProgress", "Starting", SecondaryStatusTransitions=history, Tags={"a": "b"})
    failing = description(
        name, "Failed", "Failed", FailureReason="InternalServerError: x", SecondaryStatusTransitions=history
    )
    put = alarm_requests(PREFIX, name, 12, policy.idle, TOPIC)[0]
    notification = parse_notification(PREFIX, {"AlarmName": put["AlarmName"], "NewStateValue": "ALARM"})
    inputs = (policy, spot, dict(spot.request), running, failing, put)
    before = copy.deepcopy(inputs)

    assert notification is not None
    assert check_outside_job(running, policy, tags=running["Tags"])
    assert decide_spot_fallback(spot, running, policy, OnDemandCapacity({"ml.g5.xlarge": 1})) is not None
    assert decide_failure(spot, failing, policy) is not None
    assert decide_idle(notification, job=spot, policy=policy, part_states={put["AlarmName"]: "ALARM"}) is not None
    assert orphaned(PREFIX, [put["AlarmName"]], set()) != []

    assert inputs == before
    assert spot.request == before[2]
