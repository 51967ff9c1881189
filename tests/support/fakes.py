"""In-memory fakes of the ports, shared by every test level.

The job store keeps DynamoDB items made by the real item codec and applies the same conditions,
orderings and page tokens as the DynamoDB store; tests/adapters/job_store_contract/ runs one set of
assertions against both so they cannot drift apart.
"""

from __future__ import annotations

import collections
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from smq_lambda.adapters.dynamodb_attempts import history_position
from smq_lambda.adapters.dynamodb_indexes import in_pool
from smq_lambda.adapters.dynamodb_pass_summaries import bounded
from smq_lambda.adapters.dynamodb_pool_holders import outside_count, outside_entry
from smq_lambda.adapters.item_codec import (
    ARCHIVE_SEPARATOR,
    Item,
    archive_key,
    archived,
    attempt_end_day,
    format_time,
    from_item,
    owner_state_key,
    pending_team_key,
    to_item,
)
from smq_lambda.adapters.page_token import decode_page_token, encode_page_token
from smq_lambda.adapters.pending_listing import listing_changes, pending_job
from smq_lambda.adapters.sagemaker import BUSY_STATUSES, attempt_request
from smq_lambda.domain.jobs.model import JOB_ID_PATTERN, MAX_EARLIER_JOBS, Job
from smq_lambda.domain.jobs.states import LIVE_STATES, TERMINAL_STATES, JobState
from smq_lambda.domain.sagemaker.training_report import TrainingJobStatus
from smq_lambda.domain.sagemaker.warm_pool_status import WarmPoolStatus
from smq_lambda.errors import (
    AlarmServiceError,
    JobConflict,
    StartOutcomeUnknown,
    StartRefused,
    VersionConflict,
)
from smq_lambda.governance.idle import AlarmPrefix
from smq_lambda.governance.notices import Notice
from smq_lambda.governance.policy import Policy
from smq_lambda.pass_summary import PassSummary
from smq_lambda.ports import HistoryEntry, HistoryPosition, InUse, JobPage
from smq_lambda.scheduling.snapshot import SchedulerConfig, UnpooledPolicy

from tests.support.aws import pending_index_attributes

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_SECONDARY_OF = {"InProgress": "Training"}


