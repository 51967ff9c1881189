"""The Gantt chart: rows and colours checked directly, and real runs (4 jobs, 300 jobs) rendered to
PNGs of the size the row count asks for."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from smq.simulate.gantt import (
    DPI,
    WIDTH_IN,
    MissingPlotting,
    draw_gantt,
    figure_height,
    priority_colours,
    slot_rows,
)
from smq_lambda.replay.timeline import Segment
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Result, Timing, simulate

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BIG_POOLS = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 16}


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which a PNG always starts with."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def four_job_run() -> Result:
    trace = [
        TraceJob("job1", 0, 1, "ml.p5", 1, 3600, checkpoint_every_s=600),
        TraceJob("job2", 20, 2, "ml.p5", 1, 1800),
        TraceJob("job3", 40, 1, "ml.p5", 1, 3600),
        TraceJob("job4", 1000, 3, "ml.p5", 1, 3600),
    ]
    return simulate(trace, SchedulerConfig(pools={"ml.p5": 2}), timing=Timing(60, 60))


def big_run(jobs: int = 300, seed: int = 7) -> Result:
    """A day of mixed work over 24 slots: priorities 0..3, multi-instance jobs, some on spot."""
    rng = random.Random(seed)
    trace = []
    for index in range(jobs):
        pool = rng.choices(list(BIG_POOLS), weights=list(BIG_POOLS.values()))[0]
        duration = rng.uniform(600, 2 * 3600)
        spot = rng.random() < 0.1
        trace.append(
            TraceJob(
                f"job{index}",
                submit_s=rng.uniform(0, 20 * 3600),
                priority=rng.choice((0, 0, 1, 1, 2, 3)),
                pool=pool,
                instances=rng.choice((1, 1, 1, 2, 4)),
                duration_s=duration,
                checkpoint_every_s=rng.choice((None, 600, 1800)),
                interruptions_s=(rng.uniform(0, duration),) if spot else (),
            )
        )
    return simulate(trace, SchedulerConfig(pools=BIG_POOLS, backfill=True), timing=Timing(seed=seed))


def test_rows_go_pool_by_pool_then_by_slot() -> None:
    assert slot_rows({"ml.p5": 2, "ml.g5": 3}) == {
        ("ml.p5", 0): 0,
        ("ml.p5", 1): 1,
        ("ml.g5", 0): 2,
        ("ml.g5", 1): 3,
        ("ml.g5", 2): 4,
    }


@pytest.mark.parametrize("priorities", [[0, 1, 2, 3], [3, 0, 3, 1], [-5, 10, 1000], [7]])
def test_each_priority_has_its_own_colour_and_higher_is_darker(priorities: list[int]) -> None:
    colours = priority_colours(priorities)

    assert sorted(colours) == sorted(set(priorities))
    assert len(set(colours.values())) == len(colours)
    luminance = [0.299 * r + 0.587 * g + 0.114 * b for r, g, b, _ in (colours[p] for p in sorted(colours))]
    assert luminance == sorted(luminance, reverse=True)


def test_a_priority_keeps_its_colour_whatever_else_is_drawn() -> None:
    assert priority_colours([1, 1, 1])[1] == priority_colours([1])[1]


def test_the_four_job_run_renders(tmp_path: Path) -> None:
    result = four_job_run()
    assert {segment.outcome for segment in result.segments} == {"completed", "preempted"}
    path = tmp_path / "gantt.png"

    draw_gantt(result.segments, {"ml.p5": 2}, path, title="4 jobs")

    assert png_size(path) == (round(WIDTH_IN * DPI), round(figure_height(2) * DPI))


@pytest.mark.slow  # renders a 300-job chart: the full suite runs it
def test_three_hundred_jobs_render_taller(tmp_path: Path) -> None:
    result = big_run()
    outcomes = {segment.outcome for segment in result.segments}
    assert {"completed", "preempted"} <= outcomes
    assert any(segment.interruptions for segment in result.segments)
    path = tmp_path / "gantt.png"

    draw_gantt(result.segments, BIG_POOLS, path, title="300 jobs")

    width, height = png_size(path)
    assert (width, height) == (round(WIDTH_IN * DPI), round(figure_height(24) * DPI))
    assert figure_height(24) > figure_height(2)
    assert figure_height(48) - figure_height(24) == pytest.approx(figure_height(72) - figure_height(48))


def test_an_empty_run_still_draws(tmp_path: Path) -> None:
    path = tmp_path / "gantt.png"

    draw_gantt([], {"ml.p5": 1}, path, title="nothing ran")

    assert png_size(path)[0] == round(WIDTH_IN * DPI)


def test_a_slot_outside_the_pools_is_refused(tmp_path: Path) -> None:
    segment = Segment("job1", 1, None, 0, "ml.p5", (3,), 0.0, running_s=10.0, end_s=100.0, outcome="completed")

    with pytest.raises(ValueError) as raised:
        draw_gantt([segment], {"ml.p5": 2}, tmp_path / "gantt.png", title="t")

    assert "ml.p5 slots [3]" in str(raised.value)


def test_without_matplotlib_it_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)

    with pytest.raises(MissingPlotting) as raised:
        draw_gantt([], {"ml.p5": 1}, tmp_path / "gantt.png", title="t")

    assert "pip install 'smq-sagemaker[simulate]'" in str(raised.value)


def test_importing_the_module_does_not_import_matplotlib() -> None:
    check = "import sys, smq.simulate.gantt; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"

    completed = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=False)

    assert completed.returncode == 0, completed.stderr
