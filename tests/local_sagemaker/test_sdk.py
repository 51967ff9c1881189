"""The unmodified SageMaker Python SDK against the local service: fit, logs, artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BUCKET, ROLE, Stack

pytestmark = pytest.mark.slow  # importing the SDK alone takes seconds


def test_an_sdk_estimator_fits_on_the_local_service(
    process_stack: Stack,
    aws_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for variable, value in aws_env.items():
        monkeypatch.setenv(variable, value)
    endpoint = aws_env["AWS_ENDPOINT_URL_S3"]
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", endpoint)
    # boto3's own name for the Logs endpoint: service id "CloudWatch Logs".
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", process_stack.service.url)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    (tmp_path / "train.py").write_text(
        "import argparse, os\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--epochs', type=int)\n"
        "args = parser.parse_args()\n"
        "print('epochs', args.epochs, 'on', os.environ['SM_CURRENT_HOST'], flush=True)\n"
        "open(os.path.join(os.environ['SM_MODEL_DIR'], 'weights.bin'), 'wb').write(b'0')\n"
    )
    import sagemaker
    from sagemaker.pytorch import PyTorch

    no_telemetry = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
    session = sagemaker.Session(default_bucket=BUCKET, sagemaker_config=no_telemetry)
    estimator = PyTorch(
        entry_point="train.py",
        source_dir=str(tmp_path),
        role=ROLE,
        instance_type="ml.g5.xlarge",
        instance_count=1,
        framework_version="2.1",
        py_version="py310",
        hyperparameters={"epochs": 2},
        sagemaker_session=session,
        disable_profiler=True,
        use_spot_instances=True,
        max_run=600,
        max_wait=1200,
        checkpoint_s3_uri=f"s3://{BUCKET}/sdk-checkpoints",
    )

    estimator.fit(wait=True, logs="All")

    assert "epochs 2 on algo-1" in capsys.readouterr().out  # the SDK tailed CloudWatch Logs
    description = estimator.latest_training_job.describe()
    assert description["TrainingJobStatus"] == "Completed"
    assert estimator.model_data == description["ModelArtifacts"]["S3ModelArtifacts"]
