"""Features plug into the pass at named moments, and the core knows none of them by name.

A feature is a class whose instance lives for one pass (so it may keep its own book: what a team's
hold budget has committed so far, say). Its hooks, each a no-op unless it overrides it:

* `prepare(inputs)`: before anything is measured, change what the pass decides over: the
  configuration in force (training plan windows), the order and the placements of the pending jobs
  (aging, purchase options), and the notes their reasons carry;
* `open(state)`: before the walk, act on the live jobs (stop jobs whose plan window ends);
* `gate(state, job, placement)`: hold a job at a placement whatever the others do (a hold budget),
  asked after the core's gates (scheduling/gates.py) and again when a later phase admits the job;
* `admitted(state, job, placement)`: a start was decided (commit its estimated cost);
* `finish(state, pending, actions)`: after the walk, add or rewrite actions (warm pools).

The registry is `decide.FEATURES`, in the order the hooks run: a new feature is its own module plus
one line there. Features never import each other, and the core (the ledger, the gates, the verdicts,
the phases) never imports a feature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from smq_lambda.domain.jobs.model import Job
from smq_lambda.domain.placements.placement import Placement
from smq_lambda.scheduling.actions import Action
from smq_lambda.scheduling.holds import Held
from smq_lambda.scheduling.pass_state import PassState
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot


@dataclass(frozen=True)
class PassInputs:
    """What a pass decides over, as the features prepare it."""

    snapshot: Snapshot
    now: datetime
    config: SchedulerConfig
    pending: list[Job]
    """In queue order."""
    suffixes: Mapping[str, str] = field(default_factory=dict)
    """Per job, what every reason the pass writes for it ends with (its aging)."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Per job, what its wait reason adds (when a spot job may go on demand)."""


class Feature:
    """A feature of the pass; see the module docstring for the hooks."""

    def prepare(self, inputs: PassInputs) -> PassInputs:
        return inputs

    def open(self, state: PassState) -> None:
        return None

    def gate(self, state: PassState, job: Job, placement: Placement | None) -> Held | None:
        return None

    def admitted(self, state: PassState, job: Job, placement: Placement | None) -> None:
        return None

    def finish(self, state: PassState, pending: Sequence[Job], actions: list[Action]) -> list[Action]:
        return actions
