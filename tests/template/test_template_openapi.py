"""openapi.yaml is a valid OpenAPI 3.0 document describing exactly the contract's API, and its
request schema agrees with SageMaker's own CreateTrainingJob model."""

from __future__ import annotations

import re
from typing import Any

import botocore.session
import pytest
from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate

CONTRACT = {
    ("/add-job", "post"): ("Job", {"202", "400", "403", "409", "413"}),
    ("/jobs", "get"): ("JobList", {"200", "400", "403"}),
    ("/jobs/{name}", "get"): ("Job", {"200", "403", "404"}),
    ("/jobs/{name}", "patch"): ("Job", {"200", "400", "403", "404", "409", "413"}),
    ("/jobs/{name}", "delete"): ("Job", {"202", "403", "404", "409"}),
    ("/pools", "get"): ("PoolList", {"200", "403"}),
}
"""(path, method) -> (schema of the success answer, every status code it documents)."""

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
JOB = {
    "name": "resnet-a",
    "state": "pending",
    "priority": 5,
    "pool": "ml.g5.xlarge",
    "instances": 2,
    "demand": {"ml.g5.xlarge": 2},
    "owner": "arn:aws:iam::111122223333:user/alice",
    "submitted_at": "2024-05-01T12:00:00Z",
    "updated_at": "2024-05-01T12:00:03.250Z",
    "reason": "waiting for 2 instances of ml.g5.xlarge",
    "position": 1,
    "training_job_name": None,
    "attempts": [
        {
            "number": 1,
            "training_job_name": "resnet-a-7f3c2a-1",
            "started_at": "2024-05-01T12:00:05Z",
            "ended_at": "2024-05-01T12:30:00Z",
            "outcome": "preempted",
            "reason": "preempted by resnet-b (priority 9)",
        }
    ],
}
REQUEST = {
    "TrainingJobName": "resnet-a",
    "RoleArn": "arn:aws:iam::111122223333:role/TrainingRoleA",
    "AlgorithmSpecification": {"TrainingImage": "123.dkr.ecr.us-east-1.amazonaws.com/t:1", "TrainingInputMode": "File"},
    "OutputDataConfig": {"S3OutputPath": "s3://amzn-s3-demo-bucket/out"},
    "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "HyperParameters": {"epochs": "3"},
    "Tags": [{"Key": "priority", "Value": "5"}],
}


def validator(doc: dict[str, Any], schema_name: str) -> OAS30Validator:
    # The components ride along so that the schema's $refs resolve inside one document.
    return OAS30Validator(
        {"$ref": f"#/components/schemas/{schema_name}", "components": doc["components"]},
        format_checker=OAS30Validator.FORMAT_CHECKER,
    )


def operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (path, method): operation
        for path, item in doc["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def test_document_is_valid_openapi_3_0(openapi_doc: dict[str, Any]) -> None:
    validate(openapi_doc)
    assert openapi_doc["openapi"].startswith("3.0.")


def test_paths_and_methods_are_exactly_the_contracts(openapi_doc: dict[str, Any]) -> None:
    assert set(operations(openapi_doc)) == set(CONTRACT)


@pytest.mark.parametrize(("path", "method"), sorted(CONTRACT))
def test_every_answer_of_the_contract_is_documented(openapi_doc: dict[str, Any], path: str, method: str) -> None:
    components = openapi_doc["components"]["responses"]
    success_schema, codes = CONTRACT[(path, method)]
    responses = operations(openapi_doc)[(path, method)]["responses"]
    assert set(responses) == codes
    for code, response in responses.items():
        if "$ref" in response:
            response = components[response["$ref"].rsplit("/", 1)[1]]
        schema = response["content"]["application/json"]["schema"]["$ref"]
        expected = success_schema if code.startswith("2") else "Error"
        assert schema == f"#/components/schemas/{expected}", (path, method, code)


def test_list_query_parameters(openapi_doc: dict[str, Any]) -> None:
    parameters = {p["name"]: p for p in openapi_doc["paths"]["/jobs"]["get"]["parameters"]}
    assert set(parameters) == {"state", "pool", "owner", "limit", "next_token"}
    assert all(p["in"] == "query" and not p["required"] for p in parameters.values())
    assert parameters["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
    state = re.compile(parameters["state"]["schema"]["pattern"])
    assert state.match("all") and state.match("pending,running") and state.match("cancelled")
    assert not state.match("pending,") and not state.match("queued")


def test_schemas_of_the_contract_exist(openapi_doc: dict[str, Any]) -> None:
    assert {
        "Job",
        "Attempt",
        "JobList",
        "Pool",
        "PoolList",
        "Error",
        "PriorityChange",
        "CreateTrainingJobRequest",
    } <= set(openapi_doc["components"]["schemas"])


def test_contract_shapes_validate(openapi_doc: dict[str, Any]) -> None:
    validator(openapi_doc, "Job").validate(JOB)
    validator(openapi_doc, "JobList").validate({"jobs": [JOB, {**JOB, "position": None}], "next_token": None})
    validator(openapi_doc, "PoolList").validate(
        {"pools": [{"pool": "ml.g5.xlarge", "capacity": 2, "in_use": 2, "pending": 3}]}
    )
    validator(openapi_doc, "Error").validate({"message": "priority must be an integer", "field": "priority"})
    validator(openapi_doc, "PriorityChange").validate({"priority": -1000000})
    validator(openapi_doc, "CreateTrainingJobRequest").validate(REQUEST)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ("Job", {**JOB, "state": "queued"}),
        ("Job", {key: item for key, item in JOB.items() if key != "attempts"}),
        ("Job", {**JOB, "priority": 1000001}),
        ("Job", {**JOB, "submitted_at": "yesterday"}),
        ("Error", {"message": "no field"}),
        ("PriorityChange", {"priority": "5"}),
        ("CreateTrainingJobRequest", {key: item for key, item in REQUEST.items() if key != "ResourceConfig"}),
        ("CreateTrainingJobRequest", {**REQUEST, "TrainingJobName": "bad_name"}),
        ("CreateTrainingJobRequest", {**REQUEST, "TrainingJobName": "a" * 64}),
    ],
)
def test_shapes_outside_the_contract_are_rejected(openapi_doc: dict[str, Any], schema: str, instance: Any) -> None:
    with pytest.raises(ValidationError):
        validator(openapi_doc, schema).validate(instance)


def test_request_schema_agrees_with_sagemakers_model(openapi_doc: dict[str, Any]) -> None:
    request = openapi_doc["components"]["schemas"]["CreateTrainingJobRequest"]
    shape = (
        botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob").input_shape
    )
    assert set(request["required"]) == {
        "TrainingJobName",
        "RoleArn",
        "AlgorithmSpecification",
        "OutputDataConfig",
        "ResourceConfig",
        "StoppingCondition",
    }
    assert set(request["properties"]) <= set(shape.members)
    assert set(shape.required_members) <= set(request["required"])
    assert request["additionalProperties"] is True
    name = shape.members["TrainingJobName"]
    assert request["properties"]["TrainingJobName"]["maxLength"] == name.metadata["max"]
    assert request["properties"]["TrainingJobName"]["pattern"] == f"^{name.metadata['pattern']}$"