class FakeClock:
    """A clock tests move by hand. Call it (or `.now()`) for the current time."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def __call__(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | None = None, **parts: float) -> datetime:
        """Move forward by `delta` or by timedelta keywords (`advance(seconds=30)`)."""
        self._now += delta if delta is not None else timedelta(**parts)
        return self._now

    def set(self, value: datetime) -> None:
        self._now = value


class InMemoryJobStore:
    """The JobStore port over a dict of DynamoDB items; thread-safe, so concurrency tests can use it.

    Earlier jobs of a reused name are kept under their archive key, as the DynamoDB store keeps them;
    reads that stand for an index Query see only items that carry `order_key`, as the sparse indexes do,
    and a queue front holds only what the template projects into the pending index.

    `index_lag` makes it the store of an eventually consistent world: every index read (the queue
    fronts, counts, listings) sees the items as they were `index_lag` writes ago, as a global
    secondary index that has not caught up would. Reads by key (`get`, `in_use`) stay current.
    """

    def __init__(self, *, ttl_days: int = 30, index_lag: int = 0) -> None:
        self._ttl_days = ttl_days
        self._items: dict[str, Item] = {}
        self._lock = threading.Lock()
        self._index_lag = index_lag
        self._earlier: collections.deque[dict[str, Item]] = collections.deque([{}], maxlen=index_lag + 1)
        self._pools: set[str] = set()
        self._team_tags: dict[str, datetime] = {}
        self._outside: dict[str, set[str]] = {}
        """Per pool, `<training job>=<instances>` elements, as the DynamoDB store's `outside` sets."""
        self.front_reads = 0
        """Pending jobs served by `pending_front`, for tests that bound what a pass reads."""

    def create(self, job: Job, *, register_team: bool = False) -> Job:
        stored = replace(job, version=1)
        with self._lock:
            self._pools.update(job.where.pools)
            existing = self._items.get(job.name)
            if existing is not None:
                if existing["job_id"]["S"] == job.job_id:
                    return from_item(existing)
                if JobState(existing["state"]["S"]) not in TERMINAL_STATES:
                    raise JobConflict(job.name, f"a job named {job.name!r} is already {existing['state']['S']}")
                earlier = from_item(existing)
                stored = replace(stored, earlier_job_ids=(earlier.job_id, *earlier.earlier_job_ids)[:MAX_EARLIER_JOBS])
                self._items[archive_key(job.name, earlier.job_id)] = archived(existing)
            self._write(stored)
            if register_team and job.team:
                self._team_tags[job.team] = job.submitted_at.replace(microsecond=0)
        return stored

    def get(self, name: str, *, job_id: str | None = None) -> Job | None:
        if ARCHIVE_SEPARATOR in name or (job_id is not None and not JOB_ID_PATTERN.fullmatch(job_id)):
            return None
        with self._lock:
            item = self._items.get(name)
            if job_id is not None and (item is None or item["job_id"]["S"] != job_id):
                item = self._items.get(archive_key(name, job_id))
        return None if item is None else from_item(item)

    def save(self, job: Job, *, expected_version: int) -> Job:
        if job.version != expected_version + 1:
            raise ValueError(f"job {job.name!r} must be saved as version {expected_version + 1}, not {job.version}")
        with self._lock:
            existing = self._items.get(job.name)
            if (
                existing is None
                or int(existing["version"]["N"]) != expected_version
                or existing["job_id"]["S"] != job.job_id
            ):
                raise VersionConflict(job.name)
            self._write(job)
        return job

    def _write(self, job: Job) -> None:
        """The job's item and its listing items, at once (the DynamoDB store's transaction)."""
        item = to_item(job, ttl_days=self._ttl_days)
        self._items[job.name] = item
        for key, listed in listing_changes(job, item).items():
            if listed is None:
                self._items.pop(key, None)
            else:
                self._items[key] = listed
        if self._index_lag:
            self._earlier.append(dict(self._items))

    def in_use(self) -> InUse:
        with self._lock:
            live = [item for item in self._items.values() if _job_state(item) in LIVE_STATES]
            outside = {
                pool: total
                for pool, entries in self._outside.items()
                if (total := sum(outside_count(entry) for entry in entries))
            }
            pools = frozenset(self._pools)
            team_tags = dict(self._team_tags)
        live.sort(key=lambda item: item["order_key"]["S"])
        return InUse(live=[from_item(item) for item in live], outside=outside, pools=pools, team_tags=team_tags)

    def forget_team_tag(self, team: str, registered_at: datetime) -> None:
        with self._lock:
            if self._team_tags.get(team) == registered_at:
                del self._team_tags[team]

    def pending_front(self, pool: str, limit: int, *, team: str | None = None) -> list[Job]:
        projected = pending_index_attributes()
        items = self._indexed(lambda item: _pending_in(item, pool, team))[: max(limit, 0)]
        with self._lock:
            self.front_reads += len(items)
        return [pending_job({key: value for key, value in item.items() if key in projected}) for item in items]

    def count_pending(
        self, pool: str, *, after: str | None = None, before: str | None = None, team: str | None = None
    ) -> int:
        return len(
            self._indexed(
                lambda item: (
                    _pending_in(item, pool, team)
                    and (after is None or item["order_key"]["S"] > after)
                    and (before is None or item["order_key"]["S"] < before)
                )
            )
        )

    def record_outside(self, training_job_name: str, demand: Mapping[str, int], *, holding: bool) -> None:
        with self._lock:
            if holding:
                self._pools.update(demand)
            for pool, count in demand.items():
                entries = self._outside.setdefault(pool, set())
                (entries.add if holding else entries.discard)(outside_entry(training_job_name, count))

    def replace_outside(self, jobs: Mapping[str, Mapping[str, int]]) -> None:
        with self._lock:
            self._outside = {}
            for name, demand in jobs.items():
                self._pools.update(demand)
                for pool, count in demand.items():
                    self._outside.setdefault(pool, set()).add(outside_entry(name, count))

    def list_jobs(
        self,
        *,
        states: Collection[JobState],
        pool: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
    ) -> JobPage:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        after = decode_page_token(next_token) if next_token else ""
        wanted = {str(JobState(state)) for state in states}

        def matches(item: Item) -> bool:
            """As the index: by owner, only items that carry the owner's key of their state."""
            state = _job_state(item)
            return (
                state is not None
                and state in wanted
                and (pool is None or in_pool(from_item(item), pool))
                and (owner is None or item.get("owner_state") == {"S": owner_state_key(owner, JobState(state))})
                and item["order_key"]["S"] > after
            )

        candidates = self._indexed(matches)
        page = candidates[:limit]
        token = encode_page_token(page[-1]["order_key"]["S"]) if len(candidates) > limit else None
        return JobPage(jobs=[from_item(item) for item in page], next_token=token)

    def jobs_with_attempts_since(
        self, start: datetime, now: datetime, *, after: HistoryPosition | None = None, page_size: int | None = None
    ) -> Iterator[HistoryEntry]:
        """As the by-state and by-attempt-end indexes: live jobs, then jobs (archived ones too) whose
        latest attempt ended in [start, now] and that are not live, in HistoryPosition order."""
        since, last_day = format_time(start), attempt_end_day(now)
        with self._lock:
            seen = self._earlier[0] if self._index_lag and self._earlier else self._items
            positioned = [
                (history_position(item, ended=_job_state(item) not in LIVE_STATES), item)
                for item in seen.values()
                if _job_state(item) in LIVE_STATES
                or (
                    "attempt_end" in item
                    and since <= item["attempt_end"]["S"]
                    and item["attempt_end_day"]["S"] <= last_day
                )
            ]
        for position, item in sorted(positioned, key=lambda entry: entry[0]):
            if after is None or position > after:
                yield HistoryEntry(from_item(item), position)

    def all_jobs(self) -> list[Job]:
        """The newest job of every name, finished ones included, by name: for invariant checks."""
        with self._lock:
            items = [self._items[name] for name in sorted(self._items) if _job_state(self._items[name]) is not None]
        return [from_item(item) for item in items]

    def item(self, name: str) -> Item | None:
        """The stored item as DynamoDB would hold it (tests read `expires_at`, `pending_pool`)."""
        with self._lock:
            item = self._items.get(name)
            return None if item is None else {key: dict(value) for key, value in item.items()}

    def _indexed(self, keep: Callable[[Item], bool]) -> list[Item]:
        """An index read: the items `index_lag` writes ago that `keep` accepts, in scheduling order."""
        with self._lock:
            seen = self._earlier[0] if self._index_lag and self._earlier else self._items
            items = [item for item in seen.values() if "order_key" in item and keep(item)]
        return sorted(items, key=lambda item: item["order_key"]["S"])


