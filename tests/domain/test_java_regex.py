"""SageMaker's Java patterns, matched with `re` as java.util.regex matches them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.sagemaker import java_regex
from smq_lambda.domain.sagemaker.request_shape import CREATE_TRAINING_JOB, input_shape

TAG = r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)"
LAMBDA_ARN = r"arn:[\p{Alnum}\-]+:lambda:[\p{Alnum}\-]+:[0-9]{12}:function:.*"
ROLE_ARN = r"arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+"
ARN_OR_NAME = r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z\-]*\/)?([a-zA-Z0-9]([a-zA-Z0-9-]){0,62})(?<!-)"


def patterns(shape: Any, seen: set[str] | None = None) -> Iterator[str]:
    """Every pattern of the shapes reachable from `shape`."""
    seen = set() if seen is None else seen
    if shape.name in seen:
        return
    seen.add(shape.name)
    if "pattern" in shape.metadata:
        yield shape.metadata["pattern"]
    children = {
        "structure": lambda: list(shape.members.values()),
        "list": lambda: [shape.member],
        "map": lambda: [shape.key, shape.value],
    }.get(shape.type_name, list)()
    for child in children:
        yield from patterns(child, seen)


REACHABLE = sorted(set(patterns(input_shape(CREATE_TRAINING_JOB))))


def test_the_model_has_patterns_plain_re_cannot_compile() -> None:
    """Why the translation exists: `re` refuses Java's `\\p{...}` classes outright."""
    refused = []
    for pattern in REACHABLE:
        try:
            re.compile(pattern)
        except re.error:
            refused.append(pattern)
    assert TAG in refused and LAMBDA_ARN in refused


@pytest.mark.parametrize("pattern", REACHABLE)
@pytest.mark.parametrize("ascii_only", [True, False], ids=["ascii", "unicode"])
def test_every_pattern_reachable_from_create_training_job_compiles(pattern: str, ascii_only: bool) -> None:
    assert isinstance(java_regex.compiled(pattern, ascii_only=ascii_only), re.Pattern)


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        (TAG, "team", True),
        (TAG, "日本語 チーム", True),
        (TAG, "équipe-٣:x/y=z+@_.", True),
        (TAG, "a\u2003b", True),  # an em space is a separator (Zs)
        (TAG, "", True),
        (TAG, "bad{key}", False),
        (TAG, "5\n", False),  # a line feed is a control character, not a separator
        (TAG, "a\tb", False),
        (TAG, "emoji🙂", False),  # a symbol (So)
        (LAMBDA_ARN, "arn:aws:lambda:us-east-1:123456789012:function:creds", True),
        (LAMBDA_ARN, "arn:awsé:lambda:us-east-1:123456789012:function:creds", False),  # Alnum is ASCII in Java
        (ROLE_ARN, "arn:aws:iam::123456789012:role/Train", True),
        (ROLE_ARN, "arn:aws:iam::١٢٣٤٥٦٧٨٩٠١٢:role/Train", False),  # \d is ASCII in Java
        (ROLE_ARN, "arn:aws:iam::123456789012:role/Train\n", False),  # the whole value, no `$` slack
        (".*", "anything at all é", True),
        (".*", "two\nlines", False),  # Java's `.` stops at every line terminator
        (".*", "two\rlines", False),
        (".*", "two\u2028lines", False),
        (".*", "two\x85lines", False),
        (r"[\S\s]*", "two\nlines\u2028too", True),
        (r"[a-zA-Z_][a-zA-Z0-9_]*", "PATH_2", True),
        (r"[a-zA-Z_][a-zA-Z0-9_]*", "2PATH", False),
        (ARN_OR_NAME, "my-algorithm", True),
        (ARN_OR_NAME, "my-algorithm-", False),  # the lookbehind
        (ARN_OR_NAME, "arn:aws:sagemaker:us-east-1:123456789012:algorithm/xgb", True),
    ],
)
def test_patterns_mean_what_they_mean_in_java(pattern: str, value: str, matches: bool) -> None:
    assert java_regex.fullmatch(pattern, value) is matches


@pytest.mark.parametrize(
    "pattern",
    [r"\P{L}", r"\p{IsLatin}", r"\p{InGreek}", r"[a-z&&[^b]]", r"[a[bc]]", "\\p{L"],
)
def test_constructs_without_a_translation_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        java_regex.translate(pattern)


def is_tag_character(character: str) -> bool:
    return unicodedata.category(character)[0] in "LZN" or character in "_.:/=+-@"


@given(st.text(max_size=30))
def test_the_tag_pattern_is_letters_separators_numbers_and_six_marks(value: str) -> None:
    assert java_regex.fullmatch(TAG, value) is all(is_tag_character(character) for character in value)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=30), st.sampled_from(REACHABLE))
def test_the_ascii_variant_answers_like_the_full_one_for_ascii_values(value: str, pattern: str) -> None:
    full = java_regex.compiled(pattern, ascii_only=False).fullmatch(value)
    ascii_only = java_regex.compiled(pattern, ascii_only=True).fullmatch(value)
    assert (ascii_only is None) is (full is None)
