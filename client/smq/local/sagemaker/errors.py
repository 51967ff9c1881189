"""SageMaker errors as the JSON 1.1 protocol carries them.

The class's `code` goes on the wire as `__type`; botocore turns it into the ClientError code
(and into `client.exceptions.ResourceInUse` etc. where the service model declares one), so
callers written against real SageMaker handle the local service's errors unchanged.
"""

from __future__ import annotations


class ApiError(Exception):
    """An error response: HTTP `status`, `__type` `code`, `Message` text."""

    code = "InternalFailure"
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(ApiError):
    code = "ValidationException"


class ResourceInUse(ApiError):
    code = "ResourceInUse"


class ResourceNotFound(ApiError):
    code = "ResourceNotFound"


class SerializationError(ApiError):
    """The body is not JSON, or a member has the wrong JSON type."""

    code = "SerializationException"


class UnknownOperation(ApiError):
    code = "UnknownOperationException"
