"""`smq quotas` as a new user tries it: `smq local up --config FILE.json` in one process, the exports
it prints in the shell, then `smq submit` of a job with a team tag and `smq quotas` (the table, then
`--json`) through the CLI's entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.cli.main import main
from smq.local.stack import read_state

from tests.e2e.local import POOL, synthetic_request, wait_for

CONFIG = {
    "pools": {POOL: 3},
    "quotas": {
        "a": {"instances": {POOL: 1}, "sharing": "lend_and_borrow"},
        "b": {"instances": {POOL: 1}, "sharing": "reserve"},
    },
}

pytestmark = pytest.mark.slow


def smq(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def rows_by_team(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["team"]: row for row in answer["teams"] if row["pool"] == POOL}


def test_smq_quotas_shows_the_teams_of_the_config_file_and_what_they_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    workdir = tmp_path / "up"
    command = [sys.executable, "-m", "smq.cli", "local", "up", "--config", str(config), "--port", "0",
               "--executor", "synthetic", "--workdir", str(workdir), "--stop-grace", "2"]  # fmt: skip
    # Its output goes to a file: a pipe nobody reads fills up and blocks the stack mid-shutdown.
    output = tmp_path / "up.log"
    up = subprocess.Popen(command, stdout=output.open("w"), stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (workdir / "stack.json").exists():
            assert up.poll() is None, output.read_text()
            assert time.monotonic() < deadline, "the stack did not come up"
            time.sleep(0.2)
        for key, value in read_state(workdir)["env"].items():  # what `smq local up` prints to export
            monkeypatch.setenv(key, value)
        request = synthetic_request("team-a-job", priority=3, duration=120)
        request["Tags"] = [{"Key": "team", "Value": "a"}]
        job_file = tmp_path / "job.json"
        job_file.write_text(json.dumps(request))

        assert "team-a-job" in smq(capsys, "submit", str(job_file))
        client = SmqApiClient(read_state(workdir)["api_url"], region="us-east-1")
        assert wait_for(client, "team-a-job", {"running"})["team"] == "a"
        deadline = time.monotonic() + 30
        while rows_by_team(answer := json.loads(smq(capsys, "quotas", "--json")))["a"]["in_use"] != 1:
            assert time.monotonic() < deadline, f"no pass measured team a's job: {answer}"
            time.sleep(0.5)
        table = smq(capsys, "quotas")

        rows = rows_by_team(answer)
        assert answer["team_tag"] == "team" and answer["measured_at"]
        assert {key: rows["a"][key] for key in ("quota", "in_use", "borrowed", "lent", "pending", "sharing")} == {
            "quota": 1, "in_use": 1, "borrowed": 0, "lent": 0, "pending": 0, "sharing": "lend_and_borrow"
        }  # fmt: skip
        assert (rows["b"]["quota"], rows["b"]["in_use"], rows["b"]["sharing"]) == (1, 0, "reserve"), rows["b"]
        assert rows["(unassigned)"]["quota"] == 1, "what the teams leave of the pool"
        lines = table.splitlines()
        assert lines[0].split() == ["Team", "Pool", "Quota", "In", "use", "Borrowed", "Lent", "Pending", "Sharing"]
        assert ["a", POOL, "1", "1", "0", "0", "0", "lend_and_borrow"] in [line.split() for line in lines]
        assert ["b", POOL, "1", "0", "0", "0", "0", "reserve"] in [line.split() for line in lines]
        assert ["(unassigned)", POOL, "1", "0", "0", "0", "0", "lend_and_borrow"] in [line.split() for line in lines]
        assert "Teams by the tag 'team'" in table

        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=120) == 0, output.read_text()
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(timeout=30)
    printed = output.read_text()
    assert f'pools: {{"{POOL}": 3}}' in printed, printed
    assert not (workdir / "stack.json").exists()
