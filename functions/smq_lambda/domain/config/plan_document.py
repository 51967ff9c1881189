"""The `training_plans` section of the configuration document (see config_document.py for the whole):
SageMaker training plans, each reserved capacity of one instance type for time windows, as pools.

    "training_plans": {"p5-reserved": {
        "arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved",
        "instance_type": "ml.p5.48xlarge", "instances": 4,
        "windows": [{"start": "2026-12-01T00:00:00Z", "end": "2026-12-08T00:00:00Z"}],
        "stop_margin_s": 900}}

Each plan is the pool `plan:<name>` (PLAN_POOL_PREFIX): the ledger, GET /pools, `smq pools` and the
metrics name it so. A job runs there when its instance preference names the plan's ARN in
`TrainingPlanArns`, or its request names it in `ResourceConfig.TrainingPlanArn`
(domain/placements/plan_requests.py). The pool holds `instances` while a window is *open* (from its `start`
to `stop_margin_s` before its `end`) and none otherwise: nothing starts in the last `stop_margin_s`
of a window, and the jobs running there are stopped then, so they checkpoint before SageMaker ends
the reservation (scheduling/plan_windows.py, scheduling/plan_stops.py).

Rules: a plan's name is a SageMaker training plan name (1 to 64 letters, digits and hyphens); `arn`
matches botocore's TrainingPlanArn and no two plans share one; `instance_type` is a training
instance type (`ml.` ...); `instances` from 1 to MAX_INSTANCES; 1 to MAX_WINDOWS windows, each an
ISO 8601 time with its offset (`Z`), `end` after `start`, in order and not overlapping, each longer
than the stop margin; `stop_margin_s` from 0 to MAX_STOP_MARGIN_S (default DEFAULT_STOP_MARGIN_S).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.domain.config.bounds import MAX_INSTANCES
from smq_lambda.domain.config.section_parser import SectionParser

PLAN_POOL_PREFIX = "plan:"
PLAN_KEYS = ("arn", "instance_type", "instances", "windows", "stop_margin_s")
WINDOW_KEYS = ("start", "end")
DEFAULT_STOP_MARGIN_S = 900
MAX_STOP_MARGIN_S = 86_400
"""A day: far more than any checkpoint takes."""
MAX_WINDOWS = 100
"""Per plan; each is a boundary a start estimate's replay passes at."""
PLAN_NAME_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
"""SageMaker's TrainingPlanName."""
PLAN_ARN_PATTERN = re.compile(r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*")
PLAN_ARN_LENGTH = (50, 2048)
"""botocore's TrainingPlanArn: its pattern and length."""
INSTANCE_TYPE_PATTERN = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9-]+")


@dataclass(frozen=True)
class PlanWindow:
    start: datetime
    end: datetime


@dataclass(frozen=True)
class TrainingPlan:
    name: str
    arn: str
    instance_type: str
    instances: int
    windows: tuple[PlanWindow, ...]
    stop_margin_s: int = DEFAULT_STOP_MARGIN_S

    @property
    def pool(self) -> str:
        return PLAN_POOL_PREFIX + self.name

    def closes(self, window: PlanWindow) -> datetime:
        """When `window` stops taking starts and its jobs are stopped: `stop_margin_s` before its end."""
        return window.end - timedelta(seconds=self.stop_margin_s)

    def open_window(self, now: datetime) -> PlanWindow | None:
        """The window open at `now` (started, and more than the stop margin before its end)."""
        return next((window for window in self.windows if window.start <= now < self.closes(window)), None)

    def next_window(self, now: datetime) -> PlanWindow | None:
        """The window open at `now`, else the next to open; None when no window takes a start from
        `now` on, so a job for the plan could never start."""
        return next((window for window in self.windows if now < self.closes(window)), None)

    def next_opening(self, now: datetime) -> datetime | None:
        """When the first window that opens after `now` does; None when none does."""
        return next((window.start for window in self.windows if window.start > now), None)

    def boundaries(self) -> list[datetime]:
        """Every moment the plan's pool opens or closes."""
        return [moment for window in self.windows for moment in (window.start, self.closes(window))]


