"""What SageMaker says about a training job, in the one shape the queue reads it: from a state-change
event's detail or from DescribeTrainingJob, which share it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smq_lambda.domain.sagemaker.warm_pool_status import WarmPoolStatus


@dataclass(frozen=True)
class TrainingJobStatus:
    """The parts of DescribeTrainingJob (or a state-change event) the queue acts on."""

    name: str
    status: str
    secondary_status: str | None = None
    failure_reason: str | None = None
    tags: Mapping[str, str] | None = None
    end_time: datetime | None = None
    secondary_status_transitions: tuple[Mapping[str, Any], ...] = ()
    """SageMaker's secondary status history, oldest first: the governance rules count spot
    interruptions and training time from it, so a duplicate or late report counts nothing twice."""
    training_time_seconds: int | None = None
    """TrainingTimeInSeconds, once SageMaker reports one (at the end of the training job)."""
    billable_time_seconds: int | None = None
    """BillableTimeInSeconds, once SageMaker reports one (at the end): the seconds it bills per
    instance, already reduced by the managed spot saving."""
    warm_pool: WarmPoolStatus | None = None
    """Its `WarmPoolStatus`, once SageMaker keeps its instances warm (domain/warm/warm_pools.py)."""

    def description(self) -> dict[str, Any]:
        """This report in DescribeTrainingJob's shape, which the governance rules read (an event's
        detail and DescribeTrainingJob share it)."""
        described: dict[str, Any] = {
            "TrainingJobName": self.name,
            "TrainingJobStatus": self.status,
            "SecondaryStatus": self.secondary_status,
            "FailureReason": self.failure_reason,
            "SecondaryStatusTransitions": [dict(transition) for transition in self.secondary_status_transitions],
        }
        if self.training_time_seconds is not None:
            described["TrainingTimeInSeconds"] = self.training_time_seconds
        if self.billable_time_seconds is not None:
            described["BillableTimeInSeconds"] = self.billable_time_seconds
        return described
