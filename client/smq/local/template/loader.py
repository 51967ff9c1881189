"""Parse template.yaml: CloudFormation's YAML with its short-form tags (`!Ref`, `!Sub`, ...) turned
into the long-form dicts (`{"Ref": ...}`, `{"Fn::Sub": ...}`) the evaluator reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

_SHORT_TAGS = {
    "Ref": "Ref",
    "Condition": "Condition",
    "Sub": "Fn::Sub",
    "GetAtt": "Fn::GetAtt",
    "If": "Fn::If",
    "Equals": "Fn::Equals",
    "Not": "Fn::Not",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "Join": "Fn::Join",
    "FindInMap": "Fn::FindInMap",
    "Base64": "Fn::Base64",
    "Transform": "Fn::Transform",
    "ImportValue": "Fn::ImportValue",
    "GetAZs": "Fn::GetAZs",
    "Cidr": "Fn::Cidr",
    "Contains": "Fn::Contains",
}


class TemplateError(ValueError):
    """The template uses something this reader cannot evaluate, or lacks what was asked for."""


class _TemplateLoader(yaml.SafeLoader):
    """SafeLoader plus CloudFormation's short-form tags.

    Timestamps stay strings: CloudFormation reads `2010-09-09` as text, not as a date.
    """


_TemplateLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _long_form(key: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        value: Any
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
            if key == "Fn::GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {key: value}

    return construct


for _tag, _key in _SHORT_TAGS.items():
    _TemplateLoader.add_constructor(f"!{_tag}", _long_form(_key))


def load_template(path: str | Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template, short-form tags turned into long-form dicts."""
    with open(path, encoding="utf-8") as stream:
        template = yaml.load(stream, Loader=_TemplateLoader)
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources)")
    return template
