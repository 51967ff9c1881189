"""What the client's end-to-end tests share besides their stacks (conftest.py)."""

from __future__ import annotations

import boto3

POOL = "ml.m5.xlarge"


def model_archive_exists(model_data: str) -> bool:
    bucket, _, key = model_data.removeprefix("s3://").partition("/")
    s3 = boto3.client("s3")
    return s3.head_object(Bucket=bucket, Key=key)["ContentLength"] > 0
