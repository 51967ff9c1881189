"""One validator for SageMaker requests: botocore's own service model, every constraint it states.

botocore's ParamValidator, which boto3 runs before sending, checks types, required and unknown members
and minimums; SageMaker itself also checks maximums, patterns and enums, and answers a ValidationException
for anything else. A request the queue accepts is sent to SageMaker hours later, so it is checked here
against all of them at once: the API refuses a bad request with a 400 naming the field, and the local
SageMaker service answers what the real one would. Both use this module, so they cannot drift apart.

The walk is strict where JSON is looser than the model: `true` is not an integer, `null` is not a value
of any member, and a number fits the model's type (a 32-bit `integer`, a 64-bit `long`), so whatever
passes here also passes ParamValidator and serializes as SageMaker expects. Shapes whose kind the walk
does not model (tagged unions, documents, timestamps, blobs, floats; none is reachable from
CreateTrainingJob today) are handed to ParamValidator whole, so a newer model never widens what passes.

The model is read once per process, lazily, with botocore's loader (not a Session, which costs several
times more to create on a cold start).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.loaders import create_loader
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.validate import ParamValidator

from smq_lambda.domain.sagemaker import java_regex

SERVICE = "sagemaker"
CREATE_TRAINING_JOB = "CreateTrainingJob"
INTEGER_RANGES = {"integer": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
"""The Java types SageMaker reads `integer` and `long` members into."""
WALKED_TYPES = frozenset({"structure", "list", "map", "string", "integer", "long", "boolean"})
MAX_SHOWN_VALUE = 80
LINE_TERMINATORS = "\n\r\x85\u2028\u2029"
MAX_LISTED_ENUM = 12


class Rule(StrEnum):
    """Which constraint of the model a value breaks."""

    TYPE = "type"
    REQUIRED = "required"
    UNKNOWN = "unknown"
    MIN_LENGTH = "min length"
    MAX_LENGTH = "max length"
    MIN_VALUE = "min value"
    MAX_VALUE = "max value"
    PATTERN = "pattern"
    ENUM = "enum"
    BOTOCORE = "botocore"
    """ParamValidator refused a shape the walk hands to it; `limit` is its report."""


@dataclass(frozen=True)
class MapKey:
    """A path segment: the entry of a map under this key."""

    key: str


Segment = str | int | MapKey
"""A structure member's name, a list index, or a map entry."""


@dataclass(frozen=True)
class Violation:
    """One constraint of the model that a value breaks, where, and what the constraint says."""

    path: tuple[Segment, ...]
    rule: Rule
    value: Any = None
    limit: Any = None
    """The bound, pattern, enum values, expected type name or known member names, by rule."""
    on_key: bool = False
    """The map entry's key, not its value, breaks the rule."""

    @property
    def field(self) -> str | None:
        """The path as the API names fields (`ResourceConfig.InstanceGroups[1].InstanceCount`,
        `HyperParameters.lr`); a bad key names its map. None for the request itself."""
        text = ""
        for segment in self.path[:-1] if self.on_key else self.path:
            if isinstance(segment, int):
                text += f"[{segment}]"
            else:
                name = segment.key if isinstance(segment, MapKey) else segment
                text += f".{name}" if text else name
        return text or None

    @property
    def message(self) -> str:
        """A sentence that starts with the field and says the rule."""
        subject = self.field or "the request"
        if self.on_key:
            subject += f" key {shown(self.value)}"
        return f"{subject} {_RULE_TEXT[self.rule](self)}"


def violations(value: object, shape: Shape, path: tuple[Segment, ...] = ()) -> list[Violation]:
    """Every constraint of `shape` that `value` breaks, in the order of the request's members."""
    found: list[Violation] = []
    _check(value, shape, path, found)
    return found


def create_training_job_violations(request: object) -> list[Violation]:
    return violations(request, input_shape(CREATE_TRAINING_JOB))


