"""The AWS services a SageMaker instance talks to (S3, CloudWatch Logs, CloudWatch), local ones.

Clients are built only for services whose endpoint the stack configured
(`AWS_ENDPOINT_URL_<SERVICE>` or `AWS_ENDPOINT_URL`): the local service never reaches real AWS.
Without an S3 endpoint, jobs that need S3 fail with a clear reason; without a Logs or CloudWatch
endpoint, logs and metrics stay local.
"""

from __future__ import annotations

import logging
import queue
import tarfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
from boto3.exceptions import Boto3Error
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
METRIC_NAMESPACE = "/aws/sagemaker/TrainingJobs"
GPU_BUSY_PERCENT = 100.0
"""What a working job reports unless told otherwise: one GPU per host, fully used."""
GPU_IDLE_PERCENT = 0.0
# boto3 reads AWS_ENDPOINT_URL_CLOUDWATCH_LOGS (service id "CloudWatch Logs"); the smq stack
# also exports the shorter AWS_ENDPOINT_URL_LOGS.
_ENDPOINT_VARIABLES = {
    "s3": ("AWS_ENDPOINT_URL_S3",),
    "logs": ("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", "AWS_ENDPOINT_URL_LOGS"),
    "cloudwatch": ("AWS_ENDPOINT_URL_CLOUDWATCH",),
}
_LOG_BATCH = 1000
_MAX_MESSAGE_CHARS = 200_000

logger = logging.getLogger(__name__)


class MissingEndpointError(RuntimeError):
    """A job needs a service the local stack did not configure."""


TRANSFER_ERRORS = (Boto3Error, BotoCoreError, ClientError, MissingEndpointError, ValueError, OSError, tarfile.TarError)
"""What moving files between a job and S3 can raise; a job that hits one fails with the reason."""


class AwsServices:
    """Lazily built, shared (thread-safe) clients for the configured local endpoints."""

    def __init__(self, env: Mapping[str, str], region: str) -> None:
        self._env = dict(env)
        self._region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or region
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def endpoint(self, service: str) -> str | None:
        names = (*_ENDPOINT_VARIABLES[service], "AWS_ENDPOINT_URL")
        return next((self._env[n] for n in names if self._env.get(n)), None)

    def client(self, service: str) -> Any | None:
        """The client for `service`, or None when the stack has no endpoint for it."""
        endpoint = self.endpoint(service)
        if endpoint is None:
            return None
        with self._lock:
            if service not in self._clients:
                session = boto3.session.Session(
                    aws_access_key_id=self._env.get("AWS_ACCESS_KEY_ID"),
                    aws_secret_access_key=self._env.get("AWS_SECRET_ACCESS_KEY"),
                    aws_session_token=self._env.get("AWS_SESSION_TOKEN"),
                    region_name=self._region,
                )
                config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"})
                self._clients[service] = session.client(service, endpoint_url=endpoint, config=config)
            return self._clients[service]

    def report_gpu_utilization(self, job_name: str, hosts: int, percent: float) -> None:
        """Publish the host metric SageMaker publishes for every training instance's GPUs
        (dimension `Host` = `<job>/algo-<n>`), the same value for each host."""
        cloudwatch = self.client("cloudwatch")
        if cloudwatch is None:
            return
        try:
            cloudwatch.put_metric_data(
                Namespace=METRIC_NAMESPACE,
                MetricData=[
                    {
                        "MetricName": "GPUUtilization",
                        "Dimensions": [{"Name": "Host", "Value": f"{job_name}/algo-{host}"}],
                        "Value": percent,
                        "Unit": "Percent",
                    }
                    for host in range(1, hosts + 1)
                ],
            )
        except (BotoCoreError, ClientError):
            logger.warning("could not report GPUUtilization of %s", job_name, exc_info=True)

    def s3(self) -> Any:
        client = self.client("s3")
        if client is None:
            raise MissingEndpointError("no S3 endpoint is configured (AWS_ENDPOINT_URL_S3)")
        return client


