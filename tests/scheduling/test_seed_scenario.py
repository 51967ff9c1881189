"""The seed scenario played through, pass after pass, with SageMaker's answers in between.

Capacity 2. job1 (priority 1), job2 (2), job3 (1), job4 (3) are submitted in that order, a pass
after each. job4 preempts job1 (the lowest priority, not job2); when job1 is back in the queue and
job2 completes, job1 resumes before job3 because it was submitted first.
"""

from __future__ import annotations

from smq_lambda.domain.jobs.states import JobState
from smq_lambda.scheduling.actions import ExplainWait, PreemptJob, StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.snapshot import Snapshot

from .builders import FakeClock, apply, event, pools, queue

CONFIG = pools(p5=2)


def test_seed_scenario() -> None:
    clock = FakeClock()
    submitted = queue().pending("job1", 1).pending("job2", 2).pending("job3", 1).pending("job4", 3).build()
    jobs = {job.name: job for job in submitted.jobs}
    snapshot = Snapshot(jobs=())
    history: list[list[str]] = []

    def run_pass() -> None:
        nonlocal snapshot
        actions = decide(snapshot, clock.now(), CONFIG)
        history.append([_short(action) for action in actions if not isinstance(action, ExplainWait)])
        snapshot = apply(snapshot, actions, clock.now())

    def sagemaker(name: str, to: JobState) -> None:
        nonlocal snapshot
        clock.advance(minutes=1)
        snapshot = event(snapshot, name, clock.now(), to=to)
        run_pass()

    for name in ("job1", "job2", "job3", "job4"):
        clock.advance(minutes=1)
        snapshot = Snapshot(jobs=(*snapshot.jobs, jobs[name]))
        run_pass()
    sagemaker("job1", JobState.PENDING)
    sagemaker("job4", JobState.RUNNING)
    sagemaker("job2", JobState.COMPLETED)

    assert history == [
        ["start job1 #1"],
        ["start job2 #1"],
        [],
        ["preempt job1 #1 for job4"],
        ["start job4 #1"],
        [],
        ["start job1 #2"],
    ]
    states = {job.name: job.state for job in snapshot.jobs}
    assert states == {"job1": JobState.STARTING, "job3": JobState.PENDING, "job4": JobState.RUNNING}


def _short(action: StartJob | PreemptJob) -> str:
    if isinstance(action, PreemptJob):
        return f"preempt {action.job_name} #{action.attempt} for {action.for_job}"
    return f"start {action.job_name} #{action.attempt}"
