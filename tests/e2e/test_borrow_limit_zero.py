"""End to end on the local stack (issue 19, defect 2): a team whose `borrow_limit` is 0 may borrow
nothing, which is not "no limit". Team a (quota 2 of 4, lend_and_borrow, borrow_limit 0) runs two
priority-1 jobs; its priority-9 job stops one of them and starts, as it would under `lend`, instead
of waiting forever beside two free instances. The configuration document is loaded as
`smq local up --executor synthetic --config FILE.json` loads it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, synthetic_request, wait_for

CONFIG = {
    "pools": {POOL: 4},
    "quotas": {
        "a": {"instances": {POOL: 2}, "sharing": "lend_and_borrow", "borrow_limit": 0},
        "b": {"instances": {POOL: 2}, "sharing": "lend"},
    },
    "preemption": {"min_runtime_s": 0},
}
STARTED = {"starting", "running", "completed"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    workdir = tmp_path_factory.mktemp("borrow-limit-0")
    config_file = workdir / "config.json"
    config_file.write_text(json.dumps(CONFIG))
    options = LocalStackOptions(
        config=json.loads(config_file.read_text()),
        executor="synthetic",
        workdir=workdir,
        reconcile_every_seconds=5,
    )
    with LocalStack(options) as running:
        yield running


def team_job(name: str, *, priority: int, duration: float) -> dict[str, Any]:
    request = synthetic_request(name, priority=priority, duration=duration)
    request["Tags"] = [{"Key": "priority", "Value": str(priority)}, {"Key": "team", "Value": "a"}]
    return request


def test_a_team_that_may_borrow_nothing_stops_its_own_lower_priority_job(stack: LocalStack) -> None:
    client = SmqApiClient(stack.api_url, region="us-east-1")
    for name in ("a1", "a2"):
        client.add_job(team_job(name, priority=1, duration=600))
        wait_for(client, name, {"running"})

    client.add_job(team_job("a3", priority=9, duration=2))

    a3 = wait_for(client, "a3", STARTED, timeout=90)
    lower = [client.get_job(name) for name in ("a1", "a2")]
    preempted = [job for job in lower if any(attempt["outcome"] == "preempted" for attempt in job["attempts"])]
    assert len(preempted) == 1, lower
    assert preempted[0]["attempts"][0]["reason"].startswith("preempted for a3 (priority 9 > 1) within a's quota")
    assert "waiting for  being" not in (a3["reason"] or "")
    assert wait_for(client, "a3", {"completed"}, timeout=90)["state"] == "completed"
