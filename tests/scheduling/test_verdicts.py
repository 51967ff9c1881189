"""One verdict per job at one placement (`scheduling/verdicts.py`): each verdict from the state that
gives it, asked without touching the ledger, and the phases that apply it do what it said."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from smq_lambda.domain.config.teams import Quota, Sharing, Teams
from smq_lambda.scheduling import verdicts
from smq_lambda.scheduling.actions import PreemptJob, StartJob
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.decide import decide_pass
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot

from tests.scheduling.builders import NOW, P5, pools, queue
from tests.scheduling.test_gates import state_for
from tests.scheduling.test_properties import configs, snapshots
from tests.scheduling.test_warm_pools import KEY, OTHER, keyed, warm

LENDING = Teams(quotas={"a": Quota({P5: 2}), "b": Quota({P5: 2}, sharing=Sharing.LEND)})
"""Team a borrows; team b lends its 2 idle instances."""


def last_pending(state: PassState, snapshot: Snapshot) -> verdicts.Verdict:
    """The verdict on the last pending job, the others walked as the pass would have left them."""
    *ahead, job = [Candidate.pinned(job) for job in snapshot.jobs if not job.is_live]
    for other in ahead:
        state.wait(other)
    return verdicts.assess(state, job)


CASES = [
    ("fit", queue().pending("x").build(), pools(p5=2), verdicts.Fit),
    ("fit on a warm pool", keyed(queue().pending("x", needs={P5: 2}).build(), warm(), x=KEY), pools(p5=2), verdicts.FitOnWarm),
    ("borrow", queue().pending("x", needs={P5: 3}, team="a").build(), replace(pools(p5=4), teams=LENDING), verdicts.Borrow),
    ("make room: a lower-priority job stops", queue().running("low").pending("x", priority=5).build(), pools(p5=1), verdicts.MakeRoom),
    ("make room: a warm pool it does not match ends", keyed(queue().pending("x", needs={P5: 2}).build(), warm(), x=OTHER), pools(p5=2), verdicts.MakeRoom),
    ("no fit: the job that holds the pool outranks it", queue().running("high", priority=5).pending("x").build(), pools(p5=1), verdicts.NoFit),
    ("behind a head", queue().running("r").pending("head", priority=5, needs={P5: 2}).pending("x").build(), pools(p5=2), verdicts.Behind),
]  # fmt: skip


@pytest.mark.parametrize(("case", "snapshot", "config", "kind"), CASES, ids=[case[0] for case in CASES])
def test_each_verdict_comes_from_the_state_that_gives_it(
    case: str, snapshot: Snapshot, config: SchedulerConfig, kind: type
) -> None:
    assert isinstance(last_pending(state_for(snapshot, config), snapshot), kind)


def test_make_room_names_the_jobs_it_would_stop_and_the_pass_stops_them() -> None:
    snapshot = queue().running("low").running("lower", priority=-1).pending("x", priority=5).build()

    verdict = last_pending(state_for(snapshot, pools(p5=2)), snapshot)
    decision = decide_pass(snapshot, NOW, pools(p5=2))

    assert isinstance(verdict, verdicts.MakeRoom) and [job.name for job in verdict.targets] == ["lower"]
    assert [action.job_name for action in decision.actions if isinstance(action, PreemptJob)] == ["lower"]


def test_behind_a_head_it_starts_where_its_team_may_use_the_instances_now() -> None:
    snapshot = queue().pending("head", priority=5, needs={P5: 3}).pending("x").build()
    state = state_for(snapshot, pools(p5=2))

    verdict = last_pending(state, snapshot)

    assert isinstance(verdict, verdicts.Behind) and verdict.starts and verdict.head.job == snapshot.jobs[0]


@settings(max_examples=80, deadline=None)
@given(snapshots(), configs())
def test_assessing_changes_nothing_and_a_job_that_fits_now_starts(snapshot: Snapshot, config: SchedulerConfig) -> None:
    """Asked of the first pending job, in a fresh state: the ledger reads the same after, and a job
    whose verdict says it fits now (no gate holding it) is started by the pass."""
    pending = [job for job in snapshot.jobs if not job.is_live and not job.placements]
    if not pending:
        return
    first = min(pending, key=lambda job: job.order)
    state = state_for(snapshot, config)
    pools_seen = {pool for job in snapshot.jobs for pool in job.demand}
    before = {pool: (state.ledger.free(pool), state.ledger.releasing(pool)) for pool in pools_seen}

    verdict = verdicts.assess(state, Candidate.pinned(first))

    assert {pool: (state.ledger.free(pool), state.ledger.releasing(pool)) for pool in pools_seen} == before
    decision = decide_pass(snapshot, NOW, config)
    gated = first.name in decision.explained and not any(
        isinstance(action, StartJob) and action.job_name == first.name for action in decision.actions
    )
    if isinstance(verdict, verdicts.FITS_NOW) and not gated and first.priority == max(j.priority for j in pending):
        assert any(isinstance(action, StartJob) and action.job_name == first.name for action in decision.actions)


def test_a_reclaim_is_a_make_room_verdict_whose_targets_the_pass_stops() -> None:
    """Team a runs 4 instances on a quota of 2 (2 borrowed from b); b's job needs its 2 back."""
    snapshot = (
        queue()
        .running("a1", team="a", needs={P5: 2})
        .running("a2", team="a", needs={P5: 2})
        .pending("x", team="b", needs={P5: 2})
        .build()
    )
    config = replace(pools(p5=4), teams=LENDING)

    verdict = last_pending(state_for(snapshot, config), snapshot)
    decision = decide_pass(snapshot, NOW, config)

    assert isinstance(verdict, verdicts.MakeRoom) and verdict.reclaim and len(verdict.targets) == 1
    assert [action.job_name for action in decision.actions if isinstance(action, PreemptJob)] == [
        verdict.targets[0].name
    ]