@functools.cache
def service_model() -> ServiceModel:
    """SageMaker's model as installed with botocore (AWS_DATA_PATH is honoured, as a Session does)."""
    loader = create_loader(os.environ.get("AWS_DATA_PATH"))
    return ServiceModel(loader.load_service_model(SERVICE, "service-2"), service_name=SERVICE)


@functools.cache
def _operation(name: str) -> OperationModel:
    return service_model().operation_model(name)


def input_shape(operation: str) -> Shape:
    shape = _operation(operation).input_shape
    if shape is None:
        raise ValueError(f"{operation} takes no input")
    return shape


# -- the walk --------------------------------------------------------------------------------------


def _check(value: object, shape: Shape, path: tuple[Segment, ...], found: list[Violation]) -> None:
    metadata = shape.metadata
    if shape.type_name not in WALKED_TYPES or metadata.get("union") or metadata.get("document"):
        _ask_botocore(value, shape, path, found)
    elif not _has_type(value, shape.type_name):
        found.append(Violation(path, Rule.TYPE, value, shape.type_name))
    else:
        _CHECKS[shape.type_name](value, shape, path, found)


def _has_type(value: object, type_name: str) -> bool:
    """The JSON type of the shape: what json.loads gives, and a subset of what ParamValidator takes."""
    if type_name in INTEGER_RANGES:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"structure": dict, "map": dict, "list": list, "string": str, "boolean": bool}[type_name])


def _ask_botocore(value: object, shape: Shape, path: tuple[Segment, ...], found: list[Violation]) -> None:
    report = ParamValidator().validate(value, shape)
    if report.has_errors():
        found.append(Violation(path, Rule.BOTOCORE, value, report.generate_report()))


def _check_structure(value: dict[str, Any], shape: Any, path: tuple[Segment, ...], found: list[Violation]) -> None:
    members = shape.members
    found.extend(Violation((*path, name), Rule.REQUIRED) for name in shape.required_members if name not in value)
    found.extend(
        Violation((*path, name), Rule.UNKNOWN, value[name], tuple(members)) for name in value if name not in members
    )
    for name, member_value in value.items():
        if name in members:
            _check(member_value, members[name], (*path, name), found)


def _check_list(value: list[Any], shape: Any, path: tuple[Segment, ...], found: list[Violation]) -> None:
    _check_length(value, shape, path, found)
    for index, item in enumerate(value):
        _check(item, shape.member, (*path, index), found)


def _check_map(value: dict[Any, Any], shape: Any, path: tuple[Segment, ...], found: list[Violation]) -> None:
    _check_length(value, shape, path, found)
    for key, item in value.items():
        entry = (*path, MapKey(str(key)))
        if not isinstance(key, str):
            found.append(Violation(entry, Rule.TYPE, key, "string", on_key=True))
        else:
            found.extend(_string_violations(key, shape.key, entry, on_key=True))
        _check(item, shape.value, entry, found)


def _check_string(value: str, shape: Shape, path: tuple[Segment, ...], found: list[Violation]) -> None:
    found.extend(_string_violations(value, shape, path, on_key=False))


def _string_violations(value: str, shape: Shape, path: tuple[Segment, ...], *, on_key: bool) -> list[Violation]:
    found: list[Violation] = []
    _check_length(value, shape, path, found, on_key=on_key)
    enum = shape.metadata.get("enum")
    if enum and value not in enum:
        found.append(Violation(path, Rule.ENUM, value, tuple(enum), on_key=on_key))
    pattern = shape.metadata.get("pattern")
    if pattern is not None and not java_regex.fullmatch(pattern, value):
        found.append(Violation(path, Rule.PATTERN, value, pattern, on_key=on_key))
    return found


def _check_length(
    value: str | list[Any] | dict[Any, Any],
    shape: Shape,
    path: tuple[Segment, ...],
    found: list[Violation],
    *,
    on_key: bool = False,
) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and len(value) < low:
        found.append(Violation(path, Rule.MIN_LENGTH, value, low, on_key=on_key))
    if high is not None and len(value) > high:
        found.append(Violation(path, Rule.MAX_LENGTH, value, high, on_key=on_key))


