"""The `everything` workload (issue 29): one seed, one workload; every feature in it; every job of
its default options ends, also through `smq simulate generate` and a replay of the files it
writes; its options change what they say; and the trace check that lets a spot job run where its
type's on-demand pool is 0. A Hypothesis test over seeds and options: every pass keeps every
invariant (scheduling/invariants.py) and every job ends."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq.cli.main import main
from smq.simulate.everything_workload import (
    PLAN_POOL,
    TEAMS,
    EverythingOptions,
    everything,
    everything_config,
    simulate_everything,
)
from smq.simulate.placement_workloads import FAST, SLOW, WARM_TYPE
from smq_lambda.domain.config.teams import Sharing
from smq_lambda.domain.costs.budgets import BudgetAction
from smq_lambda.domain.placements.purchase import spot_pool
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.simulation.trace import TraceError, check_pools, parse_trace, write_trace

SEED = 3


def places(job: TraceJob) -> set[str]:
    return {preference.pool for preference in job.preferences} or {job.pool}


def test_one_seed_gives_one_workload() -> None:
    assert everything(SEED, 60) == everything(SEED, 60)
    assert everything(SEED, 60).jobs != everything(SEED + 1, 60).jobs


def test_every_feature_is_in_the_workload() -> None:
    workload = everything(SEED)
    jobs = workload.jobs

    kinds = {
        "pinned on demand": sum(not job.alternatives and job.purchase is None and not job.keep_alive_s for job in jobs),
        "flexible over two types": sum(len(job.preferences) == 2 for job in jobs),
        "flexible over three types": sum(len(job.preferences) == 3 for job in jobs),
        "spot": sum(job.purchase == "spot" for job in jobs),
        "spot only": sum(job.purchase == "spot_only" for job in jobs),
        "interrupted": sum(bool(job.interruptions_s) for job in jobs),
        "pinned to the plan": sum(job.pool == PLAN_POOL and not job.alternatives for job in jobs),
        "the plan, else another type": sum(PLAN_POOL in places(job) and len(job.preferences) > 1 for job in jobs),
        "keeping a warm pool": sum(job.keep_alive_s > 0 and job.warm_key is not None for job in jobs),
        "no team": sum(job.team is None for job in jobs),
        **{f"team {team}": sum(job.team == team for job in jobs) for team in TEAMS},
    }
    assert len(jobs) == 120 and all(kinds.values()), kinds
    assert max(Counter(job.warm_key for job in jobs if job.warm_key).values()) >= 3  # a family keeps coming back


def test_every_section_is_in_the_configuration() -> None:
    config = everything_config(everything(SEED))

    quotas = config.teams.quotas
    assert {quota.sharing for quota in quotas.values()} == set(Sharing)
    borrowers = [quota.borrow_limit for quota in quotas.values() if quota.sharing.borrows]
    assert None in borrowers and any(limit is not None for limit in borrowers)
    assert config.pools == {FAST: 8, SLOW: 8, WARM_TYPE: 8, spot_pool(SLOW): 8, PLAN_POOL: 4}
    assert config.spot is not None and config.spot.adaptive is not None and config.spot.on_demand_after_s
    assert len(config.training_plans["p5-reserved"].windows) > 1
    assert {budget.action for budget in config.budgets.values()} == set(BudgetAction)
    assert set(config.prices) == {FAST, SLOW, WARM_TYPE}
    assert config.warm_pools is not None and config.backfill


def test_the_trace_reads_back_as_generated() -> None:
    workload = everything(SEED)

    assert parse_trace(write_trace(workload.jobs).splitlines()) == workload.jobs
    check_pools(workload.jobs, everything_config(workload).pools)


def test_a_run_of_the_defaults_ends_every_job_and_meets_every_feature() -> None:
    result = simulate_everything(SEED)
    metrics = result.metrics

    assert metrics["unfinished"] == [] and metrics["refused_starts"] == 0
    assert metrics.get("invariant_violations", []) == []
    assert {segment.pool for segment in result.segments} == set(everything(SEED, 60).pools)
    assert metrics["interruptions"] and metrics["preemptions"] and metrics["backfill_starts"]
    assert metrics["warm_pools"]["reused"] and metrics["purchase"]["spot_share"] < 1
    assert sum(budget["held_jobs"] for budget in metrics["cost"]["budgets"].values())


def test_generate_writes_files_that_smq_simulate_runs_to_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generate = ["simulate", "generate", "everything", "--seed", str(SEED), "--jobs", "60", "--out", str(tmp_path)]
    assert main(generate) == 0
    assert json.loads((tmp_path / "config.json").read_text()) == everything(SEED, 60).config
    capsys.readouterr()

    code = main(["simulate", str(tmp_path / "trace.jsonl"), "--config", str(tmp_path / "config.json")])

    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"\| unfinished jobs +\| 0 +\|", out), out
    assert "held jobs" in out and "per team" in out


@pytest.mark.parametrize(
    ("options", "absent"),
    [
        (EverythingOptions(quotas=False), "quotas"),
        (EverythingOptions(plan=False), "training_plans"),
        (EverythingOptions(warm_pools_section=False), "warm_pools"),
        (EverythingOptions(budgets=(None,) * len(TEAMS)), "budgets"),
    ],
)
def test_an_option_turned_off_takes_its_section_out(options: EverythingOptions, absent: str) -> None:
    assert absent not in everything(SEED, 40, options).config


def test_the_options_reach_the_jobs_and_the_sections() -> None:
    without = everything(SEED, 40, EverythingOptions(plan=False, warm_pools=False))
    spot = everything(SEED, 40, EverythingOptions(spot_adaptive=False, on_demand_after_s=None)).config["spot"]
    mistakes = everything(SEED, 40, EverythingOptions(slow=0, borrow_limits=(0, 0, None, None)))

    assert not any(PLAN_POOL in places(job) or job.keep_alive_s or job.warm_key for job in without.jobs)
    assert spot == {"pools": {SLOW: 8}}
    assert mistakes.pools[SLOW] == 0 and mistakes.config["quotas"]["nlp"]["borrow_limit"] == 0
    assert not any(SLOW in places(job) and job.purchase is None for job in mistakes.jobs)
    check_pools(mistakes.jobs, everything_config(mistakes).pools)  # its spot jobs fit in the spot pool


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"sharing": (Sharing.RESERVE,)}, "sharing needs one entry per team"),
        ({"fast": 0}, "fast, warm and plan_instances need an instance"),
        ({"slow": -1}, "slow and slow_spot may be 0"),
        ({"plan_instances": 0}, "fast, warm and plan_instances need an instance"),
        ({"budget_share": 0.0}, "budget_share must be above 0"),
    ],
)
def test_options_that_describe_no_account_are_refused(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        EverythingOptions(**changes)


def test_a_spot_job_fits_in_its_spot_pool_where_the_on_demand_pool_is_0() -> None:
    pools = {SLOW: 0, spot_pool(SLOW): 4}
    spot = TraceJob("spot", 0.0, 0, SLOW, 4, 600.0, purchase="spot")

    check_pools([spot], pools)
    with pytest.raises(TraceError) as on_demand:
        check_pools([TraceJob("on-demand", 0.0, 0, SLOW, 1, 600.0)], pools)
    with pytest.raises(TraceError) as too_large:
        check_pools([TraceJob("large", 0.0, 0, SLOW, 5, 600.0, purchase="spot_only")], pools)

    assert "1 is more than ml.g5.48xlarge holds (0)" in str(on_demand.value)
    assert "5 is more than ml.g5.48xlarge holds (4)" in str(too_large.value)


SHARING = st.sampled_from(list(Sharing))
BORROW_LIMIT = st.none() | st.integers(0, 4)
BUDGET = st.none() | st.sampled_from(list(BudgetAction))
OPTIONS = st.integers(0, 8).flatmap(
    lambda slow: st.builds(
        EverythingOptions,
        backfill=st.booleans(),
        quotas=st.booleans(),
        sharing=st.tuples(SHARING, SHARING, SHARING, SHARING),
        borrow_limits=st.tuples(BORROW_LIMIT, BORROW_LIMIT, BORROW_LIMIT, BORROW_LIMIT),
        budgets=st.tuples(BUDGET, BUDGET, BUDGET, BUDGET),
        budget_share=st.sampled_from((0.3, 1.0, 3.0)),
        spot_adaptive=st.booleans(),
        flexible_spot=st.booleans(),
        on_demand_after_s=st.sampled_from((None, 0, 1800)),
        plan=st.booleans(),
        warm_pools=st.booleans(),
        warm_pools_section=st.booleans(),
        fast=st.integers(1, 8),
        slow=st.just(slow),
        slow_spot=st.integers(0, 8),
        warm=st.integers(1, 8),
        plan_instances=st.integers(1, 4),
    )
)
"""Every option, operators' mistakes included (a pool of 0, a borrow limit of 0, a spot pool
larger or smaller than the on-demand pool beside it)."""


@settings(max_examples=max(settings.default.max_examples // 10, 1), deadline=None)
@given(seed=st.integers(0, 1000), options=OPTIONS)
def test_every_pass_keeps_every_invariant_and_every_job_ends_whatever_the_options(
    seed: int, options: EverythingOptions
) -> None:
    metrics = simulate_everything(seed, 30, options).metrics

    assert metrics["invariant_violations"] == []
    assert metrics["unfinished"] == [] and metrics["refused_starts"] == 0


def test_a_spot_job_beside_an_on_demand_pool_of_0_ends() -> None:
    assert simulate_everything(0, 60, EverythingOptions(slow=0)).metrics["unfinished"] == []


def test_a_run_with_flexible_spot_jobs_ends() -> None:
    assert simulate_everything(0, 60, EverythingOptions(flexible_spot=True)).metrics["unfinished"] == []


def test_a_spot_job_whose_team_may_never_hold_it_on_demand_stays_on_spot_and_ends() -> None:
    """Found by the Hypothesis test above: every team reserves an on-demand quota of 0, so a spot job
    moved on demand after its interruptions would have waited for good."""
    reserve = EverythingOptions(
        backfill=False, sharing=(Sharing.RESERVE,) * len(TEAMS), budgets=(None,) * len(TEAMS),
        spot_adaptive=False, on_demand_after_s=None, plan=False, warm_pools=False, warm_pools_section=False,
        fast=1, slow=2, warm=1,
    )  # fmt: skip

    metrics = simulate_everything(1, 60, reserve).metrics

    assert metrics["unfinished"] == [] and metrics["invariant_violations"] == []
