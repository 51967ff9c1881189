"""The API's reads of the queue as a whole: GET /pools, GET /quotas and GET /attempts (the ui's
timeline, in pages). Routes only parse and shape; QueueService decides, and the API's error mapping
applies."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types

from smq_lambda.errors import InvalidRequest
from smq_lambda.handlers import query_params as params
from smq_lambda.handlers.views import attempt_view, pools_view, quotas_view, timestamp
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.timeline import TimelineAttempt


def register_read_routes(app: APIGatewayRestResolver, service: QueueService) -> None:
    @app.get("/pools")
    def pools() -> Response:
        return _json(pools_view(service.pools()))

    @app.get("/quotas")
    def quotas() -> Response:
        return _json(quotas_view(service.quotas()))

    @app.get("/attempts")
    def attempts() -> Response:
        query = app.current_event.query_string_parameters or {}
        start = params.zoned_time("from", query.get("from"))
        if start is None:
            raise InvalidRequest("from", "from is required: an ISO 8601 time such as 2026-11-26T09:00:00Z")
        end = params.zoned_time("to", query.get("to"))
        page = service.attempts_between(
            start,
            end,
            limit=params.attempts_limit(query.get("limit")),
            next_token=params.next_token(query.get("next_token"), "GET /attempts"),
        )
        return _json(
            {
                "attempts": [timeline_view(item) for item in page.attempts],
                "from": timestamp(start),
                "to": timestamp(end),
                "next_token": page.next_token,
            }
        )


def timeline_view(item: TimelineAttempt) -> dict[str, Any]:
    """One attempt with what a timeline row needs of its job."""
    job = item.job
    return {
        **attempt_view(item.attempt),
        "name": job.name,
        "job_id": job.job_id,
        "state": str(job.state),
        "priority": job.priority,
        "pool": job.where.pool,
        "demand": dict(job.demand),
        "owner": job.owner,
        "team": job.team,
        "backfill": item.attempt.backfill,
    }


def _json(body: dict[str, Any]) -> Response:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=body)
