"""A pending job's estimated start: what the last scheduling pass estimated (its pass summary's
`estimates`), shown on the job while the job is still as the pass saw it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from smq_lambda.forecast.start_estimate import EstimateKind, StartEstimate
from smq_lambda.pass_summary import PassSummary, PoolMeasure

from tests.api.builders import G5, run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock, InMemoryPassSummaries

ASSUMED = "assumes 1 job ahead runs as tagged (smq:expected-duration); no new higher-priority jobs"


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def publish(summaries: InMemoryPassSummaries, clock: FakeClock, *estimates: StartEstimate) -> str:
    """A pass's report with `estimates`, measured a minute from now (after every write so far)."""
    measured_at = clock() + timedelta(minutes=1)
    summaries.publish(
        PassSummary(
            pools=(PoolMeasure(G5, 4, 4, None),),
            measured_at=measured_at,
            estimates={estimate.job_name: estimate for estimate in estimates},
        )
    )
    return measured_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_a_pending_job_shows_its_estimated_start(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock
) -> None:
    api.add(training_request("waiting"))
    at = clock() + timedelta(hours=2, minutes=10)
    earliest, latest = at - timedelta(minutes=20), at + timedelta(minutes=40)
    estimate = StartEstimate("waiting", at, ASSUMED, earliest=earliest, latest=latest, kind=EstimateKind.BAND)
    computed_at = publish(pass_summaries, clock, estimate)

    reply = api.get("waiting")

    assert reply.status == 200
    assert reply.body["estimated_start"] == {
        "at": iso(at),
        "earliest": iso(earliest),
        "latest": iso(latest),
        "kind": "band",
        "assumed": ASSUMED,
        "computed_at": computed_at,
    }
    listed = api.list_jobs().body["jobs"]
    assert [job["estimated_start"] for job in listed] == [reply.body["estimated_start"]]


def test_an_unknown_start_is_null_and_says_why(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock
) -> None:
    api.add(training_request("waiting"))
    why = "unknown: it waits for mystery, whose duration is unknown (no smq:expected-duration tag, no MaxRuntimeInSeconds)"
    publish(pass_summaries, clock, StartEstimate("waiting", None, why))

    estimate = api.get("waiting").body["estimated_start"]

    assert estimate["at"] is None
    assert estimate["assumed"] == why


def test_no_estimate_without_a_report_or_for_a_job_it_does_not_name(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock
) -> None:
    api.add(training_request("waiting"))
    assert "estimated_start" not in api.get("waiting").body

    publish(pass_summaries, clock)

    assert "estimated_start" not in api.get("waiting").body
    assert "estimate_at_next_pass" not in api.get("waiting").body, "the pass saw it and left it unestimated"


def test_the_submission_answer_says_the_next_pass_estimates_the_start(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock
) -> None:
    publish(pass_summaries, clock)
    clock.advance(minutes=2)

    answer = api.add(training_request("waiting")).body

    assert answer["estimate_at_next_pass"] is True
    assert "estimated_start" not in answer
    publish(pass_summaries, clock, StartEstimate("waiting", clock() + timedelta(hours=1), ASSUMED))
    shown = api.get("waiting").body
    assert "estimate_at_next_pass" not in shown
    assert shown["estimated_start"]["assumed"] == ASSUMED


def test_a_job_that_is_no_longer_pending_shows_none(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock, store: Any
) -> None:
    api.add(training_request("started"))
    publish(pass_summaries, clock, StartEstimate("started", clock(), ASSUMED))
    run(store, "started", clock())

    assert "estimated_start" not in api.get("started").body


def test_a_job_changed_since_the_pass_waits_for_the_next_estimate(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, clock: FakeClock
) -> None:
    api.add(training_request("waiting"))
    publish(pass_summaries, clock, StartEstimate("waiting", clock() + timedelta(hours=1), ASSUMED))
    clock.advance(minutes=5)
    api.set_priority("waiting", 50)

    assert "estimated_start" not in api.get("waiting").body
    assert api.get("waiting").body["estimate_at_next_pass"] is True