def utc_text(moment: datetime) -> str:
    """`moment` as the configuration document writes it, in UTC (2026-12-01T00:00:00Z)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plan_pools(plans: Mapping[str, TrainingPlan]) -> dict[str, int]:
    """The pool of each plan, holding its instances (while a window is open)."""
    return {plan.pool: plan.instances for plan in plans.values()}


def with_plan_pools(
    pools: Mapping[str, int], plans: Mapping[str, TrainingPlan], parser: SectionParser
) -> dict[str, int]:
    """`pools` and the pool of each plan; a pool of `pools` named like a plan's is refused."""
    for pool in pools:
        if pool.startswith(PLAN_POOL_PREFIX):
            raise parser.fail(f"pools.{pool}", "names a training plan's pool: declare the plan under training_plans")
    return {**pools, **plan_pools(plans)}


def parse_training_plans(value: Any, parser: SectionParser) -> dict[str, TrainingPlan]:
    plans: dict[str, TrainingPlan] = {}
    arns: dict[str, str] = {}
    for name, member in parser.section(value, "training_plans", "of training plan name to plan").items():
        path = f"training_plans.{name}"
        if not PLAN_NAME_PATTERN.fullmatch(name):
            raise parser.fail(path, "a training plan name has 1 to 64 letters, digits and hyphens (SageMaker's)")
        plan = _plan(name, member, path, parser)
        if plan.arn in arns:
            raise parser.fail(f"{path}.arn", f"{plan.arn} is also the ARN of training_plans.{arns[plan.arn]}")
        arns[plan.arn] = name
        plans[name] = plan
    return plans


def _plan(name: str, value: Any, path: str, parser: SectionParser) -> TrainingPlan:
    members = parser.section(value, path, "with arn, instance_type, instances, windows and stop_margin_s")
    parser.known(members, path, PLAN_KEYS)
    for key in ("arn", "instance_type", "instances", "windows"):
        if key not in members:
            raise parser.fail(f"{path}.{key}", "is required in a training plan")
    arn, instance_type = members["arn"], members["instance_type"]
    low, high = PLAN_ARN_LENGTH
    if not isinstance(arn, str) or not low <= len(arn) <= high or not PLAN_ARN_PATTERN.fullmatch(arn):
        raise parser.fail(
            f"{path}.arn",
            f"must be a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>, {low} to "
            f"{high} characters), not {arn!r}",
        )
    if not isinstance(instance_type, str) or not INSTANCE_TYPE_PATTERN.fullmatch(instance_type):
        raise parser.fail(
            f"{path}.instance_type", f"must be a training instance type (ml.p5.48xlarge), not {instance_type!r}"
        )
    stop_margin_s = parser.count(
        members.get("stop_margin_s", DEFAULT_STOP_MARGIN_S),
        f"{path}.stop_margin_s",
        maximum=MAX_STOP_MARGIN_S,
        unit="seconds (a day)",
    )
    return TrainingPlan(
        name=name,
        arn=arn,
        instance_type=instance_type,
        instances=parser.count(
            members["instances"], f"{path}.instances", minimum=1, maximum=MAX_INSTANCES, unit="instances"
        ),
        windows=_windows(members["windows"], f"{path}.windows", stop_margin_s, parser),
        stop_margin_s=stop_margin_s,
    )


def _windows(value: Any, path: str, stop_margin_s: int, parser: SectionParser) -> tuple[PlanWindow, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_WINDOWS:
        raise parser.fail(path, f"must be a JSON array of 1 to {MAX_WINDOWS} windows, each with start and end")
    windows: list[PlanWindow] = []
    for index, member in enumerate(value):
        at = f"{path}[{index}]"
        members = parser.section(member, at, "with start and end")
        parser.known(members, at, WINDOW_KEYS)
        window = PlanWindow(
            start=_moment(members.get("start"), f"{at}.start", parser),
            end=_moment(members.get("end"), f"{at}.end", parser),
        )
        if window.end <= window.start:
            raise parser.fail(f"{at}.end", "must be after its start")
        if (window.end - window.start).total_seconds() <= stop_margin_s:
            raise parser.fail(at, f"lasts no longer than the stop margin ({stop_margin_s} s): no job could start in it")
        if windows and window.start < windows[-1].end:
            raise parser.fail(
                f"{at}.start", f"must not be before the end of the window before it ({windows[-1].end.isoformat()})"
            )
        windows.append(window)
    return tuple(windows)


def _moment(value: Any, path: str, parser: SectionParser) -> datetime:
    shape = "an ISO 8601 time with its offset (2026-12-01T00:00:00Z)"
    if not isinstance(value, str):
        raise parser.fail(path, f"is required: {shape}" if value is None else f"must be {shape}, not {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise parser.fail(path, f"must be {shape}, not {value!r}") from None
    if moment.tzinfo is None:
        raise parser.fail(path, f"must be {shape}: {value!r} has no offset")
    return moment
