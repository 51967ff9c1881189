"""The edges the queue talks to, as Protocols. Adapters implement them; tests use in-memory fakes."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Protocol

from smq_lambda.domain.costs.cost_totals import CostFigures
from smq_lambda.domain.costs.costs import AttemptCost, Prices
from smq_lambda.domain.costs.prices_in_force import PricesInForce
from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.domain.placements.spot_rates import SpotInterruptions
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.domain.warm.warm_pools import WarmPool, WarmPoolTotals
from smq_lambda.forecast.durations import DurationHistory, DurationKey
from smq_lambda.governance.notices import Notice
from smq_lambda.governance.policy import Policy
from smq_lambda.pass_summary import PassSummary, TeamUsageRecord
from smq_lambda.scheduling.snapshot import SchedulerConfig


@dataclass(frozen=True)
class InUse:
    """What holds the instances of the pools right now."""

    live: list[Job]
    """Every live job (starting, running, preempting, stopping), in scheduling order."""
    outside: Mapping[str, int]
    """Instances per pool held by training jobs outside the queue."""
    pools: frozenset[str]
    """Every pool a job was submitted to or an outside job used: where pending jobs may be listed."""
    team_tags: Mapping[str, datetime] = field(default_factory=dict)
    """Every team tag value jobs were submitted with while quotas were configured (until forgotten),
    with the submission time of the latest: the pending-by-team partitions that may hold jobs, so a
    pass can read those of teams the configuration no longer names."""


@dataclass(frozen=True)
class JobPage:
    jobs: list[Job]
    next_token: str | None


@dataclass(frozen=True, order=True)
class HistoryPosition:
    """A job's place in what `jobs_with_attempts_since` reads, in the order it reads: the live
    states' partitions of `by-state` first (by state name, each by `order_key`), then the UTC days'
    of `by-attempt-end` (by day, each by latest attempt end); the item's key breaks ties."""

    ended: bool
    """False: read as a live job; True: read as one whose latest attempt ended on `partition`."""
    partition: str
    """The live state's name, or the UTC day (YYYY-MM-DD) of the latest attempt end."""
    sort_key: str
    """The job's `order_key` (live), or the time of its latest attempt end (ended)."""
    item_key: str
    """The job's key in the table: its name, `<name>#<job_id>` for an earlier job of the name."""


@dataclass(frozen=True)
class HistoryEntry:
    job: Job
    position: HistoryPosition


class JobStore(Protocol):
    """The queue table. Every write is conditional; a lost race raises VersionConflict. DynamoDB
    throttled or out of reach raises ServiceUnavailable (nothing known to have changed)."""

    def create(self, job: Job, *, register_team: bool = False) -> Job:
        """Insert a new job (version 1); an unfinished job of that name raises JobConflict. A finished
        one stays readable under its own id until its TTL (`get(name, job_id=...)`), and the new job
        lists it first in `earlier_job_ids`. `register_team`: also register the job's team tag value
        in `InUse.team_tags` (submission does only while quotas are configured, where it refuses
        every value the configuration does not name, so the registry stays bounded)."""
        ...

    def get(self, name: str, *, job_id: str | None = None) -> Job | None:
        """The newest job of the name; with `job_id`, that job, newest or earlier."""
        ...

    def save(self, job: Job, *, expected_version: int) -> Job:
        """Write `job` (whose version is expected_version + 1) if the stored version is still
        `expected_version`."""
        ...

    def in_use(self) -> InUse:
        """Every live job and the instances training jobs outside the queue hold, exactly: read by
        key (strongly consistent), never through an eventually consistent index."""
        ...

    def pending_front(self, pool: str, limit: int, *, team: str | None = None) -> list[Job]:
        """The first `limit` pending jobs listed under `pool` (each of `Job.where.pools`), in order,
        as summaries (no request, no history): one bounded Query of a pending index, which may lag writes.
        With `team`, only the jobs whose `Job.team` is `team` ("" for jobs with no team tag),
        from the pending-by-team index."""
        ...

    def count_pending(
        self, pool: str, *, after: str | None = None, before: str | None = None, team: str | None = None
    ) -> int:
        """Pending jobs listed under `pool` (of `team`, as in `pending_front`) whose order keys lie
        strictly between `after` and `before` (either open when None): a Select=COUNT Query of a
        pending index, made when someone asks."""
        ...

    def forget_team_tag(self, team: str, registered_at: datetime) -> None:
        """Drop `team` from `InUse.team_tags` if no job was submitted with it since `registered_at`
        (its time there): a pass found none of its jobs pending."""
        ...

    def record_outside(self, training_job_name: str, demand: Mapping[str, int], *, holding: bool) -> None:
        """A training job outside the queue holds `demand` (`holding`) or has ended (not `holding`);
        idempotent, so duplicate and late events are harmless."""
        ...

    def replace_outside(self, jobs: Mapping[str, Mapping[str, int]]) -> None:
        """What SageMaker lists as in progress outside the queue (training job name → demand)
        replaces what the events recorded: reconciliation's correction."""
        ...

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage: ...

    def jobs_with_attempts_since(
        self, start: datetime, now: datetime, *, after: HistoryPosition | None = None, page_size: int | None = None
    ) -> Iterator[HistoryEntry]:
        """Every live job, then every other job whose latest attempt ended in [start, now] (others
        may come too), each once, in HistoryPosition order from after `after`: a bounded index read
        for GET /attempts, which may lag writes. Read lazily, `page_size` jobs per index read, so a
        caller that stops early reads little more than it used."""
        ...


