"""The smq REST API, called the way API Gateway's IAM authorization expects: SigV4-signed requests.

Requests are signed with botocore's signer (service `execute-api`) from a boto3 session's
credentials and sent with `requests`; the API's 4xx answers come back as the typed errors of
`smq.errors`. The API URL is found the way every smq entry point finds it (`discover_api_url`).

Throttling (429), a failing or timed-out gateway (502, 503, 504) and connection errors are retried
with exponential backoff by urllib3's `Retry` on the session, honouring `Retry-After`, so that a
`fit()` polling for hours rides out a short outage.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import boto3
import botocore.exceptions
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ReadTimeoutError
from urllib3.util.retry import Retry

from smq.errors import ApiUnreachable, ApiUrlNotFound, SmqError, api_error

log = logging.getLogger(__name__)

SERVICE = "execute-api"
API_URL_ENV = "SMQ_API_URL"
STACK_NAME_ENV = "SMQ_STACK_NAME"
API_URL_OUTPUT = "ApiUrl"
MAX_RETRIES_ENV = "SMQ_API_MAX_RETRIES"
_EXECUTE_API_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
"""Throttled, or the API did not get to answer: API Gateway's rate limit, the API's own 503 when AWS
throttles it, a Lambda that failed or timed out behind the gateway."""
RETRIED_METHODS = frozenset({"GET", "POST", "PATCH", "DELETE"})
"""Every method the API has. A retried add-job is safe: the API answers an identical add-job from
the same caller within 10 minutes with the first one's answer (powertools Idempotency). Setting a
priority twice sets it once, and cancelling a job already being cancelled changes nothing."""
DEFAULT_MAX_RETRIES = 6
DEFAULT_BACKOFF_SECONDS = 0.5
"""Waits of 0, 1, 2, 4, 8 and 16 s: about half a minute of outage ridden out before giving up."""
MAX_BACKOFF_SECONDS = 30.0


def retry_policy(max_retries: int, backoff_seconds: float = DEFAULT_BACKOFF_SECONDS) -> Retry:
    """What the client retries, and how long it waits: exponential backoff, or the `Retry-After` the
    API (or API Gateway) sent. The last answer is returned, not raised, so its message is kept."""
    return Retry(
        total=max_retries,
        allowed_methods=RETRIED_METHODS,
        status_forcelist=RETRIED_STATUSES,
        backoff_factor=backoff_seconds,
        backoff_max=MAX_BACKOFF_SECONDS,
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def max_retries_from(env: Mapping[str, str]) -> int:
    """`SMQ_API_MAX_RETRIES` (0 gives up at the first failure, as scripts may want), else the default."""
    text = env.get(MAX_RETRIES_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_RETRIES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise SmqError(f"{MAX_RETRIES_ENV} must be a whole number of retries (0 or more), not {text!r}")
    return value


def discover_api_url(
    api_url: str | None = None,
    *,
    stack_name: str | None = None,
    boto_session: boto3.Session | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The API's base URL: `api_url`, else `SMQ_API_URL`, else the `ApiUrl` output of the stack
    named by `stack_name` or `SMQ_STACK_NAME`.

    An explicit URL wins over the environment so one shell can talk to two queues.
    """
    env = os.environ if env is None else env
    url = api_url or env.get(API_URL_ENV)
    if url:
        return url.rstrip("/")
    stack = stack_name or env.get(STACK_NAME_ENV)
    if not stack:
        raise ApiUrlNotFound(
            f"no smq API URL: pass one (--api-url), set {API_URL_ENV}, "
            f"or name the CloudFormation stack (--stack-name or {STACK_NAME_ENV})"
        )
    return _stack_output(stack, boto_session or boto3.Session()).rstrip("/")


def _stack_output(stack_name: str, boto_session: boto3.Session) -> str:
    try:
        stacks = boto_session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except botocore.exceptions.ClientError as exc:
        raise ApiUrlNotFound(f"stack {stack_name!r}: {exc.response['Error'].get('Message', exc)}") from exc
    except botocore.exceptions.NoRegionError as exc:
        raise ApiUrlNotFound(f"stack {stack_name!r}: no AWS region configured (--region or AWS_REGION)") from exc
    except botocore.exceptions.NoCredentialsError as exc:
        raise ApiUrlNotFound(f"stack {stack_name!r}: no AWS credentials to read it with") from exc
    except botocore.exceptions.EndpointConnectionError as exc:
        raise ApiUnreachable(f"cannot reach CloudFormation to read stack {stack_name!r}: {exc}") from exc
    for output in stacks[0].get("Outputs") or ():
        if output.get("OutputKey") == API_URL_OUTPUT:
            return str(output["OutputValue"])
    raise ApiUrlNotFound(f"stack {stack_name!r} has no {API_URL_OUTPUT!r} output: is it an smq stack?")


