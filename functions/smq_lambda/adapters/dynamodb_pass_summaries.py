"""The PassSummaries port as one item of the queue table (the pass summary, pass_summary.py).

Each scheduling pass measures usage anyway (it must, to decide), so it writes what it measured here
and readers (GET /pools) read one item instead of listing and describing SageMaker jobs per request.
The write is conditional on being newer than what is there, so a slow pass that measured earlier
never replaces a later summary.

The item holds the pools, each team's share of them, and the pass's start estimates, and must stay
under DynamoDB's 400 KB. Pools and teams are as many as the configuration names (rows: teams
times pools, kept up to MAX_TEAM_ROWS); estimates are one per pending job the pass saw, which its
fronts bound to a few hundred: `bounded` keeps at most MAX_ESTIMATES of them (the soonest to
start) and at most MAX_ASSUMED_CHARS of each one's `assumed`; the jobs held for their team's budget
and the jobs whose reason the pass wrote (`explained`), also among those the pass saw, are kept up
to MAX_ESTIMATES names each (the first in name order). At those bounds the item is under 345 KB at
worst (50 pools, team names of 256 characters, every other name at its longest, each
`assumed` of 2-byte characters, each estimate a band with a first estimate kept), typically a few KB.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed, written
from smq_lambda.forecast.start_estimate import EstimateKind, GivenEstimate, StartEstimate
from smq_lambda.pass_summary import PassSummary, PoolMeasure, TeamMeasure

SUMMARY_KEY = {"name": {"S": "#pool-usage"}}
"""The key passes have always written the summary under (hence its name: items of earlier
releases read as they are). Job names cannot contain '#', so the summary can never collide with a
job. It carries none of the indexed attributes, so it appears in no index, and no TTL: the latest
summary stays."""
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""Fixed width, so the stored strings sort as the times do (the condition compares them)."""
MAX_ESTIMATES = 250
"""Above the most a pass estimates (forecast/estimate.py DEFAULT_MAX_JOBS), so in practice a bound
that keeps every estimate."""
MAX_ASSUMED_CHARS = 160
MAX_TEAM_ROWS = 300


class DynamoPassSummaries:
    def __init__(self, table_name: str, client: Any) -> None:
        self._table = table_name
        self._client = client

    def publish(self, summary: PassSummary) -> None:
        """Store `summary` unless a summary measured later is already there."""
        written(
            self._client.put_item,
            TableName=self._table,
            Item={**SUMMARY_KEY, **_to_item(bounded(summary))},
            ConditionExpression="attribute_not_exists(measured_at) OR measured_at <= :measured_at",
            ExpressionAttributeValues={":measured_at": {"S": _time(summary.measured_at)}},
        )

    def latest(self) -> PassSummary | None:
        with unavailable_as_typed():
            response = self._client.get_item(TableName=self._table, Key=SUMMARY_KEY)
        item = response.get("Item")
        return None if item is None else _from_item(item)


def bounded(summary: PassSummary) -> PassSummary:
    """`summary` as the item keeps it: at most MAX_TEAM_ROWS team rows (the first), MAX_ESTIMATES
    estimates (the soonest to start, in the summary's order; those beyond the replay's horizon go
    first) and MAX_ASSUMED_CHARS of each `assumed`; first estimates only of the jobs kept (when the
    summary has estimates), at most MAX_ESTIMATES (the soonest). Within the bounds it is `summary`
    itself."""
    estimates = summary.estimates
    if len(estimates) > MAX_ESTIMATES:
        ranked = sorted(
            estimates.values(), key=lambda estimate: (estimate.at is None, estimate.at or summary.measured_at)
        )
        kept = {estimate.job_name for estimate in ranked[:MAX_ESTIMATES]}
        estimates = {name: estimate for name, estimate in estimates.items() if name in kept}
    if any(len(estimate.assumed) > MAX_ASSUMED_CHARS for estimate in estimates.values()):
        estimates = {
            name: replace(estimate, assumed=_clipped(estimate.assumed)) for name, estimate in estimates.items()
        }
    first = summary.first_estimates
    if len(first) > MAX_ESTIMATES or (summary.estimates and not first.keys() <= estimates.keys()):
        soonest = sorted(
            (given for name, given in first.items() if not summary.estimates or name in estimates),
            key=lambda given: given.likely,
        )
        first = {given.job_name: given for given in soonest[:MAX_ESTIMATES]}
    if estimates is summary.estimates and first is summary.first_estimates and len(summary.teams) <= MAX_TEAM_ROWS:
        return summary
    return replace(summary, teams=summary.teams[:MAX_TEAM_ROWS], estimates=estimates, first_estimates=first)


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_ASSUMED_CHARS else text[: MAX_ASSUMED_CHARS - 1] + "…"


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def _to_item(summary: PassSummary) -> dict[str, Any]:
    return {
        "measured_at": {"S": _time(summary.measured_at)},
        "pools": {"L": [{"M": _pool_to_item(pool)} for pool in summary.pools]},
        "teams": {"L": [{"M": _team_to_item(team)} for team in summary.teams]},
        "estimates": {"L": [{"M": _estimate_to_item(estimate)} for estimate in summary.estimates.values()]},
        "first_estimates": {"L": [{"M": _given_to_item(given)} for given in summary.first_estimates.values()]},
        "budget_held": _names(summary.budget_held),
        **({} if summary.explained is None else {"explained": _names(summary.explained)}),
        "spot_rates": {"M": {kind: {"N": f"{rate:.6f}"} for kind, rate in summary.spot_rates.items()}},
    }


