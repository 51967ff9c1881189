"""GET /quotas: each team's share of each pool as the last pass measured it, under the quotas
configured now, with the pending jobs counted when asked; and a job's team in the job's JSON.
Every exchange is checked against openapi.yaml (tests/api/gateway.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Sharing, Teams
from smq_lambda.pass_summary import PassSummary, PoolMeasure, TeamMeasure

from tests.api.builders import G5, P5, run, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeClock, FakeConfigSource, InMemoryPassSummaries

MEASURED = datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
TEAMS = Teams(
    quotas={
        "vision": Quota({G5: 2}, borrow_limit=2),
        "nlp": Quota({G5: 1, P5: 2}, sharing=Sharing.LEND),
    }
)
"""Under POOLS (G5: 4, P5: 2): the unassigned group has 1 of G5 and nothing of P5."""


def quota(
    team: str,
    pool: str,
    quota: int | None,
    in_use: int = 0,
    borrowed: int = 0,
    lent: int = 0,
    pending: int = 0,
    sharing: str = "lend_and_borrow",
    borrow_limit: int | None = None,
) -> dict[str, Any]:
    return {
        "team": team,
        "pool": pool,
        "quota": quota,
        "in_use": in_use,
        "borrowed": borrowed,
        "lent": lent,
        "pending": pending,
        "sharing": sharing,
        "borrow_limit": borrow_limit,
    }


def tagged(name: str, team: str | None, **members: Any) -> dict[str, Any]:
    tags = [] if team is None else [{"Key": "team", "Value": team}]
    return training_request(name, Tags=tags, **members)


@pytest.fixture
def teams(config: FakeConfigSource) -> Teams:
    config.config = replace(config.config, teams=TEAMS)
    return TEAMS


def test_without_quotas_there_are_no_teams(api: ApiGateway, pass_summaries: InMemoryPassSummaries) -> None:
    api.add(training_request("waiting"))

    before = api.quotas()
    pass_summaries.publish(PassSummary(pools=(PoolMeasure(G5, 4, 0),), measured_at=MEASURED))
    after = api.quotas()

    assert before.status == 200
    assert before.body == {"teams": [], "team_tag": "team", "measured_at": None}
    assert after.body == {"teams": [], "team_tag": "team", "measured_at": "2024-05-01T12:00:00.250Z"}


def test_before_any_pass_use_is_counted_from_the_table_and_pending_jobs_when_asked(
    api: ApiGateway, store: Any, clock: FakeClock, config: FakeConfigSource, teams: Teams
) -> None:
    api.add(tagged("vision-big", "vision", instances=3))
    run(store, "vision-big", clock())
    api.add(tagged("vision-next", "vision"))
    api.add(tagged("nlp-next", "nlp"))
    api.add(tagged("untagged", None))
    config.config = replace(config.config, teams=replace(TEAMS, quotas={**TEAMS.quotas, "robotics": Quota({})}))
    api.add(tagged("robotics", "robotics"))
    config.config = replace(config.config, teams=TEAMS)  # robotics removed since

    reply = api.quotas()

    assert reply.status == 200
    assert reply.body == {
        "teams": [
            quota("nlp", G5, 1, lent=1, pending=1, sharing="lend", borrow_limit=0),
            quota("nlp", P5, 2, sharing="lend", borrow_limit=0),
            quota("vision", G5, 2, in_use=3, borrowed=1, pending=1, borrow_limit=2),
            quota(UNASSIGNED, G5, 1, pending=2),
        ],
        "team_tag": "team",
        "measured_at": None,
    }, "nlp and the unassigned group have 1 idle each: the tie goes to nlp; a removed team's job is unassigned"


def test_use_is_what_the_last_pass_measured_under_the_quotas_configured_now(
    api: ApiGateway, pass_summaries: InMemoryPassSummaries, config: FakeConfigSource, teams: Teams
) -> None:
    api.add(tagged("vision-next", "vision"))
    pass_summaries.publish(
        PassSummary(
            pools=(PoolMeasure(G5, 4, 4, "vision-next"), PoolMeasure(P5, 2, 1)),
            measured_at=MEASURED,
            teams=(
                TeamMeasure("nlp", P5, 2, 1, borrowed=0, lent=0),
                TeamMeasure("vision", G5, 2, 2, borrowed=0, lent=0),
                TeamMeasure("retired", G5, 1, 2, borrowed=1, lent=0),
            ),
        )
    )
    config.config = replace(config.config, pools={G5: 6, P5: 2})

    reply = api.quotas()

    assert reply.body == {
        "teams": [
            quota("nlp", G5, 1, sharing="lend", borrow_limit=0),
            quota("nlp", P5, 2, in_use=1, sharing="lend", borrow_limit=0),
            quota("vision", G5, 2, in_use=2, pending=1, borrow_limit=2),
            quota(UNASSIGNED, G5, 3, in_use=2),
        ],
        "team_tag": "team",
        "measured_at": "2024-05-01T12:00:00.250Z",
    }, "a team no longer configured counts in the unassigned group, whose remainder grew with the pool"


def test_a_custom_team_tag_is_named(api: ApiGateway, config: FakeConfigSource) -> None:
    config.config = replace(config.config, teams=replace(TEAMS, tag="cost-center"))

    assert api.quotas().body["team_tag"] == "cost-center"


def test_a_jobs_team_is_the_value_of_its_team_tag(api: ApiGateway, teams: Teams) -> None:
    api.add(tagged("vision-job", "vision"))
    api.add(tagged("nlp-job", "nlp"))
    api.add(tagged("untagged", None))

    listed = api.list_jobs().body["jobs"]

    assert [(job["name"], job["team"]) for job in listed] == [
        ("vision-job", "vision"),
        ("nlp-job", "nlp"),
        ("untagged", None),
    ]
    assert api.get("vision-job").body["team"] == "vision"


def test_a_running_job_of_a_borrowing_team_says_it_may_be_reclaimed(
    api: ApiGateway, store: Any, clock: FakeClock, pass_summaries: InMemoryPassSummaries, teams: Teams
) -> None:
    api.add(tagged("vision-big", "vision", instances=3))
    run(store, "vision-big", clock())
    pass_summaries.publish(
        PassSummary(
            pools=(PoolMeasure(G5, 4, 3),),
            measured_at=clock(),
            teams=(TeamMeasure("vision", G5, 2, 3, borrowed=1, lent=0),),
        )
    )

    reason = api.get("vision-big").body["reason"]

    assert reason.endswith(
        f"vision is borrowing 1 of {G5} beyond its quota: when a lender needs its quota back, vision's jobs "
        f"with the least progress are stopped first"
    )
