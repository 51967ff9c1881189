"""Hypothesis strategies for requests built from botocore's shapes: mostly well-formed, sometimes not.

A value for a shape is usually one the shape allows in type and, often, in its constraints (an enum
value, a string drawn from the member's pattern, a number in range), and sometimes any JSON value, so
that the requests drawn cover both sides of every rule the validator checks.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from smq_lambda.domain.sagemaker import java_regex

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def values_for(shape: Any, depth: int = 4) -> st.SearchStrategy[Any]:
    """Values for `shape`: shaped like it three times in four, any JSON value otherwise."""
    return st.one_of(_shaped(shape, depth), _shaped(shape, depth), _shaped(shape, depth), json_values)


def _shaped(shape: Any, depth: int) -> st.SearchStrategy[Any]:
    kind = shape.type_name
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if kind == "structure":
        if depth <= 0:
            return st.just(dict.fromkeys(shape.required_members))
        members = shape.members
        required = {name: values_for(members[name], depth - 1) for name in shape.required_members}
        optional = {name: values_for(member, depth - 1) for name, member in members.items() if name not in required}
        return st.fixed_dictionaries(required, optional=optional)
    if kind == "list":
        size = 0 if depth <= 0 else min(high if high is not None else 3, 3)
        return st.lists(values_for(shape.member, depth - 1), min_size=min(low or 0, size), max_size=size)
    if kind == "map":
        size = 0 if depth <= 0 else min(high if high is not None else 3, 3)
        return st.dictionaries(_strings(shape.key), values_for(shape.value, depth - 1), max_size=size)
    if kind == "string":
        return _strings(shape)
    if kind in ("integer", "long"):
        floor = (low if low is not None else -(2**63)) - 2
        ceiling = (high if high is not None else 2**63) + 2
        return st.integers(floor, ceiling) | st.integers(floor, floor + 5) | st.integers(ceiling - 5, ceiling)
    return st.booleans()


def _strings(shape: Any) -> st.SearchStrategy[str]:
    enum = shape.metadata.get("enum")
    pattern = shape.metadata.get("pattern")
    if enum:
        return st.sampled_from(enum) | st.text(max_size=12)
    if pattern:
        matching = st.from_regex(java_regex.compiled(pattern, ascii_only=True), fullmatch=True)
        return matching.map(lambda text: text[: shape.metadata.get("max", len(text))]) | st.text(max_size=12)
    return st.text(max_size=shape.metadata.get("max", 12) + 2)
