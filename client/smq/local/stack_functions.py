"""The template's functions, run in this process as Lambda runs them: each handler imported at its
first invocation (a cold start), one function never run twice at once, each with the credentials of
its own role (stack_roles.py), and all of them in one environment, this process's."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from typing import Any

from smq.local.event_router import Handler
from smq.local.stack_roles import running_as


def template_handler(handler: str) -> Handler:
    """The function a template's `Handler` names, imported when it is first invoked (as Lambda
    imports it at a cold start)."""
    module, _, name = handler.rpartition(".")

    def invoke(event: dict[str, Any], context: Any) -> Any:
        return getattr(importlib.import_module(module), name)(event, context)

    return invoke


def reset_handler_caches() -> None:
    """Handlers build their clients once per cold start; a new stack is a new cold start."""
    from smq_lambda.handlers import api, aws_clients, composition

    aws_clients.client.cache_clear()
    for builder in (
        composition.default_scheduler,
        composition.default_outside_jobs,
        composition.default_policy,
        composition.default_idle_stop,
        composition.default_refresh,
        api.default_app,
    ):
        builder.cache_clear()


def as_function(function: str, invoke: Handler) -> Handler:
    """`invoke`, its AWS calls made with the credentials of `function`'s role (a logical id)."""

    def with_role(event: dict[str, Any], context: Any) -> Any:
        with running_as(function):
            return invoke(event, context)

    return with_role


def api_handler(event: dict[str, Any], context: Any) -> Any:
    """The API function's handler, imported at its first request."""
    from smq_lambda.handlers import api

    return api.handler(event, context)


class InProcessFunctions:
    """One lock per function, and the process environment the functions run in."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        """One per function: its event sources and routers never run it twice at once."""
        self._saved_environ: dict[str, str | None] = {}

    def serialized(self, function: str, handler: str) -> Handler:
        """The Handler the template names for `function`, never run twice at once: everything that
        invokes one function (its queue's poller, a router) takes the same lock."""
        invoke = as_function(function, template_handler(handler))
        lock = self._locks.setdefault(function, threading.Lock())

        def serialized(event: dict[str, Any], context: Any) -> Any:
            with lock:
                return invoke(event, context)

        return serialized

    def enter_environment(self, environment: Mapping[str, str], *, verbose: bool) -> None:
        """Every handler runs in this process, so their environment is this process's (quiet
        powertools unless `verbose`)."""
        environment = dict(environment)
        if not verbose:
            environment["POWERTOOLS_METRICS_DISABLED"] = "true"
            environment["POWERTOOLS_LOG_LEVEL"] = "WARNING"
        for key, value in environment.items():
            self._saved_environ.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        reset_handler_caches()

    def leave_environment(self) -> None:
        for key, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_environ.clear()
        reset_handler_caches()
