"""Trace lines: what is accepted, and errors that name the line and the field."""

from __future__ import annotations

import json

import pytest
from smq_lambda.replay.trace_job import TraceJob
from smq_lambda.simulation.trace import TraceError, check_pools, parse_trace, write_trace

GOOD = {"name": "a", "submit_s": 0, "priority": 1, "pool": "ml.p5.48xlarge", "instances": 2, "duration_s": 60}


def line(**changes: object) -> str:
    document = {**GOOD, **changes}
    return json.dumps({key: value for key, value in document.items() if value is not ...})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{not json", "line 1: not JSON"),
        ("[1, 2]", "line 1: must be a JSON object"),
        (line(name=...), "line 1, field 'name': is required"),
        (line(name=""), "line 1, field 'name': must be a non-empty string"),
        (line(priority="high"), "line 1, field 'priority': must be an integer"),
        (line(priority=True), "line 1, field 'priority': must be an integer"),
        (line(instances=0), "line 1, field 'instances': must be at least 1"),
        (line(duration_s=0), "line 1, field 'duration_s': must be greater than 0"),
        (line(submit_s=-1), "line 1, field 'submit_s': must be at least 0"),
        (line(submit_s="soon"), "line 1, field 'submit_s': must be a number of seconds"),
        (line(checkpoint_every_s=0), "line 1, field 'checkpoint_every_s': must be greater than 0"),
        (line(interruptions_s=5), "line 1, field 'interruptions_s': must be a list of seconds"),
        (line(interruptions_s=[10, "x"]), "line 1, field 'interruptions_s': must be a number of seconds"),
        (line(gpus=8), "line 1, field 'gpus': unknown field"),
        (line(max_runtime_s=3600.5), "line 1, field 'max_runtime_s': must be an integer"),
        (line(max_runtime_s=0), "line 1, field 'max_runtime_s': must be at least 1"),
        (line(max_runtime_s=59), "line 1, field 'max_runtime_s': must be at least duration_s (60), not 59"),
    ],
)
def test_a_bad_line_names_its_line_and_field(text: str, where: str) -> None:
    with pytest.raises(TraceError) as raised:
        parse_trace([text])

    assert str(raised.value).startswith(where)


def test_the_line_number_counts_blank_lines() -> None:
    with pytest.raises(TraceError, match=r"^line 3, field 'priority'"):
        parse_trace([line(), "", line(name="b", priority=1.5)])


def test_a_name_twice_is_refused() -> None:
    with pytest.raises(TraceError, match=r"^line 2, field 'name': 'a' appears twice"):
        parse_trace([line(), line()])


def test_an_empty_trace_is_refused() -> None:
    with pytest.raises(TraceError, match="no jobs"):
        parse_trace(["", "  "])


def test_a_written_trace_reads_back_the_same() -> None:
    jobs = [
        TraceJob("a", 0.0, 1, "p", 2, 60.0),
        TraceJob("b", 5.5, 0, "q", 1, 30.0, team="nlp", checkpoint_every_s=10.0, stop_s=5.0, interruptions_s=(3.0,)),
        TraceJob("c", 6.0, 0, "q", 1, 30.0, max_runtime_s=3600),
    ]

    assert parse_trace(write_trace(jobs).splitlines()) == jobs


def test_optional_fields_default() -> None:
    (job,) = parse_trace([line()])

    assert (job.team, job.checkpoint_every_s, job.stop_s, job.interruptions_s, job.is_spot, job.max_runtime_s) == (
        None,
        None,
        60.0,
        (),
        False,
        None,
    )


def test_pools_are_checked_against_the_configuration() -> None:
    jobs = parse_trace([line(), line(name="b", pool="ml.g5.xlarge")])

    with pytest.raises(TraceError, match=r"^line 2, field 'pool': 'ml.g5.xlarge' is not a configured pool"):
        check_pools(jobs, {"ml.p5.48xlarge": 8})
    with pytest.raises(TraceError, match=r"^line 1, field 'instances': 2 is more than ml.p5.48xlarge holds \(1\)"):
        check_pools(jobs, {"ml.p5.48xlarge": 1, "ml.g5.xlarge": 1})
