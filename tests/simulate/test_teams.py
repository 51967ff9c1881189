"""`smq simulate` with team quotas: the engine gives jobs their team and counts the teams' usage from
pass to pass as the deployed scheduler does, so fair share decides; the `teams` workload; the
per-team table; and the teams workload end to end."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from smq.cli.main import main
from smq.simulate.workloads import TEAMS_POOL, teams
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.domain.config.teams import Quota, Teams
from smq_lambda.pass_summary import TeamUsageRecord
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot
from smq_lambda.service.team_usage import TeamUsageKeeper
from smq_lambda.simulation.engine import Timing, simulate
from smq_lambda.simulation.trace import check_pools, parse_trace, write_trace

INSTANT = Timing(start_min_s=0, start_max_s=0)
# A pool of 6: vision and nlp own 2 each, the unassigned group the other 2. vision runs v1 on 4 (2
# borrowed) until 1000 s; nlp's x1 (1 instance, 500-510 s) makes passes that count it. At 1000 s
# both teams start a job within their quota and want to borrow 2 more, and only the unassigned
# group's 2 are idle.
FAIR_SHARE = [
    TraceJob("v1", 0, 0, "p", 4, 1000, team="vision"),
    TraceJob("x1", 500, 0, "p", 1, 10, team="nlp"),
    *(TraceJob(name, 1000, 0, "p", 2, 100, team=team) for name, team in (("v2", "vision"), ("v3", "vision"))),
    *(TraceJob(name, 1000, 0, "p", 2, 100, team=team) for name, team in (("x2", "nlp"), ("x3", "nlp"))),
]
FAIR_TEAMS = Teams(quotas={"vision": Quota({"p": 2}), "nlp": Quota({"p": 2})}, usage_half_life_s=1800)


class History:
    """The deployed scheduler's usage record, in memory."""

    def __init__(self) -> None:
        self.record: TeamUsageRecord | None = None

    def load(self) -> TeamUsageRecord | None:
        return self.record

    def save(self, record: TeamUsageRecord, *, previous: TeamUsageRecord | None) -> None:
        self.record = record


def starts(trace: list[TraceJob], config: SchedulerConfig, **kwargs: Any) -> dict[str, float]:
    result = simulate(trace, config, timing=INSTANT, **kwargs)
    return {segment.job: segment.start_s for segment in result.segments if segment.attempt == 1}


def test_the_team_that_used_more_lately_yields_when_both_want_to_borrow() -> None:
    started = starts(FAIR_SHARE, SchedulerConfig(pools={"p": 6}, teams=FAIR_TEAMS))

    assert started["v2"] == started["x2"] == started["x3"] == 1000.0  # nlp used less: it borrows
    assert started["v3"] == 1100.0  # vision waits for its own jobs to end


def test_without_past_usage_the_tie_goes_to_queue_order() -> None:
    """The same pass with no usage counted (nlp renamed to sort after vision): vision borrows. So
    it is the usage the engine carried that decided above."""
    config = SchedulerConfig(pools={"p": 6}, teams=FAIR_TEAMS)
    only_the_burst = [job for job in FAIR_SHARE if job.submit_s == 1000]

    started = starts(only_the_burst, config)

    assert started["v3"] == 1000.0 and started["x3"] == 1100.0


def test_every_pass_sees_the_usage_the_deployed_scheduler_would_count() -> None:
    """The deployed TeamUsageKeeper, fed each pass's live jobs and time, counts what the engine gave."""
    keeper = TeamUsageKeeper(History())
    seen: list[tuple[Mapping[str, float], Mapping[str, float]]] = []

    def check(snapshot: Snapshot, actions: list[Action], now: datetime) -> None:
        counted = keeper.count(FAIR_TEAMS, [job for job in snapshot.jobs if job.is_live], now)
        assert counted is not None
        keeper.keep(counted)
        seen.append((snapshot.team_usage, counted.usage))

    simulate(FAIR_SHARE, SchedulerConfig(pools={"p": 6}, teams=FAIR_TEAMS), timing=INSTANT, observe=check)

    assert len(seen) > 5
    for engine, deployed in seen:
        assert engine == pytest.approx(deployed)
    # Usage counts what a pass finds running: vision's v1 at 500 and 510 s; x1, gone by 510, never.
    assert seen[-1][0]["vision"] > 1000 and "nlp" not in seen[-1][0]


