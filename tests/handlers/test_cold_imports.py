"""What importing a handler module loads, in a fresh interpreter: never the X-Ray SDK (the powertools
Tracer's import) unless the template turns tracing on, and never pydantic (the powertools parser's
models), each of which would add tens of milliseconds to every cold start for nothing. A test of
what is imported, not of how long it takes (bench/ measures that)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
HANDLERS = [
    "smq_lambda.handlers.scheduler",
    "smq_lambda.handlers.api",
    "smq_lambda.handlers.idle",
    "smq_lambda.handlers.price_refresh",
]
HEAVY = ["aws_xray_sdk", "pydantic"]
LAMBDA = {
    "LAMBDA_TASK_ROOT": "/var/task",
    "AWS_LAMBDA_FUNCTION_NAME": "smq-scheduler",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "smq",
    "POWERTOOLS_METRICS_NAMESPACE": "smq",
}
"""What the Lambda runtime and the template's Globals set that changes what an import does."""


def loaded_after_import(modules: list[str], environment: dict[str, str]) -> dict[str, bool]:
    """Which of HEAVY are in sys.modules after importing `modules` in a fresh interpreter."""
    scrubbed = ("SMQ_", "POWERTOOLS_", "AWS_LAMBDA_", "LAMBDA_", "_X_AMZN_", "AWS_XRAY_", "AWS_SAM_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(scrubbed)}
    env.update(environment, PYTHONPATH=str(FUNCTIONS), AWS_DEFAULT_REGION="us-east-1")
    code = (
        "import importlib, json, sys\n"
        f"for module in {modules!r}: importlib.import_module(module)\n"
        f"print(json.dumps({{name: name in sys.modules for name in {HEAVY!r}}}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("module", HANDLERS)
@pytest.mark.parametrize(
    "environment",
    [{**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"}, {}],
    ids=["deployed with the template's default (Tracing Disabled)", "local stack and tests"],
)
def test_a_handler_module_imports_neither_the_xray_sdk_nor_pydantic(module: str, environment: dict[str, str]) -> None:
    assert loaded_after_import([module], environment) == {"aws_xray_sdk": False, "pydantic": False}


def test_with_tracing_on_the_handlers_are_traced_still_without_pydantic() -> None:
    loaded = loaded_after_import(HANDLERS, {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "false"})
    assert loaded == {"aws_xray_sdk": True, "pydantic": False}
