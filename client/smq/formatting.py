"""How `smq` shows jobs, pools and quotas (the CLI and `smq local`'s demo): pure functions from API
shapes to text, so the tables are tested without a queue (the clock is a parameter)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from smq_lambda.domain.costs.cost_totals import OTHER_OWNERS
from tabulate import tabulate

from smq.jobs import (
    TERMINAL_STATES,
    describe_age,
    estimated_cost_text,
    estimated_start,
    instances_text,
    live_training_job_name,
    parse_time,
    pools_text,
    preferences_text,
    state_since,
    usd_text,
)
from smq.start_estimates import start_phrase

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
SPOT_RATE_HEADER = "Spot interruptions/h"
WARM_HEADER = "Warm"
QUOTA_HEADERS = ("Team", "Pool", "Quota", "In use", "Borrowed", "Lent", "Pending", "Sharing")
COST_HEADERS = ("Spend", "On-demand equiv.", "Spot savings", "Waste", "Idle stops avoided", "Accruing", "Attempts")
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
    """The queue state table, rows in the order given (the API's scheduling order); a Team column
    after Priority when some job has a team."""
    teams = any(job.get("team") for job in jobs)
    rows = [
        (
            job["name"],
            job["state"],
            job["priority"],
            *((job.get("team") or "-",) if teams else ()),
            pools_text(job),
            instances_text(job),
            describe_age(state_since(job), now) if state_since(job) else "-",
            len(job.get("attempts") or ()),
            short_owner(job.get("owner")),
            clip(job.get("reason")),
        )
        for job in jobs
    ]
    headers: tuple[str, ...] = (*STATUS_HEADERS[:3], "Team", *STATUS_HEADERS[3:]) if teams else STATUS_HEADERS
    if any(estimated_start_in(job, now) for job in jobs):
        column = headers.index("Waiting/Running for") + 1
        headers = (*headers[:column], "Estimated Start", *headers[column:])
        rows = [
            (*row[:column], estimated_start_in(job, now) or ("—" if job["state"] == "pending" else ""), *row[column:])
            for row, job in zip(rows, jobs, strict=True)
        ]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def estimated_start_in(job: Mapping[str, Any], now: datetime) -> str | None:
    """`in 3–7 min` for a pending job the queue expects to start then (see start_estimates.py);
    None when it cannot tell."""
    return start_phrase(job["estimated_start"], now) if estimated_start(job) is not None else None


def estimated_start_text(job: Mapping[str, Any], now: datetime) -> str | None:
    """`2026-11-23 14:05 UTC (in 2h10m) — assumes ...`; without a time, the queue's own sentence
    (`never starts as configured: ...`, `when team vision's hold budget allows it: ...`), its
    `unknown: ` read `unknown — `. None when the job is not pending or not estimated."""
    estimate = estimated_start(job)
    if estimate is None:
        return None
    at, assumed = estimate
    if at is None:
        return f"unknown — {assumed.removeprefix('unknown: ')}" if assumed.startswith("unknown: ") else assumed
    return f"{at:%Y-%m-%d %H:%M} UTC ({start_phrase(job['estimated_start'], now)}) — {assumed}"


def first_estimate_line(job: Mapping[str, Any], now: datetime) -> str | None:
    """What `smq submit` adds once a pass has seen the job: its estimated start, or the state it
    reached first; None for a pending job the pass did not estimate (beyond the estimated ones)."""
    estimate = estimated_start_text(job, now)
    if estimate is not None:
        return f"Estimated start: {estimate}"
    if job["state"] == "pending":
        return None
    return f"Job {job['name']}: {job['state']}" + (f" ({job['reason']})" if job.get("reason") else "")


def pools_table(pools: Iterable[Mapping[str, Any]]) -> str:
    """`smq pools`; while warm pools hold instances, a column of them after "In use" (they are in
    use, never free); with adaptive spot, a last column: each type's spot interruptions per hour."""
    pools = list(pools)
    adaptive = any("spot_interruptions_per_hour" in pool for pool in pools)
    warm = any(pool.get("warm") for pool in pools)
    rows = []
    for pool in pools:
        capacity = pool.get("capacity")
        in_use = int(pool.get("in_use") or 0)
        row: tuple[Any, ...] = (
            pool["pool"],
            "unlimited" if capacity is None else capacity,
            in_use,
            *((pool.get("warm", 0),) if warm else ()),
            "-" if capacity is None else max(int(capacity) - in_use, 0),
            pool.get("pending", 0),
        )
        rate = pool.get("spot_interruptions_per_hour")
        rows.append((*row, "-" if rate is None else f"{rate:.2f}") if adaptive else row)
    headers = (*POOL_HEADERS[:3], WARM_HEADER, *POOL_HEADERS[3:]) if warm else POOL_HEADERS
    headers = (*headers, SPOT_RATE_HEADER) if adaptive else headers
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def quotas_table(teams: Iterable[Mapping[str, Any]]) -> str:
    """`smq quotas`: one row per team and pool, as GET /quotas lists them."""
    rows = [
        (
            team["team"],
            team["pool"],
            "unlimited" if team.get("quota") is None else team["quota"],
            team.get("in_use", 0),
            team.get("borrowed", 0),
            team.get("lent", 0),
            team.get("pending", 0),
            sharing_text(team),
        )
        for team in teams
    ]
    return tabulate(rows, headers=QUOTA_HEADERS, tablefmt="simple", disable_numparse=True)


def sharing_text(team: Mapping[str, Any]) -> str:
    """`lend_and_borrow (borrows up to 4)` when the team may borrow a limited number of instances."""
    sharing = str(team.get("sharing") or "-")
    limit = team.get("borrow_limit")
    return f"{sharing} (borrows up to {limit})" if sharing == "lend_and_borrow" and limit is not None else sharing


def costs_table(report: Mapping[str, Any]) -> str:
    """`smq costs`: one row per group of GET /costs' answer, then the total. A figure the API gives
    as null (nothing in it could be priced) reads `unpriced`, never $0."""
    by = str(report.get("by") or "team")
    first = "Owner" if by == "owner" else by.removeprefix("tag:") if by.startswith("tag:") else "Team"
    groups = [(short_owner(group["group"]) if by == "owner" else group["group"], group) for group in report["groups"]]
    rows = [(label, *_cost_cells(figures)) for label, figures in [*groups, ("Total", report["total"])]]
    return tabulate(rows, headers=(first, *COST_HEADERS), tablefmt="simple", disable_numparse=True)


def costs_footer(report: Mapping[str, Any]) -> str:
    """What `smq costs` says under its table: what the figures count, the prices, and where the
    rows of owners the caller may not see went."""
    since = str(report.get("since") or "")[:10]
    source = (report.get("prices") or {}).get("source")
    counted = (
        f"Attempts that ended since {since} (UTC); Accruing: what running jobs have cost so far, "
        f"estimated on demand; prices: {source}."
    )
    lines = [counted]
    if any(group["group"] == OTHER_OWNERS for group in report.get("groups") or ()):
        lines.append(
            f"{OTHER_OWNERS}: the owners whose jobs you may not change, summed; only an admin sees each apart."
        )
    return "\n".join(lines)


def _cost_cells(figures: Mapping[str, Any]) -> tuple[str, ...]:
    dollars = ("spend_usd", "on_demand_equivalent_usd", "spot_savings_usd", "waste_usd", "idle_stop_avoided_usd")
    running, unpriced_running = int(figures.get("running") or 0), int(figures.get("unpriced_running") or 0)
    accruing = "-" if not running else usd_text(figures.get("accruing_usd"))
    if running and unpriced_running and figures.get("accruing_usd") is not None:
        accruing += f" (+{unpriced_running} unpriced)"
    attempts, unpriced = int(figures.get("attempts") or 0), int(figures.get("unpriced_attempts") or 0)
    return (
        *(usd_text(figures.get(name)) for name in dollars),
        accruing,
        f"{attempts} ({unpriced} unpriced)" if unpriced else str(attempts),
    )


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
        ("Pool", pools_text(job)),
        ("Instances", instances_text(job)),
        *((("Instance preferences", preferences),) if (preferences := preferences_text(job)) else ()),
        ("Owner", job.get("owner") or "-"),
        *((("Team", job["team"]),) if job.get("team") else ()),
        ("Submitted", _time_and_age(submitted, now)),
        ("Updated", _time_and_age(updated, now)),
    ]
    if job["state"] == "pending":
        fields.append(("Position", _position_text(job)))
        estimate = estimated_start_text(job, now)
        if estimate is not None:
            fields.append(("Estimated start", estimate))
    cost = estimated_cost_text(job)
    if cost and job["state"] not in TERMINAL_STATES:
        fields.append(("Estimated cost", cost))
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
                _attempt_reason(attempt),
            )
        )
    lines.append(tabulate(rows, headers=ATTEMPT_HEADERS, tablefmt="simple", disable_numparse=True))
    return "\n".join(lines)


def _attempt_reason(attempt: Mapping[str, Any]) -> str:
    """The attempt's reason, and the warm-pool keep-alive the queue sent with it when it sent one."""
    keep_alive = attempt.get("keep_alive_s")
    parts = [attempt.get("reason") or "", "" if keep_alive is None else f"keep-alive {keep_alive} s"]
    return "; ".join(part for part in parts if part)


def _time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value else "-"


def _position_text(job: Mapping[str, Any]) -> str:
    """`3 in ml.p5.48xlarge`; a heterogeneous job is listed, and counted, under its first pool only."""
    text = f"{job.get('position')} in {job['pool']}"
    return text + " (its first pool)" if len(job.get("demand") or {}) > 1 else text


def _time_and_age(value: datetime | None, now: datetime) -> str:
    return f"{_time(value)} ({describe_age(value, now)} ago)" if value else "-"
