"""A workload to replay: one JSON object per line (JSON Lines), validated with errors that name the
line and the field, so a user can fix a trace of thousands of jobs without guessing.

    {"name": "bert-1", "submit_s": 0, "priority": 2, "pool": "ml.p5.48xlarge", "instances": 2,
     "duration_s": 7200, "team": "nlp", "checkpoint_every_s": 600, "stop_s": 60,
     "interruptions_s": [1800]}

`duration_s` is the training the job needs once running. `checkpoint_every_s`: the job saves its
progress every that many seconds of training, and a stop or an interruption loses what it did since
its last save (absent: it never saves, and loses everything). `stop_s` is how long a stop takes
(default 60). `interruptions_s` makes the job managed spot: SageMaker interrupts it when it has
trained that many seconds (redone work counts), each time once. `max_runtime_s` is its request's
MaxRuntimeInSeconds, at least `duration_s` (SageMaker would stop it sooner): the ceiling that start
estimates fall back on when they know nothing better.

`purchase` is "spot" (spot first, on demand allowed) or "spot_only": the job is managed spot, placed
by the `spot` section of the configuration (absent: on demand, or managed spot when it has
`interruptions_s`); SageMaker interrupts it only while it runs on spot. A spot job fits where its
type's on-demand pool or its spot pool holds it (an account may buy a type only on spot).
`keep_alive_s` is its request's KeepAlivePeriodInSeconds: when it ends, its instances stay warm
(held in its pool, billed) until then, unless a matching job reuses them or the queue ends the warm
pool; jobs with the same `warm_key` match (no key: the job matches none). SageMaker keeps no warm
pool for spot or flexible jobs, and reuses one only for a job that gives a keep-alive, so a trace
refuses those.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from smq_lambda.domain.placements.purchase import spot_pool
from smq_lambda.replay.trace_job import DEFAULT_STOP_S, TraceJob, TracePreference

FIELDS = frozenset(
    {
        "name",
        "submit_s",
        "priority",
        "pool",
        "instances",
        "preferences",
        "duration_s",
        "team",
        "checkpoint_every_s",
        "stop_s",
        "interruptions_s",
        "max_runtime_s",
        "purchase",
        "keep_alive_s",
        "warm_key",
    }
)
PURCHASES = ("spot", "spot_only")
PREFERENCE_FIELDS = frozenset({"pool", "instances", "duration_s"})


class TraceError(ValueError):
    """A trace line that cannot be replayed; the message names the line and the field."""

    def __init__(self, line: int, field_name: str | None, problem: str) -> None:
        where = f"line {line}" + (f", field {field_name!r}" if field_name else "")
        super().__init__(f"{where}: {problem}")
        self.line = line
        self.field_name = field_name


def parse_trace(lines: Iterable[str]) -> list[TraceJob]:
    """The jobs of a JSON Lines trace, in file order; blank lines are skipped. Raises TraceError."""
    jobs: list[TraceJob] = []
    seen: set[str] = set()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(number, None, f"not JSON ({exc.msg} at column {exc.colno})") from None
        job = parse_line(document, number)
        if job.name in seen:
            raise TraceError(number, "name", f"{job.name!r} appears twice in the trace")
        seen.add(job.name)
        jobs.append(job)
    if not jobs:
        raise TraceError(0, None, "the trace has no jobs")
    return jobs


def parse_line(document: Any, line: int) -> TraceJob:
    if not isinstance(document, dict):
        raise TraceError(line, None, f"must be a JSON object, not {type(document).__name__}")
    unknown = sorted(set(document) - FIELDS)
    if unknown:
        raise TraceError(line, unknown[0], f"unknown field (known: {', '.join(sorted(FIELDS))})")
    fields = _Fields(document, line)
    name, submit_s, priority = fields.text("name"), fields.seconds("submit_s", minimum=0.0), fields.integer("priority")
    if "preferences" in document:
        first, *alternatives = _preferences(document, line, fields.seconds("duration_s", minimum=0.0, positive=True))
    else:
        pool, instances = fields.text("pool"), fields.integer("instances", minimum=1)
        duration_s = fields.seconds("duration_s", minimum=0.0, positive=True)
        first, alternatives = TracePreference(pool, instances, duration_s), []
    job = TraceJob(
        name=name,
        submit_s=submit_s,
        priority=priority,
        pool=first.pool,
        instances=first.instances,
        duration_s=first.duration_s,
        alternatives=tuple(alternatives),
        team=fields.text("team") if "team" in document else None,
        checkpoint_every_s=(
            fields.seconds("checkpoint_every_s", minimum=0.0, positive=True)
            if "checkpoint_every_s" in document
            else None
        ),
        stop_s=fields.seconds("stop_s", minimum=0.0) if "stop_s" in document else DEFAULT_STOP_S,
        interruptions_s=fields.interruptions(),
        max_runtime_s=fields.integer("max_runtime_s", minimum=1) if "max_runtime_s" in document else None,
        purchase=fields.choice("purchase", PURCHASES) if "purchase" in document else None,
        keep_alive_s=fields.integer("keep_alive_s", minimum=0) if "keep_alive_s" in document else 0,
        warm_key=fields.text("warm_key") if "warm_key" in document else None,
        line=line,
    )
    _check_warm_pool(job)
    longest = max([job.duration_s, *(preference.duration_s for preference in job.alternatives)])
    if job.max_runtime_s is not None and job.max_runtime_s < longest:
        raise TraceError(line, "max_runtime_s", f"must be at least duration_s ({longest:g}), not {job.max_runtime_s}")
    return job


def _check_warm_pool(job: TraceJob) -> None:
    """SageMaker's own limits on warm pools (domain/warm/warm_match.py)."""
    if job.warm_key is not None and not job.keep_alive_s:
        raise TraceError(
            job.line, "warm_key", "needs keep_alive_s: SageMaker reuses a warm pool only for a job that keeps one"
        )
    if not job.keep_alive_s:
        return
    if job.is_spot:
        field_name = "purchase" if job.purchase is not None else "interruptions_s"
        raise TraceError(job.line, "keep_alive_s", f"SageMaker keeps no warm pool for a spot job (see {field_name!r})")
    if job.alternatives:
        raise TraceError(job.line, "keep_alive_s", "SageMaker keeps no warm pool for a job with preferences")


