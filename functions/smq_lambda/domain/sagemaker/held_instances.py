"""The instances a training job holds, read from DescribeTrainingJob's answer or its state-change
event's detail (they share the shape): tolerant, because a job started outside the queue may have
any shape SageMaker documents."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeldInstances:
    """What a DescribeTrainingJob answer says about the instances a training job holds."""

    counts: dict[str, int]
    """Instances per instance type, from the parts of ResourceConfig that could be read."""
    unreadable: tuple[str, ...] = ()
    """The parts that could not be read, for the log."""
    final: bool = True
    """False while SageMaker has still to pick an instance type from InstancePreferences: the answer
    changes later, so it must not be remembered."""


def held_instances(description: Mapping[str, Any]) -> HeldInstances:
    """The instances a training job holds, by the ResourceConfig shapes DescribeTrainingJob documents:
    InstanceType and InstanceCount; InstanceGroups (a heterogeneous cluster); InstancePreferences with
    the SelectedInstanceType and SelectedInstanceCount SageMaker fills in once it has chosen. Other
    shapes (no ResourceConfig, as for serverless training) count nothing and are reported unreadable.
    """
    resources = description.get("ResourceConfig")
    if not isinstance(resources, Mapping):
        return HeldInstances({}, ("no ResourceConfig",))
    if resources.get("InstanceGroups"):
        return _groups(resources["InstanceGroups"])
    if resources.get("InstanceType"):
        return _one_type(resources["InstanceType"], resources.get("InstanceCount", 1), "ResourceConfig")
    if resources.get("InstancePreferences"):
        return _selected(resources)
    return HeldInstances({}, ("ResourceConfig names no instance type",))


def _groups(groups: Any) -> HeldInstances:
    if not isinstance(groups, list):
        return HeldInstances({}, ("ResourceConfig.InstanceGroups is not a list",))
    counts: dict[str, int] = {}
    unreadable: list[str] = []
    for index, group in enumerate(groups):
        where = f"ResourceConfig.InstanceGroups[{index}]"
        if not isinstance(group, Mapping):
            unreadable.append(f"{where} is not an object")
            continue
        read = _one_type(group.get("InstanceType"), group.get("InstanceCount"), where)
        unreadable.extend(read.unreadable)
        for instance_type, count in read.counts.items():
            counts[instance_type] = counts.get(instance_type, 0) + count
    return HeldInstances(counts, tuple(unreadable))


def _selected(resources: Mapping[str, Any]) -> HeldInstances:
    """InstancePreferences: nothing is held until SageMaker names the type it selected. Its count is
    SelectedInstanceCount, else the count the request gave (per preference or for all of them)."""
    selected = resources.get("SelectedInstanceType")
    if not selected:
        return HeldInstances({}, final=False)
    preferences = resources["InstancePreferences"]
    listed = preferences if isinstance(preferences, list) else []
    chosen = next((p for p in listed if isinstance(p, Mapping) and p.get("InstanceType") == selected), {})
    count = resources.get("SelectedInstanceCount", chosen.get("InstanceCount", resources.get("InstanceCount")))
    return _one_type(selected, count, "ResourceConfig.SelectedInstanceType")


def _one_type(instance_type: Any, count: Any, where: str) -> HeldInstances:
    if not isinstance(instance_type, str) or not instance_type:
        return HeldInstances({}, (f"{where} has no InstanceType",))
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return HeldInstances({}, (f"{where} has no readable InstanceCount for {instance_type}: {count!r}",))
    return HeldInstances({instance_type: count})
