"""Seeded traces to simulate (`smq simulate generate KIND`), each with the pools it was made for.

- `mixed`: bursty, mixed-priority work of three teams over two pools: bursts of submissions (a
  team's sweep, a deadline) at random times, sizes from one instance to a whole pool, durations
  lognormal around two hours, every job checkpointing every 10 to 30 minutes; about 0.9 of the
  capacity offered over the arrival window.
- `seed`: the article's scenario: capacity 2, four one-instance jobs of priorities 1, 2, 1, 3
  submitted 20 seconds apart.
- `kueue`: the Kueue-shaped load of bench/bench_kueue_load.py: per pool of 20 instances, 350 small
  (1 instance, 0.2 s, priority 50, one every 100 ms), 100 medium (5, 0.5 s, 100, every 500 ms), 50
  large (20, 1 s, 200, every 1.2 s). Simulate it with `--start-s 0`: its jobs are shorter than any
  SageMaker start.
- `spot`: managed-spot work over one pool: two jobs in three are spot and interrupted up to five
  times, all checkpointing every 15 minutes.
- `teams`: two teams, vision and nlp, on one pool of 8 with quotas of 4 each (both lend and
  borrow). Rounds 5 to 8 hours apart: one team bursts (4 to 7 jobs within ten minutes), the other
  follows 15 minutes to an hour later; the teams take turns to go first. Jobs of one priority, 1,
  2 or 4 instances, lognormal around an hour, checkpointing every 15 minutes. So each team
  sometimes has more work than its quota, sometimes none, and a burst often arrives while the
  other team runs on all of the pool. Its configuration is the full document with the quotas;
  without "quotas" it is the queue before teams.
- `mixed-families` and `teams-families`: the same shapes (pools, teams, sizes, arrival pattern,
  load, quotas) made of job families, for the start estimates to learn from. A family is one
  team's recurring job (`vision-vit-b`, `nlp-bert-large`): one pool and size, its own typical
  duration (lognormal around the workload's: two hours for mixed, one for teams) and its own
  spread (each duration drawn lognormal around the typical one with a sigma of 0.1 to 0.4), and a
  MaxRuntimeInSeconds of three typical durations rounded up to the hour (as a user sets a
  generous ceiling). A burst is a sweep: several jobs of one family at one priority. Jobs are
  named `<family>-<n>`, n counting the family's jobs; durations are clamped to the ceiling.
  Different generators from `mixed` and `teams`, whose traces stay as they were.
- `two-types` and `warm-pools`: placement's workloads (placement_workloads.py).
- `everything`: every feature at once (teams of each sharing mode, spot, flexible and planned
  jobs, warm pools, budgets; everything_workload.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from smq_lambda.replay.trace_job import TraceJob

from smq.simulate.everything_workload import everything
from smq.simulate.placement_workloads import two_types, warm_pools
from smq.simulate.workload import HOUR, Workload


def mixed(seed: int, jobs: int = 300) -> Workload:
    rng = random.Random(seed)
    pools = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 16}
    sizes = {"ml.p5.48xlarge": (1, 1, 2, 2, 4, 8), "ml.g5.12xlarge": (1, 2, 2, 4, 4, 8, 16)}
    teams = ("vision", "nlp", "speech")
    drafts = []
    for number in range(jobs):
        pool = rng.choice(list(pools))
        priority = rng.choices((0, 1, 2, 3), (0.5, 0.3, 0.15, 0.05))[0]
        duration = min(max(rng.lognormvariate(0, 0.9) * 2 * HOUR / 1.5, 300.0), 24 * HOUR)
        drafts.append((f"job-{number:04d}", pool, rng.choice(sizes[pool]), priority, round(duration)))
    offered = sum(size * duration for _, _, size, _, duration in drafts)
    window = offered / (sum(pools.values()) * 0.9)
    arrivals = _bursts(rng, len(drafts), window)
    trace = [
        TraceJob(
            name=name,
            submit_s=at,
            priority=priority,
            pool=pool,
            instances=size,
            duration_s=float(duration),
            team=rng.choice(teams),
            checkpoint_every_s=float(rng.choice((600, 900, 1800))),
            stop_s=float(rng.randint(30, 120)),
        )
        for (name, pool, size, priority, duration), at in zip(drafts, arrivals, strict=True)
    ]
    return Workload(trace, pools)


def _bursts(rng: random.Random, count: int, window: float) -> list[float]:
    """`count` submission times over about `window` seconds, in bursts of 1 to 15 jobs submitted
    within ten minutes of each other."""
    times: list[float] = []
    while len(times) < count:
        start = rng.uniform(0, window)
        times.extend(start + rng.uniform(0, 600) for _ in range(rng.randint(1, 15)))
    return sorted(round(moment, 1) for moment in times[:count])


def seed_scenario(seed: int) -> Workload:
    del seed
    priorities = {"job1": 1, "job2": 2, "job3": 1, "job4": 3}
    durations = {"job1": 2 * HOUR, "job2": HOUR, "job3": 2 * HOUR, "job4": HOUR}
    trace = [
        TraceJob(name, 20.0 * index, priorities[name], "ml.p5.48xlarge", 1, durations[name], checkpoint_every_s=600.0)
        for index, name in enumerate(priorities)
    ]
    return Workload(trace, {"ml.p5.48xlarge": 2})


KUEUE_CLASSES = (("small", 350, 1, 0.2, 50, 0.1), ("medium", 100, 5, 0.5, 100, 0.5), ("large", 50, 20, 1.0, 200, 1.2))
"""name, jobs per pool, instances, seconds, priority, seconds between arrivals."""


def kueue(seed: int, pools: int = 3) -> Workload:
    del seed
    names = [f"ml.kueue{number:02d}.xlarge" for number in range(pools)]
    trace = [
        TraceJob(f"{pool}-{name}-{index:03d}", round(index * every, 3), priority, pool, size, seconds)
        for pool in names
        for name, count, size, seconds, priority, every in KUEUE_CLASSES
        for index in range(count)
    ]
    return Workload(sorted(trace, key=lambda job: (job.submit_s, job.name)), dict.fromkeys(names, 20))


def spot(seed: int, jobs: int = 120) -> Workload:
    rng = random.Random(seed)
    trace = []
    at = 0.0
    for number in range(jobs):
        duration = round(min(max(rng.lognormvariate(0, 0.7) * 3 * HOUR / 1.3, 600.0), 24 * HOUR))
        interruptions: tuple[float, ...] = ()
        if rng.random() < 2 / 3:
            interruptions = tuple(sorted(float(rng.randint(60, int(duration))) for _ in range(rng.randint(0, 5))))
        trace.append(
            TraceJob(
                name=f"spot-{number:04d}",
                submit_s=round(at, 1),
                priority=rng.choice((0, 0, 1, 2)),
                pool="ml.p4d.24xlarge",
                instances=rng.choice((1, 1, 2, 4)),
                duration_s=float(duration),
                checkpoint_every_s=900.0,
                interruptions_s=interruptions,
            )
        )
        at += rng.expovariate(1 / 1500)
    return Workload(trace, {"ml.p4d.24xlarge": 8})


TEAMS_POOL = "ml.p5.48xlarge"
TEAM_NAMES = ("vision", "nlp")


def teams(seed: int, jobs: int = 120) -> Workload:
    rng = random.Random(seed)
    pools = {TEAMS_POOL: 8}
    trace: list[TraceJob] = []
    at, round_number = 0.0, 0
    while len(trace) < jobs:
        first = round_number % len(TEAM_NAMES)
        order = TEAM_NAMES[first:] + TEAM_NAMES[:first]
        for team, offset in zip(order, (0.0, rng.uniform(0.25 * HOUR, HOUR)), strict=True):
            for _ in range(min(rng.randint(4, 7), jobs - len(trace))):
                trace.append(_team_job(rng, team, len(trace), at + offset))
        at += rng.uniform(5 * HOUR, 8 * HOUR)
        round_number += 1
    quotas = {team: {"instances": {TEAMS_POOL: 4}, "sharing": "lend_and_borrow"} for team in TEAM_NAMES}
    document = {"pools": pools, "quotas": quotas}
    return Workload(sorted(trace, key=lambda job: (job.submit_s, job.name)), pools, document)


def _team_job(rng: random.Random, team: str, number: int, burst_s: float) -> TraceJob:
    return TraceJob(
        name=f"{team}-{number:04d}",
        submit_s=round(burst_s + rng.uniform(0, 600), 1),
        priority=0,
        pool=TEAMS_POOL,
        instances=rng.choice((1, 2, 2, 4)),
        duration_s=float(round(min(max(rng.lognormvariate(0, 0.6) * HOUR, 600.0), 4 * HOUR))),
        team=team,
        checkpoint_every_s=900.0,
    )


MODELS = ("a", "b", "c", "d")
"""Families per team are named after them: `vision-a`, `nlp-c` (names end in no digits, so the
counter `-<n>` is the only trailing number)."""
MIN_DURATION_S = 300.0


@dataclass(frozen=True)
class Family:
    """One team's recurring job: where it runs, its typical duration and how much it varies."""

    name: str
    team: str
    pool: str
    instances: int
    typical_s: float
    sigma: float
    """Of the lognormal each duration is drawn from, around `typical_s`."""

    @property
    def max_runtime_s(self) -> int:
        """Three typical durations rounded up to the hour: a generous ceiling, as users set one."""
        return math.ceil(3 * self.typical_s / HOUR) * int(HOUR)

    def duration(self, rng: random.Random) -> float:
        drawn = self.typical_s * rng.lognormvariate(0, self.sigma)
        return float(round(min(max(drawn, MIN_DURATION_S), self.max_runtime_s)))