class TrainingEndListener(Protocol):
    """Told when one of the queue's own attempts ends in SageMaker (Completed, Failed or Stopped):
    its TrainingTimeInSeconds and BillableTimeInSeconds are final then. Told of every such report,
    duplicates and late ones included, after the job's own write, so a listener records
    idempotently (keyed by the attempt's training job name). Each is told on its own: an error it
    raises is logged and counted, and keeps no other listener from being told; a ServiceUnavailable
    or TrainingServiceError (or one caused by them) fails the report, whose redelivery tells every
    listener again (service/report_intake.py)."""

    def on_training_end(self, job: Job, attempt_number: int, status: TrainingJobStatus) -> None: ...


class WarmPoolStore(Protocol):
    """The warm pools the queue's attempts left (adapters/dynamodb_warm_pools.py: the states and
    the conditional writes that make repeated and reordered reports harmless)."""

    def record(self, warm: WarmPool) -> bool: ...

    def end(self, training_job_name: str, *, reused: bool, retained_instance_s: int) -> bool: ...

    def release(self, training_job_name: str) -> bool: ...

    def available(self, now: datetime) -> list[WarmPool]: ...

    def totals(self) -> WarmPoolTotals: ...


class CostRecords(Protocol):
    """The spend of ended attempts, kept as per-day totals per (dimension, group) so a report reads
    one item per day asked for, whatever the number of jobs. Raises ServiceUnavailable when the
    store is throttled or out of reach (nothing recorded)."""

    def record(self, cost: AttemptCost, groups: Mapping[str, str]) -> bool:
        """Add `cost` to its UTC day's totals under each of `groups` (dimension → group), exactly
        once per training job name: False when that attempt was already recorded. Duplicate and
        concurrent calls for one attempt count it once. A cost tag's group is cut to
        MAX_TAG_GROUP_BYTES, and a day keeps MAX_TAG_GROUPS_PER_DAY of a tag's groups apart (later
        ones count in OTHER; domain/costs/cost_totals.py). No tag keeps the team and owner from counting:
        one that cannot be written now raises CostDimensionsPending after them, and a later call for
        the attempt adds it."""
        ...

    def totals(self, dimension: str, days: Sequence[date]) -> dict[str, CostFigures]:
        """Per group of `dimension`, the figures summed over the UTC `days`; groups with nothing
        recorded on those days are absent."""
        ...


class PriceSource(Protocol):
    """The prices in force: the configuration document's `prices` over the daily Price List refresh
    over the shipped defaults for the stack's region (domain/costs/prices_in_force.py). Raises
    ServiceUnavailable when the table or the configuration cannot be read now: pricing an attempt
    with the wrong layer would be recorded for good."""

    def load(self) -> Prices:
        """On-demand $ per instance-hour by type; a type it lacks is unpriced."""
        ...

    def in_force(self) -> PricesInForce:
        """The same prices with where each came from (reports show `source`)."""
        ...


class DurationStore(Protocol):
    """The summaries of completed jobs' durations (forecast/durations.py), one item per key.
    Raises ServiceUnavailable when the store is throttled or out of reach."""

    def load(self, keys: Collection[DurationKey]) -> DurationHistory:
        """The summaries of `keys` that exist: one batched read of the distinct keys."""
        ...

    def add(self, key: DurationKey, job_id: str, seconds: float) -> None:
        """Add a completed job's duration to one summary, once per job id (a repeat adds nothing)."""
        ...


class TrainingService(Protocol):
    """SageMaker training jobs."""

    def start_attempt(self, job: Job) -> None:
        """Create the job's current attempt. Idempotent: the attempt already existing is success.
        Raises StartRefused (lasting or transient)."""
        ...

    def stop(self, training_job_name: str) -> None:
        """Ask SageMaker to stop; a job that is already ending or gone is fine."""
        ...

    def describe(self, training_job_name: str) -> TrainingJobStatus | None:
        """None when SageMaker has no job of that name."""
        ...

    def end_warm_pool(self, training_job_name: str) -> None:
        """KeepAlivePeriodInSeconds 0; a warm pool that ended already, or none, is fine."""
        ...

    def outside_in_progress(self, queue_attempts: Collection[str]) -> dict[str, dict[str, int]]:
        """The instances per pool each in-progress training job that is not a queue attempt holds
        (training job name → demand). Lists every busy training job: reconciliation only."""
        ...

    def in_progress_since(self, created_after: datetime) -> list[dict[str, Any]]:
        """In-progress training jobs created after `created_after`, each as DescribeTrainingJob's
        answer with the job's tags as a `Tags` map: the shape of a state-change event's detail."""
        ...


