"""A Kueue-shaped load through the real handlers on the local stack (synthetic executor, real time).

Run: .venv/bin/python bench/bench_kueue_load.py [--scale 0.1 | --pools N] [--json FILE]
(`make bench-kueue` writes .bench/kueue_load.json)

Modelled on Kueue's scheduler performance baseline (test/performance/scheduler/configs/baseline):
30 pools (Kueue: 30 ClusterQueues in 5 cohorts of 6) of 20 instances each, and into every pool

    small   350 jobs,  1 instance,  0.2 s, priority  50, one every 100 ms
    medium  100 jobs,  5 instances, 0.5 s, priority 100, one every 500 ms
    large    50 jobs, 20 instances, 1.0 s, priority 200, one every 1.2 s

15,000 jobs in all. The arrivals end after 59 s and a pool's work needs 66 s of the whole pool, so
no scheduler finishes much under 70 s. Kueue's published averages for it: 351 s wall, 58.7 % usage,
mean time to admission large 6.7 s, medium 77 s, small 215 s. Differences that favour Kueue's
numbers: its queues borrow unused quota within a cohort, ours are independent pools; its
workloads hold quota exactly for their run time, ours from the start decision until the queue
records the end (the local SageMaker's start and upload phases add about 0.2 s to each).

`--scale F` runs a fraction of the pools (same arrivals per pool), `--pools N` a number of them.
This machine has 2 cores, and the whole stack (moto, the local SageMaker service, the API front,
the scheduler) runs in one Python process, so the default is a tenth of the pools (3 pools, 1,500
jobs), and the run gives up `--timeout` (default 300) seconds after the first arrival, so that
`make bench-kueue` ends within about 6 minutes whether or not the stack kept up; an unfinished run
is reported as NOT FINISHED, its figures over the window it was watched (jobs not yet admitted are
counted, and give a lower bound of the mean time to admission). The output says what was run.
The full load: `--pools 30 --timeout 1800`.

How: the stack runs in a child process of this script (`smq.local.stack.LocalStack`, synthetic
executor, one pool per SageMaker instance type); this process submits through the REST API
(`smq.api_client.SmqApiClient`) from a dispatcher that follows the arrival schedule, pools
interleaved (pool p's arrivals shifted by p/N of 100 ms) and a few sender threads; then polls
GET /pools once a second until every job has finished; then reads every job (GET /jobs?state=all:
submitted_at, attempts' started_at / ended_at) and every training job from the local SageMaker
(ListTrainingJobs: when SageMaker itself created and ended it). In the child, the scheduler
handler (`handler` of every module of smq_lambda.handlers but api and idle) is wrapped to time each
invocation and to see how old the SageMaker events it gets are (one event or an SQS batch); if the
stack no longer calls it, those figures say so. Once the run is over the wrapper holds further
invocations, so reading the jobs back does not compete with a scheduler still working through
its backlog.

Time to admission = the job's submitted_at to its first attempt's started_at (the scheduler's
start decision). Usage of a pool = instance-seconds its attempts held (started_at to ended_at) over
20 instances x the wall time. Wall time = the first scheduled arrival to the last attempt's end.
Scheduler lag = when the queue recorded an attempt's end minus when SageMaker ended it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO / "client", REPO / "functions"):  # the code beside this script, not another checkout
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import boto3  # noqa: E402
import botocore.session  # noqa: E402
from tabulate import tabulate  # noqa: E402

REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/SageMakerRole"
INSTANCES_PER_POOL = 20
KUEUE_POOLS = 30


@dataclass(frozen=True)
class JobClass:
    name: str
    count: int
    instances: int
    seconds: float
    priority: int
    interval: float


CLASSES = (
    JobClass("small", 350, 1, 0.2, 50, 0.1),
    JobClass("medium", 100, 5, 0.5, 100, 0.5),
    JobClass("large", 50, 20, 1.0, 200, 1.2),
)
KUEUE = {
    "wall_s": 351.0,
    "usage": 0.587,
    "mean_time_to_admission_s": {"large": 6.7, "medium": 77.0, "small": 215.0},
}
"""Kueue's published averages for the baseline (all 30 ClusterQueues)."""


@dataclass
class Submission:
    name: str
    pool: str
    job_class: JobClass
    offset: float
    """Seconds after the start of the run at which the job arrives."""
    sent: float | None = None
    answered: float | None = None
    error: str | None = None


# ---------------------------------------------------------------------------------------- the stack


