"""GET /costs' use case over the in-memory cost records and store: which days a report sums, how groups
and the running jobs' accruals combine, who sees which owner, and what is refused before anything
is read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.access.access import AccessRule, AccessRules
from smq_lambda.domain.access.principals import OwnerScope
from smq_lambda.domain.costs.cost_totals import OTHER_OWNERS, CostFigures
from smq_lambda.domain.costs.costs import AttemptCost
from smq_lambda.errors import InvalidRequest
from smq_lambda.service.cost_reports import Accrual, CostReports, DaysBack, report_days
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ADMIN, ALICE, BOB, G5, P5, ROLE, run, training_request
from tests.api.fake_access_rules import StaticAccessRules
from tests.support.fake_costs import InMemoryCostRecords, StaticPriceSource
from tests.support.fakes import FakeClock, FakeConfigSource, InMemoryJobStore

NOW = datetime(2026, 11, 26, 15, 30, tzinfo=UTC)
TODAY = NOW.date()
ALICE_CI = "arn:aws:sts::123456789012:assumed-role/Pipelines/ci-1"
ALICE_CI_OTHER = "arn:aws:sts::123456789012:assumed-role/Pipelines/ci-2"


def spent(name: str, usd: float | None, *, ended: date = TODAY, saved: float = 0.0, wasted: float = 0.0) -> AttemptCost:
    """An ended attempt that cost `usd` (None: unpriced)."""
    priced = usd is not None
    return AttemptCost(
        training_job_name=name,
        ended_at=datetime.combine(ended, datetime.min.time(), tzinfo=UTC) + timedelta(hours=12),
        spot=saved > 0,
        billable_s=3600,
        training_s=3600,
        spend_usd=usd,
        on_demand_equivalent_usd=(usd + saved) if priced else None,
        spot_savings_usd=saved if priced else None,
        waste_usd=wasted if priced else None,
        idle_stop_avoided_usd=0.0 if priced else None,
    )


def groups(team: str, owner: str = ALICE, project: str | None = None) -> dict[str, str]:
    return {"team": team, "owner": owner, "tag:project": project or "(untagged)"}


class World:
    def __init__(self) -> None:
        self.records = InMemoryCostRecords()
        self.store = InMemoryJobStore()
        self.config = FakeConfigSource({G5: 8, P5: 2})
        self.config.config = replace(self.config.config, cost_tags=("project",))
        self.prices = StaticPriceSource({G5: 2.0})
        self.rules = StaticAccessRules()
        self.clock = FakeClock(NOW)
        self.reports = CostReports(
            self.records,
            self.store,
            self.config,
            self.prices,
            admin_principals={ADMIN},
            access_rules=self.rules,
            clock=self.clock,
        )

    def running(self, name: str, *, started: datetime, owner: str = ALICE, **request: Any) -> None:
        job = new_job(
            training_request(name, **request),
            owner=owner,
            config=self.config.load(),
            policy=SubmissionPolicy(allowed_role_arns=frozenset({ROLE})),
            now=started,
            job_id=f"id-{name}",
        )
        self.store.create(job)
        run(self.store, name, started)


@pytest.fixture
def world() -> World:
    return World()


def rows(report: Any) -> dict[str, tuple[float, int, float]]:
    return {row.group: (row.ended.spend_usd, row.ended.attempts, row.accruing.usd) for row in report.groups}


def test_groups_sum_the_cost_records_and_the_running_jobs_and_sort_by_spend(world: World) -> None:
    world.records.record(spent("a-1", 10.0, saved=4.0), groups("vision"))
    world.records.record(spent("a-2", 5.0, ended=TODAY - timedelta(days=3)), groups("vision"))
    world.records.record(spent("b-1", 30.0, wasted=2.0), groups("nlp"))
    world.running("robotics-run", started=NOW - timedelta(minutes=30), instances=2, Tags=[])

    report = world.reports.report("team", None, ALICE)

    assert rows(report) == {"nlp": (30.0, 1, 0.0), "vision": (15.0, 2, 0.0), "(unassigned)": (0.0, 0, 2.0)}
    assert [row.group for row in report.groups] == ["nlp", "vision", "(unassigned)"]
    assert report.total.ended == CostFigures(
        spend_usd=45.0, on_demand_equivalent_usd=49.0, spot_savings_usd=4.0, waste_usd=2.0, attempts=3
    )
    assert report.total.accruing == Accrual(usd=2.0, running=1)
    assert (report.since, report.until, report.prices_source) == (
        datetime(2026, 11, 1, tzinfo=UTC),
        NOW,
        "configuration",
    )


def test_a_tag_dimension_groups_by_the_jobs_value_of_the_tag(world: World) -> None:
    world.records.record(spent("a-1", 10.0), groups("vision", project="apollo"))
    world.records.record(spent("b-1", 3.0), groups("nlp"))
    world.running("apollo-run", started=NOW - timedelta(hours=1), Tags=[{"Key": "project", "Value": "apollo"}])

    report = world.reports.report("tag:project", DaysBack(7), ALICE)

    assert rows(report) == {"apollo": (10.0, 1, 2.0), "(untagged)": (3.0, 1, 0.0)}


def test_a_running_job_of_an_unpriced_type_is_counted_as_unpriced_not_free(world: World) -> None:
    world.running("p5-run", started=NOW - timedelta(hours=1), instance_type=P5)
    world.running("g5-run", started=NOW - timedelta(hours=1))

    (vision,) = world.reports.report("team", None, ALICE).groups

    assert vision.accruing == Accrual(usd=2.0, running=2, unpriced_running=1)


@pytest.mark.parametrize(
    ("since", "first"),
    [
        (None, date(2026, 11, 1)),
        (DaysBack(1), TODAY),
        (DaysBack(30), date(2026, 10, 28)),
        (DaysBack(400), TODAY - timedelta(days=399)),
        (date(2026, 1, 1), date(2026, 1, 1)),
        (TODAY, TODAY),
    ],
)
def test_a_report_sums_whole_utc_days_from_since_through_today(since: date | DaysBack | None, first: date) -> None:
    days = report_days(since, NOW)

    assert (days[0], days[-1], len(days)) == (first, TODAY, (TODAY - first).days + 1)


def test_the_first_of_the_month_reports_that_day_alone_by_default() -> None:
    assert report_days(None, datetime(2026, 12, 1, 0, 5, tzinfo=UTC)) == [date(2026, 12, 1)]


@pytest.mark.parametrize(
    ("since", "rule"),
    [
        (DaysBack(401), "kept for 400 days"),
        (TODAY - timedelta(days=400), "kept for 400 days"),
        (TODAY + timedelta(days=1), "after today"),
    ],
)
def test_since_beyond_what_the_cost_records_keep_or_in_the_future_is_refused(since: date | DaysBack, rule: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        report_days(since, NOW)

    assert refused.value.field == "since"
    assert rule in refused.value.message


def test_a_tag_that_is_not_a_cost_tag_is_refused_before_anything_is_read(world: World) -> None:
    world.records.unavailable = True  # any read would raise ServiceUnavailable instead

    with pytest.raises(InvalidRequest) as refused:
        world.reports.report("tag:team", None, ALICE)

    assert refused.value.field == "by"
    assert "'team' is not a configured cost tag" in refused.value.message
    assert "tag:project" in refused.value.message


def test_without_cost_tags_the_refusal_says_there_are_none(world: World) -> None:
    world.config.config = replace(world.config.config, cost_tags=())

    with pytest.raises(InvalidRequest) as refused:
        world.reports.report("tag:project", None, ALICE)

    assert refused.value.message.endswith("by team, owner and none")


@pytest.mark.parametrize(
    ("caller", "rules", "seen"),
    [
        (ALICE, AccessRules(), {ALICE}),
        (BOB, AccessRules(), {BOB}),
        (ADMIN, AccessRules(), {ALICE, BOB, ALICE_CI, ALICE_CI_OTHER}),
        (ALICE_CI, AccessRules(), {ALICE_CI}),
        (
            ALICE_CI,
            AccessRules(rules=(AccessRule("pipelines", principals=(ALICE_CI,), owner=OwnerScope.ROLE),)),
            {ALICE_CI, ALICE_CI_OTHER},
        ),
        ("arn:aws:iam::123456789012:user/carol", AccessRules(), set()),
    ],
)
def test_by_owner_a_caller_sees_the_owners_whose_jobs_they_may_change_and_the_others_summed(
    world: World, caller: str, rules: AccessRules, seen: set[str]
) -> None:
    for number, owner in enumerate((ALICE, BOB, ALICE_CI, ALICE_CI_OTHER)):
        world.records.record(spent(f"job-{number}", 1.0 + number), groups("vision", owner=owner))
    world.rules.rules = rules
    spend = {ALICE: 1.0, BOB: 2.0, ALICE_CI: 3.0, ALICE_CI_OTHER: 4.0}
    hidden = sum(usd for owner, usd in spend.items() if owner not in seen)

    report = world.reports.report("owner", None, caller)

    assert {row.group: row.ended.spend_usd for row in report.groups} == {
        **{owner: spend[owner] for owner in seen},
        **({OTHER_OWNERS: hidden} if hidden else {}),
    }
    assert report.total.ended.spend_usd == 10.0


@pytest.mark.parametrize("caller", [ALICE, BOB, ADMIN, "arn:aws:iam::123456789012:user/carol"])
def test_every_grouping_adds_up_to_the_same_total_for_any_caller(world: World, caller: str) -> None:
    """Bob's spend and Alice's running job count in the team's row: by owner they count too, in
    Alice's own row for her, summed in `(other owners)` for those who may not see them."""
    world.records.record(spent("a-1", 1.0, wasted=0.5), groups("vision", owner=ALICE, project="apollo"))
    world.records.record(spent("b-1", 2.0, saved=1.0), groups("nlp", owner=BOB))
    world.running("alice-run", started=NOW - timedelta(hours=1), owner=ALICE)

    totals = {by: world.reports.report(by, None, caller).total for by in ("team", "owner", "tag:project")}

    assert totals["owner"] == totals["team"] == totals["tag:project"]
    assert (totals["team"].ended.spend_usd, totals["team"].accruing.usd) == (3.0, 2.0)