def _check_integer(value: int, shape: Shape, path: tuple[Segment, ...], found: list[Violation]) -> None:
    floor, ceiling = INTEGER_RANGES[shape.type_name]
    low, high = max(shape.metadata.get("min", floor), floor), min(shape.metadata.get("max", ceiling), ceiling)
    if value < low:
        found.append(Violation(path, Rule.MIN_VALUE, value, low))
    if value > high:
        found.append(Violation(path, Rule.MAX_VALUE, value, high))


def _check_boolean(value: bool, shape: Shape, path: tuple[Segment, ...], found: list[Violation]) -> None:
    """A boolean has no constraint beyond its type."""


_CHECKS: dict[str, Callable[[Any, Any, tuple[Segment, ...], list[Violation]], None]] = {
    "structure": _check_structure,
    "list": _check_list,
    "map": _check_map,
    "string": _check_string,
    "integer": _check_integer,
    "long": _check_integer,
    "boolean": _check_boolean,
}


# -- the API's sentences ---------------------------------------------------------------------------

_TYPE_NAMES = {
    "structure": "an object",
    "map": "an object",
    "list": "a list",
    "string": "a string",
    "integer": "an integer",
    "long": "an integer",
    "boolean": "true or false",
}


def shown(value: object) -> str:
    """`value` as JSON, cut short: messages quote what was sent without echoing a whole blob."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except ValueError:
        text = repr(value)
    return text if len(text) <= MAX_SHOWN_VALUE else text[: MAX_SHOWN_VALUE - 3] + "..."


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return shown(value)
    if isinstance(value, int | float):
        return f"the number {shown(value)}"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    return "a list" if isinstance(value, list | tuple) else "an object"


def _unit(value: object) -> str:
    return "characters" if isinstance(value, str) else "items" if isinstance(value, list) else "entries"


def _type_text(violation: Violation) -> str:
    return f"must be {_TYPE_NAMES[violation.limit]}, not {_json_kind(violation.value)}"


def _unknown_text(violation: Violation) -> str:
    name = str(violation.path[-1])
    close = difflib.get_close_matches(name, violation.limit, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"is not a field SageMaker's model has here{hint}; the fields here are {', '.join(violation.limit)}"


def _enum_text(violation: Violation) -> str:
    values: tuple[str, ...] = violation.limit
    if len(values) <= MAX_LISTED_ENUM:
        return f"must be one of {', '.join(values)}, not {shown(violation.value)}"
    close = difflib.get_close_matches(str(violation.value), values, n=3)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return f"must be one of the {len(values)} values SageMaker accepts, not {shown(violation.value)}{hint}"


def _pattern_text(violation: Violation) -> str:
    text = f"must match the pattern ^{violation.limit}$ as a whole"
    if violation.on_key:
        return text
    if any(terminator in violation.value for terminator in LINE_TERMINATORS):
        text += " (where `.` matches no line break)"
    return f"{text}, not {shown(violation.value)}"


_RULE_TEXT: dict[Rule, Callable[[Violation], str]] = {
    Rule.TYPE: _type_text,
    Rule.REQUIRED: lambda v: "is required",
    Rule.UNKNOWN: _unknown_text,
    Rule.MIN_LENGTH: lambda v: f"must have at least {v.limit} {_unit(v.value)}, not {len(v.value)}",
    Rule.MAX_LENGTH: lambda v: f"must have at most {v.limit} {_unit(v.value)}, not {len(v.value)}",
    Rule.MIN_VALUE: lambda v: f"must be at least {v.limit}, not {v.value}",
    Rule.MAX_VALUE: lambda v: f"must be at most {v.limit}, not {v.value}",
    Rule.PATTERN: _pattern_text,
    Rule.ENUM: _enum_text,
    Rule.BOTOCORE: lambda v: f"does not fit SageMaker's model: {v.limit}",
}
