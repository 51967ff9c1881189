"""`smq simulate --config` reads the queue's configuration document, teams and rules included, and
gives the whole configuration to the simulation; a bad document is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from smq.cli.main import main
from smq.simulate import cli
from smq_lambda.domain.config.teams import Aging, PreemptionRules, Quota, Sharing
from smq_lambda.scheduling.snapshot import SchedulerConfig

POOL = "ml.p5.48xlarge"
TRACE = '{"name": "a", "submit_s": 0, "priority": 1, "pool": "ml.p5.48xlarge", "instances": 1, "duration_s": 60}\n'
DOCUMENT = {
    "pools": {POOL: 8},
    "quotas": {
        "vision": {"instances": {POOL: 4}, "borrow_limit": 2},
        "nlp": {"instances": {POOL: 4}, "sharing": "lend"},
    },
    "preemption": {"min_runtime_s": 300},
    "aging": {"per_hour": 1, "cap": 5},
}


@pytest.fixture
def configs(monkeypatch: pytest.MonkeyPatch) -> list[SchedulerConfig]:
    """The configuration each simulation ran with (the runs themselves are real)."""
    seen: list[SchedulerConfig] = []
    real = cli.simulate

    def recording(trace: Any, config: SchedulerConfig, *args: Any, **kwargs: Any) -> Any:
        seen.append(config)
        return real(trace, config, *args, **kwargs)

    monkeypatch.setattr(cli, "simulate", recording)
    return seen


def files(tmp_path: Path, document: object) -> tuple[str, str]:
    trace, config = tmp_path / "trace.jsonl", tmp_path / "config.json"
    trace.write_text(TRACE)
    config.write_text(json.dumps(document))
    return str(trace), str(config)


def test_the_document_reaches_the_simulation_whole(tmp_path: Path, configs: list[SchedulerConfig]) -> None:
    trace, config = files(tmp_path, DOCUMENT)

    assert main(["simulate", trace, "--config", config, "--backfill", "on"]) == 0

    [used] = configs
    assert used.pools == {POOL: 8} and used.backfill
    assert used.teams.quotas == {
        "vision": Quota(instances={POOL: 4}, borrow_limit=2),
        "nlp": Quota(instances={POOL: 4}, sharing=Sharing.LEND),
    }
    assert used.preemption == PreemptionRules(min_runtime_s=300, max_preemptions=3)
    assert used.aging == Aging(per_hour=1.0, cap=5)


def test_capacity_adds_to_the_documents_pools(tmp_path: Path, configs: list[SchedulerConfig]) -> None:
    trace, config = files(tmp_path, DOCUMENT)

    assert (
        main(["simulate", trace, "--config", config, "--capacity", f"{POOL}=10", "--capacity", "ml.g5.xlarge=2"]) == 0
    )

    assert configs[0].pools == {POOL: 10, "ml.g5.xlarge": 2}
    assert set(configs[0].teams.quotas) == {"vision", "nlp"}


@pytest.mark.parametrize(
    ("document", "arguments", "message"),
    [
        ({**DOCUMENT, "quotas": {"vision": {"instances": {POOL: 4}, "sharing": "share"}}}, [],
         "config.json: quotas.vision.sharing: 'share' is not one of reserve, lend, lend_and_borrow"),
        ({**DOCUMENT, "aging": {"per_hour": 1}}, [], "config.json: aging.cap: is required"),
        (DOCUMENT, ["--capacity", f"{POOL}=6"],
         f"config.json with --capacity: quotas: quotas of {POOL} add up to 8, the pool has 6"),
    ],
)  # fmt: skip
def test_a_bad_document_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object, arguments: list[str], message: str
) -> None:
    trace, config = files(tmp_path, document)

    code = main(["simulate", trace, "--config", config, *arguments])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
