"""A pending job's estimated start as the client shows it: `smq status`, `smq describe`, and the
waiting lines of `fit()`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from smq.follow import queue_changes
from smq.formatting import describe_text, status_table
from smq.jobs import now_utc
from smq.start_estimates import await_first_estimate, start_phrase

from tests.client.test_cli import NOW, job

ASSUMED = "assumes 1 job ahead runs as tagged (smq:expected-duration); no new higher-priority jobs"


def estimate(
    at: str | None,
    assumed: str = ASSUMED,
    *,
    earliest: str | None = None,
    latest: str | None = None,
    kind: str = "point",
) -> dict[str, Any]:
    return {
        "at": at,
        "earliest": earliest or at,
        "latest": latest or at,
        "kind": kind,
        "assumed": assumed,
        "computed_at": "2024-05-01T11:59:00.000Z",
    }


def after(**delta: float) -> str:
    return (NOW + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def cells(table: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()]


def test_status_shows_an_estimated_start_column_when_a_pending_job_has_one() -> None:
    jobs = [
        job("running", "running", 9, attempts=[], training_job_name="running-1"),
        job("soon", "pending", 5, position=1, estimated_start=estimate("2024-05-01T14:10:00.000Z")),
        job("unknown", "pending", 1, position=2, estimated_start=estimate(None, "unknown: it waits for x")),
        job("unseen", "pending", 0, position=3),
    ]

    table = status_table(jobs, NOW)

    header, _, *rows = cells(table)
    assert header[5:8] == ["Waiting/Running for", "Estimated Start", "Attempts"]
    assert [row[6] for row in rows[1:]] == ["in about 2 h", "—", "—"]
    assert rows[0][5:7] == ["1h00m", "0"], "blank for a live job"


def test_status_has_no_estimated_start_column_when_no_job_has_one() -> None:
    jobs = [job("unknown", "pending", 1, position=1, estimated_start=estimate(None)), job("unseen", "pending", 0)]

    assert "Estimated Start" not in status_table(jobs, NOW)


def test_describe_tells_when_and_what_it_assumes() -> None:
    described = job("soon", "pending", 5, position=2, estimated_start=estimate("2024-05-01T14:05:00.000Z"))

    text = describe_text(described, NOW)

    assert f"Estimated start: 2024-05-01 14:05 UTC (in about 2 h) — {ASSUMED}" in text.splitlines()


def test_describe_says_when_it_cannot_tell() -> None:
    why = "unknown: it waits for mystery, whose duration is unknown (no smq:expected-duration tag, no MaxRuntimeInSeconds)"
    described = job("stuck", "pending", 5, position=2, estimated_start=estimate(None, why))

    text = describe_text(described, NOW)

    assert (
        "Estimated start: unknown — it waits for mystery, whose duration is unknown "
        "(no smq:expected-duration tag, no MaxRuntimeInSeconds)"
    ) in text.splitlines()


def test_describe_says_a_job_held_by_its_budget_starts_when_the_budget_allows() -> None:
    why = (
        "when team vision's hold budget allows it: after the budget resets on 2024-06-01 00:00 UTC, "
        "or when the budget is raised"
    )
    described = job("held", "pending", 5, position=1, estimated_start=estimate(None, why))

    text = describe_text(described, NOW)

    assert f"Estimated start: {why}" in text.splitlines()


@pytest.mark.parametrize("state", ["running", "pending"])
def test_describe_shows_no_estimate_when_there_is_none(state: str) -> None:
    assert "Estimated start" not in describe_text(job("a", state, 0, position=1), NOW)


@pytest.mark.parametrize(
    ("estimated", "text"),
    [
        (estimate(after(minutes=5)), "in about 5 min"),
        (estimate(after(seconds=40)), "in about 40 s"),
        (estimate(after(hours=2, minutes=10)), "in about 2 h"),
        (estimate(after(days=3)), "in about 3 days"),
        (estimate(after(seconds=0)), "now"),
        (estimate(after(minutes=-1)), "now"),
        (estimate(after(minutes=5), earliest=after(minutes=3), latest=after(minutes=7), kind="band"), "in 3–7 min"),
        (estimate(after(minutes=5), earliest=after(minutes=0), latest=after(minutes=7), kind="band"), "within 7 min"),
        (
            estimate(after(minutes=5), earliest=after(minutes=4.9), latest=after(minutes=5.1), kind="band"),
            "in about 5 min",
        ),
        (estimate(after(minutes=50), earliest=after(minutes=20), latest=after(hours=3), kind="band"), "in 20 min–3 h"),
        (
            {**estimate(after(minutes=5), earliest=after(minutes=3), kind="band"), "latest": None},
            "in 3 min or later",
        ),
        (estimate(after(minutes=40), kind="ceiling"), "in at most 40 min"),
        (estimate(None), None),
        ({"at": after(minutes=5), "assumed": ASSUMED}, "in about 5 min"),
    ],
)
def test_start_phrase(estimated: dict[str, Any], text: str | None) -> None:
    assert start_phrase(estimated, NOW) == text


def in_a_while() -> str:
    at = now_utc() + timedelta(hours=2, minutes=10, seconds=30)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_the_waiting_line_of_fit_says_when_the_job_should_start() -> None:
    waiting = job("patient", "pending", 0, position=2, estimated_start=estimate(in_a_while()))

    assert queue_changes(None, waiting) == [
        "patient is pending at position 2 in ml.p5.48xlarge; estimated start in about 2 h"
    ]


def test_a_first_estimate_is_said_though_the_position_did_not_move() -> None:
    before = job("patient", "pending", 0, position=2)
    after = {**before, "estimated_start": estimate(in_a_while())}

    assert queue_changes(before, after) == ["patient is at position 2 in ml.p5.48xlarge; estimated start in about 2 h"]
    assert queue_changes(after, after) == [], "a later estimate alone is not news"


def test_without_an_estimate_the_waiting_line_is_unchanged() -> None:
    waiting = job("patient", "pending", 0, position=2, estimated_start=estimate(None))

    assert queue_changes(None, waiting) == ["patient is pending at position 2 in ml.p5.48xlarge"]


def test_submit_waits_for_the_pass_its_submission_kicked_and_no_longer() -> None:
    answer = {"name": "j", "state": "pending", "estimate_at_next_pass": True}
    looks = iter([answer, answer, {"name": "j", "state": "pending", "estimated_start": {"at": None, "assumed": "x"}}])
    moments = iter(range(100))

    seen = await_first_estimate(
        lambda _name: next(looks), answer, wait_s=10, clock=lambda: next(moments), sleep=lambda _s: None
    )

    assert seen is not None and seen["estimated_start"]["assumed"] == "x"
    never = await_first_estimate(
        lambda _name: answer, answer, wait_s=5, clock=lambda: next(moments), sleep=lambda _s: None
    )
    assert never is None
    assert await_first_estimate(lambda _name: answer, {"name": "j", "state": "running"}) == {
        "name": "j",
        "state": "running",
    }
