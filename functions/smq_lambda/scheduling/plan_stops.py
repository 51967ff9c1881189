"""The plan stops of a pass: stop the jobs running on a training plan before its window ends.

Rule: a job starting or running in a training plan's pool is stopped once no window of the plan is
open (scheduling/plan_windows.py): `stop_margin_s` before the window's end, so it checkpoints
instead of being cut off when SageMaker ends the reservation. It goes back to the queue as a
preempted job does (a flexible job may resume at another of its preferences), and its instances
count as on their way back for the rest of the pass. Jobs already stopping are left as they are.

Such a stop is not a preemption: its attempt closes as PLAN_WINDOW_CLOSED, which `max_preemptions`
does not count (a job stopped at every window end stays preemptable for priority), and the job's
history keeps the reason.
"""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.jobs.outcomes import AttemptOutcome
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling import plan_windows
from smq_lambda.scheduling.actions import PreemptJob
from smq_lambda.scheduling.features import Feature, PassInputs
from smq_lambda.scheduling.pass_state import PassState

STOPPABLE = (JobState.STARTING, JobState.RUNNING)


def stop_at_window_end(state: PassState) -> None:
    """Stop every starting or running job that holds instances of a closed plan's pool."""
    if not state.config.training_plans:
        return
    stopped = []
    for job in list(state.live.values()):
        plans = [plan for pool in job.demand if (plan := plan_windows.plan_of(state.config, pool)) is not None]
        closed = [plan for plan in plans if plan.open_window(state.now) is None]
        attempt = job.current_attempt
        if not closed or job.state not in STOPPABLE or attempt is None:
            continue
        reason = plan_windows.window_end(closed[0], state.now)
        state.actions.append(
            PreemptJob(
                job.name,
                attempt.number,
                closed[0].pool,
                reason,
                history=reason,
                outcome=AttemptOutcome.PLAN_WINDOW_CLOSED,
            )
        )
        state.stand_down(job)
        stopped.append(job)
    state.ledger.release(stopped)


class PlanWindowsFeature(Feature):
    """Training plans in the pass: the configuration in force at its moment (a plan's pool holds
    its instances only inside a window), and the stops of the jobs whose window ends."""

    def prepare(self, inputs: PassInputs) -> PassInputs:
        return replace(inputs, config=plan_windows.in_force(inputs.config, inputs.now))

    def open(self, state: PassState) -> None:
        stop_at_window_end(state)
