"""The placement phase: where a flexible job runs, decided when the walk reaches it.

A flexible job (domain/placements/placement.py) prefers placements in order. The phase hands the rest of the
pass the job *at one placement* (a `Candidate`: the job and that placement), chosen by one rule:

1. the first placement that fits now: no earlier job of its team waits for the pool, and the
   instances its team may use are free, within its quota or as borrowing the borrowing rules allow;
2. else the first that can be made to fit by the usual rules (no earlier job of its team waits for
   the pool): the stops in flight, the reclaim of borrowed capacity or priority preemption inside
   its team cover what it lacks (the candidates and victim selection the borrowing and nomination phases then use);
3. else, with backfill on, the first placement behind an earlier waiting job of its team where it
   may start now beside that head (the backfill phase starts it there): a job no pool has room for in its
   own right still uses instances a head cannot use yet;
4. else, when an earlier job of its team waits in every pool it prefers, the first placement, to
   wait behind that head (the backfill phase);
5. else the job waits in the pool of every placement no earlier job waits for: it heads each of
   them (so no later job of its team overtakes it in any), and no room can be made in any (so, as
   for a stuck head, later jobs start there only by backfill). Its reason names each placement and
   why it is not used.

A pinned job passes through unchanged, so a queue without flexible jobs decides exactly as before
this phase existed. Placements larger than their pool, or than its team may ever hold there, are
never chosen (a job none of whose placements may ever run is explained and blocks nothing); a
training plan's pool is 0 outside its windows (plan_windows.py), so a placement there waits for the
next one, which its reason names. The chosen placement travels with the start (`StartJob.placement`); the
job holds that placement's instances, in that pool only, until it is back in the queue, where it may
be placed anew (the trainer resumes at any world size).
"""

from __future__ import annotations

from dataclasses import dataclass

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling import gates, plan_windows, reasons, room, verdicts
from smq_lambda.scheduling.candidate import Candidate
from smq_lambda.scheduling.holds import CORE_KINDS, Held
from smq_lambda.scheduling.pass_state import PassState, limited


@dataclass(frozen=True)
class Placed:
    """A job the walk goes on to decide, at the placement chosen for it."""

    candidate: Candidate
    """The job at that placement, or at its own when it is pinned."""
    verdict: verdicts.Verdict | None
    """The verdict the placement was chosen by, which the walk applies; None for a pinned job."""


def place(state: PassState, job: Job) -> Placed | None:
    """`job` at the placement the rule chooses, at its own when it is pinned, or None when it waits
    in every pool it prefers (decided here)."""
    if not job.placements:
        return Placed(Candidate.pinned(job), None)
    options = _usable(state, job)
    if not options:
        return None
    assessed = [(option, verdicts.assess_now(state, option)) for option in options]
    chosen = _choose(state, assessed)
    if chosen is not None:
        return Placed(*chosen)
    _wait_everywhere(state, job, [option for option, verdict in assessed if not isinstance(verdict, verdicts.Behind)])
    return None


def _choose(
    state: PassState, assessed: list[tuple[Candidate, verdicts.VerdictNow | None]]
) -> tuple[Candidate, verdicts.Verdict] | None:
    """Rules 1 to 4 of the module docstring, by the options' verdicts (room is looked for only
    when no option fits now): the option chosen and its verdict; None for rule 5."""
    for option, verdict in assessed:
        if isinstance(verdict, verdicts.FITS_NOW):
            return option, verdict
    for option, verdict in assessed:
        if verdict is None and isinstance(made := verdicts.room_for(state, option), verdicts.MakeRoom):
            return option, made
    if state.config.backfill:
        for option, verdict in assessed:
            if isinstance(verdict, verdicts.Behind) and verdict.starts:
                return option, verdict
    behind = [(option, verdict) for option, verdict in assessed if isinstance(verdict, verdicts.Behind)]
    return behind[0] if len(behind) == len(assessed) else None


def _usable(state: PassState, job: Job) -> list[Candidate]:
    """The placements no gate holds (`gates.placement_gate`: no larger than their pool nor than its
    team may ever hold there, and that its team's hold budget covers), numbered from 1 in the job's
    order, each a candidate. When there is none, the job is held by its first placement's
    gate (a feature's, its hold budget's, when the features' gates alone rule them out), and
    blocks nothing."""
    usable: list[Candidate] = []
    first: Held | None = None
    by_feature: Held | None = None
    for index, placement in enumerate(job.placements, start=1):
        held = gates.placement_gate(state, job, placement)
        if held is None:
            usable.append(Candidate(job, placement, index))
        elif held.kind not in CORE_KINDS:
            by_feature = by_feature or held
        else:
            first = first or held
    if not usable and (held := by_feature or first) is not None:
        gates.hold(state, job, held)
    return usable


def _wait_everywhere(state: PassState, job: Job, options: list[Candidate]) -> None:
    """No placement of `job` fits or can be made to fit: it heads the pools of `options` and is
    stuck in each; its reason names every placement (those another job waits for included)."""
    team = state.ledger.team(job)
    for option in options:
        state.wait(option)
        state.stuck[team].update(limited(option.demand, state.ledger))
    if any(state.is_first(option) for option in options):
        state.explain(
            job,
            reasons.no_placement(
                [_why_not(state, job, index, placement) for index, placement in enumerate(job.placements, start=1)]
            ),
        )


def _why_not(state: PassState, job: Job, index: int, placement: Placement) -> str:
    at = Candidate(job, placement, index)
    view = room.view(state, placement.pool_name, placement.count)
    if view.capacity is not None and placement.count > view.capacity:
        if plan_windows.plan_of(state.config, placement.pool_name) is not None:
            return f"{index}. {placement.describe()}: {plan_windows.never_fits(state.config, state.now, view, configured=True)}"
        return reasons.placement_never_fits(index, placement.describe(), view)
    if (held := state.feature_gate(job, placement)) is not None:
        return f"{index}. {placement.describe()}: {held.brief or held.reason}"
    if blocked := state.blocked(at):
        head = state.team_heads[state.ledger.team(job)][blocked[0]]
        if head.name != job.name:
            return reasons.placement_behind(index, placement.describe(), head.name)
    return reasons.placement_no_room(index, placement.describe(), view)
