"""Package boundaries: Lambda code never imports the SageMaker SDK (nor the client package, nor a
test helper), so it stays small and starts fast."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[1] / "functions" / "smq_lambda"
FORBIDDEN = ("sagemaker", "smq", "tests", "torch", "moto")


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", sorted(FUNCTIONS.rglob("*.py")), ids=lambda path: str(path.relative_to(FUNCTIONS)))
def test_lambda_code_imports_no_sdk_client_or_test_code(path: Path) -> None:
    roots = {module.split(".")[0] for module in imported_modules(path)}
    assert not roots & set(FORBIDDEN), f"{path} imports {sorted(roots & set(FORBIDDEN))}"


PURE_LAYERS = ("domain", "governance", "scheduling")
"""The pure decisions: they import neither the ports (the edges) nor what sits on them. (botocore's
service model is a library they may read: domain/request_shape validates requests with it.)"""
EDGES = ("smq_lambda.ports", "smq_lambda.adapters", "smq_lambda.service", "smq_lambda.handlers", "boto3")


@pytest.mark.parametrize(
    "path",
    sorted(path for layer in PURE_LAYERS for path in (FUNCTIONS / layer).rglob("*.py")),
    ids=lambda path: str(path.relative_to(FUNCTIONS)),
)
def test_the_pure_layers_import_no_edge(path: Path) -> None:
    edges = {module for module in imported_modules(path) if module.startswith(EDGES)}
    assert not edges, f"{path} imports {sorted(edges)}"
