"""The simulator of bench/ run small: invariants on every pass, and regression thresholds on backfill.

The thresholds hold for these fixed seeds (they are measurements, not theorems): backfill raises
utilization and lowers the instance-hours left idle while jobs wait. What is a theorem is checked on
every pass: no over-commit, strict order except backfill, minimal preemptions, and no head left
waiting on a job it could reclaim, which is what bounds a head's extra wait to one stop.
"""

from __future__ import annotations

import statistics

import pytest
from smq_lambda.scheduling.snapshot import SchedulerConfig

from bench.scheduler_simulation import Result, Workload, simulate

from .invariants import check_pass

STOP_DELAY = 120.0


@pytest.fixture(scope="module", params=[7, 11], ids=lambda seed: f"seed {seed}")
def runs(request: pytest.FixtureRequest) -> dict[bool, Result]:
    """One workload per seed, simulated with backfill off (False) and on (True)."""
    workload = Workload(seed=request.param, jobs=120)
    submissions = workload.generate()
    return {
        backfill: simulate(
            submissions,
            SchedulerConfig(pools=workload.pools, backfill=backfill),
            stop_delay=STOP_DELAY,
            observe=check_pass,
        )
        for backfill in (False, True)
    }


def test_every_job_finishes(runs: dict[bool, Result]) -> None:
    assert runs[False].unfinished == [] and runs[True].unfinished == []
    assert sum(map(len, runs[False].waits.values())) == sum(map(len, runs[True].waits.values())) == 120


def test_backfill_only_when_on(runs: dict[bool, Result]) -> None:
    assert runs[False].backfill_starts == 0
    assert runs[True].backfill_starts > 0


def test_backfill_raises_utilization_and_cuts_idle_time(runs: dict[bool, Result]) -> None:
    off, on = runs[False], runs[True]

    assert on.utilization >= off.utilization
    assert on.idle_while_pending_seconds <= off.idle_while_pending_seconds


def test_reclaiming_heads_mostly_start_one_stop_later(runs: dict[bool, Result]) -> None:
    """A head that reclaims backfilled instances starts when the stops land, unless a job ahead of it
    arrives meanwhile and takes them; on these seeds that is rare."""
    delays = runs[True].reclaim_delays
    within = [delay for delay in delays if delay <= STOP_DELAY + 1e-6]

    assert delays
    assert statistics.median(delays) == pytest.approx(STOP_DELAY)
    assert len(within) >= 0.9 * len(delays)
