"""A stub API handler for the real ApiFront (fixtures `stub` and `front` in conftest.py)."""

from __future__ import annotations

from typing import Any


class StubHandler:
    """Records each event and context, answers with whatever the test set."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.contexts: list[Any] = []
        self.response: dict[str, Any] = {
            "statusCode": 200,
            "headers": {"Content-Type": "application/json"},
            "body": "{}",
        }
        self.fail = False

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        self.contexts.append(context)
        if self.fail:
            raise RuntimeError("handler bug")
        return self.response
