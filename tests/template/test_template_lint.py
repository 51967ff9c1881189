"""cfn-lint on the template as written and on the template CloudFormation gets after the SAM
transform (which also lints the generated roles, rules and the imported OpenAPI integrations).
Slow: `make lint` lints the template as written too; `make test` runs both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint

from tests.template.template_support import ROOT, TEMPLATE_PATH

pytestmark = pytest.mark.slow


def test_cfn_lint_reports_nothing_for_the_template() -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), str(TEMPLATE_PATH.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_cfn_lint_reports_nothing_for_the_translated_template(translated: dict[str, Any]) -> None:
    matches = lint(json.dumps(translated), regions=["us-east-1"])
    assert [str(match) for match in matches] == []
