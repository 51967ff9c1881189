"""The API's query parameters, checked: each parser returns the value a route passes on, or raises
InvalidRequest naming the parameter, so a bad query is a 400 before the table is touched."""

from __future__ import annotations

import re
from datetime import date, datetime

from smq_lambda.domain.config.config_document import TAG_KEY_MAX
from smq_lambda.domain.costs.cost_totals import TAG_DIMENSION_PREFIX
from smq_lambda.domain.jobs.model import JOB_ID_PATTERN
from smq_lambda.domain.jobs.states import ACTIVE_STATES, JobState
from smq_lambda.errors import InvalidRequest
from smq_lambda.service.cost_reports import DaysBack
from smq_lambda.service.submission import is_pool_name

MAX_TOKEN_LENGTH = 512
"""Page tokens this API issues are at most about 400 characters; the cap keeps what a forged one
decodes to far below DynamoDB's 1 KB limit on a sort key value."""
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
DEFAULT_ATTEMPTS_LIMIT = 500
MAX_ATTEMPTS_LIMIT = 1000
"""An attempt of GET /attempts is about 715 bytes of JSON: a page of 1,000 is some 0.7 MB, far
below Lambda's 6 MB response limit."""
MAX_OWNER_LENGTH = 2048
"""The longest IAM ARN."""
COST_DIMENSIONS = ("team", "owner")
DAYS_BACK = re.compile(r"([1-9][0-9]{0,3})d")
UTC_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def states(value: str | None) -> frozenset[JobState]:
    if value is None:
        return ACTIVE_STATES
    if value == "all":
        return frozenset(JobState)
    known = {str(state): state for state in JobState}
    parts = value.split(",")
    if not all(part in known for part in parts):
        raise InvalidRequest("state", f"state must be 'all' or a comma-separated list of: {', '.join(known)}")
    return frozenset(known[part] for part in parts)


def pool(value: str | None) -> str | None:
    if value is None:
        return None
    if not is_pool_name(value):
        raise InvalidRequest(
            "pool",
            "pool must be a pool's name: a SageMaker training instance type such as ml.g5.xlarge, its spot "
            "pool ml.g5.xlarge:spot, or a training plan's plan:<name>",
        )
    return value


def job_id(value: str | None) -> str | None:
    if value is None:
        return None
    if not JOB_ID_PATTERN.fullmatch(value):
        raise InvalidRequest(
            "job_id", "job_id must be a job id as GET /jobs/{name} lists them (at most 64 of a-z A-Z 0-9 -)"
        )
    return value


def owner(value: str | None) -> str | None:
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_OWNER_LENGTH:
        raise InvalidRequest("owner", f"owner must be an IAM principal ARN of 1 to {MAX_OWNER_LENGTH} characters")
    return value


def limit(value: str | None) -> int:
    """The page size of GET /jobs, in jobs."""
    return _page_size(value, DEFAULT_LIMIT, MAX_LIMIT)


def attempts_limit(value: str | None) -> int:
    """The page size of GET /attempts, in attempts."""
    return _page_size(value, DEFAULT_ATTEMPTS_LIMIT, MAX_ATTEMPTS_LIMIT)


def _page_size(value: str | None, default: int, maximum: int) -> int:
    if value is None:
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= len(str(maximum)) and 1 <= int(value) <= maximum):
        raise InvalidRequest("limit", f"limit must be an integer from 1 to {maximum}")
    return int(value)


def next_token(value: str | None, route: str) -> str | None:
    """A page token as `route` issued it, not yet decoded: only its length is checked here."""
    if not value:
        return None
    if len(value) > MAX_TOKEN_LENGTH:
        raise InvalidRequest("next_token", f"next_token is not a token returned by {route} (too long)")
    return value


def includes_request(value: str | None) -> bool:
    """`include=request` of GET /jobs/{name}: the job's stored request (up to 256 KB) is sent only when asked."""
    if value not in (None, "request"):
        raise InvalidRequest("include", "include must be 'request' (the job's CreateTrainingJob request)")
    return value == "request"


def zoned_time(field: str, value: str | None) -> datetime | None:
    """An ISO 8601 time with a zone (`Z` or an offset); None when absent."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidRequest(field, f"{field} must be an ISO 8601 time with a zone, such as 2026-11-26T09:00:00Z")
    return parsed


def cost_dimension(value: str | None) -> str:
    """`by` of GET /costs (default team); whether a tag is a configured cost tag is the report's check."""
    if value is None:
        return COST_DIMENSIONS[0]
    key = value.removeprefix(TAG_DIMENSION_PREFIX)
    if value in COST_DIMENSIONS or (value.startswith(TAG_DIMENSION_PREFIX) and 1 <= len(key) <= TAG_KEY_MAX):
        return value
    raise InvalidRequest("by", "by must be team, owner or tag:<key> (a configured cost tag)")


def cost_since(value: str | None) -> date | DaysBack | None:
    """`since` of GET /costs: `30d` (the last 30 UTC days) or a UTC date; None when absent (the
    report's default, the current month). How far back it may reach is the report's check."""
    if value is None:
        return None
    if days := DAYS_BACK.fullmatch(value):
        return DaysBack(int(days.group(1)))
    if UTC_DATE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidRequest("since", "since must be a number of days such as 30d, or a UTC date such as 2026-11-01")
