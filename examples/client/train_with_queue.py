"""Data-scientist quick start: `estimator.fit()` through the smq queue (README.md, "Data scientists:
change one argument").

Run from the repository root against `smq local up` (after exporting the variables it prints) or a
deployed stack (`SMQ_STACK_NAME`). tests/client/test_end_to_end.py runs this file unchanged.
"""

from sagemaker.pytorch import PyTorch
from smq import QueueTrainingJobSession

session = QueueTrainingJobSession(priority=5)  # the API URL comes from SMQ_API_URL or SMQ_STACK_NAME

estimator = PyTorch(
    entry_point="train.py",
    source_dir="trainer",
    role="arn:aws:iam::123456789012:role/SageMakerTrainingRole",
    framework_version="2.3",
    py_version="py311",
    instance_type="ml.m5.xlarge",
    instance_count=1,
    hyperparameters={"max-steps": 60, "img-size": 32, "patch-size": 8, "embed-dim": 64, "depth": 2,
                     "num-heads": 2, "batch-size": 16, "checkpoint-every-steps": 20, "log-every": 10},
    tags=[{"Key": "team", "Value": "vision"}],  # {"Key": "priority", "Value": "9"} would beat priority=5
    sagemaker_session=session,
)

estimator.fit()  # waits in the queue, streams the logs of each attempt, returns when the job completes
print("model:", estimator.model_data)