def test_simulated_jobs_have_their_team() -> None:
    teams_seen: set[str | None] = set()

    def check(snapshot: Snapshot, actions: list[Action], now: datetime) -> None:
        teams_seen.update(job.team for job in snapshot.jobs)

    simulate([*FAIR_SHARE, TraceJob("u", 0, 0, "p", 1, 5)], SchedulerConfig(pools={"p": 6}), observe=check)

    assert teams_seen == {"vision", "nlp", None}


def test_the_teams_workload_is_deterministic_and_valid() -> None:
    first, again, other = teams(5), teams(5), teams(6)

    assert first == again and first.jobs != other.jobs
    assert len(teams(5, jobs=33).jobs) == 33
    assert parse_trace(write_trace(first.jobs).splitlines()) == first.jobs
    check_pools(first.jobs, first.pools)
    document = parse_config_document(json.loads(json.dumps(first.config)), source="config.json")
    assert document.pools == {TEAMS_POOL: 8}
    assert {team: quota.instances for team, quota in document.teams.quotas.items()} == {
        "vision": {TEAMS_POOL: 4},
        "nlp": {TEAMS_POOL: 4},
    }
    for team in ("vision", "nlp"):
        submits = sorted(job.submit_s for job in first.jobs if job.team == team)
        bursts = [submits[0]] + [now for before, now in itertools.pairwise(submits) if now - before > 3600]
        assert len(bursts) >= 8  # quiet hours between its bursts
        demand = [
            sum(j.instances for j in first.jobs if j.team == team and 0 <= j.submit_s - at < 600) for at in bursts
        ]
        assert max(demand) > 4  # a burst beyond its quota


def test_generate_writes_the_document_with_quotas(tmp_path: Path) -> None:
    assert main(["simulate", "generate", "teams", "--jobs", "30", "--out", str(tmp_path)]) == 0

    assert json.loads((tmp_path / "config.json").read_text()) == teams(7, jobs=30).config
    assert len((tmp_path / "trace.jsonl").read_text().splitlines()) == 30


@pytest.mark.parametrize("with_quotas", [True, False], ids=["quotas", "no quotas"])
def test_the_per_team_table_is_printed_only_with_quotas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_quotas: bool
) -> None:
    workload = teams(3, jobs=20)
    document = workload.config if with_quotas else {"pools": workload.pools}
    (tmp_path / "trace.jsonl").write_text(write_trace(workload.jobs))
    (tmp_path / "config.json").write_text(json.dumps(document))

    code = main(["simulate", str(tmp_path / "trace.jsonl"), "--config", str(tmp_path / "config.json"), "--compare"])

    out = capsys.readouterr().out
    assert code == 0
    assert ("| policy   | team" in out and "quota kept" in out) == with_quotas
    assert "per team" in out if with_quotas else "per team" not in out


def test_the_teams_workload_keeps_every_quota_and_lends_idle_quota(tmp_path: Path) -> None:
    assert main(["simulate", "generate", "teams", "--out", str(tmp_path)]) == 0

    code = main(
        ["simulate", str(tmp_path / "trace.jsonl"), "--config", str(tmp_path / "config.json"), "--out", str(tmp_path)]
    )

    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert code == 0 and metrics["unfinished"] == []
    for team in ("vision", "nlp"):
        pool = metrics["teams"][team]["pools"][TEAMS_POOL]
        assert pool["quota_kept"] >= 0.99, team
        assert pool["borrowed_instance_s"] > 0 and pool["lent_instance_s"] > 0, team
        assert metrics["teams"][team]["reclaims"] > 0
    assert metrics["pools"][TEAMS_POOL]["utilization_while_waiting"] > 0.9
