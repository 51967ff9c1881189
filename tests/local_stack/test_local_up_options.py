"""`smq local up --alarm-period-seconds N`: a whole number of seconds, reaching the stack's options."""

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
