"""Which jobs run on a training plan's reserved capacity, decided at submission from the request and
the configured plans (domain/config/plan_document.py):

- an instance preference that names a plan's ARN in `TrainingPlanArns` is placed in that plan's
  pool (`Placement.pool` `plan:<name>`, `Placement.training_plan_arn` its ARN, so the request sent
  to SageMaker sets `ResourceConfig.TrainingPlanArn`: domain/placement.pinned_request);
- a request pinned to one instance type with `ResourceConfig.TrainingPlanArn` is a flexible job of
  that one preference: listed under, counted in and started in the plan's pool.

An ARN no configured plan has is refused (a 400 naming the field): the queue cannot count capacity it
does not know, and SageMaker would start the job outside every pool the queue counts. So is a
preference or request whose instance type is not the plan's (SageMaker refuses it too), one that
needs more instances than the plan holds, or a plan with no window left to start in (either could
never start), and a plan with `InstanceGroups` (a plan reserves one instance type).

A flexible request (`InstancePreferences`, or the tag that writes it) with the job-level
`ResourceConfig.TrainingPlanArn` is refused too: SageMaker names a flexible job's plans per
preference (`TrainingPlanArns`, "a preference without one uses on-demand capacity", and exclusive
with the job-level member), and a plan reserves one instance type, so a plan for the whole list has
no meaning to map. Left in the request, it would reach SageMaker beside whichever type the queue
chose, uncounted in the plan's pool. Its ARN is checked first, as a pinned request's is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from smq_lambda.domain.config.plan_document import TrainingPlan, utc_text
from smq_lambda.domain.placements.placement import PLAN_MEMBER, Placement, placements_of
from smq_lambda.domain.sagemaker.instance_preferences import PREFERENCES_MEMBER, PREFERENCES_TAG
from smq_lambda.errors import InvalidRequest

PLAN_FIELD = f"ResourceConfig.{PLAN_MEMBER}"


def plan_placements(
    request: Mapping[str, Any], plans: Mapping[str, TrainingPlan], now: datetime
) -> tuple[Placement, ...]:
    """The placements of a request checked by botocore's shape, those naming a plan in its pool;
    () for a pinned request that names no plan. Raises InvalidRequest naming the field."""
    resources = request["ResourceConfig"]
    by_arn = {plan.arn: plan for plan in plans.values()}
    if PREFERENCES_MEMBER in resources and PLAN_MEMBER in resources:
        raise _plan_for_every_preference(_configured(resources[PLAN_MEMBER], by_arn, PLAN_FIELD))
    if PLAN_MEMBER in resources:
        if "InstanceGroups" in resources:
            raise InvalidRequest(
                PLAN_FIELD,
                f"{PLAN_FIELD} cannot be given with ResourceConfig.InstanceGroups: a training plan's pool holds one "
                f"instance type",
            )
        alone = Placement(
            instance_type=resources.get("InstanceType", ""),
            count=int(resources.get("InstanceCount", 1)),
            training_plan_arns=(resources[PLAN_MEMBER],),
        )
        return (_on_plan(alone, by_arn, PLAN_FIELD, "ResourceConfig", now),)
    return tuple(
        _on_plan(placement, by_arn, f"ResourceConfig.{PREFERENCES_MEMBER}[{index}].TrainingPlanArns[0]", "", now)
        if placement.training_plan_arns
        else placement
        for index, placement in enumerate(placements_of(request))
    )


def _configured(arn: str, by_arn: Mapping[str, TrainingPlan], field: str) -> TrainingPlan:
    plan = by_arn.get(arn)
    if plan is None:
        configured = ", ".join(sorted(by_arn)) or "none"
        raise InvalidRequest(
            field, f"{field} {arn} is not a training plan of this queue's configuration (configured: {configured})"
        )
    return plan


def _plan_for_every_preference(plan: TrainingPlan) -> InvalidRequest:
    return InvalidRequest(
        PLAN_FIELD,
        f"{PLAN_FIELD} cannot be given with instance preferences (ResourceConfig.{PREFERENCES_MEMBER} or the "
        f"{PREFERENCES_TAG} tag): a flexible job names a training plan per preference, so list the preferences in "
        f"ResourceConfig.{PREFERENCES_MEMBER} and name training plan {plan.name} in the TrainingPlanArns of its "
        f"{plan.instance_type} preference",
    )


def _on_plan(
    placement: Placement, by_arn: Mapping[str, TrainingPlan], field: str, where: str, now: datetime
) -> Placement:
    plan = _configured(placement.training_plan_arns[0], by_arn, field)
    if placement.instance_type != plan.instance_type:
        type_field = f"{where}.InstanceType" if where else field.removesuffix(".TrainingPlanArns[0]") + ".InstanceType"
        raise InvalidRequest(
            type_field,
            f"{type_field} {placement.instance_type or '(none)'} is not the instance type of training plan "
            f"{plan.name} ({plan.instance_type})",
        )
    if placement.count > plan.instances:
        raise InvalidRequest(
            field,
            f"{field}: the job needs {placement.count} x {plan.instance_type} but training plan {plan.name} holds only "
            f"{plan.instances}, so it could never start there",
        )
    if plan.next_window(now) is None:
        last = plan.windows[-1]
        raise InvalidRequest(
            field,
            f"{field}: training plan {plan.name} has no window left (its last, {utc_text(last.start)} to "
            f"{utc_text(last.end)}, took its last start at {utc_text(plan.closes(last))}, {plan.stop_margin_s} s "
            f"before its end), so the job could never start there",
        )
    return replace(placement, pool=plan.pool, training_plan_arn=plan.arn)
