"""`smq local up --config FILE.json`: the configuration document, checked before anything starts,
goes into the local pools parameter in place of --capacity's pools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from smq import SmqApiClient
from smq.cli.main import main
from smq.local import cli
from smq.local import stack as local_stack
from smq.local.stack import LocalStack, LocalStackOptions

from tests.e2e.local import POOL

DOCUMENT = {
    "pools": {POOL: 4},
    "quotas": {"vision": {"instances": {POOL: 2}, "sharing": "lend"}, "nlp": {"instances": {POOL: 2}}},
    "aging": {"per_hour": 1, "cap": 5},
}


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[LocalStackOptions]:
    """The options of each stack `smq local up` built; none of them starts."""
    built: list[LocalStackOptions] = []

    class StandIn:
        def __init__(self, options: LocalStackOptions) -> None:
            built.append(options)

        def __enter__(self) -> Any:
            raise cli._StopRequested  # as if Ctrl-C came at once: `smq local up` stops and exits 0

        def __exit__(self, *exc_info: object) -> None:
            pass

    monkeypatch.setattr(local_stack, "LocalStack", StandIn)
    monkeypatch.setattr(cli, "_stop_on_signals", lambda stuck_after: None)
    return built


def write(tmp_path: Path, document: object) -> str:
    path = tmp_path / "queue.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def test_the_document_replaces_the_capacity_pools(tmp_path: Path, started: list[LocalStackOptions]) -> None:
    assert main(["local", "up", "--config", write(tmp_path, DOCUMENT), "--workdir", str(tmp_path)]) == 0

    [options] = started
    assert options.config == DOCUMENT


def test_without_it_the_pools_are_the_capacity_options(tmp_path: Path, started: list[LocalStackOptions]) -> None:
    assert main(["local", "up", "--capacity", f"{POOL}=3", "--workdir", str(tmp_path)]) == 0

    assert started[0].config is None and dict(started[0].capacity) == {POOL: 3}


@pytest.mark.parametrize(
    ("document", "arguments", "message"),
    [
        ({**DOCUMENT, "quotas": {"vision": {"instances": {POOL: 2}, "sharing": "share"}}}, [],
         "queue.json: quotas.vision.sharing: 'share' is not one of reserve, lend, lend_and_borrow"),
        ({"pools": {POOL: 1}, "quotas": {"vision": {"instances": {POOL: 2}}}}, [],
         f"queue.json: quotas: quotas of {POOL} add up to 2, the pool has 1"),
        ({POOL: -1}, [], f"queue.json: {POOL}: must be a non-negative integer"),
        ("{not json", [], "queue.json is not valid JSON"),
        (DOCUMENT, ["--capacity", f"{POOL}=2"], "gives the pools; leave out --capacity"),
    ],
)  # fmt: skip
def test_a_bad_document_is_one_line_exit_2_and_starts_nothing(
    tmp_path: Path,
    started: list[LocalStackOptions],
    capsys: pytest.CaptureFixture[str],
    document: object,
    arguments: list[str],
    message: str,
) -> None:
    code = main(["local", "up", "--config", write(tmp_path, document), *arguments, "--workdir", str(tmp_path)])

    err = capsys.readouterr().err
    assert code == 2 and started == []
    assert err.startswith("smq local up: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, started: list[LocalStackOptions], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["local", "up", "--config", str(tmp_path / "missing.json")]) == 2

    assert "cannot read the configuration" in capsys.readouterr().err and started == []


@pytest.mark.slow
def test_the_local_pools_parameter_holds_the_document(tmp_path: Path) -> None:
    options = LocalStackOptions(config=DOCUMENT, executor="synthetic", workdir=tmp_path, reconcile_every_seconds=None)
    with LocalStack(options) as local:
        ssm = local.boto3_client("ssm")
        parameters = ssm.get_parameters_by_path(Path="/smq", Recursive=True)["Parameters"]
        [value] = [parameter["Value"] for parameter in parameters if parameter["Name"].endswith("/capacity-pools")]
        pools = SmqApiClient(local.api_url, region="us-east-1").list_pools()

    assert json.loads(value) == DOCUMENT
    assert [(pool["pool"], pool["capacity"]) for pool in pools] == [(POOL, 4)]
