"""The registry of team tag values (contract: the in-memory fake and the DynamoDB store on moto): a
pass reads the pending-by-team partitions of teams the configuration no longer names through it.
Submission registers a value only while quotas are configured (`register_team`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from smq_lambda.errors import JobConflict

from tests.adapters.builders import job
from tests.adapters.job_store_contract.subjects import STORES, Subject, make_subject


@pytest.fixture(params=STORES)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param, request)


def test_every_team_tag_value_submitted_is_registered_with_its_latest_submission(subject: Subject) -> None:
    subject.store.create(replace(job("vision-1"), team="vision"), register_team=True)
    latest = subject.store.create(replace(job("vision-2", minute=60), team="vision"), register_team=True)
    subject.store.create(job("untagged"), register_team=True)

    registered = subject.store.in_use().team_tags

    assert registered == {"vision": latest.submitted_at.replace(microsecond=0)}


def test_without_register_team_no_team_tag_value_is_registered(subject: Subject) -> None:
    for index in range(3):
        subject.store.create(replace(job(f"tagged-{index}", minute=index), team=f"team-{index}"))

    assert subject.store.in_use().team_tags == {}


def test_a_refused_submission_leaves_the_registration_as_it_was(subject: Subject) -> None:
    subject.store.create(replace(job("vision-1"), team="vision"), register_team=True)
    before = subject.store.in_use().team_tags

    with pytest.raises(JobConflict):
        subject.store.create(replace(job("vision-1", minute=60), team="vision"), register_team=True)

    assert subject.store.in_use().team_tags == before


def test_a_registered_value_is_forgotten_only_while_no_submission_came_since_the_time_read(subject: Subject) -> None:
    first = subject.store.create(replace(job("vision-1"), team="vision"), register_team=True)
    registered_at = subject.store.in_use().team_tags["vision"]

    subject.store.forget_team_tag("vision", registered_at + timedelta(seconds=1))
    assert "vision" in subject.store.in_use().team_tags, "a submission since the time read keeps it"

    subject.store.forget_team_tag("vision", registered_at)
    assert subject.store.in_use().team_tags == {}

    subject.store.create(replace(job("vision-2", minute=120), team="vision"), register_team=True)
    assert subject.store.in_use().team_tags == {
        "vision": (first.submitted_at + timedelta(hours=2)).replace(microsecond=0)
    }