def split_s3_uri(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"not an s3:// URI: {uri}")
    return parsed.netloc, parsed.path.lstrip("/")


def join_s3_uri(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *parts])


def download_prefix(s3: Any, uri: str, destination: Path) -> list[Path]:
    """Download every object under `uri` into `destination`, keeping paths below the prefix.

    An object whose key is the prefix itself (a single-file channel) lands under its base name.
    """
    bucket, prefix = split_s3_uri(uri)
    files: list[Path] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            key = item["Key"]
            relative = key.rsplit("/", 1)[-1] if key == prefix else key[len(prefix) :].lstrip("/")
            if not relative or key.endswith("/"):
                continue
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, key, str(target))
            files.append(target)
    return files


def upload_directory(s3: Any, source: Path, uri: str, synced: dict[str, tuple[int, int]]) -> int:
    """Upload the files of `source` under `uri`, skipping those unchanged since the last sync.

    `synced` maps relative paths to (size, mtime_ns) as last uploaded or downloaded. Objects are
    never deleted, like SageMaker's checkpoint sync.
    """
    bucket, prefix = split_s3_uri(uri)
    uploaded = 0
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        relative = path.relative_to(source).as_posix()
        stat = path.stat()
        stamp = (stat.st_size, stat.st_mtime_ns)
        if synced.get(relative) == stamp:
            continue
        key = f"{prefix.rstrip('/')}/{relative}" if prefix else relative
        s3.upload_file(str(path), bucket, key)
        synced[relative] = stamp
        uploaded += 1
    return uploaded


def pack_directory(source: Path, archive: Path) -> None:
    """`model.tar.gz` as SageMaker builds it: the directory's contents at the archive root."""
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(source.iterdir()):
            tar.add(path, arcname=path.name)


def unpack(archive: Path, destination: Path) -> None:
    with tarfile.open(archive, "r:*") as tar:
        tar.extractall(destination, filter="data")


class LogStream:
    """Ships one attempt's output, line by line, to CloudWatch Logs and a local file.

    Lines are queued and sent by a thread in batches, so a chatty job is never slowed down by
    its pipe filling up while a PutLogEvents call is in flight.
    """

    _END = object()

    def __init__(self, logs: Any | None, stream: str, local_file: Path) -> None:
        self._logs = logs
        self._stream = stream
        self._file = local_file.open("a", encoding="utf-8")
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._ship, name=f"logs-{stream}", daemon=True)
        if logs is not None and not self._create_stream(logs):
            self._logs = None
        self._thread.start()

    def write(self, line: str) -> None:
        if self._file.closed:  # a grandchild that escaped the process group, still printing
            return
        self._file.write(line + "\n")
        self._file.flush()
        if self._logs is not None:
            self._queue.put({"timestamp": int(time.time() * 1000), "message": line[:_MAX_MESSAGE_CHARS] or " "})

    def close(self) -> None:
        self._queue.put(self._END)
        self._thread.join(timeout=30)
        self._file.close()

    def _create_stream(self, logs: Any) -> bool:
        try:
            try:
                logs.create_log_group(logGroupName=LOG_GROUP)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ResourceAlreadyExistsException":
                    raise
            try:
                logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=self._stream)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ResourceAlreadyExistsException":
                    raise
        except (BotoCoreError, ClientError):
            logger.warning("CloudWatch Logs unavailable; %s is logged locally only", self._stream, exc_info=True)
            return False
        return True

    def _ship(self) -> None:
        done = False
        while not done:
            batch: list[dict[str, Any]] = []
            item = self._queue.get()
            while True:
                if item is self._END:
                    done = True
                    break
                batch.append(item)
                if len(batch) >= _LOG_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch and self._logs is not None:
                self._put(self._logs, batch)

    def _put(self, logs: Any, batch: list[dict[str, Any]]) -> None:
        try:
            logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=self._stream, logEvents=batch)
        except (BotoCoreError, ClientError):
            logger.warning("could not ship %d log lines of %s", len(batch), self._stream, exc_info=True)
