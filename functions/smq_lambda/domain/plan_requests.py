"""Which jobs run on a training plan's reserved capacity, decided at submission from the request and
the configured plans (domain/plan_document.py):

- an instance preference that names a plan's ARN in `TrainingPlanArns` is placed in that plan's
  pool (`Placement.pool` `plan:<name>`, `Placement.training_plan_arn` its ARN, so the request sent
  to SageMaker sets `ResourceConfig.TrainingPlanArn`: domain/placement.pinned_request);
- a request pinned to one instance type with `ResourceConfig.TrainingPlanArn` is a flexible job of
  that one preference: listed under, counted in and started in the plan's pool.

An ARN no configured plan has is refused (a 400 naming the field): the queue cannot count capacity it
does not know, and SageMaker would start the job outside every pool the queue counts. So is a
preference or request whose instance type is not the plan's (SageMaker refuses it too), one that
needs more instances than the plan holds (it could never start), and a plan with `InstanceGroups`
(a plan reserves one instance type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from smq_lambda.domain.placement import PREFERENCES_MEMBER, Placement, placements_of
from smq_lambda.domain.plan_document import TrainingPlan
from smq_lambda.errors import InvalidRequest

PLAN_MEMBER = "TrainingPlanArn"


def plan_placements(request: Mapping[str, Any], plans: Mapping[str, TrainingPlan]) -> tuple[Placement, ...]:
    """The placements of a request checked by botocore's shape, those naming a plan in its pool;
    () for a pinned request that names no plan. Raises InvalidRequest naming the field."""
    resources = request["ResourceConfig"]
    by_arn = {plan.arn: plan for plan in plans.values()}
    if PREFERENCES_MEMBER not in resources and PLAN_MEMBER in resources:
        if "InstanceGroups" in resources:
            raise InvalidRequest(
                f"ResourceConfig.{PLAN_MEMBER}",
                f"ResourceConfig.{PLAN_MEMBER} cannot be given with ResourceConfig.InstanceGroups: a training "
                f"plan's pool holds one instance type",
            )
        alone = Placement(
            instance_type=resources.get("InstanceType", ""),
            count=int(resources.get("InstanceCount", 1)),
            training_plan_arns=(resources[PLAN_MEMBER],),
        )
        return (_on_plan(alone, by_arn, f"ResourceConfig.{PLAN_MEMBER}", "ResourceConfig"),)
    return tuple(
        _on_plan(placement, by_arn, f"ResourceConfig.{PREFERENCES_MEMBER}[{index}].TrainingPlanArns[0]", "")
        if placement.training_plan_arns
        else placement
        for index, placement in enumerate(placements_of(request))
    )


def _on_plan(placement: Placement, by_arn: Mapping[str, TrainingPlan], field: str, where: str) -> Placement:
    arn = placement.training_plan_arns[0]
    plan = by_arn.get(arn)
    if plan is None:
        configured = ", ".join(sorted(by_arn)) or "none"
        raise InvalidRequest(
            field, f"{field} {arn} is not a training plan of this queue's configuration (configured: {configured})"
        )
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
    return replace(placement, pool=plan.pool, training_plan_arn=plan.arn)
