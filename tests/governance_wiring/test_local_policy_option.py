"""`smq local up --policy FILE.json`: the file is checked as the functions check it before the stack
starts, and reaches the stack's options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from smq.local.cli import register_local_commands


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="smq")
    register_local_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(["local", "up", *argv])


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.json"
    path.write_text(text)
    return str(path)


def test_a_valid_policy_file_is_loaded(tmp_path: Path) -> None:
    document: dict[str, Any] = {"required_tags": ["project"], "max_instance_count": 4}

    assert parse("--policy", write(tmp_path, json.dumps(document))).policy == document


def test_without_the_option_the_template_policy_is_used() -> None:
    assert parse().policy is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ('{"required_tag": ["project"]}', "policy.required_tag: is not a policy key"),
        ('{"max_instance_count": 0}', "policy.max_instance_count: must be at least 1"),
    ],
)
def test_an_invalid_policy_file_is_refused_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    with pytest.raises(SystemExit):
        parse("--policy", write(tmp_path, text))

    assert problem in capsys.readouterr().err


def test_a_missing_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--policy", str(tmp_path / "absent.json"))

    assert "cannot read" in capsys.readouterr().err
