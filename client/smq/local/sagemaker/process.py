"""The `process` executor: a job's entry point as a local process under the container contract.

Each attempt gets a fresh `/opt/ml` tree (as a new instance would), code, data and checkpoints
from S3. Each host (one per instance group: contract.py) runs the entry point in its own process
group, so stopping it also stops whatever it spawned (torchrun workers, data loaders), and sends its
output line by line to its own CloudWatch Logs stream. As on SageMaker, training ends when every host
has exited, or as soon as one fails, which stops the others.

A local process has no GPU to measure, so while it trains every host reports the
`GPUUtilization` its request's `Environment["SMQ_LOCAL_GPU_UTILIZATION"]` names (percent; default
100, busy), and 0 once an injected `hang` has frozen it: that is how a test makes a job look idle
or busy to the idle-GPU alarms.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import signal as signals
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from smq.local.sagemaker import contract
from smq.local.sagemaker.aws import (
    GPU_BUSY_PERCENT,
    GPU_IDLE_PERCENT,
    TRANSFER_ERRORS,
    AwsServices,
    LogStream,
    download_prefix,
    join_s3_uri,
    pack_directory,
    split_s3_uri,
    unpack,
    upload_directory,
)
from smq.local.sagemaker.errors import ValidationError
from smq.local.sagemaker.runtime import JobFailure, JobRun, PhaseTimings, Signal, TrainResult

FAILURE_REASON_LIMIT = 1024  # the FailureReason shape's maximum length
GPU_UTILIZATION_VARIABLE = "SMQ_LOCAL_GPU_UTILIZATION"
_TAIL_LINES = 20
_PUMP_JOIN_SECONDS = 5.0

logger = logging.getLogger(__name__)


class ProcessExecutor:
    """Runs `sagemaker_program` (or ContainerEntrypoint) with `python` in a new session."""

    def __init__(
        self, aws: AwsServices, base_env: Mapping[str, str], timings: PhaseTimings, python: str = sys.executable
    ) -> None:
        self._aws = aws
        self._base_env = dict(base_env)
        self._timings = timings
        self._python = python

    def validate(self, request: Mapping[str, Any]) -> None:
        if not contract.has_entry_point(request):
            raise ValidationError(
                "The local SageMaker service runs the sagemaker_program hyperparameter or "
                "AlgorithmSpecification.ContainerEntrypoint; the request has neither."
            )
        gpu_utilization(request)

    def prepare(self, run: JobRun) -> None:
        paths = run.paths
        if run.attempt == 1:  # a work directory left by an earlier stack with this job name
            shutil.rmtree(paths.root, ignore_errors=True)
        paths.reset()
        contract.write_config(paths, run.request)
        try:
            submit = run.hyperparameters.get(contract.SUBMIT_DIRECTORY)
            if submit:
                self._fetch_code(str(submit), paths)
            for channel in run.request.get("InputDataConfig", []):
                uri = channel["DataSource"]["S3DataSource"]["S3Uri"]
                download_prefix(self._aws.s3(), uri, paths.channel_dir(channel["ChannelName"]))
            run.synced.clear()
            checkpoint = run.request.get("CheckpointConfig")
            if checkpoint:
                for path in download_prefix(self._aws.s3(), checkpoint["S3Uri"], paths.checkpoint_dir):
                    stat = path.stat()
                    relative = path.relative_to(paths.checkpoint_dir).as_posix()
                    run.synced[relative] = (stat.st_size, stat.st_mtime_ns)
        except TRANSFER_ERRORS as exc:
            raise JobFailure(f"ClientError: Data download failed: {exc}") from exc

    def train(self, run: JobRun) -> TrainResult:
        command = contract.entry_command(run.request, self._python)
        cluster = contract.hosts(run.request)
        processes = _Cluster(run, len(cluster))
        try:
            for host in cluster:
                env = {
                    **self._base_env,
                    **run.request.get("Environment", {}),
                    **contract.container_env(run.paths, run.request, job_arn=run.arn, host=host),
                }
                processes.start(host, command, env, self._aws.client("logs"))
            ended_by = self._supervise(run, processes)
            failed = processes.first_failure()
        finally:
            processes.close()  # SIGKILL what outlived the entry points
        if ended_by is not None or failed is None:
            return TrainResult(ended_by=ended_by, exit_code=processes.first_exit_code())
        code = failed.process.returncode
        return TrainResult(exit_code=code, failure_reason=failure_reason(run.paths, code, list(failed.tail), command))

    def save_checkpoints(self, run: JobRun) -> None:
        checkpoint = run.request.get("CheckpointConfig")
        if not checkpoint:
            return
        try:
            upload_directory(self._aws.s3(), run.paths.checkpoint_dir, checkpoint["S3Uri"], run.synced)
        except TRANSFER_ERRORS:
            logger.warning("could not upload the checkpoints of %s", run.name, exc_info=True)

    def upload_model(self, run: JobRun) -> str | None:
        output = join_s3_uri(run.request["OutputDataConfig"]["S3OutputPath"], run.name, "output")
        uploads = [(run.paths.model_dir, "model.tar.gz")]
        if any(run.paths.output_data_dir.iterdir()):
            uploads.append((run.paths.output_data_dir, "output.tar.gz"))
        try:
            for source, name in uploads:
                archive = run.paths.root / name
                pack_directory(source, archive)
                bucket, key = split_s3_uri(join_s3_uri(output, name))
                self._aws.s3().upload_file(str(archive), bucket, key)
        except TRANSFER_ERRORS as exc:
            raise JobFailure(f"ClientError: Unable to upload the model artifacts: {exc}") from exc
        return join_s3_uri(output, "model.tar.gz")

    def _supervise(self, run: JobRun, processes: _Cluster) -> Signal | None:
        """Wait for the hosts or a signal, reporting GPU utilization meanwhile; None means the
        hosts ended by themselves."""
        handled: set[Signal] = set()
        working = gpu_utilization(run.request)
        while True:
            hung = Signal.HANG in handled
            self._aws.report_gpu_utilization(run.name, run.hosts, GPU_IDLE_PERCENT if hung else working)
            signal = run.control.wait(self._timings.metric_interval, handled)
            if signal is None:
                continue
            if signal is Signal.EXITED:
                return None
            if signal is Signal.HANG:
                processes.signal(signals.SIGSTOP)
                handled.add(Signal.HANG)
            elif signal is Signal.FAIL:
                processes.signal(signals.SIGKILL)
                return signal
            else:
                _terminate(run, processes)
                return signal

    def _fetch_code(self, uri: str, paths: contract.JobPaths) -> None:
        """Unpack `sagemaker_submit_directory`: an s3:// tarball, or a file:// tarball or
        directory (what the SDK's local mode passes)."""
        if uri.startswith("s3://"):
            archive = paths.root / "sourcedir.tar.gz"
            bucket, key = split_s3_uri(uri)
            self._aws.s3().download_file(bucket, key, str(archive))
            unpack(archive, paths.code_dir)
            return
        source = Path(urlparse(uri).path if uri.startswith("file://") else uri)
        if source.is_dir():
            shutil.copytree(source, paths.code_dir, dirs_exist_ok=True)
        else:
            unpack(source, paths.code_dir)


def gpu_utilization(request: Mapping[str, Any]) -> float:
    """The GPUUtilization a working job reports, from its request (see the module docstring)."""
    text = request.get("Environment", {}).get(GPU_UTILIZATION_VARIABLE)
    if text is None:
        return GPU_BUSY_PERCENT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValidationError(f"Environment {GPU_UTILIZATION_VARIABLE} must be a percentage >= 0, not {text!r}.")
    return value


def failure_reason(paths: contract.JobPaths, exit_code: int, tail: list[str], command: list[str]) -> str:
    """What SageMaker reports for a failed script: `/opt/ml/output/failure` if the script wrote
    it, else the exit code, the last lines of output and the command, within 1024 characters."""
    if paths.failure_file.is_file():
        written = paths.failure_file.read_text(errors="replace").strip()
        if written:
            return f"AlgorithmError: {written}"[:FAILURE_REASON_LIMIT]
    code = 128 - exit_code if exit_code < 0 else exit_code  # killed by signal N: 128 + N
    shown = " ".join(command)
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    head = f'AlgorithmError: ExecuteUserScriptError:\nExitCode {code}\nErrorMessage "'
    end = f'"\nCommand "{shown}", exit code: {code}'
    lines = "\n".join(tail)
    room = FAILURE_REASON_LIMIT - len(head) - len(end)
    if len(lines) > room:
        lines = "..." + lines[len(lines) - room + 3 :]
    return head + lines + end


@dataclass
class _HostProcess:
    """One host's entry point: its process, its log stream and its last lines of output."""

    process: subprocess.Popen[bytes]
    stream: LogStream
    tail: deque[str]
    threads: tuple[threading.Thread, ...]


class _Cluster:
    """The processes of one attempt, one per host. Each host's waiter raises EXITED on the job when
    the last host has exited or as soon as one fails."""

    def __init__(self, run: JobRun, count: int) -> None:
        self._run = run
        self.hosts: list[_HostProcess] = []
        self._running = count
        self._lock = threading.Lock()
        self.all_exited = threading.Event()

    def start(self, host: contract.Host, command: list[str], env: dict[str, str], logs: Any) -> None:
        run = self._run
        stream = LogStream(logs, f"{run.name}/{host.name}-{int(time.time())}", run.paths.log_file(host.name))
        try:
            process = subprocess.Popen(
                command,
                cwd=run.paths.code_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            stream.close()
            raise JobFailure(f"AlgorithmError: cannot start {command[0]} on {host.name}: {exc}") from exc
        tail: deque[str] = deque(maxlen=_TAIL_LINES)
        pump = threading.Thread(target=_pump, args=(process, stream, tail), daemon=True, name=f"output-{run.name}")
        waiter = threading.Thread(target=self._wait, args=(process,), daemon=True, name=f"wait-{run.name}")
        self.hosts.append(_HostProcess(process, stream, tail, (waiter, pump)))
        pump.start()
        waiter.start()

    def signal(self, signal: signals.Signals) -> None:
        for host in self.hosts:
            _signal_group(host.process.pid, signal)

    def first_failure(self) -> _HostProcess | None:
        """The first host that has exited with an error, if any."""
        return next((host for host in self.hosts if host.process.returncode not in (None, 0)), None)

    def first_exit_code(self) -> int | None:
        return self.hosts[0].process.returncode if self.hosts else None

    def close(self) -> None:
        self.signal(signals.SIGKILL)
        for host in self.hosts:
            waiter, pump = host.threads
            waiter.join()
            pump.join(timeout=_PUMP_JOIN_SECONDS)
            host.stream.close()

    def _wait(self, process: subprocess.Popen[bytes]) -> None:
        process.wait()
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            self.all_exited.set()
        if last or process.returncode != 0:
            self._run.control.raise_signal(Signal.EXITED)


def _terminate(run: JobRun, processes: _Cluster) -> None:
    """SIGTERM to every host's group, SIGKILL once the grace period is over."""
    processes.signal(signals.SIGTERM)
    if not processes.all_exited.wait(run.stop_grace):
        logger.info("%s ignored SIGTERM for %.1f s; killing it", run.name, run.stop_grace)
        processes.signal(signals.SIGKILL)


def _signal_group(group: int, signal: signals.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal)


def _pump(process: subprocess.Popen[bytes], stream: LogStream, tail: deque[str]) -> None:
    assert process.stdout is not None
    with process.stdout:
        for raw in process.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            tail.append(line)
            stream.write(line)
