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
  scheduler bounds the jobs it tests per cycle (`bf_max_job_test`);
* a heterogeneous job is listed under its first pool; beyond that pool's window it does not yet
  hold back the other pools it needs.

A pool without a limit (an unpooled type under `unlimited`) starts at most `UNLIMITED_WINDOW` jobs a
pass; the events of those starts bring the next pass. Team quotas will read one window per team and
pool, the same bound per head.
"""

from __future__ import annotations

from collections.abc import Iterable

from smq_lambda.scheduling.capacity import Ledger

SKIP_LOOKAHEAD = 16
BACKFILL_LOOKAHEAD = 64
UNLIMITED_WINDOW = 100


def window_sizes(pools: Iterable[str], ledger: Ledger, *, backfill: bool) -> dict[str, int]:
    """Per pool, how many of its first pending jobs the pass reads."""
    lookahead = SKIP_LOOKAHEAD + (BACKFILL_LOOKAHEAD if backfill else 0)
    sizes = {}
    for pool in pools:
        free = ledger.free(pool)
        sizes[pool] = UNLIMITED_WINDOW if free is None else max(free, 0) + 1 + lookahead
    return sizes
