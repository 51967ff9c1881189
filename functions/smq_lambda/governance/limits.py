"""Required tags and limits: which requests break the policy, and what happens to a training job
outside the queue that does.

The same check serves both doors. `POST /add-job` refuses a violating request with every violation
at once (so one round trip fixes them all); a training job started directly in SageMaker is checked
when it reports `InProgress` (its first report is `Starting`) and stopped, and the policy topic is
told which job, which rules, and who started it.

A rule that is switched on and cannot see its value (no tags, no `MaxRuntimeInSeconds`, no role)
counts it as broken: the policy is a guard, and what it cannot check it does not let through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from smq_lambda.governance.actions import GovernanceAction, NotifyPolicy, StopOutsideJob, Violation
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.untyped_fields import is_int, member, tag_map

SUBJECT_MAX = 100
"""SNS refuses a longer subject."""
UNKNOWN_CREATOR = (
    "unknown: neither SageMaker's state-change event nor DescribeTrainingJob names the creator; "
    "CloudTrail's CreateTrainingJob record for this job does"
)


def violations(request: Mapping[str, Any], policy: Policy, *, tags: object = None) -> list[Violation]:
    """Every way `request` breaks the policy's tags and limits, in a fixed order (tags, instance
    types, instance count, runtime, role).

    `request` is a CreateTrainingJob request, or a DescribeTrainingJob answer or a state-change event
    detail (the same members); missing or malformed members never raise. `tags` replaces
    `request["Tags"]`: DescribeTrainingJob has none, so pass what ListTags answered.
    """
    return [
        *_missing_tags(tag_map(request.get("Tags") if tags is None else tags), policy),
        *_disallowed_instance_types(request.get("ResourceConfig"), policy),
        *_too_many_instances(request.get("ResourceConfig"), policy),
        *_runtime_over_limit(request.get("StoppingCondition"), policy),
        *_disallowed_role(request.get("RoleArn"), policy),
    ]


def check_outside_job(
    description: Mapping[str, Any], policy: Policy, *, tags: object = None, started_by: str | None = None
) -> list[GovernanceAction]:
    """Stop a running training job the queue did not start if it breaks the policy, and say so on
    the policy topic; nothing for a compliant job or one that is no longer running.

    The caller decides that the job is outside the queue (by its name, never its tags, which anyone
    can set), and passes who created it when it knows (CloudTrail), since SageMaker does not say.
    Every report while it runs gets the same answer; once the stop lands the job reports `Stopping`
    and nothing more is asked for.
    """
    name = description.get("TrainingJobName")
    running = description.get("TrainingJobStatus") == "InProgress" and description.get("SecondaryStatus") != "Stopping"
    if not isinstance(name, str) or not running:
        return []
    found = violations(description, policy, tags=tags)
    if not found:
        return []
    reason = "stopped by the smq policy: " + "; ".join(violation.message for violation in found)
    return [
        StopOutsideJob(name, tuple(found), started_by, reason),
        NotifyPolicy(_subject(name, found), _message(name, description, found, started_by)),
    ]


def _missing_tags(tags: Mapping[str, str], policy: Policy) -> list[Violation]:
    found = []
    for key in policy.required_tags:
        field = f"Tags.{key}"
        if key not in tags:
            found.append(Violation(field, "required_tags", f"{field} is required by the policy (tag key {key!r})"))
        elif not tags[key].strip():
            found.append(Violation(field, "required_tags", f"{field} must have a non-empty value"))
    return found


def _groups(resources: object) -> list[tuple[str, Mapping[str, Any]]]:
    """Each instance group with the path to blame: InstanceGroups when present, else the
    ResourceConfig itself (one homogeneous group)."""
    groups = member(resources, "InstanceGroups")
    if isinstance(groups, list) and groups:
        return [
            (f"ResourceConfig.InstanceGroups[{index}]", group if isinstance(group, Mapping) else {})
            for index, group in enumerate(groups)
        ]
    return [("ResourceConfig", resources if isinstance(resources, Mapping) else {})]


def _preferences(resources: object) -> list[tuple[str, Mapping[str, Any]]] | None:
    """Each preference of a flexible job with the path to blame; None for a job without
    InstancePreferences. The job runs at one of them, so each must keep the limits on its own."""
    preferences = member(resources, "InstancePreferences")
    if not isinstance(preferences, list) or not preferences:
        return None
    return [
        (f"ResourceConfig.InstancePreferences[{index}]", preference if isinstance(preference, Mapping) else {})
        for index, preference in enumerate(preferences)
    ]


def _disallowed_instance_types(resources: object, policy: Policy) -> list[Violation]:
    allowed = policy.allowed_instance_types
    if not allowed:
        return []
    found = []
    for path, group in _preferences(resources) or _groups(resources):
        field, instance_type = f"{path}.InstanceType", group.get("InstanceType")
        if not isinstance(instance_type, str):
            message = f"{field} is required: the policy allows only {', '.join(allowed)}"
            found.append(Violation(field, "allowed_instance_types", message))
        elif instance_type not in allowed:
            message = f"{field} {instance_type} is not an allowed instance type (allowed: {', '.join(allowed)})"
            found.append(Violation(field, "allowed_instance_types", message))
    return found


def _too_many_instances(resources: object, policy: Policy) -> list[Violation]:
    """The limit is on the job's instances all groups together: what it costs while it runs; a
    flexible job's on each preference's count (or the one count in ResourceConfig they share)."""
    limit = policy.max_instance_count
    if limit is None:
        return []
    preferences = _preferences(resources)
    if preferences is None or not any("InstanceCount" in preference for _, preference in preferences):
        return _too_many_in(limit, _groups(resources))
    return [found for preference in preferences for found in _too_many_in(limit, [preference])]


def _too_many_in(limit: int, groups: list[tuple[str, Mapping[str, Any]]]) -> list[Violation]:
    """The limit broken by a job of these groups, all together."""
    total = 0
    for path, group in groups:
        count = group.get("InstanceCount")
        if not is_int(count):
            field = f"{path}.InstanceCount"
            message = f"{field} is required as an integer: the policy allows at most {limit} instances per job"
            return [Violation(field, "max_instance_count", message)]
        total += count
    if total <= limit:
        return []
    field = "ResourceConfig.InstanceGroups" if len(groups) > 1 else f"{groups[0][0]}.InstanceCount"
    message = f"{field}: the job asks for {total} instances; the policy allows at most {limit} per job"
    return [Violation(field, "max_instance_count", message)]


def _runtime_over_limit(stopping: object, policy: Policy) -> list[Violation]:
    limit = policy.max_runtime_seconds
    if limit is None:
        return []
    field = "StoppingCondition.MaxRuntimeInSeconds"
    runtime = member(stopping, "MaxRuntimeInSeconds")
    if not is_int(runtime):
        return [Violation(field, "max_runtime_seconds", f"{field} is required: the policy allows at most {limit} s")]
    if runtime > limit:
        message = f"{field} {runtime} s is over the policy's maximum of {limit} s"
        return [Violation(field, "max_runtime_seconds", message)]
    return []


def _disallowed_role(role: object, policy: Policy) -> list[Violation]:
    allowed = policy.allowed_role_arns
    if not allowed or role in allowed:
        return []
    if not isinstance(role, str):
        return [Violation("RoleArn", "allowed_role_arns", "RoleArn is required: the policy allows only some roles")]
    message = f"RoleArn {role} is not one of the roles the policy allows ({', '.join(allowed)})"
    return [Violation("RoleArn", "allowed_role_arns", message)]


def _printable(text: str) -> str:
    """SNS subjects are ASCII without control characters."""
    return "".join(char if " " <= char <= "~" else "?" for char in text)


def _subject(name: str, found: Sequence[Violation]) -> str:
    rules = sorted({violation.rule for violation in found})
    subject = _printable(f"smq policy: stopped training job {name} ({', '.join(rules)})")
    return subject if len(subject) <= SUBJECT_MAX else subject[: SUBJECT_MAX - 3] + "..."


def _message(name: str, description: Mapping[str, Any], found: Sequence[Violation], started_by: str | None) -> str:
    """Names the execution role too: short of CloudTrail, the role a job runs as is the best lead to
    the team that started it."""
    lines = [
        (
            f"The smq governance policy stopped SageMaker training job {name}, which was started outside the queue, "
            f"because it breaks {len(found)} rule{'s' if len(found) != 1 else ''}:"
        ),
        *(f"- {violation.message} (rule {violation.rule})" for violation in found),
        "",
        f"Started by: {started_by or UNKNOWN_CREATOR}",
    ]
    role, arn = description.get("RoleArn"), description.get("TrainingJobArn")
    if isinstance(role, str):
        lines.append(f"Execution role: {role}")
    if isinstance(arn, str):
        lines.append(f"Training job: {arn}")
    lines.append("To run it, fix the request and submit it through the queue (smq submit or POST /add-job).")
    return "\n".join(lines)