def serve(workdir: Path, capacity: dict[str, int], reconcile_seconds: float) -> None:
    """Child process: run the stack until stdin closes, then write what the scheduler handler saw."""
    from smq.local.stack import LocalStack, LocalStackOptions

    options = LocalStackOptions(
        capacity=capacity,
        executor="synthetic",
        workdir=workdir / "stack",
        stop_grace_seconds=5.0,
        reconcile_every_seconds=reconcile_seconds,
    )
    invocations: list[dict[str, Any]] = []
    with LocalStack(options) as stack:
        instrumented = _instrument_scheduler(invocations)
        cpu_start, wall_start = _cpu_seconds(), time.time()
        ready = {"api_url": stack.api_url, "env": stack.client_env, "instrumented": instrumented}
        (workdir / "ready.json.part").write_text(json.dumps(ready))
        (workdir / "ready.json.part").rename(workdir / "ready.json")
        stop = threading.Event()
        reporter = threading.Thread(target=_report_progress, args=(workdir, invocations, stop), daemon=True)
        reporter.start()
        for line in sys.stdin:  # the driver says "pause", then closes our stdin when it is done
            if line.strip() == "pause":
                _RUNNING_HANDLERS.clear()
        _STOPPING.set()  # held invocations return at once, so the stack stops without waiting on them
        _RUNNING_HANDLERS.set()
        stop.set()
        stats = {
            "cpu_seconds": _cpu_seconds() - cpu_start,
            "wall_seconds": time.time() - wall_start,
            "instrumented": instrumented,
            "invocations": list(invocations),
        }
        (workdir / "stats.json").write_text(json.dumps(stats))


def _report_progress(workdir: Path, invocations: list[dict[str, Any]], stop: threading.Event) -> None:
    """Every 2 s: what the scheduler handler has done so far, for the driver's progress lines."""
    while not stop.wait(2.0):
        calls = list(invocations)
        recent = calls[-20:]
        now = time.time()
        last = next((call for call in reversed(calls) if call["lags"]), None)
        progress = {
            "invocations": len(calls),
            "seconds": sum(call["seconds"] for call in calls),
            "recent_mean_seconds": statistics.fmean(call["seconds"] for call in recent) if recent else None,
            "last_event_age": max(last["lags"]) if last else None,
            "last_event_handled_ago": now - last["at"] if last else None,
        }
        (workdir / "progress.json.part").write_text(json.dumps(progress))
        (workdir / "progress.json.part").rename(workdir / "progress.json")


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


NOT_SCHEDULER = frozenset({"api", "idle"})
"""Handler modules whose invocations are not scheduling work (the API is timed from the client)."""


def _instrument_scheduler(records: list[dict[str, Any]]) -> list[str]:
    """Time every call of `handler` in each module of smq_lambda.handlers but the API's and the
    idle-stop's: today only `scheduler`, and whatever module takes its events later. The local stack
    looks the handler up on each invocation, so replacing the module attribute is enough. Returns
    the modules instrumented."""
    import importlib
    import pkgutil

    try:
        package = importlib.import_module("smq_lambda.handlers")
    except ImportError:
        return []
    wrapped = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in NOT_SCHEDULER:
            continue
        module = importlib.import_module(f"smq_lambda.handlers.{info.name}")
        original = getattr(module, "handler", None)
        if callable(original):
            module.handler = _timed(original, info.name, records)
            wrapped.append(info.name)
    return wrapped


_RUNNING_HANDLERS = threading.Event()
"""Cleared once the run is over: the instrumented handlers then wait (no more passes), so reading the
jobs back through the API does not compete with a scheduler still working through its backlog."""
_RUNNING_HANDLERS.set()
_STOPPING = threading.Event()


def _timed(original: Any, module: str, records: list[dict[str, Any]]) -> Any:
    def timed(event: Any, context: Any) -> Any:
        _RUNNING_HANDLERS.wait()
        if _STOPPING.is_set():
            return None
        began, clock = time.time(), time.perf_counter()
        result: Any = None
        try:
            result = original(event, context)
            return result
        finally:
            elapsed = time.perf_counter() - clock
            kinds, lags = _describe_event(event, began)
            record: dict[str, Any] = {
                "module": module, "at": began, "seconds": elapsed, "kinds": kinds, "lags": lags
            }  # fmt: skip
            if isinstance(result, dict):
                record["passes"] = result.get("passes")
                started = result.get("started")
                record["started"] = len(started) if isinstance(started, list) else None
                record["busy"] = result.get("busy")
            records.append(record)

    return timed


