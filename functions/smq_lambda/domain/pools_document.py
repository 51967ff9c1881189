"""The pools document: instance type → instances the queue may hold. The deployed queue reads it
from its SSM parameter; `smq simulate --config` reads the same document from a file."""

from __future__ import annotations

from typing import Any

from smq_lambda.errors import ConfigError


def parse_pools(value: Any, *, source: str) -> dict[str, int]:
    """Validate the pools JSON: an object of instance type → non-negative integer instance count."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{source} must be a JSON object of instance type to instance count, "
            f'such as {{"ml.g5.xlarge": 8}}; got {type(value).__name__}'
        )
    pools: dict[str, int] = {}
    for instance_type, count in value.items():
        if not instance_type.strip():
            raise ConfigError(f"{source}: an instance type is empty")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"{source}: {instance_type} must map to a non-negative integer, not {count!r}")
        pools[instance_type] = count
    return pools
