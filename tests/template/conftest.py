"""Fixtures for the template tests: the SAM template, the OpenAPI document, and the template as
CloudFormation receives it after `sam package` and the SAM transform, all offline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
import yaml
from smq.local.template import load_template

from tests.template.template_support import OPENAPI_PATH, REQUIRED_PARAMETERS, TEMPLATE_PATH, translate


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


@pytest.fixture(scope="session")
def openapi_doc() -> dict[str, Any]:
    with open(OPENAPI_PATH, encoding="utf-8") as stream:
        return yaml.safe_load(stream)


@pytest.fixture(scope="session")
def translated(template: dict[str, Any]) -> dict[str, Any]:
    return translate(template, REQUIRED_PARAMETERS)


@pytest.fixture(scope="session")
def translate_template(template: dict[str, Any]) -> Callable[[Mapping[str, str]], dict[str, Any]]:
    return lambda parameter_values: translate(template, parameter_values)