def _preferences(document: Mapping[str, Any], line: int, duration_s: float) -> list[TracePreference]:
    """A flexible job's preferences, in order; each without `duration_s` trains the job's."""
    given = [name for name in ("pool", "instances") if name in document]
    if given:
        raise TraceError(line, given[0], "a job gives either 'preferences' or 'pool' and 'instances', not both")
    value = document["preferences"]
    if not isinstance(value, list) or not value:
        raise TraceError(line, "preferences", f"must be a non-empty list of preferences, not {value!r}")
    preferences: list[TracePreference] = []
    for index, item in enumerate(value):
        where = f"preferences[{index}]"
        if not isinstance(item, dict):
            raise TraceError(line, where, f"must be a JSON object, not {type(item).__name__}")
        unknown = sorted(set(item) - PREFERENCE_FIELDS)
        if unknown:
            known = ", ".join(sorted(PREFERENCE_FIELDS))
            raise TraceError(line, f"{where}.{unknown[0]}", f"unknown field (known: {known})")
        fields = _Fields(item, line, prefix=f"{where}.")
        preference = TracePreference(
            pool=fields.text("pool"),
            instances=fields.integer("instances", minimum=1),
            duration_s=fields.seconds("duration_s", minimum=0.0, positive=True) if "duration_s" in item else duration_s,
        )
        if any((earlier.pool, earlier.instances) == (preference.pool, preference.instances) for earlier in preferences):
            raise TraceError(line, where, f"repeats {preference.instances} × {preference.pool}")
        preferences.append(preference)
    return preferences


class _Fields:
    """Typed reads of one trace line's members, each failing with the line and the member."""

    def __init__(self, document: Mapping[str, Any], line: int, prefix: str = "") -> None:
        self._document = document
        self._line = line
        self._prefix = prefix
        """Where the members are, for the errors (`preferences[1].`: a preference's)."""

    def _error(self, name: str, problem: str) -> TraceError:
        return TraceError(self._line, self._prefix + name, problem)

    def _get(self, name: str) -> Any:
        if name not in self._document:
            raise self._error(name, "is required")
        return self._document[name]

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str) or not value.strip():
            raise self._error(name, f"must be a non-empty string, not {value!r}")
        return value

    def integer(self, name: str, minimum: int | None = None) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._error(name, f"must be an integer, not {value!r}")
        if minimum is not None and value < minimum:
            raise self._error(name, f"must be at least {minimum}, not {value}")
        return value

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        value = self._get(name)
        if value not in choices:
            raise self._error(name, f"must be one of {', '.join(choices)}, not {value!r}")
        return str(value)

    def seconds(self, name: str, *, minimum: float, positive: bool = False) -> float:
        return self._number(name, self._get(name), minimum=minimum, positive=positive)

    def interruptions(self) -> tuple[float, ...]:
        name = "interruptions_s"
        value = self._document.get(name, [])
        if not isinstance(value, list):
            raise self._error(name, f"must be a list of seconds, not {value!r}")
        return tuple(sorted(self._number(name, item, minimum=0.0, positive=True) for item in value))

    def _number(self, name: str, value: Any, *, minimum: float, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self._error(name, f"must be a number of seconds, not {value!r}")
        if value < minimum or (positive and value <= 0):
            bound = "greater than 0" if positive else f"at least {minimum:g}"
            raise self._error(name, f"must be {bound}, not {value!r}")
        return float(value)


def check_pools(jobs: Iterable[TraceJob], pools: Mapping[str, int]) -> None:
    """Every pool a job may run in (each preference's) is configured and large enough (a spot job's:
    its on-demand pool or its spot pool), or TraceError names the first that is not."""
    for job in jobs:
        places = (
            [("", job.pool, job.instances)]
            if not job.alternatives
            else [
                (f"preferences[{index}].", preference.pool, preference.instances)
                for index, preference in enumerate(job.preferences)
            ]
        )
        for where, pool, instances in places:
            if pool not in pools:
                configured = ", ".join(sorted(pools)) or "none"
                raise TraceError(
                    job.line, f"{where}pool", f"{pool!r} is not a configured pool (configured: {configured})"
                )
            room = _room(job, pool, pools)
            if instances > room:
                raise TraceError(job.line, f"{where}instances", f"{instances} is more than {pool} holds ({room})")


def _room(job: TraceJob, pool: str, pools: Mapping[str, int]) -> int:
    """The most instances `job` may hold at `pool`: a spot job may also run in the type's spot pool,
    which may hold more than its on-demand pool (0 where the account buys only spot)."""
    spot = pools.get(spot_pool(pool), 0) if job.is_spot else 0
    return max(pools[pool], spot)


def write_trace(jobs: Iterable[TraceJob]) -> str:
    """The JSON Lines text of `jobs` (what `parse_trace` reads back)."""
    return "".join(json.dumps(job.to_json()) + "\n" for job in jobs)
