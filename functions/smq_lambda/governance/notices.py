"""What a job's owner is told when the queue or its governance changes their job: pure values,
published by the notifier port (adapters/sns_notifier.py) after the change was written.

Each Notice carries SNS message attributes (`owner`, `team`, `job`, `action`, all strings) so a
team subscribes to the notifications topic with a filter policy and hears only of its own jobs
(README, "Notifications"). An attribute the queue does not know (the team of a job without one,
the creator of a training job started outside the queue) is left out rather than sent empty: SNS
refuses empty values, and a filter on `team` then matches no team's subscription.

A new kind of notice is a new NoticeAction member and a builder here; its caller publishes it
after its own conditional write, as the others do (a budget notice after its threshold's mark).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from smq_lambda.domain.costs.budgets import Budget, BudgetAction, month_start, next_month_start
from smq_lambda.domain.jobs.model import Job

SUBJECT_MAX = 100
"""SNS refuses a longer subject."""
ATTRIBUTE_MAX = 256
"""Room enough for an owner's ARN; an attribute value is cut there so no publish is refused for it."""


class NoticeAction(StrEnum):
    """The `action` attribute: what happened to the job."""

    IDLE_STOP = "idle-stop"
    LOW_UTILIZATION = "low-utilization"
    SPOT_FALLBACK = "spot-fallback"
    RETRY = "retry"
    POLICY_STOP = "policy-stop"
    PREEMPTED = "preempted"
    PLAN_WINDOW_CLOSED = "plan-window-closed"
    """Stopped before its training plan's window ended; it waits for its next window."""
    BUDGET = "budget"
    """A team's spend this month reached a threshold of its budget (service/budget_warnings.py)."""


_HEADLINES = {
    NoticeAction.IDLE_STOP: "stopped: its GPUs sat idle",
    NoticeAction.LOW_UTILIZATION: "warning: low GPU utilization",
    NoticeAction.SPOT_FALLBACK: "moved from spot to on-demand",
    NoticeAction.RETRY: "retried after an infrastructure failure",
    NoticeAction.POLICY_STOP: "stopped by the policy",
    NoticeAction.PREEMPTED: "preempted: it waits in the queue again",
    NoticeAction.PLAN_WINDOW_CLOSED: "stopped before its training plan's window ended: it waits in the queue again",
    NoticeAction.BUDGET: "the last counted before its team reached a budget threshold",
}


@dataclass(frozen=True)
class Notice:
    """One message to a job's owner. `job` is the queue's job name (a training job's name for one
    started outside the queue); `owner` and `team` are None when unknown."""

    job: str
    owner: str | None
    team: str | None
    action: NoticeAction
    subject: str
    message: str

    def attributes(self) -> Mapping[str, str]:
        """The message attributes a filter policy matches on; unknown ones left out."""
        values = {"owner": self.owner, "team": self.team, "job": self.job, "action": str(self.action)}
        return {key: value[:ATTRIBUTE_MAX] for key, value in values.items() if value}


def about_job(job: Job, action: NoticeAction, reason: str) -> Notice:
    """A notice to the owner of a queued job; `reason` is the one the job now records."""
    attempt = job.current_attempt
    lines = [
        f"smq job {job.name} ({job.where.pool}, priority {job.priority}) was {_HEADLINES[action]}.",
        "",
        reason,
        "",
        f"Owner: {job.owner}",
        f"Team: {job.team or 'none'}",
        f"State: {job.state}",
    ]
    if attempt is not None:
        lines.append(f"Attempt {attempt.number}: {attempt.training_job_name}")
    lines.append(f"Follow it with: smq describe {job.name}")
    return Notice(
        job=job.name,
        owner=job.owner or None,
        team=job.team or None,
        action=action,
        subject=subject(f"smq: job {job.name} {_HEADLINES[action]}"),
        message="\n".join(lines),
    )


def about_budget(job: Job, team: str, budget: Budget, spent_usd: float, threshold: float, now: datetime) -> Notice:
    """A notice to `team` (and the owner of `job`, whose attempt's end brought the spend there) that
    its spend this month reached `threshold` of its budget."""
    month = f"{month_start(now):%Y-%m}"
    share = f"{threshold:.0%}"
    consequence = (
        "its new jobs wait while their estimated cost does not fit what is left (a hold budget)"
        if budget.action is BudgetAction.HOLD
        else "jobs go on starting (a warn budget)"
    )
    lines = [
        f"Team {team} has spent ${spent_usd:,.2f} of its ${budget.monthly_usd:,.2f} budget for {month} (UTC).",
        "",
        f"At 100%, {consequence}. The budget starts again on {next_month_start(now):%Y-%m-%d} 00:00 UTC.",
        f"The last attempt counted: {job.name} (owner {job.owner}).",
        "See it with: smq costs --by team",
    ]
    return Notice(
        job=job.name,
        owner=job.owner or None,
        team=team,
        action=NoticeAction.BUDGET,
        subject=subject(f"smq: team {team} has spent {share} of its {month} budget"),
        message="\n".join(lines),
    )


def about_outside_job(
    training_job_name: str,
    action: NoticeAction,
    message: str,
    *,
    subject_line: str | None = None,
    started_by: str | None = None,
) -> Notice:
    """A notice about a training job started outside the queue (stopped by the policy, or idle):
    its `job` is the training job's name, its owner whoever started it when known, and it has no
    team (the queue reads a team from a queued job's tags, under the configured tag key)."""
    return Notice(
        job=training_job_name,
        owner=started_by,
        team=None,
        action=action,
        subject=subject(subject_line or f"smq: training job {training_job_name} {_HEADLINES[action]}"),
        message=message,
    )


def subject(text: str) -> str:
    """`text` as SNS takes a subject: printable ASCII, at most SUBJECT_MAX characters."""
    printable = "".join(char if " " <= char <= "~" else "?" for char in text)
    return printable if len(printable) <= SUBJECT_MAX else printable[: SUBJECT_MAX - 3] + "..."
