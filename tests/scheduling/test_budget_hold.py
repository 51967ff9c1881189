"""The budget hold (`scheduling/budget_hold.py`): a team under a `hold` budget starts a job only
while its month's spend, what its live jobs and this pass's starts commit, and the job's estimate
stay within the budget; a held job is explained and blocks nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.domain.costs.budgets import Budget, BudgetAction
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.budget_hold import BudgetBook
from smq_lambda.scheduling.decide import decide, decide_pass
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from .builders import G5, NOW, P5, JobBuilder, apply, queue

PRICES = {P5: 100.0, G5: 1.0}
"""$ per instance-hour: a one-hour job on one P5 is estimated at $100 (its MaxRuntime, a ceiling)."""
HOUR = 3600
HOUR_DELTA = timedelta(hours=1)


def hold(monthly_usd: float, action: BudgetAction = BudgetAction.HOLD) -> Budget:
    return Budget(monthly_usd=monthly_usd, action=action)


def config(budgets: dict[str, Budget], **pools: int) -> SchedulerConfig:
    return SchedulerConfig(pools={P5: pools.get("p5", 8), G5: pools.get("g5", 8)}, budgets=budgets)


def priced(snapshot: Snapshot, spend: dict[str, float] | None, *, runtime_s: int = HOUR) -> Snapshot:
    """Every job runs at most `runtime_s`; `spend`: the teams' recorded spend this month."""
    jobs = tuple(replace(job, max_runtime_s=job.max_runtime_s or runtime_s) for job in snapshot.jobs)
    return replace(snapshot, jobs=jobs, team_spend=spend, prices=PRICES)


def started(actions: list) -> list[str]:
    return [action.job_name for action in actions if isinstance(action, StartJob)]


def reasons(actions: list) -> dict[str, str]:
    return {action.job_name: action.reason for action in actions if isinstance(action, ExplainWait)}


