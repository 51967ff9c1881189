"""The Lambda context the local stack hands to the handlers: what powertools reads from a real one."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

REGION = "us-east-1"
ACCOUNT = "000000000000"


@dataclass
class LambdaContext:
    function_name: str
    timeout_seconds: float = 180.0
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = ""
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self.invoked_function_arn = self.invoked_function_arn or (
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"
        )
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Read by powertools Idempotency to expire a record left in progress by a timed-out call."""
        return max(int((self._deadline - time.monotonic()) * 1000), 0)

    @classmethod
    def for_function(cls, name: str) -> LambdaContext:
        return cls(function_name=name)
