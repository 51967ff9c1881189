"""What the simulator plays of SageMaker's capacity: warm pools a completed job keeps (reused with no
start-up, released for a job ahead, kept or stripped by the `warm_pools` section), spot
interruptions per instance type feeding the adaptive rate, and training plan windows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq.simulate.placement_workloads import warm_pools
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.replay.virtual_queue import EPOCH
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.simulation.engine import Result, Timing, simulate
from smq_lambda.simulation.policies import PolicyName

G5 = "ml.g5.xlarge"
STARTUP = Timing(100, 100)
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/reserved"


def config(**sections: object) -> SchedulerConfig:
    document = parse_config_document({"pools": {G5: 2}, **sections}, source="test")
    return SchedulerConfig.of(document, backfill=True)


def warm(name: str, submit_s: float, key: str = "vit", priority: int = 0, keep_alive_s: int = 600) -> TraceJob:
    return TraceJob(name, submit_s, priority, G5, 2, 1000.0, keep_alive_s=keep_alive_s, warm_key=key)


def runs(result: Result, name: str) -> list[tuple[float, float | None, str | None]]:
    return [(s.start_s, s.end_s, s.outcome) for s in result.segments if s.job == name]


def test_a_matching_job_starts_on_the_warm_pool_with_no_start_up() -> None:
    """first ends at 1100 (start-up 100); second, submitted at 1050, starts on its warm pool at 1100
    and trains at once: it ends at 2100, not 2200."""
    result = simulate([warm("first", 0.0), warm("second", 1050.0)], config(), timing=STARTUP)

    assert runs(result, "second") == [(1100.0, 2100.0, "completed")]
    assert result.metrics["warm_pools"] == {
        "retained": 2,
        "reused": 1,
        "reuse_rate": 0.5,
        "released": 0,
        "idle_hours": round(2 * 600 / 3600, 6),  # second's pool, nobody reuses it: its whole keep-alive
        "reused_hours": round(2 * 1000 / 3600, 6),
        "idle_to_reused": 0.6,
        "startup_saved_s": 100.0,
    }
    assert result.metrics["makespan_s"] == 2100.0  # the run ends with its last job, not its keep-alive


def test_with_the_section_a_pool_stays_warm_only_for_a_waiting_match() -> None:
    """With `warm_pools`, first keeps its 600 s (second waits when it starts); second, started on
    the warm pool with nothing waiting after it, keeps the least SageMaker reuses with (1 s), and
    the pass at its end ends that warm pool (no waiting job matches it); a job that arrives when
    nothing waits for it keeps none."""
    trace = [warm("first", 0.0), warm("second", 0.0), warm("alone", 3000.0, key="bert")]

    result = simulate(trace, config(warm_pools={}), timing=STARTUP)

    assert runs(result, "second") == [(1100.0, 2100.0, "completed")]
    assert result.metrics["warm_pools"]["retained"] == 2  # first's and second's, not alone's
    assert result.metrics["warm_pools"]["idle_hours"] == 0.0
    assert result.metrics["warm_pools"]["released"] == 1


def test_a_warm_pool_is_released_for_a_higher_priority_job_that_does_not_match() -> None:
    """first leaves its warm pool at 1100; at 1150 urgent (priority 5, another key) heads the pool:
    the pass ends the warm pool and urgent starts at once; second, which matches it, waits behind
    urgent (priority order is kept) and then starts with a start-up of its own."""
    trace = [warm("first", 0.0), warm("second", 1150.0), warm("urgent", 1150.0, key="bert", priority=5)]

    result = simulate(trace, config(), timing=STARTUP)

    assert runs(result, "urgent") == [(1150.0, 2250.0, "completed")]
    assert runs(result, "second") == [(2250.0, 3350.0, "completed")]
    assert result.metrics["warm_pools"]["reused"] == 0
    assert result.metrics["warm_pools"]["released"] == 2  # first's for urgent, urgent's for second


def test_the_baselines_keep_warm_pools_but_never_reuse_them() -> None:
    result = simulate([warm("first", 0.0), warm("second", 1050.0)], config(), PolicyName.FIFO, timing=STARTUP)

    assert runs(result, "second") == [(1700.0, 2800.0, "completed")]
    assert result.metrics["warm_pools"]["reused"] == 0


def spot_job(name: str, submit_s: float, interruptions_s: tuple[float, ...] = ()) -> TraceJob:
    return TraceJob(name, submit_s, 0, G5, 1, 1000.0, interruptions_s=interruptions_s, purchase="spot")


SPOT = {"pools": {G5: 2}, "adaptive": {"max_interruptions_per_hour": 1, "half_life_s": 3600}}


def test_interruptions_of_a_type_move_a_later_spot_job_on_demand() -> None:
    """early is interrupted twice on spot: g5's rate goes above 1 an hour, so late starts on demand."""
    trace = [spot_job("early", 0.0, (100.0, 200.0)), spot_job("late", 500.0)]

    result = simulate(trace, config(spot=SPOT), timing=Timing(0, 0))

    assert [s.pool for s in result.segments if s.job == "late"] == [G5]
    assert [s.pool for s in result.segments if s.job == "early"] == [f"{G5}:spot"]
    spot_s = 1000.0 + 2 * 100.0  # early trains 100 s twice for nothing: no checkpoints
    assert result.metrics["purchase"] == {
        "spot_share": round(spot_s / (spot_s + 1000.0), 6),
        "on_demand_starts": 1,
        "fallbacks": 0,
    }


