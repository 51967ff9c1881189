"""The template's functions run in this process over moto, each with the environment the template
gives it and the clients its real handler builds, while every AWS call they make is recorded.

The stack's resources come from template.yaml through the local stack's own code (StackResources),
so the ARNs the calls name are the ones the template's policies resolve to. moto has no
StopTrainingJob, no UpdateTrainingJob and no Price List; the recorder answers them itself: the two
training job calls with an answer the functions never read, the Price List with one training price
of the stack's region.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from moto import mock_aws
from smq.local.stack_functions import reset_handler_caches
from smq.local.stack_options import ACCOUNT, REGION, LocalStackOptions
from smq.local.stack_resources import PSEUDO_PARAMETERS, StackResources
from smq.local.template import load_template

from tests.support.aws import TEMPLATE_PATH, use_test_credentials
from tests.template.iam_policy import Arns, Call, FunctionPolicy

ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"
"""The stack's one allowed training role (the AllowedRoleArns parameter)."""


class RecordedStack:
    """The template's resources in moto and the functions' calls, per function (logical id)."""

    def __init__(self, resources: StackResources, monkeypatch: pytest.MonkeyPatch) -> None:
        self.resources = resources
        self._monkeypatch = monkeypatch
        self.calls: dict[str, list[Call]] = {}
        self._running: str | None = None
        self.arns = Arns(REGION, ACCOUNT)

    def policy(self, function: str) -> FunctionPolicy:
        return FunctionPolicy.of(
            self.resources.template,
            function,
            self.resources.resolve,
            parameter_overrides=self.parameters,
            pseudo_parameters=PSEUDO_PARAMETERS,
        )

    @property
    def parameters(self) -> dict[str, str]:
        return {**self.resources.parameter_overrides(), "AllowedRoleArns": ROLE}

    @contextmanager
    def running(self, function: str) -> Iterator[None]:
        """Calls made in the block are `function`'s; its environment is the template's for it, and
        its handler builds its clients anew (a cold start)."""
        environment = self.resources.function_environment(function)
        for name, value in environment.items():
            self._monkeypatch.setenv(name, value)
        reset_handler_caches()
        self._running = function
        try:
            yield
        finally:
            self._running = None
            for name in environment:
                self._monkeypatch.delenv(name)
            reset_handler_caches()

    def record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if self._running is not None:
            service = model.service_model.service_name
            self.calls.setdefault(self._running, []).append(Call(service, model.name, dict(params)))

    @staticmethod
    def unread_answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return AWSResponse("", 200, {}, None), {}

    @staticmethod
    def get_products(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        entry = {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {"instanceName": "ml.p3.2xlarge", "regionCode": REGION, "platoinstancetype": "Training"},
                "sku": "TESTSKU",
            },
            "terms": {
                "OnDemand": {
                    "TESTSKU.T": {"priceDimensions": {"TESTSKU.T.R": {"unit": "Hrs", "pricePerUnit": {"USD": "3.825"}}}}
                }
            },
        }
        return AWSResponse("", 200, {}, None), {"FormatVersion": "aws_v1", "PriceList": [json.dumps(entry)]}


@contextmanager
def recorded_stack(options: LocalStackOptions) -> Iterator[RecordedStack]:
    """The template's resources in moto with `options`; boto3's default session records calls."""
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        use_test_credentials(monkeypatch)
        monkeypatch.setenv("MOTO_ACCOUNT_ID", ACCOUNT)  # the account the template's ARNs name
        parameters = {"AllowedRoleArns": ROLE}
        resources = StackResources(load_template(TEMPLATE_PATH), options, _setup_client)
        monkeypatch.setattr(resources, "parameter_overrides", _with(resources.parameter_overrides, parameters))
        resources.create()
        stack = RecordedStack(resources, monkeypatch)
        boto3.setup_default_session()
        events = boto3.DEFAULT_SESSION.events  # type: ignore[union-attr]
        events.register("before-parameter-build", stack.record)
        events.register("before-call.sagemaker.StopTrainingJob", stack.unread_answer)
        events.register("before-call.sagemaker.UpdateTrainingJob", stack.unread_answer)
        events.register("before-call.pricing.GetProducts", stack.get_products)
        try:
            yield stack
        finally:
            boto3.DEFAULT_SESSION = None
            reset_handler_caches()


def _with(overrides: Any, extra: dict[str, str]) -> Any:
    return lambda: {**overrides(), **extra}


def _setup_client(service: str) -> Any:
    """The setup's own calls, never recorded: a session of their own."""
    return boto3.session.Session().client(service)
