"""The demo with its warm-up round, on the synthetic executor at a quick pace: once the queue has
learned how long the scenario's family takes, each wait's first estimate is a band from that
history, and the start that follows falls within it (with the grace the accuracy metrics allow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from smq.local.demo import Pace, play_demo
from smq_lambda.forecast.accuracy import BAND_GRACE_S

QUICK = Pace(submit_gap_s=2.0, synthetic_training_s=16.0)
"""job4 arrives three gaps after job1 started, and job1 trains twice the others' 16 s: the preemption
has over 20 s to land, also on a loaded machine where a submission can stall for 15 s."""


def test_after_the_warm_up_the_scenarios_jobs_start_within_their_bands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = play_demo(tmp_path / "demo", "synthetic", warm_up=True, pace=QUICK)

    assert run.problems == []
    waits = {(row.given.job, row.given.wait): row for row in run.estimates}
    assert {("job3", 0), ("job4", 0), ("job1", 1)} <= set(waits), "each job that waited had an estimate"
    assert {row.given.estimate["kind"] for row in run.estimates} == {"band"}, "learned from the warm-up"
    assert [key for key, row in waits.items() if not row.within_band] == [], f"grace {BAND_GRACE_S} s"
    assert "Start estimates, as first given for each wait" in capsys.readouterr().out
