"""The state machine, exhaustively: every pair of states is either allowed or refused on purpose."""

from __future__ import annotations

import itertools

import pytest
from smq_lambda.domain.jobs.states import (
    ACTIVE_STATES,
    ENTERED_ONLY_WHILE_LIVE,
    LIVE_STATES,
    TERMINAL_STATES,
    IllegalTransition,
    JobState,
    can_transition,
    check_transition,
)

S = JobState
ALLOWED = {
    (S.PENDING, S.STARTING), (S.PENDING, S.FAILED), (S.PENDING, S.CANCELLED),
    (S.STARTING, S.RUNNING), (S.STARTING, S.PENDING), (S.STARTING, S.PREEMPTING), (S.STARTING, S.STOPPING),
    (S.STARTING, S.COMPLETED), (S.STARTING, S.FAILED), (S.STARTING, S.CANCELLED),
    (S.RUNNING, S.PREEMPTING), (S.RUNNING, S.STOPPING), (S.RUNNING, S.PENDING),
    (S.RUNNING, S.COMPLETED), (S.RUNNING, S.FAILED), (S.RUNNING, S.CANCELLED),
    (S.PREEMPTING, S.PENDING), (S.PREEMPTING, S.STOPPING),
    (S.PREEMPTING, S.COMPLETED), (S.PREEMPTING, S.FAILED), (S.PREEMPTING, S.CANCELLED),
    (S.STOPPING, S.COMPLETED), (S.STOPPING, S.FAILED), (S.STOPPING, S.CANCELLED),
}  # fmt: skip


@pytest.mark.parametrize(("source", "target"), list(itertools.product(JobState, JobState)))
def test_every_transition_is_allowed_or_refused_as_designed(source: JobState, target: JobState) -> None:
    assert can_transition(source, target) == ((source, target) in ALLOWED)
    if (source, target) in ALLOWED:
        check_transition(source, target)
    else:
        with pytest.raises(IllegalTransition) as refused:
            check_transition(source, target)
        assert refused.value.source is source
        assert refused.value.target is target


def test_terminal_states_are_final_and_partition_the_states() -> None:
    assert all(not can_transition(state, other) for state in TERMINAL_STATES for other in JobState)
    assert ACTIVE_STATES | TERMINAL_STATES == set(JobState)
    assert not ACTIVE_STATES & TERMINAL_STATES
    assert LIVE_STATES == ACTIVE_STATES - {JobState.PENDING}


def test_the_states_entered_only_while_live_are_running_preempting_and_stopping() -> None:
    """The store skips the pools' usage items when a job enters one: it was live already."""
    assert ENTERED_ONLY_WHILE_LIVE == {JobState.RUNNING, JobState.PREEMPTING, JobState.STOPPING}