class SpotInterruptionBook(Protocol):
    """Where reports keep the spot interruptions per instance type (one small item,
    domain/placements/spot_rates.py)."""

    def load(self) -> SpotInterruptions:
        """The book as last saved; an empty one before the first interruption."""
        ...

    def save(self, book: SpotInterruptions, *, previous: SpotInterruptions) -> None:
        """Write `book` if the stored one is still `previous` (by version); a lost race raises
        VersionConflict (another report counted meanwhile: load and count again)."""
        ...


class TeamUsageHistory(Protocol):
    """Where passes keep the teams' decayed usage between them (one small item)."""

    def load(self) -> TeamUsageRecord | None:
        """The last record saved; None before the first pass with teams."""
        ...

    def save(self, record: TeamUsageRecord, *, previous: TeamUsageRecord | None) -> None:
        """Write `record` if the stored one is still `previous` (by `at`); a lost race raises
        VersionConflict (another pass already counted the interval)."""
        ...


class PassSummaries(Protocol):
    """Where each scheduling pass publishes its summary (the usage it measured, its estimates and the
    jobs it explained), so that readers (GET /pools, GET /jobs) never ask SageMaker themselves:
    usage is computed in one place, at the pace of passes."""

    def publish(self, summary: PassSummary) -> None: ...

    def latest(self) -> PassSummary | None:
        """The last summary published; None before the first pass."""
        ...


class PolicySource(Protocol):
    """The governance policy in force: hot-reloaded, and an invalid document leaves the newest valid
    version in force, else the stack's policy, never none (the adapter reports it)."""

    def load(self) -> Policy: ...


class IdleAlarms(Protocol):
    """The CloudWatch alarms that watch training jobs for idle GPUs (names `smq-idle-...`). Every
    method raises AlarmServiceError when CloudWatch fails."""

    def put(self, requests: Collection[Mapping[str, Any]]) -> None:
        """Create or overwrite alarms (PutMetricAlarm requests)."""
        ...

    def delete(self, alarm_names: Collection[str]) -> None:
        """Delete alarms (at most 100 names); names that no longer exist are fine."""
        ...

    def names(self) -> list[str]:
        """Every idle alarm's name."""
        ...

    def states(self, alarm_names: Collection[str]) -> dict[str, str]:
        """The state (ALARM, OK, INSUFFICIENT_DATA) of each named alarm that exists."""
        ...

    def in_alarm(self) -> list[Mapping[str, Any]]:
        """Every idle alarm now in ALARM, as DescribeAlarms describes it (`MetricAlarms` entries)."""
        ...


class BudgetWarningMarks(Protocol):
    """Which thresholds of its budget a team has been told of: one mark per team, UTC month and
    threshold, so a notice goes out once however many attempt ends race past the threshold."""

    def claim(self, team: str, month: str, threshold: float) -> bool:
        """Set the mark of `team`, `month` (`2026-11`) and `threshold` (a share of the budget);
        False when it was already set. Raises ServiceUnavailable when the store is out of reach."""
        ...


class Notifier(Protocol):
    """The notifications topic: tells a job's owner what the queue did to the job. A notice reports
    a change already written, so a failed publish is logged by the adapter and reported as False,
    never raised: it must not undo or repeat the change."""

    def publish(self, notice: Notice) -> bool:
        """True when the topic accepted `notice`."""
        ...


class ConfigSource(Protocol):
    def load(self) -> SchedulerConfig: ...


class SchedulerTrigger(Protocol):
    def kick(self, reason: str) -> None:
        """Ask for a scheduling pass soon (asynchronously)."""
        ...


class PassLease(Protocol):
    """Serializes scheduling passes: only a pass holding the lease may start jobs.

    A pass that finds the lease taken asks the holder to run once more instead of waiting, so a
    change that arrives during a pass is never left unscheduled.
    """

    def try_acquire(self, owner: str, now: datetime, duration: timedelta | None = None) -> bool:
        """Take the lease if it is free or expired, holding it until `now + duration` (the lease's
        own default when None). A caller that knows when it will be killed (a Lambda invocation)
        holds it no longer than that, so a holder that dies frees the lease soon after."""
        ...

    def request_rerun(self) -> None: ...

    def release(self, owner: str) -> bool:
        """True when released; False when a rerun was requested meanwhile (the flag is cleared and
        the caller still holds the lease and must run another pass)."""
        ...

    def abandon(self, owner: str) -> None:
        """Give the lease up after a failed pass, leaving any rerun request for the next holder."""
        ...