def region_of(url: str) -> str | None:
    """The region in an `execute-api` host name, e.g. `abc.execute-api.eu-west-1.amazonaws.com`."""
    match = _EXECUTE_API_HOST.search(urlsplit(url).hostname or "")
    return match.group(1) if match else None


class SmqApiClient:
    """One smq API, called with one boto3 session's credentials.

    Credentials are read on every call, so refreshing credentials (assumed roles, SSO) keep working
    in a long `fit()`. Without any credentials the request goes unsigned: API Gateway refuses it,
    the local stack takes it as `local-anonymous`.

    `max_retries` (default: `SMQ_API_MAX_RETRIES`, else 6) and `backoff_seconds` shape the retries
    (see `retry_policy`); they are mounted on `http`, a session of the caller's or a new one.
    """

    def __init__(
        self,
        api_url: str | None = None,
        *,
        stack_name: str | None = None,
        boto_session: boto3.Session | None = None,
        region: str | None = None,
        timeout: float = 30.0,
        http: requests.Session | None = None,
        max_retries: int | None = None,
        backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
    ) -> None:
        self.boto_session = boto_session or boto3.Session(region_name=region)
        self.url = discover_api_url(api_url, stack_name=stack_name, boto_session=self.boto_session)
        resolved_region = region or self.boto_session.region_name or region_of(self.url)
        if not resolved_region:
            raise SmqError("no AWS region to sign requests for: pass --region or set AWS_REGION")
        self.region: str = resolved_region
        self.timeout = timeout
        self.max_retries = max_retries_from(os.environ) if max_retries is None else max_retries
        self._http = http or requests.Session()
        retrying = HTTPAdapter(max_retries=retry_policy(self.max_retries, backoff_seconds))
        for scheme in ("https://", "http://"):
            self._http.mount(scheme, retrying)

    # ------------------------------------------------------------------ operations

    def add_job(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Enqueue a CreateTrainingJob request; the answer is the new job."""
        return self._call("POST", "/add-job", body=request)

    def get_job(self, name: str, *, include_request: bool = False) -> dict[str, Any]:
        """The newest job of the name; with `include_request`, also its `request` (up to 256 KB)."""
        query = {"include": "request"} if include_request else None
        return self._call("GET", f"/jobs/{quote(name, safe='')}", query=query)

    def iter_jobs(
        self,
        state: str | Sequence[str] | None = None,
        *,
        pool: str | None = None,
        owner: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Jobs in scheduling order, page after page. `state` None means the active states,
        `"all"` every state; a sequence of states is sent comma-separated."""
        query: dict[str, str] = {}
        if state:
            query["state"] = state if isinstance(state, str) else ",".join(state)
        if pool:
            query["pool"] = pool
        if owner:
            query["owner"] = owner
        if page_size:
            query["limit"] = str(page_size)
        while True:
            page = self._call("GET", "/jobs", query=query)
            yield from page.get("jobs") or ()
            token = page.get("next_token")
            if not token:
                return
            query["next_token"] = token

    def list_jobs(
        self,
        state: str | Sequence[str] | None = None,
        *,
        pool: str | None = None,
        owner: str | None = None,
    ) -> list[dict[str, Any]]:
        return list(self.iter_jobs(state, pool=pool, owner=owner))

    def update_priority(self, name: str, priority: int) -> dict[str, Any]:
        return self._call("PATCH", f"/jobs/{quote(name, safe='')}", body={"priority": priority})

    def cancel_job(self, name: str) -> dict[str, Any]:
        """Cancel: a pending job is cancelled at once, a live one is stopped first."""
        return self._call("DELETE", f"/jobs/{quote(name, safe='')}")

    def list_pools(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/pools").get("pools") or ())

    def list_attempts(self, start: str, end: str | None = None) -> dict[str, Any]:
        """GET /attempts, every page: `{"attempts", "from", "to"}` with every attempt overlapping
        [start, end] (ISO 8601 times; no end: now) once, in order of start, as a timeline draws them.
        The pages together are in the store's order, and a job that changed between two pages may
        come on both: gathered by attempt, then sorted."""
        query = {"from": start, **({"to": end} if end else {})}
        pages = [self._call("GET", "/attempts", query=query)]
        while token := pages[-1].get("next_token"):
            pages.append(self._call("GET", "/attempts", query={**query, "next_token": token}))
        gathered = {(row.get("job_id"), row.get("number")): row for page in pages for row in page.get("attempts") or ()}
        attempts = sorted(
            gathered.values(),
            key=lambda row: (row.get("started_at") or "", row.get("name") or "", row.get("number") or 0),
        )
        return {"attempts": attempts, "from": pages[0].get("from"), "to": pages[0].get("to")}

    def get_quotas(self) -> dict[str, Any]:
        """GET /quotas as answered: `{"teams": [...], "team_tag", "measured_at"}`."""
        return self._call("GET", "/quotas")

    def get_costs(self, by: str | None = None, since: str | None = None) -> dict[str, Any]:
        """GET /costs as answered: `{"by", "since", "until", "prices", "total", "groups": [...]}`.
        `by`: team (default), owner or `tag:<key>`; `since`: `30d` or a UTC date (default: this month)."""
        query = {name: value for name, value in (("by", by), ("since", since)) if value}
        return self._call("GET", "/costs", query=query)

    # ------------------------------------------------------------------ transport

    def signed_request(
        self, method: str, path: str, *, query: Mapping[str, str] | None = None, body: Any = None
    ) -> AWSRequest:
        """The request as it goes on the wire, signed when credentials exist.

        The query is percent-encoded here, once, the way SigV4's canonical form wants it; the exact
        URL that was signed is the one sent.
        """
        url = self.url + path
        if query:
            url += "?" + urlencode(sorted(query.items()), quote_via=quote, safe="")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        credentials = self.boto_session.get_credentials()
        if credentials is not None:
            SigV4Auth(credentials.get_frozen_credentials(), SERVICE, self.region).add_auth(request)
        return request

    def _call(self, method: str, path: str, *, query: Mapping[str, str] | None = None, body: Any = None) -> Any:
        request = self.signed_request(method, path, query=query, body=body)
        try:
            response = self._http.request(
                method, request.url, data=request.data, headers=dict(request.headers.items()), timeout=self.timeout
            )
        except requests.RequestException as exc:
            reason = _reason(exc, self.timeout)
            if _retries_ran_out(exc) and self.max_retries:
                reason += f" ({_gave_up(self.max_retries)})"
            raise ApiUnreachable(f"cannot reach the smq API at {self.url}: {reason}") from exc
        log.debug("%s %s -> %s", method, request.url, response.status_code)
        if response.status_code >= 400:
            raise _error_from(response)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError as exc:
            raise SmqError(f"the smq API at {self.url} answered {method} {path} with non-JSON content") from exc


def _error_from(response: requests.Response) -> Exception:
    """The API's `{"message", "field"}`; API Gateway's own refusals say `message` or `Message`."""
    message: str | None = None
    field: str | None = None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("Message")
        field = body.get("field") if isinstance(body.get("field"), str) else None
    if not message:
        text = response.text.strip()
        message = text[:200] if text else f"HTTP {response.status_code} {response.reason or ''}".strip()
    retries = _retries_made(response)
    if retries and response.status_code in RETRIED_STATUSES:
        message = f"{message} ({_gave_up(retries)}; last answer HTTP {response.status_code})"
    return api_error(response.status_code, str(message), field)


def _retries_made(response: requests.Response) -> int:
    """How many times urllib3 retried before this answer (the `Retry` it returns it with)."""
    retries = getattr(response.raw, "retries", None)
    return len(retries.history) if isinstance(retries, Retry) else 0


def _retries_ran_out(exc: requests.RequestException) -> bool:
    """requests wraps urllib3's MaxRetryError, raised once every retry was spent."""
    return bool(exc.args) and isinstance(exc.args[0], MaxRetryError)


def _gave_up(retries: int) -> str:
    return f"gave up after retrying {retries} time{'s' if retries != 1 else ''}"


def _reason(exc: requests.RequestException, timeout: float) -> str:
    """`Connection refused`, not urllib3's nested retry text around it."""
    cause = exc.args[0].reason if _retries_ran_out(exc) else exc
    if isinstance(exc, requests.Timeout) or isinstance(cause, ReadTimeoutError):
        return f"no answer within {timeout:g} s"
    match = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(exc))
    return match.group(1).strip() if match else str(cause)