def _job_state(item: Item) -> str | None:
    """The state of a current job's item (in the by-state index); None for an archived job's item
    or a listing item."""
    return item["state"]["S"] if "order_key" in item and "state" in item else None


def _pending_in(item: Item, pool: str, team: str | None) -> bool:
    """In the pending-by-pool partition of `pool`, or with `team` in pending-by-team's `<pool>#<team>`."""
    if team is None:
        return item.get("pending_pool") == {"S": pool}
    return item.get("pending_team") == {"S": pending_team_key(pool, team)}


@dataclass
class FakeTrainingJob:
    """One training job the fake SageMaker holds."""

    name: str
    request: dict[str, Any]
    created: datetime = EPOCH
    status: str = "InProgress"
    secondary_status: str | None = "Starting"
    failure_reason: str | None = None
    end_time: datetime | None = None
    transitions: list[dict[str, Any]] = field(default_factory=list)
    """SecondaryStatusTransitions since the first `set_status` (StartTime/EndTime as datetimes)."""
    training_time_s: int | None = None
    billable_time_s: int | None = None
    """TrainingTimeInSeconds and BillableTimeInSeconds, which SageMaker reports once the job ended."""
    warm_pool: WarmPoolStatus | None = None
    """Its WarmPoolStatus, as `describe` reports it."""

    @property
    def tags(self) -> dict[str, str]:
        return {tag["Key"]: tag["Value"] for tag in self.request.get("Tags") or ()}

    def enter(self, status: str, secondary_status: str, now: datetime) -> None:
        """Move on as SageMaker does: a new secondary status closes the previous transition."""
        if secondary_status != self.secondary_status or not self.transitions:
            if self.transitions:
                self.transitions[-1]["EndTime"] = now
            self.transitions.append({"Status": secondary_status, "StartTime": now})
        self.status, self.secondary_status = status, secondary_status


