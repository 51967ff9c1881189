"""ListTrainingJobs: filters, sort orders and NextToken pagination.

The token carries the sort key of the last job returned, not an offset, so jobs created while
a caller pages through the list neither repeat nor shift the pages.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smq.local.sagemaker.errors import ValidationError
from smq.local.sagemaker.records import JobRecord
from smq.local.sagemaker.validation import Problems, typed

STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped", "Deleting")
WARM_POOL_STATUSES = ("Available", "Terminated", "Reused", "InUse")
SORT_BY = ("Name", "CreationTime", "Status")
SORT_ORDERS = ("Ascending", "Descending")
DEFAULT_MAX_RESULTS = 10
MAX_RESULTS = 100
_TIME_FILTERS = ("CreationTimeAfter", "CreationTimeBefore", "LastModifiedTimeAfter", "LastModifiedTimeBefore")


@dataclass(frozen=True)
class ListQuery:
    status: str | None
    warm_pool_status: str | None
    name_contains: str | None
    times: Mapping[str, float]
    sort_by: str
    sort_order: str
    max_results: int
    after: list[Any] | None  # sort key of the last job of the previous page

    def matches(self, job: JobRecord) -> bool:
        if self.status and job.status != self.status:
            return False
        if self.warm_pool_status and (job.warm_pool is None or job.warm_pool.status != self.warm_pool_status):
            return False
        if self.name_contains and self.name_contains.lower() not in job.name.lower():
            return False
        bounds = self.times
        return (
            job.created > bounds.get("CreationTimeAfter", float("-inf"))
            and job.created < bounds.get("CreationTimeBefore", float("inf"))
            and job.last_modified > bounds.get("LastModifiedTimeAfter", float("-inf"))
            and job.last_modified < bounds.get("LastModifiedTimeBefore", float("inf"))
        )

    def key(self, job: JobRecord) -> list[Any]:
        name = job.name.lower()
        if self.sort_by == "Name":
            return [name]
        if self.sort_by == "Status":
            return [job.status, job.created, name]
        return [job.created, name]


def parse_list_query(params: Mapping[str, Any]) -> ListQuery:
    problems = Problems()
    status = params.get("StatusEquals")
    if status is not None and status not in STATUSES:
        problems.constraint("statusEquals", status, f"satisfy enum value set: [{', '.join(STATUSES)}]")
    warm_pool_status = params.get("WarmPoolStatusEquals")
    if warm_pool_status is not None and warm_pool_status not in WARM_POOL_STATUSES:
        problems.constraint(
            "warmPoolStatusEquals", warm_pool_status, f"satisfy enum value set: [{', '.join(WARM_POOL_STATUSES)}]"
        )
    name_contains = params.get("NameContains")
    if name_contains is not None:
        problems.length("nameContains", typed(name_contains, str, "NameContains"), 0, 63)
        problems.pattern("nameContains", name_contains, r"^[a-zA-Z0-9\-]+$")
    sort_by = params.get("SortBy", "CreationTime")
    if sort_by not in SORT_BY:
        problems.constraint("sortBy", sort_by, f"satisfy enum value set: [{', '.join(SORT_BY)}]")
    sort_order = params.get("SortOrder", "Ascending")
    if sort_order not in SORT_ORDERS:
        problems.constraint("sortOrder", sort_order, f"satisfy enum value set: [{', '.join(SORT_ORDERS)}]")
    max_results = typed(params.get("MaxResults", DEFAULT_MAX_RESULTS), int, "MaxResults")
    if not 1 <= max_results <= MAX_RESULTS:
        problems.constraint("maxResults", max_results, f"have value less than or equal to {MAX_RESULTS}")
    problems.raise_if_any()
    times = {name: timestamp(params[name], name) for name in _TIME_FILTERS if name in params}
    after = None
    if params.get("NextToken"):
        after = _decode_token(params["NextToken"], sort_by, sort_order)
    return ListQuery(status, warm_pool_status, name_contains, times, sort_by, sort_order, max_results, after)


def list_page(jobs: Iterable[JobRecord], query: ListQuery, now: float) -> dict[str, Any]:
    descending = query.sort_order == "Descending"
    keyed = sorted(((query.key(j), j) for j in jobs if query.matches(j)), key=lambda pair: pair[0], reverse=descending)
    if query.after is not None:
        keyed = [(k, j) for k, j in keyed if (k < query.after if descending else k > query.after)]
    page = keyed[: query.max_results]
    out: dict[str, Any] = {"TrainingJobSummaries": [j.summary(now) for _, j in page]}
    if len(keyed) > len(page):
        out["NextToken"] = _encode_token(page[-1][0], query.sort_by, query.sort_order)
    return out


def timestamp(value: Any, member: str) -> float:
    """A JSON-protocol timestamp: epoch seconds (what boto3 sends) or ISO 8601."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass
    raise ValidationError(f"Invalid timestamp for {member}: {value!r}")


def _encode_token(key: list[Any], sort_by: str, sort_order: str) -> str:
    raw = json.dumps({"by": sort_by, "order": sort_order, "after": key})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_token(token: Any, sort_by: str, sort_order: str) -> list[Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(str(token).encode()))
        if data["by"] == sort_by and data["order"] == sort_order:
            return list(data["after"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        pass
    raise ValidationError(
        "Invalid pagination token: it must come from a ListTrainingJobs call with the same SortBy and SortOrder."
    )
