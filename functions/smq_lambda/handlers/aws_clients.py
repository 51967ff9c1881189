"""One boto3 client per AWS service per cold start, shared by everything a handler builds: making a
client costs milliseconds to tens of milliseconds, and several adapters talk to the same service.
Each finds its endpoint the standard boto3 way (`AWS_ENDPOINT_URL_<SERVICE>` included), so whoever
changes the environment (the local stack) calls `client.cache_clear()` with the handlers' caches.
Credentials come from boto3's default session too: in Lambda the function's role; in the local
stack, where the functions share one process, the role of whichever function is running
(smq/local/stack_roles.py), so a client shared across functions still signs as the caller's role."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def client(service: str) -> Any:
    import boto3

    return boto3.client(service)
