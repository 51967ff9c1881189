"""The item layout of a job, and that it round-trips any job the queue can hold."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from smq_lambda.adapters.attribute_values import MAX_TEXT_CHARS, format_time
from smq_lambda.adapters.item_codec import archive_key, archived, from_item, pending_team_key, to_item
from smq_lambda.adapters.page_token import decode_page_token, encode_page_token
from smq_lambda.domain.jobs import lifecycle
from smq_lambda.domain.jobs.model import (
    MAX_EARLIER_JOBS,
    MAX_HISTORY,
    MAX_INLINE_ATTEMPTS,
    MAX_PRIORITY,
    MIN_PRIORITY,
    TRAINING_JOB_NAME_PATTERN,
    Attempt,
    Change,
    Job,
    order_key,
    scheduling_order,
)
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.domain.placements.purchase import Purchase
from smq_lambda.errors import InvalidRequest
from smq_lambda.service.submission import MAX_REQUEST_BYTES

from tests.adapters.bounds import ITEM_LIMIT, attempted, item_size
from tests.adapters.builders import G5, P5, T0, job

ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
NAMES = st.builds(str.__add__, st.sampled_from(ALPHANUMERIC), st.text(ALPHANUMERIC + "-", max_size=20))
TIMES = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC))
PRIORITIES = st.integers(MIN_PRIORITY, MAX_PRIORITY)


def test_a_pending_job_is_in_the_pending_index_and_never_expires() -> None:
    pending = job("a", priority=4, minute=2, instances=3)

    item = to_item(pending, ttl_days=30)

    assert set(item) == {
        "name", "job_id", "state", "priority", "submitted_at", "demand", "pool", "owner", "version",
        "attempts", "start_failures", "request", "order_key", "owner_state", "pending_pool", "pending_team",
    }  # fmt: skip
    assert item["state"] == {"S": "pending"}
    assert item["priority"] == {"N": "4"}
    assert item["submitted_at"] == {"S": "2025-03-01T09:02:00.000000Z"}
    assert item["demand"] == {"M": {G5: {"N": "3"}}}
    assert item["pending_pool"] == {"S": G5}
    assert item["pending_team"] == {"S": f"{G5}#"}, "no team: the untagged partition of the pool"
    assert item["order_key"] == {"S": order_key(4, pending.submitted_at, "a")}
    assert item["owner_state"] == {"S": f"{pending.owner}#pending"}
    assert json.loads(item["request"]["S"]) == pending.request


def test_a_started_job_leaves_the_pending_index() -> None:
    started = lifecycle.start(job("a"), T0, reason="fits")

    item = to_item(started, ttl_days=30)

    assert "pending_pool" not in item and "pending_team" not in item
    assert item["attempts"]["L"][0]["M"]["training_job_name"] == {"S": started.attempts[0].training_job_name}
    assert item["reason"] == {"S": "fits"}


def test_demand_keeps_the_jobs_pool_first_whatever_order_the_map_comes_back_in() -> None:
    hetero = job("h", groups=[(P5, 1), (G5, 2), ("ml.c5.xlarge", 3)])
    item = to_item(hetero, ttl_days=30)
    item["demand"]["M"] = dict(reversed(list(item["demand"]["M"].items())))

    loaded = from_item(item)

    assert loaded.where.pool == P5
    assert loaded.demand == {P5: 1, G5: 2, "ml.c5.xlarge": 3}


def test_naive_times_are_taken_as_utc() -> None:
    assert format_time(datetime(2025, 1, 2, 3, 4, 5, 6)) == "2025-01-02T03:04:05.000006Z"
    assert format_time(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2025-01-02T03:04:05.000000Z"


def test_page_tokens_round_trip_and_are_url_safe() -> None:
    key = order_key(-17, T0, "job-with-name")

    token = encode_page_token(key)

    assert decode_page_token(token) == key
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@pytest.mark.parametrize("after", ["\ud800", "x", "", "00000001#not-a-time#job", 7])
def test_a_forged_cursor_is_refused_before_it_reaches_dynamodb(after: object) -> None:
    forged = base64.urlsafe_b64encode(json.dumps({"v": 1, "after": after}).encode()).decode()

    with pytest.raises(InvalidRequest) as refused:
        decode_page_token(forged)

    assert refused.value.field == "next_token"


@given(st.integers(MIN_PRIORITY, MAX_PRIORITY), TIMES, st.from_regex(TRAINING_JOB_NAME_PATTERN, fullmatch=True))
def test_every_order_key_passes_the_cursor_check(priority: int, submitted: datetime, name: str) -> None:
    key = order_key(priority, submitted, name)
    assert decode_page_token(encode_page_token(key)) == key


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    types = draw(st.lists(st.sampled_from([G5, P5, "ml.c5.xlarge"]), min_size=1, max_size=3, unique=True))
    submitted = draw(TIMES)
    attempts = tuple(
        Attempt(
            number=number,
            training_job_name=f"run-{number}",
            started_at=submitted + timedelta(minutes=number),
            ended_at=draw(st.none() | st.just(submitted + timedelta(minutes=number, seconds=30))),
            outcome=draw(st.none() | st.sampled_from(["preempted", "refused"])),
            reason=draw(st.none() | st.text(max_size=20)),
            backfill=draw(st.booleans()),
        )
        for number in range(1, draw(st.integers(0, 3)) + 1)
    )
    return Job(
        name=draw(NAMES),
        job_id=draw(st.text("0123456789abcdef", min_size=8, max_size=32)),
        state=draw(st.sampled_from(list(JobState))),
        priority=draw(PRIORITIES),
        submitted_at=submitted,
        demand={kind: draw(st.integers(1, 64)) for kind in types},
        owner=draw(st.text(min_size=1, max_size=30)),
        version=draw(st.integers(1, 10_000)),
        attempts=attempts,
        reason=draw(st.none() | st.text(max_size=40)),
        not_before=draw(st.none() | TIMES),
        start_failures=draw(st.integers(0, 20)),
        updated_at=draw(st.none() | TIMES),
        earlier_attempts=draw(st.integers(0, 10_000)),
        earlier_outcomes=draw(
            st.dictionaries(st.sampled_from(["preempted", "refused", "unknown"]), st.integers(1, 500))
        ),
        history=tuple(
            Change(at=at, by=by, what=what)
            for at, by, what in draw(
                st.lists(st.tuples(TIMES, st.text(min_size=1, max_size=30), st.text(max_size=30)), max_size=3)
            )
        ),
        earlier_job_ids=tuple(draw(st.lists(st.text("0123456789abcdef", min_size=8, max_size=32), max_size=3))),
        team=draw(st.none() | st.text(min_size=1, max_size=20)),
        family=draw(st.none() | st.text(min_size=1, max_size=20)),
        expected_duration_s=draw(st.none() | st.integers(1, 366 * 86400)),
        max_runtime_s=draw(st.none() | st.integers(1, 28 * 86400)),
        purchase=draw(st.sampled_from(list(Purchase))),
        request=draw(
            st.dictionaries(
                st.text(max_size=10),
                st.recursive(
                    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6,
                ),
                max_size=5,
            )
        ),
    )


@settings(max_examples=100, deadline=None)
@given(jobs())
def test_every_job_round_trips(original: Job) -> None:
    loaded = from_item(to_item(original, ttl_days=30))

    assert loaded == original
    assert loaded.request == original.request
    assert list(loaded.request) == list(original.request)
    assert loaded.where.pool == original.where.pool


def test_each_placement_keeps_its_warm_key() -> None:
    placements = (Placement(P5, 2, warm_key="k" * 64), Placement(G5, 4))
    flexible = replace(job("flex"), placements=placements, demand=placements[0].demand)

    assert from_item(to_item(flexible, ttl_days=30)).placements == placements


@settings(max_examples=200, deadline=None)
@given(PRIORITIES, TIMES, NAMES, PRIORITIES, TIMES, NAMES)
def test_order_keys_sort_as_the_scheduling_order(
    priority_a: int, time_a: datetime, name_a: str, priority_b: int, time_b: datetime, name_b: str
) -> None:
    """The indexes sort by order_key as text; that must be the queue's one ordering."""
    by_key = order_key(priority_a, time_a, name_a) < order_key(priority_b, time_b, name_b)
    by_order = scheduling_order(priority_a, time_a, name_a) < scheduling_order(priority_b, time_b, name_b)

    assert by_key == by_order


