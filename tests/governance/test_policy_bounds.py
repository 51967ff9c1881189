"""Every number of the governance policy is bounded (issue 19): a value beyond its bound is a
PolicyError naming the key, never an exception of another kind, and never a policy in force."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.bounds import MAX_COUNT, MAX_INSTANCES, MAX_SECONDS
from smq_lambda.governance.policy import PolicyError, parse_policy

HUGE = 10**400
"""An integer JSON allows and no float holds."""


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"max_instance_count": MAX_INSTANCES + 1}, "policy.max_instance_count"),
        ({"max_runtime_seconds": MAX_SECONDS + 1}, "policy.max_runtime_seconds"),
        ({"spot_interruption_limit": MAX_COUNT + 1}, "policy.spot_interruption_limit"),
        ({"retry": {"max_retries": 2**63}}, "policy.retry.max_retries"),
        ({"retry": {"min_training_seconds": 10**15}}, "policy.retry.min_training_seconds"),
        ({"idle": {"threshold_percent": HUGE}}, "policy.idle.threshold_percent"),
        ({"idle": {"threshold_percent": float("nan")}}, "policy.idle.threshold_percent"),
        ({"idle": {"cpu_threshold_percent": HUGE}}, "policy.idle.cpu_threshold_percent"),
        ({"idle": {"evaluation_periods": HUGE}}, "policy.idle.evaluation_periods"),
    ],
)
def test_a_number_beyond_its_bound_is_refused_naming_its_key(document: dict[str, Any], key: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(document)

    assert refused.value.path == key


def test_every_number_at_its_bound_is_accepted() -> None:
    policy = parse_policy(
        {
            "max_instance_count": MAX_INSTANCES,
            "max_runtime_seconds": MAX_SECONDS,
            "spot_interruption_limit": MAX_COUNT,
            "retry": {"max_retries": MAX_COUNT, "min_training_seconds": MAX_SECONDS},
        }
    )

    assert (policy.max_instance_count, policy.retry.min_training_seconds) == (MAX_INSTANCES, MAX_SECONDS)


NUMBERS = st.one_of(
    st.integers(-2, 10),
    st.integers(),
    st.sampled_from([MAX_INSTANCES + 1, MAX_SECONDS + 1, MAX_COUNT + 1, 2**63, HUGE]),
    st.floats(allow_nan=True, allow_infinity=True),
)
KEYS = {
    None: ["max_instance_count", "max_runtime_seconds", "spot_interruption_limit"],
    "idle": [
        "threshold_percent",
        "period_seconds",
        "evaluation_periods",
        "warn_below_percent",
        "warn_evaluation_periods",
        "cpu_threshold_percent",
    ],
    "retry": ["max_retries", "min_training_seconds"],
}


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for section, keys in KEYS.items():
        chosen = {key: draw(NUMBERS) for key in draw(st.lists(st.sampled_from(keys), unique=True))}
        if section is None:
            document.update(chosen)
        elif chosen:
            document[section] = chosen
    return document


@given(document=policies())
def test_any_numbers_give_a_bounded_policy_or_a_policy_error(document: dict[str, Any]) -> None:
    try:
        policy = parse_policy(document)
    except PolicyError:
        return

    assert policy.max_instance_count is None or policy.max_instance_count <= MAX_INSTANCES
    assert policy.max_runtime_seconds is None or policy.max_runtime_seconds <= MAX_SECONDS
    assert policy.spot_interruption_limit <= MAX_COUNT
    assert policy.retry.max_retries <= MAX_COUNT and policy.retry.min_training_seconds <= MAX_SECONDS
