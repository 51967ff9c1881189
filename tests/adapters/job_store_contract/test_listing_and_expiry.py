"""The JobStore contract: `list_jobs` (filters, order, pages) and when items expire."""

from __future__ import annotations

from datetime import timedelta

import pytest
from smq_lambda.domain.jobs.states import ACTIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.errors import InvalidRequest

from tests.adapters.builders import BOB, G5, P5, job
from tests.adapters.job_store_contract.subjects import ALL, STORES, TTL_DAYS, Subject, make_subject, names, put


@pytest.fixture(scope="module", params=STORES)
def listed(request: pytest.FixtureRequest) -> Subject:
    """Nine jobs: two owners, two pools, several states (read only, so shared by the module)."""
    subject = make_subject(request.param, request)
    put(subject.store, job("j1", priority=5, minute=0))
    put(subject.store, job("j2", priority=5, minute=1, owner=BOB))
    put(subject.store, job("j3", priority=1, minute=2, pool=P5), JobState.RUNNING)
    put(subject.store, job("j4", priority=9, minute=3), JobState.COMPLETED)
    put(subject.store, job("j5", priority=0, minute=4, owner=BOB, pool=P5))
    put(subject.store, job("j6", priority=0, minute=5), JobState.STARTING)
    put(subject.store, job("j7", priority=-2, minute=6, owner=BOB), JobState.CANCELLED)
    put(subject.store, job("j8", priority=3, minute=7))
    put(subject.store, job("j9", priority=3, minute=8, pool=P5, owner=BOB), JobState.FAILED)
    return subject


@pytest.mark.parametrize(
    ("states", "pool", "owner", "expected"),
    [
        (ALL, None, None, ["j4", "j1", "j2", "j8", "j9", "j3", "j5", "j6", "j7"]),
        (sorted(ACTIVE_STATES), None, None, ["j1", "j2", "j8", "j3", "j5", "j6"]),
        ([JobState.PENDING], None, None, ["j1", "j2", "j8", "j5"]),
        ([JobState.PENDING], G5, None, ["j1", "j2", "j8"]),
        ([JobState.PENDING], G5, BOB, ["j2"]),
        (ALL, P5, None, ["j9", "j3", "j5"]),
        (ALL, None, BOB, ["j2", "j9", "j5", "j7"]),
        (ALL, P5, BOB, ["j9", "j5"]),
        ([JobState.RUNNING, JobState.STARTING], None, None, ["j3", "j6"]),
        ([JobState.STOPPING], None, None, []),
        ([], None, None, []),
    ],
)
def test_list_jobs_filters_and_keeps_scheduling_order(
    listed: Subject, states: list[JobState], pool: str | None, owner: str | None, expected: list[str]
) -> None:
    page = listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=50)

    assert names(page.jobs) == expected
    assert page.next_token is None


@pytest.mark.parametrize("limit", [1, 2, 4, 8])
@pytest.mark.parametrize(
    ("states", "pool", "owner"), [(ALL, None, None), (ALL, None, BOB), ([JobState.PENDING], G5, None)]
)
def test_list_jobs_pages_cover_every_job_once_in_order(
    listed: Subject, limit: int, states: list[JobState], pool: str | None, owner: str | None
) -> None:
    everything = names(listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=100).jobs)
    seen: list[str] = []
    token: str | None = None
    pages = 0

    while True:
        page = listed.store.list_jobs(states=states, pool=pool, owner=owner, limit=limit, next_token=token)
        pages += 1
        assert len(page.jobs) <= limit
        seen.extend(names(page.jobs))
        token = page.next_token
        if token is None:
            break
        assert len(page.jobs) == limit

    assert seen == everything
    assert pages == max(1, -(-len(everything) // limit))


def test_a_page_that_holds_the_rest_exactly_has_no_token(listed: Subject) -> None:
    page = listed.store.list_jobs(states=[JobState.PENDING], limit=4)

    assert names(page.jobs) == ["j1", "j2", "j8", "j5"]
    assert page.next_token is None


@pytest.mark.parametrize("limit", [0, -1])
def test_list_jobs_needs_a_positive_limit(listed: Subject, limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        listed.store.list_jobs(states=ALL, limit=limit)


@pytest.mark.parametrize("token", ["not base64 at all!", "eyJ2IjoxfQ", "bnVsbA", "eyJ2IjoyLCJhZnRlciI6IngifQ"])
def test_list_jobs_rejects_a_token_it_did_not_issue(listed: Subject, token: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        listed.store.list_jobs(states=ALL, next_token=token)

    assert raised.value.field == "next_token"


@pytest.mark.parametrize("state", sorted(ACTIVE_STATES))
def test_an_unfinished_job_never_expires(subject: Subject, state: JobState) -> None:
    put(subject.store, job("a"), state)

    item = subject.item("a")

    assert item is not None and "expires_at" not in item


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_a_finished_job_expires_ttl_days_after_it_finished(subject: Subject, state: JobState) -> None:
    finished = put(subject.store, job("a"), state)

    item = subject.item("a")

    assert finished.updated_at is not None
    expected = int((finished.updated_at + timedelta(days=TTL_DAYS)).timestamp())
    assert item is not None
    assert item["expires_at"] == {"N": str(expected)}
    assert "pending_pool" not in item
