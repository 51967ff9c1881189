"""The sentences a pass writes into actions: why a job starts, waits, or is stopped.

Users read these through `smq describe` and `GET /jobs/{name}` to answer "why is my job pending?".
They are built from the numbers the pass decided on, and stay the same from pass to pass while the
situation does, so an unchanged wait costs no write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class PoolView:
    """One pool as a job sees it at the moment of the decision."""

    pool: str
    need: int
    free: int | None
    """None: the pool has no capacity limit."""
    capacity: int | None
    releasing: int = 0

    @property
    def shown_free(self) -> int:
        """Free instances as a person counts them: an over-committed pool has none, not fewer."""
        return max(self.free or 0, 0)


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _room(view: PoolView) -> str:
    if view.capacity is None:
        return f"{view.pool} has no capacity limit"
    return f"needs {view.need}, {view.shown_free} of {view.capacity} {view.pool} instances free"


def fits(views: Sequence[PoolView]) -> str:
    return "fits: " + "; ".join(_room(view) for view in views)


def backfill(views: Sequence[PoolView], head: str, head_lacks: Mapping[str, int]) -> str:
    lacks = " and ".join(f"{count(missing, 'instance')} of {pool}" for pool, missing in head_lacks.items())
    return (
        f"backfill: {'; '.join(_room(view) for view in views)}; head {head} cannot start yet (lacks {lacks} "
        f"even after the stops in flight); stopped first when it can start"
    )


def beside_reserved(views: Sequence[PoolView], head: str) -> str:
    return (
        f"backfill: {'; '.join(_room(view) for view in views)}; head {head} waits only for instances "
        f"being released, which are kept for it"
    )


def backfill_awaiting_release(views: Sequence[PoolView], head: str) -> str:
    rooms = " and ".join(f"{view.need} of {view.pool}" for view in views)
    return f"to be backfilled once lower-priority jobs stopped for it release {rooms}; head {head} cannot start yet"


def queued(ahead: int, pool: str, head: str | None) -> str:
    """Why a job that is not a head waits, computed when someone reads it (never stored)."""
    first = f"; {head} is first and waits for instances" if head is not None else ""
    return f"{count(ahead, 'job')} ahead in {pool}{first}"


def queued_in_each(places: Sequence[tuple[int, str, str | None]]) -> str:
    """`queued` for a job waiting in several pools: (jobs ahead, pool, its head) in each, in the
    job's order of them."""
    if len(places) == 1:
        return queued(*places[0])
    parts = [
        f"{count(ahead, 'job')} ahead in {pool}" + (f" ({head} is first and waits for instances)" if head else "")
        for ahead, pool, head in places
    ]
    return ", ".join(parts)


def awaiting_release(views: Sequence[PoolView]) -> str:
    """The head waits only for stops already in flight (or just decided)."""
    parts = [f"{count(view.need - view.shown_free, 'instance')} of {view.pool}" for view in views]
    return f"waiting for {' and '.join(parts)} being released by stopping jobs"


def no_room(view: PoolView, protected: int = 0) -> str:
    shielded = (
        f"; {count(protected, 'lower-priority job')} protected by the preemption rules (minimum runtime, "
        f"max_preemptions) may not be stopped"
        if protected
        else ""
    )
    return (
        f"needs {count(view.need, 'instance')} of {view.pool}, {view.shown_free} free, {view.releasing} being "
        f"released; stopping every lower-priority job would not make room{shielded}"
    )


def never_fits(view: PoolView, *, configured: bool) -> str:
    if not configured:
        return f"needs {count(view.need, 'instance')} of {view.pool}, which has no configured pool"
    return f"needs {count(view.need, 'instance')} of {view.pool} but the pool has {view.capacity}"


def backoff(until: datetime, cause: str | None) -> str:
    if cause:
        return f"start refused ({cause}); retrying start after {timestamp(until)}"
    return f"retrying start after {timestamp(until)}"


def preempted(head: str, head_priority: int, priority: int, lacks: Mapping[str, int], *, reclaimed: bool) -> str:
    needs = " and ".join(f"{count(missing, 'instance')} of {pool}" for pool, missing in lacks.items())
    if reclaimed:
        return f"backfilled; reclaimed by {head}, which is ahead of it in the queue and lacks {needs}"
    return f"preempted for {head} (priority {head_priority} > {priority}), which lacks {needs}"


def no_placement(whys: Sequence[str]) -> str:
    """A flexible job that no placement fits or can be made to fit: why not, placement by placement."""
    return f"waits for any of its {count(len(whys), 'instance preference')}: " + "; ".join(whys)


def placement_no_room(index: int, placement: str, view: PoolView) -> str:
    return (
        f"{index}. {placement}: {view.shown_free} of {view.capacity} free, {view.releasing} being released, "
        f"and stopping every job it may stop would not make room"
    )


def placement_behind(index: int, placement: str, head: str) -> str:
    return f"{index}. {placement}: {head} is ahead of it and waits for that pool"


def placement_never_fits(index: int, placement: str, view: PoolView) -> str:
    return f"{index}. {placement}: the pool has {view.capacity}"


def placed(index: int, of: int, placement: str) -> str:
    """What a flexible job's start reason adds: which of its preferences it starts at."""
    return f"at its instance preference {index} of {of} ({placement})"
