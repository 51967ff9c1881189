"""The simulator as a whole: deterministic, the seed baseline as the article tells it, the rules of
a pass kept on every pass of a generated workload, and the spot fallback."""

from __future__ import annotations

from datetime import datetime

import pytest
from smq.simulate.workloads import mixed, seed_scenario, spot
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.engine import Timing, simulate
from smq_lambda.simulation.policies import PolicyName

from tests.scheduling.invariants import check_pass


def test_the_same_seed_gives_the_same_run() -> None:
    workload = mixed(seed=3, jobs=60)
    config = SchedulerConfig(pools=workload.pools, backfill=True)

    first = simulate(workload.jobs, config, timing=Timing(seed=1))
    second = simulate(workload.jobs, config, timing=Timing(seed=1))
    other = simulate(workload.jobs, config, timing=Timing(seed=2))

    assert first.metrics == second.metrics
    assert first.segments == second.segments
    assert other.metrics["makespan_s"] != first.metrics["makespan_s"]


def test_the_seed_baseline_reproduces_the_articles_four_jobs() -> None:
    """job1 and job2 start; job4 preempts job1 (the lowest), not job2; job2 ends first and job1
    resumes (it waited longer than job3); job4 ends and job3 runs last."""
    workload = seed_scenario(seed=0)

    result = simulate(workload.jobs, SchedulerConfig(pools=workload.pools), PolicyName.SEED, Timing(60, 60))

    assert [(segment.job, segment.attempt, segment.outcome) for segment in result.segments] == [
        ("job1", 1, "preempted"),
        ("job2", 1, "completed"),
        ("job4", 1, "completed"),
        ("job1", 2, "completed"),
        ("job3", 1, "completed"),
    ]
    ends = {(segment.job, segment.attempt): segment.end_s for segment in result.segments}
    assert ends[("job2", 1)] < ends[("job4", 1)] < ends[("job1", 2)]
    assert result.metrics["refused_starts"] == 0


def test_a_job_submitted_at_the_traces_first_moment_counts_its_wait() -> None:
    """b, submitted at 0 s, waits 100 s for a's instance (a wait from 0 s is a wait)."""
    trace = [TraceJob("a", 0, 0, "p", 1, 100), TraceJob("b", 0, 0, "p", 1, 100)]

    result = simulate(trace, SchedulerConfig(pools={"p": 1}), timing=Timing(0, 0))

    assert result.metrics["wait_s"]["0"]["max"] == 100.0


def test_the_seed_baseline_counts_jobs_not_instances() -> None:
    """Two 2-instance jobs in a pool of 2: the seed thinks it has two free slots, and SageMaker
    refuses the second start until the first job is done."""
    trace = [TraceJob("a", 0, 0, "p", 2, 100), TraceJob("b", 0, 0, "p", 2, 100)]

    result = simulate(trace, SchedulerConfig(pools={"p": 2}), PolicyName.SEED, Timing(0, 0))

    assert result.metrics["refused_starts"] >= 1
    assert [(segment.job, segment.start_s) for segment in result.segments] == [("a", 0.0), ("b", 100.0)]


@pytest.mark.parametrize("backfill", [False, True], ids=["backfill off", "backfill on"])
def test_every_pass_of_a_generated_workload_keeps_the_rules(backfill: bool) -> None:
    workload = mixed(seed=11, jobs=80)
    config = SchedulerConfig(pools=workload.pools, backfill=backfill)

    def check(snapshot: Snapshot, actions: list[Action], now: datetime) -> None:
        check_pass(snapshot, config, actions, now)

    result = simulate(workload.jobs, config, timing=Timing(seed=5), observe=check)

    assert result.metrics["unfinished"] == []
    assert result.metrics["refused_starts"] == 0
    assert result.metrics["inversion_max_s"] == 0.0 or not backfill
    assert (result.metrics["backfill_starts"] > 0) == backfill


def test_a_pass_delay_batches_the_events_of_its_window() -> None:
    workload = mixed(seed=3, jobs=40)
    config = SchedulerConfig(pools=workload.pools)

    immediate = simulate(workload.jobs, config, timing=Timing(pass_delay_s=0))
    batched = simulate(workload.jobs, config, timing=Timing(pass_delay_s=600))

    assert batched.metrics["passes"] < immediate.metrics["passes"]


def test_smq_moves_a_spot_job_interrupted_too_often_to_on_demand() -> None:
    """The policy's limit is 3: the fourth interruption stops the attempt; the job waits again on
    demand and the fifth interruption never comes. The baselines have no such rule."""
    trace = [TraceJob("s", 0, 0, "p", 1, 1000, checkpoint_every_s=100, interruptions_s=(150, 250, 350, 450, 550))]
    config = SchedulerConfig(pools={"p": 1})

    governed = simulate(trace, config, PolicyName.SMQ, Timing(10, 10))
    plain = simulate(trace, config, PolicyName.FIFO, Timing(10, 10))

    assert governed.metrics["spot_fallbacks"] == 1
    assert governed.metrics["interruptions"] == 4
    assert [segment.outcome for segment in governed.segments] == ["spot_fallback", "completed"]
    assert plain.metrics["interruptions"] == 5
    assert plain.metrics["spot_fallbacks"] == 0
    # Interrupted at 150 s of training it has saved 100 s: 50 lost. It then trains 100 s between
    # interruptions and each lands on a checkpoint: nothing more lost.
    assert governed.metrics["lost_work_by_cause_s"]["interruption"] == 50.0


def test_a_spot_workload_finishes_under_every_policy() -> None:
    workload = spot(seed=2, jobs=30)
    for name in PolicyName:
        result = simulate(workload.jobs, SchedulerConfig(pools=workload.pools), name)
        assert result.metrics["unfinished"] == [], name