def _describe_event(event: Any, now: float) -> tuple[list[str], list[float]]:
    """The kinds of the events in one invocation (one, or a batch) and the age of each SageMaker one."""
    kinds: list[str] = []
    lags: list[float] = []
    pending = [event]
    while pending:
        item = pending.pop()
        if not isinstance(item, dict):
            kinds.append("other")
            continue
        records = item.get("Records")
        if isinstance(records, list):  # an SQS or SNS batch: look inside
            for record in records:
                body = record.get("body") if isinstance(record, dict) else None
                if body is None and isinstance(record, dict) and isinstance(record.get("Sns"), dict):
                    body = record["Sns"].get("Message")
                try:
                    pending.append(json.loads(body) if isinstance(body, str) else body)
                except ValueError:
                    kinds.append("other")
            continue
        source = item.get("source")
        kinds.append(str(source) if source else "other")
        detail = item.get("detail")
        if source == "aws.sagemaker" and isinstance(detail, dict):
            modified = detail.get("LastModifiedTime")
            if isinstance(modified, int | float):
                lags.append(now - modified / 1000.0)
    return kinds, lags


# ---------------------------------------------------------------------------------------- the load


def instance_types(count: int) -> list[str]:
    """`count` SageMaker training instance types, one per pool (the service checks the enum)."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    names = [name for name in model.shape_for("TrainingInstanceType").enum if name.startswith("ml.")]
    if count > len(names):
        raise SystemExit(f"at most {len(names)} pools: one per SageMaker training instance type")
    return names[:count]


def classes(job_scale: float) -> tuple[JobClass, ...]:
    """Kueue's classes, each with `job_scale` of its jobs per pool (at least one): 1 is the benchmark,
    less is a smoke test."""
    return tuple(replace(job_class, count=max(1, round(job_class.count * job_scale))) for job_class in CLASSES)


def schedule(pools: list[str], job_classes: tuple[JobClass, ...]) -> list[Submission]:
    jobs = []
    for index, pool in enumerate(pools):
        shift = CLASSES[0].interval * index / len(pools)
        for job_class in job_classes:
            for number in range(job_class.count):
                name = f"kq{index:02d}-{job_class.name}-{number:03d}"
                jobs.append(Submission(name, pool, job_class, shift + number * job_class.interval))
    jobs.sort(key=lambda job: (job.offset, job.name))
    return jobs


def request(job: Submission) -> dict[str, Any]:
    hyperparameters = {
        "smq_synthetic_duration": json.dumps(str(job.job_class.seconds)),
        "smq_synthetic_outcome": json.dumps("complete"),
    }
    return {
        "TrainingJobName": job.name,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": "smq-local/python:3.11", "TrainingInputMode": "File"},
        "HyperParameters": hyperparameters,
        "OutputDataConfig": {"S3OutputPath": "s3://smq-local/output"},
        "ResourceConfig": {"InstanceType": job.pool, "InstanceCount": job.job_class.instances, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "Tags": [
            {"Key": "priority", "Value": str(job.job_class.priority)},
            {"Key": "team", "Value": "bench"},
            {"Key": "class", "Value": job.job_class.name},
        ],
    }


@dataclass
class Run:
    t0: float = 0.0
    """time.time() of the first scheduled arrival."""
    monotonic0: float = 0.0
    polls: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    finished: bool = False
    finished_at: float | None = None
    timed_out: bool = False
    read_at: float = 0.0
    """time.time() when the read-back began: the end of the observed window of an unfinished run."""


def api_client(ready: dict[str, Any]) -> Any:
    from smq.api_client import SmqApiClient

    env = ready["env"]
    session = boto3.Session(
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
        region_name=REGION,
    )
    return SmqApiClient(ready["api_url"], boto_session=session, region=REGION, timeout=120.0)


def submit_all(ready: dict[str, Any], jobs: list[Submission], senders: int, run: Run) -> None:
    """Follow the arrival schedule; each due job goes to a sender thread (one API client each)."""
    local = threading.local()

    def send(job: Submission) -> None:
        if run.stop.is_set():  # the run is over: what is still queued is not sent
            return
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = api_client(ready)
        job.sent = time.monotonic() - run.monotonic0
        try:
            client.add_job(request(job))
        except Exception as exc:  # recorded and reported: a lost submission is a finding
            job.error = f"{type(exc).__name__}: {exc}"
        job.answered = time.monotonic() - run.monotonic0

    with ThreadPoolExecutor(max_workers=senders, thread_name_prefix="bench-submit") as pool:
        for job in jobs:
            delay = run.monotonic0 + job.offset - time.monotonic()
            if run.stop.wait(delay) if delay > 0 else run.stop.is_set():
                pool.shutdown(wait=False, cancel_futures=True)
                return
            pool.submit(send, job)


def watch(ready: dict[str, Any], jobs: list[Submission], run: Run, timeout: float, poll: float, workdir: Path) -> None:
    """Poll GET /pools until all jobs are submitted and no pool has a pending or live job; confirm
    with one page of active jobs (GET /jobs, limit 1). Prints progress every 10 s."""
    client = api_client(ready)
    last_print = -math.inf
    while True:
        time.sleep(poll)
        now = time.monotonic() - run.monotonic0
        answered = [job for job in jobs if job.answered is not None]
        try:
            pools = client.list_pools()
        except Exception as exc:
            print(f"  t={now:6.1f}s GET /pools failed: {exc}", flush=True)
            pools = None
        pending = in_use = None
        if pools is not None:
            pending = sum(int(pool.get("pending") or 0) for pool in pools)
            in_use = sum(int(pool.get("in_use") or 0) for pool in pools)
        scheduler = _read_json(workdir / "progress.json")
        run.polls.append(
            {"t": now, "answered": len(answered), "pending": pending, "in_use": in_use, "scheduler": scheduler}
        )
        if now - last_print >= 10:
            last_print = now
            latest = max(answered, key=lambda job: job.answered or 0.0, default=None)
            lag = f"{latest.answered - latest.offset:.1f}" if latest and latest.answered is not None else "-"
            line = (
                f"  t={now:6.1f}s submitted {len(answered)}/{len(jobs)} (latest answered {lag} s after its arrival); "
                f"pending {pending}, instances in use {in_use}"
            )
            if scheduler:
                line += (
                    f"; scheduler {scheduler['invocations']} invocations, recent {_fmt(scheduler['recent_mean_seconds'], 2)}"
                    f" s each; the last SageMaker event it handled was {_fmt(scheduler['last_event_age'])} s old,"
                    f" {_fmt(scheduler['last_event_handled_ago'])} s ago"
                )
            print(line, flush=True)
        idle = pending == 0 and in_use == 0
        if (
            len(answered) == len(jobs)
            and (idle or pending is None)  # GET /pools unreadable: ask the jobs
            and not next(iter(client.iter_jobs(page_size=1)), None)
        ):
            run.finished, run.finished_at = True, now
            return
        if now > timeout:
            run.timed_out = True
            run.stop.set()
            return


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_jobs(ready: dict[str, Any]) -> list[dict[str, Any]]:
    return list(api_client(ready).iter_jobs("all", page_size=100))


def read_training_jobs(ready: dict[str, Any]) -> dict[str, dict[str, Any]]:
    env = ready["env"]
    sagemaker = boto3.client(
        "sagemaker",
        endpoint_url=env["AWS_ENDPOINT_URL_SAGEMAKER"],
        region_name=REGION,
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
    )
    found: dict[str, dict[str, Any]] = {}
    token: str | None = None
    while True:
        page = sagemaker.list_training_jobs(MaxResults=100, **({"NextToken": token} if token else {}))
        for summary in page["TrainingJobSummaries"]:
            found[summary["TrainingJobName"]] = summary
        token = page.get("NextToken")
        if not token:
            return found


# ---------------------------------------------------------------------------------------- figures


def _time(value: str | None) -> float | None:
    return None if value is None else datetime.fromisoformat(value).timestamp()


def _stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "mean": None, "median": None, "p90": None, "max": None}
    ordered = sorted(values)
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "p90": ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)],
        "max": ordered[-1],
    }


def figures(
    jobs: list[Submission],
    records: list[dict[str, Any]],
    training: dict[str, dict[str, Any]],
    run: Run,
    pools: list[str],
    child: dict[str, Any] | None,
) -> dict[str, Any]:
    """Every figure of the run. An unfinished run (timed out) is measured over the window it was
    watched (run.t0 to run.read_at): jobs not yet admitted count in `waiting_at_end`, and the lower
    bound of the mean time to admission counts them at the time they had waited so far (those whose
    POST /add-job had not been answered: since their scheduled arrival)."""
    window_end = run.read_at or time.time()
    answered = [job for job in jobs if job.answered is not None and run.t0 + job.answered <= window_end]
    by_name = {job.name: job for job in jobs}
    seen = {record["name"]: record for record in records if record.get("name") in by_name}
    states = Counter(record.get("state") for record in seen.values())
    ends: list[float] = []
    held: dict[str, float] = defaultdict(float)
    work: dict[str, float] = defaultdict(float)
    admission: dict[str, list[float]] = defaultdict(list)
    waiting: dict[str, list[float]] = defaultdict(list)
    from_arrival: dict[str, list[float]] = defaultdict(list)
    restarts: Counter[str] = Counter()
    completed: Counter[str] = Counter()
    attempts_started = 0
    scheduler_lag: list[float] = []
    start_call: list[float] = []
    per_window: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    lag_window: dict[int, list[float]] = defaultdict(list)
    for name, record in seen.items():
        job = by_name[name]
        attempts = record.get("attempts") or []
        attempts_started += len(attempts)
        restarts[job.job_class.name] += max(0, len(attempts) - 1)
        for attempt in attempts:
            began, ended = _time(attempt.get("started_at")), _time(attempt.get("ended_at"))
            if began is None:
                continue
            if ended is not None:
                ends.append(ended)
            held[job.pool] += job.job_class.instances * (min(ended or window_end, window_end) - began)
            summary = training.get(attempt.get("training_job_name") or "")
            if summary is None:
                continue
            created, sm_end = summary.get("CreationTime"), summary.get("TrainingEndTime")
            if created is not None:
                start_call.append(created.timestamp() - began)
            if sm_end is not None and ended is not None:
                scheduler_lag.append(ended - sm_end.timestamp())
                lag_window[int((sm_end.timestamp() - run.t0) // 10)].append(ended - sm_end.timestamp())
        if record.get("state") == "completed":
            completed[job.job_class.name] += 1
            work[job.pool] += job.job_class.instances * job.job_class.seconds
        submitted = _time(record.get("submitted_at"))
        first = _time(attempts[0].get("started_at")) if attempts else None
        if submitted is None:
            continue
        if first is None:
            waiting[job.job_class.name].append(window_end - submitted)
            continue
        admission[job.job_class.name].append(first - submitted)
        from_arrival[job.job_class.name].append(first - (run.t0 + job.offset))
        per_window[int(job.offset // 10)][job.job_class.name].append(first - submitted)
    wall = (max(ends) - run.t0) if run.finished and ends else None
    observed = wall if wall is not None else window_end - run.t0
    capacity = INSTANCES_PER_POOL * observed
    usage = {pool: held[pool] / capacity for pool in pools}
    work_usage = {pool: work[pool] / capacity for pool in pools}
    admitted = sum(len(values) for values in admission.values())
    submit_lag = [job.answered - job.offset for job in answered if job.answered is not None]
    submit_call = [job.answered - job.sent for job in answered if job.answered is not None and job.sent is not None]
    windows = []
    for window in sorted(set(per_window) | set(lag_window)):
        row: dict[str, Any] = {"window_s": [window * 10, window * 10 + 10]}
        for job_class in CLASSES:
            values = per_window[window].get(job_class.name, [])
            row[f"mean_tta_{job_class.name}_s"] = statistics.fmean(values) if values else None
        lags = lag_window.get(window, [])
        row["mean_scheduler_lag_s"] = statistics.fmean(lags) if lags else None
        row["max_scheduler_lag_s"] = max(lags) if lags else None
        windows.append(row)
    unsubmitted: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        if job.name not in seen and run.t0 + job.offset < window_end:
            unsubmitted[job.job_class.name].append(window_end - (run.t0 + job.offset))
    per_class = {}
    for job_class in CLASSES:
        name = job_class.name
        both = admission[name] + waiting[name] + unsubmitted[name]
        per_class[name] = {
            "jobs": sum(1 for job in jobs if job.job_class.name == job_class.name),
            "submitted": sum(1 for job in answered if job.job_class.name == job_class.name and not job.error),
            "admitted": len(admission[name]),
            "completed": completed[name],
            "waiting_at_end": len(waiting[name]),
            "not_in_queue_at_end": len(unsubmitted[name]),
            "restarts": restarts[name],
            "time_to_admission_s": _stats(admission[name]),
            "mean_time_to_admission_lower_bound_s": statistics.fmean(both) if both else None,
            "time_from_scheduled_arrival_to_admission_s": _stats(from_arrival[name]),
        }
    return {
        "jobs": len(jobs),
        "jobs_submitted": sum(1 for job in answered if not job.error),
        "jobs_read_back": len(seen),
        "states": dict(states),
        "submit_errors": [f"{job.name}: {job.error}" for job in jobs if job.error][:20],
        "submit_error_count": sum(job.error is not None for job in jobs),
        "finished": run.finished,
        "timed_out": run.timed_out,
        "wall_s": wall,
        "observed_s": observed,
        "jobs_admitted": admitted,
        "admissions_per_s": admitted / observed if observed else None,
        "attempts_started": attempts_started,
        "attempts_per_s": attempts_started / observed if observed else None,
        "classes": per_class,
        "usage_by_pool": usage,
        "usage_mean": statistics.fmean(usage.values()) if usage else None,
        "work_usage_by_pool": work_usage,
        "work_usage_mean": statistics.fmean(work_usage.values()) if work_usage else None,
        "submit_lag_s": _stats(submit_lag),
        "submit_call_s": _stats(submit_call),
        "scheduler_lag_s": _stats(scheduler_lag),
        "start_call_s": _stats(start_call),
        "windows": windows,
        "scheduler_invocations": _scheduler_figures(child, run, observed),
    }


def _scheduler_figures(child: dict[str, Any] | None, run: Run, observed: float) -> dict[str, Any]:
    if child is None:
        return {"observed": False, "why": "the stack process wrote no figures"}
    end = run.t0 + observed
    calls = [call for call in child.get("invocations", []) if run.t0 <= call["at"] < end]
    if not child.get("instrumented") or not calls:
        wrapped = ", ".join(child.get("instrumented") or []) or "none found"
        return {"observed": False, "why": f"no instrumented handler was called (instrumented: {wrapped})"}
    durations = [call["seconds"] for call in calls]
    kinds = Counter(kind for call in calls for kind in call["kinds"])
    lags = [lag for call in calls for lag in call["lags"]]
    passes = [call["passes"] for call in calls if isinstance(call.get("passes"), int)]
    return {
        "observed": True,
        "invocations": len(calls),
        "passes": sum(passes) if passes else None,
        "events_by_source": dict(kinds),
        "invocations_by_module": dict(Counter(call.get("module", "scheduler") for call in calls)),
        "invocation_s": _stats(durations),
        "busy_fraction": sum(min(call["at"] + call["seconds"], end) - call["at"] for call in calls) / (end - run.t0),
        "skipped_busy": sum(1 for call in calls if call.get("busy")),
        "sagemaker_event_age_s": _stats(lags),
        "stack_cpu_seconds": child.get("cpu_seconds"),
        "stack_wall_seconds": child.get("wall_seconds"),
    }


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def print_report(result: dict[str, Any], pools: list[str], comparable: bool = True) -> None:
    """`comparable` False (a smoke test with fewer jobs per pool): no verdicts against Kueue."""
    wall, observed = result["wall_s"], result["observed_s"]
    finished = result["finished"]
    by_priority = sorted(CLASSES, key=lambda item: -item.priority)
    if not finished:
        print(
            f"NOT FINISHED: gave up {observed:.0f} s after the first arrival with "
            f"{result['jobs'] - result['states'].get('completed', 0)} of {result['jobs']} jobs not completed; "
            "the figures below cover that window.\n"
        )
    wall_cell = _fmt(wall) if finished else f"> {observed:.0f} (not finished)"
    usage, work_usage = result["usage_mean"], result["work_usage_mean"]
    rows = [
        ["wall time (s)", wall_cell, _fmt(KUEUE["wall_s"], 0), _verdict(finished and wall <= KUEUE["wall_s"])],
        ["jobs admitted per second", _fmt(result["admissions_per_s"], 2), "-", ""],
        ["attempts started per second", _fmt(result["attempts_per_s"], 2), "-", ""],
        ["mean usage per pool, held (%)", _fmt(usage and usage * 100), "58.7", ""],
        ["mean usage per pool, work only (%)", _fmt(work_usage and work_usage * 100), "-", ""],
    ]
    for job_class in by_priority:
        figures = result["classes"][job_class.name]
        theirs = KUEUE["mean_time_to_admission_s"][job_class.name]
        ours = figures["time_to_admission_s"]["mean"]
        if figures["admitted"] < figures["jobs"]:
            bound = figures["mean_time_to_admission_lower_bound_s"]
            cell, verdict = (f"> {bound:.1f}" if bound is not None else "-"), _verdict(False)
        else:
            cell, verdict = _fmt(ours), _verdict(ours is not None and ours < theirs)
        rows.append([f"mean time to admission, {job_class.name} (s)", cell, _fmt(theirs), verdict])
    if not comparable:
        rows = [[*row[:3], "-" if row[3] else ""] for row in rows]
    print(
        tabulate(rows, headers=["metric", "smq", "Kueue baseline", "target"], tablefmt="github", disable_numparse=True)
    )

    print("\nPer class (seconds; time to admission = submitted_at to the first start, of the jobs admitted):\n")
    class_rows = []
    for job_class in by_priority:
        figures = result["classes"][job_class.name]
        tta = figures["time_to_admission_s"]
        class_rows.append(
            [
                job_class.name,
                figures["jobs"],
                figures["submitted"],
                figures["admitted"],
                figures["completed"],
                figures["waiting_at_end"],
                figures["not_in_queue_at_end"],
                _fmt(tta["mean"]),
                _fmt(tta["median"]),
                _fmt(tta["p90"]),
                _fmt(tta["max"]),
                _fmt(figures["time_from_scheduled_arrival_to_admission_s"]["mean"]),
                figures["restarts"],
            ]
        )
    headers = ["class", "jobs", "submitted", "admitted", "completed", "pending at end", "not yet in the queue",
               "mean", "median", "p90", "max", "mean from scheduled arrival", "restarts"]  # fmt: skip
    print(tabulate(class_rows, headers=headers, tablefmt="github", disable_numparse=True))

    print(f"\nPer pool (capacity {INSTANCES_PER_POOL}; usage over {observed:.0f} s):\n")
    pool_rows = [
        [pool, _fmt(result["usage_by_pool"][pool] * 100), _fmt(result["work_usage_by_pool"][pool] * 100)]
        for pool in pools
    ]
    print(tabulate(pool_rows, headers=["pool", "usage held (%)", "usage work only (%)"], tablefmt="github"))

    print(
        "\nOver the run, by 10 s window: mean time to admission of the jobs that arrived in it (those admitted);"
        "\nscheduler lag of the attempts SageMaker ended in it (the queue recording the end - SageMaker ending it):\n"
    )
    window_rows = [
        [
            f"{row['window_s'][0]}-{row['window_s'][1]}",
            *(_fmt(row[f"mean_tta_{job_class.name}_s"]) for job_class in by_priority),
            _fmt(row["mean_scheduler_lag_s"]),
            _fmt(row["max_scheduler_lag_s"]),
        ]
        for row in result["windows"]
    ]
    headers = ["window (s)", "tta large", "tta medium", "tta small", "mean scheduler lag", "max scheduler lag"]
    print(tabulate(window_rows, headers=headers, tablefmt="github", disable_numparse=True))

    print("\nPipeline (seconds):\n")
    pipeline = [
        ["POST /add-job answered, after its scheduled arrival", *_quartet(result["submit_lag_s"])],
        ["POST /add-job round trip", *_quartet(result["submit_call_s"])],
        ["start decision to CreateTrainingJob landing", *_quartet(result["start_call_s"])],
        ["SageMaker ending an attempt to the queue recording it", *_quartet(result["scheduler_lag_s"])],
    ]
    scheduler = result["scheduler_invocations"]
    if scheduler.get("observed"):
        pipeline.append(["one scheduler invocation", *_quartet(scheduler["invocation_s"])])
        pipeline.append(["age of a SageMaker event when handled", *_quartet(scheduler["sagemaker_event_age_s"])])
    headers = ["", "mean", "median", "p90", "max"]
    print(tabulate(pipeline, headers=headers, tablefmt="github", disable_numparse=True))
    if scheduler.get("observed"):
        cpu, span = scheduler["stack_cpu_seconds"], scheduler["stack_wall_seconds"]
        busy = scheduler["busy_fraction"]
        print(
            f"\nscheduler: {scheduler['invocations']} invocations"
            + (f", {scheduler['passes']} passes" if scheduler["passes"] is not None else " (passes not reported)")
            + ", busy "
            f"{_fmt(busy and busy * 100, 0)} % of the {observed:.0f} s; events by source "
            f"{scheduler['events_by_source']}; the stack process used {_fmt(cpu, 0)} CPU s in {_fmt(span, 0)} s "
            f"({_fmt(cpu / span * 100 if cpu and span else None, 0)} % of one core)"
        )
    else:
        print(f"\nscheduler invocations not observed: {scheduler.get('why')}")
    print(
        f"\njobs {result['jobs']}: submitted {result['jobs_submitted']}, read back {result['jobs_read_back']}, "
        f"states {result['states']}, submit errors {result['submit_error_count']}"
    )
    for error in result["submit_errors"][:5]:
        print(f"  submit error: {error}")


def _quartet(stats: dict[str, Any]) -> list[str]:
    return [_fmt(stats.get(key), 2) for key in ("mean", "median", "p90", "max")]


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


# ---------------------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--scale", type=float, help="fraction of Kueue's 30 pools (default 0.1: 3 pools)")
    size.add_argument("--pools", type=int, help="number of pools (overrides --scale)")
    parser.add_argument(
        "--job-scale", type=float, default=1.0, help="fraction of each class's jobs per pool (below 1: a smoke test)"
    )
    parser.add_argument("--senders", type=int, default=8, help="threads sending POST /add-job")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="give up this many seconds after the first arrival"
    )
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between GET /pools")
    parser.add_argument("--reconcile-seconds", type=float, default=30.0, help="the stack's reconciliation period")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--keep-workdir", action="store_true", help="keep the stack's temporary workdir")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--capacity", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.serve:
        serve(args.serve, json.loads(args.capacity), args.reconcile_seconds)
        return 0
    count = args.pools if args.pools is not None else max(1, round(KUEUE_POOLS * (args.scale or 0.1)))
    pools = instance_types(count)
    job_classes = classes(args.job_scale)
    jobs = schedule(pools, job_classes)
    capacity = dict.fromkeys(pools, INSTANCES_PER_POOL)
    default = args.pools is None and args.scale is None
    print(
        f"## Kueue-shaped load: {count} pool{'s' if count != 1 else ''} x {INSTANCES_PER_POOL} instances "
        f"({count / KUEUE_POOLS:.2f} of Kueue's {KUEUE_POOLS}{', the default on this 2-core machine' if default else ''}), "
        f"{len(jobs)} jobs; per pool "
        + ", ".join(
            f"{c.count} {c.name} ({c.instances} inst, {c.seconds} s, p{c.priority}, every {c.interval * 1000:.0f} ms)"
            for c in job_classes
        )
        + (f" (--job-scale {args.job_scale}: a smoke test, not Kueue's load)" if args.job_scale != 1 else "")
        + f"; gives up {args.timeout:.0f} s after the first arrival; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}\n",
        flush=True,
    )
    load_start = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="smq-bench-kueue-"))
    log_path = workdir / "stack.log"
    command = [
        sys.executable, str(Path(__file__).resolve()), "--serve", str(workdir), "--capacity", json.dumps(capacity),
        "--reconcile-seconds", str(args.reconcile_seconds),
    ]  # fmt: skip
    child_stats: dict[str, Any] | None = None
    with log_path.open("w") as log:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            ready = _wait_ready(workdir, child, log_path)
            print(f"stack up at {ready['api_url']} (workdir {workdir})", flush=True)
            run = Run()
            run.monotonic0, run.t0 = time.monotonic() + 1.0, time.time() + 1.0
            submitter = threading.Thread(target=submit_all, args=(ready, jobs, args.senders, run), daemon=True)
            submitter.start()
            watch(ready, jobs, run, args.timeout, args.poll, workdir)
            run.stop.set()
            elapsed = time.monotonic() - run.monotonic0
            print(f"{'all jobs finished' if run.finished else 'gave up'} at t={elapsed:.1f}s; reading back", flush=True)
            run.read_at = time.time()
            _pause(child)
            records = read_jobs(ready)
            training = read_training_jobs(ready)
        finally:
            if child.stdin is not None:
                child.stdin.close()
            try:
                child.wait(timeout=120)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGTERM)
                child.wait(timeout=30)
    if (workdir / "stats.json").exists():
        child_stats = json.loads((workdir / "stats.json").read_text())
    result = figures(jobs, records, training, run, pools, child_stats)
    print()
    print_report(result, pools, comparable=args.job_scale == 1)
    print(f"load average (1 min) at the start {load_start:.2f}, at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "benchmark": "kueue_load",
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "pools": pools,
            "instances_per_pool": INSTANCES_PER_POOL,
            "classes": [asdict(job_class) for job_class in job_classes],
            "job_scale": args.job_scale,
            "timeout_s": args.timeout,
            "load_average_at_start": load_start,
            "load_average_at_end": os.getloadavg()[0],
            "default_size": default,
            "senders": args.senders,
            "kueue_baseline": KUEUE,
            "result": result,
            "progress": run.polls,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    if args.keep_workdir:
        print(f"workdir kept: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _pause(child: subprocess.Popen[bytes]) -> None:
    """Ask the stack process to hold further scheduler invocations (the one running finishes)."""
    if child.stdin is not None:
        try:
            child.stdin.write(b"pause\n")
            child.stdin.flush()
        except OSError:
            pass


def _wait_ready(workdir: Path, child: subprocess.Popen[bytes], log_path: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if (workdir / "ready.json").exists():
            return json.loads((workdir / "ready.json").read_text())
        if child.poll() is not None:
            raise SystemExit(f"the stack process exited ({child.returncode}):\n{log_path.read_text()[-4000:]}")
        time.sleep(0.2)
    raise SystemExit(f"the stack did not start in 180 s:\n{log_path.read_text()[-4000:]}")


if __name__ == "__main__":
    sys.exit(main())
