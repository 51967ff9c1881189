"""Warm pools as capacity during the walk (rules 1 and 2 of warm_pools.py): a job whose verdict is
`FitOnWarm` starts on the warm pool it matches, and a head that lacks instances ends the warm pools
it does not match before anything is preempted for it."""

from __future__ import annotations

from smq_lambda.domain.warm.warm_pools import WarmPool
from smq_lambda.scheduling import room
from smq_lambda.scheduling.actions import ReleaseWarmPool
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.reasons import timestamp


def start_on(state: PassState, job: Candidate, warm: WarmPool) -> None:
    """Rule 1: start `job` on the warm pool it matches (its verdict is `FitOnWarm`), unless a
    feature's gate, its team's hold budget, sets it aside after all."""
    state.ledger.hand_over(warm)
    state.admit(job, reason=f"starts on {warm.describe()}, warm until {timestamp(warm.available_until)}")
    if job.name in state.held:
        state.ledger.take(warm.demand)
        return
    state.warm.held.remove(warm)
    state.warm.reused[job.name] = warm


def release_for(state: PassState, job: Candidate) -> None:
    """Rule 2: `job` waits; end the warm pools it does not match where it lacks instances."""
    for pool, missing in room.lack(state, job, counting_releasing=True).items():
        for warm in state.warm.in_pool(pool):
            if missing <= 0:
                break
            if warm.key == job.warm_key:
                continue
            state.warm.held.remove(warm)
            state.warm.releases.append(
                ReleaseWarmPool(
                    warm.training_job_name,
                    f"ended for {job.name}, which needs its {pool} instances and waits ahead of any job that matches it",
                )
            )
            state.ledger.release_warm(warm)
            missing -= warm.count
