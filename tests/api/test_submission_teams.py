"""What submission reads for team scheduling: the team tag (its key configured), the
`smq:expected-duration` tag and StoppingCondition.MaxRuntimeInSeconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from smq_lambda.domain.config.teams import Quota, Teams
from smq_lambda.errors import InvalidRequest
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.service.submission import SubmissionPolicy, new_job

from tests.api.builders import ALICE, POOLS, training_request

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
CONFIG = SchedulerConfig(pools=POOLS)
DURATION_FIELD = "Tags[smq:expected-duration]"


def submit(request: Any, *, config: SchedulerConfig = CONFIG) -> Any:
    return new_job(request, owner=ALICE, config=config, policy=SubmissionPolicy(), now=NOW)


def tagged(*tags: tuple[str, str], **members: Any) -> dict[str, Any]:
    return training_request("vit", Tags=[{"Key": key, "Value": value} for key, value in tags], **members)


def test_the_team_is_the_value_of_the_default_team_tag() -> None:
    assert submit(tagged(("team", "vision"))).team == "vision"


def test_the_team_tag_key_is_configured() -> None:
    config = SchedulerConfig(pools=POOLS, teams=Teams(tag="cost-center"))
    request = tagged(("team", "vision"), ("cost-center", "research"))

    assert submit(request, config=config).team == "research"
    assert submit(tagged(("team", "vision")), config=config).team is None


@pytest.mark.parametrize("tags", [(), (("owner", "vision"),), (("team", ""),)], ids=["no tags", "other", "empty"])
def test_no_team_tag_or_an_empty_one_is_no_team(tags: tuple[tuple[str, str], ...]) -> None:
    assert submit(tagged(*tags)).team is None


@pytest.mark.parametrize(
    ("value", "seconds"), [("5400", 5400), ("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("45s", 45)]
)
def test_the_expected_duration_tag_is_kept_in_seconds(value: str, seconds: int) -> None:
    job = submit(tagged(("smq:expected-duration", value)))

    assert job.expected_duration_s == seconds
    assert {"Key": "smq:expected-duration", "Value": value} in job.request["Tags"], "the request is kept as sent"


def test_without_the_tag_there_is_no_expected_duration() -> None:
    assert submit(tagged(("team", "vision"))).expected_duration_s is None


@pytest.mark.parametrize("value", ["", "0", "0s", "-1", "1.5h", "an hour", "1d", "2H", "30m1h", "99999999999"])
def test_an_expected_duration_that_is_none_is_refused_naming_the_tag_with_an_example(value: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(tagged(("smq:expected-duration", value)))

    assert refused.value.field == DURATION_FIELD
    assert refused.value.message.startswith(f"{DURATION_FIELD} must be")
    assert repr(value) in refused.value.message


def test_the_message_gives_examples_of_durations() -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(tagged(("smq:expected-duration", "soon")))

    assert "5400" in refused.value.message and "1h30m" in refused.value.message


def test_other_tags_under_the_queues_prefix_are_still_refused() -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(tagged(("smq:expected-duration", "2h"), ("smq:job", "x")))

    assert refused.value.field == "Tags[1].Key"


def test_the_expected_duration_tag_counts_once() -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(tagged(("smq:expected-duration", "2h"), ("smq:expected-duration", "3h")))

    assert refused.value.field == "Tags[1].Key"


def test_the_max_runtime_is_the_stopping_condition() -> None:
    assert submit(tagged(StoppingCondition={"MaxRuntimeInSeconds": 86400})).max_runtime_s == 86400


def test_a_request_without_a_max_runtime_has_none() -> None:
    assert submit(tagged(StoppingCondition={"MaxWaitTimeInSeconds": 7200})).max_runtime_s is None


QUOTAS = SchedulerConfig(pools=POOLS, teams=Teams(quotas={"vision": Quota({}), "nlp": Quota({})}))


@pytest.mark.parametrize(
    ("value", "whitespace"), [("robotics", False), ("Vision", False), ("vision ", True), (" vision", True)]
)
def test_with_quotas_a_team_tag_that_names_no_configured_team_is_refused_naming_the_tag_and_the_teams(
    value: str, whitespace: bool
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        submit(tagged(("team", value)), config=QUOTAS)

    assert refused.value.field == "Tags[team]"
    assert refused.value.message.startswith(f"Tags[team] {value!r} is not a configured team")
    assert "'nlp', 'vision'" in refused.value.message
    assert ("whitespace" in refused.value.message) is whitespace, "nothing is stripped, and the message says why"


@pytest.mark.parametrize("tags", [(("team", "vision"),), (("team", ""),), ()], ids=["configured", "empty", "none"])
def test_with_quotas_a_configured_team_or_none_is_accepted(tags: tuple[tuple[str, str], ...]) -> None:
    assert submit(tagged(*tags), config=QUOTAS).team == (tags[0][1] or None if tags else None)


def test_without_quotas_any_team_tag_is_accepted_as_it_is() -> None:
    assert submit(tagged(("team", "vision "))).team == "vision "


@pytest.mark.parametrize(
    ("tags", "family"), [((("smq:family", "vit-base"),), "vit-base"), ((("smq:family", ""),), None), ((), None)]
)
def test_the_family_tag_is_kept_and_an_empty_one_is_none(tags: tuple[tuple[str, str], ...], family: str | None) -> None:
    assert submit(tagged(*tags)).family == family