# ------------------------------------------------------------------------ bounded items


def test_a_job_at_every_bound_still_fits_one_dynamodb_item() -> None:
    """The largest request the API takes, an owner ARN of IAM's maximum length, a thousand attempts
    with long reasons, a full history of changes by long ARNs and a full list of earlier jobs."""
    long_arn = "arn:aws:iam::123456789012:user/" + "u" * (2048 - 31)
    base = job("long-lived")
    request = {**base.request, "Padding": ""}
    request["Padding"] = "x" * (MAX_REQUEST_BYTES - len(json.dumps(request, separators=(",", ":"))))
    worst = attempted(replace(base, owner=long_arn, request=request), 1000, start=T0, reason="r" * 5000)
    for priority in range(1, MAX_HISTORY + 5):
        worst = lifecycle.reprioritize(worst, T0, priority, by=long_arn)
    worst = replace(
        worst, earlier_job_ids=tuple(f"{index:032x}" for index in range(MAX_EARLIER_JOBS)), reason="w" * 5000
    )

    item = to_item(worst, ttl_days=30)

    assert len(item["request"]["S"]) == MAX_REQUEST_BYTES
    assert len(item["attempts"]["L"]) == MAX_INLINE_ATTEMPTS
    assert len(item["history"]["L"]) == MAX_HISTORY
    assert item_size(item) < ITEM_LIMIT


