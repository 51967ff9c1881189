"""The one check of every table of submission refusals: a 400 naming the field, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.api.builders import training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import RecordingTrigger


def assert_refused_and_nothing_written(
    api: ApiGateway,
    dump_table: Callable[[], list[dict[str, Any]]],
    trigger: RecordingTrigger,
    request_body: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    """With one job queued (so the table is not empty), `request_body` gets a 400 whose field is
    `field` and whose message names the field and `rule`; the table is unchanged and no pass is
    triggered."""
    assert api.add(training_request("queued-job")).status == 202
    trigger.kicks.clear()
    before = dump_table()

    reply = api.add(request_body)

    assert (reply.status, reply.field) == (400, field), reply.body
    assert field in reply.body["message"]
    assert rule in reply.body["message"]
    assert dump_table() == before
    assert trigger.kicks == []
