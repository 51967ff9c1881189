"""smq: a priority queue and scheduler for Amazon SageMaker training jobs — the client.

    from smq import QueueTrainingJobSession, TrainingQueue

SageMaker Python SDK v2: `estimator.fit()` with `sagemaker_session=QueueTrainingJobSession(...)`.
SDK v3: `TrainingQueue().train(model_trainer)` in place of `model_trainer.train()`.

No SDK is imported here: the `smq` CLI and `TrainingQueue` with request dicts need none, and
either major may be the one installed. `QueueTrainingJobSession` (v2 only) is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smq.api_client import SmqApiClient
from smq.errors import (
    AccessDenied,
    ApiUnreachable,
    ApiUrlNotFound,
    InvalidRequest,
    JobConflict,
    JobNotFound,
    PayloadTooLarge,
    SmqApiError,
    SmqError,
)
from smq.queue import QueuedJob, TrainingQueue

if TYPE_CHECKING:
    from smq.session import QueueTrainingJobSession

__all__ = [
    "AccessDenied",
    "ApiUnreachable",
    "ApiUrlNotFound",
    "InvalidRequest",
    "JobConflict",
    "JobNotFound",
    "PayloadTooLarge",
    "QueueTrainingJobSession",
    "QueuedJob",
    "SmqApiClient",
    "SmqApiError",
    "SmqError",
    "TrainingQueue",
]


def __getattr__(name: str) -> Any:
    if name == "QueueTrainingJobSession":
        from smq.session import QueueTrainingJobSession

        return QueueTrainingJobSession
    raise AttributeError(f"module 'smq' has no attribute {name!r}")
