"""End to end on the local stack (issue 19, defects 3 and 4), synthetic executor, team quotas:

* a team tag that names no configured team is refused at submission, naming the tag and the teams
  ("e2e " with a trailing space included);
* a job of a team removed from the configuration after it was queued waits as unassigned, says so,
  and starts once capacity frees;
* an identical resubmission after the job was cancelled, or failed at once, queues a new job, and
  the earlier one stays readable by its id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from smq import SmqApiClient
from smq.errors import InvalidRequest
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL, rereading_stack, synthetic_request, wait_for, write_config

QUOTAS = {"e2e": {"instances": {POOL: 1}, "sharing": "lend_and_borrow"}}
CONFIG = {"pools": {POOL: 1}, "quotas": {**QUOTAS, "gone": {"instances": {POOL: 0}, "sharing": "reserve"}}}
"""One instance, team e2e's (every request of tests/e2e/local.py is tagged team=e2e); team gone has
no quota and may not borrow, so its job waits until the team is removed and runs as unassigned."""
FINISHED = {"completed", "failed", "cancelled"}
CONFIG_SEEN_S = 60
"""Generous: the stack's functions re-read the configuration document every second."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalStackOptions(
        config=CONFIG,
        executor="synthetic",
        workdir=tmp_path_factory.mktemp("team-tags"),
        reconcile_every_seconds=2,
    )
    with rereading_stack(options) as running:
        yield running


@pytest.fixture(scope="module")
def client(stack: LocalStack) -> SmqApiClient:
    return SmqApiClient(stack.api_url, region="us-east-1")


def tagged(request: dict[str, Any], team: str) -> dict[str, Any]:
    tags = [tag for tag in request["Tags"] if tag["Key"] != "team"]
    return {**request, "Tags": [*tags, {"Key": "team", "Value": team}]}


def wait_for_reason(client: SmqApiClient, name: str, part: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job = client.get_job(name)
    while part not in (job.get("reason") or ""):
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}'s reason never said {part!r}: {job}")
        time.sleep(0.5)
        job = client.get_job(name)
    return job


def test_a_team_tag_that_names_no_configured_team_is_refused(client: SmqApiClient) -> None:
    with pytest.raises(InvalidRequest) as refused:
        client.add_job(tagged(synthetic_request("typo"), "e2e "))

    assert refused.value.field == "Tags[team]"
    assert "'e2e', 'gone'" in str(refused.value) and "whitespace" in str(refused.value)


def test_resubmissions_and_a_removed_team(stack: LocalStack, client: SmqApiClient) -> None:
    blocker = client.add_job(synthetic_request("blocker", duration=600))
    wait_for(client, "blocker", {"running"})

    # Defect 4: submit, cancel, resubmit the same request.
    request = synthetic_request("resubmitted", duration=1)
    first = client.add_job(request)
    client.cancel_job("resubmitted")
    wait_for(client, "resubmitted", {"cancelled"})
    second = client.add_job(request)
    assert (second["state"], second["earlier_job_ids"]) == ("pending", [first["job_id"]])
    assert second["job_id"] != first["job_id"]
    assert client.get_job("resubmitted")["state"] == "pending", "queued, as the answer said"
    earlier = client._call("GET", "/jobs/resubmitted", query={"job_id": first["job_id"]})
    assert earlier["state"] == "cancelled"

    # Defect 3: team gone is removed while its job waits; the job runs as unassigned.
    client.add_job(tagged(synthetic_request("orphan", duration=1), "gone"))
    write_config(stack, {"pools": {POOL: 1}, "quotas": QUOTAS})
    waiting = wait_for_reason(
        client, "orphan", "team 'gone' is no longer configured; runs as unassigned", CONFIG_SEEN_S
    )
    assert waiting["state"] == "pending"

    client.cancel_job(blocker["name"])
    for name in ("resubmitted", "orphan"):
        assert wait_for(client, name, FINISHED, timeout=CONFIG_SEEN_S)["state"] == "completed"

    # Defect 4 again, after a fast failure.
    failing = synthetic_request("fails-fast", duration=0.1, outcome="fail")
    failed = client.add_job(failing)
    wait_for(client, "fails-fast", {"failed"})
    again = client.add_job(failing)
    assert again["job_id"] != failed["job_id"] and again["state"] == "pending"
    assert wait_for(client, "fails-fast", FINISHED)["job_id"] == again["job_id"]
