"""`smq simulate`'s run of a workload: the queue in virtual time (replay/virtual_queue.py) from a
trace's first arrival to its last completion, measured as it goes (pools, waits, inversions, lost
work, teams) into the metrics a run reports. The smq policy also gets the spot fallback of the
governance rules; the baselines have none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.model import Job
from smq_lambda.domain.teams import Teams
from smq_lambda.governance.actions import FallBackToOnDemand
from smq_lambda.governance.policy import Policy
from smq_lambda.governance.spot import decide_spot_fallback
from smq_lambda.replay.events import DEFAULT_TIMING, Event, Timing
from smq_lambda.replay.timeline import Segment
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.replay.virtual_queue import PassObserver, PolicyFunction, VirtualQueue
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.simulation.metrics import Meters, Moment, percentiles
from smq_lambda.simulation.policies import PolicyName, policy
from smq_lambda.simulation.teams import SimulatedTeams
from smq_lambda.simulation.trace import check_pools


@dataclass
class Result:
    metrics: dict[str, Any]
    segments: list[Segment]


class Simulation(VirtualQueue):
    """One measured run. `governed`: interrupted spot jobs fall back to on-demand as the governance
    rules say (smq's own policy only)."""

    def __init__(
        self,
        trace: Sequence[TraceJob],
        pools: Mapping[str, int],
        policy: PolicyFunction,
        *,
        governed: bool,
        timing: Timing,
        observe: PassObserver | None = None,
    ) -> None:
        super().__init__(trace, pools, policy, timing=timing, observe=observe)
        self.governed = governed
        self.meters = Meters.for_pools(self.pools)
        self.waits: dict[int, list[float]] = {}
        self.teams = SimulatedTeams.off()  # simulate() gives it the teams of a configuration with quotas

    def run(self) -> Result:
        for job in self.trace.values():
            self._schedule(job.submit_s, Event.SUBMITTED, job.name)
        self.play()
        self.meters.finish(self.clock)
        return Result(self._metrics(), sorted(self.segments, key=lambda s: (s.start_s, s.job, s.pool)))

    def _advance(self, to: float) -> None:
        if to > self.clock:
            self.meters.observe(Moment.of(self.pools, self.outside, self.jobs.values()), self.clock, to)
            self.teams.observe(self.jobs.values(), self.clock, to)
        super()._advance(to)

    def _pass(self) -> list[Action]:
        self.team_usage = self.teams.usage(self.team_usage, self.jobs.values(), self.clock)
        actions = super()._pass()
        self.teams.decided(actions, self.jobs, self.clock)
        return actions

    def _spot_fallback(self, job: Job, interruptions: int) -> FallBackToOnDemand | None:
        attempt = job.current_attempt
        if not self.governed or attempt is None:
            return None
        description = {
            "TrainingJobName": attempt.training_job_name,
            "TrainingJobStatus": "InProgress",
            "SecondaryStatusTransitions": [{"Status": "Interrupted"}] * interruptions,
        }
        return decide_spot_fallback(job, description, Policy())

    def _complete(self, job: Job) -> None:
        progress = self.progress[job.name]
        self.meters.keep_training(job.demand, progress.trace.duration_s)
        self.waits.setdefault(job.priority, []).append(progress.waited)
        super()._complete(job)

    def _metrics(self) -> dict[str, Any]:
        makespan = self.clock
        unfinished = sorted(self.jobs)
        for name in unfinished:
            progress = self.progress[name]
            if progress.pending_since is not None:
                progress.waited += makespan - progress.pending_since
            self.waits.setdefault(self.jobs[name].priority, []).append(progress.waited)
        return {
            "jobs": len(self.trace),
            "pools": {pool: meter.report(makespan) for pool, meter in self.meters.pools.items()},
            "wait_s": {
                str(priority): percentiles(self.waits[priority]) for priority in sorted(self.waits, reverse=True)
            },
            "preemptions": self.counts["preemptions"],
            "lost_work_s": round(sum(self.lost.values()), 3),
            "lost_work_by_cause_s": {cause: round(lost, 3) for cause, lost in self.lost.items()},
            "inversion_s": round(self.meters.inversion_s, 3),
            "inversion_max_s": round(self.meters.inversion_max_s, 3),
            "makespan_s": round(makespan, 3),
            "starts": self.counts["starts"],
            "backfill_starts": self.counts["backfill_starts"],
            "refused_starts": self.counts["refused_starts"],
            "interruptions": self.counts["interruptions"],
            "spot_fallbacks": self.counts["spot_fallbacks"],
            "passes": self.counts["passes"],
            "unfinished": unfinished,
            **self.teams.report(makespan, self.trace.values()),
        }


def simulate(
    trace: Sequence[TraceJob],
    config: SchedulerConfig,
    policy_name: PolicyName = PolicyName.SMQ,
    timing: Timing = DEFAULT_TIMING,
    observe: PassObserver | None = None,
    teams: Teams | None = None,
) -> Result:
    """Replay `trace` under one policy to the end. Only smq applies the governance rules (spot
    fallback): the baselines have none. With quotas the result has per-team figures ("teams"), of
    `teams` when given (a run without quotas measured against the quotas it lacks)."""
    check_pools(trace, config.pools)
    governed = policy_name is PolicyName.SMQ
    run = Simulation(
        trace, config.pools, policy(policy_name, config), governed=governed, timing=timing, observe=observe
    )
    run.teams = SimulatedTeams(config.teams, config.teams if teams is None else teams, config.pools)
    result = run.run()
    result.metrics = {"policy": str(policy_name), "backfill": config.backfill, **result.metrics}
    return result
