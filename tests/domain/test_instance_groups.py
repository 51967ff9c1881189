"""The instance groups a request asks for agree with the demand the scheduler counts."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs.model import demand_of
from smq_lambda.domain.sagemaker.instance_groups import requested_groups

TYPES = ("ml.g5.xlarge", "ml.p5.48xlarge", "ml.c5.18xlarge")

groups = st.lists(st.tuples(st.sampled_from(TYPES), st.integers(1, 50)), min_size=1, max_size=5)


def request_of(pairs: list[tuple[str, int]]) -> dict[str, Any]:
    return {
        "ResourceConfig": {
            "InstanceGroups": [
                {"InstanceGroupName": f"g{index}", "InstanceType": kind, "InstanceCount": count}
                for index, (kind, count) in enumerate(pairs)
            ]
        }
    }


@given(groups)
def test_the_groups_add_up_to_the_demand_in_every_pool(pairs: list[tuple[str, int]]) -> None:
    request = request_of(pairs)
    totals: dict[str, int] = {}
    for group in requested_groups(request):
        totals[group.instance_type] = totals.get(group.instance_type, 0) + group.count

    assert totals == demand_of(request)
    assert list(totals) == list(demand_of(request))
