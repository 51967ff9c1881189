"""Start estimates in a simulated run: made before passes by the live code, learned from the jobs
the run completed, measured when their job starts, learned and max-runtime side by side; and the
workloads made of job families that they are benchmarked on."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from smq.cli.main import main
from smq.simulate.workloads import Workload, mixed_families, teams_families
from smq_lambda.forecast.durations import family_of_name
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.accuracy import ALL, WAITED
from smq_lambda.simulation.engine import Timing, simulate
from smq_lambda.simulation.policies import PolicyName

INSTANT = Timing(start_min_s=0, start_max_s=0)


def family_job(number: int, submit_s: float) -> TraceJob:
    return TraceJob(f"fam-{number}", submit_s, 0, "p", 1, 600.0, team="t", max_runtime_s=3600)


def test_a_family_seen_three_times_is_estimated_exactly_and_max_runtime_is_not() -> None:
    """fam-1..3 run alone (600 s each); fam-4 starts at 2100 s, and fam-5, submitted a second
    later, waits for it. Learned: fam-4 has 599 s left, so fam-5 starts at 2700 s, as it does.
    Assuming MaxRuntimeInSeconds: 3599 s left, 3000 s late on a wait of 599 s, but within its band,
    since what it says is "at most"."""
    trace = [family_job(1, 0), family_job(2, 700), family_job(3, 1400), family_job(4, 2100), family_job(5, 2101)]

    metrics = simulate(trace, SchedulerConfig(pools={"p": 1}), timing=INSTANT, estimates=True).metrics

    learned, ceiling = metrics["estimates"]["learned"]["submission"], metrics["estimates"]["max_runtime"]["submission"]
    assert learned[ALL]["measured"] == ceiling[ALL]["measured"] == 5
    assert learned[WAITED] == {
        "measured": 1,
        "within_band": 1.0,
        "within_1_min": 1.0,
        "within_10_min": 1.0,
        "median_error_share": 0.0,
        "median_error_s": 0.0,
        "without_time": 0,
    }
    assert ceiling[WAITED]["within_band"] == 1.0
    assert ceiling[WAITED]["median_error_share"] == round(3000 / 599, 4)
    assert ceiling[WAITED]["within_1_min"] == ceiling[WAITED]["within_10_min"] == 0.0  # 3,000 s late
    assert learned[ALL]["within_band"] == 1.0  # the four that started at once were told "now"


def test_estimates_change_nothing_of_the_run_and_only_smq_makes_them() -> None:
    workload = teams_families(seed=3, jobs=24)
    config = SchedulerConfig(pools=workload.pools, backfill=True)

    plain = simulate(workload.jobs, config, timing=Timing(seed=3))
    measured = simulate(workload.jobs, config, timing=Timing(seed=3), estimates=True)
    fifo = simulate(workload.jobs, config, PolicyName.FIFO, Timing(seed=3), estimates=True)

    assert {key: value for key, value in measured.metrics.items() if key != "estimates"} == plain.metrics
    assert measured.segments == plain.segments
    assert "estimates" in measured.metrics and "estimates" not in plain.metrics and "estimates" not in fifo.metrics
    figures = measured.metrics["estimates"]
    assert figures["learned"]["submission"][ALL]["measured"] >= len(workload.jobs)
    assert figures["learned"]["passes"][ALL]["measured"] > 0
    assert figures["learned"]["submission"]["unmeasured"] == 0


def test_smq_simulate_estimates_prints_and_writes_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "generate", "teams-families", "--seed", "7", "--jobs", "16", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    trace, config = str(tmp_path / "trace.jsonl"), str(tmp_path / "config.json")

    code = main(["simulate", trace, "--config", config, "--estimates", "--out", str(tmp_path / "with")])
    out = capsys.readouterr().out
    assert main(["simulate", trace, "--config", config, "--out", str(tmp_path / "without")]) == 0

    assert code == 0
    assert "start estimates (smq)" in out and "max-runtime: within band" in out
    metrics = json.loads((tmp_path / "with" / "metrics.json").read_text())
    for way in ("learned", "max_runtime"):
        for moment in ("submission", "passes"):
            assert {ALL, WAITED, "0", "unmeasured"} <= set(metrics["estimates"][way][moment])
    assert metrics["estimates"]["learned"]["submission"][ALL]["measured"] >= 16
    assert "estimates" not in json.loads((tmp_path / "without" / "metrics.json").read_text())


@pytest.mark.parametrize("generate", [mixed_families, teams_families])
def test_family_workloads_are_seeded_and_each_family_is_one_kind_of_job(generate) -> None:  # type: ignore[no-untyped-def]
    workload: Workload = generate(seed=7, jobs=120)

    assert workload == generate(seed=7, jobs=120)
    assert workload.jobs != generate(seed=8, jobs=120).jobs
    assert len(workload.jobs) == 120
    families: dict[str, list[TraceJob]] = defaultdict(list)
    for job in workload.jobs:
        families[family_of_name(job.name)].append(job)
    assert len(families) > 3
    for family, jobs in families.items():
        assert [job.name for job in jobs] == [f"{family}-{number}" for number in range(1, len(jobs) + 1)]
        assert len({(job.pool, job.instances, job.team, job.max_runtime_s) for job in jobs}) == 1
        assert all(job.duration_s <= (job.max_runtime_s or 0) for job in jobs)
    typical = sorted(statistics.median(job.duration_s for job in jobs) for jobs in families.values() if len(jobs) > 2)
    assert typical[-1] > 1.5 * typical[0]  # each family its own typical duration
