"""The submission rules for a request's tags: the tags the queue reserves, and the values of those it
reads (priority, team, expected duration, family, budget override, spot only). Each error names the
tag and the rule it broke; see service/submission.py for the rest of the rules."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from smq_lambda.domain.access.access import AccessPolicy
from smq_lambda.domain.costs.budgets import BUDGET_OVERRIDE_TAG, BUDGET_OVERRIDE_VALUE
from smq_lambda.domain.jobs.durations import EXPECTED_DURATION_TAG, parse_duration
from smq_lambda.domain.jobs.model import ATTEMPT_TAG, JOB_TAG, MAX_PRIORITY, MIN_PRIORITY, PRIORITY_TAG, STACK_TAG, Job
from smq_lambda.domain.placements.purchase import SPOT_ONLY_TAG, SPOT_ONLY_VALUE
from smq_lambda.domain.sagemaker.instance_preferences import PREFERENCES_TAG
from smq_lambda.domain.sagemaker.request_shape import CREATE_TRAINING_JOB, input_shape
from smq_lambda.errors import AccessDenied, InvalidRequest
from smq_lambda.forecast.durations import FAMILY_TAG
from smq_lambda.governance.idle_scope import EXEMPT_TAG
from smq_lambda.scheduling.snapshot import SchedulerConfig

RESERVED_TAG_PREFIX = "smq:"
"""The queue tags every attempt with `smq:job`, `smq:attempt` and `smq:stack`, and drops a request's
own tags under this prefix when it starts one (adapters/sagemaker.py), so they are refused here
rather than lost; except `smq:expected-duration`, `smq:family`, `smq:idle-exempt`,
`smq:budget-override`, `smq:instance-preferences` and `smq:spot-only`, which the queue reads
(domain/jobs/durations.py, forecast/durations.py, governance/idle_scope.py, domain/costs/budgets.py,
domain/sagemaker/instance_preferences.py, domain/placements/purchase.py)."""
READ_RESERVED_TAGS = (
    EXPECTED_DURATION_TAG,
    FAMILY_TAG,
    EXEMPT_TAG,
    BUDGET_OVERRIDE_TAG,
    PREFERENCES_TAG,
    SPOT_ONLY_TAG,
)
QUEUE_TAGS = (JOB_TAG, ATTEMPT_TAG, STACK_TAG)
INTEGER_PATTERN = re.compile(r"[+-]?[0-9]+")


def broken(field: str, rule: str) -> InvalidRequest:
    """The error for `field` breaking `rule`; the message starts with the field's name."""
    return InvalidRequest(field, f"{field} {rule}")


def priority_in_range(value: int, field: str) -> int:
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise broken(field, f"{value} is out of range: a priority is from {MIN_PRIORITY} to {MAX_PRIORITY}")
    return value


@dataclass(frozen=True)
class RequestTags:
    """What the queue reads from a request's tags."""

    priority: int = 0
    team: str | None = None
    """The value of the configured team tag (`config.teams.tag`); an empty value is no team."""
    expected_duration_s: int | None = None
    family: str | None = None
    """The `smq:family` tag's value; an empty value is no family."""
    budget_override: bool = False


def check_tags(tags: Sequence[Mapping[str, str]], config: SchedulerConfig) -> RequestTags:
    """The request's own tags leave room for the queue's and use no reserved or repeated key; returns the
    priority the `priority` tag sets, the team the team tag names and the expected duration."""
    most = input_shape(CREATE_TRAINING_JOB).members["Tags"].metadata["max"] - len(QUEUE_TAGS)
    if len(tags) > most:
        raise broken(
            "Tags",
            f"may hold at most {most} tags: SageMaker takes {most + len(QUEUE_TAGS)}, and the queue "
            f"adds {', '.join(QUEUE_TAGS)} to every attempt",
        )
    seen: set[str] = set()
    read = RequestTags()
    for index, tag in enumerate(tags):
        key = tag["Key"]
        if key.startswith(RESERVED_TAG_PREFIX) and key not in READ_RESERVED_TAGS:
            raise broken(f"Tags[{index}].Key", f"{key}: tags starting with {RESERVED_TAG_PREFIX} are the queue's own")
        if key in seen:
            raise broken(f"Tags[{index}].Key", f"{key} appears more than once")
        seen.add(key)
        if key == PRIORITY_TAG:
            read = replace(read, priority=_parse_priority_tag(tag["Value"]))
        if key == config.teams.tag:
            read = replace(read, team=_check_team(tag["Value"], config))
        if key == EXPECTED_DURATION_TAG:
            read = replace(read, expected_duration_s=_parse_duration_tag(tag["Value"]))
        if key == FAMILY_TAG:
            read = replace(read, family=tag["Value"] or None)
        if key == BUDGET_OVERRIDE_TAG:
            read = replace(read, budget_override=_check_budget_override_tag(tag["Value"]))
        if key == SPOT_ONLY_TAG and tag["Value"] != SPOT_ONLY_VALUE:
            raise broken(
                f"Tags[{SPOT_ONLY_TAG}]", f"must be {SPOT_ONLY_VALUE!r} (never on demand), not {tag['Value']!r}"
            )
    return read


def _check_team(value: str, config: SchedulerConfig) -> str | None:
    """The team the team tag names (an empty value is no team). With quotas configured it must name a
    configured team exactly: a typo, or "vision " for "vision", would otherwise run unassigned, on what
    the teams leave, while the tagger believes it has the team's quota. Nothing is stripped, so what is
    stored is what SageMaker gets."""
    if not value or not config.teams.enabled or value in config.teams.quotas:
        return value or None
    blank = " (note the leading or trailing whitespace: values are compared exactly)" if value != value.strip() else ""
    raise broken(
        f"Tags[{config.teams.tag}]",
        f"{value!r} is not a configured team{blank}; the {config.teams.tag!r} tag must name one of: "
        f"{', '.join(repr(team) for team in sorted(config.teams.quotas))}, or be left out to run unassigned",
    )


def _parse_priority_tag(value: str) -> int:
    field = f"Tags.{PRIORITY_TAG}"
    if not INTEGER_PATTERN.fullmatch(value):
        raise broken(field, f"must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, not {value!r}")
    return priority_in_range(int(value), field)


def _check_budget_override_tag(value: str) -> bool:
    if value != BUDGET_OVERRIDE_VALUE:
        raise broken(
            f"Tags[{BUDGET_OVERRIDE_TAG}]",
            f"must be {BUDGET_OVERRIDE_VALUE!r} (lets the job start whatever its team's hold budget says), not {value!r}",
        )
    return True


def check_budget_override(job: Job, caller: str, access: AccessPolicy) -> None:
    """Only an admin may let a job through its team's hold budget: AccessDenied for anyone else."""
    if job.budget_override and not access.is_admin(caller):
        field = f"Tags[{BUDGET_OVERRIDE_TAG}]"
        raise AccessDenied(
            field,
            "admin_principals",
            f"{field}: only an admin may let a job start whatever its team's budget says, and {caller} is not one",
        )


def _parse_duration_tag(value: str) -> int:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise broken(f"Tags[{EXPECTED_DURATION_TAG}]", str(exc)) from None
