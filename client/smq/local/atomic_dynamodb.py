"""Make moto's DynamoDB writes atomic, as DynamoDB's are.

DynamoDB evaluates a ConditionExpression and applies the write as one step. moto checks and then
writes in plain Python with no lock, so two threads (the API front and the event router, or a
concurrency test) could both pass the same condition. The queue's safety rests on that guarantee,
so the local stack restores it with one lock around moto's item operations.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

_LOCK = threading.RLock()
_OPERATIONS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "query")


def _locked(operation: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(operation)
    def run(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return operation(*args, **kwargs)

    run.__smq_atomic__ = True  # type: ignore[attr-defined]
    return run


def make_moto_dynamodb_atomic() -> None:
    """Idempotent: wrap each item operation of moto's DynamoDB backend in one process-wide lock."""
    for name in _OPERATIONS:
        operation = getattr(DynamoDBBackend, name)
        if not getattr(operation, "__smq_atomic__", False):
            setattr(DynamoDBBackend, name, _locked(operation))
