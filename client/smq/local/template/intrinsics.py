"""CloudFormation's intrinsic functions, evaluated against parameter values, pseudo parameters and a
resolver of resource attributes. Only the functions the parts the local stack reads can use are
evaluated; anything else raises TemplateError rather than silently producing a value CloudFormation
would not."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

from smq.local.template.loader import TemplateError

Resolver = Callable[[str, str | None], Any]
"""resolve(logical_id, attribute): a resource's Ref (attribute None) or Fn::GetAtt value."""

PSEUDO_PARAMETERS: dict[str, str] = {
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::StackName": "smq",
    "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/smq/local",
    "AWS::URLSuffix": "amazonaws.com",
}
"""Local values of the pseudo parameters (moto's default account); callers may override them."""

# Ref of these resource types returns the name property when the template sets one, so such a
# Ref can be answered from the template itself, exactly as CloudFormation would.
_NAME_PROPERTY_OF_REF = {
    "AWS::SSM::Parameter": "Name",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Serverless::Function": "FunctionName",
}

NO_VALUE = object()
"""What `Ref: AWS::NoValue` evaluates to: the key or list item it stands for is left out."""
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class Evaluator:
    """Evaluates intrinsic functions against parameter values, pseudo parameters and a resolver."""

    def __init__(
        self,
        template: Mapping[str, Any],
        resolve: Resolver | None,
        parameter_overrides: Mapping[str, Any] | None,
        pseudo_parameters: Mapping[str, str] | None,
    ) -> None:
        self._template = template
        self._resolve = resolve
        self._overrides = dict(parameter_overrides or {})
        self._pseudo = {**PSEUDO_PARAMETERS, **(pseudo_parameters or {})}
        self._conditions: dict[str, bool] = {}

    def value(self, node: Any) -> Any:
        """The evaluated node; NO_VALUE for AWS::NoValue."""
        if isinstance(node, list):
            return [item for item in (self.value(element) for element in node) if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, argument),) = node.items()
            if key == "Ref":
                return self._ref(argument)
            if key.startswith("Fn::"):
                return self._function(key, argument)
        return {key: item for key, item in ((k, self.value(v)) for k, v in node.items()) if item is not NO_VALUE}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions = self._template.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"unknown condition {name!r}")
            self._conditions[name] = self._truth(conditions[name])
        return self._conditions[name]

    def parameter(self, name: str) -> Any:
        declaration = (self._template.get("Parameters") or {}).get(name)
        if declaration is None:
            raise TemplateError(f"unknown parameter {name!r}")
        if name in self._overrides:
            raw = self._overrides[name]
        elif "Default" in declaration:
            raw = declaration["Default"]
        else:
            raise TemplateError(f"parameter {name!r} has no default; pass it in parameter_overrides")
        if str(declaration.get("Type", "String")).startswith(("CommaDelimitedList", "List<")):
            if isinstance(raw, (list, tuple)):
                return [str(item) for item in raw]
            return [item.strip() for item in str(raw).split(",")]
        return as_text(raw)

    def _truth(self, node: Any) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            ((key, argument),) = node.items()
            if key == "Condition":
                return self.condition(argument)
            if key == "Fn::Equals":
                left, right = (self.value(item) for item in argument)
                return as_text(left) == as_text(right)
            if key == "Fn::Not":
                return not self._truth(argument[0])
            if key == "Fn::And":
                return all(self._truth(item) for item in argument)
            if key == "Fn::Or":
                return any(self._truth(item) for item in argument)
            if key == "Fn::Contains":  # only valid in Rules
                items, item = (self.value(part) for part in argument)
                return as_text(item) in [as_text(element) for element in items]
        raise TemplateError(f"not a condition: {node!r}")

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self._pseudo:
            return self._pseudo[name]
        if name in (self._template.get("Parameters") or {}):
            return self.parameter(name)
        resource = (self._template.get("Resources") or {}).get(name)
        if resource is None:
            raise TemplateError(f"Ref to unknown name {name!r}")
        name_property = _NAME_PROPERTY_OF_REF.get(resource.get("Type", ""))
        properties = resource.get("Properties") or {}
        if name_property and name_property in properties:
            return self.value(properties[name_property])
        return self._resource(name, None)

    def _attribute(self, logical_id: str, attribute: str) -> Any:
        """Fn::GetAtt. An SSM parameter's attributes (Value, Type, ...) are the properties the
        template gives it, so they are answered from the template, as CloudFormation would."""
        resource = (self._template.get("Resources") or {}).get(logical_id) or {}
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::SSM::Parameter" and attribute in properties:
            return self.value(properties[attribute])
        return self._resource(logical_id, attribute)

    def _resource(self, logical_id: str, attribute: str | None) -> Any:
        if self._resolve is None:
            what = f"{logical_id}.{attribute}" if attribute else logical_id
            raise TemplateError(f"{what} needs a resolver")
        return self._resolve(logical_id, attribute)

    def _function(self, key: str, argument: Any) -> Any:
        if key == "Fn::If":
            name, if_true, if_false = argument
            return self.value(if_true if self.condition(name) else if_false)
        if key == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return self._attribute(logical_id, self.value(attribute))
        if key == "Fn::Sub":
            return self._sub(argument)
        if key == "Fn::Join":
            delimiter, items = argument
            return as_text(self.value(delimiter)).join(as_text(item) for item in self.value(items))
        if key == "Fn::Split":
            delimiter, source = argument
            return as_text(self.value(source)).split(as_text(self.value(delimiter)))
        if key == "Fn::Select":
            index, items = argument
            return self.value(items)[int(self.value(index))]
        if key == "Fn::FindInMap":
            mapping, top, second = (self.value(item) for item in argument)
            try:
                return self._template["Mappings"][mapping][top][second]
            except KeyError as exc:
                raise TemplateError(f"Fn::FindInMap: no {mapping}/{top}/{second}") from exc
        if key == "Fn::Base64":
            return base64.b64encode(as_text(self.value(argument)).encode()).decode()
        if key in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Fn::Contains"):
            return self._truth({key: argument})
        raise TemplateError(f"{key} cannot be evaluated locally")

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = argument[0], {k: self.value(v) for k, v in argument[1].items()}
        else:
            text, variables = argument, {}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            if name in variables:
                return as_text(variables[name])
            if name in self._pseudo or name in (self._template.get("Parameters") or {}):
                value = self._ref(name)
                if isinstance(value, list):
                    raise TemplateError(f"Fn::Sub cannot use list parameter {name!r}")
                return as_text(value)
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return as_text(self._resource(logical_id, attribute))
            return as_text(self._ref(name))

        return _SUB_VARIABLE.sub(replace, text).replace("${!", "${")


def as_text(value: Any) -> str:
    """A scalar as CloudFormation passes it on: always a string, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, (dict, list)) or value is NO_VALUE:
        raise TemplateError(f"not a scalar: {value!r}")
    return str(value)


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") == resource_type
    }


def evaluate(
    template: Mapping[str, Any],
    node: Any,
    resolve: Resolver | None = None,
    *,
    parameter_overrides: Mapping[str, Any] | None = None,
    pseudo_parameters: Mapping[str, str] | None = None,
) -> Any:
    """Any part of the template with its intrinsic functions evaluated (None for AWS::NoValue).

    Conditions are evaluated from the template's Conditions with the same parameter values.
    """
    value = Evaluator(template, resolve, parameter_overrides, pseudo_parameters).value(node)
    return None if value is NO_VALUE else value
