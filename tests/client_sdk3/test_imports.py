"""The client with SDK v3 installed instead of v2, or with no SageMaker SDK at all."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("sagemaker.train", reason="needs the SageMaker Python SDK v3 (make test-sdk3)")

NO_SDK = "import sys; sys.modules['sagemaker'] = None  # any import of the SDK now fails\n"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_the_client_and_the_cli_import_without_any_sdk() -> None:
    result = run_python(
        NO_SDK + "import smq, smq.cli.main\n"
        "from smq import TrainingQueue, SmqApiClient\n"
        "assert 'sagemaker' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "smq.cli.main.main(['--help'])\n"
    )

    assert "usage" in result.stdout.lower(), result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_the_v2_session_says_which_sdk_it_needs() -> None:
    with pytest.raises(ImportError, match=r"smq-sagemaker\[sdk2\].*TrainingQueue\(\)\.train\(model_trainer\)"):
        from smq import QueueTrainingJobSession  # noqa: F401


def test_the_v3_path_says_which_sdk_it_needs_without_one() -> None:
    result = run_python(NO_SDK + "import smq.model_trainer\n")

    assert "smq-sagemaker[sdk3]" in result.stderr and "QueueTrainingJobSession" in result.stderr, result.stderr
