"""Placement's seeded traces (issue 20), registered with the others in workloads.py:

- `two-types`: placement's workload (bench/bench_placement.py): a fast pool (8 × ml.p5.48xlarge)
  and a slow one (16 × ml.g5.48xlarge). A quarter of the jobs need the fast type, a quarter the
  slow one, half are flexible: n fast instances, else 2n slow ones training 1.5 times as long.
  Sizes 1, 2 or 4 (fast), durations lognormal around an hour, three priorities, checkpoints
  every 15 minutes, Poisson arrivals offering about 0.75 of the capacity when every flexible job
  runs where it prefers.
- `warm-pools`: warm pools' workload (bench/bench_warm_pools.py): one pool of 8 × ml.g5.12xlarge
  and six job families (a warm key each, 1, 2 or 4 instances), submitted as sweeps: 3 to 8 jobs of
  one family within a few minutes, each asking for a 30-minute keep-alive, durations lognormal
  around 40 minutes, checkpoints every 15 minutes, one priority; sweeps arrive as a Poisson stream
  offering about 0.8 of the capacity. Its configuration has the `warm_pools` section (at most 30
  minutes): drop it to send every keep-alive as asked.
"""

from __future__ import annotations

import random

from smq_lambda.replay.trace_job import TraceJob, TracePreference

from smq.simulate.workload import HOUR, Workload

FAST, SLOW = "ml.p5.48xlarge", "ml.g5.48xlarge"
SLOWER = 1.5
"""How much longer a flexible job trains on twice as many slow instances."""


def two_types(seed: int, jobs: int = 200) -> Workload:
    rng = random.Random(seed)
    pools = {FAST: 8, SLOW: 16}
    drafts = []
    for number in range(jobs):
        kind = rng.choice(("fast", "slow", "flexible", "flexible"))
        size = rng.choice((1, 2, 2, 4))
        duration = float(round(min(max(rng.lognormvariate(0, 0.6) * HOUR, 600.0), 8 * HOUR)))
        priority = rng.choices((0, 1, 2), (0.6, 0.3, 0.1))[0]
        drafts.append((f"{kind}-{number:04d}", kind, size, duration, priority))
    offered = sum(size * duration * (2 * SLOWER if kind == "slow" else 1) for _, kind, size, duration, _ in drafts)
    at, every = 0.0, offered / (jobs * sum(pools.values()) * 0.75)
    trace = []
    for name, kind, size, duration, priority in drafts:
        slow = TracePreference(SLOW, 2 * size, duration * SLOWER)
        first = slow if kind == "slow" else TracePreference(FAST, size, duration)
        trace.append(
            TraceJob(
                name=name,
                submit_s=round(at, 1),
                priority=priority,
                pool=first.pool,
                instances=first.instances,
                duration_s=first.duration_s,
                checkpoint_every_s=900.0,
                alternatives=(slow,) if kind == "flexible" else (),
            )
        )
        at += rng.expovariate(1 / every)
    return Workload(trace, pools)


WARM_TYPE = "ml.g5.12xlarge"
KEEP_ALIVE_S = 1800


def warm_pools(seed: int, jobs: int = 160) -> Workload:
    rng = random.Random(seed)
    pools = {WARM_TYPE: 8}
    families = [(f"family-{number}", rng.choice((1, 2, 4))) for number in range(6)]
    sweeps: list[list[tuple[str, int, float, float]]] = []
    drafted = 0
    while drafted < jobs:
        key, size = rng.choice(families)
        sweep = []
        offset = 0.0
        for _ in range(min(rng.randint(3, 8), jobs - drafted)):
            duration = float(round(min(max(rng.lognormvariate(0, 0.4) * 2 / 3 * HOUR, 600.0), 4 * HOUR)))
            sweep.append((key, size, duration, offset))
            offset += rng.uniform(0, 120)
        sweeps.append(sweep)
        drafted += len(sweep)
    offered = sum(size * duration for sweep in sweeps for _, size, duration, _ in sweep)
    at, every = 0.0, offered / (len(sweeps) * pools[WARM_TYPE] * 0.8)
    trace: list[TraceJob] = []
    for sweep in sweeps:
        for key, size, duration, offset in sweep:
            trace.append(
                TraceJob(
                    name=f"{key}-{len(trace):04d}",
                    submit_s=round(at + offset, 1),
                    priority=0,
                    pool=WARM_TYPE,
                    instances=size,
                    duration_s=duration,
                    checkpoint_every_s=900.0,
                    keep_alive_s=KEEP_ALIVE_S,
                    warm_key=key,
                )
            )
        at += rng.expovariate(1 / every)
    document = {"pools": pools, "warm_pools": {"max_keep_alive_s": KEEP_ALIVE_S}}
    return Workload(sorted(trace, key=lambda job: (job.submit_s, job.name)), pools, document)
