"""The registry of training jobs: the API operations and every status change.

One lock guards every record. Each status change happens under it and publishes its event
(a queue put) under it too, so events come out in the order the changes happened; the
dispatcher delivers them on its own thread, never while this lock is held.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smq_lambda.domain.warm.warm_match import KEEP_ALIVE_MEMBER, keep_alive_seconds, matches, may_use_warm_pool

from smq.local.sagemaker import lifecycle
from smq.local.sagemaker.contract import JobPaths
from smq.local.sagemaker.errors import ResourceInUse, ResourceNotFound, ValidationError
from smq.local.sagemaker.events import EventDispatcher, state_change_event
from smq.local.sagemaker.listing import list_page, parse_list_query
from smq.local.sagemaker.process import FAILURE_REASON_LIMIT
from smq.local.sagemaker.records import FAILED, IN_PROGRESS, STOPPED, STOPPING, JobRecord
from smq.local.sagemaker.runtime import Control, Executor, JobRun, PhaseTimings, Signal
from smq.local.sagemaker.validation import (
    MAX_TAGS,
    Problems,
    check_tags,
    required,
    typed,
    validate_create,
    validate_update,
)
from smq.local.sagemaker.warm_pools import AVAILABLE, IN_USE, TERMINATED, WarmPool, keeps_cluster

FAULTS = ("interrupt", "fail", "hang")
_INTERRUPTIBLE = ("Starting", "Downloading", "Training")
SHUTDOWN_MARGIN_SECONDS = 30.0
"""How long past the stop grace a shutdown waits for job threads (checkpoint and model uploads)."""
_STOP_MESSAGES = {
    "Stopped": "Stopping the training job",
    "MaxRuntimeExceeded": "Training job runtime exceeded MaxRuntimeInSeconds provided",
    "MaxWaitTimeExceeded": "Training job wait time exceeded MaxWaitTimeInSeconds provided",
}

logger = logging.getLogger(__name__)


class TrainingJobs:
    """Training jobs by name (case-insensitive, as SageMaker's names are)."""

    def __init__(
        self,
        *,
        workdir: Path,
        executor: Executor,
        events: EventDispatcher,
        stop_grace: float,
        timings: PhaseTimings,
        region: str,
        account_id: str,
    ) -> None:
        self._workdir = workdir
        self.executor = executor
        self.timings = timings
        self._events = events
        self._stop_grace = stop_grace
        self._region = region
        self._account = account_id
        self._lock = threading.Lock()
        self._jobs: dict[str, JobRecord] = {}
        self._closing = False

    # -- API operations ---------------------------------------------------------------------

    def create_training_job(self, request: Mapping[str, Any]) -> dict[str, Any]:
        validate_create(request)
        self.executor.validate(request)
        name = request["TrainingJobName"]
        arn = f"arn:aws:sagemaker:{self._region}:{self._account}:training-job/{name.lower()}"
        with self._lock:
            if self._closing:
                raise ValidationError("The local SageMaker service is shutting down.")
            if name.lower() in self._jobs:
                raise ResourceInUse(
                    "Training job names must be unique within an AWS account and "
                    f"region, and a training job with this name already exists "
                    f"({self._jobs[name.lower()].arn})"
                )
            run = JobRun(
                name=name,
                arn=arn,
                request=copy.deepcopy(dict(request)),
                paths=JobPaths(self._workdir / "jobs" / name),
                control=Control(),
                stop_grace=self._stop_grace,
            )
            job = JobRecord(
                name=name,
                arn=arn,
                request=run.request,
                created=time.time(),
                tags={t["Key"]: t["Value"] for t in request.get("Tags", [])},
                run=run,
            )
            self._jobs[name.lower()] = job
            now = time.time()
            job.warm_source = self._take_warm_pool(job, now)
            if job.warm_source is None:
                self._move(job, IN_PROGRESS, "Starting", "Launching requested ML instances", now)
            else:
                job.warm_pool = WarmPool(IN_USE)
                self._move(
                    job, IN_PROGRESS, "Starting", f"Reusing the warm pool of training job {job.warm_source}", now
                )
            threading.Thread(target=lifecycle.run_job, args=(self, job), name=f"job-{name}", daemon=True).start()
        return {"TrainingJobArn": arn}

    def describe_training_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            job, now = self._get(params), time.time()
            _expire(job, now)
            return job.describe(now)

    def update_training_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Only the warm pool's retention: a new `KeepAlivePeriodInSeconds`, counted from the end
        of the job; one already over (0 always is) terminates an available pool now."""
        validate_update(params)
        seconds = params["ResourceConfig"][KEEP_ALIVE_MEMBER]
        with self._lock:
            job, now = self._get(params), time.time()
            _expire(job, now)
            if not may_use_warm_pool(job.request):
                raise ValidationError(f"Training job {job.name} cannot use a managed warm pool.")
            pool = job.warm_pool
            if job.status not in (IN_PROGRESS, STOPPING) and (pool is None or pool.status != AVAILABLE):
                state = pool.status if pool is not None else "not retained"
                raise ValidationError(
                    f"The warm pool of training job {job.name} is {state}; KeepAlivePeriodInSeconds can be "
                    "updated only while the job runs or its warm pool is Available."
                )
            job.request["ResourceConfig"][KEEP_ALIVE_MEMBER] = seconds
            if pool is not None:
                pool.end_if_over(seconds, now)
        return {"TrainingJobArn": job.arn}

    def stop_training_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            job = self._get(params)
            if job.status != IN_PROGRESS:
                raise ValidationError(f"The request was rejected because the training job is in status {job.status}.")
            self._begin_stop(job, "Stopped")
        return {}

    def list_training_jobs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        query = parse_list_query(params)
        with self._lock:
            now = time.time()
            for job in self._jobs.values():
                _expire(job, now)
            return list_page(list(self._jobs.values()), query, now)

    def add_tags(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tags = required(params, "Tags", list)
        problems = Problems()
        check_tags(tags, problems, "tags")
        problems.raise_if_any()
        with self._lock:
            job = self._by_arn(params)
            merged = {**job.tags, **{t["Key"]: t["Value"] for t in tags}}
            if len(merged) > MAX_TAGS:
                raise ValidationError(f"A resource can have at most {MAX_TAGS} tags.")
            job.tags = merged
        return {"Tags": tags}

    def list_tags(self, params: Mapping[str, Any]) -> dict[str, Any]:
        limit = typed(params.get("MaxResults", MAX_TAGS), int, "MaxResults")
        start = params.get("NextToken") or "0"
        if not str(start).isdigit():
            raise ValidationError("Invalid pagination token.")
        with self._lock:
            tags = [{"Key": k, "Value": v} for k, v in self._by_arn(params).tags.items()]
        end = int(start) + limit
        out: dict[str, Any] = {"Tags": tags[int(start) : end]}
        if end < len(tags):
            out["NextToken"] = str(end)
        return out

    def delete_tags(self, params: Mapping[str, Any]) -> dict[str, Any]:
        keys = required(params, "TagKeys", list)
        with self._lock:
            job = self._by_arn(params)
            for key in keys:
                job.tags.pop(typed(key, str, "TagKeys"), None)
        return {}

    # -- faults and shutdown ----------------------------------------------------------------

    def inject(self, name: str, fault: str, reason: str | None = None) -> None:
        """Emulate what the platform can do to a job: reclaim its spot instance (`interrupt`),
        lose its instance (`fail`; `reason` is the FailureReason it reports, by default an
        internal error, so `AlgorithmError: ...` stands for a failure of the training code), or
        see it stop making progress (`hang`)."""
        if fault not in FAULTS:
            raise ValidationError(f"Unknown fault {fault!r}; use one of {', '.join(FAULTS)}.")
        if reason is not None and (fault != "fail" or not reason.strip() or len(reason) > FAILURE_REASON_LIMIT):
            raise ValidationError(
                f"A reason applies to the fail fault only and is 1 to {FAILURE_REASON_LIMIT} characters."
            )
        with self._lock:
            job = self._get({"TrainingJobName": name})
            if fault == "interrupt":
                if not job.run.spot:
                    raise ValidationError(
                        f"Training job {job.name} does not use managed spot "
                        "training; only spot jobs can be interrupted."
                    )
                if job.status != IN_PROGRESS or job.secondary not in _INTERRUPTIBLE:
                    raise ValidationError(
                        f"Training job {job.name} cannot be interrupted in status {job.status}/{job.secondary}."
                    )
                self._move(
                    job,
                    IN_PROGRESS,
                    "Interrupted",
                    "Training job interrupted: the spot instance was reclaimed (injected)",
                )
                job.run.control.raise_signal(Signal.INTERRUPT)
                return
            if job.status not in (IN_PROGRESS, STOPPING):
                raise ValidationError(f"Training job {job.name} has already ended ({job.status}).")
            if fault == "fail":
                job.injected_failure = reason
            job.run.control.raise_signal(Signal.FAIL if fault == "fail" else Signal.HANG)

    def shutdown(self) -> None:
        """Stop every job (SIGTERM, SIGKILL after the grace period) and wait for all of them, but
        no longer than the grace period and a margin: a job thread stuck in a call that never
        returns is logged and left behind (its thread is a daemon), so the service still stops."""
        with self._lock:
            self._closing = True
            jobs = list(self._jobs.values())
            for job in jobs:
                if job.status == IN_PROGRESS:
                    self._begin_stop(job, "Stopped")
        deadline = time.monotonic() + self._stop_grace + SHUTDOWN_MARGIN_SECONDS
        for job in jobs:
            if not job.done.wait(max(0.0, deadline - time.monotonic())):
                logger.warning("training job %s did not end after the stop; shutting down without it", job.name)

    # -- status changes, used by the lifecycle ------------------------------------------------

    def enter(
        self, job: JobRecord, secondary: str, message: str, ignore: frozenset[Signal] | set[Signal] = frozenset()
    ) -> Signal | None:
        """Move an in-progress job to `secondary`, unless a signal says it must end or restart:
        then return that signal and change nothing. (An interruption after the work is done
        is too late to matter: Uploading ignores it.)"""
        with self._lock:
            pending = job.run.control.wait(0, {Signal.HANG, Signal.EXITED, *ignore})
            if pending is not None:
                return pending
            if secondary == "Downloading" and job.training_start is None:
                job.training_start = time.time()
            self._move(job, IN_PROGRESS, secondary, message)
            return None

    def restart(self, job: JobRecord, message: str) -> Signal | None:
        """After an interruption: a fresh instance, so the faults of the old one are gone."""
        with self._lock:
            if job.run.control.is_raised(Signal.FAIL) or job.run.control.is_raised(Signal.STOP):
                return job.run.control.wait(0, {Signal.INTERRUPT, Signal.HANG, Signal.EXITED})
            job.run.control.clear(Signal.INTERRUPT, Signal.HANG, Signal.EXITED)
            self._move(job, IN_PROGRESS, "Starting", message)
            return None

    def stop_outcome(self, job: JobRecord) -> str | None:
        with self._lock:
            return job.stop_outcome

    def stop_if_running(self, job: JobRecord, outcome: str) -> None:
        """A deadline passed (MaxRuntimeInSeconds, MaxWaitTimeInSeconds)."""
        with self._lock:
            if job.status == IN_PROGRESS:
                self._begin_stop(job, outcome)

    def end(
        self,
        job: JobRecord,
        status: str,
        secondary: str,
        message: str,
        *,
        failure_reason: str | None = None,
        model_artifacts: str | None = None,
    ) -> None:
        with self._lock:
            if status != FAILED and job.stop_outcome is not None:
                status, secondary = STOPPED, job.stop_outcome  # a stop won the race
            job.failure_reason = failure_reason
            job.model_artifacts = model_artifacts
            now = time.time()
            if keep_alive_seconds(job.request) > 0 and may_use_warm_pool(job.request):
                pool = job.warm_pool or WarmPool(TERMINATED)
                launched = job.warm_source is not None or job.training_start is not None
                if keeps_cluster(status, failure_reason, launched):
                    pool.retain(now)
                else:
                    pool.status = TERMINATED
                job.warm_pool = pool
            self._move(job, status, secondary, message, now)

    # -- internals (lock held) ------------------------------------------------------------------

    def _begin_stop(self, job: JobRecord, outcome: str) -> None:
        job.stop_outcome = outcome
        self._move(job, STOPPING, "Stopping", _STOP_MESSAGES[outcome])
        job.run.control.raise_signal(Signal.STOP)

    def _move(self, job: JobRecord, status: str, secondary: str, message: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        job.move(status, secondary, message, now)
        self._events.publish(
            state_change_event(job.describe(now), job.tags, account=self._account, region=self._region)
        )

    def _take_warm_pool(self, job: JobRecord, now: float) -> str | None:
        """Hand `job` the available warm pool that matches it (the longest retained) and return
        the name of the job that kept it. Only a job that itself asks for a keep-alive period
        reuses one (the guide: "each subsequent training job must also specify a
        KeepAlivePeriodInSeconds value")."""
        if keep_alive_seconds(job.request) <= 0:
            return None
        candidates: list[tuple[float, str, WarmPool]] = []
        for other in self._jobs.values():
            _expire(other, now)
            pool = other.warm_pool
            if pool is not None and pool.status == AVAILABLE and matches(other.request, job.request):
                candidates.append((pool.retained_since or 0.0, other.name, pool))
        if not candidates:
            return None
        _, source, pool = min(candidates, key=lambda candidate: candidate[:2])
        pool.hand_over(job.name, now)
        return source

    def _get(self, params: Mapping[str, Any]) -> JobRecord:
        name = required(params, "TrainingJobName", str)
        job = self._jobs.get(name.lower())
        if job is None:
            raise ResourceNotFound(f"Requested resource not found: training job {name}")
        return job

    def _by_arn(self, params: Mapping[str, Any]) -> JobRecord:
        arn = required(params, "ResourceArn", str)
        prefix = f"arn:aws:sagemaker:{self._region}:{self._account}:training-job/"
        job = self._jobs.get(arn[len(prefix) :].lower()) if arn.startswith(prefix) else None
        if job is None:
            raise ResourceNotFound(f"Resource {arn} not found.")
        return job


def _expire(job: JobRecord, now: float) -> None:
    if job.warm_pool is not None:
        job.warm_pool.expire(keep_alive_seconds(job.request), now)