@dataclass
class _Refusal:
    reason: str
    lasting: bool
    remaining: int | None


@dataclass
class _LostAnswer:
    created: bool
    remaining: int | None


@dataclass(eq=False)
class FakeTrainingService:
    """The TrainingService port in memory.

    - `start_calls` / `stop_calls` / `warm_pool_ends` record every call, in order (training job names).
    - `refuse(job_name, ...)` makes starts of a queue job fail, lasting or transient, for `times`
      calls (None: until `allow`).
    - `lose_answer(job_name, created=...)` makes starts of a queue job raise StartOutcomeUnknown, as
      a read timeout does, after creating the training job or not, for `times` calls.
    - A start of a name that already exists is a no-op, as ResourceInUse makes it for the adapter.
    - `describe` answers from `jobs`; like DescribeTrainingJob it carries no tags.
    - `external` (pool → instances) is what `outside_in_progress` lists, one training job per pool.
    - `in_progress_since` answers from `jobs` by their `created` time, tags included.
    - `stop_immediately` makes a stop end the job as Stopped at once instead of leaving it Stopping.
    """

    external: dict[str, int] = field(default_factory=dict)
    stop_immediately: bool = False
    clock: Callable[[], datetime] = field(default=lambda: EPOCH)
    jobs: dict[str, FakeTrainingJob] = field(default_factory=dict, init=False)
    start_calls: list[str] = field(default_factory=list, init=False)
    stop_calls: list[str] = field(default_factory=list, init=False)
    warm_pool_ends: list[str] = field(default_factory=list, init=False)
    _refusals: dict[str, _Refusal] = field(default_factory=dict, init=False, repr=False)
    _lost_answers: dict[str, _LostAnswer] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def refuse(self, job_name: str, reason: str, *, lasting: bool, times: int | None = None) -> None:
        with self._lock:
            self._refusals[job_name] = _Refusal(reason, lasting, times)

    def allow(self, job_name: str) -> None:
        with self._lock:
            self._refusals.pop(job_name, None)

    def lose_answer(self, job_name: str, *, created: bool, times: int | None = 1) -> None:
        with self._lock:
            self._lost_answers[job_name] = _LostAnswer(created, times)

    def start_attempt(self, job: Job) -> None:
        request = attempt_request(job)
        name = request["TrainingJobName"]
        with self._lock:
            self.start_calls.append(name)
            refusal = self._refusals.get(job.name)
            if refusal is not None:
                if refusal.remaining is not None:
                    refusal.remaining -= 1
                    if refusal.remaining <= 0:
                        del self._refusals[job.name]
                raise StartRefused(refusal.reason, lasting=refusal.lasting)
            lost = self._lost_answers.get(job.name)
            if lost is not None:
                if lost.remaining is not None:
                    lost.remaining -= 1
                    if lost.remaining <= 0:
                        del self._lost_answers[job.name]
                if lost.created and name not in self.jobs:
                    self.jobs[name] = FakeTrainingJob(name=name, request=request, created=self.clock())
                raise StartOutcomeUnknown("Read timeout on endpoint URL")
            if name not in self.jobs:
                self.jobs[name] = FakeTrainingJob(name=name, request=request, created=self.clock())

    def stop(self, training_job_name: str) -> None:
        with self._lock:
            self.stop_calls.append(training_job_name)
            job = self.jobs.get(training_job_name)
            if job is None or job.status != "InProgress":
                return
            if self.stop_immediately:
                self._end(job, "Stopped", secondary_status="Stopped")
            else:
                job.enter("Stopping", "Stopping", self.clock())

    def end_warm_pool(self, training_job_name: str) -> None:
        with self._lock:
            self.warm_pool_ends.append(training_job_name)

    def describe(self, training_job_name: str) -> TrainingJobStatus | None:
        with self._lock:
            job = self.jobs.get(training_job_name)
            if job is None:
                return None
            return TrainingJobStatus(
                name=job.name,
                status=job.status,
                secondary_status=job.secondary_status,
                failure_reason=job.failure_reason,
                end_time=job.end_time,
                secondary_status_transitions=tuple(dict(transition) for transition in job.transitions),
                training_time_seconds=job.training_time_s,
                billable_time_seconds=job.billable_time_s,
                warm_pool=job.warm_pool,
            )

    def outside_in_progress(self, queue_attempts: Collection[str]) -> dict[str, dict[str, int]]:
        return {f"outside-{pool}": {pool: count} for pool, count in self.external.items() if count}

    def in_progress_since(self, created_after: datetime) -> list[dict[str, Any]]:
        with self._lock:
            running = [job for job in self.jobs.values() if job.status == "InProgress" and job.created > created_after]
            return [
                {
                    **job.request,
                    "TrainingJobStatus": job.status,
                    "SecondaryStatus": job.secondary_status,
                    "CreationTime": job.created,
                    "Tags": job.tags,
                }
                for job in running
            ]

    def set_status(
        self,
        training_job_name: str,
        status: str,
        *,
        secondary_status: str | None = None,
        failure_reason: str | None = None,
        training_time_s: int | None = None,
        billable_time_s: int | None = None,
    ) -> None:
        """Move a training job on as SageMaker would (`Completed`, `Failed`, `Stopped`, ...); an
        end may carry the training and billable seconds SageMaker reports then."""
        with self._lock:
            job = self.jobs[training_job_name]
            job.training_time_s, job.billable_time_s = training_time_s, billable_time_s
            secondary = secondary_status or _SECONDARY_OF.get(status, status)
            if status in BUSY_STATUSES:
                job.enter(status, secondary, self.clock())
            else:
                self._end(job, status, secondary_status=secondary, failure_reason=failure_reason)

    def live_names(self) -> list[str]:
        """Training jobs that still hold instances (InProgress or Stopping)."""
        with self._lock:
            return [name for name, job in self.jobs.items() if job.status in BUSY_STATUSES]

    def state_change_event(self, training_job_name: str) -> dict[str, Any]:
        """The EventBridge event SageMaker emits for the job's current status (Tags as a map)."""
        with self._lock:
            job = self.jobs[training_job_name]
            arn = f"arn:aws:sagemaker:us-east-1:000000000000:training-job/{job.name.lower()}"
            detail: dict[str, Any] = {
                "TrainingJobName": job.name,
                "TrainingJobArn": arn,
                "TrainingJobStatus": job.status,
                "SecondaryStatus": job.secondary_status,
                "ResourceConfig": job.request.get("ResourceConfig"),
                "Tags": job.tags,
            }
            if job.failure_reason is not None:
                detail["FailureReason"] = job.failure_reason
            if job.training_time_s is not None:
                detail["TrainingTimeInSeconds"] = job.training_time_s
            if job.billable_time_s is not None:
                detail["BillableTimeInSeconds"] = job.billable_time_s
            detail["SecondaryStatusTransitions"] = [
                {
                    key: _epoch_millis(value) if isinstance(value, datetime) else value
                    for key, value in transition.items()
                }
                for transition in job.transitions
            ]
            return {
                "version": "0",
                "id": str(uuid.uuid4()),
                "detail-type": "SageMaker Training Job State Change",
                "source": "aws.sagemaker",
                "account": "000000000000",
                "time": self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": "us-east-1",
                "resources": [arn],
                "detail": detail,
            }

    def _end(
        self, job: FakeTrainingJob, status: str, *, secondary_status: str, failure_reason: str | None = None
    ) -> None:
        job.enter(status, secondary_status, self.clock())
        job.transitions[-1]["EndTime"] = self.clock()
        job.failure_reason = failure_reason
        job.end_time = self.clock()


