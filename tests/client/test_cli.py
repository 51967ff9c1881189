"""The `smq` CLI: its tables (pure, fixed clock) and every command against the real API handler."""

from __future__ import annotations

import argparse
import io
import json
import re
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from smq.cli import main as cli
from smq.cli.queue_commands import cmd_watch
from smq.formatting import describe_text, pools_table, short_owner, status_table
from smq.local.api_front import ApiFront

from tests.client.queue_world import POOL, QueueWorld, training_request

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
ALICE = "arn:aws:iam::123456789012:user/alice"


def job(name: str, state: str, priority: int, **fields: Any) -> dict[str, Any]:
    """A job in the API's shape (openapi.yaml `Job`)."""
    value: dict[str, Any] = {
        "name": name,
        "state": state,
        "priority": priority,
        "pool": "ml.p5.48xlarge",
        "instances": 1,
        "demand": {"ml.p5.48xlarge": 1},
        "owner": ALICE,
        "submitted_at": "2024-05-01T11:00:00.000Z",
        "updated_at": "2024-05-01T11:00:00.000Z",
        "reason": None,
        "position": None,
        "training_job_name": None,
        "attempts": [],
    }
    value.update(fields)
    return value


def attempt(
    number: int, started: str, ended: str | None = None, outcome: str | None = None, reason: str | None = None
) -> dict[str, Any]:
    return {
        "number": number,
        "training_job_name": f"job-abcdef12-{number}",
        "started_at": started,
        "ended_at": ended,
        "outcome": outcome,
        "reason": reason,
    }


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(output: str) -> list[list[str]]:
    """The table's data rows, split on runs of two or more spaces."""
    lines = output.strip().splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines[2:]]


# ---------------------------------------------------------------------- tables (pure)


def test_status_table_columns_and_durations() -> None:
    jobs = [
        job(
            "vit-large",
            "running",
            10,
            instances=2,
            demand={"ml.p5.48xlarge": 2},
            training_job_name="job-abcdef12-1",
            attempts=[attempt(1, "2024-05-01T10:58:00.000Z")],
        ),
        job(
            "resnet",
            "pending",
            5,
            position=1,
            reason="waiting for 2 instances of ml.p5.48xlarge",
            attempts=[attempt(1, "2024-05-01T09:00:00Z", "2024-05-01T11:55:30Z", "preempted")],
        ),
        job("hetero", "pending", 1, position=2, demand={"ml.p5.48xlarge": 2, "ml.c5.xlarge": 1}, instances=2),
        job("done", "completed", 1, owner="local-anonymous"),
    ]

    table = status_table(jobs, NOW)

    header = table.splitlines()[0]
    assert [
        title in header
        for title in (
            "Job Name",
            "State",
            "Priority",
            "Pool",
            "Instances",
            "Waiting/Running for",
            "Attempts",
            "Owner",
            "Reason",
        )
    ] == [True] * 9
    assert rows(table) == [
        ["vit-large", "running", "10", "ml.p5.48xlarge", "2", "1h02m", "1", "user/alice"],
        [
            "resnet",
            "pending",
            "5",
            "ml.p5.48xlarge",
            "1",
            "4m30s",
            "1",
            "user/alice",
            "waiting for 2 instances of ml.p5.48xlarge",
        ],
        [
            "hetero",
            "pending",
            "1",
            "ml.p5.48xlarge + ml.c5.xlarge",
            "2 ml.p5.48xlarge + 1 ml.c5.xlarge",
            "1h00m",
            "0",
            "user/alice",
        ],
        ["done", "completed", "1", "ml.p5.48xlarge", "1", "-", "0", "local-anonymous"],
    ]


def test_long_reasons_are_clipped_to_one_line() -> None:
    reason = "preempted for urgent (priority 10 > 1)\nwhich lacks one instance of ml.p5.48xlarge and more words"

    table = status_table([job("a", "preempting", 1, reason=reason)], NOW)

    assert len(table.splitlines()) == 3
    assert table.splitlines()[2].rstrip().endswith("…")


@pytest.mark.parametrize(
    ("owner", "short"),
    [
        (ALICE, "user/alice"),
        ("arn:aws:sts::123456789012:assumed-role/Scientist/alice", "assumed-role/Scientist/alice"),
        ("local-anonymous", "local-anonymous"),
        (None, "-"),
    ],
)
def test_owners_are_shown_without_their_account(owner: str | None, short: str) -> None:
    assert short_owner(owner) == short


