"""One boto3 client per AWS service per cold start, shared by everything a handler builds: making a
client costs milliseconds to tens of milliseconds, and several adapters talk to the same service.
Each finds its endpoint the standard boto3 way (`AWS_ENDPOINT_URL_<SERVICE>` included), so whoever
changes the environment (the local stack) calls `client.cache_clear()` with the handlers' caches."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def client(service: str) -> Any:
    import boto3

    return boto3.client(service)
