"""`LocalSageMaker`: the local training service, assembled and started as one object."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from smq.local.sagemaker.aws import AwsServices
from smq.local.sagemaker.events import EventDispatcher
from smq.local.sagemaker.jobs import TrainingJobs
from smq.local.sagemaker.process import ProcessExecutor
from smq.local.sagemaker.runtime import Executor, PhaseTimings
from smq.local.sagemaker.server import SageMakerHttpServer
from smq.local.sagemaker.synthetic import SyntheticExecutor

EXECUTORS = ("process", "synthetic")
_EVENT_DRAIN_SECONDS = 30.0
_POLL_SECONDS = 0.05  # how soon serve_forever notices shutdown()


class LocalSageMaker:
    """SageMaker training jobs on this machine, behind the real wire protocol.

    `aws_env` holds the `AWS_ENDPOINT_URL_*` variables, credentials and region of the local
    S3/Logs/CloudWatch; the service uses them and passes them to every job process. Without it,
    the `AWS_*` variables of this process are used. `on_event` receives each EventBridge event
    on a dedicated thread, in order.
    """

    def __init__(
        self,
        *,
        workdir: Path,
        on_event: Callable[[dict[str, Any]], None],
        stop_grace_seconds: float = 120.0,
        executor: str = "process",
        aws_env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        region: str = "us-east-1",
        account_id: str = "000000000000",
        timings: PhaseTimings | None = None,
    ) -> None:
        if executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, not {executor!r}")
        env = dict(aws_env) if aws_env is not None else {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        env.setdefault("AWS_DEFAULT_REGION", region)
        env.setdefault("AWS_REGION", region)
        timings = timings or PhaseTimings()
        aws = AwsServices(env, region)
        runner: Executor = (
            ProcessExecutor(aws, {**os.environ, **env}, timings)
            if executor == "process"
            else SyntheticExecutor(aws, timings)
        )
        self._events = EventDispatcher(on_event)
        self._jobs = TrainingJobs(
            workdir=Path(workdir),
            executor=runner,
            events=self._events,
            stop_grace=stop_grace_seconds,
            timings=timings,
            region=region,
            account_id=account_id,
        )
        jobs = self._jobs
        self._server = SageMakerHttpServer(
            (host, port),
            {
                "CreateTrainingJob": jobs.create_training_job,
                "DescribeTrainingJob": jobs.describe_training_job,
                "StopTrainingJob": jobs.stop_training_job,
                "UpdateTrainingJob": jobs.update_training_job,
                "ListTrainingJobs": jobs.list_training_jobs,
                "AddTags": jobs.add_tags,
                "ListTags": jobs.list_tags,
                "DeleteTags": jobs.delete_tags,
            },
            jobs.inject,
        )
        self._host = host
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve requests on a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(_POLL_SECONDS,), name="local-sagemaker", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The endpoint for `AWS_ENDPOINT_URL_SAGEMAKER`."""
        return f"http://{self._host}:{self._server.server_port}"

    def inject(self, job: str, fault: str, reason: str | None = None) -> None:
        """Inject `interrupt`, `fail` (with `reason` as its FailureReason) or `hang` into the
        training job named `job`."""
        self._jobs.inject(job, fault, reason)

    def shutdown(self) -> None:
        """Stop every job and wait for its processes, deliver the last events, stop serving.

        The server stays up until the events are delivered, because their handler may call it.
        """
        self._jobs.shutdown()
        self._events.close(_EVENT_DRAIN_SECONDS)
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
