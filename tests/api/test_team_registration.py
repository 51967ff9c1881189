"""Which team tag values a submission registers on the queue table's `#pools` item (through the
handler, on moto): only while quotas are configured, where submission refuses every value the
configuration does not name. Without quotas any value is accepted, so registering them would let one
user grow that single item towards DynamoDB's 400 KB item limit, after which every submission fails."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from smq_lambda.domain.config.teams import Quota, Teams

from tests.api.builders import G5, TABLE, training_request
from tests.api.gateway import ApiGateway
from tests.support.fakes import FakeConfigSource

TEAM_PREFIX = "team#"


def tagged(name: str, team: str) -> dict[str, Any]:
    return training_request(name, Tags=[{"Key": "team", "Value": team}])


def registered_teams(dynamodb: Any) -> set[str]:
    item = dynamodb.get_item(TableName=TABLE, Key={"name": {"S": "#pools"}}, ConsistentRead=True).get("Item", {})
    return {name.removeprefix(TEAM_PREFIX) for name in item if name.startswith(TEAM_PREFIX)}


def test_without_quotas_no_team_tag_value_is_registered(api: ApiGateway, dynamodb: Any) -> None:
    for index in range(5):
        assert api.add(tagged(f"job-{index}", f"{'x' * 200}-{index}")).status == 202

    assert registered_teams(dynamodb) == set()


def test_with_quotas_the_team_tag_value_is_registered(api: ApiGateway, dynamodb: Any, config: FakeConfigSource) -> None:
    config.config = replace(config.config, teams=Teams(quotas={"vision": Quota({G5: 1})}))

    assert api.add(tagged("vision-job", "vision")).status == 202

    assert registered_teams(dynamodb) == {"vision"}
