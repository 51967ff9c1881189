"""`smq simulate` as a user runs it: generate, simulate with --compare, read the files; and a bad
trace or configuration gets one line and exit 2, never a traceback."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from smq.cli.main import main


def test_generate_then_compare_writes_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "generate", "mixed", "--seed", "7", "--jobs", "40", "--out", str(tmp_path)]) == 0
    trace, config = tmp_path / "trace.jsonl", tmp_path / "config.json"
    assert len(trace.read_text().splitlines()) == 40
    assert json.loads(config.read_text()) == {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 16}
    capsys.readouterr()

    code = main(
        ["simulate", str(trace), "--config", str(config), "--compare", "--backfill", "on", "--out", str(tmp_path)]
    )

    out = capsys.readouterr().out
    assert code == 0
    assert "| metric" in out and "fifo / smq" in out and "seed / smq" in out
    for policy in ("smq", "fifo", "seed"):
        metrics = json.loads((tmp_path / policy / "metrics.json").read_text())
        assert metrics["policy"] == policy and metrics["jobs"] == 40 and metrics["unfinished"] == []
        assert set(metrics["pools"]["ml.p5.48xlarge"]) >= {"utilization", "utilization_while_waiting"}
        assert {"p50", "p95", "max"} <= set(next(iter(metrics["wait_s"].values())))
        assert (tmp_path / policy / "gantt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with (tmp_path / policy / "timeline.csv").open() as file:
            rows = list(csv.DictReader(file))
        assert {row["job"] for row in rows} == {f"job-{n:04d}" for n in range(40)}


def test_one_policy_writes_into_the_directory_itself(tmp_path: Path) -> None:
    trace = tmp_path / "seed.jsonl"
    trace.write_text('{"name": "a", "submit_s": 0, "priority": 1, "pool": "p", "instances": 1, "duration_s": 60}\n')

    assert main(["simulate", str(trace), "--capacity", "p=1", "--policy", "fifo", "--out", str(tmp_path / "o")]) == 0
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["policy"] == "fifo"


def test_generate_without_out_prints_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "generate", "seed"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["job1", "job2", "job3", "job4"]


@pytest.mark.parametrize(
    ("trace", "arguments", "message"),
    [
        ('{"name": "a"}\n', ["--capacity", "p=1"], "line 1, field 'submit_s': is required"),
        ('{"name": "a", "submit_s": 0, "priority": "x", "pool": "p", "instances": 1, "duration_s": 1}\n',
         ["--capacity", "p=1"], "line 1, field 'priority': must be an integer"),
        ("oops\n", ["--capacity", "p=1"], "line 1: not JSON"),
        ('{"name": "a", "submit_s": 0, "priority": 1, "pool": "q", "instances": 1, "duration_s": 1}\n',
         ["--capacity", "p=1"], "line 1, field 'pool': 'q' is not a configured pool"),
        ('{"name": "a", "submit_s": 0, "priority": 1, "pool": "p", "instances": 1, "duration_s": 1}\n',
         [], "no pools: give --config FILE.json or --capacity TYPE=N"),
    ],
)  # fmt: skip
def test_a_bad_trace_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: str, arguments: list[str], message: str
) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(trace)

    code = main(["simulate", str(path), *arguments])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_capacity_beyond_the_bound_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"name": "a", "submit_s": 0, "priority": 1, "pool": "p", "instances": 1, "duration_s": 1}\n')

    code = main(["simulate", str(trace), "--capacity", f"p={2**63}"])

    err = capsys.readouterr().err
    assert code == 2
    assert "argument --capacity: p: a pool holds at most 100000 instances" in err and "Traceback" not in err


def test_a_bad_configuration_or_missing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"ml.p5.48xlarge": -1}')
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"name": "a", "submit_s": 0, "priority": 1, "pool": "p", "instances": 1, "duration_s": 1}\n')

    assert main(["simulate", str(trace), "--config", str(config)]) == 2
    assert "ml.p5.48xlarge: must be a non-negative integer" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "missing.jsonl"), "--capacity", "p=1"]) == 2
    assert "cannot read the trace" in capsys.readouterr().err
    assert main(["simulate", "generate", "nonsense"]) == 2
    assert "generate needs a workload" in capsys.readouterr().err
    assert main(["simulate", "generate", "seed", "--jobs", "3"]) == 2
    assert "generate seed takes no --jobs" in capsys.readouterr().err


def test_a_likely_mistake_in_the_configuration_is_warned_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "pools": {"p": 2},
                "quotas": {"vision": {"instances": {"p": 1}}, "nlp": {"instances": {"p": 1}}},
                "prices": {"p": 1.0},
                "budgets": {"visoin": {"monthly_usd": 10, "action": "hold"}},
            }
        )
    )
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"name": "a", "submit_s": 0, "priority": 1, "pool": "p", "instances": 1, "duration_s": 1}\n')

    assert main(["simulate", str(trace), "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    assert "warning: " + str(config) + ": budgets.visoin: 'visoin' is not a configured team" in capsys.readouterr().err
