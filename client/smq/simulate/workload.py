"""What a trace generator makes: the jobs and the configuration they were made for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smq_lambda.replay.trace_job import TraceJob

HOUR = 3600.0


@dataclass(frozen=True)
class Workload:
    jobs: list[TraceJob]
    pools: dict[str, int]
    document: dict[str, Any] | None = None
    """The configuration document made for it, when more than its pools (teams' quotas)."""

    @property
    def config(self) -> dict[str, Any]:
        """What `smq simulate generate` writes to config.json."""
        return self.document if self.document is not None else dict(self.pools)