def _epoch_millis(moment: datetime) -> int:
    """How an EventBridge detail carries a time."""
    return round(moment.timestamp() * 1000)


class FakeConfigSource:
    """The ConfigSource port: returns `config`, which tests may replace between passes."""

    def __init__(
        self,
        pools: Mapping[str, int] | None = None,
        *,
        unpooled: UnpooledPolicy = UnpooledPolicy.REJECT,
        backfill: bool = False,
    ) -> None:
        self.config = SchedulerConfig(pools=dict(pools or {}), unpooled=unpooled, backfill=backfill)
        self.loads = 0

    def load(self) -> SchedulerConfig:
        self.loads += 1
        return self.config

    def set_pools(self, pools: Mapping[str, int]) -> None:
        self.config = replace(self.config, pools=dict(pools))


class InMemoryPassSummaries:
    """The PassSummaries port: keeps the latest summary, never replacing it with an older one (as
    the DynamoDB adapter's condition does), within the same bounds (`bounded`); `published` records
    every summary a pass offered."""

    def __init__(self) -> None:
        self.published: list[PassSummary] = []
        self._latest: PassSummary | None = None
        self._lock = threading.Lock()

    def publish(self, summary: PassSummary) -> None:
        with self._lock:
            self.published.append(summary)
            if self._latest is None or self._latest.measured_at <= summary.measured_at:
                self._latest = bounded(summary)

    def latest(self) -> PassSummary | None:
        with self._lock:
            return self._latest


