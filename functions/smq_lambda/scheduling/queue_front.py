"""How many pending jobs of each pool a pass reads: as many as can matter, never the whole queue.

In a pool with `free` free instances at most `free` jobs can start (each needs at least one), and
the first that does not fit becomes the head, for which lower jobs may be preempted. Behind the
head, only backfill can start a job. So a pass reads, per pool, in queue order:

    free (could start) + 1 (the head) + a look-ahead

The look-ahead covers jobs that block nothing and are only explained (in start backoff, larger than
their pool) and, with backfill on, the candidates for the instances the head cannot use yet. Its
cost is fixed per pool, whatever the depth of the queue. What it gives up, and says so:

* more than `SKIP_LOOKAHEAD` jobs in start backoff at the front of one pool hide the jobs behind
  them until their backoff ends;
* backfill considers the first `BACKFILL_LOOKAHEAD` jobs behind the head, as Slurm's backfill
  scheduler bounds the jobs it tests per cycle (`bf_max_job_test`).

A job that may use several pools (a heterogeneous job's instance groups, a flexible job's
preferences: `Job.where.pools`) is listed in each, so it is in the front of every one of those
pools' queues where its place there puts it, and holds back each pool it heads. The store pays for
it: one more write per other pool on every save of such a job while it is pending
(adapters/pending_listing.py).

A pool without a limit (an unpooled type under `unlimited`) starts at most `UNLIMITED_FRONT` jobs a
pass; the events of those starts bring the next pass.

With team quotas each team has a head of its own, and a team with free quota must not be hidden
behind another team's backlog. So besides each pool's front the pass reads one front per team and
pool (`team_front_sizes`, from the pending-by-team index), the same bound per head:

    max(free, quota, 0) (could start) + 1 (the head) + the same look-ahead

`free` is the pool's free instances and `quota` the team's quota in it. A team that reclaims lent
instances has taken every free one first and starts at most its quota in all; one that does not
starts at most the free instances: either way at most max(free, quota) jobs. The fronts read are
those of every configured team with a quota in the pool, of every team that may borrow while the
pool has free instances, and of the unassigned group: jobs without a team tag (`""`) and, one
partition each, jobs whose team tag names a team the configuration no longer does (a team removed
since they were queued). Submission registers the team tag value of every job queued while quotas
are configured (when it refuses values the configuration does not name, so the registry stays
bounded), so those partitions are known without a scan; each is read with the unassigned group's
bound, as otherwise such a job would be seen through its pool's front only, and starve behind the
teams' backlog while the unassigned quota idles. The limit: a job queued while no quotas were
configured (or before the API re-read the configuration that brought them) registers nothing, so if
its team tag names no configured team (and no job queued under quotas registered the same value) it
runs as unassigned but is read through its pool's front only, and may wait behind the teams'
backlog. Pools without a limit have no quotas and no team fronts. A job read in two fronts (two
pools', or its pool's and its team's) is decided over once.
"""

from __future__ import annotations

from collections.abc import Iterable

from smq_lambda.domain.config.teams import UNASSIGNED, Teams
from smq_lambda.scheduling.capacity import Ledger

SKIP_LOOKAHEAD = 16
BACKFILL_LOOKAHEAD = 64
UNLIMITED_FRONT = 100


def front_sizes(pools: Iterable[str], ledger: Ledger, *, backfill: bool) -> dict[str, int]:
    """Per pool, how many of its first pending jobs the pass reads."""
    lookahead = _lookahead(backfill)
    sizes = {}
    for pool in pools:
        free = ledger.free(pool)
        sizes[pool] = UNLIMITED_FRONT if free is None else max(free, 0) + 1 + lookahead
    return sizes


def team_front_sizes(
    pools: Iterable[str], ledger: Ledger, teams: Teams, *, backfill: bool, team_tags: Iterable[str] = ()
) -> dict[tuple[str, str], int]:
    """Per (pool, team as jobs carry it: "" for no team tag), how many of that team's first pending
    jobs in the pool the pass reads besides the pool's front; empty without quotas. `team_tags`: the
    registered team tag values (those of jobs queued under quotas); those that name no configured
    team are read as the unassigned group."""
    if not teams.enabled:
        return {}
    unconfigured = sorted(tag for tag in set(team_tags) if teams.unconfigured(tag))
    lookahead = _lookahead(backfill)
    sizes: dict[tuple[str, str], int] = {}
    for pool in pools:
        free, capacity = ledger.free(pool), ledger.capacity(pool)
        if free is None or capacity is None:
            continue
        for team in teams.names():
            quota = teams.quota(team, pool, capacity) or 0
            borrows = free > 0 and teams.sharing(team).borrows and teams.borrow_limit(team) != 0
            if team == UNASSIGNED or quota > 0 or borrows:
                keys = ["", *unconfigured] if team == UNASSIGNED else [team]
                sizes.update(dict.fromkeys(((pool, key) for key in keys), max(free, quota, 0) + 1 + lookahead))
    return sizes


def _lookahead(backfill: bool) -> int:
    return SKIP_LOOKAHEAD + (BACKFILL_LOOKAHEAD if backfill else 0)