def test_an_owner_with_nothing_the_caller_may_see_is_never_told_no_spend(world: World) -> None:
    world.records.record(spent("b-1", 2.0), groups("vision", owner=BOB))

    (others,) = world.reports.report("owner", None, ALICE).groups

    assert (others.group, others.ended.spend_usd, others.ended.attempts) == (OTHER_OWNERS, 2.0, 1)


def test_by_team_everyone_sees_every_team(world: World) -> None:
    world.records.record(spent("a-1", 1.0), groups("vision", owner=ALICE))
    world.records.record(spent("b-1", 2.0), groups("nlp", owner=BOB))

    report = world.reports.report("team", None, "arn:aws:iam::123456789012:user/carol")

    assert {row.group for row in report.groups} == {"vision", "nlp"}


ENDED = st.lists(
    st.tuples(
        st.sampled_from(["vision", "nlp", "(unassigned)"]),
        st.one_of(st.none(), st.floats(min_value=0, max_value=10_000, allow_nan=False)),
        st.integers(min_value=0, max_value=60),
    ),
    max_size=20,
)


@given(ended=ENDED, back=st.integers(min_value=1, max_value=60))
def test_a_report_counts_each_attempt_in_range_once_and_unpriced_ones_never_as_free(
    ended: list[tuple[str, float | None, int]], back: int
) -> None:
    world = World()
    for number, (team, usd, days_ago) in enumerate(ended):
        world.records.record(spent(f"job-{number}", usd, ended=TODAY - timedelta(days=days_ago)), groups(team))
    in_range = [(team, usd) for team, usd, days_ago in ended if days_ago < back]

    report = world.reports.report("team", DaysBack(back), ALICE)

    assert report.total.ended.attempts == len(in_range) == sum(row.ended.attempts for row in report.groups)
    assert report.total.ended.unpriced_attempts == sum(usd is None for _, usd in in_range)
    assert report.total.ended.spend_usd == pytest.approx(sum(usd or 0.0 for _, usd in in_range))
    assert all(row.ended.spend_usd >= 0 for row in report.groups)
    assert [row.ended.spend_usd for row in report.groups] == sorted(
        (row.ended.spend_usd for row in report.groups), reverse=True
    )
