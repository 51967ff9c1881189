"""One rule for what a team holds, over simulated workloads: a team that may not borrow (`lend`,
`reserve`, a borrow limit of 0) never holds more than its quota, its stops in flight included
(issue 22, item 7)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import PreemptionRules, Quota, Sharing, Teams
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.engine import Timing, simulate
from smq_lambda.simulation.trace import parse_trace

POOL = "ml.p5.48xlarge"
TEAMS = Teams(
    quotas={
        "lender": Quota({POOL: 3}, sharing=Sharing.LEND),
        "keeper": Quota({POOL: 2}, sharing=Sharing.RESERVE),
        "taker": Quota({POOL: 2}),
        "capped": Quota({POOL: 1}, borrow_limit=0),
    }
)
MAY_NOT_BORROW = {"lender": 3, "keeper": 2, "capped": 1}
CONFIG = SchedulerConfig(pools={POOL: 9}, teams=TEAMS, preemption=PreemptionRules())
"""No protection from the preemption rules, so priority preemptions inside a team are frequent."""


@st.composite
def workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=2, max_value=14))
    return [
        {
            "name": f"job-{number:02d}",
            "submit_s": draw(st.integers(min_value=0, max_value=4000)),
            "priority": draw(st.integers(min_value=0, max_value=3)),
            "pool": POOL,
            "instances": draw(st.integers(min_value=1, max_value=3)),
            "duration_s": draw(st.integers(min_value=60, max_value=3000)),
            "team": draw(st.sampled_from(["lender", "keeper", "taker", "capped", "other"])),
            "stop_s": draw(st.integers(min_value=1, max_value=300)),
        }
        for number in range(count)
    ]


def most_held(segments: Sequence[Any], team: str) -> int:
    """The most instances `team`'s attempts held at once, from each start to its instances given back."""
    changes: list[tuple[float, int]] = []
    for segment in segments:
        if segment.team == team:
            changes.append((segment.start_s, len(segment.slots)))
            if segment.end_s is not None:
                changes.append((segment.end_s, -len(segment.slots)))
    held = most = 0
    for _, change in sorted(changes):  # at one moment, instances given back count before new ones
        held += change
        most = max(most, held)
    return most


@given(workloads(), st.integers(min_value=0, max_value=3), st.booleans())
def test_a_team_that_may_not_borrow_never_holds_more_than_its_quota(
    trace: list[dict[str, Any]], seed: int, backfill: bool
) -> None:
    jobs = parse_trace(json.dumps(line) for line in trace)
    config = replace(CONFIG, backfill=backfill)

    result = simulate(jobs, config, timing=Timing(start_min_s=30, start_max_s=120, seed=seed))

    held = {team: most_held(result.segments, team) for team in MAY_NOT_BORROW}
    assert all(held[team] <= quota for team, quota in MAY_NOT_BORROW.items()), held
