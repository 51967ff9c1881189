"""`smq local up` options reaching the stack: the alarm period, and a stack sharing another's SageMaker."""

from __future__ import annotations

import argparse

import pytest
from smq.local.cli import register_local_commands


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="smq")
    register_local_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(["local", "up", *argv])


def test_the_alarm_period_is_taken_in_seconds() -> None:
    assert parse("--alarm-period-seconds", "2").alarm_period_seconds == 2


def test_without_it_alarms_use_their_own_period() -> None:
    assert parse().alarm_period_seconds is None


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "soon"])
def test_anything_but_a_positive_whole_number_is_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--alarm-period-seconds", text)

    assert "expected a whole number of seconds >= 1" in capsys.readouterr().err


def test_a_second_stack_can_share_another_stacks_sagemaker_under_its_own_name() -> None:
    """Two stacks in one account (docs/deployment.md): each its own name, one SageMaker."""
    args = parse("--stack-name", "staging", "--sagemaker-url", "http://127.0.0.1:5000", "--reconcile-every", "2")

    assert (args.stack_name, args.sagemaker_url, args.reconcile_every) == ("staging", "http://127.0.0.1:5000", 2)


def test_by_default_a_stack_is_named_smq_and_starts_its_own_sagemaker() -> None:
    args = parse()

    assert (args.stack_name, args.sagemaker_url, args.reconcile_every) == ("smq", None, 30)
