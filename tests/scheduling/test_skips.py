"""The skip rule (`scheduling/skips.py`): which pending jobs cannot start whatever the others do. The
pass's first gates read it, so a job the rule skips is one a pass never starts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.scheduling.actions import StartJob
from smq_lambda.scheduling.decide import decide
from smq_lambda.scheduling.skips import InBackoff, Skip, TooLarge, skip_rule
from smq_lambda.scheduling.snapshot import SchedulerConfig, Snapshot, UnpooledPolicy

from .builders import G5, P5, T0, JobBuilder

NOW = T0 + timedelta(hours=1)
POOLS = {P5: 2, G5: 4}


def capacity(unpooled: UnpooledPolicy) -> Callable[[str], int | None]:
    return SchedulerConfig(POOLS, unpooled=unpooled).capacity


@pytest.mark.parametrize(
    ("job", "unpooled", "expected"),
    [
        (JobBuilder("fits", T0).needs(2, P5), UnpooledPolicy.REJECT, None),
        (JobBuilder("too-large", T0).needs(3, P5), UnpooledPolicy.REJECT, TooLarge(P5)),
        (JobBuilder("second-pool", T0).needs(1, P5).needs(5, G5), UnpooledPolicy.REJECT, TooLarge(G5)),
        (JobBuilder("no-pool", T0).needs(1, "ml.m5.xlarge"), UnpooledPolicy.REJECT, TooLarge("ml.m5.xlarge")),
        (JobBuilder("unlimited", T0).needs(99, "ml.m5.xlarge"), UnpooledPolicy.UNLIMITED, None),
        (
            JobBuilder("backoff", T0).backoff(NOW + timedelta(minutes=1)),
            UnpooledPolicy.REJECT,
            InBackoff(NOW + timedelta(minutes=1)),
        ),
        (JobBuilder("backoff-over", T0).backoff(NOW), UnpooledPolicy.REJECT, None),
        (
            JobBuilder("too-large-in-backoff", T0).needs(3, P5).backoff(NOW + timedelta(minutes=1)),
            UnpooledPolicy.REJECT,
            TooLarge(P5),
        ),
    ],
    ids=lambda value: value.build().name if isinstance(value, JobBuilder) else None,
)
def test_skip_rule(job: JobBuilder, unpooled: UnpooledPolicy, expected: Skip | None) -> None:
    assert skip_rule(job.build(), NOW, capacity(unpooled)) == expected


@given(
    p5=st.integers(min_value=1, max_value=4),
    g5=st.integers(min_value=0, max_value=6),
    backoff_s=st.integers(min_value=-120, max_value=120),
)
def test_a_job_alone_in_the_queue_starts_exactly_when_the_rule_does_not_skip_it(
    p5: int, g5: int, backoff_s: int
) -> None:
    builder = JobBuilder("job", T0).needs(p5, P5)
    if g5:
        builder.needs(g5, G5)
    job = builder.backoff(NOW + timedelta(seconds=backoff_s)).build()
    config = SchedulerConfig(POOLS)

    started = any(isinstance(action, StartJob) for action in decide(Snapshot((job,)), NOW, config))

    assert started == (skip_rule(job, NOW, config.capacity) is None)
