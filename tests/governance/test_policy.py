"""The policy document: defaults, what parses, what is refused (naming the key path), round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.errors import ConfigError
from smq_lambda.governance.policy import IdlePolicy, Policy, PolicyError, RetryPolicy, parse_policy

from tests.governance.builders import policy_document


def test_an_empty_document_is_the_default_policy() -> None:
    policy = parse_policy({})

    assert policy == Policy()
    assert policy.required_tags == () and policy.allowed_instance_types == () and policy.allowed_role_arns == ()
    assert policy.max_instance_count is None and policy.max_runtime_seconds is None
    assert policy.idle == IdlePolicy(threshold_percent=1.0, period_seconds=300, evaluation_periods=3,
                                     enforce_outside_queue=False)  # fmt: skip
    assert policy.spot_interruption_limit == 3
    assert policy.retry == RetryPolicy(max_retries=2, min_training_seconds=0, retryable_reasons=())


VALID: list[tuple[dict[str, Any], Policy]] = [
    ({"required_tags": ["project", "team"]}, Policy(required_tags=("project", "team"))),
    ({"allowed_instance_types": ["ml.g5.xlarge"]}, Policy(allowed_instance_types=("ml.g5.xlarge",))),
    ({"max_instance_count": 8, "max_runtime_seconds": 86400}, Policy(max_instance_count=8, max_runtime_seconds=86400)),
    ({"max_instance_count": None}, Policy()),
    ({"allowed_role_arns": ["arn:aws:iam::1:role/r"]}, Policy(allowed_role_arns=("arn:aws:iam::1:role/r",))),
    ({"idle": {"threshold_percent": 5}}, Policy(idle=IdlePolicy(threshold_percent=5.0))),
    ({"idle": {"threshold_percent": 0.5, "period_seconds": 60, "evaluation_periods": 1440}},
     Policy(idle=IdlePolicy(0.5, 60, 1440))),
    ({"idle": {"period_seconds": 3600, "evaluation_periods": 168}}, Policy(idle=IdlePolicy(1.0, 3600, 168))),
    ({"idle": {"enforce_outside_queue": True}}, Policy(idle=IdlePolicy(enforce_outside_queue=True))),
    ({"spot_interruption_limit": 0}, Policy(spot_interruption_limit=0)),
    ({"retry": {"max_retries": 0, "min_training_seconds": 7200, "retryable_reasons": ["NCCL.*timeout"]}},
     Policy(retry=RetryPolicy(0, 7200, ("NCCL.*timeout",)))),
]  # fmt: skip


@pytest.mark.parametrize(("document", "expected"), VALID)
def test_valid_documents(document: dict[str, Any], expected: Policy) -> None:
    assert parse_policy(document) == expected


INVALID: list[tuple[object, str]] = [
    ([], "policy"),
    ("{}", "policy"),
    ({"required_tag": ["project"]}, "policy.required_tag"),
    ({"required_tags": "project"}, "policy.required_tags"),
    ({"required_tags": ["project", ""]}, "policy.required_tags[1]"),
    ({"required_tags": ["x" * 129]}, "policy.required_tags[0]"),
    ({"allowed_instance_types": [3]}, "policy.allowed_instance_types[0]"),
    ({"allowed_role_arns": None}, "policy.allowed_role_arns"),
    ({"max_instance_count": 0}, "policy.max_instance_count"),
    ({"max_instance_count": 2.0}, "policy.max_instance_count"),
    ({"max_runtime_seconds": True}, "policy.max_runtime_seconds"),
    ({"max_runtime_seconds": -1}, "policy.max_runtime_seconds"),
    ({"idle": []}, "policy.idle"),
    ({"idle": {"treshold_percent": 1}}, "policy.idle.treshold_percent"),
    ({"idle": {"threshold_percent": -1}}, "policy.idle.threshold_percent"),
    ({"idle": {"threshold_percent": "1"}}, "policy.idle.threshold_percent"),
    ({"idle": {"threshold_percent": float("nan")}}, "policy.idle.threshold_percent"),
    ({"idle": {"threshold_percent": True}}, "policy.idle.threshold_percent"),
    ({"idle": {"period_seconds": 30}}, "policy.idle.period_seconds"),
    ({"idle": {"period_seconds": 90}}, "policy.idle.period_seconds"),
    ({"idle": {"evaluation_periods": 0}}, "policy.idle.evaluation_periods"),
    ({"idle": {"period_seconds": 60, "evaluation_periods": 1441}}, "policy.idle.evaluation_periods"),
    ({"idle": {"period_seconds": 3600, "evaluation_periods": 169}}, "policy.idle.evaluation_periods"),
    ({"idle": {"enforce_outside_queue": "yes"}}, "policy.idle.enforce_outside_queue"),
    ({"spot_interruption_limit": -1}, "policy.spot_interruption_limit"),
    ({"spot_interruption_limit": None}, "policy.spot_interruption_limit"),
    ({"retry": {"max_retries": -1}}, "policy.retry.max_retries"),
    ({"retry": {"min_training_seconds": 1.5}}, "policy.retry.min_training_seconds"),
    ({"retry": {"retryable_reasons": ["ok", "(unclosed"]}}, "policy.retry.retryable_reasons[1]"),
    ({"retry": {"backoff": 5}}, "policy.retry.backoff"),
]


@pytest.mark.parametrize(("document", "path"), INVALID)
def test_invalid_documents_name_the_key_path(document: object, path: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy(document)

    assert raised.value.path == path
    assert str(raised.value).startswith(f"{path}: ")
    assert isinstance(raised.value, ConfigError)


NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda text: bool(text.strip())
)
PATTERNS = st.sampled_from(["InternalServerError", "NCCL.*timeout", r"^Capacity\b", "(?i)ecc"])


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    period = draw(st.integers(1, 24 * 7)) * 60
    span = 86_400 if period < 3600 else 604_800
    return Policy(
        required_tags=tuple(draw(st.lists(NAMES, max_size=3))),
        allowed_instance_types=tuple(draw(st.lists(NAMES, max_size=3))),
        max_instance_count=draw(st.none() | st.integers(1, 10_000)),
        max_runtime_seconds=draw(st.none() | st.integers(1, 10**7)),
        allowed_role_arns=tuple(draw(st.lists(NAMES, max_size=2))),
        idle=IdlePolicy(
            threshold_percent=draw(st.floats(0, 800, allow_nan=False)),
            period_seconds=period,
            evaluation_periods=draw(st.integers(1, span // period)),
            enforce_outside_queue=draw(st.booleans()),
        ),
        spot_interruption_limit=draw(st.integers(0, 100)),
        retry=RetryPolicy(
            max_retries=draw(st.integers(0, 10)),
            min_training_seconds=draw(st.integers(0, 10**6)),
            retryable_reasons=tuple(draw(st.lists(PATTERNS, max_size=3))),
        ),
    )


@given(policies())
def test_any_policy_survives_a_json_round_trip(policy: Policy) -> None:
    assert parse_policy(json.loads(json.dumps(policy_document(policy)))) == policy


@given(policies(), st.sampled_from(["policy", "idle", "retry"]), st.text(min_size=1, max_size=10))
def test_an_unknown_key_anywhere_is_refused(policy: Policy, where: str, key: str) -> None:
    document = policy_document(policy)
    target = document if where == "policy" else document[where]
    if key in target:
        return
    target[key] = 1

    with pytest.raises(PolicyError) as raised:
        parse_policy(document)

    assert raised.value.path == (f"policy.{key}" if where == "policy" else f"policy.{where}.{key}")
