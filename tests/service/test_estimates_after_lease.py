"""The pass holds its lease only to decide and write: start estimates are made after it is released,
within the invocation's deadline, and a pass out of time for them keeps the last ones, with their
age, rather than run over (issue: a pass that stays cheap at any size)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from smq_lambda.domain.jobs.states import JobState
from smq_lambda.forecast.durations import DurationHistory, DurationKey
from smq_lambda.service.pass_summary_reader import PassSummaryReader

from tests.service.harness import POOL, World, queued_job
from tests.support.fake_durations import InMemoryDurationStore
from tests.support.fake_lease import InMemoryPassLease


class LeaseWatchingDurations(InMemoryDurationStore):
    """Durations that note, each time the estimates load them, whether the pass lease is held."""

    def __init__(self, lease: InMemoryPassLease) -> None:
        super().__init__()
        self.lease = lease
        self.loaded_under_lease: list[bool] = []

    def load(self, keys: Collection[DurationKey]) -> DurationHistory:
        self.loaded_under_lease.append(self.lease.owner is not None)
        return super().load(keys)


def waiting_behind_one(world: World) -> None:
    world.submit("running", 5)
    world.submit("waiting", 0)


def test_the_estimates_are_made_after_the_lease_is_released() -> None:
    lease = InMemoryPassLease()
    durations = LeaseWatchingDurations(lease)
    world = World(capacity={POOL: 1}, lease=lease, durations=durations)

    waiting_behind_one(world)

    assert durations.loaded_under_lease and not any(durations.loaded_under_lease)
    summary = world.pass_summaries.latest()
    assert summary is not None and "waiting" in summary.estimates


def test_a_pass_with_no_time_for_estimates_still_decides_releases_its_lease_and_keeps_the_last_ones() -> None:
    world = World(capacity={POOL: 1})
    waiting_behind_one(world)
    first = world.pass_summaries.latest()
    assert first is not None
    world.later(60)
    world.store.create(queued_job("urgent", priority=9, submitted_at=world.clock()))

    report = world.scheduler.schedule(time_left=lambda: 0.0)

    assert report.passes == 1 and world.lease.owner is None
    assert world.job("running").state is JobState.PREEMPTING, "it decided"
    summary = world.pass_summaries.latest()
    assert summary is not None and summary.measured_at > first.measured_at
    kept = summary.estimates["waiting"]
    assert kept == replace(first.estimates["waiting"], computed_at=first.measured_at)
    assert "urgent" not in summary.estimates
    reader = PassSummaryReader({}, summary.measured_at, summary.estimates)
    shown = reader.estimate_for(world.job("waiting"))
    assert shown is not None and shown.computed_at == first.measured_at, "its age shows"


def test_a_kept_estimate_is_not_shown_for_a_job_changed_since_it_was_computed() -> None:
    world = World(capacity={POOL: 1})
    waiting_behind_one(world)
    world.later(60)
    world.scheduler.schedule(time_left=lambda: 0.0)
    summary = world.pass_summaries.latest()
    assert summary is not None
    changed = replace(world.job("waiting"), updated_at=summary.measured_at)

    reader = PassSummaryReader({}, summary.measured_at, summary.estimates)

    assert changed.state is JobState.PENDING
    assert reader.estimate_for(changed) is None


def test_the_next_pass_with_time_replaces_the_kept_estimates_with_its_own() -> None:
    world = World(capacity={POOL: 1})
    waiting_behind_one(world)
    world.later(60)
    world.scheduler.schedule(time_left=lambda: 0.0)

    world.scheduler.schedule(time_left=lambda: 60.0)

    summary = world.pass_summaries.latest()
    assert summary is not None and summary.estimates["waiting"].computed_at is None
