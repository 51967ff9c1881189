"""Slow: the wheel is all a user needs. Built from a copy of the sources and installed with the `local`
extra into a clean virtual environment (dependencies from the package index pip is configured for),
it runs `smq --help`, `smq local up` with the synthetic executor, and a job submitted with `smq
submit` to the end; and the template it ships is the repository's template.yaml."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_INPUTS = ("pyproject.toml", "README.md", "template.yaml", "client", "functions")
"""What the build reads. A copy, because building in the working tree writes build/ and egg-info
into it, and setuptools' reused build/lib can put files that no longer exist into the wheel."""
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info")
INSTALL_SECONDS = 600
JOB = "wheel-job"
SYNTHETIC_REQUEST = {
    "TrainingJobName": JOB,
    "RoleArn": "arn:aws:iam::000000000000:role/SageMakerRole",
    "AlgorithmSpecification": {"TrainingImage": "smq-local/python:3.11", "TrainingInputMode": "File"},
    "HyperParameters": {"smq_synthetic_duration": "1"},
    "OutputDataConfig": {"S3OutputPath": "s3://smq-local/output"},
    "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
}


def clean_environment() -> dict[str, str]:
    """This process's environment less whatever could point the venv at the repository or a stack."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {
        key: value for key, value in os.environ.items() if key not in dropped and not key.startswith(("AWS_", "SMQ_"))
    }


def succeed(command: list[str], **options: Any) -> str:
    """Run `command` to exit 0 and return its stdout; a failure shows its stderr."""
    result = subprocess.run(command, capture_output=True, text=True, **options)
    assert result.returncode == 0, result.stderr
    return result.stdout


def build_wheel(directory: Path) -> Path:
    sources = directory / "src"
    sources.mkdir()
    for name in BUILD_INPUTS:
        source = REPOSITORY / name
        if source.is_dir():
            shutil.copytree(source, sources / name, symlinks=True, ignore=IGNORED)
        else:
            shutil.copy2(source, sources / name)
    wheels = directory / "wheels"
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(sources)]
    succeed(pip, timeout=INSTALL_SECONDS)
    (wheel,) = wheels.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a new virtual environment holding only the wheel and its dependencies."""
    directory = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(directory)
    venv = directory / "venv"
    succeed([sys.executable, "-m", "venv", str(venv)], timeout=INSTALL_SECONDS)
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-compile", f"{wheel}[local]"]
    succeed(install, env=clean_environment(), timeout=INSTALL_SECONDS)
    return venv / "bin"


def run(venv_bin: Path, *argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """A command of the venv, run outside the repository so that nothing is imported from it."""
    return succeed([str(venv_bin / argv[0]), *argv[1:]], cwd=cwd, env=env or clean_environment(), timeout=120)


def test_smq_and_its_template_come_from_the_wheel(venv_bin: Path, tmp_path: Path) -> None:
    printed = run(venv_bin, "python", "-c", "from smq.local.stack import TEMPLATE; print(TEMPLATE)", cwd=tmp_path)
    shipped = Path(printed.strip())

    assert shipped.is_relative_to(venv_bin.parent)
    assert shipped.read_bytes() == (REPOSITORY / "template.yaml").read_bytes()


def test_smq_help_lists_the_commands(venv_bin: Path, tmp_path: Path) -> None:
    printed = run(venv_bin, "smq", "--help", cwd=tmp_path)

    assert "submit" in printed and "local" in printed


@pytest.fixture
def local_stack(venv_bin: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """`smq local up` of the venv, running: the state it writes (API URL, client environment)."""
    workdir = tmp_path / "stack"
    output = tmp_path / "up.log"
    smq = str(venv_bin / "smq")
    with output.open("w") as log:
        up_command = [smq, "local", "up", "--port", "0", "--executor", "synthetic", "--workdir", str(workdir)]
        up = subprocess.Popen(up_command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env=clean_environment())
    try:
        deadline = time.monotonic() + 60
        while not (workdir / "stack.json").exists():
            assert up.poll() is None, output.read_text()
            assert time.monotonic() < deadline, output.read_text()
            time.sleep(0.2)
        yield json.loads((workdir / "stack.json").read_text())
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=30) == 0, output.read_text()
    finally:
        if up.poll() is None:
            up.kill()


def test_a_job_submitted_to_smq_local_up_completes(venv_bin: Path, tmp_path: Path, local_stack: dict[str, Any]) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(SYNTHETIC_REQUEST))
    env = {**clean_environment(), **local_stack["env"]}

    queued = json.loads(run(venv_bin, "smq", "submit", str(request), "--json", cwd=tmp_path, env=env))
    deadline = time.monotonic() + 60
    job = queued
    while job["state"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.5)
        job = json.loads(run(venv_bin, "smq", "describe", JOB, "--json", cwd=tmp_path, env=env))

    assert queued["name"] == JOB
    assert job["state"] == "completed", job
