"""Replayed add-job answers (powertools Idempotency): which requests are replays, and how a replay
is told apart, so the API answers the job as it is now rather than as it was."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

REPLAY_WINDOW_SECONDS = 600
"""An identical add-job from the same caller within this window is answered from the first one,
while the job it queued is still the name's live job (the key holds the name's newest finished
job, which that job's end changes)."""
REPLAYED = "replayed"
"""Marks an answer powertools replayed, so the route answers the job as it is now instead: the
first answer may say pending of a job that has started or ended since."""


def mark_replayed(response: Any, idempotent_data: DataRecord) -> Any:
    return {**response, REPLAYED: True}


REPLAY_CONFIG = IdempotencyConfig(expires_after_seconds=REPLAY_WINDOW_SECONDS, response_hook=mark_replayed)