class RecordingTrigger:
    """The SchedulerTrigger port: records every kick and optionally runs `on_kick` (e.g. a pass)."""

    def __init__(self, on_kick: Callable[[str], None] | None = None) -> None:
        self.kicks: list[str] = []
        self._on_kick = on_kick

    def kick(self, reason: str) -> None:
        self.kicks.append(reason)
        if self._on_kick is not None:
            self._on_kick(reason)


class StaticPolicySource:
    """The PolicySource port over a policy a test sets (and may change between passes)."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()

    def load(self) -> Policy:
        return self.policy


class RecordingNotifier:
    """The Notifier port: records every notice published; `fail` makes each publish report
    failure (recording nothing), as the SNS adapter does when SNS refuses."""

    def __init__(self, *, fail: bool = False) -> None:
        self.sent: list[Notice] = []
        self.fail = fail

    def publish(self, notice: Notice) -> bool:
        if self.fail:
            return False
        self.sent.append(notice)
        return True


class FakeIdleAlarms:
    """The IdleAlarms port in memory: `alarms` maps each alarm's name to its PutMetricAlarm request,
    `alarm_states` to its state (set a test's own with `set_state`); `fail` makes every call raise
    AlarmServiceError, as the adapter does when CloudWatch fails.

    `alarms` is the whole account's (a test may add another stack's); like the adapter, the port
    lists only names under `prefix` and refuses to touch any other."""

    def __init__(self, prefix: AlarmPrefix) -> None:
        self.prefix = prefix
        self.alarms: dict[str, Mapping[str, Any]] = {}
        self.alarm_states: dict[str, str] = {}
        self.put_calls = 0
        self.fail = False

    def put(self, requests: Collection[Mapping[str, Any]]) -> None:
        self._check("PutMetricAlarm", [request["AlarmName"] for request in requests])
        self.put_calls += 1
        for request in requests:
            self.alarms[request["AlarmName"]] = request
            self.alarm_states.setdefault(request["AlarmName"], "INSUFFICIENT_DATA")

    def delete(self, alarm_names: Collection[str]) -> None:
        self._check("DeleteAlarms", alarm_names)
        for name in alarm_names:
            self.alarms.pop(name, None)
            self.alarm_states.pop(name, None)

    def names(self) -> list[str]:
        self._check("DescribeAlarms", [])
        return sorted(name for name in self.alarms if self.prefix.owns(name))

    def states(self, alarm_names: Collection[str]) -> dict[str, str]:
        self._check("DescribeAlarms", alarm_names)
        return {name: self.alarm_states[name] for name in alarm_names if name in self.alarm_states}

    def in_alarm(self) -> list[Mapping[str, Any]]:
        self._check("DescribeAlarms", [])
        return [
            {**self.alarms[name], "StateValue": state}
            for name, state in sorted(self.alarm_states.items())
            if state == "ALARM" and self.prefix.owns(name) and name in self.alarms
        ]

    def set_state(self, name: str, state: str) -> None:
        self.alarm_states[name] = state

    def _check(self, operation: str, alarm_names: Collection[str]) -> None:
        outside = [name for name in alarm_names if not self.prefix.owns(name)]
        if outside:
            raise ValueError(f"not this stack's idle alarm names (prefix {self.prefix.value!r}): {outside}")
        if self.fail:
            raise AlarmServiceError(operation, "Throttling", "Rate exceeded")
