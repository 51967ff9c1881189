"""Powertools Idempotency's DynamoDB persistence (replayed add-job answers) under throttling.

A throttled or unreachable table raises errors.ServiceUnavailable from each of the layer's hooks,
which powertools wraps in IdempotencyPersistenceLayerError; the API answers 503 for it. Each of
those failures comes before the submission was written, or after it failed, so nothing was queued
and a retry is safe. The one exception is completing the replay record after the job was queued:
that failure is logged and the caller gets the job it queued, not a 503 that would make it retry
into a 409 for its own job.

    save_inprogress ─▶ submit (job written) ─▶ save_success   (tolerated when unavailable)
           │                  │ raised
           ▼                  ▼
          503          delete_record ─▶ the submission's own answer (503 if the delete fails)
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from smq_lambda.adapters.dynamodb_errors import unavailable_as_typed
from smq_lambda.errors import ServiceUnavailable

logger = Logger(service="smq", child=True)


class ReplayStore(DynamoDBPersistenceLayer):
    """Replay records in the queue table: their keys (`<function>#<hash>`) can never be job names,
    they carry no index attributes, and the table's TTL attribute removes them."""

    def __init__(self, table_name: str, client: Any) -> None:
        super().__init__(table_name=table_name, key_attr="name", expiry_attr="expires_at", boto3_client=client)

    def save_success(self, data: dict[str, Any], result: dict) -> None:
        try:
            super().save_success(data, result)
        except ServiceUnavailable as exc:
            logger.warning(
                "the job is queued but its replay record could not be completed; an identical retry "
                "is answered 409 until the record expires",
                extra={"error": str(exc)},
            )

    def _get_record(self, idempotency_key: str) -> DataRecord:
        with unavailable_as_typed():
            return super()._get_record(idempotency_key)

    def _put_record(self, data_record: DataRecord) -> None:
        with unavailable_as_typed():
            super()._put_record(data_record)

    def _update_record(self, data_record: DataRecord) -> None:
        with unavailable_as_typed():
            super()._update_record(data_record)

    def _delete_record(self, data_record: DataRecord) -> None:
        with unavailable_as_typed():
            super()._delete_record(data_record)
