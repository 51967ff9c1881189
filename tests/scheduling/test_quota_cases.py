"""Table-driven passes with team quotas: lending, borrowing limits, reclaim whatever the priority,
fair share among borrowers, priority inside a team, and the preemption rules' protection."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest
from smq_lambda.domain.config.teams import QUOTA_PREEMPTION_DEFAULTS, PreemptionRules, Quota, Sharing, Teams
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import SchedulerConfig

from .builders import NOW, P5, QueueBuilder, queue
from .test_decide_cases import summary

LEND = Sharing.LEND
RESERVE = Sharing.RESERVE


def quotas(
    capacity: int,
    preemption: PreemptionRules = QUOTA_PREEMPTION_DEFAULTS,
    **teams: int | tuple[int, Sharing] | tuple[int, Sharing, int],
) -> SchedulerConfig:
    """`quotas(2, a=1, b=(1, LEND))`: a p5 pool of `capacity`; per team its quota, sharing, borrow limit."""
    built = {}
    for team, spec in teams.items():
        count, sharing, limit = (*spec, None)[:3] if isinstance(spec, tuple) else (spec, Sharing.LEND_AND_BORROW, None)
        built[team] = Quota(instances={P5: count}, sharing=sharing, borrow_limit=limit)
    return SchedulerConfig(pools={P5: capacity}, teams=Teams(quotas=built), preemption=preemption)


@dataclass(frozen=True)
class Case:
    name: str
    config: SchedulerConfig
    queue: QueueBuilder
    expect: list[str]
    usage: dict[str, float] = field(default_factory=dict)


RECENT = NOW - timedelta(minutes=5)

CASES = [
    Case(
        "each team starts within its own quota",
        quotas(2, a=1, b=1),
        queue().pending("a1", team="a").pending("a2", team="a").pending("b1", team="b"),
        ["start a1", "start b1", "wait a2"],
    ),
    Case(
        "idle quota is lent: a borrows b's",
        quotas(2, a=1, b=1),
        queue().running("a1", team="a").pending("a2", team="a"),
        ["start a2"],
    ),
    Case(
        "reclaim: a lower-priority job of the lender preempts a higher-priority borrower",
        quotas(2, a=1, b=1),
        queue().running("a1", 5, team="a").running("a2", 5, team="a").pending("b1", 0, team="b"),
        ["preempt a2 for b1", "wait b1"],
    ),
    Case(
        "reclaim ignores the minimum runtime: the borrower started a minute ago",
        quotas(2, a=1, b=1),
        queue()
        .running("a1", team="a")
        .running("a2", team="a", started_at=NOW - timedelta(minutes=1))
        .pending("b1", team="b"),
        ["preempt a2 for b1", "wait b1"],
    ),
    Case(
        "reclaim counts stops in flight",
        quotas(2, a=1, b=1),
        queue().running("a1", team="a").preempting("a2", team="a").pending("b1", team="b"),
        ["wait b1"],
    ),
    Case(
        "reclaim never takes a team below its quota",
        quotas(3, a=2, b=1),
        queue().running("a1", team="a").running("a2", team="a").running("u1").pending("b1", team="b"),
        ["preempt u1 for b1", "wait b1"],
    ),
    Case(
        "borrow limit: a may borrow 1 and already does",
        quotas(4, a=(1, Sharing.LEND_AND_BORROW, 1), b=(3, LEND)),
        queue().running("a1", team="a").running("a2", team="a").pending("a3", team="a"),
        ["wait a3"],
    ),
    *(
        Case(
            f"at its quota, a's higher-priority job stops a's lower one ({label})",
            quotas(4, a=spec, b=(2, LEND)),
            queue().running("a1", 1, team="a").running("a2", 1, team="a").pending("a3", 9, team="a"),
            ["preempt a2 for a3", "wait a3"],
        )
        for label, spec in [
            ("lend", (2, LEND)),
            ("reserve", (2, RESERVE)),
            ("borrow_limit 0: a may borrow nothing", (2, Sharing.LEND_AND_BORROW, 0)),
        ]
    ),
    Case(
        "a reclaim for an earlier borrower brings b back within its quota: b3 stops none of b's jobs",
        quotas(4, b=2),
        queue()
        .running("b1", 0, team="b")
        .running("b2", 0, team="b", needs={P5: 3})
        .pending("b3", 1, team="b")
        .pending("u1", 0),
        ["preempt b2 for u1", "wait u1", "wait b3"],
    ),
    Case(
        "a lending team does not borrow",
        quotas(2, a=1, b=(1, LEND)),
        queue().running("b1", team="b").pending("b2", team="b"),
        ["wait b2"],
    ),
    Case(
        "a reserving team's idle quota is not lent",
        quotas(2, a=(1, RESERVE), b=1),
        queue().running("b1", team="b").pending("b2", team="b"),
        ["wait b2"],
    ),
    Case(
        "fair share: the team that used less lately borrows first, whatever the priority",
        quotas(3, a=1, b=1, c=(1, LEND)),
        queue().running("a1", team="a").running("b1", team="b").pending("a2", 9, team="a").pending("b2", 0, team="b"),
        ["start b2", "preempt a1 for a2", "wait a2"],
        usage={"a": 100_000.0, "b": 10.0},
    ),
    Case(
        "fair share with equal history: the team holding less of its quota borrows first",
        quotas(5, a=1, b=2, c=(2, LEND)),
        queue()
        .running("a1", team="a")
        .running("b1", team="b")
        .running("b2", team="b")
        .running("b3", team="b")
        .pending("b4", 9, team="b")
        .pending("a2", team="a"),
        ["start a2", "preempt b3 for b4", "wait b4"],
    ),
    Case(
        "priority inside a team: a's higher-priority job preempts a's lower one",
        quotas(2, a=1, b=1),
        queue().running("a1", 0, team="a").running("b1", 0, team="b").pending("a2", 5, team="a"),
        ["preempt a1 for a2", "wait a2"],
    ),
    Case(
        "priority never crosses teams: b's job of lower priority within its quota is not touched",
        quotas(2, a=1, b=1),
        queue().running("a1", 9, team="a").running("b1", 0, team="b").pending("a2", 5, team="a"),
        ["wait a2"],
    ),
    Case(
        "the minimum runtime protects a job from priority preemption",
        quotas(2, a=1, b=1),
        queue().running("a1", 0, team="a", started_at=RECENT).running("b1", team="b").pending("a2", 5, team="a"),
        ["wait a2"],
    ),
    Case(
        "a job preempted max_preemptions times is not preempted again for priority",
        quotas(2, a=1, b=1),
        queue().running("a1", 0, team="a", past_attempts=3).running("b1", team="b").pending("a2", 5, team="a"),
        ["wait a2"],
    ),
    Case(
        "no protection when the rules are off",
        quotas(2, PreemptionRules(), a=1, b=1),
        queue()
        .running("a1", 0, team="a", started_at=RECENT, past_attempts=3)
        .running("b1", team="b")
        .pending("a2", 5, team="a"),
        ["preempt a1 for a2", "wait a2"],
    ),
    Case(
        "a team that may not borrow counts its stops in flight: it waits, not on another team's idle quota",
        quotas(6, a=(3, LEND), b=3, preemption=PreemptionRules()),
        queue().running("a1", team="a").running("a2", team="a").preempting("a3", team="a").pending("a4", 5, team="a"),
        ["wait a4"],
    ),
    Case(
        "a reserving team's stops in flight cover its head: nothing more of it is stopped",
        quotas(6, a=(3, RESERVE), b=3, preemption=PreemptionRules()),
        queue()
        .running("a1", team="a")
        .running("a2", team="a")
        .preempting("a3", team="a")
        .pending("a4", 5, needs={P5: 2}, team="a"),
        ["preempt a2 for a4", "wait a4"],
    ),
    Case(
        "backfill within quota: a team's small job starts beside its head that cannot borrow",
        replace(quotas(4, a=(2, LEND), b=2), backfill=True),
        queue().running("a1", team="a").pending("a2", needs={P5: 2}, team="a").pending("a3", team="a"),
        ["wait a2", "start a3 (backfill)"],
    ),
    Case(
        "backfill off: the same small job waits behind its team's head",
        quotas(4, a=(2, LEND), b=2),
        queue().running("a1", team="a").pending("a2", needs={P5: 2}, team="a").pending("a3", team="a"),
        ["wait a2"],
    ),
    Case(
        "backfill beyond the quota only as borrowing: a team that lends only does not",
        replace(quotas(4, a=(2, LEND), b=2), backfill=True),
        queue()
        .running("a1", team="a")
        .running("a2", team="a")
        .pending("a3", 5, needs={P5: 2}, team="a")
        .pending("a4", 5, team="a"),
        ["preempt a2 for a3", "preempt a1 for a3", "wait a3"],
    ),
    Case(
        "backfill beyond the quota as borrowing, after the borrowers",
        replace(quotas(5, a=1, b=4), backfill=True),
        queue()
        .running("a1", team="a")
        .pending("a2", needs={P5: 5}, team="a")
        .pending("a3", team="a")
        .pending("b1", needs={P5: 2}, team="b"),
        ["start b1", "wait a2", "start a3 (backfill)"],
    ),
    Case(
        "backfilled job of a team is the first its head stops",
        quotas(3, a=(2, LEND), b=1),
        queue().running("a1", team="a").running("a3", team="a", backfill=True).pending("a2", 5, team="a"),
        ["preempt a3 for a2", "wait a2"],
    ),
    Case(
        "jobs of no known team use the remainder, then borrow idle quota",
        quotas(3, a=1),
        queue().pending("u1").pending("u2", team="nobody").pending("u3"),
        ["start u1", "start u2", "start u3"],
    ),
    Case(
        "a team's order is strict: its small job waits behind its first waiting job",
        quotas(3, a=2, b=1),
        queue().running("b1", team="b").pending("a1", needs={P5: 3}, team="a").pending("a2", team="a"),
        ["wait a1"],
    ),
    Case(
        "a job larger than its team may ever hold holds back nothing",
        quotas(3, a=(2, LEND), b=1),
        queue().running("b1", team="b").pending("a1", needs={P5: 3}, team="a").pending("a2", team="a"),
        ["wait a1", "start a2"],
    ),
    Case(
        "behind its team's stuck head, a job stops a lower-priority job of its team to be backfilled",
        replace(quotas(4, PreemptionRules(), a=(3, LEND), b=(1, RESERVE)), backfill=True),
        queue()
        .running("a1", 9, team="a", needs={P5: 2})
        .running("a4", 0, team="a")
        .pending("a2", 5, needs={P5: 3}, team="a")
        .pending("a3", 2, team="a"),
        ["wait a2", "preempt a4 for a3", "wait a3"],
    ),
    Case(
        "with backfill off, a job behind its team's head that has its room claims room of its own",
        quotas(4, PreemptionRules(), a=(2, LEND), b=(2, LEND)),
        queue()
        .running("a1", 0, team="a", started_at=NOW - timedelta(hours=2))
        .running("a2", 0, team="a", started_at=NOW - timedelta(hours=1))
        .pending("a3", 5, team="a")
        .pending("a4", 5, team="a"),
        ["preempt a2 for a3", "wait a3", "preempt a1 for a4"],
    ),
    Case(
        "a borrower waits for its team's stop in flight and keeps the free instances: nothing backfills them",
        replace(quotas(8, a=4, b=4), backfill=True),
        queue()
        .running("a1", team="a", needs={P5: 2})
        .running("a2", team="a", needs={P5: 2})
        .running("a3", team="a", backfill=True, state=JobState.PREEMPTING)
        .pending("a4", team="a", needs={P5: 4})
        .pending("a5", team="a"),
        ["wait a4"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_pass_with_quotas(case: Case) -> None:
    snapshot = replace(case.queue.build(), team_usage=case.usage)

    actions = decide(snapshot, NOW, case.config)

    assert [summary(action) for action in actions] == case.expect


def reasons_of(actions: list, kind: type) -> dict[str, str]:
    return {action.job_name: action.reason for action in actions if isinstance(action, kind)}


def test_every_reason_names_the_rule_that_applied() -> None:
    config = quotas(3, a=1, b=(1, LEND), c=(1, RESERVE))
    borrow = decide(queue().running("a1", team="a").pending("a2", team="a").build(), NOW, config)
    reclaim = decide(
        queue().running("a1", team="a").running("a2", 9, team="a").pending("b1", team="b").build(), NOW, config
    )

    assert reasons_of(borrow, StartJob)["a2"].startswith(f"borrowing 1 of b's {P5} idle quota")
    preempted = reasons_of(reclaim, PreemptJob)["a2"]
    assert preempted.startswith(f"reclaimed for b/b1: a was borrowing {P5} beyond its quota")
    assert "whatever their priority" in preempted
    assert reasons_of(reclaim, ExplainWait)["b1"].startswith("within b's quota; waiting for 1 instance")


def test_a_team_at_its_quota_is_told_why_it_cannot_borrow() -> None:
    config = quotas(2, a=1, b=(1, RESERVE))
    actions = decide(queue().running("a1", 9, team="a").pending("a2", team="a").build(), NOW, config)

    assert reasons_of(actions, ExplainWait)["a2"] == (
        f"a would be 1 instance of {P5} beyond its quota and cannot borrow: 1 {P5} free, 1 of them idle quota "
        f"that other teams reserve; no lower-priority job of a can make room"
    )


@pytest.mark.parametrize("limit", [0, None])
def test_a_job_waiting_for_its_own_teams_stopping_job_names_what_it_waits_for(limit: int | None) -> None:
    """Free instances do not cover a job that may not borrow: it waits for its quota, held by the
    lower-priority job of its team stopped for it (no empty "waiting for  being released")."""
    sharing = LEND if limit is None else Sharing.LEND_AND_BORROW
    config = quotas(4, a=(2, sharing, limit), b=(2, LEND))
    actions = decide(
        queue().running("a1", 1, team="a").running("a2", 1, team="a").pending("a3", 9, team="a").build(), NOW, config
    )

    assert reasons_of(actions, ExplainWait)["a3"] == (
        f"within a's quota; waiting for 1 instance of {P5} being released by stopping jobs"
    )


def test_the_preemption_that_uses_up_the_budget_is_noted_in_the_history() -> None:
    config = quotas(2, a=1, b=1)
    actions = decide(
        queue().running("a1", 0, team="a", past_attempts=2).running("b1", team="b").pending("a2", 5, team="a").build(),
        NOW,
        config,
    )

    preempt = next(action for action in actions if isinstance(action, PreemptJob))
    assert preempt.history is not None and "preempted 3 times (max_preemptions 3)" in preempt.history


def test_a_borrowers_reason_names_only_the_instances_it_borrows_and_whose_they_are() -> None:
    config = quotas(2, a=1, b=1)
    actions = decide(queue().running("u1").pending("u2").build(), NOW, config)

    assert reasons_of(actions, StartJob)["u2"].startswith(f"borrowing 1 of b's {P5} idle quota")


def test_a_backfilled_job_of_a_team_names_its_quota_and_its_head() -> None:
    config = replace(quotas(4, a=(2, LEND), b=2), backfill=True)
    actions = decide(
        queue().running("a1", team="a").pending("a2", needs={P5: 2}, team="a").pending("a3", team="a").build(),
        NOW,
        config,
    )

    assert reasons_of(actions, StartJob)["a3"] == (
        f"backfill within a's quota: needs 1, a uses 1 of its quota of 2 {P5}; 3 of 4 free; a's head a2 waits; "
        f"stopped first when it can start"
    )
