"""Slow, end to end with real processes: the demo's scenario with the real trainer, and `smq local up`
stopping cleanly with no process left behind. Each starts a stack of its own."""

from __future__ import annotations

import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import boto3
import psutil
import pytest
from smq import SmqApiClient
from smq.local.demo import Pace, run_demo
from smq.local.stack import read_state

from tests.e2e.local import process_request, wait_for
from tests.e2e.test_process_executor import STUBBORN


def _children_once_spawned(pid: int, timeout: float = 30) -> list[psutil.Process]:
    """The job process appears after the Downloading phase, a moment after the job is InProgress."""
    deadline = time.monotonic() + timeout
    while not (children := psutil.Process(pid).children(recursive=True)):
        assert time.monotonic() < deadline, "the training job never ran as a child process"
        time.sleep(0.2)
    return children


SHORT_JOBS = Pace(trainer_steps=240)
"""A fifth of the demo's training, the suite's largest cost. job4 is submitted once job1 has saved
its first checkpoint (step 100); job1 trains twice the others' steps, so 380 steps (10 s or more on
one core) are left for the preemption to land mid-training, also on a loaded machine."""


@pytest.mark.slow
def test_the_real_trainer_is_preempted_resumes_from_its_checkpoint_and_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_demo(tmp_path / "demo", warm_up=False, pace=SHORT_JOBS) == 0

    printed = capsys.readouterr().out
    assert "preempted for job4" in printed
    assert "All four jobs completed" in printed


@pytest.mark.slow
def test_smq_local_up_stops_cleanly_and_leaves_no_process_behind(tmp_path: Path) -> None:
    workdir = tmp_path / "up"
    command = [sys.executable, "-m", "smq.cli", "local", "up", "--port", "0", "--executor", "process",
               "--workdir", str(workdir), "--stop-grace", "2"]  # fmt: skip
    up = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (workdir / "stack.json").exists():
            assert up.poll() is None, up.stdout.read() if up.stdout else ""
            assert time.monotonic() < deadline, "the stack did not come up"
            time.sleep(0.2)
        state = read_state(workdir)
        client = SmqApiClient(state["api_url"], region="us-east-1")
        archive = tmp_path / "src.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            script = tmp_path / "main.py"
            script.write_text(STUBBORN)
            tar.add(script, arcname="main.py")
        s3 = boto3.client("s3", endpoint_url=state["env"]["AWS_ENDPOINT_URL_S3"], region_name="us-east-1",
                          aws_access_key_id=state["env"]["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=state["env"]["AWS_SECRET_ACCESS_KEY"])  # fmt: skip
        s3.upload_file(str(archive), "smq-local", "code/up.tar.gz")
        client.add_job(
            process_request("up-job", priority=0, source_uri="s3://smq-local/code/up.tar.gz", program="main.py")
        )
        client.add_job(
            process_request("up-doomed", priority=0, source_uri="s3://smq-local/code/up.tar.gz", program="main.py")
        )
        wait_for(client, "up-job", {"running"})
        wait_for(client, "up-doomed", {"running"})
        inject = [sys.executable, "-m", "smq.cli", "local", "inject", "fail", "up-doomed", "--workdir", str(workdir),
                  "--reason", "AlgorithmError: injected by the test"]  # fmt: skip
        injected = subprocess.run(inject, capture_output=True, text=True, timeout=60)
        assert injected.returncode == 0, injected.stderr
        assert "injected fail" in injected.stdout
        assert "injected" in wait_for(client, "up-doomed", {"failed"}, timeout=30)["reason"], (
            "a user-code failure is final"
        )
        family = _children_once_spawned(up.pid)

        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=60) == 0
    finally:
        if up.poll() is None:
            up.kill()
    time.sleep(0.5)
    assert [
        process.pid for process in family if process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    ] == []
    assert not (workdir / "stack.json").exists()
