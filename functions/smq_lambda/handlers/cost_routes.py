"""GET /costs: spend by team, owner or cost tag (service/cost_reports.py), as openapi.yaml's
CostReport. The route only parses and shapes; the API's error mapping applies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from smq_lambda.handlers import query_params as params
from smq_lambda.handlers.views import USD_DIGITS, timestamp
from smq_lambda.service.cost_reports import CostReport, CostReports, CostRow


def register_cost_routes(
    app: APIGatewayRestResolver, reports: CostReports, caller: Callable[[APIGatewayProxyEvent], str]
) -> None:
    @app.get("/costs")
    def costs() -> Response:
        query = app.current_event.query_string_parameters or {}
        by = params.cost_dimension(query.get("by"))
        since = params.cost_since(query.get("since"))
        report = reports.report(by, since, caller(app.current_event))
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=cost_report_view(report))


def cost_report_view(report: CostReport) -> dict[str, Any]:
    return {
        "by": report.by,
        "since": timestamp(report.since),
        "until": timestamp(report.until),
        "prices": {"source": report.prices_source},
        "total": cost_row_view(report.total),
        "groups": [{"group": row.group, **cost_row_view(row)} for row in report.groups],
    }


def cost_row_view(row: CostRow) -> dict[str, Any]:
    """A dollar figure is null when everything it would sum is unpriced: never $0 for what could
    not be priced. Where only some is, the counts say how much the dollars leave out."""
    ended, accruing = row.ended, row.accruing
    priced = ended.attempts == 0 or ended.attempts > ended.unpriced_attempts
    accruing_priced = accruing.running == 0 or accruing.running > accruing.unpriced_running

    def usd(value: float, known: bool) -> float | None:
        return round(value, USD_DIGITS) if known else None

    return {
        "spend_usd": usd(ended.spend_usd, priced),
        "on_demand_equivalent_usd": usd(ended.on_demand_equivalent_usd, priced),
        "spot_savings_usd": usd(ended.spot_savings_usd, priced),
        "waste_usd": usd(ended.waste_usd, priced),
        "idle_stop_avoided_usd": usd(ended.idle_stop_avoided_usd, priced),
        "attempts": ended.attempts,
        "unpriced_attempts": ended.unpriced_attempts,
        "accruing_usd": usd(accruing.usd, accruing_priced),
        "running": accruing.running,
        "unpriced_running": accruing.unpriced_running,
    }
