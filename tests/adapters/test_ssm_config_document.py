"""The configuration document in the pools parameter (moto): the full form with teams, the flat form
of the queue before teams, every refusal naming its key, and the last good configuration kept in
force when an operator puts a malformed one."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters import SSMProvider
from smq_lambda.adapters.ssm_config import SsmConfigSource
from smq_lambda.domain.config.teams import QUOTA_PREEMPTION_DEFAULTS, Aging, PreemptionRules, Quota, Sharing, Teams
from smq_lambda.errors import ConfigError
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.settings import Settings

from tests.adapters.builders import G5, P5

DOCUMENT = {
    "pools": {P5: 8, G5: 4},
    "team_tag": "org/team",
    "quotas": {
        "vision": {"instances": {P5: 4}, "sharing": "lend_and_borrow", "borrow_limit": 4},
        "nlp": {"instances": {P5: 4, G5: 1}, "sharing": "lend"},
        "infra": {"instances": {G5: 2}, "sharing": "reserve"},
    },
    "preemption": {"min_runtime_s": 900, "max_preemptions": None},
    "aging": {"per_hour": 0.5, "cap": 5},
    "usage_half_life_s": 7200,
}


@pytest.fixture
def provider(ssm_client: Any) -> SSMProvider:
    return SSMProvider(boto3_client=ssm_client)


@pytest.fixture
def put(ssm_client: Any) -> Any:
    """Writes the pools parameter (a fresh name unless given) and returns its name."""

    def write(value: object, name: str | None = None) -> str:
        name = name or f"/smq/test/{uuid.uuid4().hex}/capacity-pools"
        text = value if isinstance(value, str) else json.dumps(value)
        ssm_client.put_parameter(Name=name, Value=text, Type="String", Overwrite=True)
        return name

    return write


def source(name: str, provider: SSMProvider) -> SsmConfigSource:
    return SsmConfigSource(Settings(table_name="unused", pools_parameter=name, backfill=True), provider)


def test_the_document_gives_pools_teams_preemption_and_aging(provider: SSMProvider, put: Any) -> None:
    config = source(put(DOCUMENT), provider).load()

    assert config == SchedulerConfig(
        pools={P5: 8, G5: 4},
        backfill=True,
        teams=Teams(
            tag="org/team",
            quotas={
                "vision": Quota(instances={P5: 4}, sharing=Sharing.LEND_AND_BORROW, borrow_limit=4),
                "nlp": Quota(instances={P5: 4, G5: 1}, sharing=Sharing.LEND),
                "infra": Quota(instances={G5: 2}, sharing=Sharing.RESERVE),
            },
            usage_half_life_s=7200,
        ),
        preemption=PreemptionRules(min_runtime_s=900, max_preemptions=None),
        aging=Aging(per_hour=0.5, cap=5),
    )


def test_the_flat_pools_object_of_existing_deployments_still_works(provider: SSMProvider, put: Any) -> None:
    config = source(put({G5: 8, P5: 0}), provider).load()

    assert config == SchedulerConfig(pools={G5: 8, P5: 0}, backfill=True)


@pytest.mark.parametrize(
    ("quotas", "preemption", "expected"),
    [
        (None, None, PreemptionRules()),
        ({}, None, PreemptionRules()),
        ({"vision": {"instances": {P5: 2}}}, None, QUOTA_PREEMPTION_DEFAULTS),
        ({"vision": {"instances": {P5: 2}}}, {"min_runtime_s": 60}, PreemptionRules(60, 3)),
        ({"vision": {"instances": {P5: 2}}}, {"max_preemptions": None}, PreemptionRules(600, None)),
        (None, {"max_preemptions": 2}, PreemptionRules(0, 2)),
    ],
)
def test_missing_preemption_rules_take_the_defaults_of_the_mode(
    provider: SSMProvider, put: Any, quotas: Any, preemption: Any, expected: PreemptionRules
) -> None:
    """With quotas: 600 s and 3 preemptions; without: no protection, the queue before teams."""
    document: dict[str, Any] = {"pools": {P5: 8}}
    if quotas is not None:
        document["quotas"] = quotas
    if preemption is not None:
        document["preemption"] = preemption

    config = source(put(document), provider).load()

    assert config.preemption == expected
    assert config.aging == Aging() and config.teams.tag == "team"


def with_quota(**quota: Any) -> dict[str, Any]:
    return {"pools": {P5: 8}, "quotas": {"vision": {"instances": {P5: 4}, **quota}}}


REFUSALS = [
    ("{not json", "is not valid JSON"),
    ([8], "must be a JSON object"),
    (None, "must be a JSON object"),
    ({G5: -1}, f"{G5}: must be a non-negative integer, not -1"),
    ({G5: True}, f"{G5}: must be a non-negative integer, not True"),
    ({" ": 2}, "an instance type is empty"),
    ({"pools": {P5: 8}, "quota": {}}, "quota: unknown key"),
    ({"pools": {P5: 8}, G5: 2}, f"{G5}: unknown key"),
    ({"quotas": {}}, "pools: is required"),
    ({"pools": [P5]}, "pools: must be a JSON object"),
    ({"pools": {P5: 1.5}}, f"pools.{P5}: must be a non-negative integer, not 1.5"),
    ({"pools": {P5: "8"}}, f"pools.{P5}: must be a non-negative integer, not '8'"),
    (with_quota(share="lend"), "quotas.vision.share: unknown key"),
    ({"pools": {P5: 8}, "quotas": {"vision": {}}}, "quotas.vision.instances: is required"),
    ({"pools": {P5: 8}, "quotas": {"vision": {"instances": {G5: 1}}}}, f"quotas.vision.instances.{G5}: not a configured pool"),
    (
        {"pools": {P5: 8}, "quotas": {"a": {"instances": {P5: 5}}, "b": {"instances": {P5: 4}}}},
        f"quotas: quotas of {P5} add up to 9, the pool has 8",
    ),
    ({"pools": {P5: 8}, "quotas": {"vision": {"instances": {P5: -1}}}}, f"quotas.vision.instances.{P5}: must be a non-negative integer"),
    (with_quota(sharing="share"), "quotas.vision.sharing: 'share' is not one of reserve, lend, lend_and_borrow"),
    (with_quota(borrow_limit=-1), "quotas.vision.borrow_limit: must be a non-negative integer or null, not -1"),
    (with_quota(borrow_limit=False), "quotas.vision.borrow_limit: must be a non-negative integer or null"),
    (with_quota(sharing="lend", borrow_limit=2), "quotas.vision.borrow_limit: only a team that borrows"),
    (with_quota(sharing="reserve", borrow_limit=0), "quotas.vision.borrow_limit: only a team that borrows"),
    ({"pools": {P5: 8}, "quotas": {"": {"instances": {}}}}, 'quotas."": a team name is a tag value: 1 to 256 characters'),
    ({"pools": {P5: 8}, "quotas": {"x" * 257: {"instances": {}}}}, "a team name is a tag value: 1 to 256 characters"),
    ({"pools": {P5: 8}, "quotas": {"(unassigned)": {"instances": {}}}}, "quotas.(unassigned): (unassigned) is the group"),
    ({"pools": {P5: 8}, "quotas": {"vision!": {"instances": {}}}}, "quotas.vision!: a team name is a tag value"),
    ({"pools": {P5: 8}, "quotas": []}, "quotas: must be a JSON object"),
    ({"pools": {P5: 8}, "team_tag": ""}, "team_tag: must be a tag key of 1 to 128 characters"),
    ({"pools": {P5: 8}, "team_tag": "t" * 129}, "team_tag: must be a tag key of 1 to 128 characters"),
    ({"pools": {P5: 8}, "team_tag": 7}, "team_tag: must be a tag key of 1 to 128 characters, not 7"),
    ({"pools": {P5: 8}, "team_tag": "aws:team"}, "team_tag: 'aws:team': tag keys starting with 'aws:' are reserved"),
    ({"pools": {P5: 8}, "preemption": {"min_runtime_s": -1}}, "preemption.min_runtime_s: must be a non-negative integer"),
    ({"pools": {P5: 8}, "preemption": {"min_runtime_s": 1.5}}, "preemption.min_runtime_s: must be a non-negative integer"),
    ({"pools": {P5: 8}, "preemption": {"max_preemptions": -2}}, "preemption.max_preemptions: must be a non-negative integer or null"),
    ({"pools": {P5: 8}, "preemption": {"min_runtime": 60}}, "preemption.min_runtime: unknown key"),
    ({"pools": {P5: 8}, "preemption": 600}, "preemption: must be a JSON object"),
    ({"pools": {P5: 8}, "aging": {"per_hour": -1, "cap": 5}}, "aging.per_hour: must be a non-negative number"),
    ({"pools": {P5: 8}, "aging": {"per_hour": True, "cap": 5}}, "aging.per_hour: must be a non-negative number"),
    ({"pools": {P5: 8}, "aging": {"per_hour": 1, "cap": 2.5}}, "aging.cap: must be a non-negative integer"),
    ({"pools": {P5: 8}, "aging": {"per_hour": 1}}, "aging.cap: is required"),
    ({"pools": {P5: 8}, "aging": {"per_hour": 1, "cap": 5, "max": 3}}, "aging.max: unknown key"),
    ({"pools": {P5: 8}, "usage_half_life_s": 0}, "usage_half_life_s: must be an integer of at least 1, not 0"),
    ({"pools": {P5: 8}, "usage_half_life_s": "1h"}, "usage_half_life_s: must be an integer of at least 1"),
    ({G5: 2**63}, f"{G5}: must be at most 100000 instances, not {2**63}"),
    ({"pools": {P5: 100_001}}, f"pools.{P5}: must be at most 100000 instances, not 100001"),
    (with_quota(borrow_limit=10**9), "quotas.vision.borrow_limit: must be at most 100000 instances"),
    ({"pools": {P5: 8}, "preemption": {"min_runtime_s": 10**15}}, "preemption.min_runtime_s: must be at most 315360000 seconds (ten years), not 1000000000000000"),
    ({"pools": {P5: 8}, "preemption": {"max_preemptions": 10**7}}, "preemption.max_preemptions: must be at most 1000000, not 10000000"),
    ({"pools": {P5: 8}, "aging": {"per_hour": 1e300, "cap": 5}}, "aging.per_hour: must be a non-negative number of priority points, at most 1000000"),
    ({"pools": {P5: 8}, "aging": {"per_hour": 1, "cap": 2**64}}, "aging.cap: must be at most 1000000"),
    ({"pools": {P5: 8}, "usage_half_life_s": 10**12}, "usage_half_life_s: must be at most 315360000 seconds (ten years)"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "complaint"), REFUSALS)
def test_a_malformed_first_document_is_a_config_error_naming_the_key(
    provider: SSMProvider, put: Any, value: object, complaint: str
) -> None:
    name = put(value if isinstance(value, str) else json.dumps(value))

    with pytest.raises(ConfigError) as raised:
        source(name, provider).load()

    assert complaint in str(raised.value)
    assert str(raised.value).startswith(f"SSM parameter {name}")


def test_a_malformed_change_keeps_the_last_good_configuration_and_is_logged_once(
    provider: SSMProvider, put: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    name = put(DOCUMENT)
    config = source(name, provider)
    good = config.load()

    put(with_quota(sharing="share"), name)
    provider.clear_cache()  # what 30 seconds do
    kept = [config.load(), config.load()]
    provider.clear_cache()
    kept.append(config.load())

    assert kept == [good] * 3
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "quotas.vision.sharing: 'share' is not one of" in errors[0].getMessage()
    assert getattr(errors[0], "parameter", None) == name

    put("{not json", name)
    provider.clear_cache()
    assert config.load() == good
    assert "is not valid JSON" in caplog.records[-1].getMessage()

    put({P5: 2}, name)
    provider.clear_cache()
    assert config.load() == SchedulerConfig(pools={P5: 2}, backfill=True)


def test_a_source_with_no_good_configuration_yet_raises_until_it_is_fixed(provider: SSMProvider, put: Any) -> None:
    name = put({"pools": {P5: 8}, "quotas": {"vision": {"instances": {P5: 9}}}})
    config = source(name, provider)

    for _ in range(2):
        with pytest.raises(ConfigError, match=f"quotas of {P5} add up to 9, the pool has 8"):
            config.load()

    put({"pools": {P5: 9}, "quotas": {"vision": {"instances": {P5: 9}}}}, name)
    provider.clear_cache()
    assert config.load().teams.quotas["vision"].instances == {P5: 9}


def test_a_cold_start_that_reads_a_malformed_document_uses_the_newest_valid_version(
    provider: SSMProvider, put: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a new instance that read a malformed document raised, and the queue stopped until an
    operator fixed it: now it runs on the configuration a warm instance keeps."""
    caplog.set_level(logging.ERROR)
    name = put({P5: 1})
    put(DOCUMENT, name)
    put(with_quota(sharing="share"), name)

    config = source(name, provider).load()

    assert config == source(put(DOCUMENT), provider).load()
    (error,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "version 2 of the parameter" in error.getMessage()
    assert sum(1 for line in capsys.readouterr().out.splitlines() if '"InvalidConfiguration"' in line) == 1
