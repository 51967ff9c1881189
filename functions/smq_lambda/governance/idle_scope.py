"""What the idle rules watch: a training job's hosts, the metric that says whether they work, and
the jobs exempt from the idle stop.

GPUs or CPUs. SageMaker publishes `GPUUtilization` only for hosts with GPUs, so a job on instances
without GPUs was never idle. With `idle.cpu_threshold_percent` set, such a job is watched on
`CPUUtilization` instead (same namespace, `Host` dimension and periods; summed over the host's
vCPUs, 0-400 % for 4). An instance type has GPUs when its series, the letters of its family before
the generation digit (`p` in `ml.p4de.24xlarge`), is one of ACCELERATED_SERIES; a job is watched on
its CPUs only when every instance type it names has none, so a mixed cluster stays on its GPUs.

Exemption. A job tagged `smq:idle-exempt: true` (an interactive debugging job over SSH looks idle)
gets no idle alarm. Only principals `idle.exempt_principals` names may submit one; tags are a claim
anyone can make, so a job outside the queue carrying the tag is watched all the same.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from smq_lambda.domain.access.principals import matches
from smq_lambda.errors import AccessDenied, InvalidRequest
from smq_lambda.governance.policy import IdlePolicy
from smq_lambda.governance.untyped_fields import is_int, member, tag_map

GPU_METRIC = "GPUUtilization"
CPU_METRIC = "CPUUtilization"
ACCELERATED_SERIES = frozenset({"p", "g", "gr", "trn", "inf", "dl"})
"""Instance series with accelerators: P, G and Gr carry NVIDIA GPUs; Trn (Trainium), Inf
(Inferentia) and DL (Gaudi) publish no GPUUtilization, but their CPUs are not where the work is, so
the CPU rule leaves them alone too. New generations (`p6`, `g7`) need no change; a new series does."""
_SERIES = re.compile(r"ml\.([a-z]+)[0-9]")
EXEMPT_TAG = "smq:idle-exempt"
EXEMPT_VALUE = "true"


def host_count(request: Mapping[str, Any]) -> int:
    """Instances of a CreateTrainingJob request or DescribeTrainingJob answer, every group counted:
    the hosts algo-1..algo-N that publish metrics."""
    resources = request.get("ResourceConfig")
    groups = member(resources, "InstanceGroups")
    counts = (
        [member(group, "InstanceCount") for group in groups]
        if isinstance(groups, list) and groups
        else [member(resources, "InstanceCount")]
    )
    return max(sum(count for count in counts if is_int(count) and count > 0), 1)


def instance_types(request: Mapping[str, Any]) -> list[str]:
    """The instance types a request or DescribeTrainingJob answer names (every group); none while
    SageMaker has still to pick one from InstancePreferences."""
    resources = request.get("ResourceConfig")
    groups = member(resources, "InstanceGroups")
    named = [member(group, "InstanceType") for group in groups] if isinstance(groups, list) and groups else []
    named = named or [member(resources, "InstanceType")]
    return [instance_type for instance_type in named if isinstance(instance_type, str)]


def is_cpu_only(instance_type: str) -> bool:
    """Whether instances of this type have no GPU (nor other accelerator); a name of another shape
    is not known to be CPU-only."""
    series = _SERIES.match(instance_type)
    return series is not None and series.group(1) not in ACCELERATED_SERIES


def idle_metric(idle: IdlePolicy, types: Collection[str]) -> str:
    """The metric a job on `types` is watched on: its CPUs' when the CPU rule is on and no type has
    a GPU, else its GPUs'."""
    if idle.cpu_threshold_percent is not None and types and all(is_cpu_only(kind) for kind in types):
        return CPU_METRIC
    return GPU_METRIC


def resource_of(metric: str) -> str:
    """`GPU` or `CPU`: what a metric measures, in reasons and descriptions."""
    return "CPU" if metric == CPU_METRIC else "GPU"


def metric_of(queries: object) -> str:
    """The host metric an alarm's `Metrics` (PutMetricAlarm, DescribeAlarms, or a notification's
    `Trigger`) read; GPU_METRIC when they do not say."""
    for query in queries if isinstance(queries, list) else ():
        name = member(member(member(query, "MetricStat"), "Metric"), "MetricName")
        if name in (GPU_METRIC, CPU_METRIC):
            return str(name)
    return GPU_METRIC


def is_exempt(request: Mapping[str, Any]) -> bool:
    return tag_map(request.get("Tags")).get(EXEMPT_TAG) == EXEMPT_VALUE


def check_exemption(request: Mapping[str, Any], caller: str, idle: IdlePolicy) -> None:
    """At submission: raises InvalidRequest for a tag value other than `true`, AccessDenied when
    `caller` is not one of the principals `idle.exempt_principals` names."""
    tags = tag_map(request.get("Tags"))
    if EXEMPT_TAG not in tags:
        return
    field = f"Tags.{EXEMPT_TAG}"
    if tags[EXEMPT_TAG] != EXEMPT_VALUE:
        raise InvalidRequest(field, f"{field}: must be {EXEMPT_VALUE!r} (exempts the job from the idle stop)")
    if not any(matches(pattern, caller) for pattern in idle.exempt_principals):
        raise AccessDenied(
            field,
            "policy.idle.exempt_principals",
            f"{field}: {caller} may not exempt a job from the idle stop (policy.idle.exempt_principals: "
            f"{', '.join(idle.exempt_principals) or 'none'})",
        )