def test_pools_table_shows_free_capacity_and_unlimited_pools() -> None:
    table = pools_table(
        [
            {"pool": "ml.p5.48xlarge", "capacity": 2, "in_use": 2, "pending": 3},
            {"pool": "ml.g5.xlarge", "capacity": 8, "in_use": 3, "pending": 0},
            {"pool": "ml.c5.xlarge", "capacity": None, "in_use": 4, "pending": 0},
        ]
    )

    assert rows(table) == [
        ["ml.p5.48xlarge", "2", "2", "0", "3"],
        ["ml.g5.xlarge", "8", "3", "5", "0"],
        ["ml.c5.xlarge", "unlimited", "4", "-", "0"],
    ]


def test_pools_table_shows_spot_interruption_rates_with_adaptive_spot() -> None:
    rate = {"spot_interruptions_per_hour": 0.6931}
    table = pools_table(
        [
            {"pool": "ml.g5.xlarge", "capacity": 8, "in_use": 3, "pending": 0, **rate},
            {"pool": "ml.g5.xlarge:spot", "capacity": 4, "in_use": 4, "pending": 2, **rate},
            {"pool": "ml.p5.48xlarge", "capacity": 2, "in_use": 2, "pending": 3},
        ]
    )

    assert "Spot interruptions/h" in table
    assert rows(table) == [
        ["ml.g5.xlarge", "8", "3", "5", "0", "0.69"],
        ["ml.g5.xlarge:spot", "4", "4", "0", "2", "0.69"],
        ["ml.p5.48xlarge", "2", "2", "0", "3", "-"],
    ]


def test_pools_table_shows_warm_instances_in_use_never_free() -> None:
    table = pools_table(
        [
            {"pool": "ml.p5.48xlarge", "capacity": 4, "in_use": 3, "warm": 2, "pending": 1},
            {"pool": "ml.g5.xlarge", "capacity": 8, "in_use": 3, "warm": 0, "pending": 0},
        ]
    )

    assert "Warm" in table
    assert rows(table) == [["ml.p5.48xlarge", "4", "3", "2", "1", "1"], ["ml.g5.xlarge", "8", "3", "0", "5", "0"]]


def test_describe_names_every_pool_of_a_heterogeneous_job() -> None:
    described = job("hetero", "pending", 1, position=2, demand={"ml.p5.48xlarge": 2, "ml.c5.xlarge": 1}, instances=2)

    text = describe_text(described, NOW)

    assert re.search(r"^Pool:\s+ml.p5.48xlarge \+ ml.c5.xlarge$", text, flags=re.MULTILINE)
    assert re.search(r"^Instances:\s+2 ml.p5.48xlarge \+ 1 ml.c5.xlarge$", text, flags=re.MULTILINE)
    assert re.search(r"^Position:\s+2 in ml.p5.48xlarge \(its first pool\)$", text, flags=re.MULTILINE)


def test_describe_lists_every_attempt_with_its_outcome() -> None:
    described = job(
        "vit",
        "running",
        2,
        reason="started",
        training_job_name="job-abcdef12-2",
        attempts=[
            attempt(1, "2024-05-01T11:00:00Z", "2024-05-01T11:10:00Z", "preempted", "preempted for urgent"),
            attempt(2, "2024-05-01T11:30:00Z"),
        ],
    )

    text = describe_text(described, NOW)

    assert "State:         running" in text
    assert "SageMaker job: job-abcdef12-2" in text
    assert "Submitted:     2024-05-01 11:00:00Z (1h00m ago)" in text
    attempts = text.split("Attempts:\n", 1)[1]
    assert rows(attempts) == [
        [
            "1",
            "job-abcdef12-1",
            "2024-05-01 11:00:00Z",
            "2024-05-01 11:10:00Z",
            "10m00s",
            "preempted",
            "preempted for urgent",
        ],
        ["2", "job-abcdef12-2", "2024-05-01 11:30:00Z", "(running)", "30m00s", "-"],
    ]


@pytest.mark.parametrize(
    ("reason", "keep_alive_s", "shown"),
    [
        (None, 1800, "keep-alive 1800 s"),
        ("preempted", 0, "preempted; keep-alive 0 s"),
        ("preempted", None, "preempted"),
    ],
)
def test_describe_shows_the_keep_alive_the_queue_sent_with_an_attempt(
    reason: str | None, keep_alive_s: int | None, shown: str
) -> None:
    ended = {
        **attempt(1, "2024-05-01T11:00:00Z", "2024-05-01T11:10:00Z", "completed", reason),
        "keep_alive_s": keep_alive_s,
    }
    described = job("vit", "completed", 1, attempts=[ended])

    assert rows(describe_text(described, NOW).split("Attempts:\n", 1)[1])[0][-1] == shown


