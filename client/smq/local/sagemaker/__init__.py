"""A local SageMaker training service: the real wire protocol, local processes, EventBridge events.

See "The local SageMaker training service" in docs/local-stack.md for the container contract it implements.
"""

from __future__ import annotations

from smq.local.sagemaker.errors import ApiError, ResourceInUse, ResourceNotFound, ValidationError
from smq.local.sagemaker.runtime import PhaseTimings
from smq.local.sagemaker.server import FaultRejected, request_fault
from smq.local.sagemaker.service import LocalSageMaker

__all__ = [
    "ApiError",
    "FaultRejected",
    "LocalSageMaker",
    "PhaseTimings",
    "ResourceInUse",
    "ResourceNotFound",
    "ValidationError",
    "request_fault",
]
