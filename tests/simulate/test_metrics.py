"""The simulator's figures on traces small enough to work out by hand (start-up takes no time)."""

from __future__ import annotations

import pytest
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName

INSTANT = Timing(start_min_s=0, start_max_s=0)


def run(trace: list[TraceJob], pools: dict[str, int], policy: PolicyName, *, backfill: bool = False) -> Result:
    return simulate(trace, SchedulerConfig(pools=pools, backfill=backfill), policy, INSTANT)


def spans(result: Result) -> list[tuple[str, int, float, float | None, float | None, str | None, float]]:
    return [(s.job, s.attempt, s.start_s, s.stop_s, s.end_s, s.outcome, s.lost_work_s) for s in result.segments]


# a: 1 instance, 100 s from 0; b: the whole pool (2), 200 s, from 1; c: 1 instance, 100 s, from 2,
# saving every 30 s. All of one priority.
HEAD_OF_LINE = [
    TraceJob("a", 0, 0, "p", 1, 100),
    TraceJob("b", 1, 0, "p", 2, 200),
    TraceJob("c", 2, 0, "p", 1, 100, checkpoint_every_s=30),
]


def test_fifo_leaves_an_instance_idle_while_a_job_that_fits_waits() -> None:
    """b waits for a; c, which would fit beside a, waits behind b. From 2 s to 100 s one instance is
    idle while c could run: 98 idle instance-seconds over 2 x 299 s of contention (1 s to 300 s)."""
    result = run(HEAD_OF_LINE, {"p": 2}, PolicyName.FIFO)
    pool = result.metrics["pools"]["p"]

    assert spans(result) == [
        ("a", 1, 0.0, None, 100.0, "completed", 0.0),
        ("b", 1, 100.0, None, 300.0, "completed", 0.0),
        ("c", 1, 300.0, None, 400.0, "completed", 0.0),
    ]
    assert pool["idle_while_runnable_instance_s"] == 98.0
    assert pool["contended_s"] == 299.0
    assert pool["utilization_while_waiting"] == pytest.approx(1 - 98 / 598, abs=1e-6)
    assert pool["utilization"] == pytest.approx((100 + 400 + 100) / 800)
    assert result.metrics["wait_s"]["0"] == {"jobs": 3, "p50": 99.0, "p95": 298.0, "max": 298.0}
    assert result.metrics["makespan_s"] == 400.0


def test_smq_backfills_then_reclaims_and_loses_only_the_work_since_the_last_checkpoint() -> None:
    """c is backfilled at 2 s; when a ends at 100 s, b (ahead of c) reclaims it: c has trained 98 s,
    saved 90, loses 8; its stop takes 60 s, so b starts at 160 and c resumes at 360 for its last 10 s."""
    result = run(HEAD_OF_LINE, {"p": 2}, PolicyName.SMQ, backfill=True)
    metrics = result.metrics

    assert spans(result) == [
        ("a", 1, 0.0, None, 100.0, "completed", 0.0),
        ("c", 1, 2.0, 100.0, 160.0, "preempted", 8.0),
        ("b", 1, 160.0, None, 360.0, "completed", 0.0),
        ("c", 2, 360.0, None, 370.0, "completed", 0.0),
    ]
    assert metrics["preemptions"] == 1
    assert metrics["backfill_starts"] == 1
    assert metrics["lost_work_by_cause_s"] == {"preemption": 8.0, "interruption": 0.0}
    assert metrics["pools"]["p"]["utilization_while_waiting"] == 1.0
    assert metrics["pools"]["p"]["utilization"] == pytest.approx((100 + 158 + 400 + 10) / 740, abs=1e-6)
    assert metrics["pools"]["p"]["goodput"] == pytest.approx((100 + 400 + 100) / 740, abs=1e-6)


# One instance; low (priority 0, 100 s) from 0, high (priority 5, 10 s) from 10.
INVERSION = [TraceJob("low", 0, 0, "p", 1, 100), TraceJob("high", 10, 5, "p", 1, 10)]


def test_fifo_inverts_priorities_until_the_low_job_ends() -> None:
    result = run(INVERSION, {"p": 1}, PolicyName.FIFO)

    assert result.metrics["inversion_s"] == 90.0
    assert result.metrics["inversion_max_s"] == 90.0
    assert result.metrics["wait_s"]["5"]["max"] == 90.0


def test_a_stop_in_flight_is_no_inversion() -> None:
    """smq preempts low at 10 s; high waits only for the stop (60 s): no inversion. low loses its
    10 s (it never saves) and runs again from the start when high is done."""
    result = run(INVERSION, {"p": 1}, PolicyName.SMQ)

    assert result.metrics["inversion_s"] == 0.0
    assert result.metrics["wait_s"]["5"]["max"] == 60.0
    assert result.metrics["wait_s"]["0"]["max"] == 10.0
    assert result.metrics["lost_work_s"] == 10.0
    assert result.metrics["makespan_s"] == 180.0


def test_a_pool_never_contended_counts_as_fully_used_while_waiting() -> None:
    result = run([TraceJob("only", 0, 0, "p", 1, 50)], {"p": 4}, PolicyName.SMQ)

    assert result.metrics["pools"]["p"]["contended_s"] == 0.0
    assert result.metrics["pools"]["p"]["utilization_while_waiting"] == 1.0
    assert result.metrics["pools"]["p"]["utilization"] == pytest.approx(50 / 200)
