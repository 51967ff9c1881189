"""Deployment settings, read once per cold start from the environment the template sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from smq_lambda.scheduling.snapshot import UnpooledPolicy


def _csv(value: str | None) -> frozenset[str]:
    return frozenset(item.strip() for item in (value or "").split(",") if item.strip())


@dataclass(frozen=True)
class Settings:
    table_name: str
    pools_parameter: str
    unpooled: UnpooledPolicy = UnpooledPolicy.REJECT
    backfill: bool = False
    checkpoint_s3_prefix: str | None = None
    allowed_role_arns: frozenset[str] = frozenset()
    """Empty means every role is allowed (the template's PassRole scoping still applies)."""
    admin_principals: frozenset[str] = frozenset()
    scheduler_function: str | None = None
    finished_ttl_days: int = 30

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        return cls(
            table_name=env["SMQ_TABLE_NAME"],
            pools_parameter=env["SMQ_POOLS_PARAMETER"],
            unpooled=UnpooledPolicy(env.get("SMQ_UNPOOLED") or UnpooledPolicy.REJECT),
            backfill=(env.get("SMQ_BACKFILL") or "false").strip().lower() == "true",
            checkpoint_s3_prefix=env.get("SMQ_CHECKPOINT_S3_PREFIX") or None,
            allowed_role_arns=_csv(env.get("SMQ_ALLOWED_ROLE_ARNS")),
            admin_principals=_csv(env.get("SMQ_ADMIN_PRINCIPALS")),
            scheduler_function=env.get("SMQ_SCHEDULER_FUNCTION") or None,
            finished_ttl_days=int(env.get("SMQ_FINISHED_TTL_DAYS") or 30),
        )
