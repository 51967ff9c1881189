"""Trace lines with purchase options and warm pools (`purchase`, `keep_alive_s`, `warm_key`): what is
accepted, the round trip, and errors that name the line and the field."""

from __future__ import annotations

import json

import pytest
from smq_lambda.simulation.trace import TraceError, parse_trace, write_trace

G5 = "ml.g5.xlarge"
GOOD = {"name": "vit", "submit_s": 0, "priority": 0, "pool": G5, "instances": 2, "duration_s": 600}


def line(**changes: object) -> str:
    return json.dumps({**GOOD, **changes})


@pytest.mark.parametrize(
    ("changes", "purchase", "spot", "keep_alive_s", "warm_key"),
    [
        ({}, None, False, 0, None),
        ({"purchase": "spot"}, "spot", True, 0, None),
        ({"purchase": "spot_only"}, "spot_only", True, 0, None),
        ({"interruptions_s": [60]}, None, True, 0, None),
        ({"keep_alive_s": 900}, None, False, 900, None),
        ({"keep_alive_s": 900, "warm_key": "vit-b16"}, None, False, 900, "vit-b16"),
    ],
)
def test_accepted_lines_and_their_round_trip(
    changes: dict[str, object], purchase: str | None, spot: bool, keep_alive_s: int, warm_key: str | None
) -> None:
    [job] = parse_trace([line(**changes)])

    assert (job.purchase, job.is_spot, job.keep_alive_s, job.warm_key) == (purchase, spot, keep_alive_s, warm_key)
    assert parse_trace(write_trace([job]).splitlines()) == [job]
    assert json.loads(write_trace([job])) == {**GOOD, **changes}


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        ({"purchase": "reserved"}, "purchase", "must be one of spot, spot_only, not 'reserved'"),
        ({"purchase": True}, "purchase", "must be one of spot, spot_only"),
        ({"keep_alive_s": -1}, "keep_alive_s", "must be at least 0"),
        ({"keep_alive_s": 1.5}, "keep_alive_s", "must be an integer"),
        ({"warm_key": ""}, "warm_key", "must be a non-empty string"),
        ({"warm_key": "vit"}, "warm_key", "needs keep_alive_s"),
        ({"keep_alive_s": 60, "purchase": "spot"}, "keep_alive_s", "no warm pool for a spot job (see 'purchase')"),
        ({"keep_alive_s": 60, "interruptions_s": [5]}, "keep_alive_s", "spot job (see 'interruptions_s')"),
        (
            {
                "keep_alive_s": 60,
                "pool": ...,
                "instances": ...,
                "preferences": [{"pool": G5, "instances": 2}, {"pool": G5, "instances": 1}],
            },
            "keep_alive_s",
            "no warm pool for a job with preferences",
        ),
    ],
)
def test_bad_lines_name_the_line_and_the_field(changes: dict[str, object], field: str, problem: str) -> None:
    document = {key: value for key, value in {**GOOD, **changes}.items() if value is not ...}

    with pytest.raises(TraceError) as raised:
        parse_trace(["", json.dumps(document)])

    assert (raised.value.line, raised.value.field_name) == (2, field)
    assert problem in str(raised.value)
