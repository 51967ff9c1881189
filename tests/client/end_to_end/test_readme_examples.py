"""The README examples on the whole local stack: the estimator example and the Python API example."""

from __future__ import annotations

import re
import runpy

import pytest
from smq import TrainingQueue
from smq.local.stack import REPOSITORY, LocalStack

from tests.client.end_to_end.support import model_archive_exists

pytestmark = pytest.mark.slow

EXAMPLES = REPOSITORY / "examples" / "client"


def test_the_readme_estimator_example_trains_through_the_queue(
    process_stack: LocalStack, capsys: pytest.CaptureFixture[str], offline: list[str]
) -> None:
    namespace = runpy.run_path(str(EXAMPLES / "train_with_queue.py"))

    estimator = namespace["estimator"]
    output = capsys.readouterr().out
    assert "starting attempt 1 of" in output
    assert "no checkpoint in" in output
    assert re.search(r"training complete at step 60\b", output), output
    assert estimator.model_data.endswith("/output/model.tar.gz")
    assert model_archive_exists(estimator.model_data)
    assert estimator.latest_training_job.describe()["TrainingJobStatus"] == "Completed"
    assert offline == []


def test_the_readme_python_api_example_runs(synthetic_stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "queue_api.py"))

    output = capsys.readouterr().out
    assert "sweep-a pending position 1" in output
    assert re.search(r"sweep-b\s+\w+\s+priority 7", output)
    assert re.search(r"sweep-b completed \['sweep-b-[0-9a-f]{12}-1'\]", output), output
    assert TrainingQueue().get_job("sweep-a").state == "cancelled"