def _names(names: frozenset[str]) -> dict[str, Any]:
    return {"L": [{"S": name} for name in sorted(names)[:MAX_ESTIMATES]]}


def _count(value: int | None) -> dict[str, Any]:
    return {"NULL": True} if value is None else {"N": str(value)}


def _team_to_item(team: TeamMeasure) -> dict[str, Any]:
    item = {
        "team": {"S": team.team},
        "pool": {"S": team.pool},
        "quota": _count(team.quota),
        "in_use": {"N": str(team.in_use)},
        "borrowed": {"N": str(team.borrowed)},
        "lent": {"N": str(team.lent)},
        "pending": {"N": str(team.pending)},
    }
    if team.longest_wait_s is not None:
        item["longest_wait_s"] = {"N": f"{team.longest_wait_s:.6f}"}
    return item


def _team_from_item(item: dict[str, Any]) -> TeamMeasure:
    return TeamMeasure(
        team=item["team"]["S"],
        pool=item["pool"]["S"],
        quota=None if "NULL" in item["quota"] else int(item["quota"]["N"]),
        in_use=int(item["in_use"]["N"]),
        borrowed=int(item["borrowed"]["N"]),
        lent=int(item["lent"]["N"]),
        pending=int(item["pending"]["N"]),
        longest_wait_s=float(item["longest_wait_s"]["N"]) if "longest_wait_s" in item else None,
    )


def _estimate_to_item(estimate: StartEstimate) -> dict[str, Any]:
    return {
        "job": {"S": estimate.job_name},
        "at": _optional_time(estimate.at),
        "assumed": {"S": estimate.assumed},
        "earliest": _optional_time(estimate.earliest),
        "latest": _optional_time(estimate.latest),
        "kind": {"S": str(estimate.kind)},
        "computed_at": _optional_time(estimate.computed_at),
    }


def _estimate_from_item(item: dict[str, Any]) -> StartEstimate:
    """Reports written before bands existed read as points (no earliest or latest); before estimates
    could be kept from an earlier pass, as the summary's own (no `computed_at`)."""
    return StartEstimate(
        job_name=item["job"]["S"],
        at=_time_or_none(item["at"]),
        assumed=item["assumed"]["S"],
        earliest=_time_or_none(item.get("earliest", {"NULL": True})),
        latest=_time_or_none(item.get("latest", {"NULL": True})),
        kind=EstimateKind(item.get("kind", {"S": EstimateKind.POINT})["S"]),
        computed_at=_time_or_none(item.get("computed_at", {"NULL": True})),
    )


def _given_to_item(given: GivenEstimate) -> dict[str, Any]:
    return {
        "job": {"S": given.job_name},
        "given_at": {"S": _time(given.given_at)},
        "earliest": {"S": _time(given.earliest)},
        "likely": {"S": _time(given.likely)},
        "latest": _optional_time(given.latest),
    }


def _given_from_item(item: dict[str, Any]) -> GivenEstimate:
    return GivenEstimate(
        job_name=item["job"]["S"],
        given_at=_parse_time(item["given_at"]["S"]),
        earliest=_parse_time(item["earliest"]["S"]),
        likely=_parse_time(item["likely"]["S"]),
        latest=_time_or_none(item["latest"]),
    )


def _optional_time(moment: datetime | None) -> dict[str, Any]:
    return {"NULL": True} if moment is None else {"S": _time(moment)}


def _time_or_none(value: dict[str, Any]) -> datetime | None:
    return None if "NULL" in value else _parse_time(value["S"])


def _pool_to_item(pool: PoolMeasure) -> dict[str, Any]:
    capacity = {"NULL": True} if pool.capacity is None else {"N": str(pool.capacity)}
    item = {"pool": {"S": pool.pool}, "capacity": capacity, "in_use": {"N": str(pool.in_use)}}
    if pool.head is not None:
        item["head"] = {"S": pool.head}
    if pool.warm:
        item["warm"] = {"N": str(pool.warm)}
    return item


def _from_item(item: dict[str, Any]) -> PassSummary:
    pools = tuple(
        PoolMeasure(
            pool=entry["M"]["pool"]["S"],
            capacity=None if "NULL" in entry["M"]["capacity"] else int(entry["M"]["capacity"]["N"]),
            in_use=int(entry["M"]["in_use"]["N"]),
            head=entry["M"]["head"]["S"] if "head" in entry["M"] else None,
            warm=int(entry["M"]["warm"]["N"]) if "warm" in entry["M"] else 0,
        )
        for entry in item["pools"]["L"]
    )
    teams = tuple(_team_from_item(entry["M"]) for entry in item.get("teams", {}).get("L", ()))
    estimates = (_estimate_from_item(entry["M"]) for entry in item.get("estimates", {}).get("L", ()))
    first = (_given_from_item(entry["M"]) for entry in item.get("first_estimates", {}).get("L", ()))
    return PassSummary(
        pools=pools,
        measured_at=_parse_time(item["measured_at"]["S"]),
        teams=teams,
        estimates={estimate.job_name: estimate for estimate in estimates},
        first_estimates={given.job_name: given for given in first},
        budget_held=frozenset(entry["S"] for entry in item.get("budget_held", {}).get("L", ())),
        explained=frozenset(entry["S"] for entry in item["explained"]["L"]) if "explained" in item else None,
        spot_rates={kind: float(rate["N"]) for kind, rate in item.get("spot_rates", {}).get("M", {}).items()},
    )