def test_reasons_longer_than_the_limit_are_cut_with_an_ellipsis() -> None:
    refused = lifecycle.refuse_start(lifecycle.start(job("a"), T0, reason="fits"), T0, reason="v" * 3000, lasting=True)

    loaded = from_item(to_item(refused, ttl_days=30))

    assert loaded.reason == "v" * (MAX_TEXT_CHARS - 1) + "…"
    assert loaded.attempts[0].reason == loaded.reason
    assert from_item(to_item(loaded, ttl_days=30)) == loaded


def test_counts_history_and_earlier_jobs_are_stored_only_when_there_are_some() -> None:
    grown = attempted(job("a"), MAX_INLINE_ATTEMPTS + 3, start=T0)
    grown = lifecycle.reprioritize(grown, T0, 7, by="ops")
    grown = replace(grown, earlier_job_ids=("feedc0de", "0ddba11"))

    item = to_item(grown, ttl_days=30)

    assert item["earlier_attempts"] == {"N": "3"}
    assert item["earlier_outcomes"] == {"M": {"preempted": {"N": "2"}, "refused": {"N": "1"}}}
    assert item["history"] == {
        "L": [{"M": {"at": {"S": "2025-03-01T09:00:00.000000Z"}, "by": {"S": "ops"}, "what": {"S": "priority 0 → 7"}}}]
    }
    assert item["earlier_job_ids"] == {"L": [{"S": "feedc0de"}, {"S": "0ddba11"}]}
    assert from_item(item) == grown


def test_an_item_written_before_jobs_were_bounded_still_loads() -> None:
    item = to_item(lifecycle.start(job("old"), T0, reason="fits"), ttl_days=30)
    for attribute in ("earlier_attempts", "earlier_outcomes", "history", "earlier_job_ids"):
        assert attribute not in item

    loaded = from_item(item)

    assert (loaded.earlier_attempts, loaded.earlier_outcomes, loaded.history, loaded.earlier_job_ids) == (0, {}, (), ())
    assert loaded.next_attempt_number == 2


# ------------------------------------------------------------------------ teams and durations


def test_team_and_durations_are_stored_and_a_pending_job_is_listed_under_its_team() -> None:
    tagged = replace(job("t", pool=P5), team="vision", expected_duration_s=5400, max_runtime_s=86400, family="vit-base")

    item = to_item(tagged, ttl_days=30)

    assert item["team"] == {"S": "vision"}
    assert item["family"] == {"S": "vit-base"}
    assert item["expected_duration_s"] == {"N": "5400"}
    assert item["max_runtime_s"] == {"N": "86400"}
    assert item["pending_team"] == {"S": f"{P5}#vision"} == {"S": pending_team_key(P5, "vision")}
    assert from_item(item) == tagged


def test_fields_without_a_value_are_absent() -> None:
    item = to_item(job("plain"), ttl_days=30)

    assert not {"team", "family", "expected_duration_s", "max_runtime_s"} & set(item)


def test_a_started_job_keeps_its_team_but_leaves_the_team_index() -> None:
    started = lifecycle.start(replace(job("t"), team="nlp"), T0, reason="fits")

    item = to_item(started, ttl_days=30)

    assert item["team"] == {"S": "nlp"}
    assert "pending_team" not in item


def test_an_item_written_before_teams_loads_with_no_team_or_durations() -> None:
    item = to_item(job("old"), ttl_days=30)
    for attribute in ("team", "expected_duration_s", "max_runtime_s", "pending_team"):
        item.pop(attribute, None)

    loaded = from_item(item)

    assert (loaded.team, loaded.expected_duration_s, loaded.max_runtime_s) == (None, None, None)


@pytest.mark.parametrize("team", [None, ""])
def test_no_team_and_an_empty_team_share_the_untagged_partition(team: str | None) -> None:
    assert pending_team_key(G5, team) == f"{G5}#"


# ------------------------------------------------------------------------ earlier jobs of a name


def test_an_archived_job_is_kept_under_its_own_key_out_of_both_indexes() -> None:
    finished = lifecycle.cancel_pending(replace(job("reused"), version=1), T0, by="alice")
    current = to_item(finished, ttl_days=30)

    kept = archived(current)

    assert kept["name"] == {"S": archive_key("reused", finished.job_id)} == {"S": f"reused#{finished.job_id}"}
    assert not {"order_key", "owner_state", "pending_pool", "pending_team"} & set(kept)
    assert kept["expires_at"] == current["expires_at"]
    assert from_item(kept) == finished
    assert "order_key" in current


@given(NAMES, st.text("0123456789abcdef", min_size=1, max_size=32))
def test_archive_keys_never_look_like_a_job_name_or_another_record(name: str, job_id: str) -> None:
    key = archive_key(name, job_id)

    assert not TRAINING_JOB_NAME_PATTERN.match(key)
    assert not key.startswith("#")
    assert "." not in key.partition("#")[0]