def _families(
    rng: random.Random, team_names: tuple[str, ...], sizes: dict[str, tuple[int, ...]], typical_s: float, spread: float
) -> list[Family]:
    """Four families per team, each on a pool and size of `sizes`, typical durations lognormal
    (sigma `spread`) around `typical_s`."""
    return [
        Family(
            name=f"{team}-{model}",
            team=team,
            pool=(pool := rng.choice(list(sizes))),
            instances=rng.choice(sizes[pool]),
            typical_s=min(max(rng.lognormvariate(0, spread) * typical_s, 2 * MIN_DURATION_S), 24 * HOUR),
            sigma=rng.uniform(0.1, 0.4),
        )
        for team in team_names
        for model in MODELS
    ]


@dataclass(frozen=True)
class _Draft:
    """A family's job before it is named (names count a family's jobs in submission order)."""

    submit_s: float
    family: Family
    priority: int
    duration_s: float
    checkpoint_every_s: float


def mixed_families(seed: int, jobs: int = 300) -> Workload:
    rng = random.Random(seed)
    pools = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 16}
    sizes = {"ml.p5.48xlarge": (1, 1, 2, 2, 4, 8), "ml.g5.12xlarge": (1, 2, 2, 4, 4, 8, 16)}
    families = _families(rng, ("vision", "nlp", "speech"), sizes, 2 * HOUR / 1.5, 0.9)
    sweeps: list[tuple[Family, int, list[float]]] = []
    while (count := sum(len(durations) for _, _, durations in sweeps)) < jobs:
        family = rng.choice(families)
        priority = rng.choices((0, 1, 2, 3), (0.5, 0.3, 0.15, 0.05))[0]
        size = min(rng.randint(1, 15), jobs - count)
        sweeps.append((family, priority, [family.duration(rng) for _ in range(size)]))
    offered = sum(family.instances * sum(durations) for family, _, durations in sweeps)
    window = offered / (sum(pools.values()) * 0.9)
    drafts = []
    for family, priority, durations in sweeps:
        start = rng.uniform(0, window)
        checkpoint_every_s = float(rng.choice((600, 900, 1800)))
        drafts += [
            _Draft(round(start + rng.uniform(0, 600), 1), family, priority, duration, checkpoint_every_s)
            for duration in durations
        ]
    return Workload(_named(rng, drafts), pools)