@pytest.mark.parametrize(
    ("case", "snapshot", "spend", "budgets", "expected_starts", "held"),
    [
        ("within budget", queue().pending("a", team="vision"), {"vision": 100}, {"vision": hold(200)}, ["a"], []),
        ("exactly the budget", queue().pending("a", team="vision"), {"vision": 150}, {"vision": hold(250)}, ["a"], []),
        (
            "spend leaves too little",
            queue().pending("a", team="vision"),
            {"vision": 150},
            {"vision": hold(249)},
            [],
            ["a"],
        ),
        (
            "a running job's estimate is committed",
            queue().running("r", team="vision").pending("a", team="vision"),
            {},
            {"vision": hold(150)},
            [],
            ["a"],
        ),
        (
            "a job being preempted costs what it accrued",
            queue().preempting("r", team="vision").pending("a", team="vision"),
            {},
            {"vision": hold(199)},
            ["a"],
            [],
        ),
        (
            "a start earlier in the pass counts",
            queue().pending("a", team="vision").pending("b", team="vision"),
            {},
            {"vision": hold(150)},
            ["a"],
            ["b"],
        ),
        (
            "a held job blocks neither another team nor its own team's smaller job",
            queue()
            .pending("big", team="vision", needs={P5: 2})
            .pending("other-team", team="nlp", needs={P5: 2})
            .pending("small", team="vision", needs={G5: 1}),
            {"vision": 50},
            {"vision": hold(100)},
            ["other-team", "small"],
            ["big"],
        ),
        (
            "a warn budget never holds",
            queue().pending("a", team="vision"),
            {"vision": 500},
            {"vision": hold(1, BudgetAction.WARN)},
            ["a"],
            [],
        ),
        ("no spend known: no budget holds", queue().pending("a", team="vision"), None, {"vision": hold(1)}, ["a"], []),
        ("a team without a budget", queue().pending("a", team="nlp"), {"nlp": 1e6}, {"vision": hold(1)}, ["a"], []),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_hold_cases(case, snapshot, spend, budgets, expected_starts, held) -> None:
    decision = decide_pass(priced(snapshot.build(), spend), NOW, config(budgets))

    assert started(decision.actions) == expected_starts
    assert sorted(decision.budget_held) == held
    for name in held:
        assert reasons(decision.actions)[name].startswith("held by budget")


def test_the_reason_names_the_budget_the_spend_what_is_left_and_the_reset() -> None:
    snapshot = priced(queue().running("r", team="vision").pending("a", team="vision").build(), {"vision": 812.5})

    reason = reasons(decide(snapshot, NOW, config({"vision": hold(1000)})))["a"]

    assert "budget" in reason
    assert "$1,000.00 a month" in reason
    assert "$812.50 spent this month" in reason
    assert "$100.00 committed" in reason
    assert "$87.50 left" in reason
    assert "at most $100.00" in reason
    assert "reset on 2025-04-01 00:00 UTC" in reason


def test_an_unpriced_type_never_counts_as_free() -> None:
    snapshot = replace(priced(queue().pending("a", team="vision").build(), {}), prices={G5: 1.0})

    decision = decide_pass(snapshot, NOW, config({"vision": hold(1_000_000)}))

    assert started(decision.actions) == []
    assert f"{P5} has no price, and unpriced types never count as free" in reasons(decision.actions)["a"]


def test_an_override_passes_and_its_cost_counts_against_its_team() -> None:
    built = queue().pending("vip", team="vision").pending("next", team="vision").build()
    jobs = tuple(replace(job, budget_override=job.name == "vip") for job in built.jobs)
    snapshot = priced(replace(built, jobs=jobs), {"vision": 120})

    decision = decide_pass(snapshot, NOW, config({"vision": hold(200)}))

    assert started(decision.actions) == ["vip"]
    assert decision.budget_held == {"next"}


def test_running_jobs_are_never_stopped_for_a_budget() -> None:
    snapshot = priced(queue().running("r1", team="vision").running("r2", team="vision").build(), {"vision": 5000})

    actions = decide(snapshot, NOW, config({"vision": hold(100)}))

    assert not [action for action in actions if isinstance(action, PreemptJob)]


def test_with_quotas_a_job_admitted_in_a_later_phase_sees_the_starts_before_it() -> None:
    """The borrower passes the rule when the walk reaches it, but is admitted in phase 4, after the
    team's job within its quota started: then the two no longer fit the budget together."""
    quota = Quota(instances={P5: 1, G5: 1}, sharing=Sharing.LEND_AND_BORROW)
    teams = replace(config({"vision": hold(200.5)}), teams=Teams(quotas={"vision": quota}))
    snapshot = priced(
        queue()
        .pending("borrower", team="vision", needs={P5: 2})
        .pending("within", team="vision", needs={G5: 1})
        .build(),
        {},
    )

    decision = decide_pass(snapshot, NOW, teams)

    assert started(decision.actions) == ["within"]
    assert decision.budget_held == {"borrower"}


VISION_QUOTA = Teams(quotas={"vision": Quota(instances={P5: 1, G5: 1}, sharing=Sharing.LEND_AND_BORROW)})


@pytest.mark.parametrize(
    ("case", "teams", "snapshot", "budget"),
    [
        (
            "without quotas: the head is held when the walk reaches it",
            Teams(),
            queue().running("low", team="vision").pending("head", 5, team="vision", needs={P5: 2}),
            250,
        ),
        (
            "with quotas: the head is held when the walk reaches it",
            VISION_QUOTA,
            queue().running("low", team="vision").pending("head", 5, team="vision", needs={P5: 2}),
            250,
        ),
        (
            "with quotas: the head passes the walk, then a start of its team uses up the budget before phase 4",
            VISION_QUOTA,
            queue()
            .running("low", team="vision")
            .pending("head", 5, team="vision", needs={P5: 2})
            .pending("within", team="vision", needs={G5: 1}),
            300.5,
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_a_held_head_stops_no_job_of_its_team(case, teams, snapshot, budget) -> None:
    """The head outranks its team's running job, whose stop would make room for it (two P5s), but
    its team's budget does not cover it ($200 on top of the running job's $100 and this pass's
    starts): it is held, and stopping `low` would only churn (its room backfilled, then stopped
    again)."""
    cfg = replace(config({"vision": hold(budget)}, p5=2), teams=teams)

    decision = decide_pass(priced(snapshot.build(), {}), NOW, cfg)

    assert [action for action in decision.actions if isinstance(action, PreemptJob)] == []
    assert decision.budget_held == {"head"}
    assert reasons(decision.actions)["head"].startswith("held by budget")


# Properties


@st.composite
def month_of_jobs(draw: st.DrawFn) -> tuple[list[Job], float, int]:
    """Jobs of two teams submitted over a day, each of known duration; vision's hold budget; a
    capacity small enough that jobs wait."""
    count = draw(st.integers(min_value=2, max_value=12))
    jobs = []
    for index in range(count):
        team = draw(st.sampled_from(["vision", "vision", "nlp"]))
        pool = draw(st.sampled_from([P5, G5]))
        builder = JobBuilder(f"job-{index}", NOW + timedelta(minutes=draw(st.integers(0, 120)))).team(team)
        job = builder.needs(draw(st.integers(1, 2)), pool).priority(draw(st.integers(0, 2))).build()
        jobs.append(replace(job, max_runtime_s=draw(st.integers(60, 4 * HOUR))))
    return jobs, draw(st.floats(min_value=50, max_value=800)), draw(st.integers(1, 4))


def run_month(jobs: list[Job], budget: float, capacity: int) -> tuple[dict[str, float], set[str]]:
    """A pass every five minutes until every job ended or a day passed: each job arrives at its
    submission time and runs exactly its estimated duration (its MaxRuntime), or until the next pass
    when preempted (it then waits again); an ended attempt's cost joins its team's spend. Returns the teams' spend and the jobs ever held for vision's budget."""
    cfg = config({"vision": hold(budget)}, p5=capacity, g5=capacity)
    spend: dict[str, float] = {}
    ever_held: set[str] = set()
    ended: set[str] = set()
    active: dict[str, Job] = {}
    now = NOW
    while len(ended) < len(jobs) and now < NOW + timedelta(days=1):
        for job in jobs:
            if job.submitted_at <= now and job.name not in active and job.name not in ended:
                active[job.name] = job
        for job in list(active.values()):
            attempt, runtime = job.current_attempt, timedelta(seconds=job.max_runtime_s or 0)
            if job.is_live and attempt and (job.state is JobState.PREEMPTING or now - attempt.started_at >= runtime):
                ran = min(now - attempt.started_at, runtime)
                spend[str(job.team)] = (
                    spend.get(str(job.team), 0.0) + PRICES[job.where.pool] * job.where.instances * ran / HOUR_DELTA
                )
                if job.state is JobState.PREEMPTING:
                    active[job.name] = lifecycle.requeue(job, now, outcome=AttemptOutcome.PREEMPTED, reason="preempted")
                else:
                    ended.add(job.name)
                    del active[job.name]
        snapshot = Snapshot(jobs=tuple(active.values()), team_spend=dict(spend), prices=PRICES)
        decision = decide_pass(snapshot, now, cfg)
        ever_held |= decision.budget_held
        active = {job.name: job for job in apply(snapshot, decision.actions, now).jobs}
        now += timedelta(minutes=5)
    return spend, ever_held


@settings(max_examples=40, deadline=None)
@given(month_of_jobs())
def test_a_held_team_never_exceeds_its_budget_when_jobs_run_their_estimates(drawn) -> None:
    jobs, budget, capacity = drawn

    spend, _ = run_month(jobs, budget, capacity)

    assert spend.get("vision", 0.0) <= budget + 1e-6


@settings(max_examples=60, deadline=None)
@given(month_of_jobs(), st.floats(min_value=0, max_value=3000))
def test_a_held_job_blocks_no_other_job(drawn, spent) -> None:
    """Removing the jobs a pass held changes no other decision of it."""
    jobs, budget, capacity = drawn
    cfg = config({"vision": hold(budget)}, p5=capacity, g5=capacity)
    snapshot = Snapshot(jobs=tuple(jobs), team_spend={"vision": spent}, prices=PRICES)

    decision = decide_pass(snapshot, NOW + timedelta(days=1), cfg)
    without = replace(snapshot, jobs=tuple(job for job in jobs if job.name not in decision.budget_held))
    others = decide(without, NOW + timedelta(days=1), cfg)

    assert [action for action in decision.actions if action.job_name not in decision.budget_held] == others


@st.composite
def busy_passes(draw: st.DrawFn) -> tuple[Snapshot, SchedulerConfig]:
    """Pending and running jobs (some backfilled, some being preempted) of two teams, with or
    without quotas, backfill on or off: passes that preempt and reclaim. Vision's hold budget is
    drawn at the edge of one of its pending jobs: what the team has spent and committed plus that
    job's estimate, and a little more or less, so that a start earlier in the pass may use it up."""
    capacity = draw(st.integers(1, 4))
    jobs, held = [], 0
    for index in range(draw(st.integers(2, 10))):
        team = draw(st.sampled_from(["vision", "vision", "nlp"]))
        pool = draw(st.sampled_from([P5, P5, G5]))
        need = draw(st.integers(1, 2))
        builder = JobBuilder(f"job-{index}", NOW - timedelta(minutes=draw(st.integers(1, 120)))).team(team)
        builder.needs(need, pool).priority(draw(st.integers(0, 3)))
        state = draw(st.sampled_from([JobState.PENDING, JobState.PENDING, JobState.RUNNING, JobState.PREEMPTING]))
        if state is not JobState.PENDING and held + need <= capacity:
            held += need
            builder.live(state, NOW - timedelta(minutes=draw(st.integers(0, 60))), backfill=draw(st.booleans()))
        jobs.append(replace(builder.build(), max_runtime_s=draw(st.sampled_from([HOUR, 2 * HOUR]))))
    snapshot = Snapshot(jobs=tuple(jobs), team_spend={"vision": draw(st.sampled_from([0.0, 250.0]))}, prices=PRICES)
    budget = 1000.0
    pending = sorted(
        (job for job in jobs if job.state is JobState.PENDING and job.team == "vision"), key=lambda job: job.order
    )
    if pending:
        edge = BudgetBook.of(snapshot, NOW, {"vision": hold(1e-9)}).hold(pending[0])
        assert edge is not None and edge.estimate is not None
        budget = edge.spent_usd + edge.committed_usd + edge.estimate.usd + draw(st.sampled_from([-0.5, 0.5, 1.5]))
    quotas = {
        team: Quota(instances={P5: share, G5: share}, sharing=Sharing.LEND_AND_BORROW)
        for team, share in zip(["vision", "nlp"], draw(st.sampled_from([(1, 1), (1, 2), (2, 1)])), strict=True)
    }
    cfg = replace(
        config({"vision": hold(max(budget, 1.0))}, p5=capacity, g5=capacity),
        teams=draw(st.sampled_from([Teams(quotas=quotas), Teams(quotas=quotas), Teams()])),
        backfill=draw(st.booleans()),
    )
    return snapshot, cfg


@settings(max_examples=300, deadline=None)
@given(busy_passes())
def test_nothing_is_stopped_for_a_job_the_budget_holds_at_that_point_of_the_pass(drawn) -> None:
    """Every preemption or reclaim is for a job its team's budget covers when it is decided: the
    book of the pass, with the starts decided before it, holds its beneficiary not."""
    snapshot, cfg = drawn
    jobs = {job.name: job for job in snapshot.jobs}

    decision = decide_pass(snapshot, NOW, cfg)

    book = BudgetBook.of(snapshot, NOW, cfg.budgets)
    for action in decision.actions:
        if isinstance(action, StartJob):
            book.commit(jobs[action.job_name])
        if isinstance(action, PreemptJob):
            assert action.for_job not in decision.budget_held
            assert book.hold(jobs[action.for_job]) is None


@settings(max_examples=60, deadline=None)
@given(month_of_jobs(), st.floats(min_value=0, max_value=3000))
def test_an_override_is_never_held(drawn, spent) -> None:
    jobs, budget, _ = drawn
    overridden = [replace(job, budget_override=True) for job in jobs]
    snapshot = Snapshot(jobs=tuple(overridden), team_spend={"vision": spent}, prices=PRICES)

    assert decide_pass(snapshot, NOW, config({"vision": hold(budget)})).budget_held == frozenset()


def test_the_book_holds_nothing_before_a_month_starts_again() -> None:
    """The reset date is the first of the next UTC month, at midnight."""
    job = replace(JobBuilder("a", NOW).team("vision").build(), max_runtime_s=HOUR)
    book = BudgetBook({"vision": hold(1)}, {}, PRICES, (), datetime(2026, 12, 31, 23, 59, tzinfo=UTC))

    held = book.hold(job)

    assert held is not None and held.resets_at == datetime(2027, 1, 1, tzinfo=UTC)
