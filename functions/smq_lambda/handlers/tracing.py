"""X-Ray tracing of a handler, only where it traces anything.

The powertools Tracer imports the X-Ray SDK (about 150 ms of every cold start) even when it then
disables itself. So a handler module asks for it here, and gets it only when the powertools rules
would leave it on: inside Lambda (LAMBDA_TASK_ROOT), not under SAM local or Chalice, and not
disabled by POWERTOOLS_TRACE_DISABLED, which the template sets from its `Tracing` parameter.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

Handler = TypeVar("Handler", bound=Callable[..., Any])


def tracing_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """What powertools' Tracer decides about the environment (Tracer._is_tracer_disabled)."""
    if resolve_truthy_env_var_choice(env=env.get("POWERTOOLS_TRACE_DISABLED", "false")):
        return False
    in_emulator = env.get("AWS_SAM_LOCAL") or env.get("AWS_CHALICE_CLI_MODE")
    return bool(env.get("LAMBDA_TASK_ROOT")) and not in_emulator


def traced(handler: Handler) -> Handler:
    """`handler` under the powertools Tracer when tracing is on; `handler` itself otherwise."""
    if not tracing_enabled():
        return handler
    from aws_lambda_powertools import Tracer

    # capture_lambda_handler keeps the handler's signature but is annotated as any callable.
    return cast(Handler, Tracer(service="smq").capture_lambda_handler(handler))