def teams_families(seed: int, jobs: int = 120) -> Workload:
    rng = random.Random(seed)
    pools = {TEAMS_POOL: 8}
    families = _families(rng, TEAM_NAMES, {TEAMS_POOL: (1, 2, 2, 4)}, HOUR, 0.6)
    drafts: list[_Draft] = []
    at, round_number = 0.0, 0
    while len(drafts) < jobs:
        first = round_number % len(TEAM_NAMES)
        order = TEAM_NAMES[first:] + TEAM_NAMES[:first]
        for team, offset in zip(order, (0.0, rng.uniform(0.25 * HOUR, HOUR)), strict=True):
            family = rng.choice([family for family in families if family.team == team])
            drafts += [
                _Draft(round(at + offset + rng.uniform(0, 600), 1), family, 0, family.duration(rng), 900.0)
                for _ in range(min(rng.randint(4, 7), jobs - len(drafts)))
            ]
        at += rng.uniform(5 * HOUR, 8 * HOUR)
        round_number += 1
    quotas = {team: {"instances": {TEAMS_POOL: 4}, "sharing": "lend_and_borrow"} for team in TEAM_NAMES}
    return Workload(_named(rng, drafts), pools, {"pools": pools, "quotas": quotas})


def _named(rng: random.Random, drafts: list[_Draft]) -> list[TraceJob]:
    """The jobs of `drafts` in submission order, each named `<family>-<n>`."""
    counts: dict[str, int] = {}
    jobs = []
    for draft in sorted(drafts, key=lambda draft: (draft.submit_s, draft.family.name)):
        family = draft.family
        counts[family.name] = counts.get(family.name, 0) + 1
        jobs.append(
            TraceJob(
                name=f"{family.name}-{counts[family.name]}",
                submit_s=draft.submit_s,
                priority=draft.priority,
                pool=family.pool,
                instances=family.instances,
                duration_s=draft.duration_s,
                team=family.team,
                checkpoint_every_s=draft.checkpoint_every_s,
                stop_s=float(rng.randint(30, 120)),
                max_runtime_s=family.max_runtime_s,
            )
        )
    return jobs


GENERATORS: dict[str, tuple[Callable[..., Workload], str | None]] = {
    "mixed": (mixed, "jobs"),
    "seed": (seed_scenario, None),
    "kueue": (kueue, "pools"),
    "spot": (spot, "jobs"),
    "teams": (teams, "jobs"),
    "mixed-families": (mixed_families, "jobs"),
    "teams-families": (teams_families, "jobs"),
    "two-types": (two_types, "jobs"),
    "warm-pools": (warm_pools, "jobs"),
    "everything": (everything, "jobs"),
}
"""Each generator, and the size option it takes (`--jobs` or `--pools`), if any."""
