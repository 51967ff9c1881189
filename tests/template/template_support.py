"""Paths and the offline SAM translation shared by the template tests (imported by conftest and
the tests; a uniquely named module, so it never clashes with another test area's helpers)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "template.yaml"
OPENAPI_PATH = ROOT / "openapi.yaml"
REGION = "us-east-1"

ALLOWED_ROLES = (
    "arn:aws:iam::111122223333:role/TrainingRoleA",
    "arn:aws:iam::111122223333:role/TrainingRoleB",
)
REQUIRED_PARAMETERS = {
    "AllowedRoleArns": ",".join(ALLOWED_ROLES),
    "CheckpointS3Prefix": "s3://amzn-s3-demo-bucket/smq-checkpoints",
}
"""Values for the parameters that have no default (what samconfig.toml asks the operator for)."""


class _NoManagedPolicyLookup:
    """The translator asks IAM for managed policy ARNs only when a policy is named, not given as
    an ARN; the template must not need that, so any lookup fails the test."""

    def load(self) -> dict[str, str]:
        raise AssertionError("the template names a managed policy; the translation would need IAM")


def _packaged(node: Any, root: Path) -> Any:
    """What `sam package` hands CloudFormation: AWS::Include expanded (CloudFormation runs it
    before the SAM transform) and local code paths replaced by S3 locations."""
    if isinstance(node, list):
        return [_packaged(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    transform = node.get("Fn::Transform")
    if len(node) == 1 and isinstance(transform, dict) and transform.get("Name") == "AWS::Include":
        with open(root / transform["Parameters"]["Location"], encoding="utf-8") as stream:
            return yaml.safe_load(stream)
    packaged = {key: _packaged(value, root) for key, value in node.items()}
    if isinstance(packaged.get("CodeUri"), str) and not packaged["CodeUri"].startswith("s3://"):
        packaged["CodeUri"] = "s3://amzn-s3-demo-bucket/smq/functions.zip"
    return packaged


def translate(template: Mapping[str, Any], parameter_values: Mapping[str, str]) -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    with pytest.MonkeyPatch.context() as patch:
        # The translator derives the partition from the region; no credentials are needed.
        patch.setenv("AWS_DEFAULT_REGION", REGION)
        patch.delenv("AWS_PROFILE", raising=False)
        return transform(
            _packaged(copy.deepcopy(dict(template)), ROOT),
            dict(parameter_values),
            _NoManagedPolicyLookup(),  # type: ignore[arg-type]
        )
