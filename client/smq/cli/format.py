"""How the `smq` CLI shows jobs and pools: pure functions from API shapes to text, so the tables
are tested without a queue (the clock is a parameter)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tabulate import tabulate

from smq.jobs import describe_age, instances_text, live_training_job_name, parse_time, state_since

STATUS_HEADERS = (
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
POOL_HEADERS = ("Pool", "Capacity", "In use", "Free", "Pending")
ATTEMPT_HEADERS = ("#", "SageMaker job", "Started", "Ended", "Ran for", "Outcome", "Reason")
REASON_WIDTH = 60


def short_owner(owner: str | None) -> str:
    """`user/alice` for `arn:aws:iam::123456789012:user/alice`: the part that tells people apart."""
    if not owner:
        return "-"
    parts = owner.split(":", 5)
    return parts[5] if len(parts) == 6 and parts[0] == "arn" else owner


def clip(text: str | None, width: int = REASON_WIDTH) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def status_table(jobs: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """The queue state table, rows in the order given (the API's scheduling order)."""
    rows = [
        (
            job["name"],
            job["state"],
            job["priority"],
            job["pool"],
            instances_text(job),
            describe_age(state_since(job), now) if state_since(job) else "-",
            len(job.get("attempts") or ()),
            short_owner(job.get("owner")),
            clip(job.get("reason")),
        )
        for job in jobs
    ]
    return tabulate(rows, headers=STATUS_HEADERS, tablefmt="simple", disable_numparse=True)


def pools_table(pools: Iterable[Mapping[str, Any]]) -> str:
    rows = []
    for pool in pools:
        capacity = pool.get("capacity")
        in_use = int(pool.get("in_use") or 0)
        rows.append(
            (
                pool["pool"],
                "unlimited" if capacity is None else capacity,
                in_use,
                "-" if capacity is None else max(int(capacity) - in_use, 0),
                pool.get("pending", 0),
            )
        )
    return tabulate(rows, headers=POOL_HEADERS, tablefmt="simple", disable_numparse=True)


def describe_text(job: Mapping[str, Any], now: datetime) -> str:
    """`smq describe`: the job, why it is in its state, and every attempt. Why a pending job waits is
    the server's reason, computed when read; the client adds nothing of its own."""
    submitted = parse_time(job.get("submitted_at"))
    updated = parse_time(job.get("updated_at"))
    fields: list[tuple[str, Any]] = [
        ("Job", job["name"]),
        ("State", job["state"]),
        ("Reason", job.get("reason") or "-"),
        ("Priority", job["priority"]),
        ("Pool", job["pool"]),
        ("Instances", instances_text(job)),
        ("Owner", job.get("owner") or "-"),
        ("Submitted", _time_and_age(submitted, now)),
        ("Updated", _time_and_age(updated, now)),
    ]
    if job["state"] == "pending":
        fields.append(("Position", f"{job.get('position')} in {job['pool']}"))
    live = live_training_job_name(job)
    if live:
        fields.append(("SageMaker job", live))
    width = max(len(label) for label, _ in fields) + 2
    lines = [f"{label + ':':<{width}}{value}" for label, value in fields]
    attempts = job.get("attempts") or []
    lines.append("")
    if not attempts:
        lines.append("Attempts: none yet")
        return "\n".join(lines)
    lines.append("Attempts:")
    rows = []
    for attempt in attempts:
        started = parse_time(attempt.get("started_at"))
        ended = parse_time(attempt.get("ended_at"))
        rows.append(
            (
                attempt["number"],
                attempt["training_job_name"],
                _time(started),
                _time(ended) if ended else "(running)",
                describe_age(started, ended or now) if started else "-",
                attempt.get("outcome") or "-",
                attempt.get("reason") or "",
            )
        )
    lines.append(tabulate(rows, headers=ATTEMPT_HEADERS, tablefmt="simple", disable_numparse=True))
    return "\n".join(lines)


def _time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def _time_and_age(value: datetime | None, now: datetime) -> str:
    return f"{_time(value)} ({describe_age(value, now)} ago)" if value else "-"
