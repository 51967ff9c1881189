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
