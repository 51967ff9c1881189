"""The sentences of a pass with team quotas: each names the rule that applied (within a quota,
borrowing, reclaimed, at quota), so `smq describe` tells a team why, not only what."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smq_lambda.domain.config.teams import UNASSIGNED, Teams, named
from smq_lambda.scheduling.reasons import PoolView, count


def possessive(team: str) -> str:
    """`team`'s, in a sentence ("vision's"; the unassigned group is "unassigned jobs'")."""
    return "unassigned jobs'" if team == UNASSIGNED else f"{team}'s"


def _instances(demand: Mapping[str, int]) -> str:
    return " and ".join(f"{count(n, 'instance')} of {pool}" for pool, n in demand.items())


def within_quota(team: str, views: Sequence[PoolView], quotas: Mapping[str, tuple[int, int]]) -> str:
    """`quotas`: per pool, (the team's claim before this job, its quota)."""
    parts = []
    for view in views:
        if view.capacity is None:
            parts.append(f"{view.pool} has no capacity limit")
            continue
        claim, quota = quotas[view.pool]
        parts.append(
            f"needs {view.need}, {named(team)} uses {claim} of its quota of {quota} {view.pool}; "
            f"{view.shown_free} of {view.capacity} free"
        )
    return f"within {possessive(team)} quota: " + "; ".join(parts)


def backfill_within_quota(
    team: str, views: Sequence[PoolView], quotas: Mapping[str, tuple[int, int]], head: str
) -> str:
    """`quotas`: per pool, (the team's claim before this job, its quota)."""
    within = within_quota(team, views, quotas).removeprefix(f"within {possessive(team)} quota: ")
    return (
        f"backfill within {possessive(team)} quota: {within}; {named(team)}'s head {head} waits; stopped first "
        f"when it can start"
    )


def backfill_borrowing(
    team: str, beyond: Mapping[str, int], lenders: Mapping[str, Sequence[tuple[str, int]]], head: str
) -> str:
    return (
        f"backfill, {borrowing(team, beyond, lenders).removesuffix('; stopped first when the lender needs it back')}; "
        f"{named(team)}'s head {head} waits; stopped first when it can start or the lender needs it back"
    )


def awaiting_release(team: str, waits: Mapping[str, int], *, borrowing: bool = False) -> str:
    """`borrowing`: the job runs beyond its team's quota once they are released (its team may borrow)."""
    where = f"beyond {possessive(team)} quota, borrowing" if borrowing else f"within {possessive(team)} quota"
    return f"{where}; waiting for {_instances(waits)} being released by stopping jobs"


def no_room_within_quota(team: str, view: PoolView) -> str:
    return (
        f"within {possessive(team)} quota, but {view.pool} has {view.shown_free} free and {view.releasing} being "
        f"released, and the rest is held by jobs that borrow nothing (outside the queue, or a pool that shrank)"
    )


def reclaimed(for_team: str, for_job: str, team: str, pools: Sequence[str]) -> str:
    return (
        f"reclaimed for {named(for_team)}/{for_job}: {named(team)} was borrowing {' and '.join(pools)} beyond its "
        f"quota, and {named(for_team)} needs its own quota back (reclaim stops borrowed jobs whatever their priority)"
    )


def borrowing(team: str, beyond: Mapping[str, int], lenders: Mapping[str, Sequence[tuple[str, int]]]) -> str:
    parts = []
    for pool, n in beyond.items():
        lent = " and ".join(f"{k} of {possessive(lender)}" for lender, k in lenders.get(pool, ())) or str(n)
        parts.append(f"{lent} {pool}")
    return (
        f"borrowing {'; '.join(parts)} idle quota ({named(team)} uses all of its own); stopped first when the "
        f"lender needs it back"
    )


def beyond_reach(team: str, pool: str, need: int, reach: int) -> str:
    return (
        f"needs {count(need, 'instance')} of {pool}, more than {named(team)} may ever hold there ({reach}: its "
        f"quota, what its sharing and borrow limit let it borrow, less the quotas other teams reserve)"
    )


def at_quota(team: str, beyond: Mapping[str, int], why_not: str, protected: int) -> str:
    shielded = (
        f"; {count(protected, 'lower-priority job')} of {named(team)} protected by the preemption rules"
        if (protected)
        else ""
    )
    return (
        f"{named(team)} would be {_instances(beyond)} beyond its quota and cannot borrow: {why_not}; no "
        f"lower-priority job of {named(team)} can make room{shielded}"
    )


def preempted_in_team(team: str, head: str, head_priority: int, priority: int, beyond: Mapping[str, int]) -> str:
    return (
        f"preempted for {head} (priority {head_priority} > {priority}) within {possessive(team)} quota, which "
        f"lacks {_instances(beyond)}"
    )


def noting_team(reason: str, team: str | None, teams: Teams) -> str:
    """`reason`, after the news that the job's team tag names no configured team, when it does not."""
    if team is None or not teams.unconfigured(team):
        return reason
    return f"team {team!r} is no longer configured; runs as unassigned; {reason}"