# ---------------------------------------------------------------------- commands


@pytest.fixture
def busy(world: QueueWorld, tmp_path: Path) -> QueueWorld:
    """One job running, two waiting behind it (priorities 9, 5 and 1), all submitted with the CLI."""
    for name, priority in (("running-job", 9), ("second", 5), ("third", 1)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(training_request(name)))
        assert cli.main(["--api-url", world.url, "submit", str(path), "--priority", str(priority)]) == 0
    world.progress("running-job", "InProgress", secondary_status="Training")
    return world


def test_status_prints_the_queue_in_scheduling_order(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", "--api-url", busy.url)

    assert (code, err) == (0, "")
    table = rows(out)
    assert [(row[0], row[1], row[2]) for row in table] == [
        ("running-job", "running", "9"),
        ("second", "pending", "5"),
        ("third", "pending", "1"),
    ]


def test_status_filters_and_json(
    busy: QueueWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMQ_API_URL", busy.url)
    cli.main(["cancel", "third"])
    capsys.readouterr()

    _, active, _ = run(capsys, "status")
    _, everything, _ = run(capsys, "status", "--all")
    _, pending, _ = run(capsys, "status", "--state", "pending", "--pool", POOL)
    _, as_json, _ = run(capsys, "status", "--json", "--state", "running,cancelled")

    assert [row[0] for row in rows(active)] == ["running-job", "second"]
    assert [row[0] for row in rows(everything)] == ["running-job", "second", "third"]
    assert [row[0] for row in rows(pending)] == ["second"]
    assert [(j["name"], j["state"]) for j in json.loads(as_json)] == [
        ("running-job", "running"),
        ("third", "cancelled"),
    ]


def test_status_of_an_empty_queue_says_so(world: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--api-url", world.url, "status") == (
        0,
        "No active jobs (smq status --all shows finished ones).\n",
        "",
    )


def test_describe_a_pending_job(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--api-url", busy.url, "describe", "third")

    assert code == 0
    assert re.search(r"^State:\s+pending$", out, flags=re.MULTILINE)
    assert re.search(
        r"^Reason:\s+1 job ahead in ml.m5.xlarge; \S+ is first and waits for instances$", out, re.MULTILINE
    )
    assert re.search(r"^Position:\s+2 in ml.m5.xlarge$", out, flags=re.MULTILINE)
    assert "Attempts: none yet" in out


def test_describe_a_preempted_job_shows_both_attempts(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    first = busy.attempt_name("running-job")
    run(capsys, "--api-url", busy.url, "priority", "third", "20")
    busy.finish_stops()
    second_attempt = busy.attempt_name("third")

    code, out, _ = run(capsys, "--api-url", busy.url, "describe", "running-job")

    assert code == 0
    assert re.search(r"^State:\s+pending$", out, flags=re.MULTILINE)
    assert "SageMaker job:" not in out
    attempts = rows(out.split("Attempts:\n", 1)[1])
    assert [(row[0], row[1], row[5]) for row in attempts] == [("1", first, "preempted")]
    assert busy.job("third").state == "starting" and second_attempt.startswith("third-")


def test_describe_json_is_the_api_job(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--api-url", busy.url, "describe", "second", "--json")

    assert json.loads(out)["position"] == 1


def test_submit_prints_where_the_job_went(busy: QueueWorld, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(training_request("from-file", priority=2)))

    code, out, err = run(capsys, "--api-url", busy.url, "submit", str(path), "--priority", "4")

    assert (code, err) == (0, "")
    assert out.startswith("Queued training job from-file (priority 4) in pool ml.m5.xlarge x1: pending, position 2")
    assert "entry point train.py" in out and "epochs=3" in out and "model='vit_tiny'" in out
    estimate = out.splitlines()[1]
    assert estimate.startswith("Estimated start: 2024-01-01 02:00 UTC (") and "assumes 2 jobs ahead" in estimate


def test_submit_reads_stdin(
    world: QueueWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(training_request("piped"))))

    code, _, _ = run(capsys, "--api-url", world.url, "submit", "-", "--json")

    assert code == 0
    assert world.job("piped").priority == 0


def test_cancel_and_priority(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--api-url", busy.url, "priority", "third", "7") == (
        0,
        "Job third: priority 7 (pending, position 1 in ml.m5.xlarge)\n",
        "",
    )
    assert run(capsys, "--api-url", busy.url, "cancel", "second")[1] == "Job second: cancelled\n"
    code, out, _ = run(capsys, "--api-url", busy.url, "cancel", "running-job")
    assert code == 0
    assert out == f"Job running-job: stopping (SageMaker job {busy.attempt_name('running-job')} is being stopped)\n"


def test_pools(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--api-url", busy.url, "pools")

    assert code == 0
    assert rows(out) == [[POOL, "1", "1", "0", "2"]]


def test_watch_redraws_until_its_count(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--api-url", busy.url, "watch", "--interval", "0.01", "--count", "2")

    assert code == 0
    assert out.count("Every 0.01s: smq status") == 2
    assert out.count("running-job") == 2


def test_watch_stops_cleanly_on_ctrl_c(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    args = cli.build_parser().parse_args(["--api-url", busy.url, "watch"])

    assert cmd_watch(args, sleep=interrupted) == 0
    assert capsys.readouterr().out.count("Every 2s: smq status") == 1


# ---------------------------------------------------------------------- errors and exit codes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["priority", "second", "2000000"], "refused (400): priority 2000000 is out of range"),
        (["cancel", "nobody"], "refused (404): no job named 'nobody'"),
    ],
)
def test_api_refusals_exit_1_with_the_message_on_one_line(
    busy: QueueWorld, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "--api-url", busy.url, *argv)

    assert (code, out) == (1, "")
    assert err.startswith(f"smq: error: {message}")
    assert err.count("\n") == 1


def test_changing_a_finished_job_is_a_conflict(busy: QueueWorld, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "--api-url", busy.url, "cancel", "third")

    code, _, err = run(capsys, "--api-url", busy.url, "priority", "third", "3")

    assert code == 1
    assert err.startswith("smq: error: refused (409):")


def test_submitting_to_an_unknown_pool_is_refused(
    world: QueueWorld, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(training_request("big", pool="ml.p5.48xlarge")))

    code, _, err = run(capsys, "--api-url", world.url, "submit", str(path))

    assert code == 1
    assert "ml.p5.48xlarge" in err and "(field: ResourceConfig.InstanceType)" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {path}: No such file or directory"),
        ("{not json", "{path} is not valid JSON: Expecting property name"),
        ("[1, 2]", "{path} must hold one CreateTrainingJob request"),
    ],
)
def test_a_bad_request_file_is_a_usage_error(
    world: QueueWorld, capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "job.json"
    if content is not None:
        path.write_text(content)

    code, _, err = run(capsys, "--api-url", world.url, "submit", str(path))

    assert code == 2
    assert err.startswith("smq: error: " + message.format(path=path))
    assert err.count("\n") == 1


def test_no_api_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status")

    assert code == 2
    assert err.startswith("smq: error: no smq API URL")


def test_an_unreachable_api_exits_1_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/prod"

    code, _, err = run(capsys, "status", "--api-url", url)

    assert code == 1
    assert err == f"smq: error: cannot reach the smq API at {url}: Connection refused\n"


@pytest.mark.parametrize(
    "argv", [["frobnicate"], ["priority", "job"], ["priority", "job", "high"], ["watch", "--interval", "0"], []]
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)

    assert code == 2
    assert "usage: smq" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")

    assert code == 0
    for command in ("status", "describe", "submit", "cancel", "priority", "pools", "watch", "local"):
        assert command in out


def test_an_unexpected_failure_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_args: argparse.Namespace) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(cli, "cmd_pools", broken)

    code, _, err = run(capsys, "pools", "--api-url", "http://127.0.0.1:9/prod")

    assert code == 1
    assert err == "smq: error: RuntimeError: disk on fire (set SMQ_DEBUG=1 for the traceback)\n"


def test_without_the_local_extra_smq_local_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "smq.local.cli", None)

    code, _, err = run(capsys, "local", "up")

    assert code == 2
    assert "pip install 'smq-sagemaker[local]'" in err


def test_a_failing_api_exits_1_saying_so(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(_event: dict[str, Any], _context: Any) -> dict[str, Any]:
        raise RuntimeError("handler bug")

    with ApiFront(broken) as front:
        code, _, err = run(capsys, "pools", "--api-url", front.url)

    assert code == 1
    assert err == "smq: error: the API failed (502): Internal server error\n"