def test_without_interruptions_spot_jobs_stay_on_spot() -> None:
    result = simulate([spot_job("a", 0.0), spot_job("b", 500.0)], config(spot=SPOT), timing=Timing(0, 0))

    assert {s.pool for s in result.segments} == {f"{G5}:spot"}
    assert result.metrics["purchase"]["spot_share"] == 1.0


def test_a_job_on_demand_is_not_interrupted() -> None:
    """g5 has no spot capacity (a spot pool of 0) and a spot job may go on demand at once: it starts
    on demand, and its trace's interruptions, which SageMaker makes only on spot, never happen."""
    spot = {"pools": {G5: 0}, "on_demand_after_s": 0}
    result = simulate([spot_job("a", 0.0, (100.0,))], config(spot=spot), timing=Timing(0, 0))

    assert runs(result, "a") == [(0.0, 1000.0, "completed")]
    assert result.metrics["interruptions"] == 0


def at(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).astimezone(UTC).isoformat().replace("+00:00", "Z")


PLAN = {
    "reserved": {
        "arn": PLAN_ARN,
        "instance_type": G5,
        "instances": 2,
        "windows": [{"start": at(1000), "end": at(3000)}],
        "stop_margin_s": 600,
    }
}


def test_a_plan_job_starts_when_the_window_opens_and_stops_its_margin_before_the_end() -> None:
    """The window opens at 1000 and closes for starts at 2400: the job starts at 1000 (nothing else
    happens then), trains 1400 s, is stopped at 2400 and never gets a second window. The stop is the
    plan's, not a preemption."""
    trace = [TraceJob("reserved", 0.0, 0, "plan:reserved", 2, 2000.0, checkpoint_every_s=100.0)]

    result = simulate(trace, config(training_plans=PLAN), timing=Timing(0, 0))

    assert runs(result, "reserved") == [(1000.0, 2460.0, "plan_window_closed")]
    assert (result.metrics["preemptions"], result.metrics["plan_window_stops"]) == (0, 1)
    assert result.metrics["unfinished"] == ["reserved"]


@pytest.mark.parametrize("policy", list(PolicyName))
def test_a_trace_without_the_new_fields_reports_none_of_their_metrics(policy: PolicyName) -> None:
    result = simulate([TraceJob("plain", 0.0, 0, G5, 1, 100.0)], config(), policy, timing=Timing(0, 0))

    assert "warm_pools" not in result.metrics and "purchase" not in result.metrics


def test_the_warm_pools_workload_reuses_warm_pools_and_its_section_keeps_fewer_idle() -> None:
    workload = warm_pools(7, jobs=40)
    assert workload.document is not None
    with_section = SchedulerConfig.of(parse_config_document(workload.document, source="test"), backfill=True)

    asked = simulate(workload.jobs, SchedulerConfig(pools=workload.pools, backfill=True)).metrics["warm_pools"]
    decided = simulate(workload.jobs, with_section).metrics["warm_pools"]

    assert {job.warm_key for job in workload.jobs} <= {f"family-{number}" for number in range(6)}
    assert asked["reused"] > 0 and decided["reused"] > 0
    assert decided["idle_hours"] < asked["idle_hours"]


@settings(max_examples=settings.default.max_examples * 40 // 100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 5000), st.sampled_from(("a", "b", None)), st.sampled_from((1, 2)), st.integers(0, 2)),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_warm_pools_never_over_commit_a_pool_and_every_job_completes(
    drafts: list[tuple[float, str | None, int, int]], section: bool
) -> None:
    trace = [
        TraceJob(f"j{n}", submit_s, priority, G5, size, 900.0, keep_alive_s=600 if key else 0, warm_key=key)
        for n, (submit_s, key, size, priority) in enumerate(drafts)
    ]
    held: list[int] = []

    def observe(snapshot: Snapshot, actions: Sequence[Action], now: datetime) -> None:
        live = sum(job.demand.get(G5, 0) for job in snapshot.jobs if job.is_live)
        held.append(live + sum(warm.count for warm in snapshot.warm_pools))

    result = simulate(trace, config(warm_pools={}) if section else config(), timing=STARTUP, observe=observe)

    assert max(held) <= 2
    assert result.metrics["unfinished"] == [] and result.metrics["refused_starts"] == 0
    figures = result.metrics.get("warm_pools", {"reused": 0, "retained": 0})
    assert figures["reused"] <= figures["retained"]
