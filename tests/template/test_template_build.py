"""What `sam build` packages: the handlers the template names exist, and the Lambda requirements
match the `functions` extra the tests run against."""

from __future__ import annotations

import importlib
import tomllib
from typing import Any

import pytest

from tests.template.template_support import ROOT


def requirement_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("function", ["ApiFunction", "SchedulerFunction", "IdleStopFunction"])
def test_handlers_named_by_the_template_exist(template: dict[str, Any], function: str) -> None:
    properties = {**template["Globals"]["Function"], **template["Resources"][function]["Properties"]}
    assert properties["CodeUri"].rstrip("/") == "functions"
    assert properties["Runtime"] == "python3.12"
    module, attribute = properties["Handler"].rsplit(".", 1)
    assert (ROOT / "functions" / (module.replace(".", "/") + ".py")).is_file()
    assert callable(getattr(importlib.import_module(module), attribute))


def test_lambda_requirements_match_the_functions_extra() -> None:
    with open(ROOT / "pyproject.toml", "rb") as stream:
        extra = tomllib.load(stream)["project"]["optional-dependencies"]["functions"]
    requirements = requirement_lines((ROOT / "functions" / "requirements.txt").read_text(encoding="utf-8"))
    powertools = [line for line in requirements if line.startswith("aws-lambda-powertools")]
    assert powertools == [line for line in extra if line.startswith("aws-lambda-powertools")]
    assert powertools == ["aws-lambda-powertools[tracer]>=3.0,<4"], "no parser: the handlers read events by hand"
    assert not any(line.startswith("sagemaker") for line in requirements)
