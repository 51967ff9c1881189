"""openapi.yaml is a valid OpenAPI 3.0 document describing exactly the contract's API, and its
request schema never contradicts SageMaker's own CreateTrainingJob model (botocore's), which the API
validates every request against.

The schema is kept short on purpose, not generated: it states the constraints a reader needs and the
queue's own rules, and the model stays the one source of truth for the rest."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate
from smq_lambda.domain.sagemaker.request_shape import CREATE_TRAINING_JOB, input_shape
from smq_lambda.service.submission import REQUIRED_MEMBERS

CONTRACT = {
    ("/add-job", "post"): ("Job", {"202", "400", "403", "409", "413", "503"}),
    ("/jobs", "get"): ("JobList", {"200", "400", "403", "503"}),
    ("/jobs/{name}", "get"): ("Job", {"200", "400", "403", "404", "503"}),
    ("/jobs/{name}", "patch"): ("Job", {"200", "400", "403", "404", "409", "413", "503"}),
    ("/jobs/{name}", "delete"): ("Job", {"202", "403", "404", "409", "503"}),
    ("/pools", "get"): ("PoolList", {"200", "403", "503"}),
    ("/quotas", "get"): ("QuotaList", {"200", "403", "503"}),
    ("/attempts", "get"): ("AttemptTimeline", {"200", "400", "403", "503"}),
    ("/costs", "get"): ("CostReport", {"200", "400", "403", "503"}),
}
"""(path, method) -> (schema of the success answer, every status code it documents)."""

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
JOB = {
    "name": "resnet-a",
    "job_id": "0123456789abcdef0123456789abcdef",
    "state": "pending",
    "priority": 5,
    "pool": "ml.g5.xlarge",
    "instances": 2,
    "demand": {"ml.g5.xlarge": 2},
    "owner": "arn:aws:iam::111122223333:user/alice",
    "team": "vision",
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
            "instance_type": "ml.g5.xlarge",
            "instance_count": 2,
            "keep_alive_s": 600,
        }
    ],
    "attempt_count": 1,
    "attempt_outcomes": {"preempted": 1},
    "history": [{"at": "2024-05-01T12:10:00Z", "by": "arn:aws:iam::111122223333:user/alice", "what": "priority 0 → 5"}],
    "earlier_job_ids": [],
    "instance_preferences": [],
    "selected_instance_type": None,
    "selected_instance_count": None,
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


ERROR_SCHEMAS = {("/add-job", "post", "400"): "PolicyRefusal"}
"""Answers whose error body extends Error: add-job lists every policy violation."""


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
        expected = success_schema if code.startswith("2") else ERROR_SCHEMAS.get((path, method, code), "Error")
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
        "TeamQuota",
        "QuotaList",
        "Error",
        "PriorityChange",
        "CreateTrainingJobRequest",
    } <= set(openapi_doc["components"]["schemas"])


def test_contract_shapes_validate(openapi_doc: dict[str, Any]) -> None:
    validator(openapi_doc, "Job").validate(JOB)
    validator(openapi_doc, "JobList").validate({"jobs": [JOB, {**JOB, "position": None}], "next_token": None})
    validator(openapi_doc, "PoolList").validate(
        {
            "pools": [{"pool": "ml.g5.xlarge", "capacity": 2, "in_use": 2, "warm": 1, "pending": 3, "head": "x"}],
            "measured_at": None,
        }
    )
    team = {"team": "vision", "pool": "ml.g5.xlarge", "quota": 2, "in_use": 3, "borrowed": 1, "lent": 0, "pending": 4}
    validator(openapi_doc, "QuotaList").validate(
        {
            "teams": [
                {**team, "sharing": "lend_and_borrow", "borrow_limit": None},
                {**team, "team": "(unassigned)", "quota": None, "sharing": "lend", "borrow_limit": 0},
            ],
            "team_tag": "team",
            "measured_at": "2024-05-01T12:00:00.250Z",
        }
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
        ("Job", {**JOB, "attempts": [{**JOB["attempts"][0], "keep_alive_s": -1}]}),
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


SCHEMA_TYPES = {
    "structure": "object",
    "map": "object",
    "list": "array",
    "string": "string",
    "integer": "integer",
    "long": "integer",
    "boolean": "boolean",
}
"""The OpenAPI type each kind of botocore shape is."""
LOWER_BOUNDS = {
    "string": "minLength",
    "list": "minItems",
    "map": "minProperties",
    "integer": "minimum",
    "long": "minimum",
}
UPPER_BOUNDS = {
    "string": "maxLength",
    "list": "maxItems",
    "map": "maxProperties",
    "integer": "maximum",
    "long": "maximum",
}


def disagreements(schema: dict[str, Any], shape: Any, doc: dict[str, Any], path: str) -> list[str]:
    """Where the schema states something botocore's shape contradicts: another type, a member the shape
    lacks, fewer required members, a looser bound, another pattern or enum values it does not have.
    A tighter bound is a queue rule (the API tests refuse every request the document refuses)."""
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    found: list[str] = []
    kind = shape.type_name
    if schema.get("type") != SCHEMA_TYPES[kind]:
        found.append(f"{path}: type {schema.get('type')} but the shape is a {kind}")
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if LOWER_BOUNDS.get(kind) in schema and low is not None and schema[LOWER_BOUNDS[kind]] < low:
        found.append(f"{path}: {LOWER_BOUNDS[kind]} {schema[LOWER_BOUNDS[kind]]} is below the shape's {low}")
    if UPPER_BOUNDS.get(kind) in schema and (high is None or schema[UPPER_BOUNDS[kind]] > high):
        found.append(f"{path}: {UPPER_BOUNDS[kind]} {schema[UPPER_BOUNDS[kind]]} is above the shape's {high}")
    if "pattern" in schema and schema["pattern"] != f"^{shape.metadata.get('pattern')}$":
        found.append(f"{path}: pattern {schema['pattern']} is not the shape's ^{shape.metadata.get('pattern')}$")
    if "enum" in schema and not set(schema["enum"]) <= set(shape.metadata.get("enum", ())):
        found.append(f"{path}: enum values {sorted(set(schema['enum']) - set(shape.enum))} are not the shape's")
    if kind == "structure":
        members = shape.members
        if not set(shape.required_members) <= set(schema.get("required", ())):
            found.append(
                f"{path}: required lacks {sorted(set(shape.required_members) - set(schema.get('required', ())))}"
            )
        for name, member_schema in schema.get("properties", {}).items():
            if name not in members:
                found.append(f"{path}.{name}: the shape has no such member")
            else:
                found.extend(disagreements(member_schema, members[name], doc, f"{path}.{name}"))
    elif kind == "list" and "items" in schema:
        found.extend(disagreements(schema["items"], shape.member, doc, f"{path}[]"))
    elif kind == "map" and isinstance(schema.get("additionalProperties"), dict):
        found.extend(disagreements(schema["additionalProperties"], shape.value, doc, f"{path}.*"))
    return found


def test_request_schema_never_contradicts_sagemakers_model(openapi_doc: dict[str, Any]) -> None:
    request = openapi_doc["components"]["schemas"]["CreateTrainingJobRequest"]
    shape = input_shape(CREATE_TRAINING_JOB)

    assert disagreements(request, shape, openapi_doc, "CreateTrainingJobRequest") == []
    assert set(request["required"]) == set(REQUIRED_MEMBERS)
    assert request["additionalProperties"] is True


def test_the_schema_states_the_rules_whose_copies_drifted(openapi_doc: dict[str, Any]) -> None:
    """The S3 URI pattern and the RoleArn bounds were copied by hand and drifted; now they are the model's,
    and the contradiction check above sees them."""
    schemas = openapi_doc["components"]["schemas"]
    request = schemas["CreateTrainingJobRequest"]["properties"]

    assert schemas["S3Uri"]["pattern"] == "^(https|s3)://([^/]+)/?(.*)$"
    assert request["OutputDataConfig"]["properties"]["S3OutputPath"] == {"$ref": "#/components/schemas/S3Uri"}
    assert (request["RoleArn"]["minLength"], request["RoleArn"]["maxLength"]) == (20, 2048)
    assert "pattern" in request["RoleArn"]


@pytest.mark.parametrize(
    ("schema", "path", "expected"),
    [
        ({"type": "string", "maxLength": 64}, "TrainingJobName", "maxLength 64 is above the shape's 63"),
        ({"type": "string", "pattern": "^s3://.*$"}, "OutputDataConfig.S3OutputPath", "pattern ^s3://.*$ is not"),
        ({"type": "integer"}, "HyperParameters", "type integer but the shape is a map"),
        ({"type": "string", "enum": ["File", "Stream"]}, "AlgorithmSpecification.TrainingInputMode", "['Stream']"),
        ({"type": "object", "properties": {"Bogus": {"type": "string"}}}, "ResourceConfig", "Bogus: the shape has no"),
        ({"type": "object", "properties": {}}, "OutputDataConfig", "required lacks ['S3OutputPath']"),
        ({"type": "array", "minItems": 0}, "InputDataConfig", "minItems 0 is below the shape's 1"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "Environment", "Environment.*: type integer"),
    ],
)
def test_the_agreement_check_finds_contradictions(
    openapi_doc: dict[str, Any], schema: dict[str, Any], path: str, expected: str
) -> None:
    shape = input_shape(CREATE_TRAINING_JOB)
    for part in path.split("."):
        shape = shape.members[part]

    found = disagreements(schema, shape, openapi_doc, path)

    assert len(found) == 1 and expected in found[0], found
