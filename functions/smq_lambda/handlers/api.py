"""API Lambda: API Gateway REST proxy events in, the JSON of openapi.yaml out.

Routes only parse and shape; QueueService decides. Typed errors map to status codes by class (never
by message), every 4xx body is `{"message", "field"}`, and no input produces a 500: what the body,
path or query can get wrong is checked here, in query_params.py or in the submission rules before
the table is touched. An AWS service that throttles or cannot be reached is a 503 with
`Retry-After`, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.idempotency import idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.typing import LambdaContext

from smq_lambda.errors import (
    AccessDenied,
    ConfigError,
    InvalidRequest,
    JobConflict,
    JobNotFound,
    NotOwner,
    PayloadTooLarge,
    PolicyViolation,
    ServiceUnavailable,
    VersionConflict,
)
from smq_lambda.handlers import query_params as params
from smq_lambda.handlers.composition import api_services
from smq_lambda.handlers.cost_routes import register_cost_routes
from smq_lambda.handlers.read_routes import register_read_routes
from smq_lambda.handlers.replays import REPLAY_CONFIG, REPLAYED
from smq_lambda.handlers.tracing import traced
from smq_lambda.handlers.views import error_view, job_view, page_view
from smq_lambda.service.cost_reports import CostReports
from smq_lambda.service.queue_api import QueueService
from smq_lambda.service.submission import MAX_REQUEST_BYTES
from smq_lambda.settings import Settings

if TYPE_CHECKING:
    from smq_lambda.adapters.replay_store import ReplayStore

logger = Logger(service="smq")
NAMESPACE = "smq"

MAX_BODY_BYTES = MAX_REQUEST_BYTES
ANONYMOUS = "anonymous"
"""Owner of requests without an IAM identity; API Gateway's AWS_IAM authorization never lets one
through, so only a local front without signing produces it."""

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def create_app(
    service: QueueService, idempotency_store: BasePersistenceLayer | None = None, costs: CostReports | None = None
) -> APIGatewayRestResolver:
    """The routes of openapi.yaml over `service` (tests inject one built on fakes or moto), and
    GET /costs over `costs` (tests that read no costs leave it out).

    With an `idempotency_store`, an add-job that repeats one of the same caller within the replay
    window (handlers/replays.py), while the job it queued is still the live one, is answered with
    that job as it is now instead of a 409 for its own job: a client that timed out and retried
    learns what happened to its first try. Once that job has finished (cancelled, failed fast) the
    same request is a new submission: the replay key includes the id of the newest finished job of
    the name, which the job's end changes. Never the first answer as it was: it may say pending of a
    job that has started or ended since."""
    app = APIGatewayRestResolver()

    submit = _submission(service, idempotency_store)

    @app.post("/add-job")
    def add_job() -> Response:
        request = _json_body(app.current_event)
        name = request.get("TrainingJobName") if isinstance(request, dict) else None
        if isinstance(name, str):
            logger.append_keys(job=name)
        submission = {
            "caller": _caller(app.current_event),
            "request": request,
            "after": service.last_finished_job_id(name) if idempotency_store is not None else None,
        }
        answer = submit(submission=submission)
        if answer.pop(REPLAYED, False):
            logger.info("identical request of a live job; answered with the job as it is now")
            answer = job_view(service.get(answer["name"], answer["job_id"]))
        return _json(202, answer)

    @app.get("/jobs")
    def list_jobs() -> Response:
        query = app.current_event.query_string_parameters or {}
        page = service.list_jobs(
            states=params.states(query.get("state")),
            pool=params.pool(query.get("pool")),
            owner=params.owner(query.get("owner")),
            limit=params.limit(query.get("limit")),
            next_token=params.next_token(query.get("next_token"), "GET /jobs"),
        )
        return _json(200, page_view(page))

    @app.get("/jobs/<name>")
    def get_job(name: str) -> Response:
        logger.append_keys(job=name)
        query = app.current_event.query_string_parameters or {}
        entry = service.get(name, params.job_id(query.get("job_id")))
        with_request = params.includes_request(query.get("include"))
        if with_request:
            service.check_may_read_request(entry.job, _caller(app.current_event))
        return _json(200, job_view(entry, with_request=with_request))

    @app.patch("/jobs/<name>")
    def change_priority(name: str) -> Response:
        logger.append_keys(job=name)
        body = _json_body(app.current_event)
        if not isinstance(body, dict) or "priority" not in body:
            raise InvalidRequest("priority", 'the body must be {"priority": <integer>}')
        entry = service.change_priority(name, body["priority"], _caller(app.current_event))
        _count("PriorityChanges")
        logger.info("priority changed", extra={"priority": entry.job.priority})
        return _json(200, job_view(entry))

    @app.delete("/jobs/<name>")
    def cancel_job(name: str) -> Response:
        logger.append_keys(job=name)
        entry = service.cancel(name, _caller(app.current_event))
        _count("JobsCancelled")
        logger.info("cancel accepted", extra={"state": str(entry.job.state)})
        return _json(202, job_view(entry))

    register_read_routes(app, service)
    if costs is not None:
        register_cost_routes(app, costs, _caller)

    def rejected(status: int, field: str | None, message: str) -> Response:
        _count("RequestsRejected", status=str(status))
        logger.info("request rejected", extra={"status": status, "field": field, "rule": message})
        return _json(status, error_view(field, message))

    @app.exception_handler(InvalidRequest)
    def invalid(exc: InvalidRequest) -> Response:
        return rejected(400, exc.field, exc.message)

    @app.exception_handler(PolicyViolation)
    def breaks_policy(exc: PolicyViolation) -> Response:
        _count("RequestsRejected", status="400")
        rules = [rule for _, rule, _ in exc.violations]
        logger.info("request breaks the policy", extra={"status": 400, "field": exc.field, "rules": rules})
        broken = [{"field": field, "rule": rule, "message": message} for field, rule, message in exc.violations]
        return _json(400, {**error_view(exc.field, exc.message), "violations": broken})

    @app.exception_handler(PayloadTooLarge)
    def too_large(exc: PayloadTooLarge) -> Response:
        return rejected(413, exc.field, exc.message)

    @app.exception_handler(NotOwner)
    def not_owner(exc: NotOwner) -> Response:
        return rejected(403, "name", str(exc))

    @app.exception_handler(AccessDenied)
    def denied(exc: AccessDenied) -> Response:
        return rejected(403, exc.field, exc.message)

    @app.exception_handler(JobNotFound)
    def not_found(exc: JobNotFound) -> Response:
        return rejected(404, "name", str(exc))

    @app.exception_handler(JobConflict)
    def conflict(exc: JobConflict) -> Response:
        # On add the clash is with the request's name; elsewhere with the job the path names.
        field = "TrainingJobName" if app.current_event.http_method.upper() == "POST" else "name"
        return rejected(409, field, exc.message)

    @app.exception_handler(IdempotencyAlreadyInProgressError)
    def replay_in_flight(exc: IdempotencyAlreadyInProgressError) -> Response:
        return rejected(409, "TrainingJobName", "an identical request is being processed; retry in a moment")

    @app.exception_handler(VersionConflict)
    def raced(exc: VersionConflict) -> Response:
        return rejected(409, "name", f"{exc}; it kept changing while this request ran, try again")

    @app.not_found
    def no_route(exc: NotFoundError) -> Response:
        event = app.current_event
        return rejected(404, None, f"no route for {event.http_method} {event.path}")

    @app.exception_handler(ServiceUnavailable)
    def unavailable(exc: ServiceUnavailable) -> Response:
        _count("ApiUnavailable")
        logger.warning("AWS unavailable", extra={"aws_service": exc.service, "code": exc.code, "error": str(exc)})
        wait = exc.retry_after_seconds
        message = f"{exc.service} is throttling the queue or cannot be reached ({exc.code}); retry after {wait} s"
        return _json(503, error_view(None, message), headers={"Retry-After": str(wait)})

    @app.exception_handler(IdempotencyPersistenceLayerError)
    def replay_store_failed(exc: IdempotencyPersistenceLayerError) -> Response:
        # The replay store's adapter raises ServiceUnavailable, which powertools wraps.
        if isinstance(exc.__cause__, ServiceUnavailable):
            return unavailable(exc.__cause__)
        return unexpected(exc)

    @app.exception_handler(ConfigError)
    def misconfigured(exc: ConfigError) -> Response:
        logger.error("configuration error", extra={"error": str(exc)})
        return _json(500, error_view(None, f"the queue is misconfigured: {exc}"))

    @app.exception_handler(Exception)
    def unexpected(exc: Exception) -> Response:
        # Only a fault on our side (an AWS outage, a bug) gets here; the caller learns nothing
        # internal, the log keeps the traceback.
        logger.error("unexpected error", exc_info=exc)
        _count("ApiErrors")
        return _json(500, error_view(None, "internal error; the request may not have been applied"))

    return app


def _submission(service: QueueService, store: BasePersistenceLayer | None) -> Callable[..., dict[str, Any]]:
    def submit(submission: dict[str, Any]) -> dict[str, Any]:
        entry = service.submit(submission["request"], submission["caller"])
        _count("JobsSubmitted", pool=entry.job.where.pool)
        logger.info("job queued", extra={"priority": entry.job.priority, "position": entry.position})
        return job_view(entry)

    if store is None:
        return submit
    return idempotent_function(data_keyword_argument="submission", persistence_store=store, config=REPLAY_CONFIG)(
        submit
    )


def lambda_handler(build_app: Callable[[], APIGatewayRestResolver]) -> Handler:
    """A Lambda entry point for the app `build_app` returns, with powertools logging (the job name
    as a key) and, when the template turns it on, tracing around it."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
    def entry(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        REPLAY_CONFIG.register_lambda_context(context)
        return build_app().resolve(event, context)

    return traced(entry)


@cache
def default_app() -> APIGatewayRestResolver:
    """Built on the first invocation of a cold start, from the environment the template sets."""
    import boto3

    settings = Settings.from_env()
    service, costs = api_services(settings)
    return create_app(service, idempotency_store(settings.table_name, boto3.client("dynamodb")), costs)


def idempotency_store(table_name: str, client: Any) -> ReplayStore:
    from smq_lambda.adapters.replay_store import ReplayStore

    return ReplayStore(table_name, client)


handler: Handler = lambda_handler(default_app)


def _count(name: str, **dimensions: str) -> None:
    """One CloudWatch metric (EMF), written at once: nothing is kept between invocations, so
    requests served concurrently in one process (the local API front) cannot mix their metrics."""
    metric = EphemeralMetrics(namespace=NAMESPACE, service="smq")
    for key, value in dimensions.items():
        metric.add_dimension(name=key, value=value)
    metric.add_metric(name=name, unit=MetricUnit.Count, value=1)
    metric.flush_metrics()


def _json(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=dict(body), headers=dict(headers or {})
    )


def _caller(event: APIGatewayProxyEvent) -> str:
    """The IAM principal API Gateway authenticated (AWS_IAM authorization)."""
    return event.request_context.identity.user_arn or ANONYMOUS


def _json_body(event: APIGatewayProxyEvent) -> object:
    raw = event.body
    if not raw:
        raise InvalidRequest(None, "a JSON body is required")
    if event.is_base64_encoded:
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest(None, "the body is marked base64 but is not valid base64") from exc
    else:
        data = raw.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BODY_BYTES:
        raise PayloadTooLarge(None, f"the body is {len(data)} bytes; the limit is {MAX_BODY_BYTES} (256 KB)")
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise InvalidRequest(None, "the body is not valid JSON: it nests too deeply") from exc
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8
        raise InvalidRequest(None, f"the body is not valid JSON: {exc}") from exc
